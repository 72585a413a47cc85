"""Interaction data for PreAfford's two modules, collected in the pre-grasp world.

PreAfford (Sec. III-F) trains a grasping module on grasps tried in its scenes and a pre-grasping
module on pushes; each "included 10,000 successful and 30,000 unsuccessful interactions", eight
days on 256 cores. This is that collection, sized by ``--episodes`` (a laptop runs hundreds, a
cluster the seed's size through ``--executor ray``).

An **episode** is one scene (kind, category, seed), so episodes are independent and each is one
file, written atomically; re-running the same command resumes, and a different config is refused.

- ``grasp`` episodes: the scene at its start and once more after a sampled push (the module must
  learn what makes a state graspable, so it sees both); in each state the observed cloud and
  ``grasps`` proposals, a fraction ``rim`` of them at the object's rim (as the seed biases its
  pushes, to find successes sooner; ``afford_sim.preafford.grasps``), each tried from that state.
- ``push`` episodes: the start cloud and ``pushes`` pushes, each from the start state: contact on a
  seen object point, direction uniform or, in a fraction ``feature_bias`` of them, aimed at a
  feature within a Gaussian angle (the seed: 30%), distance half-normal; what each did (moved,
  turned, fell, collided), the cloud after it, and the grasp score before and after it, measured
  by trying ``score_tries`` grasps drawn on the cloud (the seed estimates it with its trained
  grasping module, the relay; a measured score is the quantity that network estimates, without
  its errors compounding into the push labels).

Layout of a collection directory::

    config.json                               what is collected (a resumed run must match)
    provenance.json                           one entry per session
    episodes/<scene>/<category>/<seed>.npz    one episode each
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from afford_core.files import write_atomic
from afford_core.parallel import run_jobs, run_jobs_ray

MODULES: tuple[str, ...] = ("grasp", "push")
TRAIN_SCENES: tuple[str, ...] = ("edge", "wall", "slope", "slot")
"""The scenes data comes from: "multi" is the seed's unseen scene, kept for testing."""
PUSH_DISTANCE = (0.10, 0.06)  # mean, sd (m) of the push's half-normal distance
PUSH_AIM_SD_DEG = 20.0


@dataclass(frozen=True)
class CollectConfig:
    """What one collection gathers (stored as ``config.json``).

    Attributes:
        module: ``grasp`` or ``push``.
        episodes: Scenes per (scene kind, category); episode ``k`` uses seed ``first_seed + k``.
        scenes: Scene kinds.
        categories: Object categories (default: the seed's training categories).
        first_seed: Seed of the first episode.
        grasps: Grasp proposals tried per state (grasp episodes).
        rim: Fraction of them drawn at the rim.
        pushes: Pushes tried per episode (push episodes).
        feature_bias: Fraction of pushes aimed at a feature.
        points: Points per observed cloud.
        score_tries: Push episodes: grasp tries measuring the grasp score before and after each
            push (:func:`measured_grasp_score`); 0 leaves it to the grasping module.
        second_state: Grasp episodes: where the second state comes from -- ``sampled``, a push
            drawn as push episodes draw them, or ``feature``, the object pushed towards a
            feature by a scripted push knowing where it is (0.4-1.6 times its default reach),
            as the seed places objects "on environmental features like tables or ledges" so
            that its grasp data holds graspable states.
        proposer: Grasp episodes: the tries' sampler -- ``privileged`` (the seed's on the object's
            exact surface, rim pinches from the simulator's pose) or ``cloud`` (the seed's and
            outline pinches drawn on the observed cloud: what the methods choose among at test
            time, so the critic learns to rank exactly those).
    """

    module: str
    episodes: int
    scenes: tuple[str, ...] = TRAIN_SCENES
    categories: tuple[str, ...] = ("hat", "laptop", "scissors", "keyboard", "tablet")
    first_seed: int = 0
    grasps: int = 24
    rim: float = 0.5
    pushes: int = 6
    feature_bias: float = 0.3
    points: int = 2048
    score_tries: int = 24
    second_state: str = "sampled"
    proposer: str = "privileged"

    def __post_init__(self) -> None:
        from afford_sim.preafford.objects import GENERATORS
        from afford_sim.preafford.scenes import SCENES

        if self.module not in MODULES:
            raise ValueError(f"module must be one of {MODULES}, got {self.module!r}")
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {self.episodes}")
        unknown = [s for s in self.scenes if s not in SCENES] + [
            c for c in self.categories if c not in GENERATORS
        ]
        if unknown:
            raise ValueError(f"unknown scenes or categories: {unknown}")
        if not 0.0 <= self.rim <= 1.0 or not 0.0 <= self.feature_bias <= 1.0:
            raise ValueError("rim and feature_bias are fractions in [0, 1]")
        if self.proposer not in ("privileged", "cloud"):
            raise ValueError(f"proposer must be 'privileged' or 'cloud', got {self.proposer!r}")
        if self.second_state not in ("sampled", "feature"):
            raise ValueError(f"second_state must be 'sampled' or 'feature', got {self.second_state!r}")
        if min(self.grasps, self.pushes, self.points) < 1:
            raise ValueError("grasps, pushes and points must be >= 1")

    def as_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CollectConfig:
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**fields)


