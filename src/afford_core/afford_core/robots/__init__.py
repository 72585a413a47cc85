"""Robots by name: each a :class:`RobotDescription` (``afford robots`` lists them).

    from afford_core.robots import get_robot
    fr3 = get_robot("fr3")

A new robot is a description registered here (docs/adding_a_robot.md); robots whose models need
heavy imports to build are still cheap to describe, since ``kinematics`` is only called on use.
"""

from afford_core.registry import Registry
from afford_core.robots.description import (
    DRIVES,
    HOME_TCP_ROTATION,
    DriveKind,
    GripperDescription,
    RobotDescription,
    SimBinding,
)
from afford_core.robots.fr3 import FR3
from afford_core.robots.kinova3 import KINOVA3
from afford_core.robots.panda import PANDA
from afford_core.robots.sawyer import SAWYER
from afford_core.robots.ur5e import UR5E
from afford_core.robots.xarm7 import XARM7

ROBOTS: Registry[RobotDescription] = Registry("robot")
DEFAULT_ROBOT = "fr3"
"""The reference arm: the one the graphs drive and every default refers to."""

ROBOTS.register("fr3", FR3)
ROBOTS.register("ur5e", UR5E)
ROBOTS.register("kinova3", KINOVA3)
ROBOTS.register("panda", PANDA)
ROBOTS.register("xarm7", XARM7)
ROBOTS.register("sawyer", SAWYER)


def get_robot(name: str | RobotDescription = DEFAULT_ROBOT) -> RobotDescription:
    """The description registered as ``name`` (a description is returned as it is)."""
    return name if isinstance(name, RobotDescription) else ROBOTS.get(name)


__all__ = [
    "DEFAULT_ROBOT",
    "DRIVES",
    "HOME_TCP_ROTATION",
    "ROBOTS",
    "DriveKind",
    "GripperDescription",
    "RobotDescription",
    "SimBinding",
    "get_robot",
]
