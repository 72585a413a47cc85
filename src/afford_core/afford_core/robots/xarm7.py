"""The UFACTORY xArm7 with the xArm Gripper, from robosuite's models (simulation only).

robosuite's ``XArm7`` with its ``XArm7Gripper`` (:mod:`afford_core.robots.robosuite_models`),
exported on first use: the planner loads the exported MJCF with pinocchio and the simulator makes
it position-controlled (``afford_sim.robots.robosuite``), as for the UR5e.

Limits: UFACTORY's xArm user manual (https://github.com/xArm-Developer/ufactory_doc_usermanual,
"Technical Specifications" and "Robot specifications"): 180 deg/s (3.1416 rad/s) on every joint,
the value UFACTORY's own robot description (xarm_ros, MoveIt ``joint_limits.yaml``: 3.14 rad/s)
carries; joint ranges J1, J3, J5, J7 +-360 deg, J2 -118..120 deg, J4 -11..225 deg, J6 -97..180 deg,
which are the model's (no ``position_limits`` needed). The joint acceleration is a controller
setting of up to 1145 deg/s^2 (20 rad/s^2), not a fixed limit; 8 rad/s^2 is a conservative choice
for timing, as for the UR5e, not a datasheet number. The servos' torque limits are robosuite's
motor ranges (80 N m on every joint: robosuite's number, not UFACTORY's).

The gripper is a linkage like the Robotiq 2F-85: a driven knuckle per side
(``gripper0_left_driver_joint``, ``gripper0_right_driver_joint``, 0 open .. 0.85 rad closed, the
range of UFACTORY's ROS model), a finger and an inner knuckle per side, each side a parallelogram.
robosuite closes the loops with two ``connect`` equalities and couples the drivers, but drives them
through a tendon with a 0..255 control and leaves 1 N m of dry friction on each of the six joints.
Every follower equals the driven joint (the ROS model's mimics, all of multiplier 1 with the
model's joint axes): checked on the exported model, the connect anchors then coincide to 1e-16 m
at every opening, so the mimics close the loops exactly and the simulator drives the hand through
them (``afford_sim.robots.robosuite.close_xarm_linkage``). The opening between the pad boxes as a
function of the driven joint was measured on the exported model (pad-to-pad surface distance,
MuJoCo ``mj_geomDistance``, every 0.05 rad): 88.9 mm open, 1.6 mm at 0.85 rad. The two pad boxes
per finger (37 mm along z together) stay parallel; their centre sits 0.1545 m along the flange's
z with the fingers shut, where the TCP is put (1.1 mm from it at a 45 mm opening, 12 mm at full
opening). UFACTORY's ROS model puts its TCP at the fingertips (0.172 m); with the TCP at the
fingertip pad's centre (0.1635 m) the skill bench's scoops went 20/20/17 and bananas 18/18/18
(oracle/geometric/learned) against 19/19/17 and 19/19/19 here, so the pads' centre stays. The
datasheet's xArm Gripper: 84 mm working range, 30 N maximum clamping force.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from afford_core.robots.description import GripperDescription, RobotDescription, SimBinding, flat
from afford_core.robots.robosuite_models import export

#: The driven joint (rad) and the pad-to-pad opening there (m), measured on the exported model.
_DRIVER = np.linspace(0.0, 0.85, 18)
_OPENING = (
    np.array(
        [
            88.92,
            84.63,
            80.18,
            75.56,
            70.81,
            65.92,
            60.91,
            55.79,
            50.58,
            45.29,
            39.93,
            34.52,
            29.06,
            23.58,
            18.08,
            12.58,
            7.10,
            1.64,
        ]
    )
    / 1000.0
)
DRIVER = "gripper0_left_driver_joint"
"""The simulator's driven joint."""
XARM_FOLLOWERS: dict[str, float] = {
    "gripper0_left_finger_joint": 1.0,
    "gripper0_left_inner_knuckle_joint": 1.0,
    "gripper0_right_driver_joint": 1.0,
    "gripper0_right_finger_joint": 1.0,
    "gripper0_right_inner_knuckle_joint": 1.0,
}
"""Joints of the linkage that follow :data:`DRIVER`, with their multiples (the mimics)."""
XARM_CLOSED = 0.85
"""The driven joint fully closed (rad); 0 is fully open."""
TCP_OFFSET = 0.1545
"""TCP along the flange's (``robot0_right_hand``) z: the pads' centre with the fingers shut (m)."""
KNUCKLE_PIVOT = 0.0741
"""The inner knuckles' pivots along the flange's z (m): where the fingers' linkage starts."""


