"""PreAfford's Table II protocol, with the rows that can be run so far.

``afford bench preafford --model CKPT --rollouts N --out DIR``: for each scene kind (edge, wall,
slope, slot, multi) and each hard-to-grasp category (the seed's train and test splits), ``N``
seeded scenes; in each, every method below from the same start, and its final grasp executed in
the pre-grasp world (``afford_sim.preafford``), judged by the seed's grasp rule (``rules.py``).

Methods (a name says what it is):

- ``direct_critic`` -- the seed's "W/o pre-grasping": the grasping module's critic ranks
  ``proposals`` grasps drawn on the observed cloud (the seed's sampler, and a share ``rim`` of
  pinches at the seen outline, standing in for the cVAE proposals not built yet); the top one
  is run.
- ``direct_random`` -- chance: one of the same proposals, drawn uniformly (seeded).
- ``direct_ceiling`` -- ceiling of the direct grasp: success if any of the same proposals
  succeeds when tried (each from the same start; an oracle, not a method).
- ``scripted_push_critic`` -- a reference, not a method: a push that knows where the feature is
  (``afford_sim.preafford.scripted``, privileged), then ``direct_critic`` from where it left the
  object. What a push buys, with our grasp module, where a push is aimed right.

The seed's pushing rows, with the pre-grasping module's critic C_1 (``push_model``) choosing among
a grid of pushes (``push_module.push_grid``; its cVAE proposals are not built) and the necessity
check (push only while c_2 is under ``THETA_G`` = 0.8, the seed's value). c_2 is the mean
grasp-critic score of the top 8 proposals, mapped by the run's calibration (``necessity``:
``afford_perception.preafford.necessity``, fitted on validation states) to the chance that the
object can be grasped where it lies; a run without one compares the raw score, as before:

- ``push_random_direction`` -- the module's contact, a uniformly drawn displacement; one push.
- ``push_centre_point`` -- the contact at the seen object's centroid, the module's displacement; one push.
- ``preafford_open_loop`` -- the module's push, once (the seed's "Ours w/o closed-loop").
- ``preafford`` -- closed loop: push, look again, until c_2 reaches theta_g, the module expects no
  gain, or ``MAX_PUSHES`` pushes.

Each then grasps as ``direct_critic`` does. Every record holds c_2 (the value the check compares)
and the raw score at the start and at the end, and whether it pushed. ``direct_ceiling``'s records
of the training categories on other seeds are the validation states a calibration is fitted on
(:func:`calibration_states`, ``afford preafford calibrate``).

**Table III** (the seed's compatibility test: how often the necessity check pushes on objects that
are easy to grasp, G, and on hard ones, U, in the multi scene, and the grasp success that
follows): a run whose categories include easy ones (``afford_sim.preafford.objects``) adds it to
the report, from ``preafford``'s records in the multi scene (``afford bench preafford --table 3``
runs exactly that, with the direct grasp's chance and ceiling on the same scenes). Beside the
rate the check pushes at, the report gives the rate a push was needed at (no proposal of the
scene lifts the object directly: ``direct_ceiling`` failed) and how often the check's decision
matched that need (a coin's is 50%).

Layout::

    config.json                                   what is run (a resumed run must match)
    provenance.json                               one entry per session
    rollouts/<scene>/<category>/<method>/<seed>.json
    report.md                                     rebuilt from the records
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from afford_core.files import remove_temporaries, write_atomic
from afford_core.parallel import run_jobs, run_jobs_ray
from afford_eval.runs import provenance, write_json
from afford_eval.stats import wilson
from afford_perception.preafford.necessity import THETA_G  # the seed's threshold on c_2

PUSH_METHODS: tuple[str, ...] = (
    "push_random_direction",
    "push_centre_point",
    "preafford_open_loop",
    "preafford",
)
METHODS: tuple[str, ...] = (
    "direct_critic",
    "direct_random",
    "direct_ceiling",
    *PUSH_METHODS,
    "scripted_push_critic",
)
MAX_PUSHES = 3
"""The closed loop's bound on pushes."""
PUSH_CONTACTS = 32
SCENES: tuple[str, ...] = ("edge", "wall", "slope", "slot", "multi")
TRAIN: tuple[str, ...] = ("hat", "laptop", "scissors", "keyboard", "tablet")
TEST: tuple[str, ...] = ("phone", "pliers", "switch", "window")
EASY_TRAIN: tuple[str, ...] = ("bottle", "can", "mug", "carton", "block")
EASY_TEST: tuple[str, ...] = ("cup", "jar", "remote", "soap")
TABLE3_SCENE = "multi"
"""The seed measures its necessity check (Table III) in the multi scene."""
TABLE3_METHODS: tuple[str, ...] = ("direct_critic", "direct_random", "direct_ceiling", "preafford")
SEED_TABLE3: dict[str, tuple[float, float, float, float]] = {
    # (train G, train U, test G, test U), %.
    "pre-grasping rate": (14.7, 84.1, 23.4, 77.5),
    "success rate": (83.7, 74.1, 80.0, 74.6),
}
"""The seed's Table III (theta_g = 0.8, the multi scene)."""
SEED_TABLE2: dict[str, dict[str, tuple[float, ...]]] = {
    # Setting: (edge, wall, slope, slot, multi, avg) for train, then test categories.
    "W/o pre-grasping": {"train": (2.3, 3.8, 4.3, 3.4, 4.0, 3.6), "test": (6.1, 2.3, 2.9, 5.7, 6.0, 4.6)},
    "Random-direction Push": {
        "train": (21.6, 10.3, 6.4, 16.8, 18.1, 14.6),
        "test": (24.9, 17.2, 12.1, 18.4, 23.0, 19.1),
    },
    "Center-point Push": {
        "train": (32.5, 23.7, 40.5, 39.2, 39.0, 35.0),
        "test": (25.1, 17.4, 28.0, 30.2, 21.5, 24.4),
    },
    "Ours w/o closed-loop": {
        "train": (67.2, 41.5, 58.3, 76.9, 63.6, 61.5),
        "test": (56.4, 37.3, 62.6, 75.8, 55.4, 57.5),
    },
    "Ours": {"train": (81.4, 43.4, 73.1, 83.5, 74.1, 71.1), "test": (83.7, 47.6, 80.5, 83.0, 74.6, 73.9)},
}
"""The seed's Table II (grasp success, %)."""
TOP_FOR_C2 = 8  # the necessity check's estimate: the mean score of the critic's top 8 proposals


