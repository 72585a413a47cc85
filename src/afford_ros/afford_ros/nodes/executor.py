"""The executor node: the only node that commands the robot (DESIGN.md sections 2 and 8).

A thin shell over :mod:`afford_ros.robot_client` (franky, to the FR3 or franky-sim) and
:mod:`afford_planner.safety` (limit checks). It

- publishes ``/joint_states`` (fr3_joint1..7 and fr3_finger_width) at ``state_rate_hz``;
- serves ``/executor/follow_trajectory``: every trajectory passes the limit checks first; a
  refused one never reaches the robot and is reported on ``/afford/robot_error`` as ``limit``;
  a cancel halts the motion; feedback is the fraction of the duration done;
- halts any motion at once on ``/afford/stop`` and aborts the running goal;
- serves ``/executor/gripper`` (checked width and force) and ``/executor/recover``;
- after a reflex, refuses every motion (arm and gripper) until ``/executor/recover`` is called:
  recovery is an explicit operator action, never automatic.

Backends. ``franky`` talks to the robot at ``robot_ip``. ``joint_command_topic`` is for Isaac Sim,
which has no libfranka server: the world publishes ``/joint_states`` itself and this node streams
each checked trajectory's points, at their times, as ``sensor_msgs/JointState`` commands on
``joint_command_topic``; a stop holds the last measured position. The same checks apply to both.

Threads. A multi-threaded executor serves the stop subscription, the state timer, the services
and the action in separate callback groups, so a stop is handled while a trajectory runs.
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
from afford_ros.nodes.qos import qos_profile
from afford_ros.nodes.spin import run_node
from afford_ros.robot_client import RobotClient, RobotClientConfig


def _qos(topic: str) -> QoSProfile:
    """The contract's QoS for one of its topics."""
    return qos_profile(contract.topic(topic).qos)


BACKENDS = ("franky", "joint_command_topic")
_POLL_PERIOD = 0.01  # s between checks of a running motion (stop, cancel, progress)


def trajectory_arrays(msg: JointTrajectory) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(times, positions (T, 7), velocities or None) of a JointTrajectory, in fr3_joint1..7 order.

    Raises ValueError when the arm joints are missing or a point has the wrong number of values.
    """
    names = list(msg.joint_names)
    missing = [j for j in contract.ARM_JOINTS if j not in names]
    if missing:
        raise ValueError(f"trajectory lacks joints {missing} (has {names})")
    order = [names.index(j) for j in contract.ARM_JOINTS]
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
    rows, vel_rows = [], []
    for k, p in enumerate(msg.points):
        if len(p.positions) != len(names):
            raise ValueError(f"point {k} has {len(p.positions)} positions for {len(names)} joints")
        rows.append([p.positions[i] for i in order])
        if len(p.velocities) == len(names):
            vel_rows.append([p.velocities[i] for i in order])
    positions = np.array(rows, dtype=np.float64).reshape(len(rows), len(contract.ARM_JOINTS))
    velocities = np.array(vel_rows, dtype=np.float64) if rows and len(vel_rows) == len(rows) else None
    return times, positions, velocities


class StaleState(RuntimeError):
    """The world's /joint_states are missing or too old to start a motion from."""