@dataclass(frozen=True)
class Episode:
    """One episode to collect: a scene kind, a category, a seed, and what to do there."""

    config: CollectConfig
    scene: str
    category: str
    seed: int

    def path(self, root: Path) -> Path:
        return root / "episodes" / self.scene / self.category / f"{self.seed:05d}.npz"


def episodes_of(config: CollectConfig) -> list[Episode]:
    return [
        Episode(config, s, c, config.first_seed + k)
        for k in range(config.episodes)
        for s in config.scenes
        for c in config.categories
    ]


def sample_push(
    world: Any, cloud: np.ndarray, is_obj: np.ndarray, rng: np.random.Generator, feature_bias: float
) -> np.ndarray:
    """A push (contact x, y, z, direction, distance) as the seed samples them (module docstring)."""
    seen = cloud[is_obj] if is_obj.any() else cloud
    contact = seen[rng.integers(len(seen))]
    if rng.random() < feature_bias:
        f = world.scene.features[rng.integers(len(world.scene.features))]
        aim = np.arctan2(f.direction[1], f.direction[0]) + np.radians(rng.normal(0.0, PUSH_AIM_SD_DEG))
    else:
        aim = rng.uniform(-np.pi, np.pi)
    distance = float(np.clip(abs(rng.normal(*PUSH_DISTANCE)), 0.02, 0.3))
    return np.array([*contact, (aim + np.pi) % (2 * np.pi) - np.pi, distance])


def measured_grasp_score(
    world: Any, cloud: np.ndarray, is_obj: np.ndarray, tries: int, rng: np.random.Generator
) -> float:
    """The grasp score of the world's state, measured: the fraction of ``tries`` proposals drawn
    on its observed cloud (half of them pinches at the seen outline) that lift the object, each
    tried from this state (restored after). NaN when ``tries`` is 0, or when the object is seen by
    too few points to draw a grasp on (unmeasured, not zero: the object may well be graspable)."""
    if tries <= 0:
        return float("nan")
    from afford_perception.preafford.grasp_module import cloud_proposals
    from afford_sim.preafford.grasps import Grasp, try_grasps

    try:
        tcp, rot = cloud_proposals(cloud, is_obj, tries, rng, rim=0.5)
    except ValueError:  # the object is barely seen (grasp_module.seen_object)
        return float("nan")
    results = try_grasps(world, [Grasp(t, r) for t, r in zip(tcp, rot, strict=True)])
    return sum(r.success for r in results) / tries


