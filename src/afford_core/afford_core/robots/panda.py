"""The Franka Emika Panda with its gripper, from robosuite's models (simulation only).

robosuite's ``Panda`` with its ``PandaGripper`` (:mod:`afford_core.robots.robosuite_models`),
exported on first use, not the FR3's franky-sim model (:mod:`afford_core.robots.fr3`): the
planner loads the exported MJCF with pinocchio and the simulator makes it position-controlled
(``afford_sim.robots.robosuite``), as for the UR5e. Limits: Panda datasheet
(https://frankaemika.github.io/docs/control_parameters.html, "Limits for Panda"): joint speeds
2.175 rad/s (joints 1-4) and 2.61 rad/s (5-7), accelerations 15, 7.5, 10, 12.5, 15, 20,
20 rad/s^2; the model's joint ranges are the datasheet's.

The gripper is two slide fingers (``gripper0_finger_joint1``: 0 closed .. 0.04 m open,
``gripper0_finger_joint2`` its mirror, -0.04 .. 0), moving along ``robot0_right_hand``'s y. Measured
on the exported model (pad-to-pad surface distance, MuJoCo ``mj_geomDistance``, every 5 mm of
finger travel): the opening is linear, twice the finger travel less 1 mm (the pad boxes overlap by
1 mm with the fingers shut), 79.0 mm fully open; the pad centres sit 0.0934 m along the flange's
z at every opening, which is where the TCP is put. The datasheet's Franka Hand grasps with 70 N
continuous force. The simulator couples the fingers and drives them with one force-limited
position actuator (``afford_sim.robots.robosuite.couple_panda_fingers``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from afford_core.robots.description import GripperDescription, RobotDescription, SimBinding, flat
from afford_core.robots.robosuite_models import export

FINGER_TRAVEL = 0.04
"""Travel of each finger joint (m): ``gripper0_finger_joint1`` in [0, 0.04], the other mirrored."""
PAD_OVERLAP = 0.001
"""Opening (m) lost to the pad boxes: they overlap this much with both fingers at 0."""
TCP_OFFSET = 0.0934
"""TCP along the flange's (``robot0_right_hand``) z: the pads' centre (m)."""
FINGER_BASE = 0.0525
"""Where the finger bodies start along the flange's z (m)."""


def finger_travel_for(width: float) -> float:
    """``gripper0_finger_joint1`` (m) that opens the pads ``width`` apart (m)."""
    return float(np.clip((width + PAD_OVERLAP) / 2.0, 0.0, FINGER_TRAVEL))


def opening(finger_qpos: np.ndarray) -> float:
    """Pad-to-pad opening (m) at the simulator's finger joints (``joint1``, ``joint2``)."""
    q = np.asarray(finger_qpos, dtype=np.float64).reshape(-1)
    return float(max(q[0] - q[1] - PAD_OVERLAP, 0.0))


def _finger_positions(width: float) -> tuple[float, float]:
    q = finger_travel_for(width)
    return (q, -q)


def _model() -> Path:
    return export("panda")


_TCP = np.eye(4)
_TCP[2, 3] = TCP_OFFSET

PANDA_GRIPPER = GripperDescription(
    name="panda_gripper",
    max_width=2.0 * FINGER_TRAVEL - PAD_OVERLAP,
    max_force=70.0,  # the Franka Hand's continuous force, datasheet
    grasp_force=60.0,  # as the FR3's
    finger_joints=("gripper0_finger_joint1", "gripper0_finger_joint2"),
    finger_positions=_finger_positions,
    hand_links=(
        "gripper0_right_gripper",
        "gripper0_leftfinger",
        "gripper0_finger_joint1_tip",
        "gripper0_rightfinger",
        "gripper0_finger_joint2_tip",
    ),
    pad_length=0.016,  # the pad boxes' extent along z
    palm_offset=TCP_OFFSET,  # the flange: the back of the hand
    finger_length=TCP_OFFSET - FINGER_BASE,
)

_ARM_JOINTS = tuple(f"robot0_joint{i}" for i in range(1, 8))

PANDA = RobotDescription(
    name="panda",
    title="Franka Emika Panda + Panda gripper (robosuite's models)",
    arm_joints=_ARM_JOINTS,
    # The TCP where the FR3's ready pose puts it, (0.307, 0, 0.487), pointing down with the
    # fingers closing along world y (HOME_TCP_ROTATION); solved with the planner's IK (see
    # docs/adding_a_robot.md). Up and back, out of the tasks' camera views: at (0.45, 0, 0.35)
    # the hand stood in front of the microwave's handle in its camera's view.
    home=(-0.0001, -0.7917, 0.0001, -2.3868, 0.0, 1.5951, 0.7858),
    base_link="robot0_link0",
    flange_frame="robot0_right_hand",
    tcp_frame="robot0_tcp",
    tcp_from_flange=flat(_TCP),
    velocity_limits=(2.175,) * 4 + (2.61,) * 3,
    acceleration_limits=(15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0),
    gripper=PANDA_GRIPPER,
    kinematics=_model,
    sim=SimBinding(
        builder="robosuite",
        mjcf=_model,
        arm_joints=_ARM_JOINTS,  # the same names in both models (robosuite's prefix)
        finger_joints=PANDA_GRIPPER.finger_joints,
        finger_open_qpos=(FINGER_TRAVEL, -FINGER_TRAVEL),
        finger_width=opening,
        gripper_actuator="gripper0_grip",
        gripper_open_ctrl=FINGER_TRAVEL,
        gripper_closed_ctrl=0.0,
        hand_body="robot0_right_hand",
        tcp_offset=flat(_TCP),
        left_finger_bodies=("gripper0_leftfinger", "gripper0_finger_joint1_tip"),
        right_finger_bodies=("gripper0_rightfinger", "gripper0_finger_joint2_tip"),
    ),
    drive="sim_only",
    maker_url="https://frankaemika.github.io/docs/control_parameters.html",
)
