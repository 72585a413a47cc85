"""Arm kinematics from a robot description: joint limits, TCP forward kinematics and Jacobian.

A :class:`RobotModel` is built from a :class:`~afford_core.robots.RobotDescription` (the FR3 by
default): pinocchio loads its kinematic model (URDF or MJCF), locks the gripper's joints (they
never move the TCP) and, for a model without a TCP frame, adds one from ``tcp_from_flange``. The
TCP frame is the one every :class:`~afford_core.grasp.GraspCandidate` pose is written in (z
approach, y finger closing axis, origin between the fingertip pads).

All public poses are in the world frame. The robot's base may sit anywhere in the world
(``RobotModelConfig.base_pose``); pinocchio itself always works in the base frame, and this module
converts at the boundary so callers never see base-frame quantities.

Joint limits are the intersection of the kinematic model's and the simulator's MJCF ranges: a
URDF often ships the wider mechanical limits, the MJCF the narrower datasheet limits that the
simulator and the real controller enforce, so planning inside both keeps every plan executable.
A description's ``position_limits`` narrow them further (and bound continuous joints).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from afford_core.robots import DEFAULT_ROBOT, RobotDescription, get_robot


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
class RobotModelConfig:
    """Where the robot stands and how far its plans keep from the joint limits.

    Attributes:
        base_pose: 4x4 pose of the robot base in the world.
        limit_margin: Radians kept clear of every joint limit, so that tracking error near a
            limit does not trip the controller's own limit check.
        sim_limits: Also bound the limits by the simulator MJCF's joint ranges.
    """

    base_pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    limit_margin: float = 0.0
    sim_limits: bool = True

    def __post_init__(self) -> None:
        self.base_pose = as_pose(self.base_pose, "base_pose")
        if not 0.0 <= self.limit_margin < 0.2:
            raise ValueError(f"limit_margin must be in [0, 0.2) rad, got {self.limit_margin}")


def _mjcf_joint_ranges(path: Path) -> dict[str, tuple[float, float]]:
    # MjSpec parses without compiling, so no meshes are loaded just to read a few ranges.
    import mujoco

    spec = mujoco.MjSpec.from_file(str(path))
    return {j.name: (float(j.range[0]), float(j.range[1])) for j in spec.joints if j.range[0] < j.range[1]}


def load_full_model(robot: RobotDescription) -> tuple[pin.Model, Path]:
    """The robot's whole kinematic model (arm and gripper joints) and the file it came from,
    with the TCP frame added when the file lacks it."""
    path = Path(robot.kinematics())
    if not path.is_file():
        raise FileNotFoundError(f"{robot.name}: kinematic model {path} not found")
    if path.suffix == ".urdf":
        model = pin.buildModelFromUrdf(str(path))
    elif path.suffix == ".xml":
        model = pin.buildModelFromMJCF(str(path))
    else:
        raise ValueError(f"{robot.name}: {path} is neither a URDF (.urdf) nor an MJCF (.xml)")
    if robot.tcp_from_flange is not None and not model.existFrame(robot.tcp_frame):
        if not model.existFrame(robot.flange_frame):
            raise ValueError(f"{robot.name}: {path} has no flange frame {robot.flange_frame!r}")
        flange = model.frames[model.getFrameId(robot.flange_frame)]
        offset = np.asarray(robot.tcp_from_flange, dtype=np.float64).reshape(4, 4)
        placement = flange.placement * se3_from_matrix(offset)
        model.addFrame(
            pin.Frame(
                robot.tcp_frame,
                flange.parentJoint,
                model.getFrameId(robot.flange_frame),
                placement,
                pin.FrameType.OP_FRAME,
            )
        )
    missing = [n for n in (*robot.arm_joints, *robot.gripper.finger_joints) if not model.existJointName(n)]
    if missing or not model.existFrame(robot.tcp_frame):
        raise ValueError(
            f"{path} is not the {robot.title}: missing joints {missing} or frame {robot.tcp_frame!r}"
        )
    return model, path


class RobotModel:
    """Kinematics of a robot's arm (its gripper locked), from its description.

    ``q`` is always the arm's joint angles (rad), ``nq`` of them; the fingers never change the
    TCP, so the kinematic model locks them. ``full_model`` keeps the whole description (arm +
    fingers) for the collision module, which needs the finger geometry at a chosen opening.
    """

    def __init__(
        self, robot: RobotDescription | str = DEFAULT_ROBOT, config: RobotModelConfig | None = None
    ) -> None:
        self.robot: RobotDescription = get_robot(robot)
        self.config = config or RobotModelConfig()
        self.full_model, self.model_path = load_full_model(self.robot)
        self.nq: int = self.robot.dof
        self.finger_joint_ids: list[int] = [
            self.full_model.getJointId(n) for n in self.robot.gripper.finger_joints
        ]
        extra = [
            self.full_model.getJointId(self.full_model.names[j])
            for j in range(1, self.full_model.njoints)
            if self.full_model.names[j] not in self.robot.arm_joints and j not in self.finger_joint_ids
        ]
        # Joints neither arm nor finger (none today) would be locked at their neutral value.
        self._locked_ids = [*self.finger_joint_ids, *extra]
        self.model: pin.Model = pin.buildReducedModel(
            self.full_model,
            self._locked_ids,
            self.full_configuration_unchecked(None, self.robot.gripper.max_width),
        )
        order = [self.model.getJointId(n) for n in self.robot.arm_joints]
        if order != list(range(1, self.nq + 1)) or self.model.nq != self.nq:
            raise ValueError(f"{self.robot.name}: the arm joints must be the model's joints, in order")
        self.data: pin.Data = self.model.createData()
        self.tcp_frame_id: int = self.model.getFrameId(self.robot.tcp_frame)

        lower = self.model.lowerPositionLimit.copy()
        upper = self.model.upperPositionLimit.copy()
        if self.config.sim_limits:
            ranges = _mjcf_joint_ranges(self.robot.sim.mjcf())
            for i, name in enumerate(self.robot.sim.arm_joints):
                if name in ranges:
                    lower[i] = max(lower[i], ranges[name][0])
                    upper[i] = min(upper[i], ranges[name][1])
        if self.robot.position_limits is not None:
            bounds = np.asarray(self.robot.position_limits, dtype=np.float64)
            lower, upper = np.maximum(lower, bounds[:, 0]), np.minimum(upper, bounds[:, 1])
        unbounded = [i + 1 for i in range(self.nq) if not np.isfinite(upper[i] - lower[i])]
        if unbounded:
            raise ValueError(
                f"{self.robot.name}: joints {unbounded} are unbounded; give them position_limits "
                "in the description"
            )
        self.lower: np.ndarray = lower + self.config.limit_margin
        self.upper: np.ndarray = upper - self.config.limit_margin
        self.velocity_limits: np.ndarray = np.asarray(self.robot.velocity_limits, dtype=np.float64)
        self.acceleration_limits: np.ndarray = np.asarray(self.robot.acceleration_limits, dtype=np.float64)
        self.q_home: np.ndarray = self.robot.home_array
        if not self.within_limits(self.q_home):
            raise ValueError(
                f"{self.robot.name}: home is outside the joint limits: {self.limit_violations(self.q_home)}"
            )

        self.base_pose: np.ndarray = self.config.base_pose.copy()
        self.base_se3: pin.SE3 = se3_from_matrix(self.base_pose)
        self._base_rot6 = np.kron(np.eye(2), self.base_pose[:3, :3])

        # Any TCP pose is at most this far from the shoulder (the second joint's origin, fixed in
        # the base): the chain of rigid links from there to the TCP, straightened out.
        pin.framesForwardKinematics(self.model, self.data, self.q_home)
        chain = [self.data.oMi[self.model.getJointId(n)].translation for n in self.robot.arm_joints[1:]]
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
        """Configuration of ``full_model``: the arm angles plus the fingers at ``finger_width``."""
        q = self.check_q(q)
        width_max = self.robot.gripper.max_width
        if not 0.0 <= finger_width <= width_max:
            raise ValueError(f"finger_width must be in [0, {width_max}] m, got {finger_width}")
        return self.full_configuration_unchecked(q, finger_width)

    def full_configuration_unchecked(self, q: np.ndarray | None, finger_width: float) -> np.ndarray:
        full = pin.neutral(self.full_model)
        if q is not None:
            for i, name in enumerate(self.robot.arm_joints):
                full[self.full_model.idx_qs[self.full_model.getJointId(name)]] = q[i]
        values = self.robot.gripper.finger_positions(finger_width)
        for jid, v in zip(self.finger_joint_ids, values, strict=True):
            full[self.full_model.idx_qs[jid]] = v
        return full

    # ----------------------------------------------------------------- kinematics
    def tcp_in_base(self, q: np.ndarray) -> pin.SE3:
        """TCP placement in the robot base frame (no input checks: the IK inner loop calls it)."""
        pin.forwardKinematics(self.model, self.data, q)
        return pin.updateFramePlacement(self.model, self.data, self.tcp_frame_id).copy()

    def tcp_in_base_and_local_jacobian(self, q: np.ndarray) -> tuple[pin.SE3, np.ndarray]:
        """TCP placement in the base frame and the 6 x nq Jacobian expressed in the TCP frame."""
        pin.computeJointJacobians(self.model, self.data, q)
        placement = pin.updateFramePlacement(self.model, self.data, self.tcp_frame_id).copy()
        jac = pin.getFrameJacobian(self.model, self.data, self.tcp_frame_id, pin.LOCAL)
        return placement, jac

    def fk(self, q: np.ndarray) -> np.ndarray:
        """4x4 world pose of the TCP at arm configuration ``q``."""
        q = self.check_q(q)
        return self.base_pose @ self.tcp_in_base(q).homogeneous

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """6 x nq TCP Jacobian, rows [linear; angular], both in world axes at the TCP origin.

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
