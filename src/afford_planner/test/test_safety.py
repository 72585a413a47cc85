"""The executor's limit checks: every way a command can be unsafe is refused, and a safe one passes."""

from __future__ import annotations

import numpy as np
import pytest

from afford_core.robots import get_robot
from afford_planner.robot_model import RobotModel
from afford_planner.safety import SafetyChecker, SafetyConfig

Q_HOME = get_robot("fr3").home_array


@pytest.fixture(scope="module")
def model() -> RobotModel:
    return RobotModel()


@pytest.fixture(scope="module")
def checker(model: RobotModel) -> SafetyChecker:
    return SafetyChecker(SafetyConfig(), model)


def _ramp(q0: np.ndarray, q1: np.ndarray, duration: float, n: int = 101) -> tuple[np.ndarray, np.ndarray]:
    s = np.linspace(0.0, 1.0, n)
    smooth = 0.5 * (1.0 - np.cos(np.pi * s))
    return s * duration, q0 + smooth[:, None] * (q1 - q0)


def test_safe_trajectory_passes(checker: SafetyChecker) -> None:
    """A slow, in-limit move over the table must pass, or the executor could never move the arm."""
    goal = Q_HOME + np.array([0.3, 0.2, 0.0, 0.2, 0.0, 0.0, 0.3])
    t, q = _ramp(Q_HOME, goal, 3.0)
    result = checker.check_trajectory(t, q, Q_HOME)
    assert result.ok, result.message
    assert result.check == "" and result.message == ""


def test_nan_and_inf_are_refused(checker: SafetyChecker) -> None:
    """A NaN reaching a position controller commands an undefined motion on the real arm."""
    t, q = _ramp(Q_HOME, Q_HOME + 0.1, 2.0)
    q[50, 3] = np.nan
    assert checker.check_trajectory(t, q, Q_HOME).check == "finite"
    t2, q2 = _ramp(Q_HOME, Q_HOME + 0.1, 2.0)
    t2[-1] = np.inf
    assert checker.check_trajectory(t2, q2, Q_HOME).check == "finite"
    v = np.zeros_like(q2)
    v[3, 0] = np.nan
    t3, q3 = _ramp(Q_HOME, Q_HOME + 0.1, 2.0)
    assert checker.check_trajectory(t3, q3, Q_HOME, velocities=v).check == "finite"


def test_non_monotonic_times_are_refused(checker: SafetyChecker) -> None:
    """Repeated or backwards times mean infinite or undefined velocities between samples."""
    t, q = _ramp(Q_HOME, Q_HOME + 0.1, 2.0)
    t[40] = t[39]
    result = checker.check_trajectory(t, q, Q_HOME)
    assert result.check == "time" and "point 40" in result.message
    t2, q2 = _ramp(Q_HOME, Q_HOME + 0.1, 2.0)
    t2[0] = -0.1
    assert checker.check_trajectory(t2, q2, Q_HOME).check == "time"


def test_first_point_far_from_current_state_is_refused(checker: SafetyChecker) -> None:
    """A plan made from a stale state would make the controller jump to its first point."""
    t, q = _ramp(Q_HOME, Q_HOME + 0.1, 2.0)
    current = Q_HOME.copy()
    current[2] += 0.2
    result = checker.check_trajectory(t, q, current)
    assert result.check == "start" and "joint 3" in result.message


def test_a_start_reference_replaces_the_current_state_in_the_start_check(checker: SafetyChecker) -> None:
    """A stream's next chunk is compared with where the running chunk sends the arm at the
    chunk's first point (the arm moves in the milliseconds before it), while the speed to that
    point is still judged from where the arm is sent now."""
    t, q = _ramp(Q_HOME + 0.08, Q_HOME + 0.15, 1.0)
    t = t + 0.05  # the first point 50 ms ahead, 0.08 rad on: 1.6 rad/s, within every joint's limit
    assert checker.check_trajectory(t, q, Q_HOME).check == "start"
    ahead = Q_HOME + 0.08  # where the running motion sends the arm 50 ms from now
    assert checker.check_trajectory(t, q, Q_HOME, start_reference=ahead).ok
    far = Q_HOME.copy()
    far[1] += 0.2
    result = checker.check_trajectory(t, q, Q_HOME, start_reference=far)
    assert result.check == "start" and "joint 2" in result.message and "running motion" in result.message
    # The speed from now to the first point: 0.3 rad in 50 ms is refused whatever the reference.
    q_fast = q.copy()
    q_fast[:, 0] = Q_HOME[0] + 0.3
    fast = checker.check_trajectory(t, q_fast, Q_HOME, start_reference=q_fast[0])
    assert fast.check == "velocity"
    bad = checker.check_trajectory(t, q, Q_HOME, start_reference=np.full(7, np.nan))
    assert bad.check == "shape"


