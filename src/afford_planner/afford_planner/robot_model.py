"""FR3 kinematics: joint limits, TCP forward kinematics and Jacobian, from the URDF via pinocchio.

The TCP is the URDF frame ``fr3_hand_tcp``: 0.1034 m along the hand's z, the hand sitting
0.107 m above link 7 and turned -45 deg about z. This is the same frame as the MuJoCo body
``hand`` of franky-sim's ``fr3.xml`` offset by 0.1034 m along its z, and the same frame the
shared :class:`~afford_planner.types.GraspCandidate` poses are written in (z approach, y finger
closing axis).

All public poses are in the world frame. The robot's base may sit anywhere in the world
(``FR3ModelConfig.base_pose``); pinocchio itself always works in the base frame, and this module
converts at the boundary so callers never see base-frame quantities.

Joint limits are the intersection of the URDF's and the simulator's (``fr3.xml``) ranges: the
URDF ships the wider mechanical limits, the MJCF the narrower FR3 datasheet limits that the
simulator and the real controller enforce, so planning inside both keeps every plan executable.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

ARM_JOINTS: tuple[str, ...] = tuple(f"fr3_joint{i}" for i in range(1, 8))
"""Names of the seven arm joints, in configuration order."""

FINGER_JOINTS: tuple[str, str] = ("fr3_finger_joint1", "fr3_finger_joint2")
TCP_FRAME = "fr3_hand_tcp"
MAX_FINGER_WIDTH = 0.08
"""Largest finger opening (m): each finger slides 0..0.04 m."""

Q_HOME: np.ndarray = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
"""The usual Franka ready pose: elbow up, hand pointing down, fingers along world y."""

FR3_ACCELERATION_LIMITS: np.ndarray = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
"""Joint acceleration limits (rad/s^2) from the FR3 datasheet; the URDF does not carry them."""


def franky_assets_dir() -> Path:
    """Folder of franky-sim's FR3 assets (URDF, MJCF, meshes), found without importing franky_sim."""
    spec = importlib.util.find_spec("franky_sim")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("franky_sim is not installed: it ships the FR3 URDF, MJCF and meshes")
    return Path(next(iter(spec.submodule_search_locations))) / "assets"


def _default_urdf() -> Path:
    return franky_assets_dir() / "fr3.urdf"


def _default_mjcf() -> Path | None:
    return franky_assets_dir() / "fr3.xml"


def as_pose(pose: np.ndarray, what: str = "pose") -> np.ndarray:
    """Validate a 4x4 homogeneous rigid transform and return it as a float64 copy."""
    t = np.array(pose, dtype=np.float64)
    if t.shape != (4, 4):
        raise ValueError(f"{what} must be a 4x4 homogeneous matrix, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{what} has NaN or infinite entries")
    if not np.allclose(t[3], [0.0, 0.0, 0.0, 1.0], atol=1e-9):
        raise ValueError(f"{what} bottom row must be [0, 0, 0, 1], got {t[3]}")
    r = t[:3, :3]
    if not np.allclose(r.T @ r, np.eye(3), atol=1e-6) or np.linalg.det(r) < 0:
        raise ValueError(f"{what} rotation block is not a proper rotation matrix")
    return t


def se3_from_matrix(pose: np.ndarray) -> pin.SE3:
    """pinocchio SE3 from a 4x4 matrix, re-orthonormalised so tiny drift cannot leak in."""
    u, _, vt = np.linalg.svd(pose[:3, :3])
    return pin.SE3(u @ vt, pose[:3, 3].copy())


