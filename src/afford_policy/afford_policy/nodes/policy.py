"""policy: a visuomotor policy on the robot, through the executor's checks.

Serves ``/policy/run`` (``afford_interfaces/action/RunPolicy``). For each goal it loads the
policy the goal names (:func:`afford_policy.serving.load_policy`: a LeRobot pretrained-policy
directory, or ``replay:<dataset>``), then every control period (the policy's training frame
rate):

1. takes the newest images of the policy cameras (``/policy_camera/front/image_raw``,
   ``/policy_camera/wrist/image_raw``; ``sim_world`` renders them when its
   ``policy_camera_width`` is set, a lab's drivers publish them on the real robot) and the
   newest ``/joint_states``; nothing older than ``max_input_age_s`` is acted on: the run waits
   for fresh ones, up to ``input_wait_s`` (before the first step, a camera that has not yet
   published since a scene reset; mid-run, a camera or state stream starved on a loaded
   machine), while the arm holds its last target (the stream lapses, and the next chunk starts
   from where the arm is, once it rests, as after any pause), and ends with the reason if they
   stay stale; an operator's stop
   (``/afford/stop``, heard here as well as by the executor) ends the run, waiting or not;
2. asks the policy for an action and gates it (:class:`afford_policy.serving.PolicyStepper`:
   8 finite values or the run ends with the arm unmoved; clipped to the joint limits less the
   margin, rate-limited to the velocity limits);
3. sends the joint target on ``/executor/joint_targets`` as a two-point chunk, from where the
   previous one sends the arm ``lead_s`` ahead to the target one period later (stamped: the
   executor re-times a chunk that comes too late for its first target), or, when the gripper
   command changes, waits for the arm to reach its last target, calls ``/executor/gripper``,
   waits for it and for the arm to come to rest, as the scripted skills and the batch-world
   rollout do (the stream lapses meanwhile; the next chunk starts a new one from where the arm
   is).

The executor checks every chunk against the joint, velocity and workspace limits, halts on
``/afford/stop``, and holds the arm when chunks stop coming. Any fault or refusal it reports on
``/afford/robot_error`` while the run streams ends the run with that reason (except the lapse a
gripper command causes, and franky's motion planner failing a small motion from rest, error
-111, after which the stream starts again from where the arm is once it rests, at most 3 times
a run); so does a cancel. The run's result says whether it ran its time out;
whether the task was achieved is judged by the caller (the task server asks the simulator).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Empty
from trajectory_msgs.msg import JointTrajectory

from afford_interfaces.action import RunPolicy
from afford_interfaces.msg import RobotError
from afford_interfaces.srv import Gripper
from afford_planner.skills import SkillError
from afford_policy.rollout import BadAction, Limits
from afford_policy.serving import (
    LEAD_S,
    SPEED_FRACTION,
    PolicyStepper,
    check_speed_limits,
    load_policy,
)
from afford_ros import contract
from afford_ros.nodes.convert import image_problem, msg_to_image, trajectory_msg
from afford_ros.nodes.executor import PLANNER_FAULT
from afford_ros.nodes.robot_link import wait_future
from afford_ros.nodes.spin import run_node
from afford_ros.qos import qos_profile

NODE_NAME = "policy"
T_FRONT = "/policy_camera/front/image_raw"
T_WRIST = "/policy_camera/wrist/image_raw"
#: A gripper command's stream lapse reported by the executor: expected, not a fault.
_LAPSE = "no joint targets for"
#: The detail of the run's first feedback (step 0), sent once the policy is loaded and its
#: inputs are fresh, before its first action: nothing moved the arm before it.
STARTED = "started: the policy acts from here on"
_OPERATOR_STOP = "the operator's stop (/afford/stop)"
#: A fault the stream may restart after (franky's planner, -111; the executor's own words for
#: it), at most MAX_REPLANS times a run, after a pause longer than the executor's
#: stream_timeout_s (0.5 s by default).
MAX_REPLANS = 3
_REPLAN_PAUSE_S = 0.7
#: Before a gripper command the arm gets this close (rad, every joint) to its last target ...
ARRIVED_RAD = 0.01
#: ... or this long (s) past the time it was due.
ARRIVE_TIMEOUT_S = 1.0
#: A chunk that starts from the arm as measured (after a gripper command, a pause, a wait for
#: inputs) waits until the arm rests: no joint moved more than this (rad) between two readings
#: SETTLE_WINDOW_S apart ... (an arm held in contact springs to its target when the hand lets
#: go; an arm that trails its targets catches up; either moves on between the reading and the
#: executor's check, and the chunk is refused as a jump from where the arm then is)
SETTLED_RAD = 1e-3
SETTLE_WINDOW_S = 0.1
#: ... looking this long (s) at a time, with a warning, before the run's checks (stop, cancel,
#: faults, inputs) and the next look.
SETTLE_TIMEOUT_S = 1.5
#: Feedback at most this often (s).
_FEEDBACK_EVERY_S = 1.0


class RunEnded(Exception):
    """Ends a run early; the text is the result's message."""


