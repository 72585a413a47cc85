"""The executor node: the only node that commands the robot (DESIGN.md sections 2 and 8).

A thin shell over a driver (:mod:`afford_ros.drivers`: franky to the FR3 or franky-sim, or joint
commands on a topic for Isaac Sim) and :mod:`afford_planner.safety` (limit checks) for the robot
named by ``robot`` (its description: joints, limits, gripper). It

- publishes ``/joint_states`` (the arm joints and ``<robot>_finger_width``) at ``state_rate_hz``
  when the driver reads the robot itself (franky); with the topic driver the world publishes them;
- serves ``/executor/follow_trajectory``: every trajectory passes the limit checks first; a
  refused one never reaches the robot and is reported on ``/afford/robot_error`` as ``limit``;
  a cancel halts the motion; feedback is the fraction of the duration done;
- takes a stream of joint targets on ``/executor/joint_targets`` (chunks of a policy's actions
  at its control rate; point times from the header stamp, or from arrival without one): the
  part of a chunk already in the past is dropped (a chunk delayed on a busy machine), the rest
  passes the same limit checks, against the stream's own setpoint now (the arm lags its
  setpoint; a jump is measured from where it is being sent) or the measured joints when idle,
  and replaces the chunk running; a refused chunk halts the arm; once the last target is
  reached the arm holds it, and when no chunk has come for ``stream_timeout_s`` past the last
  target the stream is reported ended;
- halts any motion or stream at once on ``/afford/stop`` and aborts the running goal;
- serves ``/executor/gripper`` (checked width and force) and ``/executor/recover``;
- after a reflex, refuses every motion (arm, stream and gripper) until ``/executor/recover`` is
  called: recovery is an explicit operator action, never automatic.

Threads. A multi-threaded executor serves the stop subscription, the state timer, the services,
the stream and the action in separate callback groups, so a stop is handled while a trajectory
runs.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Empty, Header
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from afford_core.robots import DEFAULT_ROBOT, get_robot
from afford_interfaces.action import FollowTrajectory
from afford_interfaces.msg import RobotError
from afford_interfaces.srv import Gripper
from afford_planner.robot_model import RobotModel
from afford_planner.safety import SafetyChecker, SafetyConfig
from afford_ros import contract
from afford_ros.drivers import DRIVERS, Driver
from afford_ros.nodes.spin import run_node
from afford_ros.params import declare_config, read_config
from afford_ros.qos import qos_profile


def _qos(topic: str) -> QoSProfile:
    """The contract's QoS for one of its topics."""
    return qos_profile(contract.topic(topic).qos)


def _setpoint(stream: tuple[np.ndarray, np.ndarray], now: float) -> np.ndarray:
    """Where a stream's chunk sends the arm at monotonic time ``now`` (linear between targets;
    its first target before it, its last after)."""
    at, qs = stream
    return np.array([np.interp(now, at, qs[:, j]) for j in range(qs.shape[1])])


