"""The affordance benchmark's independent split: objects made by another author, seen as a camera
sees them.

The other splits come from the procedural library the model trains on, so a score there says how
well the model learned *that generator*. The objects here come from
:mod:`afford_data.independent_objects`, written by a separate author who was told only the
ontology's categories and part names and never read ``afford_sim.assets`` (its docstring says
so), from other primitives and proportions, plus real object meshes shipped by robosuite with
part labels of that author's own. They are never trained on.

Every cloud is one partial view with RealSense-like artefacts (``partial_view``), resampled and
centred exactly as the data set's clouds are (``prepare_points``), and asked about each
affordance its category offers with the *seen* phrasings (this split tests shapes, not wording)
plus one affordance it lacks. It is written in the data set's format, so
``afford affordance eval --data DIR --split test_independent_shapes`` scores every grounding
source on it, with a per-category breakdown.

A second split, ``test_independent_queries``, asks the same clouds in free text written by
another author (:data:`QUERIES_FILE`): wording and shapes both new. That author was told only
each category's affordances, the part that offers each and what each affordance means, never
the model's phrasings, the generator or these objects; four queries per (category,
affordance), e.g. "the loop you hook a finger through". The part sources (``geometric``,
``oracle``) ground parts, not words: scored on it they are *told* the affordance each query
names, which a text reader in front of them would first have to get right.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from afford_core.ontology import AFFORDANCES, category
from afford_core.types import ObjectCloud
from afford_data.affordance import AffordanceDataConfig, _Clouds, _rng, _split_arrays, _write_npz
from afford_perception.affordance.dataset import (
    FORMAT_VERSION,
    INDEPENDENT_QUERIES_SPLIT,
    INDEPENDENT_SPLIT,
    MANIFEST,
    sha256,
)

#: Free-text queries of the independent split's categories, by another author (module docstring):
#: ``category<TAB>affordance<TAB>query`` per line after a header.
QUERIES_FILE = Path(__file__).with_name("independent_part_queries.tsv")


def read_queries(path: Path | str = QUERIES_FILE) -> dict[str, list[tuple[str, str]]]:
    """Category -> [(affordance, query text)] from a queries file, in file order.

    Raises:
        ValueError: a malformed line, an unknown category or affordance, an affordance the
            category does not offer, an empty or repeated query (line numbers named).
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t") != ["category", "affordance", "query"]:
        raise ValueError(f"{path}: the first line must be the header category<TAB>affordance<TAB>query")
    out: dict[str, list[tuple[str, str]]] = {}
    seen: set[tuple[str, str]] = set()
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not all(f.strip() for f in fields):
            raise ValueError(f"{path}:{n}: expected three non-empty tab-separated fields, got {line!r}")
        cat, aff, text = (f.strip() for f in fields)
        try:
            info = category(cat)
        except KeyError as exc:
            raise ValueError(f"{path}:{n}: unknown category {cat!r}") from exc
        if not info.parts_with(aff):
            offered = sorted(a for a in AFFORDANCES if info.parts_with(a))
            raise ValueError(f"{path}:{n}: a {cat} offers no {aff!r} (it offers {offered})")
        if (cat, text) in seen:
            raise ValueError(f"{path}:{n}: the query {text!r} is given twice for a {cat}")
        seen.add((cat, text))
        out.setdefault(cat, []).append((aff, text))
    return out


def free_text_arrays(arrays: dict[str, np.ndarray], queries: dict[str, list[tuple[str, str]]]
                     ) -> dict[str, np.ndarray]:
    """The clouds of a written split, asked every query of ``queries`` for their category
    instead of the stored phrasings (queries grouped by cloud, as ``load`` expects).

    Raises:
        ValueError: a category of the split has no queries.
    """
    cats = arrays["categories"].tolist()
    missing = sorted(c for c in cats if not queries.get(c))
    if missing:
        raise ValueError(f"no free-text queries for {', '.join(missing)}")
    q_cloud, q_text, q_aff = [], [], []
    for i, c in enumerate(arrays["category"].tolist()):
        for aff, text in queries[cats[c]]:
            q_cloud.append(i)
            q_text.append(text)
            q_aff.append(AFFORDANCES.index(aff))
    texts = sorted(set(q_text))
    index = {t: k for k, t in enumerate(texts)}
    return {
        **arrays,
        "query_cloud": np.array(q_cloud, dtype=np.int32),
        "query_text": np.array([index[t] for t in q_text], dtype=np.int32),
        "query_affordance": np.array(q_aff, dtype=np.int8),
        "texts": np.array(texts, dtype=str),
    }


