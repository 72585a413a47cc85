"""What a robot is, as data: joints, limits, home, frames, gripper, models and how it is driven.

A :class:`RobotDescription` is everything the rest of the stack needs to know about an arm and
its gripper. The planner builds its kinematic and collision model from ``kinematics``, the
safety checks read the limits, the simulator builds its MuJoCo model with the builder named by
``sim.builder``, and the executor picks its driver from ``drive``. No module outside a robot's
own description names one of its joints or one of its gripper's numbers.

Conventions every robot keeps, so that grasp candidates mean the same thing on every arm:

* the TCP frame sits midway between the fingertip pads, z is the approach direction (palm
  towards the object) and y the finger closing axis (``afford_core.grasp``);
* the robot's base frame is the world frame of its scene (the base stands at the origin);
* ``home`` holds the TCP pointing straight down with gripper x along world x and y along world
  -y (:data:`HOME_TCP_ROTATION`), the orientation grasp samplers break ties towards.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

DriveKind = Literal["franky", "joint_command_topic", "sim_only"]
"""How a real (or simulated-as-real) robot of this kind is commanded: ``franky`` (libfranka:
the FR3, or franky-sim), ``joint_command_topic`` (joint position commands streamed on a topic,
as Isaac Sim's articulation controller takes them), ``sim_only`` (the batch world only). The
executor node's ``backend`` parameter defaults to it."""
DRIVES: tuple[DriveKind, ...] = ("franky", "joint_command_topic", "sim_only")

HOME_TCP_ROTATION: np.ndarray = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])
"""TCP orientation at every robot's home: columns are the gripper x, y, z axes in the world
(x along world x, y along world -y, z down)."""


@dataclass(frozen=True)
class GripperDescription:
    """A parallel gripper.

    Attributes:
        name: What it is (``"franka_hand"``, ``"robotiq_2f85"``).
        max_width: Largest opening between the fingertip pads (m).
        min_width: Opening between the pads with the fingers shut (m): 0 where they meet; a
            part thinner than this slips between them.
        max_force: Largest continuous grasp force the hardware allows (N).
        grasp_force: Force a grasp closes with unless told otherwise (N).
        finger_joints: Joints of the kinematic model that move the fingers; the arm's model
            locks them (they never move the TCP).
        finger_positions: Opening width (m) -> the finger joints' values, in ``finger_joints``
            order (for the collision model at a given opening).
        hand_links: Collision bodies of the hand and fingers: the ones allowed to touch a grasp
            target in the last centimetres of an approach.
        pad_length: Extent of a fingertip pad along the approach (m): how far past a part's
            surface the TCP may go and still hold it between the pads.
        palm_offset: Distance from the TCP back to the palm (the hand's back) along -z (m).
        finger_length: Distance from the TCP back to the finger bases along -z (m).
    """

    name: str
    max_width: float
    max_force: float
    grasp_force: float
    finger_joints: tuple[str, ...]
    finger_positions: Callable[[float], tuple[float, ...]]
    hand_links: tuple[str, ...]
    pad_length: float
    palm_offset: float
    finger_length: float
    min_width: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 < self.max_width <= 0.3:
            raise ValueError(f"{self.name}: max_width must be in (0, 0.3] m, got {self.max_width}")
        if not 0.0 <= self.min_width < self.max_width:
            raise ValueError(f"{self.name}: need 0 <= min_width < max_width, got {self.min_width}")
        if not 0.0 < self.grasp_force <= self.max_force:
            raise ValueError(
                f"{self.name}: need 0 < grasp_force <= max_force, got {self.grasp_force}, {self.max_force}"
            )
        if not 0.0 < self.finger_length <= self.palm_offset:
            raise ValueError(f"{self.name}: need 0 < finger_length <= palm_offset")
        if not self.hand_links or not self.finger_joints:
            raise ValueError(f"{self.name}: hand_links and finger_joints must not be empty")
        if len(self.finger_positions(self.max_width)) != len(self.finger_joints):
            raise ValueError(f"{self.name}: finger_positions must give one value per finger joint")


@dataclass(frozen=True)
class SimBinding:
    """How the simulator's MJCF of the robot is read: which builder makes it, and its names.

    Attributes:
        builder: Name of the MuJoCo model builder in ``afford_sim.robots.SIM_BUILDERS``.
        mjcf: Returns the MJCF file the builder starts from (its joint ranges also bound the
            planner's limits: planning inside both keeps every plan executable).
        arm_joints: The arm's joints in the MJCF, in ``RobotDescription.arm_joints`` order; each
            has a position actuator of the same name.
        finger_joints: The MJCF joints of the fingers.
        finger_open_qpos: Their values with the hand open (the scene's start).
        finger_width: Their values -> the opening between the pads (m).
        gripper_actuator: The actuator that opens and closes the hand.
        gripper_open_ctrl: Its control value for fully open.
        gripper_closed_ctrl: Its control value for fully closed.
        hand_body: The body the TCP site hangs from.
        tcp_offset: Pose of the TCP in ``hand_body``'s frame, as a flattened 4x4.
        left_finger_bodies: Bodies of one finger (its pad's geoms become ``robot/left_finger/*``).
        right_finger_bodies: Bodies of the other finger (``robot/right_finger/*``); which is
            which matters to no check.
    """

    builder: str
    mjcf: Callable[[], Path]
    arm_joints: tuple[str, ...]
    finger_joints: tuple[str, ...]
    finger_open_qpos: tuple[float, ...]
    finger_width: Callable[[np.ndarray], float]
    gripper_actuator: str
    gripper_open_ctrl: float
    gripper_closed_ctrl: float
    hand_body: str
    tcp_offset: tuple[float, ...]
    left_finger_bodies: tuple[str, ...]
    right_finger_bodies: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.tcp_offset) != 16:
            raise ValueError("tcp_offset must be a flattened 4x4 matrix (16 values)")
        if len(self.finger_open_qpos) != len(self.finger_joints):
            raise ValueError("finger_open_qpos must give one value per finger joint")

    @property
    def tcp_matrix(self) -> np.ndarray:
        return np.asarray(self.tcp_offset, dtype=np.float64).reshape(4, 4)


