"""The executor's connection to the arm: a thin, typed wrapper over a franky ``Robot`` and ``Gripper``.

It runs unchanged against the real FR3 (its FCI address) and franky-sim (a loopback address),
since franky-sim speaks the libfranka protocol: the code path is the same down to the wire.
No rclpy here; the executor node calls it, and tests drive it directly.

How a planned trajectory is followed. The planner's output is a dense (100 Hz) joint path with
times. franky generates its own jerk-limited references with Ruckig, so the trajectory is handed
over as a :class:`franky.JointWaypointMotion` whose waypoints are the trajectory's samples every
``waypoint_period`` seconds, each with the trajectory's *velocity* at that sample (so the arm
flows through it instead of stopping) and the sample's time as the waypoint's minimum duration.
Against franky-sim this tracked a curved 3 s path within 0.005 rad of the planned samples,
where zero-velocity waypoints were four times worse and stopped at every waypoint. Before that,
the trajectory is slowed uniformly in time (same path, later times) until its velocities and
accelerations fit franky's limits scaled by the low dynamics factor, because Ruckig refuses a
waypoint velocity above the scaled limit outright ("Motion planner failed ... -100").

How a stop works. :meth:`RobotClient.stop` calls ``franky.Robot.stop``, which sends libfranka's
StopMove: the controller holds the last commanded position and the running motion ends with a
preemption ``ControlException``, which this module reports as ``stopped``, not as a reflex.
``JointStopMotion`` was tried too: it re-targets the position at the moment it takes over, and
on franky-sim the commanded velocity reversed (overshoot and return, 0.2 rad/s backwards), so it
is not used. The measured arm comes to rest (all |dq| < 0.01 rad/s) about 0.4 s after a stop
at 0.32 rad/s on franky-sim (bench/bench_stop.py measures it).

Faults. A reflex (collision, joint or Cartesian limit the robot detects itself) surfaces from
franky as a ``ControlException`` from the motion; the client then reports ``reflex`` and the
caller must refuse motion until :meth:`RobotClient.recover` (libfranka's automatic error
recovery) has been called by an operator. Network faults report ``communication``; a motion
franky cannot generate (its planner refuses) reports ``limit``.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np

ErrorKind = Literal["", "reflex", "limit", "stopped", "communication"]
"""Kinds of fault, as in afford_interfaces/msg/RobotError."""


#: Fingers closer than this (m) after a grasp hold nothing.
EMPTY_GRASP_WIDTH = 0.002


@dataclass
class RobotClientConfig:
    """How the executor talks to the arm.

    Attributes:
        robot_ip: FCI address of the FR3, or the loopback address franky-sim serves on.
        dynamics_factor: franky's global relative dynamics factor in (0, 1]: scales the
            velocity, acceleration and jerk limits of every motion. Kept low by default
            (DESIGN.md section 8); trajectories faster than it allows are slowed, never sped up.
        waypoint_period: Seconds of (time-scaled) trajectory between the waypoints handed to
            franky; shorter follows the samples more closely, but each waypoint is a Ruckig
            segment that must be reachable in its time.
        limit_margin: Fraction of the dynamics-scaled velocity and acceleration limits a
            time-scaled trajectory may use, leaving Ruckig room for its jerk limits.
        enforce_realtime: Refuse to connect when the kernel has no real-time scheduling. The
            lab PC should run a PREEMPT_RT kernel and set this; franky-sim machines do not.
        use_gripper: Connect to the Franka Hand as well.
        gripper_speed: Finger speed for open and grasp (m/s).
        grasp_epsilon: Tolerance (m) around the expected width within which a grasp counts as
            holding an object (libfranka's epsilon_inner and epsilon_outer).
        rest_velocity: Joint speed (rad/s, every joint) under which the arm counts as at rest.
    """

    robot_ip: str = "127.0.0.1"
    dynamics_factor: float = 0.15
    waypoint_period: float = 0.1
    limit_margin: float = 0.9
    enforce_realtime: bool = False
    use_gripper: bool = True
    gripper_speed: float = 0.05
    grasp_epsilon: float = 0.02
    rest_velocity: float = 0.01

    def __post_init__(self) -> None:
        if not self.robot_ip:
            raise ValueError("robot_ip must not be empty")
        if not 0.0 < self.dynamics_factor <= 1.0:
            raise ValueError(f"dynamics_factor must be in (0, 1], got {self.dynamics_factor}")
        if not 0.01 <= self.waypoint_period <= 1.0:
            raise ValueError(f"waypoint_period must be in [0.01, 1] s, got {self.waypoint_period}")
        if not 0.1 <= self.limit_margin <= 1.0:
            raise ValueError(f"limit_margin must be in [0.1, 1], got {self.limit_margin}")
        if not 0.0 < self.gripper_speed <= 0.1:
            raise ValueError(f"gripper_speed must be in (0, 0.1] m/s, got {self.gripper_speed}")
        if not 0.0 < self.grasp_epsilon <= 0.08:
            raise ValueError(f"grasp_epsilon must be in (0, 0.08] m, got {self.grasp_epsilon}")
        if not 0.0 < self.rest_velocity <= 0.1:
            raise ValueError(f"rest_velocity must be in (0, 0.1] rad/s, got {self.rest_velocity}")


@dataclass(frozen=True)
class ArmState:
    """One reading of the arm.

    Attributes:
        q: (7,) joint angles (rad).
        dq: (7,) measured joint velocities (rad/s).
        gripper_width: Finger opening (m); NaN without a gripper.
        in_reflex: The robot reports its reflex (error) mode.
        stamp: ``time.monotonic()`` of the reading.
    """

    q: np.ndarray
    dq: np.ndarray
    gripper_width: float
    in_reflex: bool
    stamp: float


@dataclass(frozen=True)
class MotionStatus:
    """Where the running (or last) motion stands.

    Attributes:
        running: A motion is still being executed.
        progress: Fraction of the planned (time-scaled) duration elapsed, 0..1.
        error_kind: Why the motion ended early; empty while running or on success.
        message: The fault in words (franky's exception text), empty when none.
    """

    running: bool
    progress: float
    error_kind: ErrorKind = ""
    message: str = ""


@dataclass(frozen=True)
class FollowPlan:
    """A trajectory turned into franky waypoints.

    Attributes:
        times: (W,) time (s) of each waypoint after time scaling, from the motion's start.
        positions: (W, 7) waypoint joint angles.
        velocities: (W, 7) waypoint joint velocities after time scaling (zero at the end).
        scale: Factor the trajectory's times were stretched by (>= 1).
        duration: Planned duration (s) of the scaled trajectory.
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    scale: float
    duration: float


_SAME_POSITION = 1e-6  # rad: waypoints closer than this on every joint are one position


def plan_waypoints(
    times: np.ndarray,
    positions: np.ndarray,
    velocity_limits: np.ndarray,
    acceleration_limits: np.ndarray,
    waypoint_period: float,
    velocities: np.ndarray | None = None,
) -> FollowPlan:
    """Slow a trajectory uniformly to fit the limits and pick the waypoints franky follows.

    Args:
        times: (T,) strictly increasing times (s) from the motion's start.
        positions: (T, 7) joint angles.
        velocity_limits: (7,) allowed joint speeds (already scaled by dynamics factor and margin).
        acceleration_limits: (7,) allowed joint accelerations, scaled likewise.
        waypoint_period: Seconds of scaled trajectory between waypoints.
        velocities: Optional (T, 7) velocities; finite differences of the samples when absent.
    """
    t = np.asarray(times, dtype=np.float64)
    q = np.asarray(positions, dtype=np.float64)
    if t.shape[0] >= 2:
        v = np.asarray(velocities, dtype=np.float64) if velocities is not None else np.gradient(q, t, axis=0)
        a = np.gradient(v, t, axis=0)
    else:
        v = np.zeros_like(q)
        a = np.zeros_like(q)
    v_ratio = float(np.max(np.abs(v) / velocity_limits)) if v.size else 0.0
    a_ratio = float(np.max(np.abs(a) / acceleration_limits)) if a.size else 0.0
    # Stretching time by k divides velocities by k and accelerations by k^2.
    scale = max(1.0, v_ratio, float(np.sqrt(a_ratio)))
    ts = t * scale
    vs = v / scale

    chosen: list[int] = []
    # The first waypoint a period in at the earliest: a streamed chunk's first target is ~20 ms
    # ahead, and a segment that short from a moving arm made franky's planner fail (-111).
    next_time = max(ts[0], waypoint_period)
    for i in range(t.shape[0]):
        if ts[i] >= next_time - 1e-9:
            chosen.append(i)
            next_time = ts[i] + waypoint_period
    if not chosen or chosen[-1] != t.shape[0] - 1:
        chosen.append(t.shape[0] - 1)
    # A run of waypoints at one position (a policy holding still) is one waypoint, reached with
    # zero velocity: franky's planner (ruckig) failed on such runs now and then (error -111).
    kept: list[int] = []
    still: list[bool] = []  # per kept waypoint: the first of a run at one position
    for i in chosen:
        if kept and np.max(np.abs(q[i] - q[kept[-1]])) < _SAME_POSITION:
            still[-1] = True
            continue
        kept.append(i)
        still.append(False)
    idx = np.array(kept)
    wp_v = vs[idx].copy()
    wp_v[np.array(still)] = 0.0
    wp_v[-1] = 0.0
    return FollowPlan(ts[idx], q[idx].copy(), wp_v, scale, float(ts[-1]))


def _set_scheduling(policy: int, priority: int) -> None:
    import os

    os.sched_setscheduler(0, policy, os.sched_param(priority))


def _leave_realtime_scheduling() -> tuple[int, int] | None:
    """Put the calling thread back on the normal scheduler; returns the (policy, priority) it
    had when that was a real-time one, else None.

    franky's ``Robot()`` moves the thread that builds it to SCHED_FIFO (priority 99) even with
    ``RealtimeConfig.Ignore``, wherever the process may do so (as root in a container, say), and
    every thread started from it afterwards inherits that: in the executor node, all of rclpy's
    worker threads. Busy Python at priority 99 then starved franky-sim and every other process
    of a 2-core machine, and the executor's own callbacks waited seconds (measured: chunks of
    joint targets delivered 1-5 s late, a gripper width read taking 0.9 s). Only the motion's
    control loop, which franky runs in a thread of its own, keeps the priority franky gave
    (see :meth:`RobotClient.connect`)."""
    import os

    if not hasattr(os, "sched_setscheduler"):
        return None
    policy = os.sched_getscheduler(0)
    if policy not in (os.SCHED_FIFO, os.SCHED_RR):
        return None
    given = (policy, os.sched_getparam(0).sched_priority)
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except OSError:  # not permitted: leave it as it is
        return None
    return given


class RobotClient:
    """Connection to one FR3 (or franky-sim) and its gripper, safe to use from several threads.

    ``follow`` returns at once; ``status`` polls; ``stop`` can be called from any thread while a
    motion runs. The caller is responsible for the limit checks (:mod:`afford_planner.safety`)
    and for refusing motion after a reflex until :meth:`recover`.
    """

    def __init__(self, config: RobotClientConfig | None = None) -> None:
        self.config = config or RobotClientConfig()
        self._robot: object | None = None
        self._gripper: object | None = None
        self._lock = threading.Lock()
        self._motion_start = 0.0
        self._motion_duration = 0.0
        self._stop_requested = False
        self._last_status = MotionStatus(False, 0.0)
        self._mover: ThreadPoolExecutor | None = None  # starts motions at real-time priority

    # ------------------------------------------------------------------ connection
    def connect(self) -> None:
        """Connect to the robot (and gripper); raises ``franky.NetworkException`` when unreachable."""
        import franky  # imported here so the module (and its pure helpers) load without franky

        cfg = self.config
        rt = franky.RealtimeConfig.Enforce if cfg.enforce_realtime else franky.RealtimeConfig.Ignore
        robot = franky.Robot(cfg.robot_ip, relative_dynamics_factor=cfg.dynamics_factor, realtime_config=rt)
        self._robot = robot
        self._gripper = franky.Gripper(cfg.robot_ip) if cfg.use_gripper else None
        if not cfg.enforce_realtime:
            given = _leave_realtime_scheduling()
            if given is not None:
                # Motions are started from one thread kept at the priority franky gave: the
                # control loop franky starts for a motion inherits it, and the loop (blocked on
                # the robot's packets most of the time) is what needs it, not Python.
                self._mover = ThreadPoolExecutor(
                    1, thread_name_prefix="franky-motion", initializer=_set_scheduling, initargs=given
                )
        self._vmax = np.asarray(robot.joint_velocity_limit.max, dtype=np.float64)  # type: ignore[attr-defined]
        self._amax = np.asarray(robot.joint_acceleration_limit.max, dtype=np.float64)  # type: ignore[attr-defined]

    def reconnect(self) -> None:
        """Drop the connection and make a new one (after libfranka gave the old one up).

        The old ``franky.Robot`` and ``Gripper`` are released first (their sockets close): the
        server serves one client at a time. Raises ``franky.NetworkException`` while the robot
        cannot be reached; the client is then left unconnected.
        """
        import gc

        self._robot = None
        self._gripper = None
        if self._mover is not None:
            self._mover.shutdown(wait=False)
            self._mover = None
        gc.collect()  # franky closes the sockets when the objects go
        with self._lock:
            self._stop_requested = False
            self._last_status = MotionStatus(False, 0.0)
        self.connect()

    @property
    def connected(self) -> bool:
        return self._robot is not None

    def _require(self):  # noqa: ANN202 - franky's Robot type, imported lazily
        if self._robot is None:
            raise RuntimeError("RobotClient is not connected; call connect() first")
        return self._robot

    def close(self) -> None:
        """Stop any motion and drop the connection."""
        if self._robot is not None:
            try:
                self.stop()
            finally:
                self._robot = None
                self._gripper = None
                if self._mover is not None:
                    self._mover.shutdown(wait=False)
                    self._mover = None

    # ------------------------------------------------------------------ state
    def read_state(self) -> ArmState:
        """One consistent reading of joints, velocities and the robot mode, plus the gripper width."""
        import franky

        robot = self._require()
        s = robot.state
        width = float(self._gripper.width) if self._gripper is not None else float("nan")  # type: ignore[attr-defined]
        return ArmState(
            q=np.array(s.q, dtype=np.float64),
            dq=np.array(s.dq, dtype=np.float64),
            gripper_width=width,
            in_reflex=s.robot_mode == franky.RobotMode.Reflex,
            stamp=time.monotonic(),
        )

    def wait_until_at_rest(self, timeout: float = 3.0, hold: float = 0.05) -> float | None:
        """Seconds until every |dq| stays below ``rest_velocity`` for ``hold`` s; None on timeout."""
        robot = self._require()
        t0 = time.monotonic()
        calm_since: float | None = None
        while (now := time.monotonic()) - t0 < timeout:
            if float(np.max(np.abs(robot.current_joint_velocities))) < self.config.rest_velocity:
                calm_since = now if calm_since is None else calm_since
                if now - calm_since >= hold:
                    return calm_since - t0
            else:
                calm_since = None
            time.sleep(0.001)
        return None

    # ------------------------------------------------------------------ motion
    def plan(
        self, times: np.ndarray, positions: np.ndarray, velocities: np.ndarray | None = None
    ) -> FollowPlan:
        """The waypoints :meth:`follow` would send for this trajectory (nothing is sent)."""
        self._require()
        factor = self.config.dynamics_factor * self.config.limit_margin
        return plan_waypoints(
            times,
            positions,
            self._vmax * factor,
            self._amax * factor,
            self.config.waypoint_period,
            velocities,
        )

    def follow(
        self, times: np.ndarray, positions: np.ndarray, velocities: np.ndarray | None = None
    ) -> FollowPlan:
        """Start following a (checked) trajectory asynchronously; returns the plan it follows."""
        import franky

        robot = self._require()
        plan = self.plan(times, positions, velocities)
        waypoints = []
        previous = 0.0
        for t, q, v in zip(plan.times, plan.positions, plan.velocities, strict=True):
            ms = max(1, int(round((t - previous) * 1000.0)))
            waypoints.append(
                franky.JointWaypoint(
                    franky.JointState(q.astype(np.float64), v.astype(np.float64)),
                    minimum_time=franky.Duration(ms),
                )
            )
            previous = float(t)
        motion = franky.JointWaypointMotion(waypoints)
        with self._lock:
            halted = self._stop_requested
        if halted:
            # A motion halted by stop() ends in libfranka's "preempted" exception, which franky
            # keeps for whoever joins it next; nobody polled a halted *streamed* motion, so
            # consume that outcome here, or this move would raise it.
            try:
                robot.join_motion(1.0)
            except franky.ControlException as exc:
                if "preempted" not in str(exc).lower():
                    raise
        with self._lock:
            self._stop_requested = False
            self._motion_start = time.monotonic()
            self._motion_duration = plan.duration
            self._last_status = MotionStatus(True, 0.0)
        if self._mover is not None:
            self._mover.submit(robot.move, motion, asynchronous=True).result()
        else:
            robot.move(motion, asynchronous=True)
        return plan

    def status(self) -> MotionStatus:
        """Poll the running motion; a finished motion's outcome is kept until the next ``follow``."""
        import franky

        robot = self._require()
        with self._lock:
            if not self._last_status.running:
                return self._last_status
            elapsed = time.monotonic() - self._motion_start
            progress = min(1.0, elapsed / self._motion_duration) if self._motion_duration > 0 else 1.0
        try:
            # join_motion(0) answers "finished?" and re-raises the motion's exception; franky
            # 2.0's poll_motion returns True when the motion has *finished*, against its docs.
            running = not bool(robot.join_motion(0.0))
            status = MotionStatus(running, progress if running else 1.0)
        except franky.ControlException as exc:
            with self._lock:
                stopped = self._stop_requested
            if stopped and "preempted" in str(exc).lower():
                status = MotionStatus(False, progress, "stopped", "motion halted by a stop request")
            else:
                status = MotionStatus(False, progress, "reflex", str(exc))
        except (franky.NetworkException, franky.ProtocolException, franky.CommandException) as exc:
            status = MotionStatus(False, progress, "communication", str(exc))
        except RuntimeError as exc:  # franky's own planner refused the motion
            status = MotionStatus(False, progress, "limit", str(exc))
        with self._lock:
            if not status.running:
                self._last_status = status
        return status

    def stop(self) -> None:
        """Halt any motion at once (libfranka StopMove); safe from any thread, idempotent."""
        robot = self._require()
        with self._lock:
            self._stop_requested = True
        robot.stop()

    def recover(self) -> bool:
        """libfranka's automatic error recovery; True when the robot left its error state."""
        robot = self._require()
        ok = bool(robot.recover_from_errors())
        # franky answers from one state read right after the command, which can be a packet the
        # robot sent before it processed the recovery (seen with franky-sim while another thread
        # read the state at 100 Hz); so judge by the states that follow, for a moment.
        deadline = time.monotonic() + 1.0
        while not ok and time.monotonic() < deadline:
            time.sleep(0.01)
            ok = not bool(robot.has_errors)
        with self._lock:
            self._last_status = MotionStatus(False, 0.0)
        return ok

    # ------------------------------------------------------------------ gripper
    def gripper_open(self, width: float) -> tuple[bool, float]:
        """Move the fingers to ``width`` (m); returns (success, measured width)."""
        gripper = self._require_gripper()
        ok = bool(gripper.move(float(width), self.config.gripper_speed))
        return ok, float(gripper.width)

    def gripper_grasp(self, width: float, force: float) -> tuple[bool, float]:
        """Close on an object expected ``width`` wide with ``force`` N; (holding it, measured width).

        ``width <= 0`` means no expected width (a skill closing on what it approached): any
        object between the fingers counts, closing on nothing (fingers within
        ``EMPTY_GRASP_WIDTH``) does not.
        """
        gripper = self._require_gripper()
        if width > 0.0:
            eps = self.config.grasp_epsilon
            ok = bool(gripper.grasp(float(width), self.config.gripper_speed, float(force), eps, eps))
            return ok, float(gripper.width)
        gripper.grasp(0.0, self.config.gripper_speed, float(force), 0.0, 0.08)
        measured = float(gripper.width)
        return measured > EMPTY_GRASP_WIDTH, measured

    def _require_gripper(self):  # noqa: ANN202 - franky's Gripper type, imported lazily
        self._require()
        if self._gripper is None:
            raise RuntimeError("no gripper: RobotClientConfig.use_gripper is False")
        return self._gripper
