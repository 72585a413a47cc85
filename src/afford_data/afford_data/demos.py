"""Demonstrations: the scripted pipeline's successful rollouts of a task, as a LeRobot dataset.

``generate(DemoConfig(task_id="place-banana-plate-v1", episodes=50), out)`` runs the task's
scenes seed by seed through the spine (the same perception, grounding, grasp choice, planning
and skill as ``afford run``), records every rollout while it executes, and keeps the episodes
whose every stage check passed. Each recorded frame holds:

- ``observation.images.front``: a third-person RGB view (the task's ``video`` camera pose);
- ``observation.images.wrist``: an RGB view from a camera on the hand, looking along the
  approach;
- ``observation.state``: the arm's measured joint positions and the gripper opening (m);
- ``action``: the joint position setpoints the controller tracks at that instant and the
  gripper command (1 closed, 0 open);
- ``action.ee``: the same setpoint as a TCP pose (x, y, z, quaternion w x y z) and the gripper
  command: the end-effector action space AffordSim trains with.

Episodes are staged one file each, written atomically, before the dataset is built: a killed
run loses at most the episode in flight, and the same command resumes from the staged ones.
The dataset is then written with LeRobot's own ``LeRobotDataset.create`` / ``add_frame`` /
``save_episode`` / ``finalize`` into a temporary directory and moved into place, so ``out``
holds a whole dataset or nothing. Per-episode metadata (seed, the randomization drawn, the
instruction, the grasp source, every stage's check) is in ``meta/afford_episodes.jsonl``, and a
dataset card (``README.md``) says how it was made.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from afford_core.files import remove_temporaries, write_atomic
from afford_core.parallel import run_jobs, run_jobs_ray
from afford_data.dataset import ACTION_KEY, EPISODES_FILE, FRONT_KEY, STATE_KEY, TASK_KEY, WRIST_KEY
from afford_pipeline.execution import WorldExecutor

# The cameras live in afford_sim: the graph's sim world renders them too.
from afford_sim.policy_cameras import FRONT, SCENE_CAMERAS, WRIST, policy_cameras


@dataclass(frozen=True)
class DemoConfig:
    """What to record.

    Attributes:
        task_id: A registered task (``afford tasks``).
        episodes: Successful episodes wanted.
        robot: The arm (``afford robots``).
        first_seed: Scene seed of the first attempt; attempt ``k`` uses ``first_seed + k``.
        max_attempts: Attempts at most (failures are counted, not kept); default 3 per episode.
        fps: Frames per simulated second.
        image_size: (width, height) of both cameras (AffordSim records 256 x 256).
        grounding: Grounding source of the scripted pipeline (``oracle``: the simulator's part
            labels; ``learned``, ``geometric``).
        use_videos: Encode each camera as video (h264 through PyAV); else PNG frames.
        randomize: Domain randomization of every episode (``afford_sim.randomization``:
            ``visual`` for texture, lighting, background, camera and pixel noise, ``table2``
            for AffordSim's policy protocol, ...); each episode's draw is in its metadata.
    """

    task_id: str
    episodes: int
    robot: str = "fr3"
    first_seed: int = 0
    max_attempts: int | None = None
    fps: int = 10
    image_size: tuple[int, int] = (128, 128)
    grounding: str = "oracle"
    use_videos: bool = True
    randomize: str = "none"

    def __post_init__(self) -> None:
        from afford_core.robots import get_robot
        from afford_perception.grounding import available_sources
        from afford_sim.tasks import get_task

        get_task(self.task_id)  # KeyError naming the known tasks
        get_robot(self.robot)
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {self.episodes}")
        if self.max_attempts is not None and self.max_attempts < self.episodes:
            raise ValueError(f"max_attempts ({self.max_attempts}) is below episodes ({self.episodes})")
        if not 1 <= self.fps <= 100:
            raise ValueError(f"fps must be in 1..100, got {self.fps}")
        if min(self.image_size) < 16 or max(self.image_size) > 1024:
            raise ValueError(f"image_size must be within 16..1024 pixels, got {self.image_size}")
        if self.grounding not in available_sources():
            raise ValueError(f"unknown grounding {self.grounding!r}; known: {available_sources()}")
        from afford_sim.randomization import domain_randomization

        domain_randomization(self.randomize)  # KeyError listing the presets

    @property
    def attempts(self) -> int:
        return self.max_attempts if self.max_attempts is not None else 3 * self.episodes

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "image_size": list(self.image_size), "max_attempts": self.attempts}


def _quat_wxyz(rot: np.ndarray) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(rot).as_quat()
    return np.array([w, x, y, z])


class RecordingExecutor(WorldExecutor):
    """The batch world's executor, sampling both cameras, the state and the action every
    ``1 / fps`` simulated seconds while the skill runs."""

    def __init__(self, world: Any, fps: int) -> None:
        super().__init__(world, frames=[], fps=fps)
        self.record: dict[str, list[np.ndarray]] = {k: [] for k in (FRONT, WRIST, "state", "action", "ee")}
        sim = world.robot.sim
        self._grip_act = world.model.actuator(sim.gripper_actuator).id
        self._closed = sim.gripper_closed_ctrl
        self._open = sim.gripper_open_ctrl

    def frame(self) -> None:
        w = self.world
        if w.time < self._next_frame:
            return
        self._next_frame = w.time + self.period
        for key, cam in SCENE_CAMERAS.items():
            self.record[key].append(w.render(cam, depth=False, segmentation=False).rgb)
        ctrl = float(w.data.ctrl[self._grip_act])
        closed = float(abs(ctrl - self._closed) < abs(ctrl - self._open))
        self.record["state"].append(np.append(w.arm_q(), w.gripper_width()).astype(np.float32))
        target = w.arm_target()
        self.record["action"].append(np.append(target, closed).astype(np.float32))
        pose = w.tcp_pose_at(target)
        self.record["ee"].append(np.concatenate([pose[:3, 3], _quat_wxyz(pose[:3, :3]), [closed]])
                                 .astype(np.float32))


def instruction_for(task: Any, seed: int) -> str:
    """One of the task's phrasings, drawn by the seed (the dataset's ``task`` text; a policy
    evaluated on that seed is asked the same way)."""
    return str(task.instructions[zlib.crc32(f"{task.task_id}/{seed}".encode()) % len(task.instructions)])


def record_episode(config: DemoConfig, seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray] | None]:
    """Run one scene through the spine while recording it; returns the episode's metadata and
    its arrays (None when it did not succeed: it is counted, never kept)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    from afford_pipeline.spine import SpineConfig, run_task
    from afford_sim.tasks import get_task

    task = get_task(config.task_id)
    sentence = instruction_for(task, seed)
    made: list[RecordingExecutor] = []

    def executor(world: Any) -> RecordingExecutor:
        made.append(RecordingExecutor(world, config.fps))
        return made[-1]

    spine = SpineConfig(seed=seed, robot=config.robot, grounding=config.grounding,
                        allow_unvalidated_robot=True, randomize=config.randomize)
    meta: dict[str, Any] = {"seed": seed, "instruction": sentence, "task_id": config.task_id,
                            "robot": config.robot,
                            "grasp_source": f"afford pipeline, {config.grounding} grounding"}
    try:
        result = run_task(config.task_id, spine, sentence=sentence,
                          cameras=policy_cameras(*config.image_size), executor=executor)
    except Exception as err:  # noqa: BLE001 - a crash is a failed attempt, counted with its reason
        return {**meta, "success": False, "error": f"{type(err).__name__}: {err}"}, None
    meta.update(success=bool(result.success), stages=result.stages, details=result.details,
                randomization=result.randomization, abstained=result.abstained or None,
                selected=None if result.selected is None else result.selected.get("index"))
    if not result.success or not made or len(made[-1].record["state"]) < 2:
        return meta, None
    rec = made[-1].record
    arrays = {k: np.stack(v) for k, v in rec.items()}
    meta["frames"] = int(len(arrays["state"]))
    return meta, arrays


