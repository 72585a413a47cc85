"""The AFFORD-X scoring factors: feasibility (reach, approach, clearance) and function.

Every factor is a pure function of one candidate and the scene geometry, returning a score in
[0, 1]; the numbers are the ones AFFORD-X reports (``TermsConfig`` defaults):

    reach      r = 1 if the arm's IK puts its TCP at the grasp pose within the joint limits,
               else 0.1 (``reach_source="arm"``, the default); AFFORD-X's own reading,
               ``reach_source="box"``: 1 if the TCP lies inside its Franka workspace box
    approach   a = max(0.3, cos angle(approach, preferred approach))
    clearance  c = min(1, d_min / 0.05)
    gate       eligible  <=>  r * a * c >= 0.5
    function   f = 1 for d <= 0.03, (0.08 - d) / 0.05 between, 0 for d >= 0.08

None of the feasibility factors looks at the object's function; the function factor looks at
nothing else. ``fill_terms`` writes all of them into ``GraspCandidate.terms`` under the keys
``reach``, ``approach``, ``clearance``, ``feasibility`` (= r*a*c) and ``function``, and both
reach readings beside them: ``reach_box`` always, ``reach_arm`` when an arm test is given. The
box is AFFORD-X's fixed Franka workspace; the FR3 reaches past its far face (x = 0.75 m), so a
box gate removes grasps the arm can make: with the tool across that face
(bench/results/eval-gate_edge-20) the box gate cost L4 0.35 of success and the arm's gate
nothing, which is why the arm is the default.

The gripper is modelled by a skeleton of line segments in the gripper frame (z approach,
y closing axis, origin at the TCP), see ``GripperGeometry``; clearance is measured from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.spatial import cKDTree

from afford_core.grasp import GraspCandidate
from afford_core.robots import DEFAULT_ROBOT, GripperDescription, get_robot

# Keys this module writes into GraspCandidate.terms.
FEASIBILITY_TERMS: tuple[str, ...] = ("reach", "approach", "clearance")

ReachSource = Literal["box", "arm"]
REACH_SOURCES: tuple[ReachSource, ...] = ("box", "arm")

#: Whether the arm can put its TCP at a candidate's grasp pose (``afford_planner.ik.arm_reach``).
ArmReach = Callable[[GraspCandidate], bool]


def _vec3(value: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a finite 3-vector, got {value!r}")
    return arr


def _points(value: np.ndarray | None, name: str) -> np.ndarray:
    """(N, 3) finite float array; ``None`` becomes an empty (0, 3) array."""
    if value is None:
        return np.zeros((0, 3))
    arr = np.asarray(value, dtype=np.float64)
    if arr.size == 0:
        return np.zeros((0, 3))
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must be an (N, 3) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite points")
    return arr


@dataclass(frozen=True)
class GripperGeometry:
    """Line-segment skeleton of the hand, in the gripper frame (metres).

    The skeleton is what clearance and keep-clear distances are measured from:

        fingers    fingertip (0, +-w/2, 0) -> finger base (0, +-w/2, -finger_length), both sides
        palm face  finger base to finger base, widened to +-hand_half_width along y
        spine      palm face centre (0, 0, -finger_length) -> palm centre (0, 0, -palm_offset)

    where w is the candidate's opening width. A distance margin (5 cm for clearance) on top of
    this thin skeleton stands in for the fingers' and hand's real thickness.

    Attributes:
        palm_offset: Distance from the TCP back to the palm centre along -z; default the
            reference robot's gripper's (``GripperDescription.palm_offset``).
        finger_length: Distance from the TCP back to the finger bases along -z; default the
            reference robot's gripper's.
        hand_half_width: Half-span of the palm face along y. 0 keeps the palm face between the
            finger bases only; 0.1 models a full ~0.2 m hand body.
    """

    palm_offset: float = field(default_factory=lambda: _gripper().palm_offset)
    finger_length: float = field(default_factory=lambda: _gripper().finger_length)
    hand_half_width: float = 0.0

    def __post_init__(self) -> None:
        if not (0.0 < self.finger_length <= self.palm_offset):
            raise ValueError(
                f"need 0 < finger_length <= palm_offset, got {self.finger_length} and {self.palm_offset}"
            )
        if not (0.0 <= self.hand_half_width < 0.5):
            raise ValueError(f"hand_half_width must be in [0, 0.5) m, got {self.hand_half_width}")

    def segments_local(self, width: float) -> tuple[np.ndarray, np.ndarray]:
        """Segment end points ``(A, B)``, each (S, 3), in the gripper frame for opening ``width``."""
        h = 0.5 * float(width)
        fl, po = self.finger_length, self.palm_offset
        span = max(h, self.hand_half_width)
        a = np.array([[0.0, h, 0.0], [0.0, -h, 0.0], [0.0, -span, -fl], [0.0, 0.0, -fl]])
        b = np.array([[0.0, h, -fl], [0.0, -h, -fl], [0.0, span, -fl], [0.0, 0.0, -po]])
        return a, b

    def segments_world(self, cand: GraspCandidate) -> tuple[np.ndarray, np.ndarray]:
        """Segment end points ``(A, B)`` in the world frame for ``cand``."""
        a, b = self.segments_local(cand.width)
        return a @ cand.rotation.T + cand.position, b @ cand.rotation.T + cand.position

    def sample_points(self, cand: GraspCandidate, step: float = 0.005) -> np.ndarray:
        """Points along the world-frame skeleton, at most ``step`` apart (for volume tests)."""
        if step <= 0:
            raise ValueError(f"step must be positive, got {step}")
        a, b = self.segments_world(cand)
        out = []
        for p, q in zip(a, b, strict=True):
            n = max(2, int(np.ceil(np.linalg.norm(q - p) / step)) + 1)
            out.append(p + np.linspace(0.0, 1.0, n)[:, None] * (q - p))
        return np.concatenate(out)


def points_to_segments_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance from each point (N, 3) to the nearest of the segments ``a[i] -> b[i]`` (S, 3).

    Exact point-segment distance: the projection parameter is clipped to [0, 1]; a zero-length
    segment is a point.
    """
    if len(points) == 0:
        return np.zeros(0)
    ab = b - a  # (S, 3)
    len2 = np.einsum("ij,ij->i", ab, ab)
    rel = points[:, None, :] - a[None, :, :]  # (N, S, 3)
    t = np.einsum("nsj,sj->ns", rel, ab) / np.where(len2 > 0, len2, 1.0)
    t = np.clip(np.where(len2 > 0, t, 0.0), 0.0, 1.0)
    closest = a[None, :, :] + t[..., None] * ab[None, :, :]
    return np.linalg.norm(points[:, None, :] - closest, axis=2).min(axis=1)