@dataclass(frozen=True)
class Table2Config:
    """What one run measures (stored as ``config.json``).

    Attributes:
        model: The grasping module's checkpoint (its path and sha256 are recorded).
        rollouts: Scenes per (scene kind, category); rollout ``k`` uses seed ``first_seed + k``.
        scenes, categories, methods: What is run.
        proposals: Grasp proposals per decision.
        rim: The fraction of them drawn at the seen object's outline (``rim_proposals``: pinches
            across its thickness, from the cloud alone), the rest by the seed's sampler.
        first_seed: Seed of the first scene (default far from the training collections' seeds).
        necessity: The necessity check's calibration (its path and sha256); empty: the raw score.
        videos: The first ``videos`` seeds of every (scene kind, category, method) are filmed
            (``videos/<scene>/<category>/<method>/<seed>.mp4``); never ``direct_ceiling``, which
            tries every proposal.
    """

    model: str
    model_sha256: str
    push_model: str = ""
    push_model_sha256: str = ""
    rollouts: int = 10
    scenes: tuple[str, ...] = SCENES
    categories: tuple[str, ...] = TRAIN + TEST
    methods: tuple[str, ...] = METHODS
    proposals: int = 64
    rim: float = 0.5
    first_seed: int = 500_000
    necessity: str = ""
    necessity_sha256: str = ""
    videos: int = 0

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; known: {', '.join(METHODS)}")
        pushing = [m for m in self.methods if m in PUSH_METHODS]
        if pushing and not self.push_model:
            raise ValueError(
                f"{', '.join(pushing)} push: the run needs the pre-grasping module (--push-model)"
            )
        if self.rollouts < 1 or self.proposals < 1:
            raise ValueError("rollouts and proposals must be >= 1")
        if self.videos < 0:
            raise ValueError(f"videos must be >= 0, got {self.videos}")

    def as_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Table2Config:
        fields_: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**fields_)