# ---------------------------------------------------------------------------------------------
# Staging and the dataset.


def _declared(randomize: str) -> dict[str, Any]:
    from afford_sim.randomization import domain_randomization

    return domain_randomization(randomize).describe()


def _staging(out: Path) -> Path:
    return out.with_name(out.name + ".staging")


def _stage(staging: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray] | None) -> None:
    seed = int(meta["seed"])
    if arrays is not None:
        buf = io.BytesIO()
        cast(Any, np.savez)(buf, **arrays)  # numpy's stub reads ** as allow_pickle
        write_atomic(staging / f"episode_{seed:06d}.npz", buf.getvalue())
    write_atomic(staging / f"attempt_{seed:06d}.json", json.dumps(meta, sort_keys=True, default=str).encode())


def _staged(staging: Path) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for f in sorted(staging.glob("attempt_*.json")):
        try:
            meta = json.loads(f.read_text())
        except ValueError:
            continue  # torn by a kill before the rename cannot happen; a stray edit can
        if meta.get("success") and not (staging / f"episode_{int(meta['seed']):06d}.npz").exists():
            continue  # metadata without its frames: run it again
        out[int(meta["seed"])] = meta
    return out


def features(config: DemoConfig) -> dict[str, dict[str, Any]]:
    """The dataset's features in LeRobot's schema."""
    from afford_core.robots import get_robot

    joints = list(get_robot(config.robot).arm_joints)
    w, h = config.image_size
    kind = "video" if config.use_videos else "image"
    image = {"dtype": kind, "shape": (h, w, 3), "names": ["height", "width", "channels"]}
    return {
        FRONT_KEY: dict(image),
        WRIST_KEY: dict(image),
        STATE_KEY: {"dtype": "float32", "shape": (len(joints) + 1,),
                              "names": [*joints, "gripper_width"]},
        ACTION_KEY: {"dtype": "float32", "shape": (len(joints) + 1,), "names": [*joints, "gripper_closed"]},
        "action.ee": {"dtype": "float32", "shape": (8,),
                      "names": ["x", "y", "z", "qw", "qx", "qy", "qz", "gripper_closed"]},
    }


