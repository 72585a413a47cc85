"""The Universal Robots UR5e with a Robotiq 2F-85, from robosuite's models (simulation only).

The model is robosuite's (:mod:`afford_core.robots.robosuite_models`), exported on first use; the
planner loads the exported MJCF with pinocchio and the simulator makes it position-controlled
(``afford_sim.robots.robosuite``). Limits: UR5e datasheet (https://www.universal-robots.com/
products/ur5e/): 180 deg/s on every joint; the elbow's +-180 deg range is the model's. UR publishes
no joint acceleration limits; 8 rad/s^2 is a conservative choice for timing (well below the
800 deg/s^2 a UR teach pendant allows), not a datasheet number.

The Robotiq 2F-85 and how the simulator reads it are shared with the Kinova Gen3
(:mod:`afford_core.robots.robotiq`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from afford_core.robots.description import RobotDescription, flat
from afford_core.robots.robosuite_models import export
from afford_core.robots.robotiq import ROBOTIQ_2F85, TCP_IN_FLANGE, robotiq_sim_binding


def _model() -> Path:
    return export("ur5e")


_ARM_JOINTS = (
    "robot0_shoulder_pan_joint",
    "robot0_shoulder_lift_joint",
    "robot0_elbow_joint",
    "robot0_wrist_1_joint",
    "robot0_wrist_2_joint",
    "robot0_wrist_3_joint",
)

UR5E = RobotDescription(
    name="ur5e",
    title="Universal Robots UR5e + Robotiq 2F-85 (robosuite's models)",
    arm_joints=_ARM_JOINTS,
    # Elbow up, the TCP where the FR3's ready pose puts it, (0.307, 0, 0.487), pointing down with the
    # fingers closing along world y (HOME_TCP_ROTATION); solved with the planner's IK (see
    # docs/adding_a_robot.md). Up and back, out of the tasks' camera views: at (0.45, 0, 0.35)
    # the hand stood in front of the microwave's handle in its camera's view.
    home=(-0.4517, -1.99, 1.5184, -1.0992, -1.5708, -2.0225),
    base_link="robot0_fixed_base_link",
    flange_frame="robot0_right_hand",
    tcp_frame="robot0_tcp",
    tcp_from_flange=flat(TCP_IN_FLANGE),
    velocity_limits=(np.pi,) * 6,
    acceleration_limits=(8.0,) * 6,
    gripper=ROBOTIQ_2F85,
    kinematics=_model,
    sim=robotiq_sim_binding(_model, _ARM_JOINTS),  # the same joint names in both models
    drive="sim_only",
    maker_url="https://www.universal-robots.com/products/ur5e/",
)
