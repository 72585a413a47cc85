"""The skills' :class:`~afford_planner.skills.Executor` over the graph: the executor node's
trajectory action and gripper service, and the arm state from ``/joint_states``.

Used by the planner node while it runs a skill. Every call blocks the calling thread (a
worker of a multi-threaded executor) until the executor node answers, and turns a refusal,
a reflex or a stop into a :class:`~afford_planner.skills.SkillError`, so that the skill ends at
that stage and the trial reports why.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
from builtin_interfaces.msg import Duration
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from afford_bringup import contract
from afford_bringup.nodes.qos import qos_profile
from afford_interfaces.action import FollowTrajectory
from afford_interfaces.srv import Gripper
from afford_planner.skills import SkillError

#: A gap between the measured arm and a trajectory's first point larger than this (rad) is
#: closed by a short lead-in from where the arm really is, so the executor never sees a jump.
JOIN_GAP = 0.002
JOIN_SPEED = 0.3  # rad/s for that lead-in


def trajectory_msg(times: np.ndarray, qs: np.ndarray, stamp: Any) -> JointTrajectory:
    """Timed joint waypoints as a JointTrajectory of the FR3's arm joints."""
    msg = JointTrajectory()
    msg.header = Header(stamp=stamp, frame_id=contract.BASE_FRAME)
    msg.joint_names = list(contract.ARM_JOINTS)
    for t, q in zip(times, qs, strict=True):
        sec = int(t)
        msg.points.append(
            JointTrajectoryPoint(
                positions=[float(v) for v in q],
                time_from_start=Duration(sec=sec, nanosec=int((t - sec) * 1e9)),
            )
        )
    return msg


def wait_future(future: Future, timeout: float, what: str) -> Any:
    """Block this thread until ``future`` is done (another executor thread completes it)."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout):
        future.cancel()
        raise SkillError(f"{what}: no answer within {timeout:.0f} s")
    return future.result()


class GraphRobot:
    """Drives the executor node for a skill. ``node`` must spin in a multi-threaded executor.

    Attributes:
        max_state_age: Oldest /joint_states (s) the arm state may come from; older means the
            robot's state stream stopped, and the skill stops.
    """

    def __init__(self, node: Node, max_state_age: float = 0.5, timeout_margin: float = 10.0) -> None:
        self.node = node
        self.max_state_age = max_state_age
        self.timeout_margin = timeout_margin
        group = ReentrantCallbackGroup()
        self._lock = threading.Lock()
        self._q: np.ndarray | None = None
        self._q_time = 0.0
        node.create_subscription(
            JointState, "/joint_states", self._on_joints, qos_profile("sensor"), callback_group=group
        )
        self._follow: Any = ActionClient(
            node, FollowTrajectory, "/executor/follow_trajectory", callback_group=group
        )
        self._gripper: Any = node.create_client(Gripper, "/executor/gripper", callback_group=group)
        self.pub_trajectory = node.create_publisher(
            JointTrajectory, "/afford/trajectory", qos_profile("latched")
        )
        self._goal: Any = None
        self.cancelled = False

    def _on_joints(self, msg: JointState) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        if not all(j in index for j in contract.ARM_JOINTS):
            return
        with self._lock:
            self._q = np.array([msg.position[index[j]] for j in contract.ARM_JOINTS])
            self._q_time = time.monotonic()

    def arm_q(self) -> np.ndarray:
        with self._lock:
            q, t = self._q, self._q_time
        if q is None:
            raise SkillError("no /joint_states from the executor")
        if time.monotonic() - t > self.max_state_age:
            raise SkillError(f"stale robot state: no /joint_states for {time.monotonic() - t:.2f} s")
        return q.copy()

    def wait_for_state(self, timeout: float) -> np.ndarray:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                return self.arm_q()
            except SkillError:
                time.sleep(0.02)
        return self.arm_q()

    def follow(self, times: np.ndarray, qs: np.ndarray) -> None:
        if self.cancelled:
            raise SkillError("cancelled")
        times, qs = np.asarray(times, float), np.asarray(qs, float)
        q_now = self.arm_q()
        gap = float(np.max(np.abs(q_now - qs[0])))
        if gap > JOIN_GAP:
            lead = max(0.1, gap / JOIN_SPEED)
            times = np.concatenate([[0.0], times + lead])
            qs = np.vstack([q_now, qs])
        msg = trajectory_msg(times, qs, self.node.get_clock().now().to_msg())
        self.pub_trajectory.publish(msg)
        if not self._follow.wait_for_server(timeout_sec=5.0):
            raise SkillError("the executor's follow_trajectory action is not available")
        goal = FollowTrajectory.Goal(trajectory=msg)
        handle = wait_future(self._follow.send_goal_async(goal), 10.0, "follow_trajectory goal")
        if not handle.accepted:
            raise SkillError("the executor refused the trajectory goal")
        self._goal = handle
        try:
            result = wait_future(
                handle.get_result_async(), float(times[-1]) + self.timeout_margin, "trajectory"
            )
        finally:
            self._goal = None
        if not result.result.success:
            kind = f" ({result.result.error_kind})" if result.result.error_kind else ""
            raise SkillError(f"the executor stopped the motion{kind}: {result.result.message}")

    def cancel(self) -> None:
        """Stop the running trajectory (if any) and refuse further motions of this skill."""
        self.cancelled = True
        handle = self._goal
        if handle is not None:
            handle.cancel_goal_async()

    def _grip(self, command: str, width: float, force: float) -> None:
        if self.cancelled:
            raise SkillError("cancelled")
        if not self._gripper.wait_for_service(timeout_sec=5.0):
            raise SkillError("the executor's gripper service is not available")
        res = wait_future(
            self._gripper.call_async(Gripper.Request(command=command, width=width, force=force)),
            15.0,
            "gripper",
        )
        if not res.success:
            raise SkillError(f"gripper {command}: {res.message}")

    def open_gripper(self) -> None:
        self._grip("open", 0.08, 0.0)

    def close_gripper(self) -> None:
        self._grip("grasp", 0.0, 60.0)

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)