class _TopicBackend:
    """Isaac Sim backend: streams checked trajectories as JointState commands; state from the world."""

    def __init__(self, node: Node, topic: str, group: Any) -> None:
        self._node = node
        self._pub = node.create_publisher(JointState, topic, qos_profile("reliable"))
        self._lock = threading.Lock()
        self._q: np.ndarray | None = None
        self._width = float("nan")
        self._stamp = 0.0
        self._stop = threading.Event()
        self._send_lock = threading.Lock()
        node.create_subscription(
            JointState, "/joint_states", self._on_state, _qos("/joint_states"), callback_group=group
        )

    def _on_state(self, msg: JointState) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        if not all(j in index for j in contract.ARM_JOINTS):
            return
        with self._lock:
            self._q = np.array([msg.position[index[j]] for j in contract.ARM_JOINTS])
            if contract.FINGER_WIDTH_JOINT in index:
                self._width = float(msg.position[index[contract.FINGER_WIDTH_JOINT]])
            self._stamp = time.monotonic()

    def current_q(self, max_age: float = 0.5, wait: float = 0.0) -> np.ndarray:
        """The last measured arm joints, no older than ``max_age`` seconds; waits up to ``wait``
        seconds for such a reading (a loaded world publishes in bursts), then raises
        ``StaleState``."""
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                q, stamp = self._q, self._stamp
            age = time.monotonic() - stamp
            if q is not None and age <= max_age:
                return q.copy()
            if time.monotonic() >= deadline:
                seen = "none yet" if q is None else f"the last is {age:.2f} s old"
                raise StaleState(f"no fresh /joint_states from the world within {wait:.1f} s ({seen})")
            time.sleep(0.01)

    def width(self) -> float:
        with self._lock:
            return self._width

    def command(self, names: tuple[str, ...], values: np.ndarray) -> None:
        msg = JointState(
            header=Header(stamp=self._node.get_clock().now().to_msg(), frame_id=contract.BASE_FRAME)
        )
        msg.name = list(names)
        msg.position = [float(v) for v in values]
        self._pub.publish(msg)

    def run(self, times: np.ndarray, qs: np.ndarray, on_progress: Any) -> str:
        """Publish each point at its time; returns "" when done or "stopped"."""
        self._stop.clear()
        t0 = time.monotonic()
        duration = float(times[-1]) if times[-1] > 0 else 1e-9
        for t, q in zip(times, qs, strict=True):
            while (wait := t0 + float(t) - time.monotonic()) > 0:
                if self._stop.wait(min(wait, _POLL_PERIOD)):
                    break
                on_progress(min(1.0, (time.monotonic() - t0) / duration))
            # Checked and sent under the lock stop() holds while it commands the hold, so no
            # trajectory point can follow the hold command.
            with self._send_lock:
                if self._stop.is_set():
                    return "stopped"
                self.command(contract.ARM_JOINTS, q)
        return ""

    def stop(self) -> None:
        """End the stream and command the arm to stay where the world last reported it."""
        with self._send_lock:
            self._stop.set()
            self.hold()

    def hold(self) -> None:
        try:
            self.command(contract.ARM_JOINTS, self.current_q(max_age=5.0))
        except RuntimeError:
            pass