@dataclass(frozen=True)
class RobotDescription:
    """An arm with its gripper; see the module docstring.

    Attributes:
        name: Registry name (``"fr3"``, ``"ur5e"``).
        title: What it is, for people (``"Franka Research 3 + Franka Hand"``).
        arm_joints: The arm's joints in configuration order (the kinematic model's names).
        home: Joint values of the home configuration (TCP down, :data:`HOME_TCP_ROTATION`).
        base_link: The link bolted to the table (never checked against the table).
        flange_frame: The arm's tool flange (the frame a hand is mounted on).
        tcp_frame: Frame of the TCP in the kinematic model; added from ``tcp_from_flange``
            when the model file lacks it.
        tcp_from_flange: The TCP in the flange frame (flattened 4x4), for models without a TCP
            frame; ``None`` when the file has ``tcp_frame``.
        velocity_limits: Joint speed limits (rad/s), the maker's datasheet.
        acceleration_limits: Joint acceleration limits (rad/s^2).
        gripper: The hand.
        kinematics: Returns the model file the planner loads (URDF or MJCF, by suffix); it may
            export it on first use.
        sim: How the simulator builds and reads the robot.
        drive: How the robot is commanded outside the batch world.
        never_colliding: Link pairs the joint limits keep apart, left out of self-collision
            checks (an SRDF's "never in collision" list).
        maker_url: Where the limits come from.
        position_limits: Joint ranges (rad, ``(lower, upper)`` per arm joint) intersected with
            the model files'; needed where a file leaves a joint unbounded (a continuous joint,
            as the Kinova Gen3's odd joints are): the planner samples and interpolates inside
            finite limits. ``None``: the files' ranges alone.
    """

    name: str
    title: str
    arm_joints: tuple[str, ...]
    home: tuple[float, ...]
    base_link: str
    flange_frame: str
    tcp_frame: str
    tcp_from_flange: tuple[float, ...] | None
    velocity_limits: tuple[float, ...]
    acceleration_limits: tuple[float, ...]
    gripper: GripperDescription
    kinematics: Callable[[], Path]
    sim: SimBinding
    drive: DriveKind
    never_colliding: frozenset[frozenset[str]] = field(default_factory=frozenset)
    maker_url: str = ""
    position_limits: tuple[tuple[float, float], ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.arm_joints)
        if n < 3 or len(set(self.arm_joints)) != n:
            raise ValueError(f"{self.name}: arm_joints must name 3 or more distinct joints")
        for what in ("home", "velocity_limits", "acceleration_limits"):
            values = getattr(self, what)
            if len(values) != n or not all(math.isfinite(v) for v in values):
                raise ValueError(f"{self.name}: {what} must hold {n} finite values, got {values}")
        if min(self.velocity_limits) <= 0 or min(self.acceleration_limits) <= 0:
            raise ValueError(f"{self.name}: velocity and acceleration limits must be positive")
        if len(self.sim.arm_joints) != n:
            raise ValueError(f"{self.name}: sim.arm_joints must name the {n} arm joints")
        if self.tcp_from_flange is not None and len(self.tcp_from_flange) != 16:
            raise ValueError(f"{self.name}: tcp_from_flange must be a flattened 4x4 matrix")
        if self.position_limits is not None and (
            len(self.position_limits) != n
            or not all(math.isfinite(lo) and math.isfinite(hi) and lo < hi for lo, hi in self.position_limits)
        ):
            raise ValueError(f"{self.name}: position_limits must give {n} finite (lower, upper) pairs")
        if self.drive not in DRIVES:
            raise ValueError(f"{self.name}: drive must be one of {DRIVES}, got {self.drive!r}")

    @property
    def dof(self) -> int:
        """Number of arm joints."""
        return len(self.arm_joints)

    @property
    def home_array(self) -> np.ndarray:
        return np.asarray(self.home, dtype=np.float64)


def flat(matrix: np.ndarray) -> tuple[float, ...]:
    """A 4x4 matrix as the 16-tuple the descriptions store (frozen, hashable)."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (4, 4):
        raise ValueError(f"expected a 4x4 matrix, got shape {m.shape}")
    return tuple(float(v) for v in m.ravel())
