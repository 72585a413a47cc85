"""Inverse kinematics of a robot's TCP: damped least squares with joint limits and random restarts.

The arm has seven joints for a six-dimensional pose, so every reachable pose has a
one-parameter family of solutions. The solver resolves that redundancy towards the seed: a
null-space term pulls the free joint motion back to ``q_seed``, the seed is tried first, and
when restarts are needed the converged solution closest to the seed wins. Near-seed solutions
matter on the robot because the motion planner then has the shortest, most predictable path.

Out-of-reach targets are refused before iterating (the TCP can never be further from the
shoulder than the straightened link chain), so a grasp 1.5 m away costs microseconds, not a
full round of restarts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from afford_core.grasp import GraspCandidate
from afford_planner.robot_model import RobotModel


@dataclass
class IKConfig:
    """Tolerances and effort of the IK solver.

    Attributes:
        position_tolerance: Largest accepted TCP position error (m); 1 mm is well inside what
            the fingers tolerate on a grasp.
        orientation_tolerance_deg: Largest accepted TCP rotation error (deg).
        max_iterations: Damped-least-squares iterations per attempt.
        restarts: Random starting configurations tried after the seed has failed.
        damping: Damping factor lambda of the least-squares step; keeps steps bounded near
            singularities (wrist aligned with shoulder, elbow stretched) at the cost of speed.
        max_step: Largest joint-space step norm per iteration (rad); keeps the linearisation
            honest far from the target.
        nullspace_gain: Pull of the redundant joint motion back towards the seed per iteration
            (0 disables it).
        distinct_tolerance: Two solutions closer than this (rad, Euclidean) count as the same
            when several are collected.
        seed: Seed of the random restarts, so a failing case reproduces exactly.
    """

    position_tolerance: float = 1e-3
    orientation_tolerance_deg: float = 1.0
    max_iterations: int = 150
    restarts: int = 20
    damping: float = 1e-3
    max_step: float = 0.3
    nullspace_gain: float = 0.05
    distinct_tolerance: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 < self.position_tolerance <= 0.05:
            raise ValueError(f"position_tolerance must be in (0, 0.05] m, got {self.position_tolerance}")
        if not 0.0 < self.orientation_tolerance_deg <= 30.0:
            raise ValueError(
                f"orientation_tolerance_deg must be in (0, 30], got {self.orientation_tolerance_deg}"
            )
        if self.max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1, got {self.max_iterations}")
        if self.restarts < 0:
            raise ValueError(f"restarts must be >= 0, got {self.restarts}")
        if not 0.0 < self.damping < 1.0:
            raise ValueError(f"damping must be in (0, 1), got {self.damping}")
        if not 0.0 < self.max_step <= 2.0:
            raise ValueError(f"max_step must be in (0, 2] rad, got {self.max_step}")
        if not 0.0 <= self.nullspace_gain <= 1.0:
            raise ValueError(f"nullspace_gain must be in [0, 1], got {self.nullspace_gain}")
        if self.distinct_tolerance <= 0.0:
            raise ValueError(f"distinct_tolerance must be > 0, got {self.distinct_tolerance}")


@dataclass(frozen=True)
class IKResult:
    """Outcome of an IK query.

    Attributes:
        success: True when ``q`` meets both tolerances inside the joint limits.
        q: The solution (nq,) or ``None`` on failure.
        position_error: TCP position error (m) of ``q``, or of the best attempt on failure.
        orientation_error_deg: TCP rotation error (deg), same convention.
        attempts: Starting configurations used (1 = the seed alone).
        iterations: Total iterations over all attempts.
        reason: Empty on success; otherwise why no solution was returned.
    """

    success: bool
    q: np.ndarray | None
    position_error: float
    orientation_error_deg: float
    attempts: int
    iterations: int
    reason: str = ""


def reach_refusal(model: RobotModel, target_tcp_pose: np.ndarray) -> str:
    """Reason the target is geometrically out of reach, or "" when it may be reachable."""
    dist = float(np.linalg.norm(np.asarray(target_tcp_pose)[:3, 3] - model.shoulder_position()))
    if dist > model.reach_bound:
        return (
            f"target out of reach: TCP {dist:.3f} m from the shoulder, "
            f"the arm reaches at most {model.reach_bound:.3f} m"
        )
    return ""


def _pose_errors(current: pin.SE3, target: pin.SE3) -> tuple[float, float]:
    pos = float(np.linalg.norm(target.translation - current.translation))
    rot = float(np.linalg.norm(pin.log3(current.rotation.T @ target.rotation)))
    return pos, math.degrees(rot)


def _descend(
    model: RobotModel, target: pin.SE3, q0: np.ndarray, q_pref: np.ndarray, config: IKConfig
) -> tuple[np.ndarray, float, float, int]:
    """One damped-least-squares attempt from ``q0``; returns (q, pos_err, rot_err_deg, iterations)."""
    q = q0.copy()
    lam2 = config.damping**2
    eye6 = np.eye(6)
    eye7 = np.eye(model.nq)
    pos_err = rot_err = math.inf
    for it in range(1, config.max_iterations + 1):
        placement, jac = model.tcp_in_base_and_local_jacobian(q)
        pos_err, rot_err = _pose_errors(placement, target)
        if pos_err <= config.position_tolerance and rot_err <= config.orientation_tolerance_deg:
            return q, pos_err, rot_err, it - 1
        # Twist that carries the current TCP onto the target, in the TCP frame like ``jac``.
        err = pin.log6(placement.actInv(target)).vector
        # A joint resting on a limit and pushed outwards would be clipped back every
        # iteration and stall the descent: solve again without it, so the other joints
        # take up its share of the motion.
        free = np.ones(model.nq, dtype=bool)
        for _ in range(3):
            jac_free = jac * free
            jac_pinv = jac_free.T @ np.linalg.solve(jac_free @ jac_free.T + lam2 * eye6, eye6)
            dq = jac_pinv @ err
            if config.nullspace_gain > 0.0:
                dq += (eye7 - jac_pinv @ jac_free) @ (config.nullspace_gain * (q_pref - q))
            dq[~free] = 0.0
            pushed = ((q <= model.lower + 1e-9) & (dq < 0.0)) | ((q >= model.upper - 1e-9) & (dq > 0.0))
            if not np.any(pushed):
                break
            free &= ~pushed
        norm = float(np.linalg.norm(dq))
        if norm > config.max_step:
            dq *= config.max_step / norm
        q = model.clip(q + dq)
    placement = model.tcp_in_base(q)
    pos_err, rot_err = _pose_errors(placement, target)
    return q, pos_err, rot_err, config.max_iterations


def _converged(pos: float, rot: float, config: IKConfig) -> bool:
    return pos <= config.position_tolerance and rot <= config.orientation_tolerance_deg


def ik_solutions(
    model: RobotModel,
    target_tcp_pose: np.ndarray,
    q_seed: np.ndarray,
    config: IKConfig | None = None,
    max_solutions: int = 1,
    accept: Callable[[np.ndarray], bool] | None = None,
) -> tuple[list[np.ndarray], IKResult]:
    """Up to ``max_solutions`` distinct IK solutions, nearest to the seed first.

    The seed is tried first, then ``config.restarts`` random configurations until enough
    distinct solutions are found. ``accept`` filters candidates (e.g. collision-free only);
    rejected ones do not count. The returned :class:`IKResult` describes the best solution
    (nearest the seed) or, on failure, why there is none.
    """
    config = config or IKConfig()
    if max_solutions < 1:
        raise ValueError(f"max_solutions must be >= 1, got {max_solutions}")
    q_seed = model.check_q(q_seed, "q_seed")
    target_world = np.asarray(target_tcp_pose, dtype=np.float64)
    target = model.world_to_base(target_world)

    refusal = reach_refusal(model, target_world)
    if refusal:
        return [], IKResult(False, None, math.inf, math.inf, 0, 0, refusal)

    rng = np.random.default_rng(config.seed)
    q_start = model.clip(q_seed)
    solutions: list[np.ndarray] = []
    best = (math.inf, math.inf)
    attempts = iterations = rejected = 0
    for attempt in range(config.restarts + 1):
        q0 = q_start if attempt == 0 else model.random_configuration(rng)
        q, pos, rot, its = _descend(model, target, q0, q_start, config)
        attempts += 1
        iterations += its
        if not _converged(pos, rot, config):
            if pos + 0.01 * rot < best[0] + 0.01 * best[1]:  # 1 deg weighs like 1 cm
                best = (pos, rot)
            continue
        if any(np.linalg.norm(q - s) < config.distinct_tolerance for s in solutions):
            continue
        if accept is not None and not accept(q):
            rejected += 1
            continue
        solutions.append(q)
        if len(solutions) >= max_solutions:
            break

    if not solutions:
        if rejected:
            reason = f"all {rejected} IK solutions found were rejected (e.g. in collision)"
        else:
            reason = (
                f"IK did not converge in {attempts} attempts: best error "
                f"{best[0] * 1000:.1f} mm / {best[1]:.2f} deg (pose likely outside the workspace "
                "or joint limits)"
            )
        return [], IKResult(False, None, best[0], best[1], attempts, iterations, reason)

    solutions.sort(key=lambda s: float(np.linalg.norm(s - q_seed)))
    pos, rot = _pose_errors(model.tcp_in_base(solutions[0]), target)
    return solutions, IKResult(True, solutions[0].copy(), pos, rot, attempts, iterations)


def solve_ik(
    model: RobotModel,
    target_tcp_pose: np.ndarray,
    q_seed: np.ndarray,
    config: IKConfig | None = None,
) -> IKResult:
    """Joint angles putting the TCP at ``target_tcp_pose`` (4x4, world), near ``q_seed``.

    Returns a failed :class:`IKResult` (``q is None``) with a reason when the target is out
    of reach or no attempt converges within tolerance and joint limits.
    """
    return ik_solutions(model, target_tcp_pose, q_seed, config, max_solutions=1)[1]


def local_ik(
    model: RobotModel, target_tcp_pose: np.ndarray, q_start: np.ndarray, config: IKConfig | None = None
) -> IKResult:
    """A single descent from ``q_start`` with no restarts.

    Used for Cartesian paths, where a restart would jump to another branch of solutions and
    turn a straight-line motion into an arbitrary one.
    """
    config = config or IKConfig()
    q_start = model.check_q(q_start, "q_start")
    target = model.world_to_base(target_tcp_pose)
    q, pos, rot, its = _descend(model, target, q_start, q_start, config)
    if _converged(pos, rot, config):
        return IKResult(True, q, pos, rot, 1, its)
    at_limit = [
        str(i + 1) for i in range(model.nq) if not model.lower[i] + 1e-6 < q[i] < model.upper[i] - 1e-6
    ]
    limits = f" with joint(s) {', '.join(at_limit)} at their limits" if at_limit else ""
    reason = f"local IK stalled at {pos * 1000:.1f} mm / {rot:.2f} deg{limits}"
    return IKResult(False, None, pos, rot, 1, its, reason)


#: IK effort of the reach test. A grasp the arm cannot take costs every restart in full, and the
#: test runs on every candidate, so it is cheaper than the planner's IK: fewer, shorter descents
#: to a looser tolerance (the planner still solves the pose exactly). Measured on the 245
#: candidates of bench/results/eval-gate_edge-20 against the planner's IK (20 restarts, 150
#: iterations, 1 mm / 1 deg): no reachable pose called unreachable, at about a fifth of the
#: time (restarts=2 with full descents missed 3 of 109, restarts=4 missed 2).
REACH_IK = IKConfig(restarts=8, max_iterations=40, position_tolerance=0.002, orientation_tolerance_deg=2.0)


def arm_reach(
    model: RobotModel, q_seed: np.ndarray, config: IKConfig | None = None
) -> Callable[[GraspCandidate], bool]:
    """The reach test of the AFFORD-X reach term taken from the arm itself: can the TCP be put
    at a candidate's grasp pose, position and orientation, within the joint limits.

    Collisions are not looked at (the clearance term and the planner see them), so this is the
    kinematic part of "reachable" only. Out-of-reach poses are refused in microseconds; a pose
    near the edge of the workspace costs up to ``config.restarts + 1`` descents (default
    :data:`REACH_IK`).
    """
    q_seed = model.check_q(q_seed, "q_seed")
    config = config or REACH_IK

    def reachable(cand: GraspCandidate) -> bool:
        return solve_ik(model, cand.pose_matrix(), q_seed, config).success

    return reachable
