"""The executor node: the only node that commands the robot (DESIGN.md sections 2 and 8).

A thin shell over a driver (:mod:`afford_ros.drivers`: franky to the FR3 or franky-sim, or joint
commands on a topic for Isaac Sim) and :mod:`afford_planner.safety` (limit checks) for the robot
named by ``robot`` (its description: joints, limits, gripper). It

- publishes ``/joint_states`` (the arm joints and ``<robot>_finger_width``) at ``state_rate_hz``
  when the driver reads the robot itself (franky); with the topic driver the world publishes them;
- serves ``/executor/follow_trajectory``: every trajectory passes the limit checks first; a
  refused one never reaches the robot and is reported on ``/afford/robot_error`` as ``limit``;
  a cancel halts the motion; feedback is the fraction of the duration done; when franky's own
  motion planner fails mid-trajectory (Ruckig's error -111, now and then, on a path it took a
  moment before), the rest of the trajectory is followed from where the arm came to rest, once
  checked afresh, at most ``MAX_RESUMES`` times a goal;
- takes a stream of joint targets on ``/executor/joint_targets`` (chunks of a policy's actions
  at its control rate; point times count from the header stamp, which a chunk must carry): a
  chunk delayed on a busy machine is re-timed, its stream running up to ``_MAX_STREAM_DELAY``
  behind its stamps, or ``_MAX_START_DELAY`` for a chunk that comes while the arm is still or
  starts after the running chunk ends (later, its part already in the past is dropped); it then
  passes the same limit checks, measured from where the running chunk is sending the arm now
  (the arm lags that setpoint; a jump is measured from it; the first target must lie where the
  running chunk sends the arm by that target's time) or from the measured joints when no chunk
  runs, and replaces the chunk running; a refused chunk halts the arm; once the last
  target is reached the arm holds it, and when no chunk has come for ``stream_timeout_s`` past
  the last target the stream is reported ended (``stopped``), as is a driver fault (its kind);
- halts any motion or stream at once on ``/afford/stop`` and aborts the running goal;
- serves ``/executor/gripper`` (checked width and force) and ``/executor/recover``;
- after a reflex, or the robot's link lost while a motion ran, refuses every motion (arm,
  stream and gripper) until ``/executor/recover`` is called: recovery is an explicit operator
  action, never automatic;
- when the link is lost (libfranka gives a connection up for good after a communication
  fault, e.g. no state packet for 1 s from a simulator starved of CPU), reports it and makes a
  new connection once no motion is running, so ``/joint_states`` comes back by itself; the
  arm held where the fault left it (the robot's controller holds when commands stop);
- after a stop that lands
  while joint targets are streaming (or came in the last 5 s), refuses joint targets (not
  trajectories, each a new request) until that call too.

Threads. A multi-threaded executor serves the stop subscription, the state timer, the services,
the stream, its watchdog and the action in separate callback groups, so a stop is handled while
a trajectory runs. Starts and stops are ordered: every stop bumps a counter under the state
lock, and a motion (trajectory or chunk) starts only under the start lock, and only if no stop
came since it was admitted; the stop commands the driver under that same lock. So a stop either
finds the motion started and halts it, or the motion never starts.
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
from afford_ros.drivers import DRIVERS, Driver, MotionState
from afford_ros.drivers.base import ArmReading
from afford_ros.nodes.spin import run_node
from afford_ros.params import declare_config, read_config
from afford_ros.qos import qos_profile


def _qos(topic: str) -> QoSProfile:
    """The contract's QoS for one of its topics."""
    return qos_profile(contract.topic(topic).qos)


def _setpoint(stream: tuple[np.ndarray, np.ndarray], now: float) -> np.ndarray:
    """Where a stream's chunk sends the arm at monotonic time ``now``: linear between its points,
    the first of which is the reference it was checked from, at the time it was accepted; its
    last target after the end."""
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


