"""Training and held-out data for the affordance model, generated from the procedural library.

The format and its reader are :mod:`afford_perception.affordance.dataset`; this module writes it.

A sample is one object cloud as the model sees it: ``points`` (P, 3) float32, centred on the
cloud's axis-aligned bounding-box centre (no scaling, so sizes stay metric), resampled to a
fixed P, together with queries ``(text, affordance, target mask (P,))``. Most clouds are single
camera views (one side only, depth noise along the ray, dropped points), as the robot's camera
gives them: orbit views from anywhere around the object, and scene views that the simulator
renders through the tasks' own cameras (``scene_views_per_shape``); a few are complete scans so
the model also knows what whole objects look like.

Four splits, each one compressed ``.npz`` file, plus ``manifest.json``:

- ``train``: seen categories, seeds ``[0, train_seeds)``, seen phrasings.
- ``val_unseen_shapes``: seen categories, seeds ``[train_seeds, train_seeds + heldout_seeds)``
  (shapes never trained on), seen phrasings.
- ``test_unseen_categories``: the unseen categories (default pot and scoop), seen phrasings.
- ``test_unseen_phrasings``: the very clouds of ``val_unseen_shapes`` asked with the held-out
  phrasings only, so the gap between the two splits is due to wording alone.

The files are byte-for-byte reproducible from the config (fixed zip timestamps, seeded draws),
and written atomically: everything is staged in a hidden folder and moved into place only after
every split was built, so an interrupted run leaves the previous data set, not a mix.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from afford_core.ontology import AFFORDANCES, CATEGORIES, category
from afford_perception.affordance.dataset import FORMAT_VERSION, MANIFEST, SPLITS, prepare_points, sha256
from afford_perception.affordance.vocabulary import PhrasingSplit, part_affordance_bits, split_phrasings
from afford_perception.grounding.views import camera_position, full_cloud, single_view, yaw_pose
from afford_sim.assets import make
from afford_sim.scene import ObjectSpec, SceneSpec, Window, sample_scene
from afford_sim.tasks import PERCEPTION_CAMERA, SHOULDER_CAMERA
from afford_sim.world import BatchWorld

AssetFactory = Callable[[str, int], Any]


def _default_unseen_categories() -> tuple[str, ...]:
    return ("pot", "scoop")


@dataclass(frozen=True)
class AffordanceDataConfig:
    """What data set to generate. Every draw is seeded from ``seed``, so a config is a data set.

    Attributes:
        categories: Seen categories (trained on). Default: every ontology category except the
            unseen ones.
        unseen_categories: Categories held out entirely. The defaults, pot and scoop, are chosen
            because every affordance they offer is also offered by a seen category (pot:
            grasp_handle, grasp_body, contain, support, press; scoop: grasp_handle, contain,
            pour_out), so the split tests transfer to new shapes of known affordances rather
            than affordances the model was never taught; and their parts (a lid knob, a bowl on
            a long handle) are arranged unlike any seen category's.
        train_seeds: Shapes per seen category in ``train`` (seeds ``0 .. train_seeds - 1``).
        heldout_seeds: Unseen shapes per seen category (the seeds that follow the train ones).
        unseen_category_seeds: Shapes per unseen category.
        views_per_shape: Single-view camera clouds per shape.
        full_clouds_per_shape: Complete-surface clouds per shape (no noise, no dropout).
        scene_views_per_shape: Views per shape rendered by the simulator in a task-like scene
            through a camera the tasks use, with the depth noise and pixel dropout of
            ``BatchWorld.observed_cloud`` and no voxel filter: exactly the clouds the spine
            grounds on. Free objects stand in the tasks' window at any yaw, seen by the
            perception camera (even views) or the shoulder camera (odd views); articulated
            furniture stands 80 cm out facing the robot, closed, seen by the shoulder camera as
            in the drawer task; other fixed objects (racks, shelves) stand beside the window,
            seen by the perception camera. Needs MuJoCo rendering (EGL or OSMesa).
        num_points: Points per cloud, P; fewer observed points are resampled with replacement
            (every observed point kept at least once), more are subsampled without.
        noise_std: (low, high) range (m) of the depth noise standard deviation along the
            viewing ray; each view draws its own.
        dropout: (low, high) range of the fraction of visible points dropped per view.
        elevation_deg: (low, high) camera elevation above the horizontal (degrees); a robot's
            camera looks down on a table, rarely from the side or straight down.
        distance: (low, high) camera distance (m) from the object's bounding sphere.
        density: Surface samples per cm^2 before the visibility test (as ``ViewSpec``).
        max_samples: Cap on surface samples for large objects (furniture), which still yield
            far more than ``num_points`` visible points.
        voxel: Voxel side (m) a view is downsampled to, as the perception pipeline does.
        open_probability: Chance that an articulated object (cabinet, microwave) is seen with
            each joint at a random opening within its range instead of closed.
        phrasings_per_affordance: Phrasings asked per affordance the object offers, per cloud.
        negatives_per_cloud: Queries per cloud for affordances the object does not offer
            (target all False), so the model learns to answer "nothing here".
        unseen_phrasing_fraction: Share of each affordance's phrasings held out (see
            ``vocabulary.split_phrasings``).
        seed: Master seed of every draw.
    """

    categories: tuple[str, ...] = ()
    unseen_categories: tuple[str, ...] = field(default_factory=_default_unseen_categories)
    train_seeds: int = 40
    heldout_seeds: int = 8
    unseen_category_seeds: int = 16
    views_per_shape: int = 3
    full_clouds_per_shape: int = 1
    scene_views_per_shape: int = 2
    num_points: int = 2048
    noise_std: tuple[float, float] = (0.001, 0.004)
    dropout: tuple[float, float] = (0.0, 0.3)
    elevation_deg: tuple[float, float] = (10.0, 70.0)
    distance: tuple[float, float] = (0.3, 0.9)
    density: float = 8.0
    max_samples: int = 65536
    voxel: float = 0.0035
    open_probability: float = 0.5
    phrasings_per_affordance: int = 2
    negatives_per_cloud: int = 1
    unseen_phrasing_fraction: float = 0.25
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.categories:
            seen = tuple(c for c in CATEGORIES if c not in self.unseen_categories)
            object.__setattr__(self, "categories", seen)
        # Tuples from JSON come back as lists; normalise so equal configs compare equal.
        for name in ("categories", "unseen_categories", "noise_std", "dropout", "elevation_deg", "distance"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in (*self.categories, *self.unseen_categories):
            category(name)  # KeyError listing the known categories
        overlap = set(self.categories) & set(self.unseen_categories)
        if overlap:
            raise ValueError(f"categories both seen and unseen: {sorted(overlap)}")
        if len(set(self.categories)) != len(self.categories):
            raise ValueError(f"duplicate seen categories in {self.categories}")
        for name in ("train_seeds", "heldout_seeds", "unseen_category_seeds", "num_points",
                     "max_samples", "phrasings_per_affordance"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if min(self.views_per_shape, self.full_clouds_per_shape, self.scene_views_per_shape) < 0:
            raise ValueError("views_per_shape, full_clouds_per_shape and scene_views_per_shape must be >= 0")
        if self.views_per_shape + self.full_clouds_per_shape + self.scene_views_per_shape == 0:
            raise ValueError("each shape needs at least one cloud (views_per_shape + full_clouds_per_shape "
                             "+ scene_views_per_shape)")
        if self.negatives_per_cloud < 0:
            raise ValueError(f"negatives_per_cloud must be >= 0, got {self.negatives_per_cloud}")
        for name, lo_min, hi_max in (("noise_std", 0.0, 0.05), ("dropout", 0.0, 0.95),
                                     ("elevation_deg", -89.0, 89.0), ("distance", 1e-3, 10.0)):
            lo, hi = getattr(self, name)
            if not lo_min <= lo <= hi <= hi_max:
                raise ValueError(f"{name} must be a (low, high) range within [{lo_min}, {hi_max}], "
                                 f"got {(lo, hi)}")
        if self.density <= 0 or self.voxel <= 0:
            raise ValueError("density and voxel must be positive")
        if not 0.0 <= self.open_probability <= 1.0:
            raise ValueError(f"open_probability must be in [0, 1], got {self.open_probability}")
        split_phrasings(self.unseen_phrasing_fraction)  # validates the fraction

    @property
    def phrasings(self) -> PhrasingSplit:
        """The seen / unseen phrasing split this config uses."""
        return split_phrasings(self.unseen_phrasing_fraction)

    def shapes(self, split: str) -> list[tuple[str, int]]:
        """(category, seed) of every shape in ``split``, in generation order."""
        if split == "train":
            return [(c, s) for c in self.categories for s in range(self.train_seeds)]
        if split in ("val_unseen_shapes", "test_unseen_phrasings"):
            first = self.train_seeds
            return [(c, s) for c in self.categories for s in range(first, first + self.heldout_seeds)]
        if split == "test_unseen_categories":
            return [(c, s) for c in self.unseen_categories for s in range(self.unseen_category_seeds)]
        raise KeyError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored in the manifest)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AffordanceDataConfig:
        """Inverse of :meth:`as_dict`; unknown keys are an error (a newer or foreign manifest)."""
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)


# --- generation ------------------------------------------------------------------------------


@dataclass
class _Clouds:
    """The clouds of one shape set, before queries are attached."""

    points: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    category: list[str] = field(default_factory=list)
    seed: list[int] = field(default_factory=list)
    view: list[int] = field(default_factory=list)
    full: list[bool] = field(default_factory=list)
    centre: list[np.ndarray] = field(default_factory=list)
    observed: list[int] = field(default_factory=list)

    def add(self, cloud: Any, asset: Any, view: int, full: bool, num_points: int,
            rng: np.random.Generator) -> None:
        """Append one observed, labelled cloud of ``asset``, centred and resampled to
        ``num_points``."""
        pts, idx, centre = prepare_points(cloud.points, num_points, rng)
        self.points.append(pts)
        self.labels.append(cloud.part_labels[idx].astype(np.int8))
        self.category.append(asset.category)
        self.seed.append(int(asset.seed))
        self.view.append(view)
        self.full.append(full)
        self.centre.append(centre.astype(np.float32))
        self.observed.append(len(cloud))


def _rng(config: AffordanceDataConfig, *keys: int | str) -> np.random.Generator:
    """A generator for one draw, keyed by what it is for, so adding a category or a view does
    not shift the draws of any other."""
    ints = [zlib.crc32(k.encode()) if isinstance(k, str) else int(k) for k in keys]
    return np.random.default_rng([config.seed, *ints])


def _uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    return float(rng.uniform(*bounds)) if bounds[1] > bounds[0] else float(bounds[0])


def _shape_clouds(config: AffordanceDataConfig, asset: Any, out: _Clouds) -> None:
    """Append every cloud of one shape to ``out``."""
    rng = _rng(config, "shape", asset.category, asset.seed)
    mesh = asset.mesh()
    n_samples = int(np.clip(float(mesh.area) * 1e4 * config.density, 512, config.max_samples))
    joints = [lk.joint for lk in asset.links if lk.joint is not None]
    total = config.views_per_shape + config.full_clouds_per_shape
    for v in range(total):
        q = None
        if joints and rng.random() < config.open_probability:
            q = {j.name: float(rng.uniform(*j.range)) for j in joints}
        pose = yaw_pose(0.0, 0.0, 0.0, float(rng.uniform(0.0, 2 * math.pi)))
        cloud_seed = int(rng.integers(1 << 31))
        full = v >= config.views_per_shape
        if full:
            cloud = full_cloud(asset, pose, n=n_samples, seed=cloud_seed, q=q, voxel=config.voxel)
        else:
            # Building the whole mesh costs more than the view itself; only an opened one differs.
            lo, hi = (mesh if q is None else asset.mesh(q)).bounds
            target = pose[:3, :3] @ np.array([0.0, 0.0, 0.5 * (lo[2] + hi[2])])
            reach = _uniform(rng, config.distance) + 0.5 * float(np.linalg.norm(hi - lo))
            cam = camera_position(target, reach, float(rng.uniform(0.0, 2 * math.pi)),
                                  math.radians(_uniform(rng, config.elevation_deg)))
            cloud = single_view(asset, pose, cam, noise_std=_uniform(rng, config.noise_std),
                                dropout=_uniform(rng, config.dropout), n=n_samples, seed=cloud_seed, q=q,
                                voxel=config.voxel)
        out.add(cloud, asset, v, full, config.num_points, rng)
    for j in range(config.scene_views_per_shape):
        cloud = _scene_view(config, asset, j)
        if cloud is not None:
            out.add(cloud, asset, total + j, False, config.num_points, rng)


# Where the tasks put objects (afford_sim.tasks): free objects in the window in front of the
# robot; the cabinet of the drawer task 80 cm out, facing the robot within +-10 deg; the rack of
# the hang task on the robot's left.
_FREE_WINDOW = ((0.5, 0.0), (0.16, 0.16))
_ARTICULATED_WINDOW = ((0.8, 0.0), (0.08, 0.1), (math.pi - math.pi / 18, math.pi + math.pi / 18))
_FIXED_WINDOW = ((0.5, 0.2), (0.06, 0.06), (-math.pi / 2 - math.pi / 6, -math.pi / 2 + math.pi / 6))


def _scene_view(config: AffordanceDataConfig, asset: Any, j: int) -> Any:
    """The ``j``-th scene view of ``asset`` (an ``ObjectCloud`` with part labels), or None when
    the placement failed or the camera does not see the object."""
    rng = _rng(config, "scene", asset.category, asset.seed, j)
    info = category(asset.category)
    if info.articulated:
        (centre, size, yaw), camera = _ARTICULATED_WINDOW, SHOULDER_CAMERA
    elif info.fixed:
        (centre, size, yaw), camera = _FIXED_WINDOW, PERCEPTION_CAMERA
    else:
        (centre, size), yaw = _FREE_WINDOW, (-math.pi, math.pi)
        camera = PERCEPTION_CAMERA if j % 2 == 0 else SHOULDER_CAMERA
    spec = SceneSpec(objects=(ObjectSpec(asset.category, asset.category, int(asset.seed),
                                         Window(center=centre, size=size, yaw=yaw)),),
                     cameras=(camera,))
    try:
        placed = sample_scene(spec, seed=int(rng.integers(1 << 31)), make_asset=lambda _c, _s: asset)
    except ValueError:
        return None  # no collision-free placement for this shape: skip the view, as a task would fail
    world = BatchWorld(placed)
    try:
        obs = world.render()
        return world.observed_cloud(obs, asset.category, seed=int(rng.integers(1 << 31)))
    except ValueError:
        return None  # out of view
    finally:
        world.close()


def _queries(config: AffordanceDataConfig, clouds: _Clouds, split: str,
             unseen: bool) -> tuple[list[int], list[str], list[int]]:
    """(cloud index, text, affordance index) of every query of a split."""
    phrasings = config.phrasings
    q_cloud: list[int] = []
    q_text: list[str] = []
    q_aff: list[int] = []
    for i, (cat, seed, view) in enumerate(zip(clouds.category, clouds.seed, clouds.view, strict=True)):
        rng = _rng(config, "queries", split, cat, seed, view)
        info = category(cat)
        offered = [a for a in AFFORDANCES if info.parts_with(a)]
        absent = [a for a in AFFORDANCES if a not in offered]
        negatives = list(rng.choice(absent, min(config.negatives_per_cloud, len(absent)), replace=False))
        for aff in offered:
            pool = phrasings.phrasings(aff, unseen)
            k = min(config.phrasings_per_affordance, len(pool))
            for text in rng.choice(pool, k, replace=False):
                q_cloud.append(i)
                q_text.append(str(text))
                q_aff.append(AFFORDANCES.index(aff))
        for aff in sorted(negatives, key=AFFORDANCES.index):
            q_cloud.append(i)
            q_text.append(str(rng.choice(phrasings.phrasings(str(aff), unseen))))
            q_aff.append(AFFORDANCES.index(str(aff)))
    return q_cloud, q_text, q_aff


def _split_arrays(config: AffordanceDataConfig, clouds: _Clouds, split: str,
                  unseen_phrasings: bool) -> dict[str, np.ndarray]:
    """The arrays stored in one split file (the layout ``load`` reads)."""
    q_cloud, q_text, q_aff = _queries(config, clouds, split, unseen_phrasings)
    cats = sorted(set(clouds.category))
    texts = sorted(set(q_text))
    bits_by_cat = {c: part_affordance_bits(c) for c in cats}
    n, p = len(clouds.points), config.num_points
    return {
        "format": np.array(FORMAT_VERSION, dtype=np.int32),
        "points": np.stack(clouds.points) if n else np.zeros((0, p, 3), np.float32),
        "part_labels": np.stack(clouds.labels) if n else np.zeros((0, p), np.int8),
        # Bit i of a point is set when its part offers AFFORDANCES[i]: every target at once.
        "affordance_bits": (np.stack([bits_by_cat[c][lab] for c, lab in zip(clouds.category, clouds.labels,
                                                                           strict=True)])
                            if n else np.zeros((0, p), np.uint16)),
        "category": np.array([cats.index(c) for c in clouds.category], dtype=np.int16),
        "shape_seed": np.array(clouds.seed, dtype=np.int32),
        "view": np.array(clouds.view, dtype=np.int16),
        "full": np.array(clouds.full, dtype=bool),
        "centre": np.stack(clouds.centre) if n else np.zeros((0, 3), np.float32),
        "observed": np.array(clouds.observed, dtype=np.int32),
        "query_cloud": np.array(q_cloud, dtype=np.int32),
        "query_text": np.array([texts.index(t) for t in q_text], dtype=np.int32),
        "query_affordance": np.array(q_aff, dtype=np.int8),
        "categories": np.array(cats, dtype=str),
        "texts": np.array(texts, dtype=str),
        "affordances": np.array(AFFORDANCES, dtype=str),
    }


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed`` with a fixed timestamp per member, so equal arrays give equal bytes
    (numpy stamps each member with the current time, which would change the file hash)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, value in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(value), allow_pickle=False)
            zf.writestr(info, buf.getvalue())



@dataclass(frozen=True)
class GenerationReport:
    """What :func:`generate` wrote and how long it took.

    Attributes:
        out_dir: Folder holding the splits and the manifest.
        files: Split name -> path of its ``.npz``.
        clouds: Split name -> number of clouds.
        queries: Split name -> number of queries.
        seconds: Wall time of the whole generation.
    """

    out_dir: Path
    files: dict[str, Path]
    clouds: dict[str, int]
    queries: dict[str, int]
    seconds: float


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="shape", desc="affordance data", disable=not enabled)


def generate(config: AffordanceDataConfig, out_dir: Path | str, progress: bool = True,
             make_asset: AssetFactory | None = None) -> GenerationReport:
    """Build every split of ``config`` and write them, with ``manifest.json``, into ``out_dir``.

    Args:
        config: The data set to build.
        out_dir: Destination folder (created if missing). Existing split files there are
            replaced only once the whole data set has been built.
        progress: Show a tqdm bar over shapes.
        make_asset: ``(category, seed) -> Asset``; default ``afford_sim.assets.make``.

    Raises:
        KeyError: a category has no generator in the asset library.
    """
    if make_asset is None:
        make_asset = make
    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # Held-out shapes are generated once and asked twice (seen and unseen phrasings).
    shape_sets = {"train": config.shapes("train"), "heldout": config.shapes("val_unseen_shapes"),
                  "unseen_categories": config.shapes("test_unseen_categories")}
    plan = {"train": ("train", False), "val_unseen_shapes": ("heldout", False),
            "test_unseen_categories": ("unseen_categories", False),
            "test_unseen_phrasings": ("heldout", True)}
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        clouds: dict[str, _Clouds] = {}
        with _progress(sum(len(s) for s in shape_sets.values()), progress) as bar:
            for set_name, shapes in shape_sets.items():
                clouds[set_name] = _Clouds()
                for cat, seed in shapes:
                    _shape_clouds(config, make_asset(cat, seed), clouds[set_name])
                    bar.update(1)
        files: dict[str, Path] = {}
        entries: dict[str, dict[str, Any]] = {}
        counts: dict[str, tuple[int, int]] = {}
        for split in SPLITS:
            set_name, unseen = plan[split]
            arrays = _split_arrays(config, clouds[set_name], split, unseen)
            staged = staging / f"{split}.npz"
            _write_npz(staged, arrays)
            files[split] = out / staged.name
            counts[split] = (len(arrays["points"]), len(arrays["query_cloud"]))
            entries[split] = {
                "file": staged.name, "sha256": sha256(staged), "bytes": staged.stat().st_size,
                "clouds": counts[split][0], "queries": counts[split][1],
                "shapes": len(config.shapes(split)),
                "categories": arrays["categories"].tolist(), "phrasings": arrays["texts"].tolist(),
            }
        manifest = {
            "format": FORMAT_VERSION, "config": config.as_dict(), "splits": entries,
            "affordances": list(AFFORDANCES),
            "phrasings": {"seen": {a: list(p) for a, p in config.phrasings.seen.items()},
                          "unseen": {a: list(p) for a, p in config.phrasings.unseen.items()}},
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        # Every file is complete before any is moved; the manifest goes last, so a manifest
        # always describes files that are all there.
        for split in SPLITS:
            os.replace(staging / f"{split}.npz", files[split])
        os.replace(staging / MANIFEST, out / MANIFEST)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return GenerationReport(out_dir=out, files=files, clouds={s: c for s, (c, _) in counts.items()},
                            queries={s: q for s, (_, q) in counts.items()}, seconds=time.perf_counter() - t0)


