"""The skill's view of the arm state over DDS: a gap in /joint_states is waited out, a silence is not.

A real rclpy node with a real ``GraphRobot`` subscribes to /joint_states on a domain of its own;
a second node publishes the FR3's joints as the executor does. On a loaded machine the
executor's 100 Hz stream has gaps of half a second (CI saw 0.65 s in a grasp); a skill that
then read the arm must take the next state, not stop with "stale robot state". A stream that
stays silent must still stop it, with that reason, and no old state is ever returned.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

# 215-229: valid domain ids apart from the ranges the other node tests draw from.
_DOMAIN = 215 + os.getpid() % 15


@pytest.fixture
def link() -> Iterator[tuple[Any, Any, Any]]:
    from rclpy.executors import MultiThreadedExecutor
    from sensor_msgs.msg import JointState

    from afford_core.robots import get_robot
    from afford_ros import contract
    from afford_ros.nodes.robot_link import GraphRobot
    from afford_ros.qos import qos_profile

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=_DOMAIN)
    node = rclpy.create_node("skill", context=context)
    sender = rclpy.create_node("arm_state", context=context)
    robot = GraphRobot(node, max_state_age=0.2, state_wait=1.0)
    joints = contract.arm_joints(get_robot("fr3"))
    pub = sender.create_publisher(JointState, "/joint_states", qos_profile("sensor"))

    def publish(q: np.ndarray) -> None:
        msg = JointState(name=list(joints), position=[float(v) for v in q], velocity=[0.0] * len(joints))
        pub.publish(msg)

    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(node)
    executor.add_node(sender)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        yield robot, publish, pub
    finally:
        executor.shutdown()
        node.destroy_node()
        sender.destroy_node()
        context.try_shutdown()
        spin.join(timeout=5)


def _until_heard(robot: Any, publish: Any, q: np.ndarray) -> None:
    end = time.monotonic() + 10.0
    while time.monotonic() < end:
        publish(q)
        try:
            if np.allclose(robot.arm_q(), q):
                return
        except Exception:  # noqa: BLE001 - discovery still under way
            pass
        time.sleep(0.05)
    raise AssertionError("the subscriber never heard /joint_states")


def test_a_gap_in_the_state_stream_is_waited_out_and_the_new_state_returned(link: tuple) -> None:
    from afford_planner.skills import SkillError

    robot, publish, _ = link
    old, new = np.zeros(7), np.full(7, 0.1)
    _until_heard(robot, publish, old)
    time.sleep(1.0)  # the last state is now five times max_state_age old: a gap, as on a loaded machine
    threading.Timer(0.3, publish, args=(new,)).start()
    try:
        q = robot.arm_q()
    except SkillError as err:
        raise AssertionError(f"a 1.3 s gap stopped the skill: {err}") from None
    assert np.allclose(q, new), "the stale state was returned, not the one that came after it"


def test_a_silent_state_stream_stops_the_skill_with_the_reason(link: tuple) -> None:
    from afford_planner.skills import SkillError

    robot, publish, _ = link
    _until_heard(robot, publish, np.zeros(7))
    time.sleep(1.0)
    t0 = time.monotonic()
    with pytest.raises(SkillError, match=r"stale robot state: no /joint_states for .* \(waited 1\.0 s"):
        robot.arm_q()
    assert time.monotonic() - t0 >= 0.9, "gave up before its state_wait"
