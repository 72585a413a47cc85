"""Closed-loop rollouts of a visuomotor policy in the batch world, on the scenes of a dataset.

A :class:`Policy` sees what a frame of an ``afford generate`` dataset holds (both cameras, the
state, the instruction) and answers with the dataset's ``action``: seven joint position
setpoints and a gripper command. :func:`run_episode` builds the scene of a task and seed exactly
as the spine does when it records a demonstration (``afford_pipeline.spine.task_world``, the
cameras of ``afford_sim.policy_cameras``), then, every control period (``1 / fps``
simulated seconds):

1. renders the observation and asks the policy for an action;
2. checks it: 8 finite values, or the episode ends there as a failure and the arm never moves
   on it; the joint targets are clipped to the robot's joint limits less the safety margin and
   rate-limited to its velocity limits (the numbers ``afford_planner.safety`` checks against);
3. commands the gripper (closed when the command is at least 0.5); a change of command blocks
   until the fingers stop, as the scripted skill's gripper (and the FR3's) does, with the arm
   holding its setpoint;
4. moves the joint setpoint linearly from the last target to the new one over the period with
   ``world.set_arm_target``, stepping physics;
5. judges the task's stages (:class:`StageJudge`).

:class:`ReplayPolicy` replays a recorded episode's actions on its own seed: the control that
validates the harness (a demonstration replayed through it must succeed).
:class:`LeRobotPolicy` runs a policy ``lerobot-train`` wrote (ACT, Diffusion Policy, Pi 0.5:
:mod:`afford_policy.pi05`) on the CPU. :func:`evaluate` runs episodes seed by seed into a run
directory, one JSON record per episode written atomically (a killed run resumes), and writes
``report.md``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import numpy as np

from afford_core.files import remove_temporaries, write_atomic
from afford_data.dataset import (  # noqa: F401 (re-exported: the policy side's names for them)
    ACTION_KEY,
    FRONT_KEY,
    STATE_KEY,
    TASK_KEY,
    WRIST_KEY,
    DemoDataset,
)

#: Time-limit default: this many times the longest demonstration of the dataset.
TIME_LIMIT_FACTOR = 2.0
#: Files of a LeRobot pretrained-policy directory a policy cannot run without.
PRETRAINED_FILES = ("config.json", "model.safetensors", "policy_preprocessor.json",
                    "policy_postprocessor.json")
SUPPORTED_POLICIES = ("act", "diffusion", "pi05")


class Policy(Protocol):
    """What the rollout drives.

    ``act`` gets a frame as the dataset holds it: ``observation.images.front`` and
    ``observation.images.wrist`` (H x W x 3 uint8), ``observation.state`` (float32 (8,): joint
    positions, gripper opening in m) and ``task`` (the instruction); it returns the action
    (8,): joint position setpoints (rad) and the gripper command (1 closed, 0 open).
    """

    def reset(self) -> None: ...

    def act(self, obs: Mapping[str, Any]) -> np.ndarray: ...


# ---------------------------------------------------------------------------------------------
# Datasets and the replay control.


class ReplayPolicy:
    """Replays one recorded episode's ``action`` column, one action per control step, whatever
    it observes; after the last one it holds the last."""

    def __init__(self, actions: np.ndarray, seed: int, instruction: str) -> None:
        self.actions = np.asarray(actions, dtype=np.float64)
        if self.actions.ndim != 2 or len(self.actions) == 0:
            raise ValueError(f"actions must be (frames, dims), got shape {self.actions.shape}")
        self.seed = seed
        self.instruction = instruction
        self._k = 0

    @staticmethod
    def from_dataset(dataset: DemoDataset | Path | str, seed: int) -> ReplayPolicy:
        """The episode of ``seed`` in ``dataset`` (its seed from ``meta/afford_episodes.jsonl``)."""
        ds = dataset if isinstance(dataset, DemoDataset) else DemoDataset.load(dataset)
        meta = ds.episode_for_seed(seed)
        return ReplayPolicy(ds.actions(int(meta["episode_index"])), seed, str(meta["instruction"]))

    def reset(self) -> None:
        self._k = 0

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        a = self.actions[min(self._k, len(self.actions) - 1)]
        self._k += 1
        return a.copy()


# ---------------------------------------------------------------------------------------------
# LeRobot policies.


def _check_pretrained(path: Path) -> None:
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a directory; give a LeRobot pretrained policy directory "
                                "(lerobot-train writes OUTPUT/checkpoints/last/pretrained_model)")
    missing = [f for f in PRETRAINED_FILES if not (path / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{path} has no {', '.join(missing)}: not a complete LeRobot pretrained policy (lerobot-train "
            "writes OUTPUT/checkpoints/last/pretrained_model); refusing to run a policy without its "
            "trained weights and normalisation")


class LeRobotPolicy:
    """A LeRobot pretrained policy directory (``config.json``, ``model.safetensors`` and the
    processors ``lerobot-train`` saves beside them), ACT, Diffusion Policy or Pi 0.5, on ``device``.

    Pi 0.5 needs its instruction tokenizer from a local directory (``tokenizer``, else as
    :func:`afford_policy.pi05.resolve_tokenizer` finds it), and a checkpoint that leaves any of
    its parameters to their initial values is refused (:func:`afford_policy.pi05.weight_gaps`).

    The observation goes through LeRobot's own preprocessor (batching, normalisation with the
    training set's statistics), ``select_action`` (which keeps the policy's action queue) and
    the postprocessor (unnormalisation), as ``lerobot-eval`` does.

    Raises:
        FileNotFoundError: a file of :data:`PRETRAINED_FILES` is missing (LeRobot itself would
            build some policies with random weights then).
        ValueError: a policy type other than :data:`SUPPORTED_POLICIES`; a Pi 0.5 checkpoint
            that does not provide every parameter.
    """

    def __init__(self, path: Path | str, device: str = "cpu", tokenizer: Path | str | None = None) -> None:
        path = Path(path)
        _check_pretrained(path)
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        cfg = PreTrainedConfig.from_pretrained(path)
        if cfg.type not in SUPPORTED_POLICIES:
            raise ValueError(f"{path} holds a {cfg.type!r} policy; supported: "
                             f"{', '.join(SUPPORTED_POLICIES)}")
        cfg.device = device
        cfg.pretrained_path = path
        overrides: dict[str, Any] = {"device_processor": {"device": device}}
        if cfg.type == "pi05":
            from afford_policy import pi05

            # Before the model: a missing tokenizer is found in a second, not after minutes of loading.
            overrides.update(pi05.processor_overrides(path, tokenizer))
        # strict: every parameter of the model must come from the file, none left at its init
        # (ACT and DP raise otherwise; Pi 0.5 only prints, hence weight_gaps below).
        quiet = pi05.quiet_key_fixes() if cfg.type == "pi05" else contextlib.nullcontext()
        with contextlib.redirect_stdout(io.StringIO()) as said, quiet:  # Pi 0.5 prints its progress
            self.policy = get_policy_class(cfg.type).from_pretrained(path, config=cfg, strict=True)
        if cfg.type == "pi05":
            gaps = pi05.weight_gaps(self.policy, path / "model.safetensors")
            if gaps:
                del self.policy
                raise ValueError(
                    f"{path / 'model.safetensors'} does not provide {len(gaps)} of the Pi 0.5 model's "
                    f"tensors ({'; '.join(gaps[:3])}{' ...' if len(gaps) > 3 else ''}): refusing a partly "
                    f"initialised model. LeRobot said: {said.getvalue().strip()[-400:]}")
        self.policy.eval()
        self.pre, self.post = make_pre_post_processors(
            cfg, pretrained_path=str(path), preprocessor_overrides=overrides)
        self.config = cfg
        self.path = path
        self.image_keys = [k for k, f in cfg.input_features.items() if f.type.name == "VISUAL"]
        self.inputs = list(cfg.input_features)

    @property
    def image_size(self) -> tuple[int, int]:
        """(width, height) the policy's cameras were trained at."""
        sizes = {tuple(self.config.input_features[k].shape[1:]) for k in self.image_keys}
        if len(sizes) != 1:
            raise ValueError(f"{self.path}: cameras of different sizes {sorted(sizes)}")
        h, w = sizes.pop()
        return int(w), int(h)

    def training_dataset(self) -> Path | None:
        """The dataset directory ``train_config.json`` names, if it is still there."""
        cfg = self.path / "train_config.json"
        if not cfg.is_file():
            return None
        root = (json.loads(cfg.read_text()).get("dataset") or {}).get("root")
        return Path(root) if root and (Path(root) / "meta" / "afford_episodes.jsonl").is_file() else None

    def reset(self) -> None:
        self.policy.reset()

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        import torch

        batch: dict[str, Any] = {}
        for key in self.inputs:
            if key not in obs:
                raise KeyError(f"the policy takes {key!r}, which the observation lacks ({sorted(obs)})")
            value = obs[key]
            if key in self.image_keys:
                batch[key] = torch.from_numpy(np.ascontiguousarray(value)).permute(2, 0, 1).float() / 255.0
            else:
                batch[key] = torch.from_numpy(np.asarray(value, dtype=np.float32))
        batch[TASK_KEY] = str(obs.get(TASK_KEY, ""))
        batch = self.pre(batch)
        with torch.inference_mode():
            action = self.policy.select_action(batch)
        action = self.post(action)
        return np.asarray(action.detach().cpu().numpy(), dtype=np.float64).reshape(-1)