def test_joint_limit_margin_is_enforced(checker: SafetyChecker, model: RobotModel) -> None:
    """A target inside the mechanical limit but inside the margin is still refused: tracking
    error near a limit trips the FR3's own reflex mid-motion, which is worse than refusing."""
    goal = Q_HOME.copy()
    goal[3] = model.upper[3] - 0.02  # inside the raw limit, inside the 0.05 rad margin
    t, q = _ramp(Q_HOME, goal, 6.0)
    result = checker.check_trajectory(t, q, Q_HOME)
    assert result.check == "joint_limit" and "joint 4" in result.message
    goal[3] = model.upper[3] - 0.08
    t, q = _ramp(Q_HOME, goal, 6.0)
    ok = SafetyChecker(SafetyConfig(workspace_min=(-1, -1, -1), workspace_max=(1, 1, 1.5)), model)
    assert ok.check_trajectory(t, q, Q_HOME).ok


def test_lower_joint_limit_margin_is_enforced(checker: SafetyChecker, model: RobotModel) -> None:
    """The lower limits are checked as the upper ones are: joint 4 bent towards its lower stop,
    inside the margin, is refused; the same move stopping short of the margin passes."""
    goal = Q_HOME.copy()
    goal[3] = model.lower[3] + 0.02
    t, q = _ramp(Q_HOME, goal, 6.0)
    result = checker.check_trajectory(t, q, Q_HOME)
    assert result.check == "joint_limit" and "joint 4" in result.message
    assert f"{checker.lower[3]:.4f}" in result.message
    goal[3] = model.lower[3] + 0.08
    t, q = _ramp(Q_HOME, goal, 6.0)
    roomy = SafetyChecker(SafetyConfig(workspace_min=(-1, -1, -1), workspace_max=(1, 1, 1.5)), model)
    assert roomy.check_trajectory(t, q, Q_HOME).ok


def test_too_many_points_are_refused(model: RobotModel) -> None:
    """A trajectory longer than ``max_points`` is refused whole, before any other check runs on it."""
    checker = SafetyChecker(SafetyConfig(max_points=100), model)
    t, q = _ramp(Q_HOME, Q_HOME + 0.1, 2.0, n=101)
    result = checker.check_trajectory(t, q, Q_HOME)
    assert result.check == "shape" and "101 points exceed the limit of 100" in result.message
    t, q = _ramp(Q_HOME, Q_HOME + 0.1, 2.0, n=100)
    assert checker.check_trajectory(t, q, Q_HOME).ok


def test_velocities_of_the_wrong_shape_are_refused(checker: SafetyChecker) -> None:
    """Velocities that do not match the positions point for point are refused, not broadcast."""
    t, q = _ramp(Q_HOME, Q_HOME + 0.1, 2.0)
    for v in (np.zeros((len(t), 6)), np.zeros((len(t) - 1, 7)), np.zeros(7)):
        result = checker.check_trajectory(t, q, Q_HOME, velocities=v)
        assert result.check == "shape" and "velocities have shape" in result.message
    assert checker.check_trajectory(t, q, Q_HOME, velocities=np.zeros_like(q)).ok


def test_velocity_from_timing_is_enforced(checker: SafetyChecker, model: RobotModel) -> None:
    """The same path is refused when timed too fast for the FR3's joint speed limits."""
    goal = Q_HOME + np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    t, q = _ramp(Q_HOME, goal, 0.5)  # peak ~3.1 rad/s on joint 1 (limit 2.62)
    result = checker.check_trajectory(t, q, Q_HOME)
    assert result.check == "velocity" and "joint 1" in result.message
    t, q = _ramp(Q_HOME, goal, 1.0)  # peak ~1.6 rad/s
    assert checker.check_trajectory(t, q, Q_HOME).ok
    # A stricter fraction refuses what the full limits allow.
    slow = SafetyChecker(SafetyConfig(velocity_fraction=0.5), model)
    assert slow.check_trajectory(t, q, Q_HOME).check == "velocity"
    # Velocities the message carries are checked too, not only the timing.
    v = np.zeros_like(q)
    v[10, 6] = 6.0
    assert checker.check_trajectory(t, q, Q_HOME, velocities=v).check == "velocity"


