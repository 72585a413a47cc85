"""AFFORD-X's counterfactual protocol on Meta-World MT50: a thin adapter around the selection layer.

Why: the project's selection rule (``afford_planner.selection.select`` over the AFFORD-X terms) has
so far only been measured in its own scenes. Meta-World MT50 is a public suite with scripted
experts for all 50 tasks, so "does the rule pick a contact point that works?" can be asked there
with the same machinery: a candidate set per episode, every candidate executed, every method
scored on the same set without seeing the outcomes.

Run it (from the repository root; needs ``scripts/setup_metaworld.sh`` once)::

    PYTHONPATH=src/afford_core:src/afford_planner:src/afford_eval \\
        .venv-metaworld/bin/python -m afford_eval.metaworld_bench run \\
        --out bench/results/metaworld-mt50 [--tasks pick-place-v3 ...] [--episodes 5] \\
        [--candidates 12] [--seed 0]
    PYTHONPATH=... .venv-metaworld/bin/python -m afford_eval.metaworld_bench report \\
        bench/results/metaworld-mt50          # writes report.md and summary.json there

``report`` needs no metaworld (the main venv runs it too). ``run`` writes one JSON per
(task, episode) under ``DIR/records/<task>/ep<k>.json`` atomically and skips records that exist,
so an interrupted run resumes; a task that raises gets its traceback in its record and the run
goes on (``--retry-errors`` runs those again).

Protocol (AFFORD-X's, as far as Meta-World allows):

* Tasks: the official ``metaworld.MT50(seed=0)`` task list (50 tasks x 50 goal variants; build
  ~35 s, cached as a pickle inside the venv, checked against the metaworld version). Episode k
  of a task is goal variant k (k = 0..episodes-1). ``metaworld.MT1(name, seed=0)`` gives
  *different* variants for 49 of the 50 tasks, so it is not a shortcut.
* Execution: ``env.set_task``, ``env.reset`` (deterministic for a fixed task), the task's
  scripted expert (``metaworld.policies.ENV_POLICY_MAP``), actions clipped to [-1, 1], at most
  ``max_path_length`` (500) steps, success = ``info["success"]`` at any step (as
  ``metaworld.evaluation`` with terminate-on-success).
* Retargeting: the expert reads its target point from ``obs[4:7]`` (and the frame-stacked copy
  ``obs[22:25]``); adding the fixed world offset ``candidate - obs[4:7]`` (taken at reset) to
  both makes it reach for, close on and manipulate from the candidate instead. For parts that
  rotate (doors, dials) the offset stays fixed in the world frame.
* Manipulated object: the movable body (one with a joint on it or an ancestor; robot, table and
  retaining walls aside) whose geoms' bounding boxes come nearest ``obs[4:7]`` at reset.
* Candidates: N points sampled (seeded by seed, task and episode) on that body's geom surfaces,
  area-weighted over geoms (visual meshes and collision primitives alike), each with its outward
  surface normal. Every candidate is executed from the same reset. Two controls run beside them
  and are not methods: the expert on its own unshifted point (``expert``), and the expert sent
  0.3 m straight above ``obs[4:7]`` (``far``; a task it still solves does not depend on contact).
* Terms, with the project's functions (``afford_planner.terms``):

  - reach = ``reach_term`` in Meta-World's own hand box: the env's ``mocap_low``/``mocap_high``
    (what ``set_xyz_action`` clips the hand's mocap target to; every MT50 env leaves them equal
    to ``hand_low``/``hand_high``), shifted by the TCP's offset from the mocap at reset (about
    (0, 0, -0.05)), so the box bounds where the fingertips' centre can go;
  - approach = ``approach_term`` with the candidate pose's approach = -normal against the
    Sawyer's fixed top-down approach (0, 0, -1): Meta-World's 4-D action has no wrist, so a
    top face scores 1 and a side or bottom face the floor 0.3;
  - clearance = ``clearance_term`` of the project's gripper skeleton (``GripperGeometry()``,
    the reference hand's finger length and palm offset) placed top-down at the candidate with
    the Sawyer's closing axis (world y) and its open pad separation as width, against points
    sampled (1 cm spacing) on every geom except: the manipulated body (the fingers are meant to
    touch it), the robot (bodies under ``base``, and ``mocap``), the table (``tablelink``: the
    support surface every object stands on; ``terms.fill_terms`` says to leave it out, since a
    fingertip 1 cm above it would gate every low grasp out) and the floor plane under the table;
  - function = ``function_term`` against points sampled on the task's functional part:
    the manipulated body's geoms that the task's env module names as its grasp/handle part
    (``FUNCTIONAL_PARTS``, with the source lines); 1.0 (neutral) when there is none;
  - task = 1.0 (neutral: no language grounding here); plan = 1.0 (no planner: every candidate
    is executable by the expert).
* Methods on the same candidates, via ``afford_eval.methods`` (ties drawn by ``seeded_pick``
  with the episode's seed, tie sizes recorded): ``random`` (one seeded draw; the report also
  gives the expectation, "chance"), and ``afford_<L1|L2|L3>_<none|feasibility>_<weighted_sum|
  product>``. Ceiling = an episode where any candidate succeeded.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import math
import os
import pickle
import platform
import shlex
import sys
import tempfile
import time
import traceback
import warnings
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from afford_core.grasp import GraspCandidate
from afford_eval.methods import MethodContext, apply_methods
from afford_eval.runs import provenance
from afford_eval.stats import paired_bootstrap, wilson
from afford_planner.terms import (
    GripperGeometry,
    TermsConfig,
    approach_term,
    clearance_term,
    function_term,
    reach_term,
)

SCHEMA = "afford-metaworld-mt50/1"
MT50_SIZE = 50

#: Difficulty tiers. Meta-World 3.1.1 ships no such list; this is the grouping of Seo et al. 2022
#: (Masked World Models) as copied in huggingface/lerobot ``src/lerobot/envs/metaworld_config.json``
#: (28 easy / 11 medium / 6 hard / 5 very hard = the 50 MT50 names).
TIERS: dict[str, tuple[str, ...]] = {
    "easy": (
        "button-press-v3", "button-press-topdown-v3", "button-press-topdown-wall-v3",
        "button-press-wall-v3", "coffee-button-v3", "dial-turn-v3", "door-close-v3", "door-lock-v3",
        "door-open-v3", "door-unlock-v3", "drawer-close-v3", "drawer-open-v3", "faucet-close-v3",
        "faucet-open-v3", "handle-press-v3", "handle-press-side-v3", "handle-pull-v3",
        "handle-pull-side-v3", "lever-pull-v3", "plate-slide-v3", "plate-slide-back-v3",
        "plate-slide-back-side-v3", "plate-slide-side-v3", "reach-v3", "reach-wall-v3",
        "window-close-v3", "window-open-v3", "peg-unplug-side-v3",
    ),
    "medium": (
        "basketball-v3", "bin-picking-v3", "box-close-v3", "coffee-pull-v3", "coffee-push-v3",
        "hammer-v3", "peg-insert-side-v3", "push-wall-v3", "soccer-v3", "sweep-v3", "sweep-into-v3",
    ),
    "hard": (
        "assembly-v3", "hand-insert-v3", "pick-out-of-hole-v3", "pick-place-v3", "push-v3", "push-back-v3",
    ),
    "very_hard": ("shelf-place-v3", "disassemble-v3", "stick-pull-v3", "stick-push-v3", "pick-place-wall-v3"),
}
TIER_OF: dict[str, str] = {t: tier for tier, names in TIERS.items() for t in names}

_ENVS = "metaworld/envs/"
_BASE_MAIN = "metaworld/sawyer_xyz_env.py:443 (inherited _get_id_main_object -> 'objGeom')"

#: Per task: the geom names its env module uses as the part the gripper is meant to take
#: (``_get_id_main_object``, Meta-World's grasp/touch check, or a ``self.data.geom(NAME)`` read that
#: stands for the object's position or orientation in the observation and reward), and where
#: (metaworld 3.1.1 line numbers).
#: Tasks whose code names no geom (only sites or bodies) get the neutral function term 1.0.
#: Names read for other purposes (``HammerHead``, the part that strikes the nail) are left out.
_PARTS_TABLE: dict[str, tuple[tuple[str, ...], str]] = {
    "assembly-v3": (("WrenchHandle",), "sawyer_assembly_peg_v3.py:102 _get_id_main_object"),
    "basketball-v3": (("objGeom",), "sawyer_basketball_v3.py:101 _get_id_main_object, :125"),
    "bin-picking-v3": (("objGeom",), "sawyer_bin_picking_v3.py:123 _get_id_main_object"),
    "box-close-v3": (("BoxHandleGeom",), "sawyer_box_close_v3.py:99 _get_id_main_object, :129"),
    "button-press-topdown-v3": (("btnGeom",), "sawyer_button_press_topdown_v3.py:90 _get_id_main_object"),
    "button-press-topdown-wall-v3": (
        ("btnGeom",), "sawyer_button_press_topdown_wall_v3.py:92 _get_id_main_object"),
    "button-press-v3": (("btnGeom",), "sawyer_button_press_v3.py:90 _get_id_main_object"),
    "button-press-wall-v3": (("btnGeom",), "sawyer_button_press_wall_v3.py:92 _get_id_main_object"),
    "coffee-button-v3": ((), "sawyer_coffee_button_v3.py:98 _get_id_main_object returns None"),
    "coffee-pull-v3": (("mug",), "sawyer_coffee_pull_v3.py:101 _get_id_main_object, :107"),
    "coffee-push-v3": (("mug",), "sawyer_coffee_push_v3.py:101 _get_id_main_object, :107"),
    "dial-turn-v3": ((), "sawyer_dial_turn_v3.py:88 object = body 'dial' (no geom named)"),
    "disassemble-v3": (("WrenchHandle",), "sawyer_disassemble_peg_v3.py:103 _get_id_main_object"),
    "door-close-v3": (("handle",), "sawyer_door_close_v3.py:68 _get_pos_objects, :72, :84, :99"),
    "door-lock-v3": ((), "sawyer_door_lock_v3.py:99 _get_id_main_object returns None"),
    "door-open-v3": (("handle",), "sawyer_door_v3.py:98 _get_pos_objects, :102, :114, :124"),
    "door-unlock-v3": ((), "sawyer_door_unlock_v3.py:97 _get_id_main_object returns None"),
    "drawer-close-v3": ((), "sawyer_drawer_close_v3.py:93 object = body 'drawer_link' (no geom named)"),
    "drawer-open-v3": (("objGeom",), "sawyer_drawer_open_v3.py:91 _get_id_main_object"),
    "faucet-close-v3": ((), "sawyer_faucet_close_v3.py:102 object = site 'handleStartClose' (no geom named)"),
    "faucet-open-v3": ((), "sawyer_faucet_open_v3.py:98 object = site 'handleStartOpen' (no geom named)"),
    "hammer-v3": (("HammerHandle",), "sawyer_hammer_v3.py:89 _get_id_main_object"),
    "hand-insert-v3": (("objGeom",), "sawyer_hand_insert_v3.py:100 _get_id_main_object, :87"),
    "handle-press-side-v3": (
        (), "sawyer_handle_press_side_v3.py:107 object = site 'handleStart' (no geom named)"),
    "handle-press-v3": ((), "sawyer_handle_press_v3.py:94 object = site 'handleStart' (no geom named)"),
    "handle-pull-side-v3": (
        (), "sawyer_handle_pull_side_v3.py:97 object = site 'handleCenter' (no geom named)"),
    "handle-pull-v3": ((), "sawyer_handle_pull_v3.py:96 object = site 'handleRight' (no geom named)"),
    "lever-pull-v3": (("objGeom",), "sawyer_lever_pull_v3.py:104 _get_id_main_object, :110"),
    "peg-insert-side-v3": (
        (), "sawyer_peg_insertion_side_v3.py:131 object = site 'pegGrasp' (no geom named)"),
    "peg-unplug-side-v3": ((), "sawyer_peg_unplug_side_v3.py:91 object = site 'pegEnd' (no geom named)"),
    "pick-out-of-hole-v3": (("objGeom",), "sawyer_pick_out_of_hole_v3.py:103 _get_id_main_object, :124"),
    "pick-place-v3": (("objGeom",), "sawyer_pick_place_v3.py:119 _get_id_main_object, :102, :126"),
    "pick-place-wall-v3": (("objGeom",), "sawyer_pick_place_wall_v3.py:102 touching_main_object, :119"),
    "plate-slide-back-side-v3": (("puck",), "sawyer_plate_slide_back_side_v3.py:108 _get_pos_objects"),
    "plate-slide-back-v3": (("puck",), "sawyer_plate_slide_back_v3.py:93 _get_pos_objects"),
    "plate-slide-side-v3": (("puck",), "sawyer_plate_slide_side_v3.py:93 _get_pos_objects"),
    "plate-slide-v3": (("puck",), "sawyer_plate_slide_v3.py:95 _get_pos_objects"),
    "push-back-v3": (("objGeom",), "sawyer_push_back_v3.py:86 touching_main_object, :102"),
    "push-v3": (("objGeom",), "sawyer_push_v3.py:104 touching_main_object, :117"),
    "push-wall-v3": (("objGeom",), "sawyer_push_wall_v3.py:106 touching_main_object, :122"),
    "reach-v3": (("objGeom",), "sawyer_reach_v3.py:104 _get_quat_objects"),
    "reach-wall-v3": (("objGeom",), "sawyer_reach_wall_v3.py:106 _get_quat_objects, :126"),
    "shelf-place-v3": (("objGeom",), "sawyer_shelf_place_v3.py:85 touching_main_object, :106"),
    "soccer-v3": (("objGeom",), "sawyer_soccer_v3.py:86 touching_main_object; " + _BASE_MAIN),
    "stick-pull-v3": (("objGeom",), "sawyer_stick_pull_v3.py:90 touching_main_object; " + _BASE_MAIN),
    "stick-push-v3": (("objGeom",), "sawyer_stick_push_v3.py:85 touching_main_object; " + _BASE_MAIN),
    "sweep-into-v3": (("objGeom",), "sawyer_sweep_into_goal_v3.py:81 touching_main_object, :95"),
    "sweep-v3": (("objGeom",), "sawyer_sweep_v3.py:80 touching_main_object, :113"),
    "window-close-v3": ((), "sawyer_window_close_v3.py:108 object = site 'handleCloseStart' (no geom named)"),
    "window-open-v3": ((), "sawyer_window_open_v3.py:104 object = site 'handleOpenStart' (no geom named)"),
}
FUNCTIONAL_PARTS: dict[str, tuple[tuple[str, ...], str]] = {
    task: (names, _ENVS + src) for task, (names, src) in _PARTS_TABLE.items()
}

LEVELS: tuple[str, ...] = ("L1", "L2", "L3")
GATES: tuple[str, ...] = ("none", "feasibility")
COMBINATIONS: tuple[str, ...] = ("weighted_sum", "product")
AFFORD_METHODS: tuple[str, ...] = tuple(
    f"afford_{lv}_{g}_{cb}" for lv in LEVELS for g in GATES for cb in COMBINATIONS
)
METHOD_NAMES: tuple[str, ...] = ("random", *AFFORD_METHODS)
#: The paired comparison the report leads with: L2 (feasibility + function), gated, product.
HEADLINE = "afford_L2_feasibility_product"

ROBOT_ROOTS = frozenset({"base", "mocap"})  # the Sawyer arm and hand hang under 'base'
SUPPORT_ROOTS = frozenset({"tablelink"})  # the table every object stands on
STATIC_ROOTS = frozenset({"RetainingWall"})  # static, never the manipulated object
FAR_CONTROL_OFFSET = (0.0, 0.0, 0.3)  # the 'far' control: 0.3 m straight above obs[4:7]
OBSTACLE_SPACING = 0.01  # m between obstacle sample points (clearance margin is 0.05)
REGION_SPACING = 0.005  # m between functional-part sample points (function ramp 0.03..0.08)
MAX_POINTS_PER_GEOM = 20_000
COMMAND_PREFIX = (
    "PYTHONPATH=src/afford_core:src/afford_planner:src/afford_eval "
    ".venv-metaworld/bin/python -m afford_eval.metaworld_bench"
)


# --------------------------------------------------------------------------- small helpers


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON via a temporary file and ``os.replace``, so a killed run never leaves half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _r(x: Iterable[float] | np.ndarray, digits: int = 5) -> list[float]:
    return [round(float(v), digits) + 0.0 for v in np.ravel(np.asarray(x, dtype=np.float64))]


def scene_seed(seed: int, task: str, episode: int) -> int:
    """Seed of one (task, episode): candidate sampling, the random draw and tie draws use it."""
    return zlib.crc32(f"{seed}/{task}/{episode}".encode())


def record_path(out: Path, task: str, episode: int) -> Path:
    return out / "records" / task / f"ep{episode:02d}.json"


def versions() -> dict[str, str]:
    """Versions of what produced the numbers (metaworld/mujoco only where installed)."""
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("metaworld", "mujoco", "gymnasium", "numpy", "scipy"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[pkg] = md.version(pkg)
    return out


# --------------------------------------------------------------------------- MT50 task list


def _task_cache_path(seed: int) -> Path:
    return Path(sys.prefix) / "share" / "afford_metaworld" / f"mt50_seed{seed}_tasks.pkl"


def load_mt50_tasks(seed: int = 0, cache: Path | None = None) -> dict[str, list[Any]]:
    """The official ``metaworld.MT50(seed)`` train tasks grouped by env name, in MT50's order.

    Building MT50 takes ~35 s; the result is pickled inside the venv (keyed by the metaworld
    version) because every run and the test need it. MT1(name, seed) is *not* equivalent: it
    draws different goal variants for 49 of the 50 tasks.
    """
    import importlib.metadata as md

    import metaworld

    version = md.version("metaworld")
    cache = cache or _task_cache_path(seed)
    if cache.exists():
        with cache.open("rb") as f:
            blob = pickle.load(f)  # written by this function, inside this venv
        if blob.get("metaworld") == version and blob.get("seed") == seed:
            return blob["tasks"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mt50 = metaworld.MT50(seed=seed)
    tasks: dict[str, list[Any]] = {name: [] for name in mt50.train_classes}
    for t in mt50.train_tasks:
        tasks[t.env_name].append(t)
    cache.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache.parent)
    with os.fdopen(fd, "wb") as f:
        pickle.dump({"metaworld": version, "seed": seed, "tasks": tasks}, f)
    os.replace(tmp, cache)
    return tasks


def task_fingerprint(task: Any) -> str:
    """crc32 of a task's goal variant (its rand_vec), so a record names the exact variant it ran."""
    data = pickle.loads(task.data)  # metaworld's own Task payload
    return f"{zlib.crc32(np.asarray(data['rand_vec'], dtype=np.float64).tobytes()):08x}"