@dataclass(frozen=True)
class Job:
    scene: str
    category: str
    method: str
    seed: int
    model: str
    proposals: int
    rim: float
    push_model: str = ""
    necessity: str = ""
    video: bool = False

    def path(self, run_dir: Path) -> Path:
        return run_dir / "rollouts" / self.scene / self.category / self.method / f"{self.seed:06d}.json"

    def video_path(self, run_dir: Path) -> Path:
        return run_dir / "videos" / self.scene / self.category / self.method / f"{self.seed:06d}.mp4"


def jobs_of(config: Table2Config) -> list[Job]:
    return [
        Job(
            s, c, m, config.first_seed + k, config.model, config.proposals, config.rim, config.push_model,
            config.necessity, video=k < config.videos and m != "direct_ceiling",
        )
        for k in range(config.rollouts)
        for s in config.scenes
        for c in config.categories
        for m in config.methods
    ]


_MODELS: dict[str, Any] = {}


def _model(path: str, kind: str) -> Any:
    """The ``grasp`` or ``push`` critic at ``path``, loaded once per worker process."""
    if path not in _MODELS:
        import torch

        from afford_perception.preafford.grasp_module import GraspCritic, load_module
        from afford_perception.preafford.push_module import PushCritic

        torch.set_num_threads(1)  # one rollout per core
        _MODELS[path] = load_module(path, kind, GraspCritic if kind == "grasp" else PushCritic)[0]
    return _MODELS[path]


def _necessity(path: str) -> Any:
    """The necessity calibration at ``path``, loaded once per worker process."""
    if path not in _MODELS:
        from afford_perception.preafford.necessity import load

        _MODELS[path] = load(path)
    return _MODELS[path]


def _push_record(push: np.ndarray, r: Any, **extra: Any) -> dict[str, Any]:
    return {
        "contact": [round(float(v), 4) for v in push[:3]],
        "direction": round(float(push[3]), 4),
        "distance": round(float(push[4]), 4),
        "moved": round(r.moved, 4),
        "turned_deg": round(r.turned_deg, 1),
        "fell": r.fell,
        "collided": r.collided,
        "blocked": r.blocked,
        **extra,
    }


