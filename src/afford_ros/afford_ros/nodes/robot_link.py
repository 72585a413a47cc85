"""The skills' :class:`~afford_planner.skills.Executor` over the graph: the executor node's
trajectory action and gripper service, and the arm state from ``/joint_states``.

Used by the planner node while it runs a skill. Every call blocks the calling thread (a
worker of a multi-threaded executor) until the executor node answers, and turns a refusal,
a reflex or a stop into a :class:`~afford_planner.skills.SkillError`, so that the skill ends at
that stage and the trial reports why.

When :meth:`GraphRobot.follow` returns, the arm is where the motion ended and the camera has
seen it there, as in the batch world (whose executor steps the physics until the motion is
done and renders the current state). Neither holds by itself in the graph: the trajectory
action succeeds when the controller's reference ends, while the arm still trails it (on
franky-sim by ``kv/kp`` = 0.1 s, 5-10 mm at the end of a lift), and the newest camera frame
can be older than that (2 fps and 0.4 s latency on a loaded sim machine). A skill that
looks at the held object right after a lift then measured it up to centimetres too low in the
hand and hung the mug's ring that much too high, onto the hook's lip. So ``follow`` waits for
the arm to come to rest on the motion's last point and, while a camera publishes, for a frame
taken after that. An arm that cannot reach the last point (held back by a contact) ends the
skill, as the batch world's executor does, instead of letting the next stage act on a state
the plan did not expect (open the hand over the hook's lip).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import CameraInfo, JointState
from std_msgs.msg import Empty
from trajectory_msgs.msg import JointTrajectory

from afford_core.robots import DEFAULT_ROBOT, RobotDescription, get_robot
from afford_interfaces.action import FollowTrajectory
from afford_interfaces.srv import Gripper
from afford_planner.skills import SkillError
from afford_ros import contract
from afford_ros.action_client import GoalSafeActionClient
from afford_ros.nodes.convert import trajectory_msg
from afford_ros.qos import qos_profile

#: How long the executor has to answer a trajectory goal (s); longer than the executor's
#: MAX_TRAJECTORY_AGE_S, so a goal answered later than this can no longer start.
GOAL_ANSWER_S = 10.0

#: A gap between the measured arm and a trajectory's first point larger than this (rad) is
#: closed by a short lead-in from where the arm really is, so the executor never sees a jump.
JOIN_GAP = 0.002
JOIN_SPEED = 0.3  # rad/s for that lead-in
#: After a motion the arm counts as arrived within this distance (rad, every joint) of the last
#: point, moving slower than ``REST_SPEED`` (rad/s); franky-sim settles within 0.5 mrad.
ARRIVED_GAP = 0.005
REST_SPEED = 0.02
#: An arm still this far (rad) from the last point when the settle time is over is held back
#: (the batch world's executor refuses to go on from the same gap).
STALL_GAP = 0.03




def wait_future(future: Future, timeout: float, what: str) -> Any:
    """Block this thread until ``future`` is done (another executor thread completes it)."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout):
        future.cancel()
        raise SkillError(f"{what}: no answer within {timeout:.0f} s")
    return future.result()


def _cancel_if_accepted(future: Future) -> None:
    handle = future.result() if not future.cancelled() else None
    if handle is not None and handle.accepted:
        handle.cancel_goal_async()