# ---------------------------------------------------------------------------------------------
# The executor and the stage judge.


@dataclass(frozen=True)
class RolloutConfig:
    """How an episode runs.

    Attributes:
        task_id: A registered task (``afford tasks``).
        robot: The arm.
        fps: Control steps (actions) per simulated second: the dataset's frame rate.
        image_size: (width, height) of both cameras: the dataset's.
        max_seconds: Control time per episode (s): the policy gets ``max_seconds * fps``
            actions (a blocking gripper's waits are not counted).
        joint_margin: Radians the joint targets are kept inside the joint limits (the safety
            checker's margin).
        gripper_threshold: A gripper command at or above it closes the hand.
        gripper: ``blocking``: a change of gripper command steps physics until the fingers stop,
            the arm holding its setpoint (the scripted skill's gripper, and the FR3's);
            ``async``: the command is set and the arm goes on at once.
        interpolation: ``linear``: the joint setpoint moves from the last target to the new one
            over the period; ``hold``: it jumps to the new one (zero-order hold).
        settle: The final stage is judged after the arm has held still this long (s), on a copy
            of the world at every control step once the earlier stages passed, and on the world
            itself at the time limit.
        stop_on_success: End the episode when every judged stage has passed; else run to the
            time limit and judge the final stage there only.
        randomize: Domain randomization of every episode's scene (``afford_sim.randomization``:
            ``visual``, ``table2``, an axis...); each episode's draw is in its record.
    """

    task_id: str
    robot: str = "fr3"
    fps: int = 10
    image_size: tuple[int, int] = (128, 128)
    max_seconds: float = 30.0
    joint_margin: float = 0.05
    gripper_threshold: float = 0.5
    gripper: Literal["blocking", "async"] = "blocking"
    interpolation: Literal["linear", "hold"] = "linear"
    settle: float = 0.5
    stop_on_success: bool = True
    randomize: str = "none"

    def __post_init__(self) -> None:
        from afford_core.robots import get_robot
        from afford_sim.randomization import domain_randomization
        from afford_sim.tasks import get_task

        get_task(self.task_id)
        get_robot(self.robot)
        domain_randomization(self.randomize)  # KeyError listing the presets
        if not 1 <= self.fps <= 100:
            raise ValueError(f"fps must be in 1..100, got {self.fps}")
        if not (math.isfinite(self.max_seconds) and self.max_seconds > 0):
            raise ValueError(f"max_seconds must be positive, got {self.max_seconds}")
        if self.gripper not in ("blocking", "async") or self.interpolation not in ("linear", "hold"):
            raise ValueError(f"gripper must be blocking/async and interpolation linear/hold, got "
                             f"{self.gripper!r}, {self.interpolation!r}")
        if self.settle < 0:
            raise ValueError(f"settle must be >= 0, got {self.settle}")

    @property
    def max_steps(self) -> int:
        return max(1, math.ceil(self.max_seconds * self.fps - 1e-9))


