"""Limit checks every command passes before it leaves the executor (DESIGN.md section 8).

The executor is the only component that commands the robot, so this is the last line of
software defence before a motion reaches the robot: a trajectory is refused as a whole when any
sample, or any point between samples, breaks a joint position limit (with a margin), a joint
velocity limit (from the trajectory's own timing), or a workspace box for the TCP; when it has
NaN or infinite values or non-increasing times; or when its first point is far from where the
arm is (which would make the controller jump). A gripper command is checked against the
gripper's opening and force range (its description's).

Nothing here commands anything and nothing imports rclpy: the checks are pure functions of the
trajectory, the current joint state and a :class:`SafetyConfig`, so they are tested directly
and the executor node stays a thin shell. The checks never alter a trajectory (no clipping):
a command that needs fixing is the planner's job, and silently changing it here would hide a bug
that could hurt someone on the real arm.

Joint position and velocity limits come from :class:`~afford_planner.robot_model.RobotModel`
(the robot description's datasheet velocity limits and the intersection of the kinematic model's
and the simulator's position ranges), so the numbers live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from afford_planner.robot_model import RobotModel

CheckName = Literal["", "shape", "finite", "time", "start", "joint_limit", "velocity", "workspace", "gripper"]
"""Which check refused a command; empty when it passed."""

def _vec3(value: tuple[float, ...] | list[float] | np.ndarray, what: str) -> tuple[float, float, float]:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} must be 3 finite numbers (x, y, z), got {value!r}")
    return (float(arr[0]), float(arr[1]), float(arr[2]))


@dataclass
class SafetyConfig:
    """Limits a command must respect before it is sent to the robot.

    Attributes:
        joint_margin: Radians every joint must stay inside its position limits, so tracking
            error near a limit never trips the controller's own limit reflex.
        velocity_fraction: Largest fraction of the robot's joint velocity limits that a
            trajectory's timing may ask for (finite differences between consecutive samples).
        workspace_min: Lower corner (x, y, z) of the box, in the robot base frame
            (m), the TCP must stay in along the whole trajectory. The default floor z = 0 is the
            table top the robot stands on: the TCP (between the fingertips) below it is a crash.
        workspace_max: Upper corner (x, y, z) of that box (m).
        max_start_deviation: Largest difference (rad, any joint) between the first trajectory
            point and the measured joint state: a larger gap would make the controller jump.
        interpolation_step: Largest joint change (rad, any joint) between two configurations
            whose TCP is checked against the workspace box; a sparse trajectory is
            interpolated linearly (as the executor follows it) so no stretch goes unchecked.
        max_points: Most samples a trajectory may have, bounding the cost of the checks.
        max_gripper_width: Widest opening the gripper may be commanded to (m); ``None``: the
            gripper's largest. A value above the gripper's is refused by the checker.
        max_grasp_force: Largest grasp force that may be commanded (N); ``None``: the gripper's
            continuous maximum. A value above it is refused by the checker.
    """

    joint_margin: float = 0.05
    velocity_fraction: float = 1.0
    workspace_min: tuple[float, float, float] = (0.1, -0.6, 0.0)
    workspace_max: tuple[float, float, float] = (0.9, 0.6, 0.9)
    max_start_deviation: float = 0.05
    interpolation_step: float = 0.05
    max_points: int = 100_000
    max_gripper_width: float | None = None
    max_grasp_force: float | None = None
    _lo: np.ndarray = field(init=False, repr=False)
    _hi: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.joint_margin < 0.3:
            raise ValueError(f"joint_margin must be in [0, 0.3) rad, got {self.joint_margin}")
        if not 0.0 < self.velocity_fraction <= 1.0:
            raise ValueError(f"velocity_fraction must be in (0, 1], got {self.velocity_fraction}")
        self.workspace_min = _vec3(self.workspace_min, "workspace_min")
        self.workspace_max = _vec3(self.workspace_max, "workspace_max")
        self._lo = np.array(self.workspace_min)
        self._hi = np.array(self.workspace_max)
        if not np.all(self._lo < self._hi):
            raise ValueError(
                f"workspace_min {self.workspace_min} must be below workspace_max {self.workspace_max} "
                "on every axis"
            )
        if not 0.0 < self.max_start_deviation <= 0.5:
            raise ValueError(f"max_start_deviation must be in (0, 0.5] rad, got {self.max_start_deviation}")
        if not 0.0 < self.interpolation_step <= 0.2:
            raise ValueError(f"interpolation_step must be in (0, 0.2] rad, got {self.interpolation_step}")
        if self.max_points < 1:
            raise ValueError(f"max_points must be >= 1, got {self.max_points}")
        if self.max_gripper_width is not None and not self.max_gripper_width > 0.0:
            raise ValueError(f"max_gripper_width must be positive, got {self.max_gripper_width}")
        if self.max_grasp_force is not None and not self.max_grasp_force > 0.0:
            raise ValueError(f"max_grasp_force must be positive, got {self.max_grasp_force}")


@dataclass(frozen=True)
class SafetyResult:
    """The verdict on one command.

    Attributes:
        ok: True when every check passed and the command may be sent.
        check: The first check that failed (see :data:`CheckName`); empty when ``ok``.
        message: Why, in words an operator can act on; empty when ``ok``.
    """

    ok: bool
    check: CheckName = ""
    message: str = ""

    @staticmethod
    def passed() -> SafetyResult:
        return SafetyResult(True)

    @staticmethod
    def refused(check: CheckName, message: str) -> SafetyResult:
        return SafetyResult(False, check, message)


class SafetyChecker:
    """Runs the limit checks of a :class:`SafetyConfig` against a robot's kinematics.

    Raises:
        ValueError: the config allows a gripper width or force beyond the gripper's own.
    """

    def __init__(self, config: SafetyConfig | None = None, model: RobotModel | None = None) -> None:
        self.config = config or SafetyConfig()
        self.model = model or RobotModel()
        gripper = self.model.robot.gripper
        width, force = self.config.max_gripper_width, self.config.max_grasp_force
        if width is not None and width > gripper.max_width:
            raise ValueError(f"max_gripper_width must be in (0, {gripper.max_width}] m "
                             f"(the {gripper.name}'s), got {width}")
        if force is not None and force > gripper.max_force:
            raise ValueError(f"max_grasp_force must be in (0, {gripper.max_force:g}] N "
                             f"(the {gripper.name}'s), got {force}")
        #: The gripper limits in force: the config's, or the gripper's own.
        self.max_gripper_width: float = gripper.max_width if width is None else width
        self.max_grasp_force: float = gripper.max_force if force is None else force
        margin = self.config.joint_margin
        self.lower: np.ndarray = self.model.lower + margin
        self.upper: np.ndarray = self.model.upper - margin
        self.velocity_limits: np.ndarray = self.model.velocity_limits * self.config.velocity_fraction

    # ------------------------------------------------------------------ trajectories
    def check_trajectory(
        self,
        times: np.ndarray,
        positions: np.ndarray,
        q_current: np.ndarray,
        velocities: np.ndarray | None = None,
        start_reference: np.ndarray | None = None,
    ) -> SafetyResult:
        """Check a joint trajectory before it is sent.

        Args:
            times: (T,) seconds from the start of the motion, strictly increasing, >= 0.
            positions: (T, nq) arm joint angles (rad).
            q_current: (nq,) measured joint angles now (or where the arm is being sent now):
                the motion starts here, and its speed to the first point is checked from here.
            velocities: Optional (T, nq) joint velocities the trajectory carries; checked too.
            start_reference: What the first point must lie within ``max_start_deviation`` of;
                default ``q_current``. A chunk of a stream that continues a running one is
                compared with where the running one sends the arm at the first point's time
                (its first point is due at least a few ms ahead, and the arm moves meanwhile).
        """
        cfg = self.config
        t = np.asarray(times, dtype=np.float64)
        q = np.asarray(positions, dtype=np.float64)
        q0 = np.asarray(q_current, dtype=np.float64)
        n = self.model.nq
        if t.ndim != 1 or q.ndim != 2 or q.shape != (t.shape[0], n) or t.shape[0] == 0:
            return SafetyResult.refused(
                "shape", f"expected T >= 1 times and (T, {n}) positions, got {t.shape} and {q.shape}"
            )
        if t.shape[0] > cfg.max_points:
            return SafetyResult.refused("shape", f"{t.shape[0]} points exceed the limit of {cfg.max_points}")
        if q0.shape != (n,):
            return SafetyResult.refused("shape", f"current joint state must have {n} values, got {q0.shape}")
        if velocities is not None:
            v = np.asarray(velocities, dtype=np.float64)
            if v.shape != q.shape:
                return SafetyResult.refused("shape", f"velocities have shape {v.shape}, positions {q.shape}")
        else:
            v = None
        for name, arr in (("times", t), ("positions", q), ("current joint state", q0)) + (
            (("velocities", v),) if v is not None else ()
        ):
            if not np.all(np.isfinite(arr)):
                return SafetyResult.refused("finite", f"{name} contain NaN or infinite values")
        if t[0] < 0.0:
            return SafetyResult.refused("time", f"first time {t[0]:.4f} s is negative")
        steps = np.diff(t)
        if np.any(steps <= 0.0):
            k = int(np.argmax(steps <= 0.0))
            return SafetyResult.refused(
                "time",
                f"times must increase strictly: point {k + 1} at {t[k + 1]:.4f} s follows {t[k]:.4f} s",
            )

        ref = q0 if start_reference is None else np.asarray(start_reference, dtype=np.float64)
        if ref.shape != (n,) or not np.all(np.isfinite(ref)):
            return SafetyResult.refused("shape", f"the start reference must be {n} finite values, got {ref}")
        gap = np.abs(q[0] - ref)
        if np.max(gap) > cfg.max_start_deviation:
            j = int(np.argmax(gap))
            return SafetyResult.refused(
                "start",
                f"first point is {gap[j]:.3f} rad from "
                f"{'the measured' if start_reference is None else 'the running motion at its time,'} "
                f"joint {j + 1} "
                f"(at most {cfg.max_start_deviation:.3f} allowed)",
            )

        low = q < self.lower
        high = q > self.upper
        if np.any(low | high):
            k, j = np.argwhere(low | high)[0]
            return SafetyResult.refused(
                "joint_limit",
                f"point {k} joint {j + 1} = {q[k, j]:.4f} rad is outside [{self.lower[j]:.4f}, "
                f"{self.upper[j]:.4f}] (limits with a {cfg.joint_margin:.3f} rad margin)",
            )

        # The executor moves from the measured state to the first point over t[0] seconds.
        path = np.vstack([q0, q])
        dt = np.r_[t[0], steps]
        moving = dt > 0.0
        speed = np.zeros_like(q)
        speed[moving] = np.abs(np.diff(path, axis=0)[moving]) / dt[moving, None]
        if v is not None:
            speed = np.maximum(speed, np.abs(v))
        ratio = speed / self.velocity_limits
        if np.max(ratio) > 1.0:
            kv, jv = (int(x) for x in np.unravel_index(int(np.argmax(ratio)), ratio.shape))
            return SafetyResult.refused(
                "velocity",
                f"joint {jv + 1} needs {speed[kv, jv]:.3f} rad/s at point {kv}, over its limit "
                f"{self.velocity_limits[jv]:.3f} rad/s",
            )

        return self._check_workspace(path)

    def _check_workspace(self, path: np.ndarray) -> SafetyResult:
        # path[0] is the measured state, which is not commanded: an arm already outside the box
        # is not refused for where it is, only for where it would be sent.
        lo, hi = self.config._lo, self.config._hi
        step = self.config.interpolation_step
        for k in range(1, path.shape[0]):
            a, b = path[k - 1], path[k]
            pieces = max(1, int(np.ceil(np.max(np.abs(b - a)) / step)))
            for s in range(1, pieces + 1):
                p = self.model.tcp_in_base(a + (b - a) * (s / pieces)).translation
                if np.any(p < lo) or np.any(p > hi):
                    return SafetyResult.refused(
                        "workspace",
                        f"TCP at ({p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f}) m on the way to point {k - 1} leaves "
                        f"the workspace box {tuple(round(float(x), 3) for x in lo)}.."
                        f"{tuple(round(float(x), 3) for x in hi)} m in {self.model.robot.base_link}",
                    )
        return SafetyResult.passed()

    # ------------------------------------------------------------------ gripper
    def check_gripper(self, command: str, width: float, force: float) -> SafetyResult:
        """Check a gripper command: ``open`` to ``width``, or ``grasp`` at ``width`` with ``force``."""
        if command not in ("open", "grasp"):
            return SafetyResult.refused("gripper", f"unknown gripper command {command!r} (open or grasp)")
        if not (np.isfinite(width) and np.isfinite(force)):
            return SafetyResult.refused("finite", f"width {width} and force {force} must be finite")
        if not 0.0 <= width <= self.max_gripper_width:
            return SafetyResult.refused(
                "gripper", f"width {width:.4f} m is outside [0, {self.max_gripper_width:.3f}] m"
            )
        if command == "grasp" and not 0.0 < force <= self.max_grasp_force:
            return SafetyResult.refused(
                "gripper", f"grasp force {force:.1f} N is outside (0, {self.max_grasp_force:.0f}] N"
            )
        return SafetyResult.passed()
