"""Joint position commands streamed on a topic; the state comes from the world's /joint_states.

For Isaac Sim, which has no libfranka server: each checked motion (a trajectory or a streamed
chunk) is published at 100 Hz, interpolated through its points at their times, as
``sensor_msgs/JointState`` commands on the
node's ``joint_command_topic``, which Isaac Sim's articulation controller follows (arm joints by
their kinematic names, fingers by the simulator's). A stop holds the arm where the world last
reported it, or at the last point sent when that report is stale; never at an old reading. The
same safety checks apply as with franky.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from afford_core.robots import RobotDescription
from afford_ros import contract
from afford_ros.drivers.base import Driver, MotionState, StaleState
from afford_ros.qos import qos_profile

_POLL_PERIOD = 0.01  # s between checks while waiting for a point's time or the gripper
_COMMAND_PERIOD = 0.01  # s between joint commands (100 Hz; targets in between are interpolated)
_FRESH_S = 0.5  # a measured state older than this is not where the arm is
# A state older than state_timeout_s is first waited for this long before the world counts as
# silent: when this process itself was stalled (a loaded machine deschedules it for a second or
# two), the world's states are queued, not missing, and the thread polling the status can wake
# before the one that delivers them.
_DELIVERY_GRACE_S = 0.5
_GRIPPER_SETTLE_S = 0.3  # the fingers count as still once the width has not changed for this long
_GRIPPER_TIMEOUT_S = 5.0
_OPEN_TOLERANCE_M = 0.005  # an open reaching this close to its width succeeded
_EMPTY_GRASP_M = 0.002  # a grasp that closes below this closed on nothing


class TopicDriver(Driver):
    """Joint commands on a topic (see the module docstring)."""

    def __init__(self, node: Any, robot: RobotDescription, params: dict[str, Any], state_group: Any) -> None:
        super().__init__(node, robot, params, state_group)
        self._arm = contract.arm_joints(robot)
        self._width_joint = contract.finger_width_joint(robot)
        self._frame = contract.base_frame(robot)
        topic = str(params["joint_command_topic"])
        self._pub = node.create_publisher(JointState, topic, qos_profile("reliable"))
        self._state_timeout = float(params["state_timeout_s"])
        self._lock = threading.Lock()
        self._q: np.ndarray | None = None
        self._width = float("nan")
        self._stamp = 0.0
        self._stop = threading.Event()
        # Checked and sent under this lock, which stop() holds while it commands the hold, so no
        # trajectory point can follow the hold command.
        self._send_lock = threading.Lock()
        self._generation = 0
        self._last_sent: np.ndarray | None = None
        # The motion started last: (generation, start time, duration); its outcome once ended.
        self._motion: tuple[int, float, float] = (0, 0.0, 0.0)
        self._outcome: dict[int, str] = {0: ""}
        self._fault = ""
        node.create_subscription(
            JointState,
            "/joint_states",
            self._on_state,
            qos_profile(contract.topic("/joint_states").qos),
            callback_group=state_group,
        )

    def _on_state(self, msg: JointState) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        if not all(j in index for j in self._arm):
            return
        with self._lock:
            self._q = np.array([msg.position[index[j]] for j in self._arm])
            if self._width_joint in index:
                self._width = float(msg.position[index[self._width_joint]])
            self._stamp = time.monotonic()

    def fresh_q(self, max_age: float = _FRESH_S, wait: float = 0.0) -> np.ndarray:
        """The last measured arm joints, no older than ``max_age`` seconds; waits up to ``wait``
        seconds for such a reading (a loaded world publishes in bursts), then raises
        :class:`StaleState`."""
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

    def current_q(self) -> np.ndarray:
        return self.fresh_q(wait=self._state_timeout)

    def width(self) -> float:
        with self._lock:
            return self._width

    def command(self, names: tuple[str, ...], values: np.ndarray) -> None:
        msg = JointState(header=Header(stamp=self.node.get_clock().now().to_msg(), frame_id=self._frame))
        msg.name = list(names)
        msg.position = [float(v) for v in values]
        self._pub.publish(msg)

    def _send(self, times: np.ndarray, positions: np.ndarray, generation: int, t0: float) -> None:
        """Publish each point at its time (a thread per motion); ends early when stopped or
        replaced, recording how it ended."""
        outcome = ""
        for t, q in zip(times, positions, strict=True):
            while (wait := t0 + float(t) - time.monotonic()) > 0:
                if self._stop.wait(min(wait, _POLL_PERIOD)) or generation != self._generation:
                    break
            with self._send_lock:
                if self._stop.is_set() or generation != self._generation:
                    outcome = "stopped"
                    break
                try:
                    self.command(self._arm, q)
                except Exception as exc:  # noqa: BLE001 - e.g. the node shutting down mid-motion
                    outcome, self._fault = "communication", f"could not publish a joint command: {exc}"
                    break
                self._last_sent = np.asarray(q, dtype=np.float64).copy()
        with self._send_lock:
            self._outcome[generation] = outcome

    def start(
        self, times: np.ndarray, positions: np.ndarray, velocities: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        times = np.asarray(times, dtype=np.float64)
        positions = np.asarray(positions, dtype=np.float64)
        grid, commands = self._resample(times, positions)
        t0 = time.monotonic()
        with self._send_lock:
            self._stop.clear()
            self._generation += 1  # the motion still being sent, if any, ends at its next point
            generation = self._generation
            self._outcome = {generation: "running"}
            self._motion = (generation, t0, float(times[-1]))
        threading.Thread(target=self._send, args=(grid, commands, generation, t0), daemon=True).start()
        return times, positions

    def _resample(self, times: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The motion as commands every ``_COMMAND_PERIOD`` from now, linear from where the arm
        is being sent (the point last sent while a motion runs, else where it is) through each
        target at its time. Sent as they come, a chunk's first target would wait for its time
        and a chunk replaced before then would send nothing: the arm would stand still while
        the node's checks took it to be moving along."""
        with self._send_lock:
            running = self._outcome.get(self._motion[0]) == "running"
            origin = self._last_sent if running else None
        if origin is None:
            try:
                origin = self.fresh_q()
            except StaleState:
                origin = positions[0]
        first = [times[:1]] if times[0] <= 0.0 else []  # a point due now goes out at once
        if times[0] > 0.0:
            times, positions = np.r_[0.0, times], np.vstack([origin, positions])
        # Every target at its own time, and evenly spaced commands in the gaps between them.
        pieces = [
            a + (b - a) * np.arange(1, n + 1) / n
            for a, b in zip(times[:-1], times[1:], strict=True)
            for n in [max(1, int(np.ceil((b - a) / _COMMAND_PERIOD - 1e-6)))]
        ]
        grid = np.concatenate(first + pieces) if first or pieces else times
        commands = np.column_stack([np.interp(grid, times, q_j) for q_j in positions.T])
        return grid, commands

    def status(self) -> MotionState:
        with self._send_lock:
            generation, t0, duration = self._motion
            outcome = self._outcome.get(generation, "stopped")
        age, seen = self._state_age()
        if generation and (not seen or age > self._state_timeout):
            grace_end = time.monotonic() + _DELIVERY_GRACE_S
            while time.monotonic() < grace_end and (not seen or age > self._state_timeout):
                time.sleep(_POLL_PERIOD)
                age, seen = self._state_age()
        if generation and (not seen or age > self._state_timeout):
            # The world stopped answering (Isaac Sim closed or stalled): what the arm does is unknown.
            return MotionState(False, 0.0, "communication",
                               f"no /joint_states from the world for {age:.1f} s (state_timeout_s "
                               f"{self._state_timeout:.1f})")
        progress = min(1.0, (time.monotonic() - t0) / duration) if duration > 0 else 1.0
        if outcome == "running":
            return MotionState(True, progress)
        if outcome == "stopped":
            return MotionState(False, progress, "stopped", "motion halted by a stop")
        if outcome == "communication":
            return MotionState(False, progress, "communication", self._fault)
        return MotionState(False, 1.0)

    def _state_age(self) -> tuple[float, bool]:
        """Seconds since the world's last state arrived, and whether one ever did."""
        with self._lock:
            stamp, seen = self._stamp, self._q is not None
        return time.monotonic() - stamp, seen

    def stop(self) -> None:
        """End the motion and hold the arm where the world last reported it (the last point
        sent when that report is stale); once: a stop already in force commands nothing more,
        and with nothing ever sent there is nothing to hold."""
        with self._send_lock:
            if self._stop.is_set():
                return
            self._stop.set()
            self._generation += 1
            if self._last_sent is None:
                return
            try:
                hold = self.fresh_q()
            except StaleState:
                hold = self._last_sent  # where the arm was last sent: it is at or near it
            self.command(self._arm, hold)
            self._last_sent = hold

    def gripper(self, command: str, width: float, force: float) -> tuple[bool, float, str]:
        """Command the simulator's finger joints, then wait until the width the world reports has
        settled and judge it as franky does: an open must reach its width; a grasp must stop on
        something. (The force is the articulation's drive setting in Isaac, not a command.)"""
        sim = self.robot.sim
        gripper = self.robot.gripper
        targets = np.asarray(gripper.finger_positions(width), dtype=np.float64)
        if len(sim.finger_joints) != len(targets):
            raise ValueError(f"the {self.robot.name}'s simulator fingers do not match its gripper model")
        self.command(sim.finger_joints, targets)
        deadline = time.monotonic() + _GRIPPER_TIMEOUT_S
        last, still_since = self.width(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(_POLL_PERIOD)
            now = self.width()
            if not np.isfinite(now) or abs(now - last) > 0.0005:
                last, still_since = now, time.monotonic()
            elif time.monotonic() - still_since > _GRIPPER_SETTLE_S:
                break
        else:
            return False, last, f"{command}: the width reported on /joint_states did not settle"
        if command == "open":
            if last >= width - _OPEN_TOLERANCE_M:
                return True, last, ""
            return False, last, f"open did not reach the expected width (now {last:.4f} m)"
        if last < _EMPTY_GRASP_M:
            return False, last, f"the fingers closed on nothing (width {last:.4f} m)"
        return True, last, ""