class ExecutorNode(Node):
    """Runs checked trajectories and gripper commands; publishes joint states and robot errors."""

    def __init__(self) -> None:
        super().__init__("executor")
        d = ParameterDescriptor
        self.declare_parameter(
            "robot_ip",
            "127.0.0.1",
            d(description="FCI address of the FR3, or franky-sim's loopback address."),
        )
        self.declare_parameter(
            "backend",
            "franky",
            d(
                description=(
                    "'franky' (FR3 or franky-sim) or 'joint_command_topic' (Isaac Sim: stream commands)."
                )
            ),
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
        self.declare_parameter(
            "joint_margin_rad",
            0.05,
            d(description="Radians every joint must stay inside its position limits."),
        )
        self.declare_parameter(
            "workspace_min",
            [0.1, -0.6, 0.0],
            d(description="Lower corner (x, y, z) in fr3_link0 of the TCP's box (m); z = 0: table top."),
        )
        self.declare_parameter(
            "workspace_max",
            [0.9, 0.6, 0.9],
            d(description="Upper corner (x, y, z) in fr3_link0 of the TCP's box (m)."),
        )
        self.declare_parameter(
            "max_start_deviation_rad",
            0.05,
            d(description="Largest gap (rad) between a trajectory's first point and the measured joints."),
        )
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
        backend = str(p("backend").value)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self._state_timeout = float(p("state_timeout_s").value)
        if not 0.0 <= self._state_timeout <= 30.0:
            raise ValueError(f"state_timeout_s must be in [0, 30], got {self._state_timeout}")
        rate = float(p("state_rate_hz").value)
        if not 1.0 <= rate <= 1000.0:
            raise ValueError(f"state_rate_hz must be in [1, 1000], got {rate}")
        self.robot = get_robot(DEFAULT_ROBOT)
        self.safety = SafetyChecker(
            SafetyConfig(
                joint_margin=float(p("joint_margin_rad").value),
                workspace_min=tuple(p("workspace_min").value),
                workspace_max=tuple(p("workspace_max").value),
                max_start_deviation=float(p("max_start_deviation_rad").value),
            ),
            RobotModel(self.robot),
        )
        self.backend = backend
        self._lock = threading.Lock()
        self._busy = False
        self._needs_recovery = False
        self._stop_requested = threading.Event()
        self._comm_fault = False
        self._recovery_generation = 0

        state_group = MutuallyExclusiveCallbackGroup()
        stop_group = MutuallyExclusiveCallbackGroup()
        service_group = MutuallyExclusiveCallbackGroup()
        # Reentrant: the action's cancel callback must run while its execute callback is busy.
        action_group = ReentrantCallbackGroup()

        self.pub_error = self.create_publisher(RobotError, "/afford/robot_error", _qos("/afford/robot_error"))
        self.client: RobotClient | None = None
        self.topic_backend: _TopicBackend | None = None
        if backend == "franky":
            self.client = RobotClient(
                RobotClientConfig(
                    robot_ip=str(p("robot_ip").value),
                    dynamics_factor=float(p("dynamics_factor").value),
                    enforce_realtime=bool(p("enforce_realtime").value),
                )
            )
            self._connect(float(p("connect_timeout_s").value))
            self.pub_state = self.create_publisher(JointState, "/joint_states", _qos("/joint_states"))
            self.create_timer(1.0 / rate, self._publish_state, callback_group=state_group)
        else:
            self.topic_backend = _TopicBackend(self, str(p("joint_command_topic").value), state_group)

        self.create_subscription(
            Empty, "/afford/stop", self._on_stop, _qos("/afford/stop"), callback_group=stop_group
        )
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
            f"executor ready: backend={backend} robot_ip={p('robot_ip').value} "
            f"dynamics_factor={p('dynamics_factor').value}"
        )

    # ------------------------------------------------------------------ helpers
    def _connect(self, timeout: float) -> None:
        """Connect, retrying refused connections until ``timeout``; then let the error out."""
        import franky

        assert self.client is not None
        end = time.monotonic() + timeout
        said = False
        while True:
            try:
                self.client.connect()
                return
            except franky.NetworkException as err:
                if time.monotonic() > end:
                    raise
                if not said:
                    self.get_logger().info(f"waiting for the robot at {self.client.config.robot_ip}: {err}")
                    said = True
                time.sleep(0.5)

    def _report(self, kind: str, message: str, needs_recovery: bool = False) -> None:
        msg = RobotError(header=Header(stamp=self.get_clock().now().to_msg()))
        msg.kind, msg.message, msg.needs_recovery = kind, message, needs_recovery
        self.pub_error.publish(msg)
        # rclpy ties a severity to each call site, so each severity gets its own call.
        if kind in ("reflex", "communication"):
            self.get_logger().error(f"{kind}: {message}")
        else:
            self.get_logger().warning(f"{kind}: {message}")

    def _current_q(self) -> np.ndarray:
        if self.client is not None:
            return self.client.read_state().q
        assert self.topic_backend is not None
        return self.topic_backend.current_q(wait=self._state_timeout)

    def _publish_state(self) -> None:
        assert self.client is not None
        with self._lock:
            generation = self._recovery_generation
        try:
            s = self.client.read_state()
        except Exception as exc:  # noqa: BLE001 - any failure to read the robot is a communication fault
            if not self._comm_fault:
                self._comm_fault = True
                self._report("communication", f"cannot read the robot state: {exc}")
            return
        self._comm_fault = False
        msg = JointState(header=Header(stamp=self.get_clock().now().to_msg(), frame_id=contract.BASE_FRAME))
        msg.name = [*contract.ARM_JOINTS, contract.FINGER_WIDTH_JOINT]
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
            if new:
                self._report("reflex", "the robot reports reflex mode", needs_recovery=True)

    # ------------------------------------------------------------------ stop
    def _on_stop(self, _msg: Empty) -> None:
        t0 = time.monotonic()
        self._stop_requested.set()
        if self.client is not None:
            try:
                self.client.stop()
            except Exception as exc:  # noqa: BLE001 - the stop must not die on a second fault
                self._report("communication", f"stop failed: {exc}")
        elif self.topic_backend is not None:
            self.topic_backend.stop()
        with self._lock:
            busy = self._busy
        took = (time.monotonic() - t0) * 1000.0
        # The monotonic stamp lets a benchmark on the same machine time the stop's delivery.
        self.get_logger().info(
            f"stop {'sent' if busy else 'received while idle'} ({took:.1f} ms to command it, "
            f"received at monotonic {t0:.4f})"
        )

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
            self._busy = True
        try:
            return self._run(goal_handle)
        finally:
            with self._lock:
                self._busy = False

    def _run(self, goal_handle: Any) -> Any:
        self._stop_requested.clear()
        try:
            times, qs, vels = trajectory_arrays(goal_handle.request.trajectory)
        except ValueError as exc:
            self._report("limit", f"trajectory refused: {exc}")
            return self._finish(goal_handle, False, str(exc), "limit")
        try:
            q_now = self._current_q()
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

        if self.topic_backend is not None:
            outcome = self._watch_topic(goal_handle, times, qs, progress)
            kind, message = outcome, "" if not outcome else "motion halted by a stop or cancel"
        else:
            kind, message = self._watch_franky(goal_handle, times, qs, vels, progress)

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

    def _watch_franky(
        self, goal_handle: Any, times: np.ndarray, qs: np.ndarray, vels: np.ndarray | None, progress: Any
    ) -> tuple[str, str]:
        assert self.client is not None
        try:
            self.client.follow(times, qs, vels)
        except Exception as exc:  # noqa: BLE001 - franky refusing to start is reported, never raised
            return "communication", f"could not start the motion: {exc}"
        last = 0.0
        while True:
            if goal_handle.is_cancel_requested or self._stop_requested.is_set():
                self.client.stop()
            try:
                status = self.client.status()
            except Exception as exc:  # noqa: BLE001 - e.g. the connection closed at shutdown
                return "communication", f"lost the robot during the motion: {exc}"
            if not status.running:
                if status.error_kind == "" and (
                    self._stop_requested.is_set() or goal_handle.is_cancel_requested
                ):
                    # The stop arrived as the motion ended: report it as stopped all the same.
                    return "stopped", "motion halted"
                return status.error_kind, status.message
            if time.monotonic() - last > 0.05:
                progress(status.progress)
                last = time.monotonic()
            time.sleep(_POLL_PERIOD)

    def _watch_topic(self, goal_handle: Any, times: np.ndarray, qs: np.ndarray, progress: Any) -> str:
        assert self.topic_backend is not None
        backend = self.topic_backend
        done = threading.Event()

        def cancel_watch() -> None:
            while not done.wait(_POLL_PERIOD):
                if goal_handle.is_cancel_requested:
                    backend.stop()
                    return

        watcher = threading.Thread(target=cancel_watch, daemon=True)
        watcher.start()
        try:
            return backend.run(times, qs, progress)
        finally:
            done.set()
            watcher.join()

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
        if self.client is None:
            assert self.topic_backend is not None
            gripper = self.robot.gripper
            fingers = np.asarray(gripper.finger_positions(request.width))
            self.topic_backend.command(gripper.finger_joints, fingers)
            response.success, response.width = True, self.topic_backend.width()
            response.message = "command published; the world reports the width on /joint_states"
            return response
        try:
            if request.command == "open":
                ok, width = self.client.gripper_open(request.width)
            else:
                ok, width = self.client.gripper_grasp(request.width, request.force)
        except Exception as exc:  # noqa: BLE001 - a gripper fault is a reply, not a crash
            self._report("communication", f"gripper {request.command} failed: {exc}")
            response.success, response.message = False, str(exc)
            return response
        response.success, response.width = ok, width
        if ok:
            response.message = ""
        elif request.command == "grasp" and request.width <= 0.0:
            response.message = f"the fingers closed on nothing (width {width:.4f} m)"
        else:
            response.message = f"{request.command} did not reach the expected width (now {width:.4f} m)"
        return response

    def _on_recover(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        ok = True
        message = "recovered"
        with self._lock:
            self._recovery_generation += 1
        if self.client is not None:
            try:
                ok = self.client.recover()
                message = "recovered" if ok else "the robot refused automatic error recovery"
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
        if self.client is not None and self.client.connected:
            try:
                self.client.close()
            except Exception as exc:  # noqa: BLE001 - shutting down regardless
                self.get_logger().error(f"stop on shutdown failed: {exc}")
        elif self.topic_backend is not None:
            self.topic_backend.stop()


def main(argv: list[str] | None = None) -> int:
    return run_node(ExecutorNode, argv, threads=5, on_exit=ExecutorNode.halt)


if __name__ == "__main__":
    sys.exit(main())