class GraphRobot:
    """Drives the executor node for a skill. ``node`` must spin in a multi-threaded executor.

    Attributes:
        max_state_age: Oldest /joint_states (s) the arm state may come from. An older one is
            not used: a fresh one is waited for up to ``state_wait`` s, and only a stream still
            silent then (the robot's state stream stopped) stops the skill.
        state_wait: Longest wait (s) for a fresh /joint_states when the last one is too old;
            on a loaded machine the executor's 100 Hz stream has gaps of half a second.
        timeout_margin: Seconds beyond a trajectory's duration before its result is given up.
        settle_timeout: Longest wait (s) after a motion for the arm to arrive at rest on its last
            point; an arm still ``STALL_GAP`` away then is held back and the skill stops.
        frame_timeout: Longest wait (s) after the arm arrived for a camera frame taken after
            that (only while a camera publishes); past it the skill goes on without one.
    """

    def __init__(
        self,
        node: Node,
        max_state_age: float = 0.5,
        state_wait: float = 2.0,
        timeout_margin: float = 10.0,
        settle_timeout: float = 2.0,
        frame_timeout: float = 2.0,
        robot: RobotDescription | str = DEFAULT_ROBOT,
    ) -> None:
        self.node = node
        self.description = get_robot(robot)
        self._joints = contract.arm_joints(self.description)
        self.max_state_age = max_state_age
        self.state_wait = state_wait
        self.timeout_margin = timeout_margin
        self.settle_timeout = settle_timeout
        self.frame_timeout = frame_timeout
        group = ReentrantCallbackGroup()
        self._lock = threading.Lock()
        self._state_came = threading.Condition(self._lock)
        self._q: np.ndarray | None = None
        self._dq: np.ndarray | None = None
        self._q_time = 0.0
        self._frame_stamp = -1.0  # ROS time (s) of the newest camera frame
        self._frame_seen = -1.0  # monotonic time it arrived
        node.create_subscription(
            JointState, "/joint_states", self._on_joints, qos_profile("sensor"), callback_group=group
        )
        # camera_info is published with every frame, carrying its stamp, and is tiny.
        node.create_subscription(
            CameraInfo,
            "/camera/color/camera_info",
            self._on_camera_info,
            qos_profile("sensor"),
            callback_group=group,
        )
        self._follow: Any = GoalSafeActionClient(
            node, FollowTrajectory, "/executor/follow_trajectory", callback_group=group
        )
        self._gripper: Any = node.create_client(Gripper, "/executor/gripper", callback_group=group)
        self.pub_trajectory = node.create_publisher(
            JointTrajectory, "/afford/trajectory", qos_profile("latched")
        )
        self._pub_stop = node.create_publisher(Empty, "/afford/stop", qos_profile("reliable"))
        self._goal: Any = None
        self.cancelled = False

    def _on_joints(self, msg: JointState) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        if not all(j in index for j in self._joints):
            return
        dq = None
        if len(msg.velocity) == len(msg.position):
            dq = np.array([msg.velocity[index[j]] for j in self._joints])
        with self._lock:
            self._q = np.array([msg.position[index[j]] for j in self._joints])
            self._dq = dq
            self._q_time = time.monotonic()
            self._state_came.notify_all()

    def _on_camera_info(self, msg: CameraInfo) -> None:
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        with self._lock:
            self._frame_stamp = max(self._frame_stamp, stamp)
            self._frame_seen = time.monotonic()

    def arm_q(self, wait: float | None = None) -> np.ndarray:
        """The measured arm joints, from a /joint_states at most ``max_state_age`` old.

        A state older than that is never returned: the next one is waited for (up to ``wait``
        s, by default ``state_wait``), since a gap of a few hundred ms in the stream is what a
        loaded machine does, not a robot that stopped reporting.

        Raises:
            SkillError: no /joint_states yet, or none fresh within the wait.
        """
        wait = self.state_wait if wait is None else wait
        end = time.monotonic() + wait
        with self._state_came:
            while True:
                q, t = self._q, self._q_time
                now = time.monotonic()
                if q is not None and now - t <= self.max_state_age:
                    return q.copy()
                if now >= end:
                    break
                self._state_came.wait(end - now)
        if q is None:
            raise SkillError("no /joint_states from the executor")
        raise SkillError(
            f"stale robot state: no /joint_states for {time.monotonic() - t:.2f} s "
            f"(waited {wait:.1f} s for one)"
        )

    def wait_for_state(self, timeout: float) -> np.ndarray:
        """:meth:`arm_q`, waiting up to ``timeout`` s for a fresh state (the first one too)."""
        return self.arm_q(wait=timeout)

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
        msg = trajectory_msg(times, qs, self.node.get_clock().now().to_msg(), self.description)
        self.pub_trajectory.publish(msg)
        if not self._follow.wait_for_server(timeout_sec=5.0):
            raise SkillError("the executor's follow_trajectory action is not available")
        goal = FollowTrajectory.Goal(trajectory=msg)
        heard = [time.monotonic()]

        def on_feedback(_msg: Any) -> None:
            heard[0] = time.monotonic()

        sent = self._follow.send_goal_async(goal, feedback_callback=on_feedback)
        answered = threading.Event()
        sent.add_done_callback(lambda _f: answered.set())
        if not answered.wait(GOAL_ANSWER_S):
            # The goal may still be with the executor (its answer late or lost on a loaded
            # machine): one accepted later is cancelled as soon as that answer comes, and the
            # stop halts one that runs unanswered. A start later than the executor's
            # MAX_TRAJECTORY_AGE_S is refused there.
            sent.add_done_callback(_cancel_if_accepted)
            self._pub_stop.publish(Empty())
            raise SkillError(
                f"follow_trajectory goal: no answer within {GOAL_ANSWER_S:.0f} s; the arm was stopped"
            )
        handle = sent.result()
        if not handle.accepted:
            raise SkillError("the executor refused the trajectory goal")
        self._goal = handle
        try:
            result = self._wait_result(handle, float(times[-1]), heard)
        finally:
            self._goal = None
        if not result.result.success:
            kind = f" ({result.result.error_kind})" if result.result.error_kind else ""
            raise SkillError(f"the executor stopped the motion{kind}: {result.result.message}")
        self.settle(qs[-1])

    def _wait_result(self, handle: Any, duration: float, heard: list[float]) -> Any:
        """The goal's result. The executor slows a trajectory to its dynamics limits (several
        times longer at a low dynamics factor) and franky-sim may run slower than real time, so
        the planned duration is no deadline: the goal is given up when its progress feedback
        (every 50 ms while it runs) stops for ``timeout_margin`` s, or after 20x its duration."""
        future = handle.get_result_async()
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        hard_end = time.monotonic() + 20.0 * duration + self.timeout_margin
        while not done.wait(0.05):
            now = time.monotonic()
            silent = now - heard[0] > self.timeout_margin
            if silent or now > hard_end:
                future.cancel()
                handle.cancel_goal_async()
                if silent:
                    raise SkillError(f"trajectory: no progress from the executor for {now - heard[0]:.0f} s")
                raise SkillError(
                    f"trajectory: not finished {20.0 * duration + self.timeout_margin:.0f} s after its start "
                    f"(20x its planned {duration:.1f} s, plus {self.timeout_margin:.0f} s): the robot or "
                    "its simulator runs far slower than planned"
                )
        return future.result()

    def settle(self, goal: np.ndarray) -> None:
        """Wait for the arm to rest on ``goal`` and for a camera frame of it (module docstring).

        Raises:
            SkillError: the arm stays ``STALL_GAP`` or more from ``goal`` (held back), or the
                skill was cancelled meanwhile.
        """
        end = time.monotonic() + self.settle_timeout
        while True:
            if self.cancelled:
                raise SkillError("cancelled")
            try:
                q = self.arm_q()
            except SkillError:
                # A gap in the state stream (a loaded machine) is waited out here; the skill
                # stops only if it lasts the whole settle time.
                if time.monotonic() > end:
                    raise
                time.sleep(0.01)
                continue
            with self._lock:
                dq = self._dq
            off = np.abs(q - goal)
            moving = dq is not None and float(np.max(np.abs(dq))) > REST_SPEED
            if float(off.max()) <= ARRIVED_GAP and not moving:
                break
            if time.monotonic() > end:
                if float(off.max()) >= STALL_GAP:
                    raise SkillError(
                        f"the arm cannot follow: joint {int(off.argmax()) + 1} stays "
                        f"{off.max():.2f} rad from the trajectory's end"
                    )
                break  # near enough; a slow settle is not a fault
            time.sleep(0.01)
        arrived = self.node.get_clock().now().nanoseconds * 1e-9
        end = time.monotonic() + self.frame_timeout
        while time.monotonic() < end:
            with self._lock:
                stamp, seen = self._frame_stamp, self._frame_seen
            if seen < 0 or time.monotonic() - seen > self.frame_timeout:
                return  # no camera publishing: nothing to wait for
            if stamp >= arrived:
                # The depth and label images of that frame follow its camera_info.
                time.sleep(0.05)
                return
            time.sleep(0.01)

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
        self._grip("open", self.description.gripper.max_width, 0.0)

    def close_gripper(self) -> None:
        self._grip("grasp", 0.0, self.description.gripper.grasp_force)

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)
