"""The FR3 (or franky-sim) through franky: the :class:`~afford_ros.robot_client.RobotClient`.

Trajectories and streamed chunks both become franky ``JointWaypointMotion``\\ s sent
asynchronously: franky replaces a running motion with a new one smoothly, so a new chunk of
joint targets takes over where the arm is going, and the arm holds the last target once the
motion ends. A stop is libfranka's StopMove (the controller holds the last commanded position).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from afford_core.robots import RobotDescription
from afford_ros.drivers.base import ArmReading, Driver, MotionState
from afford_ros.robot_client import RobotClient, RobotClientConfig

_SAME_POSITION = 1e-4  # rad: a hold this close to where the arm stands is already done
_AT_REST = 0.01  # rad/s on every joint


class FrankyDriver(Driver):
    """libfranka through franky (see the module docstring)."""

    publishes_state = True
    # franky's join_motion, which status() polls, blocked the whole process for up to 0.8 s on
    # franky-sim while chunks replaced each other (measured): a stream's faults are read at its
    # end; a reflex shows in the robot state the node publishes at 100 Hz meanwhile.
    status_while_streaming = False

    def __init__(self, node: Any, robot: RobotDescription, params: dict[str, Any], state_group: Any) -> None:
        super().__init__(node, robot, params, state_group)
        if robot.drive != "franky":
            raise ValueError(f"the {robot.name} is not driven through franky (its drive is {robot.drive})")
        self._goal: np.ndarray | None = None  # where the motion sent last ends (None: halted)
        self.client = RobotClient(
            RobotClientConfig(
                robot_ip=str(params["robot_ip"]),
                dynamics_factor=float(params["dynamics_factor"]),
                enforce_realtime=bool(params["enforce_realtime"]),
            )
        )

    def connect(self, timeout: float) -> None:
        """Connect, retrying refused connections until ``timeout``; then let the error out (a
        booting FR3 or a franky-sim still starting refuses connections for a while)."""
        import franky

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
                    where = self.client.config.robot_ip
                    self.node.get_logger().info(f"waiting for the robot at {where}: {err}")
                    said = True
                time.sleep(0.5)

    def current_q(self) -> np.ndarray:
        return self.client.read_state().q

    def read(self) -> ArmReading:
        s = self.client.read_state()
        return ArmReading(q=s.q, dq=s.dq, gripper_width=s.gripper_width, in_reflex=s.in_reflex)

    def start(
        self, times: np.ndarray, positions: np.ndarray, velocities: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        times = np.asarray(times, dtype=np.float64)
        positions = np.asarray(positions, dtype=np.float64)
        if np.ptp(positions, axis=0).max() < _SAME_POSITION:
            # A hold. franky's planner failed (error -111) on a motion to where the arm already
            # goes or stands; the running (or last) motion ends there already: nothing to send.
            hold = positions[0]
            s = self.client.read_state()
            at_rest_there = np.max(np.abs(s.q - hold)) < _SAME_POSITION and np.max(np.abs(s.dq)) < _AT_REST
            bound_there = self._goal is not None and np.max(np.abs(self._goal - hold)) < _SAME_POSITION
            if at_rest_there or bound_there:
                return times, positions
        # franky replaces a running asynchronous motion with this one.
        plan = self.client.follow(times, positions, velocities)
        self._goal = positions[-1].copy()
        return times * plan.scale, positions

    def status(self) -> MotionState:
        try:
            s = self.client.status()
        except Exception as exc:  # noqa: BLE001 - e.g. the connection closed at shutdown
            self._goal = None
            return MotionState(False, 0.0, "communication", f"lost the robot during the motion: {exc}")
        if s.error_kind:
            self._goal = None  # it ended short of its goal
        return MotionState(s.running, s.progress, s.error_kind, s.message)

    def stop(self) -> None:
        self._goal = None  # halted short of it
        self.client.stop()

    def gripper(self, command: str, width: float, force: float) -> tuple[bool, float, str]:
        if command == "open":
            ok, now = self.client.gripper_open(width)
        else:
            ok, now = self.client.gripper_grasp(width, force)
        if ok:
            return True, now, ""
        if command == "grasp" and width <= 0.0:
            return False, now, f"the fingers closed on nothing (width {now:.4f} m)"
        return False, now, f"{command} did not reach the expected width (now {now:.4f} m)"

    def recover(self) -> tuple[bool, str]:
        self._goal = None
        renewed = "reconnected; " if self.reconnect_if_lost() else ""
        ok = self.client.recover()
        return ok, renewed + ("recovered" if ok else "the robot refused automatic error recovery")

    def reconnect_if_lost(self) -> bool:
        """libfranka gives a connection up for good after a communication fault (a UDP receive
        timeout: every later call raises "Net Exception"); a new one is made in its place
        (franky-sim, like the robot, takes one client at a time: the old one goes first)."""
        try:
            self.client.read_state()
            return False
        except Exception:  # noqa: BLE001 - a lost link: libfranka's Robot object is dead for good
            pass
        # Outside the except block, whose traceback holds the dead connection.
        self._goal = None
        self.client.reconnect()
        return True

    def close(self) -> None:
        if self.client.connected:
            self.client.close()
