"""Robots as data: the registry, what a description must hold, and the conventions every arm keeps."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from afford_core.robots import DEFAULT_ROBOT, HOME_TCP_ROTATION, ROBOTS, get_robot
from afford_core.robots.fr3 import FR3


def test_registry_lists_the_arms_and_refuses_unknown_names() -> None:
    assert {"fr3", "ur5e"} <= set(ROBOTS.names())
    assert get_robot() is get_robot(DEFAULT_ROBOT) is FR3
    assert get_robot(FR3) is FR3
    with pytest.raises(KeyError, match="unknown robot 'r2d2'; known: fr3, ur5e"):
        get_robot("r2d2")
    with pytest.raises(ValueError, match="already registered"):
        ROBOTS.register("fr3", get_robot("ur5e"))


@pytest.mark.parametrize("name", ["fr3", "ur5e"])
def test_every_description_is_complete_and_consistent(name: str) -> None:
    robot = get_robot(name)
    assert robot.dof == len(robot.home) == len(robot.velocity_limits) == len(robot.sim.arm_joints)
    gripper = robot.gripper
    # The opening maps onto the finger joints and back (closed, half, open).
    assert len(gripper.finger_positions(gripper.max_width)) == len(gripper.finger_joints)
    assert 0 < gripper.pad_length < gripper.finger_length <= gripper.palm_offset
    assert robot.sim.finger_width(np.asarray(robot.sim.finger_open_qpos)) == pytest.approx(
        gripper.max_width, abs=1e-3
    )


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"home": (0.0,) * 6}, "home must hold 7"),
        ({"velocity_limits": (1.0,) * 6 + (-1.0,)}, "must be positive"),
        ({"drive": "telepathy"}, "drive must be one of"),
        ({"arm_joints": ("a", "a", "b", "c", "d", "e", "f")}, "distinct"),
        ({"tcp_from_flange": (1.0,) * 4}, "flattened 4x4"),
    ],
)
def test_a_malformed_description_is_refused(change: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(FR3, **change)  # type: ignore[arg-type]


def test_a_malformed_gripper_is_refused() -> None:
    with pytest.raises(ValueError, match="grasp_force"):
        dataclasses.replace(FR3.gripper, grasp_force=FR3.gripper.max_force + 1)
    with pytest.raises(ValueError, match="finger_length"):
        dataclasses.replace(FR3.gripper, finger_length=FR3.gripper.palm_offset + 0.01)


def test_home_tcp_rotation_is_a_proper_rotation() -> None:
    r = HOME_TCP_ROTATION
    assert np.allclose(r.T @ r, np.eye(3)) and np.linalg.det(r) == pytest.approx(1.0)
    assert np.allclose(r[:, 2], [0, 0, -1])  # pointing down