@dataclass
class GenerationReport:
    """What a generation did."""

    out: Path
    episodes: int = 0
    frames: int = 0
    attempts: int = 0
    failures: int = 0
    kept_from_before: int = 0
    failure_stages: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0


Attempt = tuple[dict[str, Any], dict[str, np.ndarray] | None]
"""One attempt's metadata and its frames (None when it did not succeed)."""


def _attempt(job: tuple[DemoConfig, int]) -> Attempt:
    # The module's record_episode, looked up at call time (a test may replace it in-process).
    return record_episode(*job)


def generate(config: DemoConfig, out: Path | str, *, progress: Callable[[str], None] | None = None,
             repo_id: str | None = None, jobs: int = 1, executor: str = "local",
             ray_address: str | None = None) -> GenerationReport:
    """Record ``config.episodes`` successful episodes into a LeRobot dataset at ``out``,
    ``jobs`` attempts at a time: in spawned processes (``executor="local"``) or as Ray tasks
    (``"ray"``: a local instance of ``jobs`` CPUs, or the cluster at ``ray_address``, whose
    nodes write to ``out``'s staging directory through this process). Attempts are taken in seed
    order and the first ``episodes`` successful seeds are kept, so the dataset depends neither on
    ``jobs`` nor on the executor.

    Raises:
        FileExistsError: ``out`` exists (a dataset is never overwritten).
        RuntimeError: fewer successes than wanted within ``max_attempts`` (the staged episodes
            stay; the message says how to continue).
    """
    t0 = time.perf_counter()
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    out = Path(out)
    if out.exists():
        raise FileExistsError(f"{out} exists; a dataset is never overwritten: choose another --out")
    staging = _staging(out)
    staging.mkdir(parents=True, exist_ok=True)
    cfg_path = staging / "config.json"
    if cfg_path.exists():
        stored = json.loads(cfg_path.read_text())
        if stored != json.loads(json.dumps(config.as_dict())):
            raise ValueError(f"{staging} holds episodes of another configuration ({stored}); "
                             "use the same options to resume, or another --out")
    else:
        write_atomic(cfg_path, json.dumps(config.as_dict()).encode())
    remove_temporaries(staging)  # an episode in flight when the last run was killed
    done = _staged(staging)
    report = GenerationReport(out=out, kept_from_before=len(done))
    say = progress or (lambda _line: None)

    def successes() -> int:
        return sum(1 for m in done.values() if m.get("success"))

    def store(job: tuple[DemoConfig, int], result: Attempt) -> None:
        meta, arrays = result
        _stage(staging, meta, arrays)
        done[job[1]] = meta
        say(f"[{successes()}/{config.episodes}] seed {job[1]}: "
            + ("kept" if arrays is not None else f"failed ({_failure(meta)})"))

    seeds = (config.first_seed + k for k in range(config.attempts))
    todo = ((config, s) for s in seeds if s not in done)
    def more(in_flight: int) -> bool:
        return successes() + in_flight < config.episodes

    if executor == "ray":
        run_jobs_ray(_attempt, todo, jobs, store, more, cpus=jobs, address=ray_address)
    else:
        run_jobs(_attempt, todo, jobs, store, more)
    kept = sorted(s for s, m in done.items() if m.get("success"))[: config.episodes]
    report.attempts = len(done)
    report.failures = sum(1 for m in done.values() if not m.get("success"))
    for m in done.values():
        if not m.get("success"):
            report.failure_stages[_failure(m)] = report.failure_stages.get(_failure(m), 0) + 1
    if len(kept) < config.episodes:
        raise RuntimeError(
            f"{len(kept)} of {config.episodes} episodes succeeded in {len(done)} attempts (failures: "
            f"{report.failure_stages}); the staged episodes in {staging} are kept: raise --max-attempts "
            "and run the same command again"
        )
    _build(config, out, staging, [done[s] for s in kept], repo_id or f"afford/{config.task_id}", report)
    shutil.rmtree(staging)
    report.wall_s = time.perf_counter() - t0
    return report


