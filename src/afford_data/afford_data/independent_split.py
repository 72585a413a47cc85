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
from afford_perception.affordance.dataset import FORMAT_VERSION, INDEPENDENT_SPLIT, MANIFEST, sha256


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
                         data: AffordanceDataConfig | None = None) -> dict[str, Any]:
    """Write ``test_independent_shapes.npz`` and a manifest describing it into ``out_dir``.

    ``data`` fixes what the clouds share with the data set the model was trained on: points per
    cloud, phrasings per affordance and negatives per cloud (default: the shipped data set's).
    An existing manifest in ``out_dir`` (a generated data set) gets the split added to it; a
    folder without one gets a manifest of its own. Files are staged and moved into place, so an
    interrupted run leaves nothing half-written.

    Returns:
        The split's manifest entry (file, sha256, clouds, queries, categories, origins).
    """
    import afford_data.independent_objects as objects

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
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        staged = staging / f"{INDEPENDENT_SPLIT}.npz"
        _write_npz(staged, arrays)
        entry = {
            "file": staged.name, "sha256": sha256(staged), "bytes": staged.stat().st_size,
            "clouds": len(arrays["points"]), "queries": len(arrays["query_cloud"]),
            "shapes": cfg.instances * len(objects.CATEGORIES),
            "categories": arrays["categories"].tolist(), "phrasings": arrays["texts"].tolist(),
            "independent": {"instances": cfg.instances, "views": cfg.views, "seed": cfg.seed,
                            "origins": origins, "seconds": round(time.perf_counter() - t0, 1)},
        }
        path = out / MANIFEST
        if path.is_file():
            manifest = json.loads(path.read_text())
        else:
            manifest = {"format": FORMAT_VERSION, "config": data.as_dict(), "splits": {},
                        "affordances": list(AFFORDANCES)}
        manifest["splits"][INDEPENDENT_SPLIT] = entry
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        os.replace(staged, out / staged.name)
        os.replace(staging / MANIFEST, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return entry