@dataclass
class EpisodeRecord:
    """One closed-loop episode; ``as_dict`` is its JSON record.

    ``stages`` maps each stage of the task's skill to whether it passed (None for a stage the
    task does not judge); ``stage_steps`` the control step at which it did; ``details`` the
    check's numbers when it was decided (or last tried).
    """

    seed: int
    instruction: str
    task_id: str
    stages: dict[str, bool | None] = field(default_factory=dict)
    stage_steps: dict[str, int | None] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    success: bool = False
    steps: int = 0
    sim_seconds: float = 0.0
    reason: str | None = None
    wall_s: float = 0.0
    clipped_steps: int = 0
    rate_limited_steps: int = 0
    video: str | None = None
    domain: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sim_seconds": round(self.sim_seconds, 3), "wall_s": round(self.wall_s, 2)}


class StageJudge:
    """Judges a policy's episode stage by stage with the task's own checks.

    The stages are the task's skill's, in order; each must pass after the one before it. The
    spine checks a stage right after it ran; a policy has no stage boundaries, so:

    - ``approach`` (did reaching the object leave it in place) is judged once, when the policy
      first commands the hand closed (the spine judges it before the grasp closes the hand);
    - every other stage but the last passes at the first control step its check holds;
    - the last stage is judged at the end of the episode, after the arm held still for
      ``settle`` seconds: at each control step once the earlier stages passed (on a copy of the
      world, so the episode goes on unchanged if it does not hold; the episode then ends with
      ``stop_on_success``), and at the time limit on the world itself.

    A stage the task does not judge (``Task.unchecked_stages``, or no ``check_<stage>``) is
    recorded as None and left out of success, as the spine leaves it out. Every check runs
    between a saved and a restored world state: a check that steps physics (hang's) changes
    nothing.
    """

    def __init__(self, task: Any, world: Any, settle: float, final_each_step: bool = True) -> None:
        from afford_planner.skills import SKILLS

        self.task, self.world, self.settle = task, world, settle
        self.final_each_step = final_each_step
        names = tuple(SKILLS.get(task.skill).stage_names)
        self.names = names
        self.judged = [n for n in names if n not in task.unchecked_stages
                       and getattr(task, f"check_{n}", None) is not None]
        self.final = names[-1] if names[-1] in self.judged else None
        self.passed: dict[str, int | None] = {n: None for n in self.judged}
        self.details: dict[str, str] = {}
        self.approach_judged = False

    @property
    def pending(self) -> str | None:
        """The first judged stage not passed yet."""
        return next((n for n in self.judged if self.passed[n] is None), None)

    @property
    def success(self) -> bool:
        return self.pending is None

    def _check(self, name: str, settle: float) -> bool:
        w = self.world
        state = w.save_state()
        try:
            if settle > 0:
                w.advance(settle)
            check = self.task.check(name, w)
        finally:
            w.restore_state(state)
        if check is None:
            return True
        self.details[name] = check.detail
        return bool(check.ok)

    def hand_closing(self, step: int) -> None:
        """Called before a command to close the hand is carried out."""
        if self.approach_judged or "approach" not in self.judged or self.pending != "approach":
            return
        self.approach_judged = True
        if self._check("approach", 0.0):
            self.passed["approach"] = step

    def after_step(self, step: int) -> None:
        """Called after each control step's physics."""
        while (name := self.pending) is not None:
            if name == "approach":
                return  # judged when the hand first closes
            if name == self.final:
                if self.final_each_step and self._check(name, self.settle):
                    self.passed[name] = step
                return
            if not self._check(name, 0.0):
                return
            self.passed[name] = step

    def at_end(self, step: int) -> None:
        """The time limit: the final stage judged on the world itself, after the arm held
        still for ``settle`` seconds (the earlier stages must have passed)."""
        if self.final is not None and self.pending == self.final:
            self.world.advance(self.settle)
            check = self.task.check(self.final, self.world)
            if check is not None:
                self.details[self.final] = check.detail
            if check is None or check.ok:
                self.passed[self.final] = step

    def fill(self, record: EpisodeRecord) -> None:
        record.stages = {n: (self.passed[n] is not None if n in self.judged else None) for n in self.names}
        record.stage_steps = {n: self.passed.get(n) for n in self.names}
        record.details = dict(self.details)
        record.success = self.success


