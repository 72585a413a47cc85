"""The Rethink Robotics Sawyer with the Rethink electric gripper, from robosuite's models (simulation only).

robosuite's ``Sawyer`` with its ``RethinkGripper`` (:mod:`afford_core.robots.robosuite_models`),
exported on first use: the planner loads the exported MJCF with pinocchio and the simulator makes
it position-controlled (``afford_sim.robots.robosuite``), as for the UR5e. The export is the arm
alone: robosuite's pedestal is a separate mount model that a model export does not add, and its
``base_offset`` only places the robot in robosuite's own arenas. ``robot0_base`` stands at the
origin and carries nothing but ``robot0_right_arm_base_link`` at the identity (checked on the
exported model: the planner's TCP equals the simulator's to 1e-14 m), so the base link bolted to
the table is ``robot0_right_arm_base_link``.

Limits: Rethink's own robot description (``sawyer_description/urdf/sawyer_base.urdf.xacro`` in
RethinkRobotics/sawyer_robot, https://github.com/RethinkRobotics/sawyer_robot): joint speeds
1.74, 1.328, 1.957, 1.957, 3.485, 3.485, 4.545 rad/s, torques 80, 80, 40, 40, 9, 9, 9 N m (the
model's motor ranges) and the model's joint ranges. Rethink publishes no joint acceleration limits
(its MoveIt configuration's 2 rad/s^2 is a planning default, not the hardware's); 5 rad/s^2 is a
conservative choice for timing, as for the Kinova Gen3, not a datasheet number.

The gripper is two slide fingers along ``robot0_right_hand``'s y (``gripper0_l_finger_joint``:
-0.0115 shut .. 0.020833 m open, ``gripper0_r_finger_joint`` its mirror). Measured on the exported
model (pad-to-pad surface distance, MuJoCo ``mj_geomDistance``, every 2.5 mm of finger travel):
the opening is linear, 37.1 mm plus the two fingers' travel, 14.1 mm shut and 78.8 mm fully open;
the pads never meet, and objects thinner than 14.1 mm slip between them. At the shut stop
robosuite's finger bodies sit where Rethink's description puts its fingers at their 0 (slot 2,
the slot ``sawyer_description`` mounts the standard narrow fingers in, 1.5 mm from the centre
line); Rethink's fingers then travel 20.833 mm each (the Intera SDK's gripper position runs
0 .. 0.041667 m), robosuite's 11.5 mm more.

The pads are 33 mm long (0.0859 .. 0.1189 m along the flange's z at every opening) and the
fingertips end at 0.1229 m. The TCP is a choice on the pads, 5.5 mm above their lower edge and
9.5 mm above the fingertips, as the FR3's TCP sits 9.5 mm above its fingertips: a top-down grasp
holds a part lying on the table with the fingertip end of the pads. With the TCP at the pads'
centre (0.1024 m) the fingertips reach 20.5 mm past it and the planner refused nearly every grasp
of a banana or a scoop on the table (the fingertips inside the table's 5 mm padding); at
robosuite's grip site (0.109 m, 13.9 mm past it) it still refused the scoop in 4 of 20 scenes,
as it does for the Panda (12.9 mm).

Force: Rethink's description limits each finger joint to 20 N (robosuite's finger servos too);
the Intera SDK caps the holding force it commands at 10 N. The simulator couples the fingers and
drives them with one force-limited position actuator
(``afford_sim.robots.robosuite.couple_rethink_fingers``), as the Panda gripper's, and gives the
finger collision boxes (which robosuite leaves frictionless and out of contacts with each other)
the fingers' contact settings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from afford_core.robots.description import GripperDescription, RobotDescription, SimBinding, flat
from afford_core.robots.robosuite_models import export

FINGER_SHUT = -0.0115
"""``gripper0_l_finger_joint`` with the fingers shut (m); the other finger is its mirror."""
FINGER_OPEN = 0.020833
"""``gripper0_l_finger_joint`` fully open (m)."""
CLOSE_TARGET = FINGER_SHUT - 0.01
"""The finger servo's target when closing (m): 1 cm past the stop, where the servo reaches its force
limit, so it squeezes with the full grasp force at every opening (as a force-controlled electric
gripper does), the thinnest objects included."""
PAD_GAP = 0.0371
"""Opening (m) between the pads with both finger joints at 0."""
TCP_OFFSET = 0.1134
"""TCP along the flange's (``robot0_right_hand``) z: on the pads, 9.5 mm above the fingertips (m)."""
FINGER_BASE = 0.0444
"""Where the finger bodies start along the flange's z (m)."""


def finger_travel_for(width: float) -> float:
    """``gripper0_l_finger_joint`` (m) that opens the pads ``width`` apart (m)."""
    return float(np.clip((width - PAD_GAP) / 2.0, FINGER_SHUT, FINGER_OPEN))


def opening(finger_qpos: np.ndarray) -> float:
    """Pad-to-pad opening (m) at the simulator's finger joints (``l``, ``r``)."""
    q = np.asarray(finger_qpos, dtype=np.float64).reshape(-1)
    return float(PAD_GAP + q[0] - q[1])


def _finger_positions(width: float) -> tuple[float, float]:
    q = finger_travel_for(width)
    return (q, -q)


def _model() -> Path:
    return export("sawyer")


_TCP = np.eye(4)
_TCP[2, 3] = TCP_OFFSET

