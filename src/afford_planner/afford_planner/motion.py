"""Joint-space motion planning for a robot arm: OMPL RRTConnect, shortcutting, Cartesian lines, timing.

Four entry points on :class:`MotionPlanner`:

* :meth:`~MotionPlanner.plan` ``(q_start, q_goal)``: collision-free joint path. The straight
  line is tried first (free space is the common case); otherwise RRTConnect, then OMPL's path
  simplifier (vertex reduction and shortcutting).
* :meth:`~MotionPlanner.plan_to_pose` ``(q_start, tcp_pose)``: the collision-free IK solution
  nearest ``q_start``, by straight line if possible; otherwise several distinct solutions
  become the goal set of one RRTConnect query.
* :meth:`~MotionPlanner.cartesian_path` ``(q_start, tcp_pose_goal, step)``: straight-line TCP
  motion, IK at every step, for the final approach, the lift and drawer pulls.
* :meth:`~MotionPlanner.time_parameterize` ``(waypoints, vel_scale)``: a time-stamped joint
  trajectory within the robot's velocity and acceleration limits.

Every result is a :class:`PlanResult`. Bad requests (start or goal in collision, outside joint
limits, out of reach) are refused up front with a reason naming the joint or the touching pair,
and no planning time is spent on them.

Path length ``L`` is measured in joint space: the sum over consecutive waypoints of the
Euclidean norm of the joint difference, in radians (OMPL's ``PathGeometric.length`` on the
joint-angle vector space). It is the quantity the simplifier minimises and a fair proxy for
execution time at a fixed joint speed; it is not a Cartesian TCP distance.

Reproducibility: OMPL's random generator is reseeded with ``PlannerConfig.seed`` before every
query, so the same world, start, goal and config give the same path.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from ompl import base as ob
from ompl import geometric as og
from ompl import util as ou

from afford_planner.collision import CollisionWorld
from afford_planner.ik import IKConfig, ik_solutions, local_ik, reach_refusal
from afford_planner.robot_model import RobotModel, as_pose

_LOG_LEVELS = {
    "debug": ou.LogLevel.LOG_DEBUG,
    "info": ou.LogLevel.LOG_INFO,
    "warn": ou.LogLevel.LOG_WARN,
    "error": ou.LogLevel.LOG_ERROR,
    "none": ou.LogLevel.LOG_NONE,
}

# Sensor noise can put a measured start a hair outside a limit; closer than this it is clipped.
_START_LIMIT_SLACK = 1e-3


#: OMPL planners a query may use: ones that stop at their first solution (an optimising
#: planner would spend its whole budget on every query).
ALGORITHMS: tuple[str, ...] = ("RRTConnect", "BKPIECE1", "KPIECE1", "LBKPIECE1", "RRT", "PRM")


@dataclass
class PlannerConfig:
    """Settings of the motion planner.

    Attributes:
        algorithm: The OMPL planner of a free-space query (one of :data:`ALGORITHMS`).
            RRTConnect by default: bidirectional, fast in the open workspace of a table top.
            The evaluation's reference planner uses BKPIECE1 with a longer budget, so that a
            grasp RRTConnect gave up on is tried by a planner that explores differently.
        time_limit: Planner time budget per query (s). Refused requests take no time.
        range: Longest RRTConnect extension (rad, joint space); 0 lets OMPL choose (a fifth of
            the joint-space diagonal).
        simplify: Shortcut and prune the raw RRTConnect path (shorter, fewer corners to stop at).
        seed: Seed of OMPL's sampler and simplifier; positive (OMPL reads 0 as "pick one").
        collision_step: Largest joint-space distance (rad) between two states checked along a
            motion. No point of the arm or hand moves faster than about 1.23 m per rad of
            joint-space motion (largest singular value of the point Jacobians, sampled over the
            joint limits), so between checks a point is at most 0.62 * collision_step from a
            checked position: 0.008 rad keeps that under the default 5 mm obstacle padding
            (``CollisionConfig.padding``), and a motion valid at the checks is valid throughout.
        ik: IK settings used by :meth:`MotionPlanner.plan_to_pose` and the Cartesian path.
        ik_goals: Distinct collision-free IK solutions collected as goals for a pose target.
        cartesian_rotation_step_deg: Largest TCP rotation (deg) between Cartesian IK steps.
        cartesian_max_joint_step: Largest change of any joint (rad) between two Cartesian steps;
            a bigger jump means the arm would flip branch (singularity or limit), not follow
            the line, so the path is refused.
        trajectory_dt: Sample period (s) of :meth:`MotionPlanner.time_parameterize`.
        acceleration_scale: Fraction of the robot's acceleration limits used for timing.
        ompl_log_level: OMPL console verbosity: "debug", "info", "warn", "error" or "none".
    """

    algorithm: str = "RRTConnect"
    time_limit: float = 1.0
    range: float = 0.0
    simplify: bool = True
    seed: int = 1
    collision_step: float = 0.008
    ik: IKConfig = field(default_factory=IKConfig)
    ik_goals: int = 4
    cartesian_rotation_step_deg: float = 1.0
    cartesian_max_joint_step: float = 0.1
    trajectory_dt: float = 0.01
    acceleration_scale: float = 0.5
    ompl_log_level: str = "warn"

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if not 0.0 < self.time_limit <= 600.0:
            raise ValueError(f"time_limit must be in (0, 600] s, got {self.time_limit}")
        if self.range < 0.0:
            raise ValueError(f"range must be >= 0 rad (0 = OMPL default), got {self.range}")
        if not isinstance(self.seed, int) or self.seed <= 0:
            raise ValueError(f"seed must be a positive int (OMPL treats 0 as unseeded), got {self.seed!r}")
        if not 1e-4 <= self.collision_step <= 0.1:
            raise ValueError(f"collision_step must be in [1e-4, 0.1] rad, got {self.collision_step}")
        if self.ik_goals < 1:
            raise ValueError(f"ik_goals must be >= 1, got {self.ik_goals}")
        if not 0.0 < self.cartesian_rotation_step_deg <= 10.0:
            raise ValueError(
                f"cartesian_rotation_step_deg must be in (0, 10], got {self.cartesian_rotation_step_deg}"
            )
        if not 0.0 < self.cartesian_max_joint_step <= 1.0:
            raise ValueError(
                f"cartesian_max_joint_step must be in (0, 1] rad, got {self.cartesian_max_joint_step}"
            )
        if not 1e-4 <= self.trajectory_dt <= 0.1:
            raise ValueError(f"trajectory_dt must be in [1e-4, 0.1] s, got {self.trajectory_dt}")
        if not 0.0 < self.acceleration_scale <= 1.0:
            raise ValueError(f"acceleration_scale must be in (0, 1], got {self.acceleration_scale}")
        if self.ompl_log_level not in _LOG_LEVELS:
            raise ValueError(
                f"ompl_log_level must be one of {sorted(_LOG_LEVELS)}, got {self.ompl_log_level!r}"
            )


@dataclass(frozen=True)
class PlanResult:
    """Outcome of a planning query.

    Attributes:
        success: True when ``waypoints`` is a complete, collision-free path.
        waypoints: (N, nq) joint configurations from start to goal; straight joint-space
            segments between them are collision-free. On failure: the valid prefix found (a
            Cartesian path blocked part-way) or an empty (0, nq) array.
        path_length: ``L``, the sum of the joint-space Euclidean norms of the segments (rad).
        planning_time: Wall time of the query (s), refusals included.
        reason: Empty on success; otherwise what failed, naming joints or touching pairs.
        collision_checks: Configurations checked for collision during the query.
        fraction: Share of a Cartesian line covered (1.0 for a joint-space plan that succeeded).
    """

    success: bool
    waypoints: np.ndarray
    path_length: float
    planning_time: float
    reason: str = ""
    collision_checks: int = 0
    fraction: float = 0.0

    @property
    def goal(self) -> np.ndarray | None:
        """Last waypoint of a successful plan."""
        return self.waypoints[-1].copy() if self.success and len(self.waypoints) else None


def path_length(waypoints: np.ndarray) -> float:
    """Joint-space length: sum of Euclidean norms of consecutive differences (rad)."""
    w = np.asarray(waypoints, dtype=np.float64)
    if len(w) < 2:
        return 0.0
    return float(np.linalg.norm(np.diff(w, axis=0), axis=1).sum())


class MotionPlanner:
    """Plans collision-free motions of the robot in a :class:`CollisionWorld`."""

    def __init__(self, model: RobotModel, world: CollisionWorld, config: PlannerConfig | None = None) -> None:
        if world.robot is not model:
            raise ValueError("the collision world was built for a different RobotModel instance")
        self.model = model
        self.world = world
        self.config = config or PlannerConfig()
        ou.setLogLevel(_LOG_LEVELS[self.config.ompl_log_level])

        self._space = ob.RealVectorStateSpace(model.nq)
        bounds = ob.RealVectorBounds(model.nq)
        for i in range(model.nq):
            bounds.setLow(i, float(model.lower[i]))
            bounds.setHigh(i, float(model.upper[i]))
        self._space.setBounds(bounds)
        self._si = ob.SpaceInformation(self._space)
        self._si.setStateValidityChecker(self._state_valid)
        # OMPL wants the motion resolution as a fraction of the space's diagonal.
        self._si.setStateValidityCheckingResolution(
            self.config.collision_step / self._space.getMaximumExtent()
        )
        self._si.setup()

    # ----------------------------------------------------------------- helpers
    def _state_valid(self, state: ob.State) -> bool:
        # The space's bounds are the joint limits; the C++ bounds test costs next to nothing.
        if not self._space.satisfiesBounds(state):
            return False
        return not self.world.in_collision(np.array(state[0 : self.model.nq]))

    def _to_state(self, q: np.ndarray) -> ob.State:
        s = self._si.allocState()
        s[0 : self.model.nq] = [float(v) for v in q]
        return s

    def _reseed(self) -> None:
        # OMPL logs an error when the seed changes after sampling has started, yet it does
        # reseed its generator (a query repeats exactly); hide that one message.
        level = ou.getLogLevel()
        ou.setLogLevel(ou.LogLevel.LOG_NONE)
        ou.RNG.setSeed(self.config.seed)
        ou.setLogLevel(level)

    def _refusal(self, reason: str, t0: float, checks0: int) -> PlanResult:
        return PlanResult(
            False,
            np.zeros((0, self.model.nq)),
            0.0,
            time.perf_counter() - t0,
            reason,
            self.world.checks - checks0,
        )

    def _check_configuration(self, q: np.ndarray, what: str, slack: float = 0.0) -> tuple[np.ndarray, str]:
        """Validated copy of ``q`` and "" when usable, else a refusal reason."""
        q = self.model.check_q(q, what)
        violations = self.model.limit_violations(q, tol=slack)
        if violations:
            return q, f"{what} outside joint limits: " + "; ".join(violations)
        q = self.model.clip(q)
        if self.world.in_collision(q):
            return q, f"{what} in collision: {self.world.describe_collision(q)}"
        return q, ""

    def motion_valid(self, q_a: np.ndarray, q_b: np.ndarray) -> bool:
        """Collision-free straight joint-space motion, checked every ``collision_step`` rad."""
        n = max(1, math.ceil(float(np.linalg.norm(q_b - q_a)) / self.config.collision_step))
        for k in range(1, n + 1):
            if self.world.in_collision(q_a + (q_b - q_a) * (k / n)):
                return False
        return True

    def _solve(self, start: np.ndarray, goals: list[np.ndarray]) -> tuple[np.ndarray | None, str]:
        """The configured planner from ``start`` to any of ``goals``, then simplification."""
        self._reseed()
        pdef = ob.ProblemDefinition(self._si)
        pdef.addStartState(self._to_state(start))
        goal = ob.GoalStates(self._si)
        for g in goals:
            goal.addState(self._to_state(g))
        pdef.setGoal(goal)
        planner = getattr(og, self.config.algorithm)(self._si)
        if self.config.range > 0.0 and hasattr(planner, "setRange"):
            planner.setRange(self.config.range)
        planner.setProblemDefinition(pdef)
        planner.setup()
        status = planner.solve(self.config.time_limit)
        if status.getStatus() != ob.PlannerStatus.EXACT_SOLUTION:
            return None, (
                f"{self.config.algorithm} found no path within {self.config.time_limit:.2f} s "
                f"({status.asString()})"
            )
        path = pdef.getSolutionPath()
        if self.config.simplify:
            # Rope shortcutting does most of the work for the few-vertex paths RRTConnect
            # returns; OMPL's full simplify() reaches about the same length (measured on the
            # wall scene) at several times the cost, as its perturbation rounds each need
            # thousands of collision checks.
            simplifier = og.PathSimplifier(self._si)
            simplifier.ropeShortcutPath(path)
            simplifier.reduceVertices(path)
            simplifier.ropeShortcutPath(path)
        states = path.getStates()
        return np.array([s[0 : self.model.nq] for s in states]), ""

    def _success(self, waypoints: np.ndarray, t0: float, checks0: int) -> PlanResult:
        return PlanResult(
            True,
            waypoints,
            path_length(waypoints),
            time.perf_counter() - t0,
            "",
            self.world.checks - checks0,
            1.0,
        )

    # ----------------------------------------------------------------- joint-space goals
    def plan(self, q_start: np.ndarray, q_goal: np.ndarray) -> PlanResult:
        """Collision-free joint path from ``q_start`` to ``q_goal``."""
        t0, checks0 = time.perf_counter(), self.world.checks
        start, why = self._check_configuration(q_start, "start", _START_LIMIT_SLACK)
        if why:
            return self._refusal(why, t0, checks0)
        goal, why = self._check_configuration(q_goal, "goal")
        if why:
            return self._refusal(why, t0, checks0)
        if self.motion_valid(start, goal):
            return self._success(np.array([start, goal]), t0, checks0)
        return self._plan_checked(start, [goal], t0, checks0)

    def _plan_checked(
        self, start: np.ndarray, goals: list[np.ndarray], t0: float, checks0: int
    ) -> PlanResult:
        waypoints, why = self._solve(start, goals)
        if waypoints is None:
            return self._refusal(why, t0, checks0)
        return self._success(waypoints, t0, checks0)

    def plan_to_pose(self, q_start: np.ndarray, tcp_pose: np.ndarray) -> PlanResult:
        """Collision-free joint path ending with the TCP at ``tcp_pose`` (4x4, world).

        Up to ``config.ik_goals`` distinct collision-free IK solutions near ``q_start`` form
        the goal set, so one blocked solution does not doom a reachable pose.
        """
        t0, checks0 = time.perf_counter(), self.world.checks
        start, why = self._check_configuration(q_start, "start", _START_LIMIT_SLACK)
        if why:
            return self._refusal(why, t0, checks0)
        target = as_pose(tcp_pose, "tcp_pose")
        why = reach_refusal(self.model, target)
        if why:
            return self._refusal(f"goal pose refused: {why}", t0, checks0)

        first_blocked: list[np.ndarray] = []

        def collision_free(q: np.ndarray) -> bool:
            if self.world.in_collision(q):
                if not first_blocked:
                    first_blocked.append(q)
                return False
            return True

        # The nearest solution alone settles the common free-space case; a goal set is only
        # worth its extra IK restarts when the straight motion there is blocked.
        goals, ik = ik_solutions(self.model, target, start, self.config.ik, 1, accept=collision_free)
        if goals and self.motion_valid(start, goals[0]):
            return self._success(np.array([start, goals[0]]), t0, checks0)
        if goals and self.config.ik_goals > 1:
            goals, ik = ik_solutions(
                self.model, target, start, self.config.ik, self.config.ik_goals, accept=collision_free
            )
        if not goals:
            why = ik.reason
            if first_blocked:
                why += f"; nearest blocked by {self.world.describe_collision(first_blocked[0])}"
            return self._refusal(f"goal pose refused: {why}", t0, checks0)
        return self._plan_checked(start, goals, t0, checks0)

    # ----------------------------------------------------------------- Cartesian lines
    def cartesian_path(
        self, q_start: np.ndarray, tcp_pose_goal: np.ndarray, step: float = 0.005
    ) -> PlanResult:
        """Straight-line TCP motion from the pose at ``q_start`` to ``tcp_pose_goal`` (world).

        The TCP position moves along the line and the orientation turns about one fixed axis,
        both at a uniform rate, with at most ``step`` metres and
        ``config.cartesian_rotation_step_deg`` between IK steps. Each step's IK starts from the
        previous solution, without restarts, so the arm follows one continuous branch. Fails
        (``fraction`` = share covered, ``waypoints`` = the valid prefix) where the line is
        blocked, leaves the workspace, or would need a joint to jump.
        """
        t0, checks0 = time.perf_counter(), self.world.checks
        if not 1e-4 <= step <= 0.1:
            raise ValueError(f"Cartesian step must be in [1e-4, 0.1] m, got {step}")
        start, why = self._check_configuration(q_start, "start", _START_LIMIT_SLACK)
        if why:
            return self._refusal(why, t0, checks0)
        goal = as_pose(tcp_pose_goal, "tcp_pose_goal")
        why = reach_refusal(self.model, goal)
        if why:
            return self._refusal(f"line end refused: {why}", t0, checks0)

        begin = pin.SE3(self.model.fk(start))
        end = pin.SE3(goal)
        offset = end.translation - begin.translation
        distance = float(np.linalg.norm(offset))
        turn = pin.log3(begin.rotation.T @ end.rotation)
        angle_deg = math.degrees(float(np.linalg.norm(turn)))
        n = max(1, math.ceil(distance / step), math.ceil(angle_deg / self.config.cartesian_rotation_step_deg))

        waypoints = [start]
        q_prev = start
        for k in range(1, n + 1):
            s = k / n
            pose = np.eye(4)
            pose[:3, :3] = begin.rotation @ pin.exp3(turn * s)
            pose[:3, 3] = begin.translation + offset * s
            done = (k - 1) / n
            where = f"at {done:.0%} of the {distance:.3f} m line"
            ik = local_ik(self.model, pose, q_prev, self.config.ik)
            if not ik.success or ik.q is None:
                reason = f"line cannot be followed {where}: {ik.reason}"
                return self._partial(waypoints, reason, done, t0, checks0)
            q = ik.q
            jump = float(np.max(np.abs(q - q_prev)))
            if jump > self.config.cartesian_max_joint_step:
                joint = int(np.argmax(np.abs(q - q_prev))) + 1
                reason = (
                    f"line needs joint {joint} to jump {jump:.3f} rad {where} (singularity or joint limit)"
                )
                return self._partial(waypoints, reason, done, t0, checks0)
            if not self.motion_valid(q_prev, q):
                blocked = q if self.world.in_collision(q) else (q + q_prev) / 2.0
                reason = f"line blocked {where}: {self.world.describe_collision(blocked)}"
                return self._partial(waypoints, reason, done, t0, checks0)
            waypoints.append(q)
            q_prev = q
        return self._success(np.array(waypoints), t0, checks0)

    def _partial(
        self, waypoints: list[np.ndarray], reason: str, fraction: float, t0: float, checks0: int
    ) -> PlanResult:
        w = np.array(waypoints)
        return PlanResult(
            False, w, path_length(w), time.perf_counter() - t0, reason, self.world.checks - checks0, fraction
        )

    # ----------------------------------------------------------------- timing
    def time_parameterize(
        self, waypoints: np.ndarray, vel_scale: float = 0.5, acc_scale: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Time the piecewise-linear joint path; returns (times (T,), q (T, nq)).

        The path is followed exactly (straight joint segments between waypoints) with a
        trapezoidal speed profile that starts and ends at rest. Every joint stays within
        ``vel_scale`` of its velocity limit and, along each segment, ``acc_scale``
        (default ``config.acceleration_scale``) of its acceleration limit. At a corner the
        speed is capped so the per-sample velocity change stays within the acceleration
        limits: sharp corners of a joint-space plan are taken almost at rest, the gentle
        bends of a dense Cartesian path at full speed. Samples are ``config.trajectory_dt``
        apart, the last one exactly at the final waypoint.
        """
        if not 0.0 < vel_scale <= 1.0:
            raise ValueError(f"vel_scale must be in (0, 1], got {vel_scale}")
        acc_scale = self.config.acceleration_scale if acc_scale is None else acc_scale
        if not 0.0 < acc_scale <= 1.0:
            raise ValueError(f"acc_scale must be in (0, 1], got {acc_scale}")
        w = np.asarray(waypoints, dtype=np.float64)
        if w.ndim != 2 or w.shape[1] != self.model.nq or len(w) == 0 or not np.all(np.isfinite(w)):
            raise ValueError(f"waypoints must be finite (N>=1, {self.model.nq}), got shape {w.shape}")
        # Repeated waypoints carry no motion and no direction.
        keep = np.r_[True, np.linalg.norm(np.diff(w, axis=0), axis=1) > 1e-12]
        w = w[keep]
        if len(w) == 1:
            return np.zeros(1), w.copy()

        vmax = self.model.velocity_limits * vel_scale
        amax = self.model.acceleration_limits * acc_scale
        seg = np.diff(w, axis=0)
        lengths = np.linalg.norm(seg, axis=1)
        dirs = seg / lengths[:, None]
        absd = np.maximum(np.abs(dirs), 1e-12)
        v_seg = np.min(vmax / absd, axis=1)  # path-speed caps per segment
        a_seg = np.min(amax / absd, axis=1)

        # Speed caps at the vertices: rest at both ends, corner caps in between.
        dt = self.config.trajectory_dt
        v_vertex = np.zeros(len(w))
        for i in range(1, len(w) - 1):
            change = np.maximum(np.abs(dirs[i] - dirs[i - 1]), 1e-12)
            v_vertex[i] = min(v_seg[i - 1], v_seg[i], float(np.min(amax * dt / change)))
        # Forward then backward pass: each vertex speed reachable from its neighbours.
        for i in range(1, len(w)):
            v_vertex[i] = min(
                v_vertex[i], math.sqrt(v_vertex[i - 1] ** 2 + 2 * a_seg[i - 1] * lengths[i - 1])
            )
        for i in range(len(w) - 2, -1, -1):
            v_vertex[i] = min(v_vertex[i], math.sqrt(v_vertex[i + 1] ** 2 + 2 * a_seg[i] * lengths[i]))

        profiles = [
            _Trapezoid.make(lengths[i], v_vertex[i], v_vertex[i + 1], v_seg[i], a_seg[i])
            for i in range(len(seg))
        ]
        starts = np.r_[0.0, np.cumsum([p.duration for p in profiles])]
        total = float(starts[-1])
        times = np.arange(0.0, total, dt)
        times = np.r_[times, total] if total - times[-1] > 1e-9 else np.r_[times[:-1], total]
        segment_of = np.searchsorted(starts, times, side="right") - 1
        idx = np.minimum(np.asarray(segment_of, dtype=np.intp), len(profiles) - 1)
        qs = np.empty((len(times), self.model.nq))
        for k in range(len(times)):
            i = int(idx[k])
            qs[k] = w[i] + dirs[i] * profiles[i].distance_at(float(times[k] - starts[i]))
        qs[-1] = w[-1]
        return times, qs


