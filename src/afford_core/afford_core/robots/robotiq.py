"""The Robotiq 2F-85 as robosuite models it, and the binding of a robosuite arm that carries one.

robosuite mounts the same gripper model (``Robotiq85Gripper``) on several of its arms: the UR5e
(:mod:`afford_core.robots.ur5e`) and the Kinova Gen3 (:mod:`afford_core.robots.kinova3`) here.
Its body and joint names (``gripper0_*``) and its pose in the arm's ``robot0_right_hand`` (the
identity: the adapter sits on the flange) are the same on every arm, so one description serves.

The Robotiq 2F-85 (datasheet: 85 mm stroke, 20-235 N grip force) is a linkage: one driven joint
(``finger_joint``, 0 open .. 0.8 rad closed) and five that follow it (the ROS model's mimic
multipliers). The opening between the pads as a function of ``finger_joint`` was measured on
the exported UR5e model (pad-to-pad surface distance, MuJoCo ``mj_geomDistance``, every
0.05 rad). The TCP sits 0.1443 m along the flange's z, midway between the pads when closed;
over the stroke the pads' centre moves 14 mm along z (2.6 mm from the TCP on a 45 mm object).
The simulator closes the linkage (``afford_sim.robots.robosuite.close_robotiq_linkage``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from afford_core.robots.description import GripperDescription, SimBinding, flat

#: ``finger_joint`` (rad) and the pad-to-pad opening there (m), measured on the exported model.
_FINGER_JOINT = np.linspace(0.0, 0.8, 17)
_OPENING = (
    np.array(
        [
            85.36,
            80.97,
            76.40,
            71.67,
            66.78,
            61.75,
            56.59,
            51.31,
            45.94,
            40.47,
            34.93,
            29.32,
            23.67,
            17.98,
            12.28,
            6.56,
            0.86,
        ]
    )
    / 1000.0
)
#: Follower joints of the linkage and their multiple of ``finger_joint`` (the ROS model's mimics).
ROBOTIQ_FOLLOWERS: dict[str, float] = {
    "gripper0_left_inner_finger_joint": -1.0,
    "gripper0_left_inner_knuckle_joint": 1.0,
    "gripper0_right_outer_knuckle_joint": 1.0,
    "gripper0_right_inner_finger_joint": -1.0,
    "gripper0_right_inner_knuckle_joint": 1.0,
}
ROBOTIQ_CLOSED = 0.8
"""``finger_joint`` fully closed (rad); 0 is fully open."""
TCP_OFFSET = 0.1443
"""TCP along the flange's (``robot0_right_hand``) z, midway between the closed pads (m)."""


def finger_joint_for(width: float) -> float:
    """``finger_joint`` (rad) that opens the pads ``width`` apart (m)."""
    return float(np.interp(width, _OPENING[::-1], _FINGER_JOINT[::-1]))


def opening(finger_qpos: np.ndarray) -> float:
    """Pad-to-pad opening (m) at the simulator's ``finger_joint`` value (its first finger joint)."""
    return float(np.interp(float(np.asarray(finger_qpos).reshape(-1)[0]), _FINGER_JOINT, _OPENING))


def _finger_positions(width: float) -> tuple[float, ...]:
    g = finger_joint_for(width)
    return (g, *(m * g for m in ROBOTIQ_FOLLOWERS.values()))


TCP_IN_FLANGE = np.eye(4)
"""The TCP in ``robot0_right_hand`` (the flange the adapter is mounted on)."""
TCP_IN_FLANGE[2, 3] = TCP_OFFSET

ROBOTIQ_2F85 = GripperDescription(
    name="robotiq_2f85",
    max_width=float(_OPENING[0]),
    max_force=235.0,
    grasp_force=60.0,
    finger_joints=("gripper0_finger_joint", *ROBOTIQ_FOLLOWERS),
    finger_positions=_finger_positions,
    hand_links=(
        "gripper0_robotiq_85_adapter_link",
        "gripper0_left_outer_knuckle",
        "gripper0_left_inner_finger",
        "gripper0_left_inner_knuckle",
        "gripper0_right_outer_knuckle",
        "gripper0_right_inner_finger",
        "gripper0_right_inner_knuckle",
    ),
    pad_length=0.02,
    palm_offset=TCP_OFFSET,  # the flange face: the back of the coupling
    finger_length=0.085,  # the knuckle pivots sit 55-61 mm in front of the flange
)


def robotiq_sim_binding(mjcf: Callable[[], Path], arm_joints: tuple[str, ...]) -> SimBinding:
    """How the simulator reads a robosuite arm exported with the Robotiq 2F-85 (``mjcf``), its
    arm joints named as in the kinematic model (the same file)."""
    return SimBinding(
        builder="robosuite",
        mjcf=mjcf,
        arm_joints=arm_joints,
        finger_joints=("gripper0_finger_joint",),
        finger_open_qpos=(0.0,),
        finger_width=opening,
        gripper_actuator="gripper0_grip",
        gripper_open_ctrl=0.0,
        gripper_closed_ctrl=ROBOTIQ_CLOSED,
        hand_body="robot0_right_hand",
        tcp_offset=flat(TCP_IN_FLANGE),
        left_finger_bodies=("gripper0_left_inner_finger",),
        right_finger_bodies=("gripper0_right_inner_finger",),
    )