def collect_episode(ep: Episode) -> dict[str, np.ndarray]:
    """Collect one episode; the arrays its file holds."""
    from afford_sim.preafford.grasps import sample_grasps, try_grasps
    from afford_sim.preafford.scenes import sample_scene
    from afford_sim.preafford.world import PreGraspWorld

    cfg = ep.config
    rng = np.random.default_rng([ep.seed, cfg.scenes.index(ep.scene), cfg.categories.index(ep.category), 5])
    world = PreGraspWorld(sample_scene(ep.scene, ep.category, ep.seed))
    cloud, is_obj = world.observe(cfg.points, rng)
    if cfg.module == "grasp":
        clouds, masks, rows, results, state_of = [cloud], [is_obj], [], [], []
        start = world.snapshot()
        if cfg.second_state == "feature":
            from afford_sim.preafford.scripted import push_towards

            feature = world.scene.features[int(rng.integers(len(world.scene.features)))]
            pushed = push_towards(world, feature, scale=float(rng.uniform(0.4, 1.6)))
        else:
            pushed = world.push_vector(sample_push(world, cloud, is_obj, rng, cfg.feature_bias))
        states = [start] + ([] if pushed.fell else [world.snapshot()])
        if len(states) > 1:
            world.restore(states[1])
            c1, m1 = world.observe(cfg.points, rng)
            clouds.append(c1)
            masks.append(m1)
        for i, state in enumerate(states):
            world.restore(state)
            if cfg.proposer == "cloud":
                # What the method will choose among at test time: drawn on this state's cloud.
                from afford_perception.preafford.grasp_module import cloud_proposals
                from afford_sim.preafford.grasps import Grasp

                try:
                    tcps, rots = cloud_proposals(clouds[i], masks[i], cfg.grasps, rng, rim=cfg.rim)
                except ValueError:  # the object is barely seen from here: no tries in this state
                    continue
                grasps = [Grasp(t, r) for t, r in zip(tcps, rots, strict=True)]
            else:
                grasps = sample_grasps(world, cfg.grasps, rng, rim=cfg.rim)
            for g, r in zip(grasps, try_grasps(world, grasps), strict=True):
                rows.append(np.r_[g.tcp, g.rot.ravel()])
                results.append((r.success, r.blocked, r.rise, r.turn_deg))
                state_of.append(i)
        res = np.array(results, dtype=float).reshape(-1, 4)
        return {
            "clouds": np.stack(clouds).astype(np.float32),
            "object_mask": np.stack(masks),
            "grasps": np.array(rows, dtype=np.float32).reshape(-1, 12),
            "state": np.array(state_of, dtype=np.int16),
            "success": res[:, 0].astype(bool),
            "blocked": res[:, 1].astype(bool),
            "rise": res[:, 2].astype(np.float32),
            "turn_deg": res[:, 3].astype(np.float32),
        }
    from afford_perception.preafford.grasp_module import MIN_SEEN

    start = world.snapshot()
    # An object the camera barely sees (a hat deep in the slot) gets no push: none can be aimed
    # at it. The episode is stored empty, so the collection goes on and a resumed run skips it.
    seen = int(is_obj.sum()) >= MIN_SEEN
    score_before = measured_grasp_score(world, cloud, is_obj, cfg.score_tries, rng)  # NaN when unseen
    pushes, outcomes, after, after_masks, scores = [], [], [], [], []
    for _ in range(cfg.pushes if seen else 0):
        world.restore(start)
        push = sample_push(world, cloud, is_obj, rng, cfg.feature_bias)
        did = world.push_vector(push)
        c1, m1 = world.observe(cfg.points, rng)
        pushes.append(push)
        outcomes.append((did.moved, did.turned_deg, did.fell, did.collided, did.blocked))
        after.append(c1)
        after_masks.append(m1)
        scores.append(0.0 if did.fell else measured_grasp_score(world, c1, m1, cfg.score_tries, rng))
    out = np.array(outcomes, dtype=float).reshape(-1, 5)
    return {
        "score_before": np.array(score_before, dtype=np.float32),
        "score_after": np.array(scores, dtype=np.float32),
        "cloud": cloud,
        "object_mask": is_obj,
        "pushes": np.array(pushes, dtype=np.float32).reshape(-1, 5),
        "moved": out[:, 0].astype(np.float32),
        "turned_deg": out[:, 1].astype(np.float32),
        "fell": out[:, 2].astype(bool),
        "collided": out[:, 3].astype(bool),
        "blocked": out[:, 4].astype(bool),
        "clouds_after": np.array(after, dtype=np.float32).reshape(-1, *cloud.shape),
        "object_mask_after": np.array(after_masks, dtype=bool).reshape(-1, *is_obj.shape),
    }