@dataclass
class FR3ModelConfig:
    """Where the FR3 description lives and where the robot stands.

    Attributes:
        urdf_path: URDF with the arm, the Franka Hand and the ``fr3_hand_tcp`` frame; its
            ``meshes/...`` paths resolve relative to the URDF's folder.
        mjcf_path: The simulator's MJCF; its joint ranges tighten the URDF limits. ``None``
            keeps the URDF limits alone (e.g. for a description without a simulator twin).
        base_pose: 4x4 pose of the robot base (``fr3_link0``) in the world.
        limit_margin: Radians kept clear of every joint limit, so that tracking error near a
            limit does not trip the controller's own limit check.
    """

    urdf_path: Path = field(default_factory=_default_urdf)
    mjcf_path: Path | None = field(default_factory=_default_mjcf)
    base_pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    limit_margin: float = 0.0

    def __post_init__(self) -> None:
        self.urdf_path = Path(self.urdf_path)
        if not self.urdf_path.is_file():
            raise FileNotFoundError(f"FR3 URDF not found at {self.urdf_path}")
        if self.mjcf_path is not None:
            self.mjcf_path = Path(self.mjcf_path)
            if not self.mjcf_path.is_file():
                raise FileNotFoundError(f"FR3 MJCF not found at {self.mjcf_path} (pass None to skip it)")
        self.base_pose = as_pose(self.base_pose, "base_pose")
        if not 0.0 <= self.limit_margin < 0.2:
            raise ValueError(f"limit_margin must be in [0, 0.2) rad, got {self.limit_margin}")


def _mjcf_joint_ranges(path: Path) -> dict[str, tuple[float, float]]:
    # MjSpec parses without compiling, so no meshes are loaded just to read seven ranges.
    import mujoco

    spec = mujoco.MjSpec.from_file(str(path))
    return {j.name: (float(j.range[0]), float(j.range[1])) for j in spec.joints}


