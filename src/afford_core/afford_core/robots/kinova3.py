"""The Kinova Gen3 (7 DoF) with a Robotiq 2F-85, from robosuite's models (simulation only).

The model is robosuite's ``Kinova3`` with its ``Robotiq85Gripper``
(:mod:`afford_core.robots.robosuite_models`), exported on first use; the planner loads the
exported MJCF with pinocchio and the simulator makes it position-controlled
(``afford_sim.robots.robosuite``), as for the UR5e. The gripper, its TCP and how the simulator
reads it are the UR5e's (:mod:`afford_core.robots.robotiq`): robosuite mounts the same model on
both arms' ``robot0_right_hand``.

Limits: Kinova's Gen3 specifications (https://www.kinovarobotics.com/product/gen3-robots):
joint speeds 80 deg/s (1.3963 rad/s) on the large actuators (joints 1-4) and 70 deg/s
(1.2218 rad/s) on the small ones (joints 5-7), the values Kinova's own robot description
(ros_kortex, ``gen3`` URDF) carries; ranges +-128.9 deg (joint 2), +-147.8 deg (joint 4) and
+-120.3 deg (joint 6), narrower than robosuite's model (+-2.41, +-2.66, +-2.23 rad). The speeds
and these ranges were taken from secondary sources and not checked against Kinova's PDF here;
being narrower than the model's, they keep plans inside both. Joints 1, 3,
5 and 7 turn without end on the real arm and are continuous in the model; the planner needs
finite ranges, so they are bounded at +-360 deg: a choice, not a datasheet number. Kinova
publishes no joint acceleration limits; 5 rad/s^2 is a conservative choice for timing, not a
datasheet number. The servos' torque limits are robosuite's motor ranges (32 / 13 N m).
"""

from __future__ import annotations

import math
from pathlib import Path

from afford_core.robots.description import RobotDescription, flat
from afford_core.robots.robosuite_models import export
from afford_core.robots.robotiq import ROBOTIQ_2F85, TCP_IN_FLANGE, robotiq_sim_binding


def _model() -> Path:
    return export("kinova3")


_ARM_JOINTS = tuple(f"robot0_Actuator{i}" for i in range(1, 8))
_TURN = 2.0 * math.pi  # the continuous joints' bound (a choice: see the module docstring)

KINOVA3 = RobotDescription(
    name="kinova3",
    title="Kinova Gen3 7-DoF + Robotiq 2F-85 (robosuite's models)",
    arm_joints=_ARM_JOINTS,
    # The TCP where the FR3's ready pose puts it, (0.307, 0, 0.487), pointing down with the
    # fingers closing along world y (HOME_TCP_ROTATION); solved with the planner's IK (see
    # docs/adding_a_robot.md). Up and back, out of the tasks' camera views: at (0.45, 0, 0.35)
    # the hand stood in front of the microwave's handle in its camera's view.
    home=(-0.0792, 0.0138, -0.0019, 1.256, 0.0, 1.8718, -1.6519),
    base_link="robot0_fixed_base_link",
    flange_frame="robot0_right_hand",
    tcp_frame="robot0_tcp",
    tcp_from_flange=flat(TCP_IN_FLANGE),
    velocity_limits=(1.3963,) * 4 + (1.2218,) * 3,
    acceleration_limits=(5.0,) * 7,
    gripper=ROBOTIQ_2F85,
    kinematics=_model,
    sim=robotiq_sim_binding(_model, _ARM_JOINTS),  # the same joint names in both models
    drive="sim_only",
    maker_url="https://www.kinovarobotics.com/product/gen3-robots",
    position_limits=(
        (-_TURN, _TURN),
        (-math.radians(128.9), math.radians(128.9)),
        (-_TURN, _TURN),
        (-math.radians(147.8), math.radians(147.8)),
        (-_TURN, _TURN),
        (-math.radians(120.3), math.radians(120.3)),
        (-_TURN, _TURN),
    ),
)