def _write(path: Path, arrays: dict[str, np.ndarray]) -> None:
    buf = io.BytesIO()
    named: dict[str, Any] = dict(arrays)
    np.savez_compressed(buf, **named)
    write_atomic(path, buf.getvalue())


def _valid(path: Path) -> bool:
    try:
        with np.load(path) as f:
            return len(f.files) > 0
    except (OSError, ValueError, EOFError):
        return False


def _json(path: Path, obj: Any) -> None:
    write_atomic(path, (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode())


def _open(root: Path, config: CollectConfig, session: dict[str, Any] | None) -> None:
    path = root / "config.json"
    if path.exists():
        stored = CollectConfig.from_dict(json.loads(path.read_text()))
        if stored != config:
            raise ValueError(f"{root} holds another collection ({stored}); choose another --out")
    elif root.exists() and any(root.iterdir()):
        raise ValueError(f"{root} is not empty and holds no collection config; choose another --out")
    else:
        _json(path, config.as_dict())
    prov = root / "provenance.json"
    sessions = json.loads(prov.read_text()) if prov.exists() else []
    _json(prov, [*sessions, session or {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}])


@dataclass
class CollectSummary:
    root: Path
    collected: int
    kept: int
    wall_s: float


def collect(
    root: Path | str,
    config: CollectConfig,
    *,
    jobs: int = 1,
    executor: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    session: dict[str, Any] | None = None,
    progress: Callable[[int, int, Episode], None] | None = None,
) -> CollectSummary:
    """Collect (or resume) every episode of ``config`` into ``root``; ``session`` (where and
    from what code it runs: ``afford_eval.runs.provenance``) is appended to ``provenance.json``."""
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    root = Path(root)
    t0 = time.perf_counter()
    _open(root, config, session)
    every = episodes_of(config)
    todo = [e for e in every if not _valid(e.path(root))]
    done = len(every) - len(todo)

    def store(ep: Episode, arrays: dict[str, np.ndarray]) -> None:
        nonlocal done
        _write(ep.path(root), arrays)
        done += 1
        if progress is not None:
            progress(done, len(every), ep)

    if executor == "local":
        run_jobs(collect_episode, todo, jobs, store)
    else:
        run_jobs_ray(collect_episode, todo, max(1, len(todo)), store, cpus=jobs, address=ray_address)
    return CollectSummary(root, len(todo), len(every) - len(todo), time.perf_counter() - t0)


def load(root: Path | str) -> tuple[CollectConfig, list[tuple[Episode, dict[str, np.ndarray]]]]:
    """A collection's config and every episode it holds (missing ones are skipped)."""
    root = Path(root)
    config = CollectConfig.from_dict(json.loads((root / "config.json").read_text()))
    out = []
    for ep in episodes_of(config):
        path = ep.path(root)
        if _valid(path):
            with np.load(path) as f:
                out.append((ep, {k: f[k] for k in f.files}))
    return config, out


def summary(root: Path | str) -> dict[str, Any]:
    """Counts per scene of a collection: episodes, interactions, successes (grasps) or falls,
    collisions and blocked starts (pushes)."""
    config, episodes = load(root)
    by: dict[str, dict[str, int]] = {}
    for ep, a in episodes:
        row = by.setdefault(
            ep.scene,
            {"episodes": 0, "interactions": 0, "successes": 0, "fell": 0, "collided": 0, "blocked": 0},
        )
        row["episodes"] += 1
        if config.module == "grasp":
            row["interactions"] += len(a["success"])
            row["successes"] += int(a["success"].sum())
            row["blocked"] += int(a["blocked"].sum())
        else:
            row["interactions"] += len(a["pushes"])
            row["fell"] += int(a["fell"].sum())
            row["collided"] += int(a["collided"].sum())
            row["blocked"] += int(a["blocked"].sum())
    return {"module": config.module, "scenes": by}