def _choose_push(
    job: Job, cloud: np.ndarray, is_obj: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """The push a method makes (module docstring) and the critic's value of it."""
    from afford_perception.preafford.push_module import DISTANCES, push_grid, score_pushes

    critic = _model(job.push_model, "push")
    grid = push_grid(cloud, is_obj, PUSH_CONTACTS, rng)
    if job.method == "push_centre_point":
        # The contact at the seen object's centroid; the module picks the displacement.
        grid[:, :3] = cloud[is_obj].mean(axis=0) if is_obj.any() else cloud.mean(axis=0)
    values = score_pushes(critic, cloud, is_obj, grid)
    best = grid[int(np.argmax(values))].copy()
    if job.method == "push_random_direction":
        # The module's contact; the displacement drawn uniformly.
        best[3] = rng.uniform(-np.pi, np.pi)
        best[4] = DISTANCES[int(rng.integers(len(DISTANCES)))]
    return best, float(values.max())


def record_crash(record: dict[str, Any], err: Exception) -> None:
    """Record a crash: a failed rollout with its message (run again on resume)."""
    record.update(success=False, pushes=[], c2=None, error=f"{type(err).__name__}: {err}")


VIDEO_FPS = 25


def rollout(job: Job) -> dict[str, Any]:
    """One method on one seeded scene; a crash is a failed rollout with its message. A filmed
    job's video comes back with the record (``VIDEO_KEY``: the MP4's bytes), so the process
    that stores the record writes it, wherever the rollout ran (a Ray node)."""
    from afford_perception.preafford.grasp_module import cloud_proposals, score_grasps
    from afford_sim.preafford.grasps import Grasp, try_grasps
    from afford_sim.preafford.objects import split_of
    from afford_sim.preafford.scenes import sample_scene
    from afford_sim.preafford.scripted import push_towards
    from afford_sim.preafford.world import PreGraspWorld

    t0 = time.perf_counter()
    record: dict[str, Any] = {**asdict(job), "split": split_of(job.category)}
    frames: list[np.ndarray] | None = None
    try:
        world = PreGraspWorld(sample_scene(job.scene, job.category, job.seed))
        frames = world.film(VIDEO_FPS) if job.video else None
        rng = np.random.default_rng([job.seed, 3])
        pushes: list[dict[str, Any]] = []
        check = _necessity(job.necessity) if job.necessity else None

        def estimate(raw: float) -> float:
            """c_2 as the check reads it: calibrated when the run has a calibration."""
            return check.probability(raw) if check is not None else raw

        def look() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
            cloud, is_obj = world.observe(rng=rng)
            tcp, rot = cloud_proposals(cloud, is_obj, job.proposals, rng, rim=job.rim)
            scores = score_grasps(_model(job.model, "grasp"), cloud, is_obj, tcp, rot)
            return cloud, is_obj, tcp, rot, scores, float(np.sort(scores)[-TOP_FOR_C2:].mean())

        if job.method == "scripted_push_critic":
            # The feature the object is nearest to (in the multi scene, one of four).
            centre = world.object_pose()[:2, 3]
            nearest = min(
                world.scene.features, key=lambda f: f.offset - float(centre @ np.asarray(f.direction))
            )
            r = push_towards(world, nearest)
            pushes.append(
                {
                    "feature": nearest.kind,
                    "moved": r.moved,
                    "fell": r.fell,
                    "collided": r.collided,
                    "blocked": r.blocked,
                }
            )
        cloud, is_obj, tcp, rot, scores, raw = look()
        c2 = c2_start = estimate(raw)
        raw_start = raw
        if job.method in PUSH_METHODS:
            budget = MAX_PUSHES if job.method == "preafford" else 1
            # The necessity check: push only while the estimated grasp success is under theta_g.
            theta = check.theta_g if check is not None else THETA_G
            while len(pushes) < budget and c2 < theta and not (pushes and pushes[-1]["fell"]):
                push, value = _choose_push(job, cloud, is_obj, rng)
                if job.method == "preafford" and pushes and value <= 0.0:
                    break  # the module expects no push to help any more
                r = world.push_vector(push)
                pushes.append(_push_record(push, r, value=round(value, 4), c2_before=round(c2, 4)))
                if r.fell:
                    break
                cloud, is_obj, tcp, rot, scores, raw = look()
                c2 = estimate(raw)
        if job.method == "direct_ceiling":
            tried = [
                r.success for r in try_grasps(world, [Grasp(t, q) for t, q in zip(tcp, rot, strict=True)])
            ]
            success, chosen = any(tried), int(np.argmax(tried))
        else:
            chosen = int(rng.integers(len(tcp))) if job.method == "direct_random" else int(np.argmax(scores))
            fell = bool(pushes and pushes[-1]["fell"]) or world.fallen()
            result = None if fell else world.grasp(tcp[chosen], rot[chosen])
            success = bool(result and result.success)
        record.update(
            success=bool(success),
            pushes=pushes,
            c2=round(c2_start, 4),
            c2_final=round(c2, 4),
            c2_raw=round(raw_start, 4),
            c2_raw_final=round(raw, 4),
            pushed=bool(pushes),
            chosen_score=round(float(scores[chosen]), 4),
            error=None,
        )
    except ValueError as err:
        if "too few to propose on" not in str(err):
            record_crash(record, err)
        else:  # the object barely seen: the method abstains, a failure with its reason
            record.update(success=False, pushes=[], c2=None, abstained=str(err), error=None)
    except Exception as err:  # noqa: BLE001 - a crash is a failed rollout, kept with its reason
        record_crash(record, err)
        frames = None
    if frames is not None:
        record["video_path"] = str(job.video_path(Path(".")))
        record["video_frames"] = len(frames)
        record[VIDEO_KEY] = _mp4(frames)
    record["wall_s"] = round(time.perf_counter() - t0, 2)
    return record


VIDEO_KEY = "_video_mp4"


def _mp4(frames: list[np.ndarray]) -> bytes:
    """The frames as an H.264 MP4 at :data:`VIDEO_FPS`."""
    import tempfile

    import imageio.v2 as imageio

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.mp4"
        imageio.mimwrite(str(path), cast(list[Any], frames), fps=VIDEO_FPS, macro_block_size=1)
        return path.read_bytes()


def describe(record: dict[str, Any]) -> str:
    """A rollout's record as lines a person reads: the scene, the check, each push, the grasp."""
    lines = [f"{record['method']} on a {record['category']} ({record['split']}), {record['scene']} scene, "
             f"seed {record['seed']}"]
    if record.get("abstained"):
        return "\n".join([*lines, f"abstained: {record['abstained']}"])
    if record.get("c2") is not None:
        raw = f" (critic's raw score {record['c2_raw']:.2f})" if record.get("c2_raw") != record["c2"] else ""
        check = f"; the check pushes under theta_g {THETA_G}" if record["method"] in PUSH_METHODS else ""
        lines.append(f"c_2 at the start {record['c2']:.2f}{raw}{check}")
    for k, push in enumerate(record.get("pushes", []), 1):
        moved = f"moved {100 * push['moved']:.1f} cm"
        if "feature" in push:
            lines.append(f"push {k}: scripted towards the {push['feature']}: {moved}")
            continue
        x, y, z = push["contact"]
        lines.append(
            f"push {k}: contact ({x:.3f}, {y:.3f}, {z:.3f}) m, direction "
            f"{np.degrees(push['direction']):.0f} deg, {100 * push['distance']:.0f} cm (critic's value "
            f"{push.get('value', float('nan')):.3f}, c_2 before {push.get('c2_before', float('nan')):.2f}): "
            f"{moved}, turned {push['turned_deg']:.0f} deg" + (", FELL" if push["fell"] else "")
            + (", hit the scene" if push["collided"] else "") + (", blocked" if push["blocked"] else "")
        )
    if record.get("c2_final") is not None and record.get("pushes"):
        lines.append(f"c_2 after the pushes {record['c2_final']:.2f}")
    if record.get("error"):
        lines.append(f"crashed: {record['error']}")
    elif record["method"] == "direct_ceiling":
        some = "a" if record["success"] else "no"
        lines.append(f"ceiling: {some} proposal of {record['proposals']} lifted it")
    else:
        lines.append(f"grasp: {'LIFTED' if record['success'] else 'failed'} (the chosen proposal's score "
                     f"{record.get('chosen_score', float('nan')):.2f})")
    if record.get("video_path"):
        lines.append(f"video: {record['video_path']}")
    return "\n".join(lines)


def _valid(run_dir: Path, job: Job) -> bool:
    """The job's record is there, of this job, not a crash, and its video too when it is filmed."""
    try:
        rec = json.loads(job.path(run_dir).read_text())
    except (OSError, ValueError):
        return False
    ours = all(rec.get(k) == v for k, v in asdict(job).items())
    filmed = not job.video or job.video_path(run_dir).exists()
    return ours and "success" in rec and not rec.get("error") and filmed


@dataclass
class Table2Summary:
    run_dir: Path
    ran: int
    kept: int
    wall_s: float
    report: Path = field(default_factory=Path)


def run(
    run_dir: Path | str,
    config: Table2Config,
    *,
    jobs: int = 1,
    executor: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    command: str = "",
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> Table2Summary:
    """Run (or resume) every rollout of ``config`` into ``run_dir``, then write the report."""
    run_dir = Path(run_dir)
    t0 = time.perf_counter()
    check_necessity(config)  # before the directory holds anything
    path = run_dir / "config.json"
    if path.exists():
        stored = Table2Config.from_dict(json.loads(path.read_text()))
        if stored != config:
            raise ValueError(f"{run_dir} holds another run ({stored}); choose another --out")
    elif run_dir.exists() and any(run_dir.iterdir()):
        raise ValueError(f"{run_dir} is not empty and holds no preafford config; choose another --out")
    else:
        write_json(path, config.as_dict())
    remove_temporaries(run_dir)  # what a killed session left half-written
    prov = run_dir / "provenance.json"
    sessions = json.loads(prov.read_text()) if prov.exists() else []
    write_json(prov, [*sessions, provenance(command, run_dir)])
    every = jobs_of(config)
    todo = [j for j in every if not _valid(run_dir, j)]
    done = len(every) - len(todo)

    def store(job: Job, record: dict[str, Any]) -> None:
        nonlocal done
        video = record.pop(VIDEO_KEY, None)
        if video is not None:  # the video first: a record names only a video that is there
            write_atomic(job.video_path(run_dir), video)
        write_atomic(job.path(run_dir), (json.dumps(record, indent=1) + "\n").encode())
        done += 1
        if progress is not None:
            progress(done, len(every), record)

    if executor == "local":
        run_jobs(rollout, todo, jobs, store)
    else:
        run_jobs_ray(rollout, todo, max(1, len(todo)), store, cpus=jobs, address=ray_address)
    report = write_report(run_dir)
    return Table2Summary(run_dir, len(todo), len(every) - len(todo), time.perf_counter() - t0, report)


def check_necessity(config: Table2Config) -> None:
    """Refuse, before anything runs, a calibration that is unreadable, changed since the run was
    configured, or fitted for another grasping critic."""
    if config.necessity:
        check_calibration(config.necessity, config.model_sha256, config.necessity_sha256)


def check_calibration(necessity: str, model_sha256: str, necessity_sha256: str = "") -> None:
    """The calibration at ``necessity`` is readable, fitted for the critic of ``model_sha256``,
    and (when ``necessity_sha256`` is given) the file it was when a run was configured."""
    from afford_eval.runs import sha256_file
    from afford_perception.preafford.necessity import load

    load(necessity).check_critic(model_sha256)
    if necessity_sha256 and sha256_file(Path(necessity)) != necessity_sha256:
        raise ValueError(f"{necessity} changed since the run was configured (sha256 differs)")


def calibration_states(run_dir: Path | str) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The validation states of a run for fitting the necessity check: every ``direct_ceiling``
    record the object was seen in, as (raw c_2, graspable: a proposal lifted it), and where they
    come from. A run on a test category is refused: the check would be fitted on what it is
    measured on."""
    run_dir = Path(run_dir)
    config = Table2Config.from_dict(json.loads((run_dir / "config.json").read_text()))
    test = sorted(set(config.categories) & set(TEST + EASY_TEST))
    if test:
        raise ValueError(
            f"{run_dir} holds test categories ({', '.join(test)}): fit the necessity check on the "
            "training categories only (the test ones measure it)"
        )
    recs = [r for r in load_records(run_dir) if r["method"] == "direct_ceiling" and not r.get("error")]
    seen = [r for r in recs if r.get("c2") is not None]
    if not seen:
        raise ValueError(f"{run_dir} has no direct_ceiling rollout to fit on (run it with that method)")
    raw = np.array([float(r.get("c2_raw", r["c2"])) for r in seen])
    graspable = np.array([bool(r["success"]) for r in seen])
    info = {
        "run": str(run_dir),
        "model_sha256": config.model_sha256,
        "scenes": list(config.scenes),
        "categories": list(config.categories),
        "seeds": [config.first_seed, config.first_seed + config.rollouts - 1],
        "abstained": len(recs) - len(seen),
    }
    return raw, graspable, info


def load_records(run_dir: Path | str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(Path(run_dir).glob("rollouts/*/*/*/*.json"))]


def _cell(recs: Sequence[dict[str, Any]]) -> str:
    n = len(recs)
    if not n:
        return "-"
    k = sum(bool(r["success"]) for r in recs)
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.0f} [{100 * lo:.0f}, {100 * hi:.0f}]"


def build_report(
    config: Table2Config, records: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]]
) -> str:
    """The Markdown report, from the config and records alone."""
    table3 = table3_lines(config, records)
    lines = [
        "# PreAfford Table II (grasp success, %, Wilson 95% interval), the rows built so far"
        + (", and Table III" if table3 else ""),
        "",
        f"{config.rollouts} seeded scenes per (scene kind, category), seeds {config.first_seed}-"
        f"{config.first_seed + config.rollouts - 1}; grasping module `{config.model}` "
        f"(sha256 {config.model_sha256[:12]}); {config.proposals} proposals per decision "
        f"({100 * config.rim:.0f}% at the seen outline). "
        "Methods: see `afford_eval/preafford_table2.py`; `direct_random` is chance, `direct_ceiling` "
        "the ceiling of a direct grasp, `scripted_push_critic` a privileged reference, not a method.",
        "",
        "The necessity check's c_2: "
        + (
            f"the critic's top-{TOP_FOR_C2} mean score calibrated by `{config.necessity}` (sha256 "
            f"{config.necessity_sha256[:12]}) to the chance the object can be grasped where it lies."
            if config.necessity
            else f"the critic's top-{TOP_FOR_C2} mean score, uncalibrated."
        ),
        "",
    ]
    for split, every in (("train", TRAIN), ("test", TEST)):
        cats = tuple(c for c in every if c in config.categories)
        if not cats:
            continue
        lines += [
            f"## {split.capitalize()} categories ({', '.join(cats)})",
            "",
            "| method | " + " | ".join(config.scenes) + " | avg |",
            "|---|" + "---|" * (len(config.scenes) + 1),
        ]
        for m in config.methods:
            row = [r for r in records if r["method"] == m and r["category"] in cats]
            cells = [_cell([r for r in row if r["scene"] == s]) for s in config.scenes]
            lines.append(f"| {m} | " + " | ".join(cells) + f" | {_cell(row)} |")
        for name, numbers in SEED_TABLE2.items():
            vals = numbers[split]
            by_scene = dict(zip(SCENES, vals[:5], strict=True))
            lines.append(
                f"| seed: {name} | "
                + " | ".join(str(by_scene.get(s, "")) for s in config.scenes)
                + f" | {vals[5]} |"
            )
        lines.append("")
    lines += table3
    errors = [r for r in records if r.get("error")]
    filmed = [r for r in records if r.get("video_path")]
    falls = [r for r in records if any(p.get("fell") for p in r.get("pushes", []))]
    abstained = [r for r in records if r.get("abstained")]
    pushed = [r for r in records if r["method"] in PUSH_METHODS]
    lines += [
        f"Rollouts: {len(records)}; crashed: {len(errors)}; abstained (the object barely seen): "
        f"{len(abstained)}; the object fell during a push: {len(falls)}; the pushing methods pushed "
        f"in {sum(bool(r.get('pushed')) for r in pushed)} of {len(pushed)} rollouts (the necessity "
        f"check let the rest grasp directly)."
        + (f" Videos: {len(filmed)} rollouts filmed (`videos/<scene>/<category>/<method>/<seed>.mp4`)."
           if filmed else ""),
        "",
        "Sessions: "
        + "; ".join(
            f"{(s.get('git_commit') or '?')[:7]}{' (dirty)' if s.get('git_dirty') else ''}" for s in sessions
        ),
        "",
    ]
    return "\n".join(lines)


def _rate(flags: Sequence[bool]) -> str:
    n = len(flags)
    if not n:
        return "-"
    k = sum(flags)
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.0f} [{100 * lo:.0f}, {100 * hi:.0f}] ({k}/{n})"


def table3_lines(config: Table2Config, records: Sequence[dict[str, Any]]) -> list[str]:
    """Table III's section of the report (module docstring), or nothing when the run has no easy
    category or no ``preafford`` rollout in the multi scene."""
    if not (set(config.categories) & set(EASY_TRAIN + EASY_TEST)) or "preafford" not in config.methods \
            or TABLE3_SCENE not in config.scenes:
        return []
    groups = (EASY_TRAIN, TRAIN, EASY_TEST, TEST)  # train G, train U, test G, test U
    multi = [r for r in records if r["scene"] == TABLE3_SCENE]

    def of(method: str, cats: tuple[str, ...]) -> list[dict[str, Any]]:
        return [r for r in multi if r["method"] == method and r["category"] in cats]

    ceiling = {
        (r["category"], r["seed"]): bool(r["success"]) for r in of("direct_ceiling", tuple(config.categories))
    }
    rows: dict[str, list[str]] = {k: [] for k in (
        "pre-grasping rate (pushed at least once)",
        "a push needed (no direct proposal lifts it: 100 - ceiling)",
        "the check's decision matched the need (chance 50)", "success rate, preafford",
        "success, direct grasp (critic's choice)", "success, direct grasp (chance)",
        "success, direct grasp (ceiling)", "abstained (the object barely seen)")}
    for cats in groups:
        ours = of("preafford", cats)
        decided = [r for r in ours if "pushed" in r]  # an abstention never reached the check
        needed = [r for r in decided if (r["category"], r["seed"]) in ceiling]
        cells = [
            _rate([bool(r["pushed"]) for r in decided]),
            _rate([not ceiling[(r["category"], r["seed"])] for r in needed]),
            _rate([bool(r["pushed"]) != ceiling[(r["category"], r["seed"])] for r in needed]),
            _rate([bool(r["success"]) for r in ours]),
            *(_rate([bool(r["success"]) for r in of(m, cats)])
              for m in ("direct_critic", "direct_random", "direct_ceiling")),
            f"{sum(bool(r.get('abstained')) for r in ours)} of {len(ours)}",
        ]
        for key, cell in zip(rows, cells, strict=True):
            rows[key].append(cell)
    lines = [
        f"## Table III: the necessity check (theta_g = {THETA_G}, c_2 "
        f"{'calibrated' if config.necessity else 'uncalibrated'}) on easy (G) and hard (U) objects, "
        f"the {TABLE3_SCENE} scene",
        "",
        f"G: easy-to-grasp categories, ours (the seed names none): train {', '.join(EASY_TRAIN)}; test "
        f"{', '.join(EASY_TEST)}. U: the seed's hard ones. %, [Wilson 95%] (count).",
        "",
        "| | train G | train U | test G | test U |",
        "|---|---|---|---|---|",
        *(f"| {k} | " + " | ".join(v) + " |" for k, v in rows.items()),
        *(f"| seed: {k} | " + " | ".join(str(x) for x in v) + " |" for k, v in SEED_TABLE3.items()),
        "",
    ]
    return lines


def write_report(run_dir: Path | str) -> Path:
    run_dir = Path(run_dir)
    config = Table2Config.from_dict(json.loads((run_dir / "config.json").read_text()))
    sessions = json.loads((run_dir / "provenance.json").read_text())
    out = run_dir / "report.md"
    write_atomic(out, build_report(config, load_records(run_dir), sessions).encode())
    return out