def _failure(meta: dict[str, Any]) -> str:
    if meta.get("error"):
        return "error"
    if meta.get("abstained"):
        return "abstained"
    return next((k for k, v in (meta.get("stages") or {}).items() if not v), "unknown")


def _build(config: DemoConfig, out: Path, staging: Path, kept: list[dict[str, Any]], repo_id: str,
           report: GenerationReport) -> None:
    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    tmp = out.with_name(out.name + ".building")
    if tmp.exists():
        shutil.rmtree(tmp)
    # h264: several times faster to encode on these CPUs than LeRobot's default AV1.
    ds = LeRobotDataset.create(repo_id=repo_id, fps=config.fps, features=features(config), root=tmp,
                               robot_type=config.robot, use_videos=config.use_videos,
                               rgb_encoder=RGBEncoderConfig(vcodec="h264"))
    for meta in kept:
        with np.load(staging / f"episode_{int(meta['seed']):06d}.npz") as z:
            arrays = {k: z[k] for k in z.files}
        for t in range(len(arrays["state"])):
            ds.add_frame({
                FRONT_KEY: arrays[FRONT][t],
                WRIST_KEY: arrays[WRIST][t],
                STATE_KEY: arrays["state"][t],
                ACTION_KEY: arrays["action"][t],
                "action.ee": arrays["ee"][t],
                TASK_KEY: meta["instruction"],
            })
        ds.save_episode()
        report.episodes += 1
        report.frames += len(arrays["state"])
    ds.finalize()
    with open(tmp / "meta" / EPISODES_FILE, "w") as fh:
        for i, meta in enumerate(kept):
            fh.write(json.dumps({"episode_index": i, **meta}, sort_keys=True, default=str) + "\n")
    (tmp / "README.md").write_text(_card(config, kept, report, repo_id))
    os.replace(tmp, out)


def _card(config: DemoConfig, kept: list[dict[str, Any]], report: GenerationReport, repo_id: str) -> str:
    from afford_sim.tasks import get_task

    task = get_task(config.task_id)
    seeds = [int(m["seed"]) for m in kept]
    fails = ", ".join(f"{k} {v}" for k, v in sorted(report.failure_stages.items())) or "none"
    w, h = config.image_size
    return f"""# {repo_id}

Demonstrations of `{config.task_id}` ({task.instruction}) on the simulated {config.robot},
made by the afford stack's scripted pipeline (perception, {config.grounding} grounding,
affordance-guided grasp choice, motion planning, the `{task.skill}` skill) in its MuJoCo batch
world, and recorded while they executed.

- Episodes: {len(kept)} kept, every stage check passed (scene seeds {seeds[0]}..{seeds[-1]});
  {report.failures} attempts failed and were not kept (by stage: {fails}).
- Randomization (each episode's draw is in `meta/afford_episodes.jsonl`): {json.dumps(task.randomization())}
- Domain randomization `{config.randomize}`: {json.dumps(_declared(config.randomize))}
- Instructions: drawn per episode from the task's phrasings: {"; ".join(task.instructions)}.
- Frames: {config.fps} per simulated second; cameras {w}x{h}: `observation.images.front`
  (third person) and `observation.images.wrist` (on the hand, along the approach).
- `observation.state`: arm joint positions (rad) and gripper opening (m). `action`: the joint
  position setpoints the controller tracks and the gripper command (1 closed). `action.ee`:
  that setpoint as the TCP pose (m; quaternion w x y z) and the gripper command.
- Read it with LeRobot: `LeRobotDataset("{repo_id}", root=..., video_backend="pyav")`.

Made with: `afford generate --task {config.task_id} --episodes {config.episodes} --robot {config.robot}
--fps {config.fps} --image-size {w} {h} --grounding {config.grounding} --first-seed {config.first_seed}`
"""