class Limits:
    """The robot's joint position limits less the safety margin and its velocity limits,
    as ``afford_planner.safety.SafetyChecker`` checks them."""

    def __init__(self, robot: str, joint_margin: float) -> None:
        from afford_planner.robot_model import RobotModel
        from afford_planner.safety import SafetyChecker, SafetyConfig

        checker = SafetyChecker(SafetyConfig(joint_margin=joint_margin), RobotModel(robot))
        self.lower: np.ndarray = checker.lower.copy()
        self.upper: np.ndarray = checker.upper.copy()
        self.velocity: np.ndarray = checker.velocity_limits.copy()


class BadAction(ValueError):
    """An action the arm must not be moved on (wrong size, not finite)."""


@dataclass(frozen=True)
class GatedAction:
    """An action as it may be sent: the joint target clipped to the limits and rate-limited
    from the last target, and the gripper command.

    Attributes:
        target: The joint target (rad).
        closed: The gripper command: closed when the action's last value is at least the
            threshold.
        clipped: The policy's target lay outside the joint limits less the margin.
        rate_limited: Reaching it within the period would have exceeded a velocity limit.
    """

    target: np.ndarray
    closed: bool
    clipped: bool
    rate_limited: bool


def gate_action(action: Any, limits: Limits, last_target: np.ndarray, period: float,
                gripper_threshold: float = 0.5) -> GatedAction:
    """Check a policy's action (joint targets and a gripper command) and make it safe to send.

    The batch world's rollout and the graph's policy node both send actions through this, so a
    policy meets the same limits in both.

    Raises:
        BadAction: the action is not ``dof + 1`` finite values; the arm is not moved on it.
    """
    dof = len(limits.lower)
    a = np.asarray(action, dtype=np.float64).reshape(-1)
    if a.shape != (dof + 1,):
        raise BadAction(f"the policy returned {a.size} values, not {dof + 1}")
    if not np.all(np.isfinite(a)):
        bad = [i for i, v in enumerate(a) if not math.isfinite(v)]
        raise BadAction(f"non-finite action (values {bad}); the arm was not moved on it")
    last = np.asarray(last_target, dtype=np.float64)
    goal = np.clip(a[:dof], limits.lower, limits.upper)
    max_delta = limits.velocity * period
    delta = np.clip(goal - last, -max_delta, max_delta)
    return GatedAction(target=last + delta, closed=bool(a[dof] >= gripper_threshold),
                       clipped=not np.array_equal(goal, a[:dof]),
                       rate_limited=not np.array_equal(delta, goal - last))