class InputsStale(RunEnded):
    """An input is missing or older than ``max_input_age_s``: worth waiting for, unlike an
    unusable image or a state without the finger opening."""


def _qos(name: str) -> Any:
    return qos_profile(contract.topic(name).qos)


class PolicyNode(Node):
    """See the module docstring."""

    def __init__(self, **node_kwargs: Any) -> None:
        super().__init__(NODE_NAME, **node_kwargs)
        d = ParameterDescriptor
        self.declare_parameter("robot", "fr3", d(description="The robot the policy drives (afford robots)."))
        self.declare_parameter(
            "max_input_age_s", 1.0,
            d(description="Oldest camera image or joint state a step may act on (s); an older one is "
              "never acted on (see input_wait_s)."),
        )
        self.declare_parameter(
            "input_wait_s", 10.0,
            d(description="Longest wait (s) for fresh images and joint states, before the first step or "
              "when they lapse mid-run (the arm holds meanwhile); still stale then, the run ends."),
        )
        self.declare_parameter(
            "joint_margin", 0.05,
            d(description="Joint targets stay this far inside the joint limits (rad), as the executor's."),
        )
        self.declare_parameter(
            "gripper_timeout_s", 15.0, d(description="Longest wait for a gripper command (s).")
        )
        self.declare_parameter(
            "speed_fraction", SPEED_FRACTION,
            d(description="Fraction of the robot's joint speed limits the streamed targets may use; "
              "keep it under what the executor's driver follows without slowing a chunk."),
        )
        self.declare_parameter(
            "joint_speed_limits", [0.0],
            d(description="Joint speeds (rad/s) the streamed targets may use, one per joint, instead of "
              "speed_fraction; [0.0]: not set."),
        )
        self.declare_parameter(
            "lead_s", LEAD_S,
            d(description="How far ahead (s) a chunk's first target lies: above the worst delivery delay."),
        )
        self.robot = str(self.get_parameter("robot").value)
        self.max_age = float(self.get_parameter("max_input_age_s").value)
        if not 0.05 <= self.max_age <= 10.0:
            raise ValueError(f"max_input_age_s must be in [0.05, 10], got {self.max_age}")
        self.input_wait = float(self.get_parameter("input_wait_s").value)
        if not 0.0 <= self.input_wait <= 120.0:
            raise ValueError(f"input_wait_s must be in [0, 120], got {self.input_wait}")
        self.gripper_timeout = float(self.get_parameter("gripper_timeout_s").value)
        self.lead = float(self.get_parameter("lead_s").value)
        self.speed_fraction = float(self.get_parameter("speed_fraction").value)
        self.limits = Limits(self.robot, float(self.get_parameter("joint_margin").value))
        speeds = [float(v) for v in self.get_parameter("joint_speed_limits").value or []]
        # Checked at start, not at the first goal.
        self.speed_limits = None if speeds in ([], [0.0]) else check_speed_limits(speeds, self.limits)
        self.arm_joints = list(contract.arm_joints(self.robot))
        self.width_joint = contract.finger_width_joint(self.robot)
        from afford_core.robots import get_robot

        self.gripper = get_robot(self.robot).gripper
        inputs = MutuallyExclusiveCallbackGroup()
        self._lock = threading.Lock()
        self._images: dict[str, tuple[float, Image]] = {}
        self._joints: tuple[float, np.ndarray, float] | None = None
        self._errors: list[tuple[float, str, str]] = []
        self._grips: list[tuple[float, float]] = []  # (start, end) of this run's gripper commands
        for topic in (T_FRONT, T_WRIST):
            self.create_subscription(
                Image, topic, lambda m, t=topic: self._on_image(t, m), _qos(topic), callback_group=inputs
            )
        self.create_subscription(JointState, "/joint_states", self._on_joints, _qos("/joint_states"),
                                 callback_group=inputs)
        self.create_subscription(RobotError, "/afford/robot_error", self._on_error,
                                 _qos("/afford/robot_error"), callback_group=inputs)
        # The operator's stop, heard here too: the executor reports one only while a stream runs,
        # and a run waiting for fresh inputs streams nothing, yet must not go on after a stop.
        self.create_subscription(Empty, "/afford/stop", self._on_stop, _qos("/afford/stop"),
                                 callback_group=inputs)
        self.pub_targets = self.create_publisher(
            JointTrajectory, "/executor/joint_targets", _qos("/executor/joint_targets")
        )
        group = ReentrantCallbackGroup()
        self.gripper_client: Any = self.create_client(Gripper, "/executor/gripper", callback_group=group)
        self._busy = threading.Lock()
        self._server = ActionServer(
            self, RunPolicy, "/policy/run", execute_callback=self._on_goal,
            goal_callback=self._accept, cancel_callback=lambda _g: CancelResponse.ACCEPT,
            callback_group=group,
        )
        self.get_logger().info(f"policy node ready for {self.robot}: /policy/run")

    # Inputs -------------------------------------------------------------------------------------

    def _on_image(self, topic: str, msg: Image) -> None:
        with self._lock:
            self._images[topic] = (time.monotonic(), msg)

    def _on_joints(self, msg: JointState) -> None:
        pos = dict(zip(msg.name, msg.position, strict=False))
        if any(j not in pos for j in self.arm_joints):
            return
        q = np.array([pos[j] for j in self.arm_joints], dtype=np.float64)
        width = float(pos.get(self.width_joint, float("nan")))
        with self._lock:
            self._joints = (time.monotonic(), q, width)

    def _on_stop(self, _msg: Empty) -> None:
        with self._lock:
            self._errors.append((time.monotonic(), "stopped", _OPERATOR_STOP))
            del self._errors[:-50]

    def _on_error(self, msg: RobotError) -> None:
        with self._lock:
            self._errors.append((time.monotonic(), str(msg.kind), str(msg.message)))
            del self._errors[:-50]

    def _inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """The newest images and joints, or RunEnded saying what is missing or stale."""
        now = time.monotonic()
        with self._lock:
            images = dict(self._images)
            joints = self._joints
        out = []
        for topic in (T_FRONT, T_WRIST):
            if topic not in images:
                raise InputsStale(f"no image on {topic}: is a policy camera publishing? (sim_world: set "
                               "policy_camera_width and policy_camera_height; `afford bringup "
                               "fr3_sim_policy` does)")
            t, msg = images[topic]
            if now - t > self.max_age:
                raise InputsStale(f"{topic} silent for {now - t:.1f} s (limit {self.max_age:.1f} s)")
            problem = image_problem(msg)
            if problem or msg.encoding != "rgb8":
                raise RunEnded(f"{topic}: unusable image ({problem or f'encoding {msg.encoding}, not rgb8'})")
            out.append(np.ascontiguousarray(msg_to_image(msg)))
        q, width = self._joints_now(now, joints)
        return out[0], out[1], q, width

    def _joints_now(self, now: float | None = None, joints: tuple[float, np.ndarray, float] | None = None
                    ) -> tuple[np.ndarray, float]:
        """The newest arm joints and finger opening, or RunEnded when missing or stale (the
        gripper phase reads only these: a camera stall then is no reason to end)."""
        if now is None:
            now = time.monotonic()
            with self._lock:
                joints = self._joints
        if joints is None:
            raise InputsStale("no /joint_states with the arm's joints: is the executor running?")
        t, q, width = joints
        if now - t > self.max_age:
            raise InputsStale(f"/joint_states silent for {now - t:.1f} s (limit {self.max_age:.1f} s)")
        if not np.isfinite(width):
            raise RunEnded(f"/joint_states carries no {self.width_joint}: the policy needs the opening")
        return q, width

    def _fresh_inputs(
        self, goal_handle: Any, when: str, since: float
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, float], bool]:
        """:meth:`_inputs` once they are all fresh, waiting up to ``input_wait_s`` for missing or
        stale ones (:class:`InputsStale`; other faults end the run at once), and whether it
        waited. A cancel, or a stop or fault reported since ``since``, ends the wait; past it,
        the reason the last look gave, and ``when`` (which step) with it."""
        end = time.monotonic() + self.input_wait
        waited = False
        while True:
            try:
                return self._inputs(), waited
            except InputsStale as err:
                if goal_handle.is_cancel_requested:
                    raise RunEnded("cancelled") from None
                fault = self._fault_since(since)
                if fault:
                    raise RunEnded(f"{fault} (while it waited for fresh inputs {when})") from None
                if time.monotonic() >= end:
                    raise RunEnded(f"{err} (waited {self.input_wait:.0f} s {when})") from None
            waited = True
            time.sleep(0.05)

    def _fault_since(self, t0: float) -> str:
        with self._lock:
            errors = [e for e in self._errors if e[0] >= t0]
            grips = list(self._grips)
        for t, kind, message in errors:
            if kind == "stopped" and message.startswith(_LAPSE):
                continue
            if message.startswith("gripper ") and any(a <= t <= b + 0.5 for a, b in grips):
                continue  # about our own gripper command, whose failure _grip has taken
            if message == _OPERATOR_STOP:
                return f"halted by {_OPERATOR_STOP}"
            return f"the executor reported {kind}: {message}"
        return ""

    # The run -------------------------------------------------------------------------------------

    def _accept(self, _goal: RunPolicy.Goal) -> GoalResponse:
        if self._busy.locked():
            self.get_logger().warning("rejecting a goal: a policy is already running")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _on_goal(self, goal_handle: Any) -> RunPolicy.Result:
        with self._busy:
            result = RunPolicy.Result(success=False, steps=0)
            try:
                self._run(goal_handle, result)
            except RunEnded as err:
                result.message = str(err)
            except Exception as err:  # noqa: BLE001 - a node answers every goal
                self.get_logger().error(f"policy run failed: {err!r}")
                result.message = f"internal error: {type(err).__name__}: {err}"
            if result.success:
                goal_handle.succeed()
            elif goal_handle.is_cancel_requested:
                goal_handle.canceled()
            else:
                self.get_logger().warning(f"policy run ended: {result.message}")
                goal_handle.abort()
            return result

    def _feedback(self, goal_handle: Any, step: int, elapsed: float, detail: str) -> None:
        goal_handle.publish_feedback(RunPolicy.Feedback(step=step, elapsed_s=elapsed, detail=detail))

    def _run(self, goal_handle: Any, result: RunPolicy.Result) -> None:
        goal = goal_handle.request
        try:
            loaded = load_policy(goal.policy, int(goal.seed))
        except (OSError, KeyError, ValueError) as err:
            raise RunEnded(f"policy {goal.policy!r}: {err}") from None
        if not (np.isfinite(goal.max_seconds) and goal.max_seconds >= 0):
            raise RunEnded(f"max_seconds must be >= 0, got {goal.max_seconds}")
        seconds = float(goal.max_seconds) or loaded.max_seconds
        instruction = goal.instruction.strip() or loaded.instruction
        (front, wrist, q, width), _ = self._fresh_inputs(goal_handle, "before the first step",
                                                         time.monotonic())
        stepper = PolicyStepper(loaded, self.limits, q, time.monotonic(), lead_s=self.lead,
                                speed_fraction=self.speed_fraction, speed_limits=self.speed_limits)
        bad = stepper.check_images(front, wrist)
        if bad:
            raise RunEnded(bad)
        period = stepper.period
        self.get_logger().info(
            f"running {loaded.name} at {loaded.fps} Hz for {seconds:.1f} s: {instruction!r}"
        )
        # Step 0, before anything is sent: the arm may move from here on. The task server
        # watches the cameras from this feedback (loading a policy can starve a busy machine's
        # renderer for seconds while nothing moves).
        self._feedback(goal_handle, 0, 0.0, STARTED)
        # Runs start with the hand open, as the demonstrations did (a scene reset opens it): the
        # first close the policy asks for is sent, an "open" before it is not.
        closed = False
        with self._lock:
            self._grips.clear()
        t0 = time.monotonic()
        next_t, said, watched_from = t0, t0, t0
        step = replans = 0
        settled = False  # the arm was seen at rest, and no chunk went out since

        def interrupted() -> bool:
            return goal_handle.is_cancel_requested or bool(self._fault_since(watched_from))
        while time.monotonic() - t0 < seconds:
            if goal_handle.is_cancel_requested:
                raise RunEnded("cancelled")
            fault = self._fault_since(watched_from)
            if fault and PLANNER_FAULT in fault and replans < MAX_REPLANS:
                # franky's motion planner (Ruckig) now and then fails a small motion that starts
                # from rest (error -111): the executor has halted the arm and takes a new stream
                # once the sender has paused; go on from where the arm is.
                replans += 1
                self.get_logger().warning(f"step {step}: {fault}; pausing, then streaming again "
                                          f"({replans} of {MAX_REPLANS})")
                time.sleep(_REPLAN_PAUSE_S)
                stepper.resync()
                watched_from = next_t = time.monotonic()
                continue
            if fault:
                raise RunEnded(f"step {step}: {fault}")
            (front, wrist, q, width), waited = self._fresh_inputs(goal_handle, f"at step {step}",
                                                                  watched_from)
            if waited:
                # The arm held its last target meanwhile. Back to the checks above (a fault may
                # have come meanwhile), then on from where the arm is (the stepper starts the
                # next chunk from the measured arm after a pause).
                self.get_logger().warning(f"step {step}: inputs were stale; waited for fresh ones")
                next_t = time.monotonic()
                continue
            if stepper.resync_due(time.monotonic()) and not settled:
                # This step's chunk would start from the arm as measured: only once it rests.
                # An arm that trails its targets (a simulator slower than real time, an executor
                # running the stream behind its stamps) moves on between this reading and the
                # executor's check of the chunk, which then starts short of where the arm is
                # and of where it is sent (CI: 0.353 rad, refused). Then fresh inputs (or, still
                # moving, the checks above and another look).
                settled = self._settle(interrupted)
                next_t = time.monotonic()
                continue
            obs = stepper.observation(front, wrist, q, width, instruction)
            action = stepper.act(obs)
            if stepper.resync_due(time.monotonic()) and not settled:
                # The answer took the pause past RESYNC_S: the same rule, and the action stands
                # (the chunk starts from a reading of the arm at rest, taken after it).
                if not self._settle(interrupted):
                    next_t = time.monotonic()
                    continue
                settled = True
                q, _ = self._joints_now()
            now_ns = self.get_clock().now().nanoseconds  # the chunk counts from after the answer
            try:
                gated, chunk = stepper.send(action, time.monotonic(), q)
            except BadAction as err:
                raise RunEnded(f"step {step}: {err}") from None
            if gated.closed != closed:
                # As the scripted skills (and the batch-world rollout) do: the hand moves while
                # the arm holds, then the policy goes on from where the arm is.
                closed = gated.closed
                self._arrive(stepper.target, stepper.arrives_at)
                self._grip(closed)
                # The stream lapses meanwhile (the executor's report of that is no fault): the
                # next chunk starts a new one from where the arm is then, once it rests.
                stepper.resync()
                settled = self._settle(interrupted)
                next_t = time.monotonic()
            elif chunk is not None:  # None: a hold; the executor holds the last target
                stamp = Time(sec=now_ns // 1_000_000_000, nanosec=now_ns % 1_000_000_000)
                self.pub_targets.publish(trajectory_msg(*chunk, stamp, self.robot))
                settled = False
            step += 1
            result.steps = step
            now = time.monotonic()
            if now - said >= _FEEDBACK_EVERY_S:
                said = now
                self._feedback(goal_handle, step, now - t0,
                               f"gripper {'closed' if closed else 'open'}; {stepper.clipped} clipped, "
                               f"{stepper.rate_limited} rate-limited")
            next_t += period
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_t = time.monotonic()  # slower than the control rate: the next step at once
        fault = self._fault_since(watched_from)
        if fault:
            raise RunEnded(f"step {step}: {fault}")
        result.success = True
        result.message = (
            f"ran {step} steps in {time.monotonic() - t0:.1f} s; {stepper.clipped} targets clipped to "
            f"the joint limits, {stepper.rate_limited} rate-limited"
            + (f"; the driver's planner failed {replans} time(s), the stream restarted" if replans else "")
        )

    def _arrive(self, target: np.ndarray, due: float) -> None:
        """Wait until the arm is where it was last sent (the target due at ``due``, within
        ARRIVED_RAD; at most ARRIVE_TIMEOUT_S past it): the scripted skills close the hand
        after the approach has ended, and the demonstrations did too."""
        time.sleep(max(0.0, due - time.monotonic()))
        end = time.monotonic() + ARRIVE_TIMEOUT_S
        while time.monotonic() < end:
            q, _ = self._joints_now()
            if np.max(np.abs(q - target)) < ARRIVED_RAD:
                return
            time.sleep(0.02)

    def _settle(self, interrupted: Callable[[], bool]) -> bool:
        """Wait until the arm rests: two readings of ``/joint_states`` received at least
        :data:`SETTLE_WINDOW_S` apart differ by under :data:`SETTLED_RAD` on every joint (the
        same message read twice proves nothing: a starved subscription looks still). False, with
        a warning, when it has not rested within :data:`SETTLE_TIMEOUT_S`, or at once when
        ``interrupted()`` (a stop, a fault or a cancel: the caller's checks say which)."""
        end = time.monotonic() + SETTLE_TIMEOUT_S
        with self._lock:
            before = self._joints
        while time.monotonic() < end:
            time.sleep(SETTLE_WINDOW_S / 2)
            if interrupted():
                return False
            with self._lock:
                now = self._joints
            if now is None:
                continue
            if before is None or now[0] - before[0] < SETTLE_WINDOW_S:
                before = before or now
                continue
            if np.max(np.abs(now[1] - before[1])) < SETTLED_RAD:
                return True
            before = now
        self.get_logger().warning(
            f"the arm is still moving {SETTLE_TIMEOUT_S:.1f} s on: not yet streaming from where it is")
        return False

    def _grip(self, closed: bool) -> None:
        if not self.gripper_client.wait_for_service(timeout_sec=5.0):
            raise RunEnded("the executor's gripper service is not available")
        request = (Gripper.Request(command="grasp", width=0.0, force=self.gripper.grasp_force) if closed
                   else Gripper.Request(command="open", width=self.gripper.max_width, force=0.0))
        start = time.monotonic()
        try:
            res = wait_future(self.gripper_client.call_async(request), self.gripper_timeout,
                              f"gripper {request.command}")
        except SkillError as err:
            raise RunEnded(str(err)) from None
        finally:
            with self._lock:
                self._grips.append((start, time.monotonic()))
        if not res.success:
            # A grasp that closes on nothing (franky-sim: "Command failed!") is the policy's own
            # mistake, not a fault of the arm: it goes on, and the task's check judges the outcome.
            self.get_logger().info(f"gripper {request.command}: {res.message}")


def main(argv: list[str] | None = None) -> int:
    return run_node(PolicyNode, argv, threads=4)


if __name__ == "__main__":
    sys.exit(main())