def gripper_distance(
    cand: GraspCandidate,
    points: np.ndarray | cKDTree,
    geometry: GripperGeometry,
    horizon: float = np.inf,
) -> float:
    """Smallest distance from ``points`` to the gripper skeleton of ``cand`` (inf if no points).

    With a ``cKDTree`` only the points within ``horizon`` of the skeleton's bounding sphere are
    examined, so a scene cloud is indexed once and queried per candidate; a result larger than
    ``horizon`` may then be reported as inf, which no score built on it can tell apart.
    """
    a, b = geometry.segments_world(cand)
    if isinstance(points, cKDTree):
        if points.n == 0:
            return float("inf")
        ends = np.concatenate([a, b])
        centre = 0.5 * (ends.min(axis=0) + ends.max(axis=0))
        radius = float(np.linalg.norm(ends - centre, axis=1).max())
        idx = points.query_ball_point(centre, r=radius + horizon) if np.isfinite(horizon) else None
        pts = points.data if idx is None else points.data[np.asarray(idx, dtype=np.int64)]
    else:
        pts = _points(points, "points")
    if len(pts) == 0:
        return float("inf")
    return float(points_to_segments_distance(pts, a, b).min())


@dataclass(frozen=True)
class TermsConfig:
    """Parameters of the feasibility and function factors (AFFORD-X numbers by default, except
    that reach comes from the arm's IK rather than AFFORD-X's box; ``reach_source="box"`` and
    the workspace bounds give its reading).

    Attributes:
        workspace_min: Lower corner (x, y, z) of the reach box in the robot base frame (m).
        workspace_max: Upper corner of the reach box. The defaults are AFFORD-X's Franka box:
            x -0.10..0.75, y -0.50..0.50, z 0.005..0.90.
        reach_inside: r for a TCP inside the box (bounds inclusive), or reachable by the arm.
        reach_outside: r for a TCP outside the box, or out of the arm's reach. Not 0, so that an
            ungated weighted sum can still rank such a grasp (and pick it, which is what the
            gate is there to prevent).
        reach_source: Which reading is ``reach``: ``"arm"`` (the arm's inverse kinematics at
            the grasp pose, within joint limits; collisions are left to clearance and the
            planner; the default) or ``"box"`` (AFFORD-X's workspace box).
        preferred_approach: Approach the executor prefers, in the base frame; normalised here.
            Top-down (0, 0, -1) by default.
        other_approaches: Further approaches the next step prefers as much (a pour from a
            spout: along its tilt axis, either way); the approach term takes the nearest of
            these and ``preferred_approach``. Normalised here.
        approach_floor: Lowest approach score; every approach more than arccos(floor) from the
            preferred one (72.5 deg for 0.3), the opposite one included, scores the floor.
        clearance_margin: Distance from the gripper skeleton at which an obstacle no longer
            lowers the clearance score (m).
        gate_threshold: A candidate is eligible when r * a * c >= this.
        function_full: Distance from the TCP to the nearest region point up to which the
            function score is 1 (m).
        function_zero: Distance at which the function score reaches 0; linear in between (m).
        gripper: Skeleton used for clearance.
    """

    workspace_min: tuple[float, float, float] = (-0.10, -0.50, 0.005)
    workspace_max: tuple[float, float, float] = (0.75, 0.50, 0.90)
    reach_inside: float = 1.0
    reach_outside: float = 0.1
    reach_source: ReachSource = "arm"
    preferred_approach: tuple[float, float, float] = (0.0, 0.0, -1.0)
    other_approaches: tuple[tuple[float, float, float], ...] = ()
    approach_floor: float = 0.3
    clearance_margin: float = 0.05
    gate_threshold: float = 0.5
    function_full: float = 0.03
    function_zero: float = 0.08
    gripper: GripperGeometry = field(default_factory=GripperGeometry)

    def __post_init__(self) -> None:
        lo = _vec3(self.workspace_min, "workspace_min")
        hi = _vec3(self.workspace_max, "workspace_max")
        if np.any(lo >= hi):
            raise ValueError(
                f"workspace_min {self.workspace_min} must be below workspace_max {self.workspace_max}"
            )
        if not (0.0 <= self.reach_outside < self.reach_inside <= 1.0):
            raise ValueError(
                f"need 0 <= reach_outside < reach_inside <= 1, got {self.reach_outside}, {self.reach_inside}"
            )
        if self.reach_source not in REACH_SOURCES:
            raise ValueError(f"reach_source must be one of {REACH_SOURCES}, got {self.reach_source!r}")
        d = _vec3(self.preferred_approach, "preferred_approach")
        norm = float(np.linalg.norm(d))
        if norm < 1e-9:
            raise ValueError("preferred_approach must be a nonzero direction")
        object.__setattr__(self, "preferred_approach", tuple(float(v) for v in d / norm))
        others = []
        for v in self.other_approaches:
            o = _vec3(v, "other_approaches")
            if float(np.linalg.norm(o)) < 1e-9:
                raise ValueError("other_approaches must be nonzero directions")
            others.append(tuple(float(x) for x in o / np.linalg.norm(o)))
        object.__setattr__(self, "other_approaches", tuple(others))
        if not (0.0 <= self.approach_floor <= 1.0):
            raise ValueError(f"approach_floor must be in [0, 1], got {self.approach_floor}")
        if not self.clearance_margin > 0:
            raise ValueError(f"clearance_margin must be positive, got {self.clearance_margin}")
        if not (0.0 < self.gate_threshold <= 1.0):
            raise ValueError(f"gate_threshold must be in (0, 1], got {self.gate_threshold}")
        if not (0.0 <= self.function_full < self.function_zero):
            raise ValueError(
                f"need 0 <= function_full < function_zero, got {self.function_full}, {self.function_zero}"
            )


