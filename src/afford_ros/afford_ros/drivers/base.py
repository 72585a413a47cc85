"""The driver interface the executor node commands a robot through (see the package docstring)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from afford_core.robots import RobotDescription


class StaleState(RuntimeError):
    """The robot's joint state is missing or too old to start a motion from."""


@dataclass(frozen=True)
class ArmReading:
    """One reading of the arm, for ``/joint_states`` (drivers that publish the state)."""

    q: np.ndarray
    dq: np.ndarray
    gripper_width: float
    in_reflex: bool


@dataclass(frozen=True)
class MotionState:
    """Where the motion started last stands.

    Attributes:
        running: Its targets are still being sent (after the last one the arm holds it).
        progress: Fraction of its duration done, 0..1.
        error_kind: Why it ended early, as in ``afford_interfaces/msg/RobotError`` (``stopped``,
            ``reflex``, ``limit``, ``communication``); empty while it runs and when it completed.
        message: The fault in words; empty when none.
    """

    running: bool
    progress: float = 0.0
    error_kind: str = ""
    message: str = ""


class Driver(ABC):
    """One kind of connection to a robot.

    Trajectories and streamed chunks reach a driver the same way: :meth:`start` (the node has
    checked the motion; the driver never alters it beyond slowing it to fit the robot's
    dynamics), then :meth:`status` polled until it ends, and :meth:`stop` at any time. The node
    serialises starts and stops, so a driver need not guard against a start racing a stop.

    Args:
        node: The executor node (for topics, parameters and logging).
        robot: The robot's description (joint names, gripper).
        params: The node's driver parameters (``robot_ip``, ``dynamics_factor`` ...).
        state_group: The callback group for state subscriptions.
    """

    #: The node publishes /joint_states from :meth:`read` (else the world publishes them).
    publishes_state: ClassVar[bool] = False
    #: :meth:`status` is cheap enough to poll while a stream's chunks replace each other (else
    #: the node asks once the stream's last target is due).
    status_while_streaming: ClassVar[bool] = True

    def __init__(self, node: Any, robot: RobotDescription, params: dict[str, Any], state_group: Any) -> None:
        self.node = node
        self.robot = robot
        self.params = params

    def connect(self, timeout: float) -> None:  # noqa: B027 - nothing to connect for most drivers
        """Reach the robot, retrying until ``timeout`` seconds; raise when it cannot be reached."""

    @abstractmethod
    def current_q(self) -> np.ndarray:
        """The measured arm joints; raises :class:`StaleState` (or a connection error) without
        a reading fresh enough to start a motion from."""

    def read(self) -> ArmReading:
        """A full reading for /joint_states (drivers with ``publishes_state``)."""
        raise NotImplementedError

    @abstractmethod
    def start(
        self, times: np.ndarray, positions: np.ndarray, velocities: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Start a checked motion (``times`` in seconds from now), replacing any motion still
        running; returns at once with the (times, positions) the robot will really follow (a
        driver may slow a motion down to fit the robot's dynamics). After the last target the
        arm holds it."""

    @abstractmethod
    def status(self) -> MotionState:
        """The motion started last: running, or how it ended. A driver that can tell that the
        robot stopped answering reports ``communication`` here."""

    @abstractmethod
    def stop(self) -> None:
        """Halt any motion at once; the arm holds where it is. Idempotent."""

    @abstractmethod
    def gripper(self, command: str, width: float, force: float) -> tuple[bool, float, str]:
        """Run a checked gripper command; returns (success, width now, message)."""

    def recover(self) -> tuple[bool, str]:
        """The robot's error recovery (an operator's explicit action); (success, message)."""
        return True, "recovered"

    def reconnect_if_lost(self) -> bool:
        """When the robot's connection is lost, drop it and make a new one; True when it did
        (raises while the robot cannot be reached). Only the state stream comes back; nothing
        moves. A driver without a connection of its own has nothing to renew."""
        return False

    def close(self) -> None:
        """Stop and let go of the robot (the node is shutting down)."""
        self.stop()