def driver_for(width: float) -> float:
    """The driven joint (rad) that opens the pads ``width`` apart (m)."""
    return float(np.interp(width, _OPENING[::-1], _DRIVER[::-1]))


def opening(finger_qpos: np.ndarray) -> float:
    """Pad-to-pad opening (m) at the simulator's driven joint (its first finger joint)."""
    return float(np.interp(float(np.asarray(finger_qpos).reshape(-1)[0]), _DRIVER, _OPENING))


def _finger_positions(width: float) -> tuple[float, ...]:
    g = driver_for(width)
    return (g, *(m * g for m in XARM_FOLLOWERS.values()))


def _model() -> Path:
    return export("xarm7")


_TCP = np.eye(4)
_TCP[2, 3] = TCP_OFFSET

XARM_GRIPPER = GripperDescription(
    name="xarm_gripper",
    max_width=float(_OPENING[0]),
    min_width=float(_OPENING[-1]),  # the pads stop 1.6 mm apart at the ROS model's 0.85 rad
    max_force=30.0,  # the xArm Gripper's maximum clamping force, datasheet
    grasp_force=30.0,
    finger_joints=(DRIVER, *XARM_FOLLOWERS),
    finger_positions=_finger_positions,
    hand_links=(
        "gripper0_xarm_gripper_base_link",
        "gripper0_left_outer_knuckle",
        "gripper0_left_finger",
        "gripper0_left_inner_knuckle",
        "gripper0_right_outer_knuckle",
        "gripper0_right_finger",
        "gripper0_right_inner_knuckle",
    ),
    pad_length=0.037,  # the two pad boxes' extent along z
    palm_offset=TCP_OFFSET,  # the flange: the back of the hand
    finger_length=TCP_OFFSET - KNUCKLE_PIVOT,
)

_ARM_JOINTS = tuple(f"robot0_joint{i}" for i in range(1, 8))

XARM7 = RobotDescription(
    name="xarm7",
    title="UFACTORY xArm7 + xArm Gripper (robosuite's models)",
    arm_joints=_ARM_JOINTS,
    # The TCP where the FR3's ready pose puts it, (0.307, 0, 0.487), pointing down with the
    # fingers closing along world y (HOME_TCP_ROTATION); solved with the planner's IK (see
    # docs/adding_a_robot.md). Up and back, out of the tasks' camera views: at (0.45, 0, 0.35)
    # the hand stood in front of the microwave's handle in its camera's view.
    home=(0.0, -0.4577, 0.0, 1.3587, 0.0, 1.8164, 3.1416),
    base_link="robot0_base",
    flange_frame="robot0_right_hand",
    tcp_frame="robot0_tcp",
    tcp_from_flange=flat(_TCP),
    velocity_limits=(np.pi,) * 7,
    acceleration_limits=(8.0,) * 7,
    gripper=XARM_GRIPPER,
    kinematics=_model,
    sim=SimBinding(
        builder="robosuite",
        mjcf=_model,
        arm_joints=_ARM_JOINTS,  # the same names in both models (robosuite's prefix)
        finger_joints=(DRIVER,),
        finger_open_qpos=(0.0,),
        finger_width=opening,
        gripper_actuator="gripper0_grip",
        gripper_open_ctrl=0.0,
        gripper_closed_ctrl=XARM_CLOSED,
        hand_body="robot0_right_hand",
        tcp_offset=flat(_TCP),
        left_finger_bodies=("gripper0_left_finger",),
        right_finger_bodies=("gripper0_right_finger",),
    ),
    drive="sim_only",
    maker_url="https://github.com/xArm-Developer/ufactory_doc_usermanual",
)