def reach_term(cand: GraspCandidate, config: TermsConfig) -> float:
    """r = reach_inside (1) if workspace_min <= TCP <= workspace_max on every axis, else reach_outside.

    The default outside value is 0.1. Only the TCP is tested: the box bounds where the Franka
    can place its hand, not every point of the fingers.
    """
    inside = np.all(cand.position >= config.workspace_min) and np.all(cand.position <= config.workspace_max)
    return config.reach_inside if inside else config.reach_outside


def approach_term(cand: GraspCandidate, config: TermsConfig) -> float:
    """a = max(floor, cos t), t the angle between the candidate's approach and the preferred one.

    With the default floor 0.3: 1 for exactly top-down, 0.5 at 60 deg, 0.3 from 72.5 deg on,
    which includes horizontal (cos = 0) and upward approaches (cos < 0). With
    ``other_approaches``, t is the angle to the nearest of them and the preferred one.
    """
    cos = max(float(np.dot(cand.approach, d)) for d in (config.preferred_approach, *config.other_approaches))
    return max(config.approach_floor, min(1.0, cos))


def clearance_term(
    cand: GraspCandidate, obstacles: np.ndarray | cKDTree | None, config: TermsConfig
) -> float:
    """c = min(1, d_min / margin), d_min the distance from the gripper skeleton to the nearest obstacle.

    ``obstacles`` are scene points other than the target object (the target is what the fingers
    are meant to touch). With no obstacle points c = 1. The skeleton is
    ``config.gripper`` (fingers, palm face, palm spine); with the 5 cm default margin an obstacle
    2.5 cm from a finger gives c = 0.5.
    """
    if obstacles is None:
        return 1.0
    d = gripper_distance(cand, obstacles, config.gripper, horizon=config.clearance_margin)
    return float(min(1.0, d / config.clearance_margin))