# --------------------------------------------------------------------------- MuJoCo geometry


def _name(m: Any, objtype: Any, i: int) -> str | None:
    import mujoco

    return mujoco.mj_id2name(m, objtype, i)


def body_label(m: Any, b: int) -> str:
    import mujoco

    return _name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f"<body{b}>"


def geom_label(m: Any, g: int) -> str | None:
    import mujoco

    return _name(m, mujoco.mjtObj.mjOBJ_GEOM, g)


def geom_type_name(m: Any, g: int) -> str:
    import mujoco

    return mujoco.mjtGeom(m.geom_type[g]).name.removeprefix("mjGEOM_").lower()


def root_label(m: Any, b: int) -> str:
    return body_label(m, int(m.body_rootid[b]))


def body_moves(m: Any, b: int) -> bool:
    """Whether body b or one of its ancestors (below the world) carries a joint."""
    while b != 0:
        if m.body_jntnum[b] > 0:
            return True
        b = int(m.body_parentid[b])
    return False


def geoms_of_body(m: Any, b: int) -> list[int]:
    return [g for g in range(m.ngeom) if int(m.geom_bodyid[g]) == b]


def _mesh_triangles(m: Any, g: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Triangles (F, 3, 3) of a mesh geom in its geom frame and their areas, wound outward."""
    mid = int(m.geom_dataid[g])
    if mid < 0:
        return None
    verts = m.mesh_vert[m.mesh_vertadr[mid]: m.mesh_vertadr[mid] + m.mesh_vertnum[mid]].astype(np.float64)
    faces = m.mesh_face[m.mesh_faceadr[mid]: m.mesh_faceadr[mid] + m.mesh_facenum[mid]]
    if len(faces) == 0:
        return None
    tri = verts[faces]  # (F, 3, 3)
    cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    # A mesh wound inward has negative signed volume: flip it so cross products point outward.
    if np.einsum("ij,ij->i", tri[:, 0], cross).sum() < 0:
        tri = tri[:, [0, 2, 1]]
    areas = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    return tri, areas


def geom_area(m: Any, g: int) -> float:
    """Surface area of geom g (m^2); 0 for planes, height fields and other unsampled types."""
    t = geom_type_name(m, g)
    s = m.geom_size[g]
    if t == "box":
        return float(8 * (s[0] * s[1] + s[1] * s[2] + s[0] * s[2]))
    if t == "sphere":
        return float(4 * np.pi * s[0] ** 2)
    if t == "capsule":
        return float(4 * np.pi * s[0] * s[1] + 4 * np.pi * s[0] ** 2)
    if t == "cylinder":
        return float(4 * np.pi * s[0] * s[1] + 2 * np.pi * s[0] ** 2)
    if t == "ellipsoid":  # Knud Thomsen's approximation, within ~1%
        p = 1.6075
        a, b, c = s[0] ** p, s[1] ** p, s[2] ** p
        return float(4 * np.pi * ((a * b + a * c + b * c) / 3) ** (1 / p))
    if t == "mesh":
        tri = _mesh_triangles(m, g)
        return float(tri[1].sum()) if tri is not None else 0.0
    return 0.0


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def sample_geom_surface(
    m: Any, d: Any, g: int, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """n points uniformly on geom g's surface and their outward unit normals, world frame.

    Boxes, spheres, ellipsoids (approximately uniform), cylinders, capsules and meshes (area-weighted
    triangles, barycentric) are sampled; other types (planes, height fields) give nothing.
    """
    t = geom_type_name(m, g)
    s = np.asarray(m.geom_size[g], dtype=np.float64)
    loc: np.ndarray
    nrm: np.ndarray
    if n <= 0:
        return np.zeros((0, 3)), np.zeros((0, 3))
    if t == "box":
        areas = np.array([s[1] * s[2], s[1] * s[2], s[0] * s[2], s[0] * s[2], s[0] * s[1], s[0] * s[1]])
        face = rng.choice(6, size=n, p=areas / areas.sum())
        axis, sign = face // 2, np.where(face % 2 == 0, 1.0, -1.0)
        loc = rng.uniform(-s, s, size=(n, 3))
        loc[np.arange(n), axis] = sign * s[axis]
        nrm = np.zeros((n, 3))
        nrm[np.arange(n), axis] = sign
    elif t == "sphere":
        nrm = _unit(rng, n)
        loc = s[0] * nrm
    elif t == "ellipsoid":
        loc = _unit(rng, n) * s
        nrm = loc / s**2
        nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    elif t in ("cylinder", "capsule"):
        r, h = s[0], s[1]
        side = 4 * np.pi * r * h
        cap = 4 * np.pi * r * r if t == "capsule" else 2 * np.pi * r * r
        on_side = rng.uniform(size=n) < side / (side + cap)
        ang = rng.uniform(0, 2 * np.pi, size=n)
        loc = np.stack([r * np.cos(ang), r * np.sin(ang), rng.uniform(-h, h, size=n)], axis=1)
        nrm = np.stack([np.cos(ang), np.sin(ang), np.zeros(n)], axis=1)
        k = int((~on_side).sum())
        if k:
            if t == "capsule":
                u = _unit(rng, k)
                loc[~on_side] = r * u + np.outer(np.sign(u[:, 2]), [0.0, 0.0, h])
                nrm[~on_side] = u
            else:
                rr, aa = r * np.sqrt(rng.uniform(size=k)), rng.uniform(0, 2 * np.pi, size=k)
                sg = rng.choice([-1.0, 1.0], size=k)
                loc[~on_side] = np.stack([rr * np.cos(aa), rr * np.sin(aa), sg * h], axis=1)
                nrm[~on_side] = np.outer(sg, [0.0, 0.0, 1.0])
    elif t == "mesh":
        mesh = _mesh_triangles(m, g)
        if mesh is None or mesh[1].sum() <= 0:
            return np.zeros((0, 3)), np.zeros((0, 3))
        tri, areas = mesh
        idx = rng.choice(len(tri), size=n, p=areas / areas.sum())
        u, v = rng.uniform(size=n), rng.uniform(size=n)
        flip = u + v > 1
        u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
        a, b, c = tri[idx, 0], tri[idx, 1], tri[idx, 2]
        loc = a + u[:, None] * (b - a) + v[:, None] * (c - a)
        nrm = np.cross(b - a, c - a)
        nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
    else:
        return np.zeros((0, 3)), np.zeros((0, 3))
    rot = np.asarray(d.geom_xmat[g], dtype=np.float64).reshape(3, 3)
    return loc @ rot.T + np.asarray(d.geom_xpos[g], dtype=np.float64), nrm @ rot.T


def sample_geoms_dense(
    m: Any, d: Any, geoms: Sequence[int], spacing: float, rng: np.random.Generator, min_points: int = 20
) -> np.ndarray:
    """Points on the given geoms' surfaces, about one per spacing^2 of area (for distance tests)."""
    out = [np.zeros((0, 3))]
    for g in geoms:
        area = geom_area(m, g)
        if area <= 0:
            continue
        n = int(min(MAX_POINTS_PER_GEOM, max(min_points, math.ceil(area / spacing**2))))
        out.append(sample_geom_surface(m, d, g, n, rng)[0])
    return np.concatenate(out)


def _geom_box_distance(m: Any, d: Any, g: int, x: np.ndarray) -> float:
    """Distance from world point x to geom g's bounding box in the geom frame (0 inside)."""
    rot = np.asarray(d.geom_xmat[g]).reshape(3, 3)
    loc = rot.T @ (x - d.geom_xpos[g]) - m.geom_aabb[g][:3]
    return float(np.linalg.norm(np.maximum(np.abs(loc) - m.geom_aabb[g][3:], 0.0)))


def find_manipulated_body(m: Any, d: Any, target: np.ndarray) -> tuple[int, float]:
    """The movable non-robot, non-scene body whose geoms come nearest ``target`` (obs[4:7]).

    The scripted expert aims at obs[4:7]; that point is defined by a site, a body or a geom of the
    manipulated part, so the nearest movable body is that part.
    """
    best: tuple[float, int] | None = None
    for b in range(1, m.nbody):
        if root_label(m, b) in ROBOT_ROOTS | SUPPORT_ROOTS | STATIC_ROOTS or not body_moves(m, b):
            continue
        gs = geoms_of_body(m, b)
        if not gs:
            continue
        dist = min(_geom_box_distance(m, d, g, target) for g in gs)
        if best is None or dist < best[0]:
            best = (dist, b)
    if best is None:
        raise RuntimeError("no movable object body with geoms in this scene")
    return best[1], best[0]


def obstacle_geoms(m: Any, manipulated: int) -> tuple[list[int], dict[str, Any]]:
    """Geoms clearance is measured against, and what was left out and why (for the record)."""
    keep, left = [], {"manipulated_body": 0, "robot": 0, "table": 0, "unsampled_type": 0}
    for g in range(m.ngeom):
        b = int(m.geom_bodyid[g])
        root = root_label(m, b)
        if b == manipulated:
            left["manipulated_body"] += 1
        elif root in ROBOT_ROOTS:
            left["robot"] += 1
        elif root in SUPPORT_ROOTS:
            left["table"] += 1
        elif geom_area(m, g) <= 0:  # the floor plane below the table
            left["unsampled_type"] += 1
        else:
            keep.append(g)
    bodies = sorted({body_label(m, int(m.geom_bodyid[g])) for g in keep})
    return keep, {"left_out": left, "n_geoms": len(keep), "bodies": bodies}


def rotation_from_approach(approach: np.ndarray) -> np.ndarray:
    """Gripper rotation (columns x, y, z) with z = approach and y (closing axis) as near world y as
    it can be: the Sawyer's pads close along world y when the hand points down."""
    z = approach / np.linalg.norm(approach)
    y = np.array([0.0, 1.0, 0.0]) - z * z[1]
    if np.linalg.norm(y) < 1e-6:
        y = np.array([1.0, 0.0, 0.0]) - z * z[0]
    y /= np.linalg.norm(y)
    x = np.cross(y, z)
    return np.stack([x, y, z], axis=1)


TOP_DOWN = rotation_from_approach(np.array([0.0, 0.0, -1.0]))


# --------------------------------------------------------------------------- execution


def run_episode(env: Any, policy: Any, offset: np.ndarray | None = None) -> dict[str, Any]:
    """Reset and run the expert (its target shifted by ``offset``) until success or the horizon."""
    obs, _ = env.reset()
    t0 = time.perf_counter()
    success, steps = False, 0
    for step in range(1, int(env.max_path_length) + 1):
        steps = step
        o = obs
        if offset is not None:
            o = obs.copy()
            o[4:7] += offset
            o[22:25] += offset  # the frame-stacked copy of the previous object point
        action = np.clip(policy.get_action(o), -1.0, 1.0)
        obs, _, terminated, truncated, info = env.step(action)
        if info["success"] > 0.5:
            success = True
            break
        if terminated or truncated:
            break
    return {"success": success, "steps": steps, "wall_s": round(time.perf_counter() - t0, 4)}


@dataclass(frozen=True)
class RunConfig:
    """One run's protocol; stored in ``config.json`` and checked on resume (no mixed runs)."""

    seed: int = 0
    episodes: int = 5
    candidates: int = 12

    def __post_init__(self) -> None:
        if not (1 <= self.episodes <= 50):
            raise ValueError(f"episodes must be in 1..50 (MT50 has 50 goal variants), got {self.episodes}")
        if self.candidates < 1:
            raise ValueError(f"candidates must be >= 1, got {self.candidates}")


def reach_box(env: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The TCP's reachable box: the env's mocap clip box shifted by the TCP-mocap offset at reset."""
    tcp = np.asarray(env.tcp_center, dtype=np.float64)
    offset = tcp - np.asarray(env.data.mocap_pos[0], dtype=np.float64)
    lo = np.asarray(env.mocap_low, dtype=np.float64) + offset
    hi = np.asarray(env.mocap_high, dtype=np.float64) + offset
    return lo, hi, offset


def score_candidates(
    points: np.ndarray,
    normals: np.ndarray,
    config: TermsConfig,
    width: float,
    obstacles: cKDTree | None,
    region: cKDTree | None,
) -> list[GraspCandidate]:
    """GraspCandidates at the sampled points with the AFFORD-X terms filled (module docstring)."""
    cands = []
    for i, (p, n) in enumerate(zip(points, normals, strict=True)):
        cand = GraspCandidate(position=p, rotation=rotation_from_approach(-n), width=width,
                              source="surface", index=i)
        top_down = GraspCandidate(position=p, rotation=TOP_DOWN, width=width, source="surface", index=i)
        r = reach_term(cand, config)
        a = approach_term(cand, config)
        c = clearance_term(top_down, obstacles, config)
        cand.terms.update({
            "reach_box": r, "reach": r, "approach": a, "clearance": c, "feasibility": r * a * c,
            "function": function_term(cand, region, config), "task": 1.0, "plan": 1.0,
        })
        cands.append(cand)
    return cands


def run_scene(env: Any, policy: Any, task: Any, name: str, episode: int, cfg: RunConfig) -> dict[str, Any]:
    """One (task, episode): candidates, their executions, controls, terms and every method's pick."""
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    env.set_task(task)
    obs, _ = env.reset()
    m, d = env.model, env.data
    target = np.asarray(obs[4:7], dtype=np.float64).copy()
    seed = scene_seed(cfg.seed, name, episode)
    rng = np.random.default_rng(seed)

    t = time.perf_counter()
    body, body_dist = find_manipulated_body(m, d, target)
    body_geoms = geoms_of_body(m, body)
    areas = np.array([geom_area(m, g) for g in body_geoms])
    if areas.sum() <= 0:
        raise RuntimeError(f"manipulated body {body_label(m, body)} has no sampleable surface")
    pick = rng.choice(len(body_geoms), size=cfg.candidates, p=areas / areas.sum())
    points, normals, cand_geoms = [], [], []
    for k in pick:
        g = body_geoms[int(k)]
        p, n = sample_geom_surface(m, d, g, 1, rng)
        points.append(p[0])
        normals.append(n[0])
        cand_geoms.append(g)
    points_arr, normals_arr = np.array(points), np.array(normals)
    timings["candidates_s"] = time.perf_counter() - t

    t = time.perf_counter()
    lo, hi, tcp_offset = reach_box(env)
    pad_gap = float(np.linalg.norm(d.body("rightpad").xpos - d.body("leftpad").xpos))
    config = TermsConfig(workspace_min=tuple(lo), workspace_max=tuple(hi), gripper=GripperGeometry())
    obs_geoms, obs_info = obstacle_geoms(m, body)
    obs_pts = sample_geoms_dense(m, d, obs_geoms, OBSTACLE_SPACING, np.random.default_rng([seed, 1]))
    obstacles = cKDTree(obs_pts) if len(obs_pts) else None
    part_names, part_source = FUNCTIONAL_PARTS.get(name, ((), "not in the table"))
    region_geoms = [g for g in body_geoms if geom_label(m, g) in part_names]
    region_pts = sample_geoms_dense(m, d, region_geoms, REGION_SPACING, np.random.default_rng([seed, 2]), 200)
    region = cKDTree(region_pts) if len(region_pts) else None
    cands = score_candidates(points_arr, normals_arr, config, pad_gap, obstacles, region)
    timings["terms_s"] = time.perf_counter() - t

    t = time.perf_counter()
    outcomes = [run_episode(env, policy, p - target) for p in points_arr]
    expert = run_episode(env, policy, None)
    far = run_episode(env, policy, np.asarray(FAR_CONTROL_OFFSET))
    timings["execute_s"] = time.perf_counter() - t

    t = time.perf_counter()
    context = MethodContext(seed=seed, object_center=target)
    choices = apply_methods(cands, context, list(METHOD_NAMES))
    timings["methods_s"] = time.perf_counter() - t
    timings["total_s"] = time.perf_counter() - t_start

    cand_rows = []
    for c, g, n, out in zip(cands, cand_geoms, normals_arr, outcomes, strict=True):
        cand_rows.append({
            "index": c.index,
            "point": _r(c.position),
            "normal": _r(n, 4),
            "body": body_label(m, body),
            "geom": {"id": int(g), "name": geom_label(m, g), "type": geom_type_name(m, g)},
            "offset_from_target": _r(c.position - target),
            "terms": {k: round(float(v), 4) + 0.0 for k, v in c.terms.items()},
            "outcome": out,
        })
    return {
        "schema": SCHEMA,
        "task": name,
        "tier": TIER_OF.get(name, "unknown"),
        "episode": episode,
        "goal_variant": episode,
        # suite/scene let afford_eval.stats.rates and .compare read these records as they are.
        "suite": f"metaworld-mt50/{TIER_OF.get(name, 'unknown')}",
        "scene": f"{name}/ep{episode:02d}",
        "task_fingerprint": task_fingerprint(task),
        "seed": cfg.seed,
        "scene_seed": seed,
        "target_obs4_7": _r(target),
        "goal_obs36_39": _r(obs[36:39]),
        "manipulated": {
            "body": body_label(m, body), "root": root_label(m, body), "body_id": int(body),
            "distance_to_target": round(body_dist, 5),
            "geoms": [{"id": int(g), "name": geom_label(m, g), "type": geom_type_name(m, g),
                       "area": round(float(a), 6)} for g, a in zip(body_geoms, areas, strict=True)],
        },
        "reach_box": {"source": "env.mocap_low/mocap_high + (tcp_center - mocap_pos) at reset",
                      "mocap_low": _r(env.mocap_low), "mocap_high": _r(env.mocap_high),
                      "hand_low": _r(env.hand_low), "hand_high": _r(env.hand_high),
                      "tcp_offset": _r(tcp_offset), "tcp_min": _r(lo), "tcp_max": _r(hi)},
        "gripper": {"width": round(pad_gap, 4), "closing_axis": "world y",
                    "skeleton": asdict(config.gripper)},
        "clearance_obstacles": {**obs_info, "n_points": len(obs_pts), "spacing": OBSTACLE_SPACING},
        "functional_part": {"names": list(part_names), "source": part_source,
                            "geoms_found": [geom_label(m, g) for g in region_geoms],
                            "n_points": len(region_pts),
                            "neutral": region is None},
        "candidates": cand_rows,
        "controls": {"expert": expert, "far": {**far, "offset": list(FAR_CONTROL_OFFSET)}},
        "methods": {k: v.index for k, v in choices.items()},
        "ties": {k: v.tied for k, v in choices.items()},
        "ceiling": any(o["success"] for o in outcomes),
        "chance": sum(o["success"] for o in outcomes) / len(outcomes),
        "timings": {k: round(v, 4) for k, v in timings.items()},
        "finished": _now(),
    }


def _load_record(path: Path) -> dict[str, Any] | None:
    try:
        with path.open() as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def run(out: Path, tasks: Sequence[str] | None, cfg: RunConfig, retry_errors: bool = False,
        command: str = "") -> int:
    """Run (or resume) the benchmark into ``out``; returns the number of errored records."""
    warnings.filterwarnings("ignore", message="Constant")  # metaworld's policy gain warning, every step
    from metaworld.env_dict import MT50_V3
    from metaworld.policies import ENV_POLICY_MAP

    names = list(tasks) if tasks else list(MT50_V3)
    unknown = [n for n in names if n not in MT50_V3]
    if unknown:
        raise SystemExit(f"unknown MT50 tasks {unknown}; known: {sorted(MT50_V3)}")
    out.mkdir(parents=True, exist_ok=True)
    cfg_path = out / "config.json"
    protocol = asdict(cfg)
    if cfg_path.exists():
        old = json.loads(cfg_path.read_text())
        if old.get("protocol") != protocol:
            raise SystemExit(f"{out} holds a run with protocol {old.get('protocol')}, not {protocol}; "
                             "use another --out")
    else:
        write_json_atomic(cfg_path, {
            "schema": SCHEMA, "protocol": protocol, "benchmark": f"metaworld.MT50(seed={cfg.seed})",
            "methods": list(METHOD_NAMES), "versions": versions(), "command": command,
            "created": _now(), "far_control_offset": list(FAR_CONTROL_OFFSET),
        })
    t0 = time.perf_counter()
    all_tasks = load_mt50_tasks(cfg.seed)
    print(f"[metaworld_bench] MT50(seed={cfg.seed}) tasks ready in {time.perf_counter() - t0:.1f}s",
          flush=True)
    done = skipped = errors = 0
    run_start = _now()
    # The code that chose and scored, read before the run writes anything (the run's own folder
    # does not count towards the dirty flag).
    prov = provenance(command, out)
    code = {k: prov.get(k) for k in ("git_commit", "git_dirty", "source_sha256")}
    for name in names:
        todo = []
        for ep in range(cfg.episodes):
            rec = _load_record(record_path(out, name, ep))
            if rec is not None and ("error" not in rec or not retry_errors):
                skipped += 1
                continue
            todo.append(ep)
        if not todo:
            continue
        t_task = time.perf_counter()
        env = policy = None
        try:
            env = MT50_V3[name]()
            policy = ENV_POLICY_MAP[name]()
        except Exception:
            tb = traceback.format_exc()
            for ep in todo:
                write_json_atomic(record_path(out, name, ep), _error_record(name, ep, cfg, tb))
                errors += 1
            print(f"[metaworld_bench] {name}: env construction FAILED\n{tb}", flush=True)
            continue
        for ep in todo:
            try:
                rec = run_scene(env, policy, all_tasks[name][ep], name, ep, cfg)
            except Exception:
                rec = _error_record(name, ep, cfg, traceback.format_exc())
                errors += 1
                print(f"[metaworld_bench] {name} ep{ep}: FAILED\n{rec['error']}", flush=True)
            write_json_atomic(record_path(out, name, ep), rec)
            done += 1
        with contextlib.suppress(Exception):
            env.close()
        print(f"[metaworld_bench] {name}: {len(todo)} episode(s) in {time.perf_counter() - t_task:.1f}s "
              f"(done {done}, skipped {skipped}, errors {errors})", flush=True)
    print(f"[metaworld_bench] finished: done {done}, skipped {skipped}, errors {errors} "
          f"in {time.perf_counter() - t0:.1f}s", flush=True)
    with (out / "runs.jsonl").open("a") as f:
        f.write(json.dumps({"start": run_start, "end": _now(), "wall_s": round(time.perf_counter() - t0, 1),
                            "done": done, "skipped": skipped, "errors": errors, "tasks": names,
                            "command": command, "code": code}) + "\n")
    return errors


def _error_record(name: str, episode: int, cfg: RunConfig, tb: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "task": name, "tier": TIER_OF.get(name, "unknown"), "episode": episode,
            "seed": cfg.seed, "error": tb, "finished": _now()}


# --------------------------------------------------------------------------- report


def load_records(out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Completed records and errored ones, in task/episode order."""
    ok: list[dict[str, Any]] = []
    bad: list[dict[str, Any]] = []
    for path in sorted((out / "records").glob("*/ep*.json")):
        rec = _load_record(path)
        if rec is None:
            continue
        (bad if "error" in rec else ok).append(rec)
    return ok, bad


def method_success(rec: dict[str, Any], method: str) -> int:
    """1 when the method's pick succeeded in this record, 0 when it failed or abstained."""
    idx = rec["methods"].get(method)
    if idx is None:
        return 0
    return int(bool(rec["candidates"][idx]["outcome"]["success"]))


def _cell(k: float, n: int) -> str:
    if n == 0:
        return "n/a"
    lo, hi = wilson(int(round(k)), n) if float(k).is_integer() else wilson_frac(k, n)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def wilson_frac(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson interval for a non-integer success count (only used when counts are fractional)."""
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def summarise(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts behind one table: ceiling, chance, controls, every method (successes, ties, abstentions)."""
    n = len(records)
    n_cand = sum(len(r["candidates"]) for r in records)
    k_cand = sum(sum(c["outcome"]["success"] for c in r["candidates"]) for r in records)
    rows: dict[str, Any] = {
        "episodes": n,
        "tasks": len({r["task"] for r in records}),
        "ceiling": {"k": sum(int(r["ceiling"]) for r in records), "n": n},
        "chance": {"k": k_cand, "n": n_cand,
                   "mean_per_episode": (sum(r["chance"] for r in records) / n) if n else 0.0},
        "expert": {"k": sum(int(r["controls"]["expert"]["success"]) for r in records), "n": n},
        "far": {"k": sum(int(r["controls"]["far"]["success"]) for r in records), "n": n},
        "methods": {},
    }
    for m in METHOD_NAMES:
        ties = [r["ties"][m] for r in records]
        rows["methods"][m] = {
            "k": sum(method_success(r, m) for r in records), "n": n,
            "abstained": sum(1 for r in records if r["methods"][m] is None),
            "drawn": sum(1 for t in ties if t > 1),
            "mean_tie": (sum(ties) / n) if n else 0.0,
        }
    return rows


def _table(s: dict[str, Any]) -> list[str]:
    n = s["episodes"]
    lines = [
        "| row | success | rate [95% Wilson] | ties>1 | mean tie | abstain |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
        f"| ceiling (any candidate succeeds) | {s['ceiling']['k']}/{n} | "
        f"{_cell(s['ceiling']['k'], n)} | | | |",
        f"| chance (expected random; Wilson over all {s['chance']['n']} candidate runs) | "
        f"{s['chance']['k']}/{s['chance']['n']} | {_cell(s['chance']['k'], s['chance']['n'])} | | | |",
    ]
    for m, v in s["methods"].items():
        label = "random (one seeded draw)" if m == "random" else m
        if m == HEADLINE:
            label = f"**{m}**"
        lines.append(f"| {label} | {v['k']}/{n} | {_cell(v['k'], n)} | {v['drawn']} | {v['mean_tie']:.2f} | "
                     f"{v['abstained']} |")
    lines.append(f"| expert reference (unshifted point; not a method) | {s['expert']['k']}/{n} | "
                 f"{_cell(s['expert']['k'], n)} | | | |")
    lines.append(f"| far control (+0.3 m above obs[4:7]; should fail) | {s['far']['k']}/{n} | "
                 f"{_cell(s['far']['k'], n)} | | | |")
    return lines


def _summary_table(summary: dict[str, Any]) -> list[str]:
    """One row per method, one column per tier: rate and 95% Wilson interval."""
    cols = ["overall", *[t for t in TIERS if t in summary]]
    head = "| row | " + " | ".join(f"{c} (n={summary[c]['episodes']})" for c in cols) + " |"
    lines = ["## Summary: success rate [95% Wilson]", "", head, "| --- |" + " --- |" * len(cols)]

    def row(label: str, get: Any) -> str:
        return f"| {label} | " + " | ".join(_cell(*get(summary[c])) for c in cols) + " |"

    lines.append(row("ceiling (any candidate succeeds)", lambda s: (s["ceiling"]["k"], s["ceiling"]["n"])))
    lines.append(row("chance (expected random)", lambda s: (s["chance"]["k"], s["chance"]["n"])))
    for m in METHOD_NAMES:
        label = "random (one seeded draw)" if m == "random" else (f"**{m}**" if m == HEADLINE else m)
        lines.append(row(label, lambda s, m=m: (s["methods"][m]["k"], s["methods"][m]["n"])))
    lines.append(row("expert reference (not a method)", lambda s: (s["expert"]["k"], s["expert"]["n"])))
    lines.append(row("far control (should fail)", lambda s: (s["far"]["k"], s["far"]["n"])))
    return [*lines, ""]


def _diff_line(label: str, a: Sequence[float], b: Sequence[float], records: Sequence[dict[str, Any]]) -> str:
    scenes = [f"{r['task']}/{r['episode']}" for r in records]
    tasks = [r["task"] for r in records]
    d, lo, hi = paired_bootstrap(a, b, scenes, n=10_000, seed=0)
    _, tlo, thi = paired_bootstrap(a, b, tasks, n=10_000, seed=0)
    return f"| {label} | {d:+.3f} | [{lo:+.3f}, {hi:+.3f}] | [{tlo:+.3f}, {thi:+.3f}] |"


def code_line(runs: Sequence[Mapping[str, Any]]) -> str:
    """Which code ran each invocation: one commit, or a warning that the records mix versions."""
    codes = [r.get("code") or {} for r in runs]
    if not codes or any(not c.get("git_commit") for c in codes):
        return "not recorded for every invocation (a run from before provenance was kept)"
    commits = sorted({str(c["git_commit"])[:7] for c in codes})
    hashes = {c.get("source_sha256") for c in codes}
    dirty = any(c.get("git_dirty") for c in codes)
    where = f"git {', '.join(commits)}{' with uncommitted changes' if dirty else ''}"
    if len(hashes) > 1:
        return f"{where}; **the invocations ran different source code**, so the records mix versions"
    return f"{where} (source sha256 {str(next(iter(hashes)))[:12]})"


def report(out: Path) -> str:
    """Markdown report of a run directory (also written to ``report.md``, numbers to ``summary.json``)."""
    records, errored = load_records(out)
    cfg = json.loads((out / "config.json").read_text()) if (out / "config.json").exists() else {}
    runs = []
    if (out / "runs.jsonl").exists():
        runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines() if x.strip()]
    groups: dict[str, list[dict[str, Any]]] = {t: [r for r in records if r["tier"] == t] for t in TIERS}
    summary = {"overall": summarise(records), **{t: summarise(rs) for t, rs in groups.items() if rs}}
    vers = cfg.get("versions", {})
    proto = cfg.get("protocol", {})
    cmd = cfg.get("command") or "(not recorded)"
    wall = sum(r.get("wall_s", 0.0) for r in runs)
    episodes = proto.get("episodes")
    lines = [
        "# AFFORD-X selection layer on Meta-World MT50",
        "",
        f"Protocol: `metaworld.MT50(seed={proto.get('seed', '?')})`, goal variants "
        f"{'0..' + str(episodes - 1) if isinstance(episodes, int) else '?'} of every task, "
        f"{proto.get('candidates', '?')} candidate contact points per episode sampled on the manipulated "
        "body's geoms, every candidate executed by the task's scripted expert retargeted to it (obs[4:7] and "
        "obs[22:25] shifted), success = `info['success']` at any of 500 steps. Methods choose on the same "
        "candidates without seeing outcomes; ties are drawn (seeded). Terms: see the docstring of "
        "`src/afford_eval/afford_eval/metaworld_bench.py`.",
        "",
        f"Command: `{cmd}`  ",
        f"Report: `{COMMAND_PREFIX} report {out}`  ",
        f"Versions: {', '.join(f'{k} {v}' for k, v in vers.items())}  ",
        f"Records: {len(records)} complete, {len(errored)} errored; run wall time {wall / 60:.1f} min "
        f"over {len(runs)} invocation(s).  ",
        f"Code: {code_line(runs)}",
        "",
    ]
    lines += _summary_table(summary)
    lines += ["## Overall", "", *_table(summary["overall"]), ""]
    for tier in TIERS:
        if tier in summary:
            s = summary[tier]
            lines += [f"## Tier: {tier} ({s['tasks']} tasks, {s['episodes']} episodes)", "", *_table(s), ""]

    if records:
        head = [method_success(r, HEADLINE) for r in records]
        rnd = [method_success(r, "random") for r in records]
        chance = [r["chance"] for r in records]
        l1 = [method_success(r, "afford_L1_feasibility_product") for r in records]
        lines += [
            "## Paired differences (all episodes)",
            "",
            "Percentile bootstrap, 10,000 resamples (`afford_eval.stats.paired_bootstrap`), clustered by "
            "scene (task, episode) and, more conservatively, by task.",
            "",
            "| difference | mean | 95% CI (scene clusters) | 95% CI (task clusters) |",
            "| --- | ---: | --- | --- |",
            _diff_line(f"{HEADLINE} - random (one draw)", head, rnd, records),
            _diff_line(f"{HEADLINE} - chance (expected random)", head, chance, records),
            _diff_line(f"{HEADLINE} - afford_L1_feasibility_product", head, l1, records),
            "",
        ]
        lines += _term_section(records)
        lines += _per_task_section(records)
    lines += _parts_section(records)
    if errored:
        lines += ["## Errored records", ""]
        lines += [f"- {r['task']} ep{r['episode']}: `{r['error'].strip().splitlines()[-1]}`" for r in errored]
        lines.append("")
    text = "\n".join(lines)
    (out / "report.md").write_text(text)
    write_json_atomic(out / "summary.json", {"summary": summary, "errored": [
        {"task": r["task"], "episode": r["episode"]} for r in errored]})
    return text


def _term_section(records: Sequence[dict[str, Any]]) -> list[str]:
    """How the terms relate to candidate success: the question the factorial's numbers rest on."""
    cands = [c for r in records for c in r["candidates"]]

    def rate(sel: Sequence[dict[str, Any]]) -> str:
        k = sum(c["outcome"]["success"] for c in sel)
        return f"{k}/{len(sel)} = {k / len(sel):.3f}" if sel else "0/0"

    gate = [c for c in cands if c["terms"]["feasibility"] >= 0.5 - 1e-12]
    nogate = [c for c in cands if c["terms"]["feasibility"] < 0.5 - 1e-12]
    top = [c for c in cands if c["terms"]["approach"] >= 0.999]
    reach_out = [c for c in cands if c["terms"]["reach"] < 1.0]
    clear_lo = [c for c in cands if c["terms"]["clearance"] < 1.0]
    fn = [c for r in records if not r["functional_part"]["neutral"] for c in r["candidates"]]
    fn_hi = [c for c in fn if c["terms"]["function"] >= 0.999]
    fn_lo = [c for c in fn if c["terms"]["function"] < 0.999]
    return [
        "## Candidate success by term",
        "",
        "| candidates | success |",
        "| --- | --- |",
        f"| all | {rate(cands)} |",
        f"| pass the gate r*a*c >= 0.5 | {rate(gate)} |",
        f"| fail the gate | {rate(nogate)} |",
        f"| top face (approach = 1) | {rate(top)} |",
        f"| outside the reach box (r = 0.1) | {rate(reach_out)} |",
        f"| clearance < 1 | {rate(clear_lo)} |",
        f"| function = 1 (tasks with a named part) | {rate(fn_hi)} |",
        f"| function < 1 (tasks with a named part) | {rate(fn_lo)} |",
        "",
    ]


def _per_task_section(records: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "## Per task",
        "",
        "Successes out of the task's episodes; chance = mean fraction of successful candidates.",
        "",
        "| task | tier | manipulated body | ceiling | chance | expert | far | random | L1 gated prod | "
        "L2 gated prod | L2 ungated wsum |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_task.setdefault(r["task"], []).append(r)
    order = [t for tier in TIERS.values() for t in tier if t in by_task]
    for t in order:
        rs = by_task[t]
        n = len(rs)

        def k(m: str, rs: list[dict[str, Any]] = rs) -> int:
            return sum(method_success(r, m) for r in rs)

        ceiling = sum(r["ceiling"] for r in rs)
        expert = sum(r["controls"]["expert"]["success"] for r in rs)
        far = sum(r["controls"]["far"]["success"] for r in rs)
        lines.append(
            f"| {t} | {rs[0]['tier']} | {rs[0]['manipulated']['body']} | {ceiling}/{n} | "
            f"{sum(r['chance'] for r in rs) / n:.2f} | {expert}/{n} | {far}/{n} | {k('random')}/{n} | "
            f"{k('afford_L1_feasibility_product')}/{n} | {k(HEADLINE)}/{n} | "
            f"{k('afford_L2_none_weighted_sum')}/{n} |"
        )
    return [*lines, ""]


def _parts_section(records: Sequence[dict[str, Any]]) -> list[str]:
    found: dict[str, list[str]] = {}
    for r in records:
        found.setdefault(r["task"], r["functional_part"]["geoms_found"])
    lines = [
        "## Functional part per task (function term)",
        "",
        "Geoms of the manipulated body that the task's env module names as its grasp part "
        "(metaworld 3.1.1 source lines); none = neutral function term 1.0.",
        "",
        "| task | part geoms | found on the manipulated body | source |",
        "| --- | --- | --- | --- |",
    ]
    for t in [t for tier in TIERS.values() for t in tier]:
        names, src = FUNCTIONAL_PARTS[t]
        got = found.get(t)
        lines.append(f"| {t} | {', '.join(names) or 'none'} | "
                     f"{'n/a' if got is None else (', '.join(g or '?' for g in got) or 'none')} | {src} |")
    return [*lines, ""]


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m afford_eval.metaworld_bench",
                                 description=(__doc__ or "").split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_run = sub.add_parser("run", help="execute every candidate of every (task, episode); resumable")
    p_run.add_argument("--out", type=Path, required=True)
    p_run.add_argument("--tasks", nargs="*", default=None, help="MT50 task names (default: all 50)")
    p_run.add_argument("--episodes", type=int, default=5)
    p_run.add_argument("--candidates", type=int, default=12)
    p_run.add_argument("--seed", type=int, default=0)
    p_run.add_argument("--retry-errors", action="store_true", help="rerun records that hold an error")
    p_run.add_argument("--no-report", action="store_true", help="skip writing report.md at the end")
    p_rep = sub.add_parser("report", help="write DIR/report.md and DIR/summary.json from the records")
    p_rep.add_argument("out", type=Path)
    p_tasks = sub.add_parser("tasks", help="build (or check) the cached MT50 task list")
    p_tasks.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    if args.cmd == "run":
        cfg = RunConfig(seed=args.seed, episodes=args.episodes, candidates=args.candidates)
        command = f"{COMMAND_PREFIX} " + shlex.join(sys.argv[1:] if argv is None else list(argv))
        errors = run(args.out, args.tasks, cfg, retry_errors=args.retry_errors, command=command)
        if not args.no_report:
            report(args.out)
            print(f"[metaworld_bench] report: {args.out / 'report.md'}", flush=True)
        return 1 if errors else 0
    if args.cmd == "report":
        print(report(args.out))
        return 0
    t0 = time.perf_counter()
    tasks = load_mt50_tasks(args.seed)
    print(f"[metaworld_bench] MT50(seed={args.seed}): {len(tasks)} tasks x "
          f"{sorted({len(v) for v in tasks.values()})} variants, ready in {time.perf_counter() - t0:.1f}s "
          f"(cache {_task_cache_path(args.seed)})")
    return 0 if len(tasks) == MT50_SIZE else 1


if __name__ == "__main__":
    sys.exit(main())