def test_single_point_uses_time_from_current_state(checker: SafetyChecker) -> None:
    """A one-point trajectory moves from the measured state to it: that segment is timed too."""
    goal = Q_HOME.copy()
    goal[0] += 0.04
    assert checker.check_trajectory(np.array([1.0]), goal[None], Q_HOME).ok
    assert checker.check_trajectory(np.array([0.01]), goal[None], Q_HOME).check == "velocity"


def test_workspace_box_on_samples(checker: SafetyChecker, model: RobotModel) -> None:
    """Driving the TCP below the table plane is refused, though every joint is in its limits."""
    down = Q_HOME.copy()
    down[1] += 1.4  # leans the arm forward and down into the table
    down[5] += 0.63
    assert model.within_limits(down, -0.1)
    assert model.tcp_in_base(down).translation[2] < 0.0
    t, q = _ramp(Q_HOME, down, 5.0)
    result = checker.check_trajectory(t, q, Q_HOME)
    assert result.check == "workspace" and "fr3_link0" in result.message


def test_workspace_box_between_sparse_samples(model: RobotModel) -> None:
    """Two samples inside the box whose joint-space line swings the TCP out of it are refused:
    the executor interpolates between samples, so the checks must too."""
    config = SafetyConfig(workspace_min=(0.0, -0.6, 0.0), workspace_max=(0.28, 0.6, 0.9))
    checker = SafetyChecker(config, model)
    a, b = Q_HOME.copy(), Q_HOME.copy()
    a[0], b[0] = -0.6, 0.6  # TCP x = 0.307 cos(0.6) = 0.253 at both ends, 0.307 in between
    for q in (a, b):
        assert model.tcp_in_base(q).translation[0] < 0.28
    result = checker.check_trajectory(np.array([0.0, 2.0]), np.vstack([a, b]), a)
    assert result.check == "workspace"


def test_the_segment_from_the_measured_state_is_checked(model: RobotModel) -> None:
    """A one-point trajectory moves the arm from where it is to that point: a swing out of the
    box on that segment is refused though both of its ends are inside."""
    x_home = float(model.tcp_in_base(Q_HOME).translation[0])
    config = SafetyConfig(workspace_min=(0.0, -0.6, 0.0), workspace_max=(x_home - 0.003, 0.6, 0.9),
                          max_start_deviation=0.5)
    checker = SafetyChecker(config, model)
    a, b = Q_HOME.copy(), Q_HOME.copy()
    a[0], b[0] = -0.2, 0.2  # both ends at TCP x = x_home cos(0.2), 6 mm inside; x_home midway
    for q in (a, b):
        assert model.tcp_in_base(q).translation[0] < x_home - 0.003
    result = checker.check_trajectory(np.array([2.0]), b[None], a)
    assert result.check == "workspace" and "point 0" in result.message
    # The same point reached from a state beside it passes: the refusal was the swing.
    near = b.copy()
    near[0] -= 0.02
    assert checker.check_trajectory(np.array([2.0]), b[None], near).ok


def test_an_arm_outside_the_box_may_move_back_in(model: RobotModel) -> None:
    """The measured state is not commanded: an arm just outside the box (moved by hand, or a box
    tightened at run time) is not refused for where it is, only for where it is sent."""
    x_home = float(model.tcp_in_base(Q_HOME).translation[0])
    config = SafetyConfig(workspace_min=(0.0, -0.6, 0.0), workspace_max=(x_home - 0.002, 0.6, 0.9),
                          interpolation_step=0.2, max_start_deviation=0.3)
    checker = SafetyChecker(config, model)
    inside = Q_HOME.copy()
    inside[0] += 0.15  # TCP x = x_home cos(0.15), 3.5 mm inside; one interpolation piece
    assert model.tcp_in_base(inside).translation[0] < x_home - 0.002
    assert checker.check_trajectory(np.array([2.0]), inside[None], Q_HOME).ok
    result = checker.check_trajectory(np.array([2.0]), Q_HOME[None], inside)
    assert result.check == "workspace"


def test_shape_errors_are_refused(checker: SafetyChecker) -> None:
    """A malformed message (wrong joint count, empty) is refused, never guessed at."""
    assert checker.check_trajectory(np.zeros(0), np.zeros((0, 7)), Q_HOME).check == "shape"
    assert checker.check_trajectory(np.array([0.0, 1.0]), np.zeros((2, 6)), Q_HOME).check == "shape"
    assert checker.check_trajectory(np.array([0.0]), Q_HOME[None], Q_HOME[:6]).check == "shape"