def _observe(world: Any, instruction: str) -> dict[str, Any]:
    from afford_sim.policy_cameras import FRONT, SCENE_CAMERAS, WRIST

    obs: dict[str, Any] = {}
    for key, cam in ((FRONT_KEY, SCENE_CAMERAS[FRONT]), (WRIST_KEY, SCENE_CAMERAS[WRIST])):
        obs[key] = np.asarray(world.render(cam, depth=False, segmentation=False).rgb, dtype=np.uint8)
    obs[STATE_KEY] = np.append(world.arm_q(), world.gripper_width()).astype(np.float32)
    obs[TASK_KEY] = instruction
    return obs


def run_episode(policy: Policy, config: RolloutConfig, seed: int, instruction: str | None = None,
                video: Path | str | None = None, limits: Limits | None = None,
                on_step: Callable[[int, Any], None] | None = None) -> EpisodeRecord:
    """Run ``policy`` in closed loop on the scene of ``config.task_id`` and ``seed``.

    Args:
        policy: The policy (reset before the first step).
        config: How the episode runs.
        seed: The scene seed (the dataset's episode of that seed was recorded on this scene).
        instruction: The task text the policy sees; default the phrasing ``afford generate``
            draws for that seed.
        video: Write the front camera's frames here as an MP4.
        limits: The robot's limits (made from ``config`` when None; pass one to reuse it).
        on_step: Called with (step, world) after each control step (tests watch the arm).
    """
    import os

    os.environ.setdefault("MUJOCO_GL", "egl")
    from afford_data.demos import instruction_for
    from afford_pipeline.spine import task_world
    from afford_sim.policy_cameras import policy_cameras
    from afford_sim.tasks import get_task

    t0 = time.perf_counter()
    task = get_task(config.task_id)
    text = instruction if instruction is not None else instruction_for(task, seed)
    limits = limits or Limits(config.robot, config.joint_margin)
    record = EpisodeRecord(seed=seed, instruction=text, task_id=config.task_id)
    world = task_world(config.task_id, seed, config.robot, policy_cameras(*config.image_size),
                       config.randomize)
    record.domain = world.domain.as_dict() if world.domain is not None else None
    frames: list[np.ndarray] = []
    try:
        task.begin(world)
        judge = StageJudge(task, world, config.settle, config.stop_on_success)
        period = 1.0 / config.fps
        n_sub = max(1, round(period / world.timestep))
        sim = world.robot.sim
        grip_act = world.model.actuator(sim.gripper_actuator).id
        closed = abs(world.data.ctrl[grip_act] - sim.gripper_closed_ctrl) < abs(
            world.data.ctrl[grip_act] - sim.gripper_open_ctrl)
        target = world.arm_target()
        policy.reset()
        sim_t0 = world.time
        step = 0
        while step < config.max_steps:
            obs = _observe(world, text)
            if video is not None:
                frames.append(obs[FRONT_KEY])
            try:
                gated = gate_action(policy.act(obs), limits, target, period, config.gripper_threshold)
            except BadAction as err:
                record.reason = f"step {step}: {err}"
                break
            record.clipped_steps += int(gated.clipped)
            record.rate_limited_steps += int(gated.rate_limited)
            new = gated.target
            delta = new - target
            want_closed = gated.closed
            if want_closed != closed:
                if want_closed:
                    judge.hand_closing(step)
                wait = config.gripper == "blocking"
                (world.close_gripper if want_closed else world.open_gripper)(wait=wait)
                closed = want_closed
            if config.interpolation == "hold":
                world.set_arm_target(new)
                world.step(n_sub)
            else:
                for i in range(1, n_sub + 1):
                    world.set_arm_target(target + delta * (i / n_sub))
                    world.step()
            target = new
            step += 1
            if on_step is not None:
                on_step(step, world)
            judge.after_step(step)
            if config.stop_on_success and judge.success:
                break
        if record.reason is None and not judge.success:
            judge.at_end(step)
        record.steps = step
        record.sim_seconds = world.time - sim_t0
        judge.fill(record)
        if record.reason is None and not record.success:
            pending = judge.pending
            why = f": {judge.details[pending]}" if pending in judge.details else ""
            record.reason = f"time limit ({config.max_seconds:g} s, {step} steps); {pending} not passed{why}"
        if video is not None and frames:
            import imageio.v2 as imageio

            Path(video).parent.mkdir(parents=True, exist_ok=True)
            imageio.mimwrite(str(video), cast(Any, frames), fps=config.fps, macro_block_size=1)
            record.video = str(video)
    finally:
        world.close()
    record.wall_s = time.perf_counter() - t0
    return record