RETHINK_GRIPPER = GripperDescription(
    name="rethink_gripper",
    max_width=PAD_GAP + 2.0 * FINGER_OPEN,
    min_width=PAD_GAP + 2.0 * FINGER_SHUT,
    max_force=20.0,  # each finger joint's effort limit in Rethink's description
    grasp_force=20.0,
    finger_joints=("gripper0_l_finger_joint", "gripper0_r_finger_joint"),
    finger_positions=_finger_positions,
    hand_links=(
        "gripper0_gripper_base",
        "gripper0_l_finger",
        "gripper0_l_finger_tip",
        "gripper0_r_finger",
        "gripper0_r_finger_tip",
    ),
    pad_length=0.033,  # the pad boxes' extent along z
    palm_offset=TCP_OFFSET,  # the flange: the back of the hand
    finger_length=TCP_OFFSET - FINGER_BASE,
)

_ARM_JOINTS = tuple(f"robot0_right_j{i}" for i in range(7))

#: Link pairs Rethink's MoveIt configuration leaves out of collision checks
#: (``sawyer_moveit_config/srdf/sawyer_base.srdf.xacro`` in RethinkRobotics/sawyer_moveit: its
#: "Never", "Default" and "Adjacent" pairs), for the links robosuite's model has. Among them the
#: covers ``right_l1_2``, ``right_l2_2`` and ``right_l4_2`` (extra collision cylinders and spheres
#: on the shoulder, elbow and forearm) against the links they sit beside: robosuite's
#: ``right_l1_2`` cylinder overlaps the base's whenever the shoulder lifts the arm towards the table.
_SRDF_PAIRS = """
right_arm_base_link right_l1_2; right_arm_base_link right_l2_2; head right_l1_2; head right_l2_2;
right_l0 right_l1_2; right_l0 right_l2; right_l0 right_l2_2; right_l1_2 right_l2;
right_l1_2 right_l2_2; right_l1 right_l2_2; right_l1_2 right_l3; right_l1 right_l1_2;
right_l2 right_l2_2; right_l4 right_l4_2; right_l1 right_l4_2; right_l1_2 right_l4;
right_l1_2 right_l4_2; right_l1_2 screen; right_l2_2 right_l3; right_l2_2 right_l4;
right_l2_2 right_l5; right_l2_2 right_l6; right_l2_2 screen; right_l2 right_l4_2;
right_l2_2 right_l4_2; right_l4_2 right_l6; right_l4_2 right_l5; right_l4_2 right_l3;
head right_arm_base_link; head right_l0; head right_l1; head screen; right_arm_base_link right_l0;
right_arm_base_link right_l1; right_arm_base_link right_l2; right_arm_base_link screen;
right_l0 right_l1; right_l0 right_l3; right_l0 screen; right_l1 right_l2; right_l1 right_l3;
right_l1 right_l4; right_l1 screen; right_l2 right_l3; right_l2 right_l4; right_l2 right_l5;
right_l2 screen; right_l3 right_l4; right_l3 right_l5; right_l3 right_l6; right_l3 screen;
right_l4 right_l5; right_l4 right_l6; right_l5 right_l6
"""
NEVER_COLLIDING: frozenset[frozenset[str]] = frozenset(
    frozenset(f"robot0_{link}" for link in pair.split()) for pair in _SRDF_PAIRS.split(";")
)

SAWYER = RobotDescription(
    name="sawyer",
    title="Rethink Sawyer + Rethink electric gripper (robosuite's models)",
    arm_joints=_ARM_JOINTS,
    # The TCP where the FR3's ready pose puts it, (0.307, 0, 0.487), pointing down with the
    # fingers closing along world y (HOME_TCP_ROTATION); solved with the planner's IK (see
    # docs/adding_a_robot.md). Up and back, out of the tasks' camera views: at (0.45, 0, 0.35)
    # the hand stood in front of the microwave's handle in its camera's view.
    home=(0.7014, -1.4166, -1.266, 1.5306, 0.1471, 1.5644, -1.9584),
    base_link="robot0_right_arm_base_link",
    flange_frame="robot0_right_hand",
    tcp_frame="robot0_tcp",
    tcp_from_flange=flat(_TCP),
    velocity_limits=(1.74, 1.328, 1.957, 1.957, 3.485, 3.485, 4.545),
    acceleration_limits=(5.0,) * 7,
    gripper=RETHINK_GRIPPER,
    kinematics=_model,
    sim=SimBinding(
        builder="robosuite",
        mjcf=_model,
        arm_joints=_ARM_JOINTS,  # the same names in both models (robosuite's prefix)
        finger_joints=RETHINK_GRIPPER.finger_joints,
        finger_open_qpos=(FINGER_OPEN, -FINGER_OPEN),
        finger_width=opening,
        gripper_actuator="gripper0_grip",
        gripper_open_ctrl=FINGER_OPEN,
        gripper_closed_ctrl=CLOSE_TARGET,
        hand_body="robot0_right_hand",
        tcp_offset=flat(_TCP),
        left_finger_bodies=("gripper0_l_finger", "gripper0_l_finger_tip"),
        right_finger_bodies=("gripper0_r_finger", "gripper0_r_finger_tip"),
    ),
    drive="sim_only",
    never_colliding=NEVER_COLLIDING,
    maker_url="https://github.com/RethinkRobotics/sawyer_robot",
)