def test_gripper_command_checks(checker: SafetyChecker) -> None:
    """Width must be within the hand's 0..8 cm and grasp force within (0, 70] N."""
    assert checker.check_gripper("open", 0.08, 0.0).ok
    assert checker.check_gripper("grasp", 0.02, 40.0).ok
    assert checker.check_gripper("open", 0.09, 0.0).check == "gripper"
    assert checker.check_gripper("grasp", -0.01, 20.0).check == "gripper"
    assert checker.check_gripper("grasp", 0.02, 0.0).check == "gripper"
    assert checker.check_gripper("grasp", 0.02, 80.0).check == "gripper"
    assert checker.check_gripper("grasp", float("nan"), 20.0).check == "finite"
    assert checker.check_gripper("squeeze", 0.02, 20.0).check == "gripper"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"joint_margin": -0.01},
        {"velocity_fraction": 0.0},
        {"velocity_fraction": 1.5},
        {"workspace_min": (0.5, 0.0, 0.0), "workspace_max": (0.4, 1.0, 1.0)},
        {"workspace_min": (0.0, 0.0)},
        {"workspace_max": (float("nan"), 1.0, 1.0)},
        {"max_start_deviation": 0.0},
        {"interpolation_step": 0.5},
        {"max_gripper_width": 0.0},
        {"max_grasp_force": -1.0},
    ],
)
def test_config_validation(kwargs: dict[str, object]) -> None:
    """A mistyped limit in a parameter file must fail at start-up, not weaken the checks silently."""
    with pytest.raises(ValueError):
        SafetyConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "match"), [({"max_gripper_width": 0.1}, "max_gripper_width must be in"),
                                                ({"max_grasp_force": 100.0}, "max_grasp_force must be in")])
def test_gripper_limits_beyond_the_hand_are_refused(
    model: RobotModel, kwargs: dict[str, float], match: str
) -> None:
    """A config may tighten the gripper's limits, never widen them past the hardware's."""
    with pytest.raises(ValueError, match=match):
        SafetyChecker(SafetyConfig(**kwargs), model)
    tight = SafetyChecker(SafetyConfig(max_gripper_width=0.05, max_grasp_force=30.0), model)
    assert tight.check_gripper("open", 0.06, 0.0).check == "gripper"
    assert tight.check_gripper("grasp", 0.02, 31.0).check == "gripper"
    assert tight.check_gripper("grasp", 0.02, 29.0).ok


def test_every_limit_is_inclusive(model: RobotModel) -> None:
    """A value exactly at a limit passes and the checks refuse only beyond it: the boundary is
    part of the contract (and the mutation run, bench/mutation.py, turns each ``>`` into ``>=``)."""
    q0 = Q_HOME.copy()
    home_tcp = model.tcp_in_base(q0).translation
    # The workspace box touches the TCP's x from above and its z from below, exactly.
    box = SafetyConfig(workspace_min=(-1.0, -1.0, float(home_tcp[2])),
                       workspace_max=(float(home_tcp[0]), 1.0, 1.5))
    assert SafetyChecker(box, model).check_trajectory(np.array([1.0]), q0[None], q0).ok

    roomy = dict(workspace_min=(-1.0, -1.0, -1.0), workspace_max=(1.0, 1.0, 1.5))
    # The first point exactly max_start_deviation from the measured state.
    first = q0.copy()
    first[2] += 0.05
    gap = float(np.max(np.abs(first - q0)))
    at_gap = SafetyChecker(SafetyConfig(max_start_deviation=gap, **roomy), model)  # type: ignore[arg-type]
    assert at_gap.check_trajectory(np.array([1.0]), first[None], q0).ok

    # Joints exactly at the lower and at the upper limit less the margin.
    checker = SafetyChecker(SafetyConfig(**roomy), model)  # type: ignore[arg-type]
    for bound in (checker.lower, checker.upper):
        start = q0.copy()
        start[6] = bound[6]
        t = np.array([0.0, 1.0])
        assert checker.check_trajectory(t, np.vstack([start, start]), start).ok

    # A carried velocity exactly at the limit.
    t, q = _ramp(q0, q0 + 0.01, 2.0)
    v = np.zeros_like(q)
    v[5, 0] = checker.velocity_limits[0]
    assert checker.check_trajectory(t, q, q0, velocities=v).ok

    # The gripper: fully closed, fully open, and the largest grasp force.
    assert checker.check_gripper("grasp", 0.0, 10.0).ok
    assert checker.check_gripper("open", checker.max_gripper_width, 0.0).ok
    assert checker.check_gripper("grasp", 0.02, checker.max_grasp_force).ok
