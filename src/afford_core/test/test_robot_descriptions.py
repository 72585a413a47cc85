"""Robots as data: the registry, what a description must hold, and the conventions every arm keeps."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from afford_core.robots import DEFAULT_ROBOT, HOME_TCP_ROTATION, ROBOTS, get_robot
from afford_core.robots.fr3 import FR3
from afford_core.robots.robotiq import ROBOTIQ_2F85

ARMS = ["fr3", "kinova3", "panda", "sawyer", "ur5e", "xarm7"]


def test_registry_lists_the_arms_and_refuses_unknown_names() -> None:
    assert set(ARMS) <= set(ROBOTS.names())
    assert get_robot() is get_robot(DEFAULT_ROBOT) is FR3
    assert get_robot(FR3) is FR3
    known = "fr3, kinova3, panda, sawyer, ur5e, xarm7"
    with pytest.raises(KeyError, match=f"unknown robot 'r2d2'; known: {known}"):
        get_robot("r2d2")
    with pytest.raises(ValueError, match="already registered"):
        ROBOTS.register("fr3", get_robot("ur5e"))


@pytest.mark.parametrize("name", ARMS)
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
    # The simulator's finger joints lead the description's (a linkage's driven joint first;
    # the others follow it), so the width a set of finger values opens to reads back; below the
    # shut fingers' opening (the Sawyer's pads never meet) the fingers stay shut.
    n = len(robot.sim.finger_joints)
    for width in (0.0, 0.02, gripper.max_width / 2, gripper.max_width):
        values = np.asarray(gripper.finger_positions(width))[:n]
        expected = max(width, gripper.min_width)
        assert robot.sim.finger_width(values) == pytest.approx(expected, abs=1e-3), width


def test_the_robotiq_arms_share_one_gripper() -> None:
    """The UR5e and the Kinova Gen3 carry the same robosuite Robotiq 2F-85: one description and one
    simulator binding of it, not two copies."""
    ur5e, kinova3 = get_robot("ur5e"), get_robot("kinova3")
    assert ur5e.gripper is kinova3.gripper is ROBOTIQ_2F85
    shared = dataclasses.asdict(ur5e.sim) | {"mjcf": None, "arm_joints": None}
    assert shared == dataclasses.asdict(kinova3.sim) | {"mjcf": None, "arm_joints": None}
    assert ur5e.tcp_from_flange == kinova3.tcp_from_flange


def test_the_xarm_gripper_linkage_moves_as_one() -> None:
    """The xArm Gripper's five followers equal its driven joint at every opening (the parallelogram
    mimics): the planner's finger geometry and the simulator's linkage are one mechanism."""
    gripper = get_robot("xarm7").gripper
    for width in (0.0, 0.03, gripper.max_width):
        driver, *followers = gripper.finger_positions(width)
        assert followers == [driver] * 5
    assert gripper.finger_positions(gripper.max_width)[0] == pytest.approx(0.0, abs=1e-9)
    assert gripper.finger_positions(0.0)[0] == pytest.approx(0.85)


def test_the_sawyer_s_fingers_stop_short_of_each_other() -> None:
    """Rethink's fingers (slot 2, as robosuite models them) stop 14.1 mm apart: the description says
    so, and a narrower opening leaves them shut."""
    gripper = get_robot("sawyer").gripper
    assert gripper.min_width == pytest.approx(0.0141, abs=1e-4)
    assert gripper.finger_positions(0.0) == gripper.finger_positions(gripper.min_width)


def test_continuous_joints_are_bounded_by_the_description() -> None:
    """The Kinova Gen3's odd joints turn without end (its model leaves them unbounded); the
    planner needs finite ranges, which the description gives."""
    kinova3 = get_robot("kinova3")
    assert kinova3.position_limits is not None and len(kinova3.position_limits) == kinova3.dof
    for (lo, hi), q in zip(kinova3.position_limits, kinova3.home, strict=True):
        assert lo < q < hi


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"home": (0.0,) * 6}, "home must hold 7"),
        ({"velocity_limits": (1.0,) * 6 + (-1.0,)}, "must be positive"),
        ({"drive": "telepathy"}, "drive must be one of"),
        ({"arm_joints": ("a", "a", "b", "c", "d", "e", "f")}, "distinct"),
        ({"tcp_from_flange": (1.0,) * 4}, "flattened 4x4"),
        ({"position_limits": ((-1.0, 1.0),) * 6}, "position_limits must give 7"),
        ({"position_limits": ((-1.0, 1.0),) * 6 + ((1.0, -1.0),)}, "position_limits must give 7"),
        ({"position_limits": ((-1.0, 1.0),) * 6 + ((-np.inf, 1.0),)}, "position_limits must give 7"),
    ],
)
def test_a_malformed_description_is_refused(change: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(FR3, **change)  # type: ignore[arg-type]


def test_a_malformed_gripper_is_refused() -> None:
    with pytest.raises(ValueError, match="min_width"):
        dataclasses.replace(FR3.gripper, min_width=FR3.gripper.max_width)
    with pytest.raises(ValueError, match="grasp_force"):
        dataclasses.replace(FR3.gripper, grasp_force=FR3.gripper.max_force + 1)
    with pytest.raises(ValueError, match="finger_length"):
        dataclasses.replace(FR3.gripper, finger_length=FR3.gripper.palm_offset + 0.01)


def test_home_tcp_rotation_is_a_proper_rotation() -> None:
    r = HOME_TCP_ROTATION
    assert np.allclose(r.T @ r, np.eye(3)) and np.linalg.det(r) == pytest.approx(1.0)
    assert np.allclose(r[:, 2], [0, 0, -1])  # pointing down
