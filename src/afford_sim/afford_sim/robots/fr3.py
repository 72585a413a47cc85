"""The FR3's MuJoCo model: franky-sim's ``fr3.xml``, made to grasp like the real Franka Hand.

franky-sim's model is the one the sim-in-the-loop graph runs (``afford_sim.franky_world``), so the
batch world loads the same file; only the settings below differ, for the reasons given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco

from afford_core.robots import RobotDescription

if TYPE_CHECKING:
    from afford_sim.mjcf import ModelConfig

GRIPPER_FORCE_SCALE = 60.0
"""Multiplies the hand actuator's gain and bias (same setpoints: ctrl 255 open, 0 closed).
franky-sim's servo pushes each finger with ~1 N on a 4 cm object, below the fingers' own
friction; scaled by 60 it squeezes ~65 N per finger on a 4.5 cm cube, near the real Franka Hand's
70 N continuous force. The fr3.xml force limit (140 N on the tendon) is kept."""
FINGER_FRICTIONLOSS = 0.1
"""Dry friction (N) of each finger joint. fr3.xml gives the fingers the arm joints' 1.137 N,
which stalls them millimetres short of their setpoint."""
# Bodies whose weight the (simulated) controller cancels, as the real FR3's does.
_GRAVCOMP_BODIES: tuple[str, ...] = (
    *(f"fr3_link{i}" for i in range(1, 8)),
    "hand",
    "left_finger",
    "right_finger",
)


def build(robot: RobotDescription, config: ModelConfig) -> mujoco.MjSpec:
    """The FR3 and its hand from franky-sim's ``fr3.xml``, as the batch world simulates it."""
    path = robot.sim.mjcf()
    spec = mujoco.MjSpec.from_file(str(path))
    # fr3.xml names "assets" as meshdir; the meshes really are in assets/meshes.
    spec.meshdir = str(path.parent / "meshes")
    for name in _GRAVCOMP_BODIES:
        spec.body(name).gravcomp = 1.0
    for name in robot.sim.finger_joints:
        spec.joint(name).frictionloss = FINGER_FRICTIONLOSS
    hand = spec.actuator(robot.sim.gripper_actuator)
    hand.gainprm[0] *= GRIPPER_FORCE_SCALE
    hand.biasprm[1] *= GRIPPER_FORCE_SCALE
    hand.biasprm[2] *= GRIPPER_FORCE_SCALE
    return spec
