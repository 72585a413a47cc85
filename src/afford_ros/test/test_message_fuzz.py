"""What the nodes take in, under arbitrary input (hypothesis): every message a node accepts is
turned into arrays by one function before anything acts on it; each of those either returns
values the node can check or refuses with a ``ValueError`` that says why. Nothing else may
escape (an exception of another kind kills the callback and, in rclpy, the node's answer),
and a trajectory that passes the conversion is still refused by the safety checks when a value
is not finite, so nothing non-finite can reach the robot.

Covered: point clouds (the planner's target, destination and obstacle clouds), joint
trajectories and streamed chunks (the executor), RunTask goals (the task server's sentence
and task id). The task parser's own fuzzing is in
``src/afford_perception/test/test_parser_fuzz.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("rclpy")

from builtin_interfaces.msg import Duration  # noqa: E402
from sensor_msgs.msg import PointCloud2, PointField  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from afford_core.robots import get_robot  # noqa: E402
from afford_planner.robot_model import RobotModel  # noqa: E402
from afford_planner.safety import SafetyChecker, SafetyConfig  # noqa: E402
from afford_ros import contract  # noqa: E402
from afford_ros.nodes.clouds import from_cloud, to_cloud  # noqa: E402
from afford_ros.nodes.executor import trajectory_arrays  # noqa: E402

# Derandomized: the same examples on every run, no example database in the checkout.
FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
ODD_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1e308, -1e308]),
)


# ------------------------------------------------------------------ point clouds
@st.composite
def clouds(draw: st.DrawFn) -> PointCloud2:
    """PointCloud2 messages with arbitrary fields, offsets, steps, sizes and bytes."""
    msg = PointCloud2()
    n_fields = draw(st.integers(0, 5))
    names = draw(
        st.lists(
            st.sampled_from(["x", "y", "z", "handle", "rim", "", "x"]), min_size=n_fields, max_size=n_fields
        )
    )
    msg.fields = [
        PointField(
            name=name,
            offset=draw(st.integers(0, 40)),
            datatype=draw(st.sampled_from([PointField.FLOAT32, PointField.FLOAT64, PointField.UINT8, 0, 9])),
            count=draw(st.integers(0, 3)),
        )
        for name in names
    ]
    msg.height = draw(st.integers(0, 3))
    msg.width = draw(st.integers(0, 50))
    msg.point_step = draw(st.integers(0, 48))
    msg.row_step = msg.point_step * msg.width
    msg.is_bigendian = draw(st.booleans())
    msg.data = draw(st.binary(max_size=2000))
    return msg


@FUZZ
@given(clouds())
def test_any_point_cloud_gives_points_or_a_reason(msg: PointCloud2) -> None:
    try:
        points, extra = from_cloud(msg)
    except ValueError as err:
        assert str(err), "a refusal must say why"
        return
    assert points.ndim == 2 and points.shape[1] == 3
    assert all(v.shape == (len(points),) for v in extra.values())


@FUZZ
@given(st.lists(st.tuples(ODD_FLOATS, ODD_FLOATS, ODD_FLOATS), max_size=40))
def test_clouds_keep_non_finite_points_visible_to_the_checks(rows: list[tuple[float, float, float]]) -> None:
    """A NaN or infinite point survives the round trip as such (float32 may overflow a huge
    finite value to inf), so the planner's finiteness check sees it and refuses."""
    from std_msgs.msg import Header

    pts = np.array(rows, dtype=float).reshape(-1, 3)
    back, _ = from_cloud(to_cloud(pts, Header()))
    assert back.shape == pts.shape
    assert np.all(np.isfinite(back)) == np.all(np.isfinite(pts.astype(np.float32)))


# ------------------------------------------------------------------ trajectories
JOINTS = contract.ARM_JOINTS


@st.composite
def trajectories(draw: st.DrawFn) -> JointTrajectory:
    """JointTrajectory messages: names shuffled, missing or repeated; points with wrong lengths,
    odd times and non-finite values."""
    names = draw(
        st.one_of(
            st.permutations(list(JOINTS)),
            st.lists(st.sampled_from([*JOINTS, "fr3_finger_width", "", "joint8"]), max_size=9),
        )
    )
    points = []
    for _ in range(draw(st.integers(0, 6))):
        p = JointTrajectoryPoint()
        width = draw(st.one_of(st.just(len(names)), st.integers(0, 9)))
        p.positions = draw(
            st.lists(st.one_of(st.floats(-3.0, 3.0), ODD_FLOATS), min_size=width, max_size=width)
        )
        p.velocities = draw(st.one_of(st.just([]), st.lists(ODD_FLOATS, max_size=9)))
        p.time_from_start = Duration(sec=draw(st.integers(-5, 5)), nanosec=draw(st.integers(0, 999_999_999)))
        points.append(p)
    msg = JointTrajectory()
    msg.joint_names = list(names)
    msg.points = points
    return msg


@pytest.fixture(scope="module")
def checker() -> SafetyChecker:
    return SafetyChecker(SafetyConfig(), RobotModel(get_robot("fr3")))


@FUZZ
@given(trajectories())
def test_any_trajectory_is_converted_or_refused_and_nothing_non_finite_passes(
    checker: SafetyChecker, msg: JointTrajectory
) -> None:
    try:
        times, qs, vels = trajectory_arrays(msg, JOINTS)
    except ValueError as err:
        assert str(err)
        return
    assert qs.shape == (len(times), len(JOINTS))
    if len(times) == 0:
        return  # the executor refuses an empty trajectory before the checks (tested there)
    q_now = np.asarray(get_robot("fr3").home_array, dtype=float)
    verdict = checker.check_trajectory(times, qs, q_now, vels)
    assert isinstance(verdict.ok, bool) and (verdict.ok or verdict.message)
    finite = (
        np.all(np.isfinite(times)) and np.all(np.isfinite(qs)) and (vels is None or np.all(np.isfinite(vels)))
    )
    if not finite:
        assert not verdict.ok, "a non-finite trajectory passed the safety checks"


# ------------------------------------------------------------------ RunTask goals
@FUZZ
@given(
    st.text(max_size=120),
    st.one_of(st.just(""), st.text(max_size=40), st.sampled_from(["pick-mug-v1", "hang-mug-v1"])),
)
def test_any_runtask_goal_gets_a_task_or_a_reason(sentence: str, task_id: str) -> None:
    from afford_ros.nodes.task_server import TrialAborted, resolve_task
    from afford_sim.tasks import TASKS

    for need_task in (True, False):
        try:
            text, tid = resolve_task(sentence, task_id, need_task=need_task)
        except TrialAborted as err:
            message = str(err)
            assert message and "\n" not in message, repr(message)
            continue
        assert text.strip()
        assert tid in TASKS or (not need_task and tid == "")