def trajectory_arrays(
    msg: JointTrajectory, joints: tuple[str, ...] = contract.ARM_JOINTS
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(times, positions (T, n), velocities or None) of a JointTrajectory, in ``joints`` order.

    Raises ValueError when the arm joints are missing or a point has the wrong number of values.
    """
    names = list(msg.joint_names)
    missing = [j for j in joints if j not in names]
    if missing:
        raise ValueError(f"trajectory lacks joints {missing} (has {names})")
    order = [names.index(j) for j in joints]
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
    rows, vel_rows = [], []
    for k, p in enumerate(msg.points):
        if len(p.positions) != len(names):
            raise ValueError(f"point {k} has {len(p.positions)} positions for {len(names)} joints")
        rows.append([p.positions[i] for i in order])
        if len(p.velocities) == len(names):
            vel_rows.append([p.velocities[i] for i in order])
    positions = np.array(rows, dtype=np.float64).reshape(len(rows), len(joints))
    velocities = np.array(vel_rows, dtype=np.float64) if rows and len(vel_rows) == len(rows) else None
    return times, positions, velocities


_STREAM_LEAD = 0.02
"""Seconds ahead a streamed target must be to be taken (a control period at 50 Hz)."""
#: Parameters the node hands its driver (each driver reads the ones it needs).
_DRIVER_PARAMS = ("robot_ip", "dynamics_factor", "enforce_realtime", "joint_command_topic", "state_timeout_s")


class ExecutorNode(Node):
    """Runs checked trajectories, streams and gripper commands; publishes joint states and errors."""

    def __init__(self) -> None:
        super().__init__("executor")
        d = ParameterDescriptor
        self.declare_parameter(
            "robot",
            DEFAULT_ROBOT,
            d(description="The robot (afford robots): its joints, limits and gripper; the FR3 by default."),
        )
        self.declare_parameter(
            "robot_ip",
            "127.0.0.1",
            d(description="FCI address of the FR3, or franky-sim's loopback address."),
        )
        self.declare_parameter(
            "backend",
            "",
            d(description=f"The driver: {', '.join(DRIVERS.names())}; empty: the robot's own drive "
              "(franky for the FR3; joint_command_topic for Isaac Sim)."),
        )
        self.declare_parameter(
            "joint_command_topic",
            "/isaac_joint_commands",
            d(description="Topic the joint_command_topic backend publishes JointState commands on."),
        )
        self.declare_parameter(
            "dynamics_factor",
            0.15,
            d(description="franky's relative dynamics factor in (0, 1]; trajectories are slowed to fit it."),
        )
        # The limit checks: SafetyConfig's fields as safety.* (the gripper's width and force
        # limits are its description's; a config may only tighten them, in code).
        declare_config(self, SafetyConfig, "safety")
        self.declare_parameter(
            "state_rate_hz", 100.0, d(description="Rate of /joint_states (franky backend).")
        )
        self.declare_parameter(
            "state_timeout_s",
            2.0,
            d(description="joint_command_topic backend: how long a goal waits for /joint_states no older "
              "than 0.5 s before it is refused as a communication fault."),
        )
        self.declare_parameter(
            "stream_timeout_s",
            0.5,
            d(description="A joint-target stream counts as ended when no chunk has come this long after "
              "its last target (the arm holds that target)."),
        )
        self.declare_parameter(
            "connect_timeout_s",
            60.0,
            d(description="How long to keep trying to reach the robot at start (a booting FR3 or "
              "franky-sim still starting refuses connections for a while)."),
        )
        self.declare_parameter(
            "enforce_realtime",
            False,
            d(description="Refuse to connect without a real-time kernel (set it in the lab, not in sim)."),
        )
        p = self.get_parameter
        self.robot = get_robot(str(p("robot").value))
        backend = str(p("backend").value) or self.robot.drive
        if backend not in DRIVERS:
            raise ValueError(f"backend must be one of {DRIVERS.names()}, got {backend!r}")
        state_timeout = float(p("state_timeout_s").value)
        if not 0.0 <= state_timeout <= 30.0:
            raise ValueError(f"state_timeout_s must be in [0, 30], got {state_timeout}")
        rate = float(p("state_rate_hz").value)
        if not 1.0 <= rate <= 1000.0:
            raise ValueError(f"state_rate_hz must be in [1, 1000], got {rate}")
        self._stream_timeout = float(p("stream_timeout_s").value)
        if not 0.05 <= self._stream_timeout <= 10.0:
            raise ValueError(f"stream_timeout_s must be in [0.05, 10], got {self._stream_timeout}")
        self.safety = SafetyChecker(read_config(self, SafetyConfig, "safety"), RobotModel(self.robot))
        self.backend = backend
        self._arm_joints = contract.arm_joints(self.robot)
        self._lock = threading.Lock()
        self._busy = False
        self._needs_recovery = False
        self._stop_requested = threading.Event()
        self._comm_fault = False
        self._recovery_generation = 0
        # The accepted chunk: its targets at monotonic times; None when no stream runs.
        self._stream: tuple[np.ndarray, np.ndarray] | None = None

        state_group = MutuallyExclusiveCallbackGroup()
        stop_group = MutuallyExclusiveCallbackGroup()
        service_group = MutuallyExclusiveCallbackGroup()
        stream_group = MutuallyExclusiveCallbackGroup()
        # Reentrant: the action's cancel callback must run while its execute callback is busy.
        action_group = ReentrantCallbackGroup()

        self.pub_error = self.create_publisher(RobotError, "/afford/robot_error", _qos("/afford/robot_error"))
        params = {name: p(name).value for name in _DRIVER_PARAMS}
        self.driver: Driver = DRIVERS.get(backend)(self, self.robot, params, state_group)
        self.driver.connect(float(p("connect_timeout_s").value))
        if self.driver.publishes_state:
            self.pub_state = self.create_publisher(JointState, "/joint_states", _qos("/joint_states"))
            self.create_timer(1.0 / rate, self._publish_state, callback_group=state_group)

        self.create_subscription(
            Empty, "/afford/stop", self._on_stop, _qos("/afford/stop"), callback_group=stop_group
        )
        self.create_subscription(
            JointTrajectory,
            "/executor/joint_targets",
            self._on_targets,
            _qos("/executor/joint_targets"),
            callback_group=stream_group,
        )
        self.create_timer(0.05, self._watch_stream, callback_group=stream_group)
        self.create_service(Gripper, "/executor/gripper", self._on_gripper, callback_group=service_group)
        self.create_service(Trigger, "/executor/recover", self._on_recover, callback_group=service_group)
        self._action = ActionServer(
            self,
            FollowTrajectory,
            "/executor/follow_trajectory",
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _handle: CancelResponse.ACCEPT,
            callback_group=action_group,
        )
        self.get_logger().info(
            f"executor ready: robot={self.robot.name} backend={backend} robot_ip={p('robot_ip').value} "
            f"dynamics_factor={p('dynamics_factor').value}"
        )

    # ------------------------------------------------------------------ helpers
    def _report(self, kind: str, message: str, needs_recovery: bool = False) -> None:
        msg = RobotError(header=Header(stamp=self.get_clock().now().to_msg()))
        msg.kind, msg.message, msg.needs_recovery = kind, message, needs_recovery
        self.pub_error.publish(msg)
        # rclpy ties a severity to each call site, so each severity gets its own call.
        if kind in ("reflex", "communication"):
            self.get_logger().error(f"{kind}: {message}")
        else:
            self.get_logger().warning(f"{kind}: {message}")

    def _publish_state(self) -> None:
        with self._lock:
            generation = self._recovery_generation
        try:
            s = self.driver.read()
        except Exception as exc:  # noqa: BLE001 - any failure to read the robot is a communication fault
            if not self._comm_fault:
                self._comm_fault = True
                self._report("communication", f"cannot read the robot state: {exc}")
            return
        self._comm_fault = False
        frame = contract.base_frame(self.robot)
        msg = JointState(header=Header(stamp=self.get_clock().now().to_msg(), frame_id=frame))
        msg.name = [*self._arm_joints, contract.finger_width_joint(self.robot)]
        msg.position = [*(float(v) for v in s.q), s.gripper_width]
        msg.velocity = [*(float(v) for v in s.dq), 0.0]
        self.pub_state.publish(msg)
        if s.in_reflex:
            with self._lock:
                # A reading that overlapped a recovery may predate it: it must not re-latch.
                if generation != self._recovery_generation:
                    return
                new = not self._needs_recovery
                self._needs_recovery = True
                self._stream = None
            if new:
                self._report("reflex", "the robot reports reflex mode", needs_recovery=True)

    # ------------------------------------------------------------------ stop
    def _on_stop(self, _msg: Empty) -> None:
        t0 = time.monotonic()
        self._stop_requested.set()
        with self._lock:
            streaming = self._stream is not None
            self._stream = None
        try:
            self.driver.stop()
        except Exception as exc:  # noqa: BLE001 - the stop must not die on a second fault
            self._report("communication", f"stop failed: {exc}")
        with self._lock:
            busy = self._busy or streaming
        took = (time.monotonic() - t0) * 1000.0
        # The monotonic stamp lets a benchmark on the same machine time the stop's delivery.
        self.get_logger().info(
            f"stop {'sent' if busy else 'received while idle'} ({took:.1f} ms to command it, "
            f"received at monotonic {t0:.4f})"
        )

    # ------------------------------------------------------------------ streamed joint targets
    def _on_targets(self, msg: JointTrajectory) -> None:
        """One chunk of joint targets (module docstring): checked, then it replaces the running one."""
        with self._lock:
            refused = (
                "a trajectory is running" if self._busy
                else "reflex not recovered; call /executor/recover" if self._needs_recovery
                else ""
            )
            running = self._stream
        if refused:
            self._report("limit", f"joint targets refused: {refused}")
            return
        now = time.monotonic()
        try:
            times, qs, _ = trajectory_arrays(msg, self._arm_joints)
            if len(times) == 0:
                raise ValueError("the chunk has no points")
            stamp = msg.header.stamp
            if stamp.sec or stamp.nanosec:
                age = (self.get_clock().now() - Time.from_msg(stamp)).nanoseconds * 1e-9
                if age < -0.5:
                    raise ValueError(f"the chunk is stamped {-age:.2f} s in the future (clocks differ?)")
                times = times - age
            # A target due sooner than the lead cannot be reached smoothly (and would read as a
            # jump from the setpoint): only the ones after it are taken.
            keep = times > _STREAM_LEAD
            if not keep.any():
                self.get_logger().warning(
                    f"joint targets dropped: the chunk's last target was due {-times[-1]:.3f} s ago"
                )
                return
            times, qs = times[keep], qs[keep]
            # The jump is measured from where the arm is being sent now (the stream's setpoint),
            # or from where it is when no stream runs.
            q_ref = _setpoint(running, now) if running is not None else self.driver.current_q()
        except Exception as exc:  # noqa: BLE001 - a malformed chunk or no state: refuse, never guess
            self._halt_stream(f"joint targets refused: {exc}")
            return
        verdict = self.safety.check_trajectory(times, qs, q_ref)
        if not verdict.ok:
            self._halt_stream(f"joint targets refused ({verdict.check}): {verdict.message}")
            return
        self._stop_requested.clear()
        try:
            self.driver.stream(times, qs)
        except Exception as exc:  # noqa: BLE001 - the driver could not start it: halt, report
            self._halt_stream(f"joint targets not started: {exc}", kind="communication")
            return
        with self._lock:
            self._stream = (now + times, qs)

    def _halt_stream(self, message: str, kind: str = "limit") -> None:
        with self._lock:
            streaming = self._stream is not None
            self._stream = None
        if streaming:
            try:
                self.driver.stop()  # a stream that went wrong does not run on to its end
            except Exception as exc:  # noqa: BLE001
                message += f"; the stop failed too: {exc}"
        self._report(kind, message)

    def _watch_stream(self) -> None:
        with self._lock:
            ended = self._stream is not None and time.monotonic() > self._stream[0][-1] + self._stream_timeout
            if ended:
                self._stream = None
        if ended:
            idle = f"{self._stream_timeout:.2f} s"
            self._report("stopped", f"no joint targets for {idle}: the arm holds the last one")

    # ------------------------------------------------------------------ trajectories
    def _finish(self, goal_handle: Any, ok: bool, message: str, kind: str, canceled: bool = False) -> Any:
        result = FollowTrajectory.Result(success=ok, message=message, error_kind=kind)
        if ok:
            goal_handle.succeed()
        elif canceled:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return result

    def _execute(self, goal_handle: Any) -> Any:
        with self._lock:
            if self._busy:
                return self._finish(goal_handle, False, "another trajectory is running", "limit")
            if self._needs_recovery:
                return self._finish(
                    goal_handle, False, "refused: reflex not recovered; call /executor/recover", "reflex"
                )
            if self._stream is not None:
                return self._finish(goal_handle, False, "joint targets are streaming", "limit")
            self._busy = True
        try:
            return self._run(goal_handle)
        finally:
            with self._lock:
                self._busy = False

    def _run(self, goal_handle: Any) -> Any:
        self._stop_requested.clear()
        try:
            times, qs, vels = trajectory_arrays(goal_handle.request.trajectory, self._arm_joints)
        except ValueError as exc:
            self._report("limit", f"trajectory refused: {exc}")
            return self._finish(goal_handle, False, str(exc), "limit")
        try:
            q_now = self.driver.current_q()
        except Exception as exc:  # noqa: BLE001 - no state to check against: refuse, never guess
            self._report("communication", f"trajectory refused: {exc}")
            return self._finish(goal_handle, False, str(exc), "communication")
        verdict = self.safety.check_trajectory(times, qs, q_now, vels)
        if not verdict.ok:
            text = f"trajectory refused ({verdict.check}): {verdict.message}"
            self._report("limit", text)
            return self._finish(goal_handle, False, text, "limit")

        feedback = FollowTrajectory.Feedback()

        def progress(value: float) -> None:
            feedback.progress = float(value)
            goal_handle.publish_feedback(feedback)

        def should_stop() -> bool:
            return bool(goal_handle.is_cancel_requested or self._stop_requested.is_set())

        kind, message = self.driver.follow(times, qs, vels, should_stop, progress)
        if not kind:
            progress(1.0)
            return self._finish(goal_handle, True, "", "")
        canceled = goal_handle.is_cancel_requested
        if kind == "stopped":
            why = "cancel" if canceled else "stop topic"
            self._report("stopped", f"motion halted by the {why}")
            return self._finish(goal_handle, False, f"halted by the {why}", "stopped", canceled=canceled)
        if kind == "reflex":
            with self._lock:
                self._needs_recovery = True
            self._report("reflex", message, needs_recovery=True)
        else:
            self._report(kind, message)
        return self._finish(goal_handle, False, message, kind)

    # ------------------------------------------------------------------ services
    def _on_gripper(self, request: Gripper.Request, response: Gripper.Response) -> Gripper.Response:
        with self._lock:
            refused = self._needs_recovery
        if refused:
            response.success, response.message = (
                False,
                "refused: reflex not recovered; call /executor/recover",
            )
            return response
        verdict = self.safety.check_gripper(request.command, request.width, request.force)
        if not verdict.ok:
            text = f"gripper command refused ({verdict.check}): {verdict.message}"
            self._report("limit", text)
            response.success, response.message = False, text
            return response
        try:
            ok, width, message = self.driver.gripper(request.command, request.width, request.force)
        except Exception as exc:  # noqa: BLE001 - a gripper fault is a reply, not a crash
            self._report("communication", f"gripper {request.command} failed: {exc}")
            response.success, response.message = False, str(exc)
            return response
        response.success, response.width, response.message = ok, width, message
        return response

    def _on_recover(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            self._recovery_generation += 1
        try:
            ok, message = self.driver.recover()
        except Exception as exc:  # noqa: BLE001
            ok, message = False, f"recovery failed: {exc}"
        with self._lock:
            self._recovery_generation += 1
            if ok:
                self._needs_recovery = False
        self.get_logger().info(f"recover: {message}")
        response.success, response.message = ok, message
        return response

    def halt(self) -> None:
        """Stop the robot; called on shutdown."""
        try:
            self.driver.close()
        except Exception as exc:  # noqa: BLE001 - shutting down regardless
            self.get_logger().error(f"stop on shutdown failed: {exc}")


def main(argv: list[str] | None = None) -> int:
    return run_node(ExecutorNode, argv, threads=6, on_exit=ExecutorNode.halt)


if __name__ == "__main__":
    sys.exit(main())
