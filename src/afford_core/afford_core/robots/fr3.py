"""The Franka Research 3 with the Franka Hand: the reference arm, driven through franky.

Its models come from franky-sim (``franky_sim/assets``: ``fr3.urdf`` for the planner, ``fr3.xml``
for MuJoCo), found without importing franky-sim. Limits are the FR3 datasheet's
(https://frankaemika.github.io/docs/control_parameters.html); the URDF carries the velocity
limits, not the acceleration limits, which are therefore written here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from afford_core.robots.description import GripperDescription, RobotDescription, SimBinding, flat


def franky_assets_dir() -> Path:
    """Folder of franky-sim's FR3 assets (URDF, MJCF, meshes), found without importing franky_sim."""
    spec = importlib.util.find_spec("franky_sim")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("franky_sim is not installed: it ships the FR3 URDF, MJCF and meshes")
    path = Path(next(iter(spec.submodule_search_locations))) / "assets"
    if not (path / "fr3.urdf").is_file() or not (path / "fr3.xml").is_file():
        raise FileNotFoundError(f"franky_sim at {path} lacks fr3.urdf or fr3.xml")
    return path


def urdf_path() -> Path:
    return franky_assets_dir() / "fr3.urdf"


def mjcf_path() -> Path:
    return franky_assets_dir() / "fr3.xml"


TCP_OFFSET = 0.1034
"""TCP (between the fingertip pads) along the hand's z, as in franky / libfranka."""


def _finger_positions(width: float) -> tuple[float, float]:
    # Each finger slides 0..0.04 m, symmetrically about the TCP.
    return (width / 2.0, width / 2.0)


FRANKA_HAND = GripperDescription(
    name="franka_hand",
    max_width=0.08,
    max_force=70.0,  # continuous grasp force, datasheet
    grasp_force=60.0,  # what the graph's grasps have always closed with
    finger_joints=("fr3_finger_joint1", "fr3_finger_joint2"),
    finger_positions=_finger_positions,
    hand_links=("fr3_hand", "fr3_leftfinger", "fr3_rightfinger"),
    pad_length=0.02,
    palm_offset=TCP_OFFSET,  # the flange: the back of the hand body
    finger_length=0.045,  # the finger joints sit 0.0584 m in front of the flange
)


def _sum(finger_qpos: np.ndarray) -> float:
    return float(np.sum(finger_qpos))


_TCP_IN_HAND = np.eye(4)
_TCP_IN_HAND[2, 3] = TCP_OFFSET

FR3 = RobotDescription(
    name="fr3",
    title="Franka Research 3 + Franka Hand",
    arm_joints=tuple(f"fr3_joint{i}" for i in range(1, 8)),
    # The usual Franka ready pose: elbow up, hand pointing down, fingers along world y.
    home=(0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785),
    base_link="fr3_link0",
    flange_frame="fr3_link8",
    tcp_frame="fr3_hand_tcp",
    tcp_from_flange=None,  # the URDF has fr3_hand_tcp
    velocity_limits=(2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26),
    acceleration_limits=(15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0),
    gripper=FRANKA_HAND,
    kinematics=urdf_path,
    sim=SimBinding(
        builder="franky_fr3",
        mjcf=mjcf_path,
        arm_joints=tuple(f"fr3_joint{i}" for i in range(1, 8)),
        finger_joints=("finger_joint1", "finger_joint2"),
        finger_open_qpos=(0.04, 0.04),
        finger_width=_sum,
        gripper_actuator="hand",
        gripper_open_ctrl=255.0,
        gripper_closed_ctrl=0.0,
        hand_body="hand",
        tcp_offset=flat(_TCP_IN_HAND),
        left_finger_bodies=("left_finger",),
        right_finger_bodies=("right_finger",),
    ),
    drive="franky",
    # Found like an SRDF's "never in collision" list: over 30 000 uniform random configurations
    # (fingers closed and open) each of these pairs stayed at least 4.9 cm apart, while every
    # other non-adjacent pair touched. ``test_motion.py`` re-samples to keep this honest.
    never_colliding=frozenset(
        frozenset(pair)
        for pair in [
            ("fr3_link0", "fr3_link2"),
            ("fr3_link0", "fr3_link3"),
            ("fr3_link0", "fr3_link4"),
            ("fr3_link1", "fr3_link3"),
            ("fr3_link1", "fr3_link4"),
            ("fr3_link2", "fr3_link4"),
            ("fr3_link3", "fr3_link5"),
            ("fr3_link3", "fr3_link6"),
            ("fr3_link3", "fr3_link7"),
            ("fr3_link3", "fr3_hand"),
            ("fr3_link3", "fr3_leftfinger"),
            ("fr3_link3", "fr3_rightfinger"),
            ("fr3_link4", "fr3_link6"),
            ("fr3_link4", "fr3_link7"),
            ("fr3_link4", "fr3_hand"),
            ("fr3_link4", "fr3_leftfinger"),
            ("fr3_link4", "fr3_rightfinger"),
            ("fr3_link5", "fr3_leftfinger"),
            ("fr3_link5", "fr3_rightfinger"),
        ]
    ),
    maker_url="https://frankaemika.github.io/docs/control_parameters.html",
)
