"""What the graph's policy node sends the executor (afford_policy.serving), without ROS.

The executor's own rule is used as the judge: every chunk must pass the safety checker as the
executor runs it for a stream (the first target against where the running chunk sends the arm
by then, the speed from where it sends it now).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from afford_planner.robot_model import RobotModel
from afford_planner.safety import SafetyChecker, SafetyConfig
from afford_policy.rollout import BadAction, Limits
from afford_policy.serving import HOLD_RAD, LoadedPolicy, PolicyStepper, check_speed_limits, load_policy

HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


class Scripted:
    """Answers with the given actions, one per call, then the last."""

    def __init__(self, actions: list[np.ndarray]) -> None:
        self.actions = actions
        self.k = 0
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        a = self.actions[min(self.k, len(self.actions) - 1)]
        self.k += 1
        return a


def _loaded(actions: list[np.ndarray], size: tuple[int, int] | None = (32, 24)) -> LoadedPolicy:
    return LoadedPolicy(Scripted(actions), "scripted", 10, size, 5.0)


@pytest.fixture(scope="module")
def limits() -> Limits:
    return Limits("fr3", 0.05)


@pytest.fixture(scope="module")
def checker() -> SafetyChecker:
    return SafetyChecker(SafetyConfig(workspace_min=(-1.0, -1.0, -1.0), workspace_max=(1.0, 1.0, 1.5)),
                         RobotModel("fr3"))


def _executor_setpoint(stream: tuple[np.ndarray, np.ndarray], t: float) -> np.ndarray:
    at, qs = stream
    return np.array([np.interp(t, at, qs[:, j]) for j in range(qs.shape[1])])


def test_a_fast_policy_streams_chunks_the_executor_takes(limits: Limits, checker: SafetyChecker) -> None:
    """A policy sweeping joint 7 as fast as the demonstrations do: each chunk starts where the
    previous one sends the arm by its first target's time, so the executor's start check passes
    every one, while the jump from where the arm is sent now would fail it (0.05 rad)."""
    goal = HOME.copy()
    goal[6] += 1.5
    stepper = PolicyStepper(_loaded([np.append(goal, 0.0)]), limits, HOME, now=100.0)
    stream = (np.array([100.0]), HOME[None, :])  # what the executor runs: (times, targets)
    now, jumps = 100.0, []
    for _ in range(12):
        gated, chunk = stepper.step({}, now)
        if chunk is None:  # there: a hold
            break
        times, qs = chunk
        q_ref = _executor_setpoint(stream, now)
        ahead = _executor_setpoint(stream, now + times[0])
        verdict = checker.check_trajectory(times, qs, q_ref, start_reference=ahead)
        assert verdict.ok, verdict.message
        jumps.append(np.max(np.abs(qs[0] - q_ref)))
        stream = (np.r_[now, now + times], np.vstack([q_ref, qs]))
        now += stepper.period
    np.testing.assert_allclose(stepper.target, goal)
    assert len(jumps) >= 7 and max(jumps) > 0.05  # why the start is judged at the first target's time
    assert stepper.rate_limited >= 1 and stepper.clipped == 0
    # rate-limited: 0.4 of joint 7's 5.26 rad/s
    speed = np.abs(np.diff(stream[1][:, 6])) / np.diff(stream[0])
    assert speed.max() <= 0.4 * limits.velocity[6] + 1e-9


def test_a_still_policy_sends_nothing_and_a_move_after_it_starts_from_the_hold(limits: Limits) -> None:
    """Holds send no chunk (franky refuses a motion to where the arm already goes); the next move
    starts from the held target."""
    moved = HOME + 0.02
    policy = [np.append(HOME, 0.0)] * 3 + [np.append(moved, 0.0)]
    stepper = PolicyStepper(_loaded(policy), limits, HOME, now=0.0)
    for k in range(3):
        gated, chunk = stepper.step({}, 0.1 * k)
        assert chunk is None and not gated.closed
    gated, chunk = stepper.step({}, 0.3)
    assert chunk is not None
    np.testing.assert_allclose(chunk[1][0], HOME)
    np.testing.assert_allclose(chunk[1][1], moved)
    assert HOLD_RAD < 0.02


def test_bad_actions_are_refused_and_leave_the_stream_where_it_was(limits: Limits) -> None:
    stepper = PolicyStepper(_loaded([np.full(8, np.nan)]), limits, HOME)
    with pytest.raises(BadAction, match="non-finite"):
        stepper.step({}, 0.0)
    np.testing.assert_allclose(stepper.target, HOME)
    with pytest.raises(BadAction, match="7 values, not 8"):
        PolicyStepper(_loaded([np.zeros(7)]), limits, HOME).step({}, 0.0)


def test_targets_past_the_joint_limits_are_clipped(limits: Limits) -> None:
    far = np.append(HOME + 10.0, 1.0)
    stepper = PolicyStepper(_loaded([far]), limits, HOME, speed_fraction=1.0)
    for k in range(60):
        gated, _ = stepper.step({}, 0.1 * k)
    assert gated.closed and stepper.clipped == 60
    assert np.all(stepper.target <= limits.upper + 1e-12) and np.any(np.isclose(stepper.target, limits.upper))


def test_after_a_pause_the_next_chunk_starts_where_the_arm_is(limits: Limits) -> None:
    """After a gripper command, or a hold long enough for the executor to end the stream, the
    executor checks the next chunk against the measured arm (a held object sags, the arm trails
    its target): the chunk starts there. Within a running stream it starts where the stream
    sends the arm, whatever is measured."""
    goal = np.append(HOME + 0.3, 0.0)
    stepper = PolicyStepper(_loaded([goal]), limits, HOME, now=0.0)
    _, first = stepper.step({}, 0.0)
    assert first is not None
    sent = first[1][1]
    measured = sent + 0.04
    _, running = stepper.step({}, 0.1, measured)  # the stream runs: from where it sends the arm
    assert running is not None
    np.testing.assert_allclose(running[1][0], sent)  # the first chunk's end, due by then
    stepper.resync()  # a gripper command
    _, after_grip = stepper.step({}, 0.2, measured)
    assert after_grip is not None
    np.testing.assert_allclose(after_grip[1][0], measured)
    last_end = 0.2 + stepper.lead + stepper.period
    later = measured + 0.01
    _, after_hold = stepper.step({}, last_end + 0.5, later)  # the stream has lapsed
    assert after_hold is not None
    np.testing.assert_allclose(after_hold[1][0], later)


def test_images_of_another_size_than_the_policy_was_trained_on_are_refused(limits: Limits) -> None:
    stepper = PolicyStepper(_loaded([np.append(HOME, 0.0)], size=(32, 24)), limits, HOME)
    ok = np.zeros((24, 32, 3), np.uint8)
    assert stepper.check_images(ok, ok) == ""
    assert "trained on 32x24" in stepper.check_images(np.zeros((64, 64, 3), np.uint8), ok)
    assert "uint8" in stepper.check_images(ok, ok.astype(np.float32))
    obs = stepper.observation(ok, ok, HOME, 0.04, "put the banana on the plate")
    assert obs["observation.state"].dtype == np.float32 and obs["observation.state"].shape == (8,)
    assert obs["observation.state"][-1] == pytest.approx(0.04)


def test_policies_that_cannot_be_served_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no policy named"):
        load_policy("  ", 0)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_policy(str(tmp_path / "nowhere"), 0)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        load_policy(str(tmp_path / "half"), 0)
    with pytest.raises(FileNotFoundError, match="not a dataset written by `afford generate`"):
        load_policy(f"replay:{tmp_path / 'half'}", 0)
    with pytest.raises(ValueError, match="speed_fraction"):
        PolicyStepper(_loaded([np.zeros(8)]), Limits("fr3", 0.05), HOME, speed_fraction=0.0)


def test_joint_speed_limits_replace_the_fraction_and_stay_within_the_robots(limits: Limits) -> None:
    speeds = np.full(7, 0.5)
    goal = np.append(HOME + 1.0, 0.0)
    stepper = PolicyStepper(_loaded([goal]), limits, HOME, speed_limits=speeds)
    _, chunk = stepper.step({}, 0.0)
    assert chunk is not None
    np.testing.assert_allclose(chunk[1][1] - chunk[1][0], 0.5 * stepper.period)
    for bad in (np.full(7, 9.0), np.full(6, 0.5), np.zeros(7)):
        with pytest.raises(ValueError, match="joint speed limits"):
            check_speed_limits(bad, limits)
