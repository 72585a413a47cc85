"""The driver interface the executor node commands a robot through (see the package docstring)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from afford_core.robots import RobotDescription

MotionOutcome = tuple[str, str]
"""(error kind, message) of a finished motion: ``("", "")`` when it completed; kinds as in
``afford_interfaces/msg/RobotError`` (``stopped``, ``reflex``, ``limit``, ``communication``)."""


class StaleState(RuntimeError):
    """The robot's joint state is missing or too old to start a motion from."""


@dataclass(frozen=True)
class ArmReading:
    """One reading of the arm, for ``/joint_states`` (drivers that publish the state)."""

    q: np.ndarray
    dq: np.ndarray
    gripper_width: float
    in_reflex: bool


class Driver(ABC):
    """One kind of connection to a robot.

    Args:
        node: The executor node (for topics, parameters and logging).
        robot: The robot's description (joint names, gripper).
        params: The node's driver parameters (``robot_ip``, ``dynamics_factor`` ...).
        state_group: The callback group for state subscriptions.
    """

    #: The node publishes /joint_states from :meth:`read` (else the world publishes them).
    publishes_state: ClassVar[bool] = False

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
    def follow(
        self,
        times: np.ndarray,
        positions: np.ndarray,
        velocities: np.ndarray | None,
        should_stop: Callable[[], bool],
        progress: Callable[[float], None],
    ) -> MotionOutcome:
        """Run a checked trajectory to its end (blocking); halt when ``should_stop()`` turns true."""

    @abstractmethod
    def stream(self, times: np.ndarray, positions: np.ndarray) -> None:
        """Start a checked chunk of joint targets (times from now), replacing any chunk still
        running; returns at once. After the last target the arm holds it."""

    @abstractmethod
    def stop(self) -> None:
        """Halt any motion or stream at once; the arm holds where it is."""

    @abstractmethod
    def gripper(self, command: str, width: float, force: float) -> tuple[bool, float, str]:
        """Run a checked gripper command; returns (success, width now, message)."""

    def recover(self) -> tuple[bool, str]:
        """The robot's error recovery (an operator's explicit action); (success, message)."""
        return True, "recovered"

    def close(self) -> None:
        """Stop and let go of the robot (the node is shutting down)."""
        self.stop()
