"""Serving a policy on the robot, without ROS: what the graph's ``policy`` node computes.

The node (:mod:`afford_policy.nodes.policy`) turns messages into numbers and back; everything
that decides what the arm is sent is here and tested on its own:

- :func:`load_policy` finds the policy a goal names: a LeRobot pretrained-policy directory
  (ACT, Diffusion Policy, Pi 0.5 with its tokenizer inside it or at ``AFFORD_PI05_TOKENIZER``;
  checked as ``afford policy eval`` checks it, cached between goals) or
  ``replay:<dataset>``, the recorded episode of the goal's seed (the control: a demonstration
  replayed through the graph shows the serving path, not a model, is being measured);
- :class:`PolicyStepper` runs one control step: the observation as the dataset recorded it
  (both cameras, joints and finger opening, the instruction), the policy's action, and the
  gate every action passes in the batch world too (:func:`afford_policy.rollout.gate_action`:
  8 finite values or the run ends with the arm unmoved; joint targets clipped to the limits
  less the margin and rate-limited to the velocity limits from the last target sent).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from afford_policy.rollout import (
    FRONT_KEY,
    STATE_KEY,
    TASK_KEY,
    TIME_LIMIT_FACTOR,
    WRIST_KEY,
    DemoDataset,
    GatedAction,
    LeRobotPolicy,
    Limits,
    Policy,
    ReplayPolicy,
    gate_action,
)

REPLAY_PREFIX = "replay:"
#: A chunk's first point lies this far ahead (s) by default. The executor checks it against
#: where the running chunk sends the arm then; a chunk that arrives later than this (less
#: 20 ms) is re-timed, and the stream runs that much behind its stamps from then on (up to
#: 0.25 s, under :data:`RESYNC_S`, or 1 s for a chunk that comes while the arm is still; past
#: that its first point is dropped and the next one refused as a jump). Chunks took up to 90 ms
#: to arrive on two busy cores, a stream's first one 0.59 s.
LEAD_S = 0.2
#: Targets are rate-limited to this fraction of the robot description's velocity limits (the
#: FR3 datasheet's, which the executor checks). The executor's franky driver slows (stretches
#: in time) any chunk faster than 0.9 x its dynamics factor x the limits the robot reports
#: (franky-sim: 2.175 rad/s on joints 1-4, 2.61 on 5-7, below the datasheet's 5.26 on joint 5
#: and 7), and a slowed chunk no longer runs where the next one expects it to: the executor
#: refuses that one. 0.4 stays under them at a dynamics factor of 1.
SPEED_FRACTION = 0.4
#: A step that moves no joint further than this (rad) from where the arm is sent is a hold: no
#: chunk goes out (the executor holds the last target; franky refuses a motion to where the arm
#: already goes, error -111, and ends the stream).
HOLD_RAD = 2e-3
#: After this long (s) past the last chunk's end the next chunk starts from the measured arm:
#: the executor ends a stream no chunk fed for 0.5 s and checks the next one against where the
#: arm is, which is not quite where it was sent (a held object sags, the arm trails).
RESYNC_S = 0.3
#: Run length (s) when neither the goal nor the policy's training set says.
DEFAULT_MAX_SECONDS = 30.0
#: Control rate (Hz) when the policy's training set cannot be found (``afford generate``'s).
DEFAULT_FPS = 10


@dataclass
class LoadedPolicy:
    """A policy ready to run.

    Attributes:
        policy: What acts (reset before each run).
        name: The goal's name for it.
        fps: Control rate (Hz): the frame rate of the data it learned from.
        image_size: (width, height) its cameras must deliver; None when it ignores images.
        max_seconds: Default run length: twice its training set's longest demonstration.
        instruction: The instruction to condition on when the goal gives none.
    """

    policy: Policy
    name: str
    fps: int
    image_size: tuple[int, int] | None
    max_seconds: float
    instruction: str = ""


_CACHE: dict[tuple[str, float], LeRobotPolicy] = {}
_CACHE_LOCK = threading.Lock()


def load_policy(spec: str, seed: int) -> LoadedPolicy:
    """The policy a goal names (module docstring).

    Raises:
        FileNotFoundError: no such directory, or not a complete pretrained policy / dataset.
        KeyError: a replay dataset without an episode of ``seed``.
        ValueError: an empty name or an unsupported policy type.
    """
    spec = spec.strip()
    if not spec:
        raise ValueError("no policy named: give a LeRobot pretrained-policy directory or replay:<dataset>")
    if spec.startswith(REPLAY_PREFIX):
        ds = DemoDataset.load(Path(spec[len(REPLAY_PREFIX):]).expanduser())
        replay = ReplayPolicy.from_dataset(ds, seed)
        return LoadedPolicy(replay, spec, ds.fps, None, TIME_LIMIT_FACTOR * ds.longest_seconds,
                            replay.instruction)
    path = Path(spec).expanduser().resolve()
    weights = path / "model.safetensors"
    key = (str(path), weights.stat().st_mtime if weights.is_file() else 0.0)
    with _CACHE_LOCK:
        policy = _CACHE.get(key)
        if policy is None:
            policy = LeRobotPolicy(path)  # refuses a directory without weights or processors
            _CACHE.clear()  # one model in memory at a time
            _CACHE[key] = policy
    fps, max_seconds = DEFAULT_FPS, DEFAULT_MAX_SECONDS
    data = policy.training_dataset()
    if data is not None:
        ds = DemoDataset.load(data)
        fps, max_seconds = ds.fps, TIME_LIMIT_FACTOR * ds.longest_seconds
    return LoadedPolicy(policy, str(path), fps, policy.image_size, max_seconds)


def check_speed_limits(speeds: Any, limits: Limits) -> np.ndarray:
    """``speeds`` as joint speed limits (rad/s), one per joint, positive, each within the robot's.

    Raises:
        ValueError: otherwise.
    """
    v = np.asarray(speeds, dtype=np.float64)
    if v.shape != limits.velocity.shape or not np.all(v > 0) or np.any(v > limits.velocity):
        raise ValueError(f"joint speed limits must be {limits.velocity.size} positive speeds within the "
                         f"robot's {np.round(limits.velocity, 3).tolist()}, got {v.tolist()}")
    return v


class PolicyStepper:
    """One control step after another for a loaded policy on the robot (module docstring).

    Each step's target goes out as a two-point chunk: where the chunk sent before puts the arm
    ``lead_s`` from now, then the new target one period later. The executor checks a
    chunk's first point against where the running chunk sends the arm, so the first point must
    be that; the target is rate-limited from it.

    Args:
        loaded: The policy.
        limits: The robot's limits (joint margin as the executor's).
        start_q: Where the arm is.
        now: The caller's clock (monotonic s) at ``start_q``.
        gripper_threshold: An action's gripper value at or above this closes the hand.
        speed_fraction: Rate-limit to this fraction of the velocity limits.
        speed_limits: Rate-limit to these joint speeds (rad/s) instead, each at most the
            robot's limit: what the executor's driver follows without slowing a chunk.
        lead_s: How far ahead a chunk's first point lies (:data:`LEAD_S`).
    """

    def __init__(self, loaded: LoadedPolicy, limits: Limits, start_q: np.ndarray, now: float = 0.0,
                 gripper_threshold: float = 0.5, speed_fraction: float = SPEED_FRACTION,
                 lead_s: float = LEAD_S, speed_limits: np.ndarray | None = None) -> None:
        if not 0.0 < speed_fraction <= 1.0:
            raise ValueError(f"speed_fraction must be in (0, 1], got {speed_fraction}")
        if not 0.03 <= lead_s <= 1.0:
            raise ValueError(f"lead_s must be in [0.03, 1], got {lead_s}")
        self.lead = lead_s
        # The last chunk sent: (t0, q0, t1, q1), linear from q0 at t0 to q1 at t1, then q1.
        self._segment: tuple[float, np.ndarray, float, np.ndarray]
        self.loaded = loaded
        self.limits = copy.copy(limits)
        self.limits.velocity = limits.velocity * speed_fraction
        if speed_limits is not None:
            self.limits.velocity = check_speed_limits(speed_limits, limits)
        self.period = 1.0 / loaded.fps
        self.gripper_threshold = gripper_threshold
        self.clipped = self.rate_limited = 0
        self.restart_from(start_q, now)
        loaded.policy.reset()

    @property
    def target(self) -> np.ndarray:
        """The last target sent."""
        return self._segment[3].copy()

    @property
    def arrives_at(self) -> float:
        """When the last target sent is due."""
        return self._segment[2]

    def setpoint(self, t: float) -> np.ndarray:
        """Where the chunks sent so far put the arm at time ``t``: linear along the last one."""
        t0, q0, t1, q1 = self._segment
        if t1 <= t0:
            return q1.copy()
        a = min(max((t - t0) / (t1 - t0), 0.0), 1.0)
        return q0 + (q1 - q0) * a

    def check_images(self, front: np.ndarray, wrist: np.ndarray) -> str:
        """Why these camera images cannot be given to the policy, or ""."""
        want = self.loaded.image_size
        for name, image in (("front", front), ("wrist", wrist)):
            if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
                return f"the {name} camera's image is not H x W x 3 uint8 ({image.shape}, {image.dtype})"
            if want is not None and (image.shape[1], image.shape[0]) != want:
                return (f"the policy was trained on {want[0]}x{want[1]} images; the {name} camera gives "
                        f"{image.shape[1]}x{image.shape[0]} (sim_world's policy_camera_width/height)")
        return ""

    def observation(self, front: np.ndarray, wrist: np.ndarray, q: np.ndarray, width: float,
                    instruction: str) -> dict[str, Any]:
        """A frame as an ``afford generate`` dataset holds it."""
        return {
            FRONT_KEY: front,
            WRIST_KEY: wrist,
            STATE_KEY: np.append(np.asarray(q, dtype=np.float64), width).astype(np.float32),
            TASK_KEY: instruction,
        }

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        """The policy's raw action for ``obs``."""
        return np.asarray(self.loaded.policy.act(obs), dtype=np.float64)

    def step(self, obs: Mapping[str, Any], now: float, measured: np.ndarray | None = None
             ) -> tuple[GatedAction, tuple[np.ndarray, np.ndarray] | None]:
        """:meth:`act` then :meth:`send` (for a policy that answers at once)."""
        return self.send(self.act(obs), now, measured)

    def send(self, action: np.ndarray, now: float, measured: np.ndarray | None = None
             ) -> tuple[GatedAction, tuple[np.ndarray, np.ndarray] | None]:
        """The action, gated, and the chunk that sends it from ``now`` (the time its stamp
        says: after the policy answered, or its inference time would eat the lead): (times
        from now (2,), joint targets (2, dof)), or None for a hold (:data:`HOLD_RAD`).

        ``measured`` is where the arm is now: after a pause (:data:`RESYNC_S` past the last
        chunk's end, or :meth:`resync`) the chunk starts there.

        Raises:
            afford_policy.rollout.BadAction: the arm must not move on this action.
        """
        if measured is not None and self.resync_due(now):
            self.restart_from(measured, now)
        start = self.setpoint(now + self.lead)
        gated = gate_action(action, self.limits, start, self.period, self.gripper_threshold)
        self.clipped += int(gated.clipped)
        self.rate_limited += int(gated.rate_limited)
        last = self._segment[3]
        if max(np.max(np.abs(gated.target - start)), np.max(np.abs(gated.target - last))) < HOLD_RAD:
            return gated, None
        self._segment = (now + self.lead, start, now + self.lead + self.period, gated.target.copy())
        return gated, (np.array([self.lead, self.lead + self.period]), np.vstack([start, gated.target]))

    def resync_due(self, now: float) -> bool:
        """Whether a chunk sent at ``now`` with the arm's measurement starts from it (:meth:`send`):
        after :meth:`resync`, or :data:`RESYNC_S` past the last chunk's end."""
        return self._resync or now - self._segment[2] > RESYNC_S

    def restart_from(self, q: np.ndarray, now: float) -> None:
        """Hold at ``q`` from ``now``."""
        q = np.asarray(q, dtype=np.float64).copy()
        self._segment = (now, q, now, q)
        self._resync = False

    def resync(self) -> None:
        """Start the next chunk from the arm as measured then (after a gripper command: the
        executor's stream lapses meanwhile and the next one starts from where the arm is)."""
        self._resync = True