@dataclass(frozen=True)
class IndependentConfig:
    """How many objects and views the split holds.

    Attributes:
        instances: Objects per category (``independent_objects.instances``).
        views: Partial views per object.
        seed: Seed of the instances, the views and the queries.
    """

    instances: int = 8
    views: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        if self.instances < 1 or self.views < 1:
            raise ValueError(f"instances and views must be >= 1, got {self.instances}, {self.views}")


@dataclass(frozen=True)
class _Instance:
    """What ``_Clouds.add`` reads of an asset."""

    category: str
    seed: int


def generate_independent(out_dir: Path | str, config: IndependentConfig | None = None,
                         data: AffordanceDataConfig | None = None,
                         queries: Path | str = QUERIES_FILE) -> dict[str, dict[str, Any]]:
    """Write ``test_independent_shapes.npz``, ``test_independent_queries.npz`` (the same clouds
    asked the free-text ``queries``) and a manifest describing them into ``out_dir``.

    ``data`` fixes what the clouds share with the data set the model was trained on: points per
    cloud, phrasings per affordance and negatives per cloud (default: the shipped data set's).
    An existing manifest in ``out_dir`` (a generated data set) gets the split added to it; a
    folder without one gets a manifest of its own. Files are staged and moved into place, so an
    interrupted run leaves nothing half-written.

    Returns:
        Each split's manifest entry (file, sha256, clouds, queries, categories, origins), by name.
    """
    import afford_data.independent_objects as objects

    free_text = read_queries(queries)  # a bad file is refused before any view is rendered
    cfg = config or IndependentConfig()
    data = data or AffordanceDataConfig()
    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    clouds = _Clouds()
    origins: dict[str, int] = {}
    for cat in objects.CATEGORIES:
        parts = category(cat).parts
        for k, obj in enumerate(objects.instances(cat, cfg.instances, seed=cfg.seed)):
            origin = obj.origin.split(":")[0]
            origins[origin] = origins.get(origin, 0) + 1
            for v in range(cfg.views):
                rng = _rng(data, "independent", cfg.seed, cat, k, v)
                points, names = objects.partial_view(obj, seed=int(rng.integers(1 << 31)),
                                                     num_points=data.num_points)
                unknown = sorted(set(names.tolist()) - set(parts))
                if unknown:
                    raise ValueError(f"independent {cat} #{k} labels parts {unknown}, not {parts}")
                labels = np.array([parts.index(n) for n in names], dtype=np.int64)
                cloud = ObjectCloud(points=np.asarray(points, dtype=np.float64), category=cat,
                                    part_labels=labels, part_names=parts)
                clouds.add(cloud, _Instance(cat, k), v, False, data.num_points, rng)
    arrays = _split_arrays(data, clouds, INDEPENDENT_SPLIT, unseen_phrasings=False)
    splits = {INDEPENDENT_SPLIT: arrays, INDEPENDENT_QUERIES_SPLIT: free_text_arrays(arrays, free_text)}
    independent = {"instances": cfg.instances, "views": cfg.views, "seed": cfg.seed, "origins": origins,
                   "seconds": round(time.perf_counter() - t0, 1)}
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        entries: dict[str, dict[str, Any]] = {}
        for name, split in splits.items():
            staged = staging / f"{name}.npz"
            _write_npz(staged, split)
            entries[name] = {
                "file": staged.name, "sha256": sha256(staged), "bytes": staged.stat().st_size,
                "clouds": len(split["points"]), "queries": len(split["query_cloud"]),
                "shapes": cfg.instances * len(objects.CATEGORIES),
                "categories": split["categories"].tolist(), "phrasings": split["texts"].tolist(),
                "independent": independent,
            }
        entries[INDEPENDENT_QUERIES_SPLIT]["queries_file"] = {"name": Path(queries).name,
                                                              "sha256": sha256(Path(queries))}
        path = out / MANIFEST
        if path.is_file():
            manifest = json.loads(path.read_text())
        else:
            manifest = {"format": FORMAT_VERSION, "config": data.as_dict(), "splits": {},
                        "affordances": list(AFFORDANCES)}
        manifest["splits"].update(entries)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        for name in splits:
            os.replace(staging / f"{name}.npz", out / f"{name}.npz")
        os.replace(staging / MANIFEST, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return entries