# ---------------------------------------------------------------------------------------------
# Evaluation runs: records, resume, report.


@dataclass(frozen=True)
class EvalPlan:
    """What ``afford policy eval`` runs.

    Attributes:
        source: ``replay:<dataset>`` or ``policy:<directory>`` (resolved paths).
        config: The rollout settings.
        seeds: Scene seeds, in order.
        instructions: The instruction of each seed (the dataset's for a replay).
        videos: How many of the first episodes are filmed.
    """

    source: str
    config: RolloutConfig
    seeds: tuple[int, ...]
    instructions: tuple[str, ...]
    videos: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "config": {**asdict(self.config),
                                                   "image_size": list(self.config.image_size)},
                "seeds": list(self.seeds), "instructions": list(self.instructions), "videos": self.videos}


def _record_path(out: Path, seed: int) -> Path:
    return out / "episodes" / f"seed_{seed:06d}.json"


def load_records(out: Path | str) -> list[dict[str, Any]]:
    """The episode records of a run directory, in seed order (a torn or foreign file is skipped)."""
    records = []
    for f in sorted((Path(out) / "episodes").glob("seed_*.json")):
        try:
            records.append(json.loads(f.read_text()))
        except ValueError:
            continue
    return sorted(records, key=lambda r: int(r["seed"]))