@dataclass(frozen=True)
class _Trapezoid:
    """Speed profile along one straight segment: accelerate, cruise, decelerate."""

    length: float
    v0: float
    v1: float
    peak: float
    accel: float
    t_acc: float
    t_cruise: float
    t_dec: float

    @staticmethod
    def make(length: float, v0: float, v1: float, vmax: float, accel: float) -> _Trapezoid:
        peak = min(vmax, math.sqrt(max(accel * length + (v0**2 + v1**2) / 2.0, 0.0)))
        peak = max(peak, v0, v1, 1e-9)
        d_acc = (peak**2 - v0**2) / (2 * accel)
        d_dec = (peak**2 - v1**2) / (2 * accel)
        d_cruise = max(length - d_acc - d_dec, 0.0)
        return _Trapezoid(
            length, v0, v1, peak, accel, (peak - v0) / accel, d_cruise / peak, (peak - v1) / accel
        )

    @property
    def duration(self) -> float:
        return self.t_acc + self.t_cruise + self.t_dec

    def distance_at(self, t: float) -> float:
        t = min(max(t, 0.0), self.duration)
        if t < self.t_acc:
            return self.v0 * t + 0.5 * self.accel * t * t
        d = self.v0 * self.t_acc + 0.5 * self.accel * self.t_acc**2
        t -= self.t_acc
        if t < self.t_cruise:
            return d + self.peak * t
        d += self.peak * self.t_cruise
        t = min(t - self.t_cruise, self.t_dec)
        return min(d + self.peak * t - 0.5 * self.accel * t * t, self.length)