class FR3Model:
    """Kinematics of the 7-joint FR3 arm with the Franka Hand.

    ``q`` is always the 7 arm joint angles (rad); the fingers never change the TCP, so the
    kinematic model locks them. ``full_model`` keeps the 9-joint description (arm + fingers)
    for the collision module, which needs the finger geometry at a chosen opening.
    """

    nq: int = 7

    def __init__(self, config: FR3ModelConfig | None = None) -> None:
        self.config = config or FR3ModelConfig()
        self.full_model: pin.Model = pin.buildModelFromUrdf(str(self.config.urdf_path))
        missing = [n for n in (*ARM_JOINTS, *FINGER_JOINTS) if not self.full_model.existJointName(n)]
        if missing or not self.full_model.existFrame(TCP_FRAME):
            raise ValueError(
                f"{self.config.urdf_path} is not an FR3 with hand: missing joints {missing} "
                f"or frame {TCP_FRAME!r}"
            )
        self.finger_joint_ids: list[int] = [self.full_model.getJointId(n) for n in FINGER_JOINTS]
        self.model: pin.Model = pin.buildReducedModel(
            self.full_model, self.finger_joint_ids, pin.neutral(self.full_model)
        )
        self.data: pin.Data = self.model.createData()
        self.tcp_frame_id: int = self.model.getFrameId(TCP_FRAME)

        lower = self.model.lowerPositionLimit.copy()
        upper = self.model.upperPositionLimit.copy()
        if self.config.mjcf_path is not None:
            ranges = _mjcf_joint_ranges(self.config.mjcf_path)
            for i, name in enumerate(ARM_JOINTS):
                if name in ranges:
                    lower[i] = max(lower[i], ranges[name][0])
                    upper[i] = min(upper[i], ranges[name][1])
        self.lower: np.ndarray = lower + self.config.limit_margin
        self.upper: np.ndarray = upper - self.config.limit_margin
        self.velocity_limits: np.ndarray = self.model.velocityLimit.copy()
        self.acceleration_limits: np.ndarray = FR3_ACCELERATION_LIMITS.copy()
        self.q_home: np.ndarray = Q_HOME.copy()

        self.base_pose: np.ndarray = self.config.base_pose.copy()
        self.base_se3: pin.SE3 = se3_from_matrix(self.base_pose)
        self._base_rot6 = np.kron(np.eye(2), self.base_pose[:3, :3])

        # Any TCP pose is at most this far from the shoulder (joint 2's axis point, fixed in the
        # base): the chain of rigid links from there to the TCP, straightened out.
        pin.framesForwardKinematics(self.model, self.data, self.q_home)
        chain = [self.data.oMi[self.model.getJointId(n)].translation for n in ARM_JOINTS[1:]]
        chain.append(self.data.oMf[self.tcp_frame_id].translation)
        self._shoulder_base: np.ndarray = chain[0].copy()
        self.reach_bound: float = float(np.linalg.norm(np.diff(chain, axis=0), axis=1).sum())

    # ----------------------------------------------------------------- configurations
    def check_q(self, q: np.ndarray, what: str = "q") -> np.ndarray:
        """Validate shape and finiteness of an arm configuration and return it as float64."""
        arr = np.asarray(q, dtype=np.float64)
        if arr.shape != (self.nq,):
            raise ValueError(f"{what} must hold the {self.nq} arm joint angles, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{what} has NaN or infinite entries: {arr}")
        return arr

    def within_limits(self, q: np.ndarray, tol: float = 1e-9) -> bool:
        """True when every joint lies inside [lower - tol, upper + tol]."""
        q = np.asarray(q)
        return bool(np.all(q >= self.lower - tol) and np.all(q <= self.upper + tol))

    def limit_violations(self, q: np.ndarray, tol: float = 1e-9) -> list[str]:
        """Human-readable list of the joints outside their limits (empty when none)."""
        q = np.asarray(q)
        return [
            f"joint {i + 1} = {q[i]:.4f} outside [{self.lower[i]:.4f}, {self.upper[i]:.4f}]"
            for i in range(self.nq)
            if not self.lower[i] - tol <= q[i] <= self.upper[i] + tol
        ]

    def clip(self, q: np.ndarray) -> np.ndarray:
        return np.clip(q, self.lower, self.upper)

    def random_configuration(self, rng: np.random.Generator) -> np.ndarray:
        """Uniform sample inside the joint limits."""
        return rng.uniform(self.lower, self.upper)

    def full_configuration(self, q: np.ndarray, finger_width: float) -> np.ndarray:
        """9-vector for ``full_model``: the arm angles plus each finger at half the opening."""
        q = self.check_q(q)
        if not 0.0 <= finger_width <= MAX_FINGER_WIDTH:
            raise ValueError(f"finger_width must be in [0, {MAX_FINGER_WIDTH}] m, got {finger_width}")
        full = pin.neutral(self.full_model)
        for i, name in enumerate(ARM_JOINTS):
            full[self.full_model.idx_qs[self.full_model.getJointId(name)]] = q[i]
        for jid in self.finger_joint_ids:
            full[self.full_model.idx_qs[jid]] = finger_width / 2.0
        return full

    # ----------------------------------------------------------------- kinematics
    def tcp_in_base(self, q: np.ndarray) -> pin.SE3:
        """TCP placement in the robot base frame (no input checks: the IK inner loop calls it)."""
        pin.forwardKinematics(self.model, self.data, q)
        return pin.updateFramePlacement(self.model, self.data, self.tcp_frame_id).copy()

    def tcp_in_base_and_local_jacobian(self, q: np.ndarray) -> tuple[pin.SE3, np.ndarray]:
        """TCP placement in the base frame and the 6x7 Jacobian expressed in the TCP frame."""
        pin.computeJointJacobians(self.model, self.data, q)
        placement = pin.updateFramePlacement(self.model, self.data, self.tcp_frame_id).copy()
        jac = pin.getFrameJacobian(self.model, self.data, self.tcp_frame_id, pin.LOCAL)
        return placement, jac

    def fk(self, q: np.ndarray) -> np.ndarray:
        """4x4 world pose of the TCP at arm configuration ``q``."""
        q = self.check_q(q)
        return self.base_pose @ self.tcp_in_base(q).homogeneous

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """6x7 TCP Jacobian, rows [linear; angular], both in world axes at the TCP origin.

        ``J @ dq`` is the TCP's world-frame velocity twist (the linear part is the velocity of
        the TCP point itself, not of the world origin).
        """
        q = self.check_q(q)
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacement(self.model, self.data, self.tcp_frame_id)
        jac = pin.getFrameJacobian(self.model, self.data, self.tcp_frame_id, pin.LOCAL_WORLD_ALIGNED)
        return self._base_rot6 @ jac

    def shoulder_position(self) -> np.ndarray:
        """World position of the shoulder (the point joints 1 and 2 rotate about)."""
        return self.base_pose[:3, :3] @ self._shoulder_base + self.base_pose[:3, 3]

    def world_to_base(self, pose: np.ndarray) -> pin.SE3:
        """A validated 4x4 world pose expressed in the robot base frame."""
        return self.base_se3.actInv(se3_from_matrix(as_pose(pose)))