def evaluate(out: Path | str, plan: EvalPlan, make_policy: Callable[[int], Policy],
             progress: Callable[[str], None] | None = None,
             reference: DemoDataset | None = None) -> Path:
    """Run ``plan``'s episodes into ``out`` (one ``episodes/seed_<seed>.json`` each, written
    atomically; the episodes already there are kept, so a killed run resumes), then write
    ``report.md``; returns its path.

    Args:
        out: The run directory.
        plan: What to run; a directory holding another plan is refused.
        make_policy: The policy for a seed (a replay's differs per seed; a model is reused).
        progress: Called with a line per episode.
        reference: The dataset whose scripted rollouts the report compares against.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    remove_temporaries(out)
    plan_path = out / "plan.json"
    stored = json.loads(plan_path.read_text()) if plan_path.is_file() else None
    mine = json.loads(json.dumps(plan.as_dict()))
    if stored is not None and stored != mine:
        raise ValueError(f"{out} holds a run of another plan ({plan_path}); use the same options to resume, "
                         "or another --out")
    if stored is None:
        write_atomic(plan_path, json.dumps(mine, indent=1).encode())
    say = progress or (lambda _line: None)
    limits = Limits(plan.config.robot, plan.config.joint_margin)
    n = len(plan.seeds)
    for k, (seed, text) in enumerate(zip(plan.seeds, plan.instructions, strict=True)):
        path = _record_path(out, seed)
        if path.is_file():
            try:
                json.loads(path.read_text())
                say(f"[{k + 1}/{n}] seed {seed}: kept from before")
                continue
            except ValueError:
                pass
        video = out / "videos" / f"seed_{seed:06d}.mp4" if k < plan.videos else None
        record = run_episode(make_policy(seed), plan.config, seed, text, video=video, limits=limits)
        if record.video is not None:
            record.video = str(Path(record.video).relative_to(out))
        write_atomic(path, json.dumps(record.as_dict(), indent=1, sort_keys=True).encode())
        outcome = "success" if record.success else f"failure ({record.reason})"
        say(f"[{k + 1}/{n}] seed {seed}: {outcome}; {record.steps} steps, "
            f"{record.sim_seconds:.1f} s simulated, {record.wall_s:.1f} s")
    return write_report(out, plan, reference)


def _rate(k: int, n: int, empty: str = "not judged") -> str:
    from afford_eval.stats import wilson

    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:.2f} [{lo:.2f}, {hi:.2f}]" if n else empty


def _stage_rates(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> Iterator[tuple[str, int, int]]:
    for name in names:
        judged = [r for r in rows if (r.get("stages") or {}).get(name) is not None]
        yield name, sum(1 for r in judged if r["stages"][name]), len(judged)


def write_report(out: Path | str, plan: EvalPlan, reference: DemoDataset | None = None) -> Path:
    """``report.md`` of a run directory from its episode records."""
    from afford_planner.skills import SKILLS
    from afford_sim.tasks import get_task

    out = Path(out)
    wanted = set(plan.seeds)
    rows = [r for r in load_records(out) if int(r["seed"]) in wanted]
    task = get_task(plan.config.task_id)
    names = list(SKILLS.get(task.skill).stage_names)
    k = sum(1 for r in rows if r["success"])
    c = plan.config
    lines = [
        f"# Closed-loop evaluation: {c.task_id}",
        "",
        f"- Policy: `{plan.source}`",
        f"- Episodes: {len(rows)} of {len(plan.seeds)} planned (seeds {plan.seeds[0]}..{plan.seeds[-1]})",
        f"- Control: {c.fps} actions per simulated second, cameras {c.image_size[0]}x{c.image_size[1]}, "
        f"time limit {c.max_seconds:g} s ({c.max_steps} actions), {c.gripper} gripper, {c.interpolation} "
        f"setpoint interpolation, joint targets clipped {c.joint_margin:g} rad inside the limits and "
        "rate-limited to the velocity limits",
        "",
        "| | success (Wilson 95%) |",
        "|---|---|",
        f"| **task** | {_rate(k, len(rows))} |",
    ]
    for name, kk, nn in _stage_rates(rows, names):
        lines.append(f"| stage `{name}` | {_rate(kk, nn)} |")
    unchecked = [n for n in names if not any((r.get("stages") or {}).get(n) is not None for r in rows)]
    if unchecked:
        lines.append(f"\nNot judged (the task does not check them): {', '.join(unchecked)}.")
    if reference is not None:
        ref = {int(e["seed"]): e for e in reference.episodes}
        both = [r for r in rows if int(r["seed"]) in ref]
        ks = sum(1 for r in both if ref[int(r["seed"])].get("success"))
        kr = sum(1 for r in both if r["success"])
        lines += ["", f"## Against the dataset's scripted rollouts ({reference.root})", ""]
        if not both:
            lines.append(f"None of the {len(rows)} seeds evaluated is one the dataset recorded: every scene "
                         "is unseen.")
        else:
            lines += [
                "The dataset keeps only the scripted pipeline's successful rollouts, so on its seeds the "
                "scripted success is 1 by construction (its card counts the attempts it did not keep).",
                "",
                "| | scripted (recorded) | this run |",
                "|---|---|---|",
                f"| task, seeds in both | {_rate(ks, len(both))} | {_rate(kr, len(both))} |",
            ]
        for name in names if both else ():
            sj = [ref[int(r["seed"])] for r in both if name in (ref[int(r["seed"])].get("stages") or {})]
            rj = [r for r in both if (r.get("stages") or {}).get(name) is not None]
            ss = sum(1 for e in sj if e["stages"][name])
            rs = sum(1 for r in rj if r["stages"][name])
            scripted = _rate(ss, len(sj)) if rj else f"{ss}/{len(sj)} ran, not judged"
            lines.append(f"| stage `{name}` | {scripted} | {_rate(rs, len(rj))} |")
        if both and len(both) < len(rows):
            unseen = len(rows) - len(both)
            lines.append(f"\nSeeds not in the dataset (unseen scenes): {unseen} of {len(rows)}.")
        elif both:
            lines.append(f"\nEvery seed evaluated is one the dataset recorded ({len(both)} of {len(rows)}).")
    failed = [r for r in rows if not r["success"]]
    if failed:
        lines += ["", "## Failures", "", "| seed | reason |", "|---|---|"]
        lines += [f"| {r['seed']} | {str(r['reason']).replace('|', '/')} |" for r in failed]
    clipped = sum(int(r.get("clipped_steps", 0)) for r in rows)
    limited = sum(int(r.get("rate_limited_steps", 0)) for r in rows)
    steps = sum(int(r.get("steps", 0)) for r in rows)
    wall = sum(float(r.get("wall_s", 0.0)) for r in rows)
    lines += ["", f"Actions: {steps} in all; {clipped} had a joint target clipped to the limits, "
              f"{limited} were rate-limited. Wall time {wall:.0f} s."]
    videos = [r["video"] for r in rows if r.get("video")]
    if videos:
        lines.append("Videos (front camera): " + ", ".join(f"`{v}`" for v in videos) + ".")
    path = out / "report.md"
    write_atomic(path, ("\n".join(lines) + "\n").encode())
    return path


# ---------------------------------------------------------------------------------------------
# What `afford policy eval` runs.


def prepare(task_id: str, episodes: int, *, policy_dir: Path | str | None = None,
            replay_dir: Path | str | None = None, first_seed: int = 0, max_seconds: float | None = None,
            videos: int = 0, gripper: Literal["blocking", "async"] = "blocking",
            interpolation: Literal["linear", "hold"] = "linear", randomize: str = "none",
            tokenizer: Path | str | None = None,
            ) -> tuple[EvalPlan, Callable[[int], Policy], DemoDataset | None]:
    """The plan of an evaluation, the policy for each seed and the dataset to compare with.

    ``replay_dir``: the dataset's episodes of seed ``first_seed`` and above, ``episodes`` of
    them in the dataset's order, each replayed on its own seed with its own instruction.
    ``policy_dir``: a LeRobot pretrained policy on seeds ``first_seed ..``, asked with the
    phrasing ``afford generate`` draws for each seed; the dataset it was trained on
    (``train_config.json``), when still there, sets the frame rate and the time limit.
    The time limit defaults to :data:`TIME_LIMIT_FACTOR` times the dataset's longest episode.
    ``tokenizer``: a Pi 0.5 policy's local tokenizer directory (:class:`LeRobotPolicy`).

    Raises:
        ValueError: both or neither source, a dataset of another task, too few episodes, no
            time limit to be had.
        FileNotFoundError: a directory that is not what it should be.
    """
    from afford_data.demos import instruction_for
    from afford_sim.tasks import get_task

    if (policy_dir is None) == (replay_dir is None):
        raise ValueError("give exactly one of a policy directory (--policy) or a dataset to replay "
                         "(--replay)")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if first_seed < 0 or videos < 0:
        raise ValueError("first_seed and videos must be >= 0")
    task = get_task(task_id)
    if replay_dir is not None:
        ds = DemoDataset.load(replay_dir)
        if ds.task_id != task_id:
            raise ValueError(f"{replay_dir} holds episodes of {ds.task_id}, not {task_id}")
        chosen = [e for e in ds.episodes if int(e["seed"]) >= first_seed][:episodes]
        if len(chosen) < episodes:
            raise ValueError(f"{replay_dir} has {len(chosen)} episodes of seed {first_seed} or above; "
                             f"{episodes} were asked for")
        seeds = tuple(int(e["seed"]) for e in chosen)
        texts = tuple(str(e["instruction"]) for e in chosen)
        source = f"replay:{Path(replay_dir).resolve()}"
        fps, size, robot = ds.fps, ds.image_size, ds.robot

        def make(seed: int) -> Policy:
            return ReplayPolicy.from_dataset(ds, seed)

        reference: DemoDataset | None = ds
    else:
        assert policy_dir is not None
        model = LeRobotPolicy(policy_dir, tokenizer=tokenizer)
        trained_on = model.training_dataset()
        reference = DemoDataset.load(trained_on) if trained_on is not None else None
        if reference is not None and reference.task_id != task_id:
            raise ValueError(f"{policy_dir} was trained on {reference.task_id} ({trained_on}), not {task_id}")
        size = model.image_size
        if reference is not None and reference.image_size != size:
            raise ValueError(f"{policy_dir} takes {size} images but its dataset has {reference.image_size}")
        fps = reference.fps if reference is not None else 10
        robot = reference.robot if reference is not None else "fr3"
        seeds = tuple(range(first_seed, first_seed + episodes))
        texts = tuple(instruction_for(task, s) for s in seeds)
        source = f"policy:{Path(policy_dir).resolve()}"

        def make(seed: int) -> Policy:
            return model

    if max_seconds is None:
        if reference is None:
            raise ValueError("the policy's training dataset is not where train_config.json says: give "
                             "--max-seconds")
        max_seconds = round(TIME_LIMIT_FACTOR * reference.longest_seconds, 1)
    config = RolloutConfig(task_id, robot=robot, fps=fps, image_size=size, max_seconds=max_seconds,
                           gripper=gripper, interpolation=interpolation, randomize=randomize)
    plan = EvalPlan(source, config, seeds, texts, videos=min(videos, episodes))
    return plan, make, reference