def remaining_trajectory(
    times: np.ndarray, qs: np.ndarray, vels: np.ndarray | None, q_now: np.ndarray, progress: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The rest of a trajectory that stopped part-way, to follow from ``q_now`` (at rest).

    It joins the trajectory at the sample nearest ``q_now`` among those the arm can have been
    near: ``progress`` is the fraction of its duration that had passed by the clock, and the arm
    follows franky's time, which a simulator slower than real time stretches; so from where half
    that time puts it (0.5 s earlier still) to 0.5 s after where all of it does (a path may come
    back near where it passed earlier: the window keeps the join on the stretch it was on). It
    joins from rest, no faster than ``_RESUME_JOIN_SPEED``; the samples after it keep their
    spacing and velocities. The caller checks the result as any trajectory.
    """
    t_at = float(np.clip(progress, 0.0, 1.0)) * float(times[-1])
    window = np.flatnonzero((times >= 0.5 * t_at - 0.5) & (times <= t_at + 0.5))
    if window.size == 0:
        window = np.arange(len(times))
    k = int(window[np.argmin(np.max(np.abs(qs[window] - q_now), axis=1))])
    gap = float(np.max(np.abs(qs[k] - q_now)))
    lead = max(0.2, gap / _RESUME_JOIN_SPEED)
    rest_t = np.r_[0.0, times[k:] - times[k] + lead]
    rest_q = np.vstack([q_now, qs[k:]])
    rest_v = None if vels is None else np.vstack([np.zeros_like(q_now), vels[k:]])
    return rest_t, rest_q, rest_v


_STREAM_LEAD = 0.02
"""Seconds ahead a streamed target must be to be taken (a control period at 50 Hz)."""
_MAX_STREAM_DELAY = 0.25
"""A stream runs at most this far (s) behind its senders' stamps: a chunk that comes late is
re-timed (delayed whole, with every later chunk of its stream) up to this; past it, its overdue
targets are dropped. Under the policy node's ``RESYNC_S`` (0.3 s), after which it starts a chunk
from the measured arm: a stream delayed longer would still be moving the arm then, and that
chunk would start short of where the running one sends it."""
_MAX_START_DELAY = 1.0
"""A chunk that comes late while the arm is still (no stream runs, or the running one holds its
last target, or will before the chunk can start) is re-timed up to this (s), past
:data:`_MAX_STREAM_DELAY`: the arm has not moved since its sender saw it, or rests where the
chunk's sender sent it (the start check makes sure), so the whole chunk runs as sent, only
later, rather than its first targets dropped and the next refused as a jump. Two busy cores
delivered a stream's first chunk 0.59 s late (a policy's first inference, a simulator's first
steps). Older, a sender's view of the scene is too stale to act on whole: its overdue targets
are dropped as past :data:`_MAX_STREAM_DELAY`."""
_POLL_PERIOD = 0.01  # s between looks at a running trajectory (stop, cancel, progress)
_STOP_FIRST = "a stop came after it was checked"
_STALLED = "this process stalled between its checks and its start"
#: Times a chunk is checked afresh when this process stalls between its checks and its start
#: and the chunk cannot start as checked (:meth:`ExecutorNode._start`: from an arm that holds
#: still the stall delays it whole, within _MAX_START_DELAY; against a moving chunk it keeps its
#: checked schedule while its first target stays _STREAM_LEAD ahead). CI's loaded machine
#: stalled on one chunk three looks in a row when every stall meant a fresh look.
_STALL_TRIES = 3
_NOT_RECOVERED = "a fault is not recovered"  # _start's answer; the refusal says which (_refusal)
#: Seconds between two attempts to renew a lost connection.
_RECONNECT_PERIOD_S = 1.0
#: Faults that end a motion and refuse the next until an operator calls /executor/recover.
_LATCHING = ("reflex", "communication")
#: A stop disarms streaming when a stream runs or a chunk came this recently (s).
_STREAM_RECENT_S = 5.0
#: A stamped trajectory older than this when it would start is refused (s): on a loaded machine
#: a goal can wait in a queue, and its sender (the planner waits 10 s for the goal's answer,
#: robot_link.GOAL_ANSWER_S) may have given up on it meanwhile; a command nobody follows any
#: more must not move the arm. Stamped ahead of this node's clock by more than
#: _MAX_TRAJECTORY_AHEAD_S is refused too (clocks that differ).
MAX_TRAJECTORY_AGE_S = 5.0
_MAX_TRAJECTORY_AHEAD_S = 0.5
#: franky's message when its planner (Ruckig) fails a motion it was given; on a trajectory it had
#: been following (error -111) the rest is followed again from where the arm stopped, at most
#: MAX_RESUMES times a goal, once it rests (within _RESUME_REST_S; rest: every |dq| below
#: _RESUME_REST_SPEED). CI saw one on a push on a loaded machine.
PLANNER_FAULT = "Motion planner failed"
MAX_RESUMES = 2
_RESUME_REST_S = 2.0
_RESUME_REST_SPEED = 0.02
#: The resumed motion joins the trajectory no faster than this (rad/s, the largest joint).
_RESUME_JOIN_SPEED = 0.2
#: An arm at rest this close (rad, every joint) to a failed trajectory's end has arrived; the
#: driver would take the rest as a hold and send nothing.
_ARRIVED_RAD = 1e-3
_ARRIVED = "arrived"  # _resume's answer then
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
            "/isaac/joint_command",
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
            if backend == self.robot.drive:
                raise ValueError(
                    f"the {self.robot.name} is driven {backend!r}: it runs in the batch world only "
                    f"(afford run --robot {self.robot.name}); no executor driver exists for it yet"
                )
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
        self._lock = threading.Lock()  # the state below
        self._start_lock = threading.Lock()  # a driver start, or a stop's command (class docstring)
        self._busy = False
        self._needs_recovery = False
        self._stops = 0  # how many stops have come (a motion admitted before one must not start)
        self._comm_fault = False
        self._next_reconnect = 0.0
        self._latched = ("reflex", "")  # the fault that needs recovery: (kind, what happened)
        self._recovery_generation = 0
        # The accepted chunk: its targets at monotonic times; None when no stream runs.
        self._stream: tuple[np.ndarray, np.ndarray] | None = None
        # Why chunks are refused until the sender pauses (a stream halted by a stop, a refusal
        # or a fault must not restart on the policy's next chunk); "" when they are taken.
        self._stream_block = ""
        self._stream_disarmed = False  # set by a stop, cleared by /executor/recover
        self._block_said = False
        self._last_chunk = 0.0  # the newest chunk's stamp (s, the sender's clock)
        self._last_arrival = -np.inf  # monotonic arrival of the newest chunk
        # How far (s) the running stream runs behind its chunks' stamps (_MAX_STREAM_DELAY).
        self._stream_delay = 0.0
        self._trajectories = 0  # trajectory goals admitted so far (a still arm moved meanwhile?)

        state_group = MutuallyExclusiveCallbackGroup()
        stop_group = MutuallyExclusiveCallbackGroup()
        service_group = MutuallyExclusiveCallbackGroup()
        stream_group = MutuallyExclusiveCallbackGroup()
        watch_group = MutuallyExclusiveCallbackGroup()  # not behind a chunk waiting for state
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
        self.create_timer(0.05, self._watch_stream, callback_group=watch_group)
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
        s: ArmReading | None
        try:
            s = self.driver.read()
        except Exception as exc:  # noqa: BLE001 - any failure to read the robot is a communication fault
            if not self._comm_fault:
                self._comm_fault = True
                self._report("communication", f"cannot read the robot state: {exc}")
            s = None
        if s is None:
            # Outside the except block: its traceback holds the dead connection's objects, and
            # the robot (or franky-sim) takes a new client only once the old one's socket closes.
            self._reconnect()
            return
        if self._comm_fault:
            self._comm_fault = False
            self.get_logger().info("the robot state is flowing again")
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
                self._latch("reflex", "the robot reports reflex mode")
                self._stream = None
            if new:
                self._report("reflex", "the robot reports reflex mode", needs_recovery=True)

    def _latch(self, kind: str, what: str) -> None:
        """Refuse motion until /executor/recover (call with the lock held)."""
        self._needs_recovery = True
        self._latched = (kind, what)

    def _refusal(self) -> tuple[str, str]:
        """(kind, message) of a motion refused for want of recovery (call with the lock held)."""
        kind, what = self._latched
        said = f" ({what})" if what else ""
        return kind, f"refused: {kind} not recovered{said}; call /executor/recover"

    def _reconnect(self) -> None:
        """Renew a lost connection, at most every _RECONNECT_PERIOD_S, never under a running
        motion (its own poll must see the fault first); called by the state timer."""
        now = time.monotonic()
        with self._lock:
            if now < self._next_reconnect or self._busy or self._stream is not None:
                return
            self._next_reconnect = now + _RECONNECT_PERIOD_S
            latched = self._needs_recovery
        try:
            with self._start_lock:
                renewed = self.driver.reconnect_if_lost()  # not when a recovery renewed it meanwhile
        except Exception as exc:  # noqa: BLE001 - still unreachable: try again later
            self.get_logger().warning(f"reconnecting to the robot failed: {exc}", throttle_duration_sec=10.0)
            return
        if not renewed:
            return
        held = "; motions stay refused until /executor/recover" if latched else ""
        self.get_logger().info(f"reconnected to the robot{held}")

    # ------------------------------------------------------------------ stop
    def _on_stop(self, _msg: Empty) -> None:
        t0 = time.monotonic()
        with self._lock:
            self._stops += 1
            streaming = self._stream is not None
            self._stream = None
            busy = self._busy or streaming
            # Also when no chunk runs at this instant but one came lately: a sender whose chunks
            # are delayed (or between chunks) must not start the arm again after an operator's
            # stop. A pause proves nothing here (a stalled sender pauses too): the operator re-arms.
            if streaming or t0 - self._last_arrival < _STREAM_RECENT_S:
                self._stream_disarmed, self._block_said = True, False
        try:
            with self._start_lock:  # after any start in progress, so it halts that motion too
                self.driver.stop()
        except Exception as exc:  # noqa: BLE001 - the stop must not die on a second fault
            self._report("communication", f"stop failed: {exc}")
        took = (time.monotonic() - t0) * 1000.0
        # The monotonic stamp lets a benchmark on the same machine time the stop's delivery.
        self.get_logger().info(
            f"stop {'sent' if busy else 'received while idle'} ({took:.1f} ms to command it, "
            f"received at monotonic {t0:.4f})"
        )
        if streaming:
            self._report("stopped", "joint-target stream halted by the stop topic")

    def _start(
        self, stops: int, times: np.ndarray, qs: np.ndarray, vels: np.ndarray | None = None,
        chunk_from: tuple[float, np.ndarray, float, float, Any, int] | None = None,
    ) -> str:
        """Start a checked motion unless a stop came after it was admitted (``stops`` then), a
        reflex latched, or (a chunk) a trajectory took the arm; "" when it started, else why not.
        A chunk (``chunk_from``: its acceptance time, the reference it was checked from, how far
        its stream runs behind its stamps with it, how much further a stall here may delay it,
        and the stream and the count of trajectories it was checked against) becomes the
        running stream in the same step, before the driver starts it, so no trajectory is
        admitted alongside."""
        cut = 0.0  # s taken out of a chunk's times by a stall (it keeps its checked schedule)
        with self._start_lock:
            with self._lock:
                if self._stops != stops:
                    return _STOP_FIRST
                if self._needs_recovery:
                    return _NOT_RECOVERED
                if chunk_from is not None:
                    if self._busy:
                        return "a trajectory is running"
                    if self._stream_block:  # halted since _on_targets looked
                        return (f"{self._stream_block}; send none for {self._stream_timeout:.2f} s, "
                                "then start a new stream")
                    now, q_ref, delay, slack, checked_against, trajectories = chunk_from
                    stall = time.monotonic() - now
                    if stall > _STREAM_LEAD:
                        # Stalled between the checks and here (a busy machine deschedules this
                        # process for tens of ms): its first target is now due sooner than the
                        # checks assumed. They still hold if nothing moved the arm meanwhile (no
                        # stream started, ended or was halted, no trajectory ran) and the chunk
                        # runs either as checked, only later (from an arm that holds still: the
                        # chunk is delayed whole, within the slack), or on the very schedule it
                        # was checked on (against a running chunk, which goes on meanwhile: the
                        # stall is taken out of the chunk's lead, if its first target stays
                        # _STREAM_LEAD ahead). Otherwise it is checked afresh from a new now.
                        moved = self._stream is not checked_against or self._trajectories != trajectories
                        if moved:
                            return _STALLED
                        moving = checked_against is not None and now < checked_against[0][-1]
                        if stall <= slack:
                            now, delay = now + stall, delay + stall
                        elif moving and times[0] - stall >= _STREAM_LEAD:
                            cut = stall
                        else:
                            return _STALLED
                    reserved = (np.r_[now, now + times], np.vstack([q_ref, qs]))
                    self._stream = reserved
                    self._stream_delay = delay
            try:
                sent_t, sent_q = self.driver.start(times - cut, qs, vels)
            except Exception:
                if chunk_from is not None:
                    with self._lock:
                        if self._stream is reserved:
                            self._stream = None
                raise
            if chunk_from is not None:
                with self._lock:
                    if self._stream is reserved:  # not stopped meanwhile: the times the robot follows
                        self._stream = (np.r_[now, now + cut + sent_t], np.vstack([q_ref, sent_q]))
                if sent_t[-1] > (times[-1] - cut) * 1.001:
                    # The driver slowed the chunk to its own limits: the sender's next chunk, timed
                    # for the chunk it sent, will not start where this one is by then.
                    self.get_logger().warning(
                        f"joint targets slowed {sent_t[-1] / (times[-1] - cut):.2f}x by the driver's limits "
                        "(dynamics_factor): stream slower, or the next chunk may be refused (start)"
                    )
        return ""

    # ------------------------------------------------------------------ streamed joint targets
    def _on_targets(self, msg: JointTrajectory) -> None:
        """One chunk of joint targets (module docstring): checked, then it replaces the running one."""
        stamp = msg.header.stamp
        sent = stamp.sec + 1e-9 * stamp.nanosec
        with self._lock:
            self._last_arrival = time.monotonic()
            # A pause is a gap in the sender's own stamps: chunks that queued up here while this
            # node was busy are no pause.
            new_stream = sent - self._last_chunk > self._stream_timeout
            if self._stream_block and new_stream:
                self._stream_block = ""
            if new_stream:
                self._stream_delay = 0.0
                # A new sender (a new policy run after a stop) hears the refusal too: its watch
                # starts with its stream, and a refusal said only to the one before would leave
                # it streaming into silence.
                self._block_said = False
            self._last_chunk = max(self._last_chunk, sent)
            blocked = (
                "the stop topic halted streaming; call /executor/recover to stream again"
                if self._stream_disarmed
                else f"{self._stream_block}; send none for {self._stream_timeout:.2f} s, then start "
                "a new stream" if self._stream_block
                else ""
            )
            say = not self._block_said
            if blocked:
                self._block_said = True
            refused = (
                "a trajectory is running" if self._busy
                else self._refusal()[1] if self._needs_recovery
                else ""
            )
            running = self._stream
            delay = self._stream_delay if running is not None else 0.0
            stops = self._stops
        if blocked:
            if say:  # once per stream (chunks after a pause), not once per chunk
                self._report("limit", f"joint targets refused: {blocked}")
            return
        if refused:
            self._report("limit", f"joint targets refused: {refused}")
            return
        # A chunk this process stalled on between its checks and its start is checked afresh
        # (from a new now, against the stream as it then runs) rather than dropped: a dropped
        # chunk breaks the sender's chain, whose next chunk continues the dropped one and is
        # refused as a jump from the running motion.
        for _ in range(_STALL_TRIES):
            if self._take_chunk(msg, stamp, running, stops, delay) != _STALLED:
                return
            with self._lock:
                running = self._stream
                delay = self._stream_delay if running is not None else 0.0
        self.get_logger().warning(f"joint targets dropped: {_STALLED} ({_STALL_TRIES} times)")

    def _take_chunk(self, msg: JointTrajectory, stamp: Any, running: tuple[np.ndarray, np.ndarray] | None,
                    stops: int, delay: float) -> str:
        """Check one chunk and start it (:meth:`_on_targets`); :data:`_STALLED` when this process
        stalled between the checks and the start (nothing started), else "". ``delay``: how far
        the running stream runs behind its stamps (0 when none runs)."""
        try:
            times, qs, _ = trajectory_arrays(msg, self._arm_joints)
            if len(times) == 0:
                raise ValueError("the chunk has no points")
            if not (stamp.sec or stamp.nanosec):
                # Unstamped, a chunk that sat in a queue would be taken as fresh.
                raise ValueError("the chunk has no header.stamp (stamp it: its point times count from it)")
            # The chunk's age, its acceptance time and the setpoint all refer to this instant
            # (a stall of this process between them would shift the targets against the setpoint).
            with self._lock:  # before the reference is read: a trajectory after it shows
                trajectories = self._trajectories
            now, ros_now = time.monotonic(), self.get_clock().now()
            age = (ros_now - Time.from_msg(stamp)).nanoseconds * 1e-9
            if age < -0.5:
                raise ValueError(f"the chunk is stamped {-age:.2f} s in the future (clocks differ?)")
            times = times - age + delay
            # A target due sooner than the lead cannot be reached smoothly. A chunk that came
            # late (a busy machine delays delivery) is delayed whole, and so is every later chunk
            # of its stream: each continues the one before from where that one is by then. Dropping
            # its overdue targets instead would leave its first kept one a jump from the running
            # chunk (a two-point chunk one period long has nothing else), or, from rest, from the
            # measured joints. Past _MAX_STREAM_DELAY (_MAX_START_DELAY when the arm is still),
            # only the targets after the lead are taken (a long chunk's later part may still fit).
            late = _STREAM_LEAD - times[0]
            # The arm holds where it is, or will by the time a re-timed chunk can start (_STREAM_LEAD
            # from now): a chunk that continues the running one and comes in the last 20 ms of it
            # starts where that one leaves the arm, as from rest. Otherwise, behind a stream already
            # re-timed from rest past _MAX_STREAM_DELAY, its first target was dropped and the next
            # refused as a jump of one whole step (as the ACT graph test met once, 0.102 rad, on a
            # machine loaded past CI's).
            still = running is None or now + _STREAM_LEAD >= running[0][-1]
            if late > 0.0 and delay + late <= (_MAX_START_DELAY if still else _MAX_STREAM_DELAY):
                times = times + late
                delay += late
                self.get_logger().info(
                    f"joint targets re-timed: a chunk {late * 1000:.0f} ms short of the lead delayed; the "
                    f"stream now runs {delay * 1000:.0f} ms behind its stamps", throttle_duration_sec=1.0)
            keep = times > _STREAM_LEAD - 1e-6
            if not keep.any():
                late = f"was due {-times[-1]:.3f} s ago" if times[-1] <= 0 else (
                    f"is due in {times[-1] * 1000:.0f} ms, under the {_STREAM_LEAD * 1000:.0f} ms lead")
                self.get_logger().warning(f"joint targets dropped: the chunk's last target {late}")
                return ""
            times, qs = times[keep], qs[keep]
        except ValueError as exc:  # a malformed chunk: refuse, never guess
            self._halt_stream(f"joint targets refused: {exc}")
            return ""
        try:
            # The jump is measured from where the arm is being sent now (the stream's setpoint),
            # or from where it is when no stream runs (and see below).
            q_ref = _setpoint(running, now) if running is not None else self.driver.current_q()
        except Exception as exc:  # noqa: BLE001 - no state to check against: refuse, never guess
            self._halt_stream(f"joint targets refused: {exc}", kind="communication")
            return ""
        # A chunk that continues the running one starts where that one sends the arm by the time
        # of its first target (due at least _STREAM_LEAD ahead; a fast arm moves a few
        # centiradians meanwhile); the speed to it is judged from the setpoint now.
        ahead = _setpoint(running, now + times[0]) if running is not None else None
        verdict = self.safety.check_trajectory(times, qs, q_ref, start_reference=ahead)
        if not verdict.ok and running is not None and verdict.check in ("start", "velocity"):
            # A policy acting on what it observes starts a chunk near the measured arm, which
            # trails the setpoint (on a loaded machine by more than the allowed jump): a chunk
            # that starts smoothly from either is taken, measured from the one it starts from.
            try:
                q_now = self.driver.current_q()
            except Exception:  # noqa: BLE001 - no measurement: the setpoint's verdict stands
                q_now = None
            if q_now is not None and (second := self.safety.check_trajectory(times, qs, q_now)).ok:
                verdict, q_ref = second, q_now
        if not verdict.ok:
            with self._lock:
                superseded = self._stops != stops
            if superseded:  # checked against a stream a stop has since halted: moot, and never run
                self.get_logger().info(f"joint targets dropped: {_STOP_FIRST}")
                return ""
            against = "the running chunk's setpoint" if running is not None else "the measured joints"
            self._halt_stream(
                f"joint targets refused ({verdict.check}, against {against}, chunk {age:.2f} s old): "
                f"{verdict.message}"
            )
            return ""
        # How much further a stall between here and the start may delay the chunk: none while
        # a chunk runs (it is checked afresh against where that one then is), up to
        # _MAX_START_DELAY in all from an arm that holds still.
        slack = max(0.0, _MAX_START_DELAY - delay) if still else 0.0
        try:
            not_started = self._start(stops, times, qs,
                                      chunk_from=(now, q_ref, delay, slack, running, trajectories))
        except Exception as exc:  # noqa: BLE001 - the driver could not start it: halt, report
            self._halt_stream(f"joint targets not started: {exc}", kind="communication")
            return ""
        if not_started == _STALLED:
            return _STALLED
        if not not_started:
            with self._lock:  # _start moved the stream's delay by the stall it absorbed, if any
                stall = self._stream_delay - delay
            if stall > 0.0:
                self.get_logger().info(
                    f"joint targets re-timed: this process stalled {stall * 1000:.0f} ms between a "
                    "chunk's checks and its start while the arm held still; the chunk delayed whole",
                    throttle_duration_sec=1.0)
        if not_started == _STOP_FIRST:  # the stop's report covers it
            self.get_logger().info(f"joint targets dropped: {not_started}")
        elif not_started:
            self._report("limit", f"joint targets refused: {not_started}")
        return ""

    def _block_stream(self, why: str) -> None:
        """Refuse chunks until the sender pauses for stream_timeout_s: until a chunk comes
        stamped that long after the one before it (call with the lock held)."""
        self._stream_block, self._block_said = why, False

    def _halt_stream(self, message: str, kind: str = "limit") -> None:
        with self._lock:
            streaming = self._stream is not None
            self._stream = None
            self._block_stream(f"the stream was halted ({kind}: see the error before this one)")
        if streaming:
            try:
                with self._start_lock:
                    self.driver.stop()  # a stream that went wrong does not run on to its end
            except Exception as exc:  # noqa: BLE001
                message += f"; the stop failed too: {exc}"
        self._report(kind, message)

    def _watch_stream(self) -> None:
        """End a stream that failed in the driver, or that no chunk has fed for stream_timeout_s."""
        with self._lock:
            stream = self._stream
        if stream is None:
            return
        due = time.monotonic() > stream[0][-1]
        state = self.driver.status() if due or self.driver.status_while_streaming else MotionState(True)
        failed = not state.running and state.error_kind not in ("", "stopped")
        timed_out = time.monotonic() > stream[0][-1] + self._stream_timeout
        if not (failed or timed_out):
            return
        with self._lock:
            if self._stream is not stream:  # replaced or stopped meanwhile
                return
            self._stream = None
            if failed:
                self._block_stream(f"the stream ended in a fault ({state.error_kind})")
            latch = failed and state.error_kind in _LATCHING
            if latch:
                self._latch(state.error_kind, state.message)
        if failed:
            if state.error_kind != "reflex":
                try:
                    with self._start_lock:
                        self.driver.stop()
                except Exception:  # noqa: BLE001 - a lost link cannot take a stop; the report says so
                    pass
            message = f"joint-target stream ended: {state.message}"
            self._report(state.error_kind, message, needs_recovery=latch)
        else:
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

    def _stale(self, stamp: Any) -> str:
        """Why a trajectory stamped ``stamp`` must not start now ("" when it may). Unstamped
        trajectories (a zero stamp) start: their sender did not ask for a deadline."""
        if not (stamp.sec or stamp.nanosec):
            return ""
        age = self.get_clock().now().nanoseconds * 1e-9 - (stamp.sec + stamp.nanosec * 1e-9)
        if age > MAX_TRAJECTORY_AGE_S:
            return (
                f"the trajectory is stamped {age:.1f} s ago (limit {MAX_TRAJECTORY_AGE_S:.0f} s): "
                "it waited too long to start, and its sender may have given up on it"
            )
        if age < -_MAX_TRAJECTORY_AHEAD_S:
            return f"the trajectory is stamped {-age:.2f} s in the future (clocks differ?)"
        return ""

    def _execute(self, goal_handle: Any) -> Any:
        with self._lock:
            if self._busy:
                return self._finish(goal_handle, False, "another trajectory is running", "limit")
            if self._needs_recovery:
                kind, text = self._refusal()
                return self._finish(goal_handle, False, text, kind)
            if self._stream is not None:
                return self._finish(goal_handle, False, "joint targets are streaming", "limit")
            self._busy = True
            self._trajectories += 1
            stops = self._stops
        try:
            return self._run(goal_handle, stops)
        finally:
            with self._lock:
                self._busy = False

    def _run(self, goal_handle: Any, stops: int) -> Any:
        stale = self._stale(goal_handle.request.trajectory.header.stamp)
        if stale:
            self._report("limit", f"trajectory refused: {stale}")
            return self._finish(goal_handle, False, stale, "limit")
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

        def stop_requested() -> bool:
            with self._lock:
                stopped = self._stops != stops
            return bool(stopped or goal_handle.is_cancel_requested)

        try:
            not_started = self._start(stops, times, qs, vels)
        except Exception as exc:  # noqa: BLE001 - the robot refused to start: reported, never raised
            self._report("communication", f"could not start the motion: {exc}")
            return self._finish(goal_handle, False, f"could not start the motion: {exc}", "communication")
        if not_started == _NOT_RECOVERED:
            with self._lock:
                kind, text = self._refusal()
            return self._finish(goal_handle, False, text, kind)
        started = not not_started
        stopping = not started
        state = MotionState(False)
        last = 0.0
        resumes = 0
        total = float(times[-1]) if len(times) else 0.0  # the goal's duration as sent
        done = 0.0  # fraction of the goal's duration behind the motion running now
        share = 1.0  # the running motion's share of the goal's duration
        while started:
            if not stopping and stop_requested():
                stopping = True
                with self._start_lock:
                    self.driver.stop()
            state = self.driver.status()
            if not state.running:
                if (state.error_kind == "limit" and PLANNER_FAULT in state.message
                        and resumes < MAX_RESUMES and not stopping and not stop_requested()):
                    resumed = self._resume(stops, times, qs, vels, float(state.progress), state.message,
                                           stop_requested)
                    if resumed is _ARRIVED:  # it failed within reach of the end: the end is reached
                        state = MotionState(False, 1.0)
                    elif isinstance(resumed, tuple):
                        resumes += 1
                        times, qs, vels = resumed
                        # The rest after the join is what is left of the goal (the join, from
                        # rest, is not part of it).
                        left = float(times[-1] - times[1]) / total if total > 0 and len(times) > 1 else 0.0
                        done, share = max(done, 1.0 - left), left
                        continue
                    elif stop_requested():  # came while it waited to resume: a halt, as any other
                        state = MotionState(False, state.progress, "stopped", state.message)
                break
            if time.monotonic() - last > 0.05:
                feedback.progress = done + share * float(state.progress)
                goal_handle.publish_feedback(feedback)
                last = time.monotonic()
            time.sleep(_POLL_PERIOD)
        if started and not state.error_kind and not (stopping or stop_requested()):
            feedback.progress = 1.0
            goal_handle.publish_feedback(feedback)
            return self._finish(goal_handle, True, "", "")
        canceled = goal_handle.is_cancel_requested
        if not started or state.error_kind in ("", "stopped"):
            # Halted (or never started) by a stop or cancel; one that came as the motion ended
            # is reported as a stop all the same.
            why = "cancel" if canceled else "stop topic"
            self._report("stopped", f"motion halted by the {why}")
            return self._finish(goal_handle, False, f"halted by the {why}", "stopped", canceled=canceled)
        if state.error_kind in _LATCHING:
            # A reflex, or the link lost under a moving arm: the robot's controller holds it; an
            # operator looks before it moves again.
            with self._lock:
                self._latch(state.error_kind, state.message)
            self._report(state.error_kind, state.message, needs_recovery=True)
        else:
            self._report(state.error_kind, state.message)
        return self._finish(goal_handle, False, state.message, state.error_kind)

    def _resume(
        self, stops: int, times: np.ndarray, qs: np.ndarray, vels: np.ndarray | None,
        progress: float, fault: str, stop_requested: Any,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | str | None:
        """Start the rest of a trajectory franky's planner failed part-way (:data:`PLANNER_FAULT`)
        from where the arm rests: the rest as started; :data:`_ARRIVED` when the arm rests at the
        trajectory's end already; or None (the fault then stands) when the arm does not come to
        rest, is in a reflex, stands farther from the path than a new trajectory may start
        (``safety.max_start_deviation``), the rest fails the limit checks, or a stop or cancel
        came meanwhile (``stop_requested()``; a stop's own count also keeps :meth:`_start` from
        starting it)."""
        log = self.get_logger()
        end = time.monotonic() + _RESUME_REST_S
        while True:
            try:
                reading = self.driver.read()
            except Exception as exc:  # noqa: BLE001 - no state: the fault stands
                log.warning(f"not resuming after '{fault}': no arm state ({exc})")
                return None
            if reading.in_reflex:
                log.warning(f"not resuming after '{fault}': the robot is in a reflex")
                return None
            if float(np.max(np.abs(reading.dq))) < _RESUME_REST_SPEED:
                break
            if time.monotonic() > end:
                log.warning(f"not resuming after '{fault}': the arm not at rest in {_RESUME_REST_S:.0f} s")
                return None
            time.sleep(_POLL_PERIOD)
        if float(np.max(np.abs(qs[-1] - reading.q))) < _ARRIVED_RAD:
            log.warning(f"{fault} at {progress:.0%} of the way, the arm already at its end")
            return _ARRIVED
        rest = remaining_trajectory(times, qs, vels, reading.q, progress)
        gap = float(np.max(np.abs(rest[1][1] - reading.q)))
        if gap > self.safety.config.max_start_deviation:
            log.warning(f"not resuming after '{fault}': the arm rests {gap:.3f} rad from the path "
                        f"(a trajectory may start {self.safety.config.max_start_deviation:.3f} rad away)")
            return None
        verdict = self.safety.check_trajectory(rest[0], rest[1], reading.q, rest[2])
        if not verdict.ok:
            log.warning(f"not resuming after '{fault}': the rest fails {verdict.check}: {verdict.message}")
            return None
        if stop_requested():
            return None
        try:
            not_started = self._start(stops, *rest)
        except Exception as exc:  # noqa: BLE001 - the fault stands; this one is logged
            log.warning(f"not resuming after '{fault}': could not start ({exc})")
            return None
        if not_started:
            return None
        log.warning(f"{fault} at {progress:.0%} of the way: following the rest from where the arm rests")
        return rest

    # ------------------------------------------------------------------ services
    def _on_gripper(self, request: Gripper.Request, response: Gripper.Response) -> Gripper.Response:
        with self._lock:
            refused = self._needs_recovery
            text = self._refusal()[1]
        if refused:
            response.success, response.message = False, text
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
            with self._start_lock:  # not beside a reconnection, nor a start
                ok, message = self.driver.recover()
        except Exception as exc:  # noqa: BLE001
            ok, message = False, f"recovery failed: {exc}"
        with self._lock:
            self._recovery_generation += 1
            if ok:
                self._needs_recovery = False
                self._stream_disarmed = False
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