def feasibility(terms: dict[str, float]) -> float:
    """The gate quantity r * a * c from a candidate's ``terms``; a clear error if one is missing."""
    missing = [k for k in FEASIBILITY_TERMS if k not in terms]
    if missing:
        raise KeyError(
            f"candidate has no {missing} term(s); run terms.fill_terms first (has {sorted(terms)})"
        )
    return float(terms["reach"] * terms["approach"] * terms["clearance"])


def function_term(cand: GraspCandidate, region: np.ndarray | cKDTree | None, config: TermsConfig) -> float:
    """f(d) = clip((zero - d) / (zero - full), 0, 1), d the distance from the TCP to the nearest region point.

    With the defaults (full 3 cm, zero 8 cm): 1 at d <= 3 cm, 0.5 at 5.5 cm, 0 at d >= 8 cm.
    ``region`` None or empty means the object has no named region: every candidate scores the
    neutral 1.0, so the term cannot reorder them.
    """
    if region is None:
        return 1.0
    tree = region if isinstance(region, cKDTree) else None
    if tree is None:
        pts = _points(region, "region points")
        if len(pts) == 0:
            return 1.0
        tree = cKDTree(pts)
    elif tree.n == 0:
        return 1.0
    d, _ = tree.query(cand.position)
    span = config.function_zero - config.function_full
    return float(np.clip((config.function_zero - d) / span, 0.0, 1.0))


def fill_terms(
    cands: Sequence[GraspCandidate],
    region_points: np.ndarray | None,
    obstacle_points: np.ndarray | None,
    config: TermsConfig,
    arm_reach: ArmReach | None = None,
) -> list[GraspCandidate]:
    """Write reach, approach, clearance, feasibility (= r*a*c) and function into each candidate.

    Args:
        cands: Candidates to score; modified in place and returned as a list.
        region_points: (M, 3) points of the functional region the task names, or None when the
            object has none (function is then 1.0 for all).
        obstacle_points: (N, 3) scene points excluding the target object, or None. Leave out the
            support surface under the target unless the fingers must not approach it: a
            fingertip 1 cm above a table point scores c = 0.2 and is gated out.
        config: Factor parameters.
        arm_reach: Whether the arm reaches a candidate's grasp pose; when given, every
            candidate also gets ``reach_arm``. Needed when ``config.reach_source`` is "arm".

    Raises:
        ValueError: ``reach_source="arm"`` without ``arm_reach``.
    """
    if config.reach_source == "arm" and arm_reach is None:
        raise ValueError("reach_source='arm' needs arm_reach (afford_planner.ik.arm_reach(model, q_seed))")
    region = _points(region_points, "region_points")
    obstacles = _points(obstacle_points, "obstacle_points")
    region_tree = cKDTree(region) if len(region) else None
    obstacle_tree = cKDTree(obstacles) if len(obstacles) else None
    for cand in cands:
        cand.terms["reach_box"] = reach_term(cand, config)
        if arm_reach is not None:
            cand.terms["reach_arm"] = config.reach_inside if arm_reach(cand) else config.reach_outside
        cand.terms["reach"] = cand.terms[f"reach_{config.reach_source}"]
        cand.terms["approach"] = approach_term(cand, config)
        cand.terms["clearance"] = clearance_term(cand, obstacle_tree, config)
        cand.terms["feasibility"] = feasibility(cand.terms)
        cand.terms["function"] = function_term(cand, region_tree, config)
    return list(cands)


def _gripper() -> GripperDescription:
    """The reference robot's gripper: where the skeleton's defaults come from."""
    return get_robot(DEFAULT_ROBOT).gripper


def gripper_geometry(gripper: GripperDescription, hand_half_width: float = 0.0) -> GripperGeometry:
    """The skeleton of ``gripper`` (its palm offset and finger length)."""
    return GripperGeometry(palm_offset=gripper.palm_offset, finger_length=gripper.finger_length,
                           hand_half_width=hand_half_width)
