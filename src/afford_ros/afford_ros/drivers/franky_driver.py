"""The FR3 (or franky-sim) through franky: the :class:`~afford_ros.robot_client.RobotClient`.

Trajectories and streamed chunks both become franky ``JointWaypointMotion``\\ s sent
asynchronously: franky replaces a running motion with a new one smoothly, so a new chunk of
joint targets takes over where the arm is going, and the arm holds the last target once the
motion ends. A stop is libfranka's StopMove (the controller holds the last commanded position).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from afford_core.robots import RobotDescription
from afford_ros.drivers.base import ArmReading, Driver, MotionOutcome
from afford_ros.robot_client import RobotClient, RobotClientConfig

_POLL_PERIOD = 0.01  # s between checks of a running motion (stop, cancel, progress)


class FrankyDriver(Driver):
    """libfranka through franky (see the module docstring)."""

    publishes_state = True

    def __init__(self, node: Any, robot: RobotDescription, params: dict[str, Any], state_group: Any) -> None:
        super().__init__(node, robot, params, state_group)
        if robot.drive != "franky":
            raise ValueError(f"the {robot.name} is not driven through franky (its drive is {robot.drive})")
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

    def follow(
        self,
        times: np.ndarray,
        positions: np.ndarray,
        velocities: np.ndarray | None,
        should_stop: Callable[[], bool],
        progress: Callable[[float], None],
    ) -> MotionOutcome:
        try:
            self.client.follow(times, positions, velocities)
        except Exception as exc:  # noqa: BLE001 - franky refusing to start is reported, never raised
            return "communication", f"could not start the motion: {exc}"
        last = 0.0
        while True:
            stopping = should_stop()
            if stopping:
                self.client.stop()
            try:
                status = self.client.status()
            except Exception as exc:  # noqa: BLE001 - e.g. the connection closed at shutdown
                return "communication", f"lost the robot during the motion: {exc}"
            if not status.running:
                if status.error_kind == "" and (stopping or should_stop()):
                    # The stop arrived as the motion ended: report it as stopped all the same.
                    return "stopped", "motion halted"
                return status.error_kind, status.message
            if time.monotonic() - last > 0.05:
                progress(status.progress)
                last = time.monotonic()
            time.sleep(_POLL_PERIOD)

    def stream(self, times: np.ndarray, positions: np.ndarray) -> None:
        # franky replaces a running asynchronous motion with this one.
        self.client.follow(times, positions, None)

    def stop(self) -> None:
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
        ok = self.client.recover()
        return ok, "recovered" if ok else "the robot refused automatic error recovery"

    def close(self) -> None:
        if self.client.connected:
            self.client.close()
