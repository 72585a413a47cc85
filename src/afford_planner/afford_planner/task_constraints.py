"""Task constraints compiled from the next action: which grasps leave the next step possible.

AFFORD-X compiles the declared next action into geometric constraints over the candidate set:
which part must stay clear, which face needs clearance, which approach keeps the part free,
which grasp keeps the view. Each ``Constraint`` scores one candidate in [0, 1]; the task term
is their product,

    task = prod_j s_j(candidate)        (1.0 when the action compiles to no constraint)

so one violated constraint vetoes the grasp whatever the others say, like the product rule of
the selection layer.

``compile_constraints`` maps an ``Intent`` to constraints:

    every action        keep_part_clear(p) for each p in intent.keep_clear
    PLACE, STACK,       clearance(bottom face): the fingers stay above the object's bottom, or
    INSERT              they hit the support (or the hole's rim) when the object is set down
    POUR                keep_part_clear(use region: intent.use_region, else the target's
                        "pour_out" part in the ontology: a kettle's spout, a mug's rim), so the
                        liquid's path is free; for a spout (off to one side) also holds_tilt:
                        the approach along the tilt axis, so the pads' normal forces, not their
                        torsional friction, hold the container as it tips
    HANG                approach_from the side opposite the part that hangs (the target's
                        "hang" part in the ontology: a mug's handle), so the handle stays free
                        to slide onto the hook
    PLACE, STACK,       holds_load, when the grasp is on a handle off to one side (SIDE_HANDLE_M):
    INSERT, HANG        the weight's lever about the grasp's weak axes, upright (``CARRIES``:
                        carried to be set down)
    OPEN, PULL          approach_from the front: along the reversed pull axis
    CLOSE, PUSH         approach_from the front, when TaskContext.pull_axis is given
    any, optional       avoid_occluding: keep the gripper off the camera's line of sight to
                        the use region (``TaskContext.camera_position``)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import ConvexHull, QhullError, cKDTree
from scipy.spatial.transform import Rotation

from afford_core.geometry import spout_direction
from afford_core.grasp import GraspCandidate
from afford_core.ontology import CATEGORIES
from afford_core.types import Intent, NextAction
from afford_planner.terms import GripperGeometry, gripper_distance, points_to_segments_distance

_UP = np.array([0.0, 0.0, 1.0])
#: Actions that carry the held object to set it down somewhere, where how it arrives (upright,
#: centred) is what the task checks, its weight on the grasp all the way. A pick's check is its
#: height and hold, and a pour's tilt has ``holds_tilt``: their grasps are ranked as before.
CARRIES = frozenset({NextAction.PLACE, NextAction.STACK, NextAction.INSERT, NextAction.HANG})
#: A handle whose middle is this far (m, horizontally) from the object's centre hangs the weight
#: far enough out to turn the object in a grasp that relies on friction: a side-handled kettle's
#: is 10-12 cm out. A mug's (3-4 cm) and a kettle's arched top handle (3-5 cm) are carried
#: upright from above as before (a mug held so reached the shelf in 18 of 20 scenes).
SIDE_HANDLE_M = 0.06


def _as_points(points: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(points, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 3 or len(arr) == 0:
        raise ValueError(f"{name}: need a non-empty (N, 3) array of points, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: points contain NaN or infinite values")
    return arr


def _as_direction(v: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64).reshape(-1)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)) or np.linalg.norm(arr) < 1e-9:
        raise ValueError(f"{name} must be a finite nonzero 3-vector, got {v!r}")
    return arr / np.linalg.norm(arr)


def _ramp(x: float, zero_at: float, one_at: float) -> float:
    """Linear in x from 0 at ``zero_at`` to 1 at ``one_at``, clipped to [0, 1]."""
    return float(np.clip((x - zero_at) / (one_at - zero_at), 0.0, 1.0))


class Constraint(ABC):
    """One compiled constraint: a ``name`` and a score in [0, 1] for a candidate."""

    name: str

    @abstractmethod
    def score(self, cand: GraspCandidate) -> float:
        """How well ``cand`` satisfies the constraint: 1 fully, 0 not at all."""


@dataclass
class KeepPartClear(Constraint):
    """keep_part_clear: the gripper stays away from a part the next action needs free.

    s = clip(d / clear_distance, 0, 1), d the distance from the gripper skeleton (fingers,
    palm, see ``GripperGeometry``) to the part's nearest point: 1 at d >= 4 cm by default,
    0 at contact, linear in between.

    Attributes:
        part: Name of the part kept clear (for the constraint's name).
        points: (N, 3) world points of the part.
        clear_distance: Distance from which the score is 1 (m).
        gripper: Skeleton measured from.
    """

    part: str
    points: np.ndarray
    clear_distance: float = 0.04
    gripper: GripperGeometry = field(default_factory=GripperGeometry)

    def __post_init__(self) -> None:
        self.points = _as_points(self.points, f"keep_part_clear:{self.part}")
        if not self.clear_distance > 0:
            raise ValueError(f"clear_distance must be positive, got {self.clear_distance}")
        self.name = f"keep_part_clear:{self.part}"
        self._tree = cKDTree(self.points)

    def score(self, cand: GraspCandidate) -> float:
        d = gripper_distance(cand, self._tree, self.gripper, horizon=self.clear_distance)
        return float(min(1.0, d / self.clear_distance))


@dataclass
class FaceClearance(Constraint):
    """clearance: the volume beyond a face the next action uses stays free of the gripper.

    The face is a plane through ``origin`` with outward unit normal u, bounded laterally by the
    footprint of ``points``: the convex hull of their projections onto the plane, grown by
    ``footprint_radius`` (the hull, because a camera sees the sides of an object, not its
    bottom, and the support meets the object wherever its outline reaches). For the skeleton
    sample points x whose projection lies in the footprint, the depth behind the face is
    h(x) = (origin - x) . u, and

        s = clip(min_x h(x) / margin, 0, 1)

    1 when every such gripper point is at least ``margin`` behind the face, 0 when one reaches
    the face plane or beyond. Gripper points outside the footprint do not count, so a grasp
    beside the face is not penalised for reaching past its plane. A 2 cm margin keeps the
    fingertips that far above the bottom of an object that is being put down.

    Attributes:
        face: Name of the face (for the constraint's name), e.g. ``"bottom"``.
        origin: A point of the face plane (world).
        normal: Outward normal of the face (world), normalised here.
        points: (N, 3) points whose projections' hull bounds the face laterally.
        margin: Depth behind the face from which the score is 1 (m).
        footprint_radius: Lateral tolerance around the footprint (m).
        gripper: Skeleton sampled.
        step: Spacing of the skeleton samples (m).
    """

    face: str
    origin: np.ndarray
    normal: np.ndarray
    points: np.ndarray
    margin: float = 0.02
    footprint_radius: float = 0.01
    gripper: GripperGeometry = field(default_factory=GripperGeometry)
    step: float = 0.005

    def __post_init__(self) -> None:
        self.origin = np.asarray(self.origin, dtype=np.float64).reshape(3)
        self.normal = _as_direction(self.normal, f"clearance:{self.face} normal")
        self.points = _as_points(self.points, f"clearance:{self.face}")
        if not (self.margin > 0 and self.footprint_radius >= 0 and self.step > 0):
            raise ValueError("clearance needs margin > 0, footprint_radius >= 0 and step > 0")
        self.name = f"clearance:{self.face}"
        helper = np.array([1.0, 0.0, 0.0]) if abs(self.normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        e1 = helper - np.dot(helper, self.normal) * self.normal
        e1 /= np.linalg.norm(e1)
        self._plane = np.column_stack([e1, np.cross(self.normal, e1)])
        flat = (self.points - self.origin) @ self._plane
        try:
            # Rows [n, b] with unit n: signed distance n . q + b, <= 0 inside the hull.
            self._hull: np.ndarray | None = ConvexHull(flat).equations
        except QhullError:  # collinear or too few points: fall back to distance to the points
            self._hull = None
        self._flat = cKDTree(flat)

    def _over_face(self, q: np.ndarray) -> np.ndarray:
        if self._hull is not None:
            return np.max(q @ self._hull[:, :2].T + self._hull[:, 2], axis=1) <= self.footprint_radius
        return self._flat.query(q)[0] <= self.footprint_radius

    def score(self, cand: GraspCandidate) -> float:
        x = self.gripper.sample_points(cand, self.step)
        over = self._over_face((x - self.origin) @ self._plane)
        if not np.any(over):
            return 1.0
        h = (self.origin - x[over]) @ self.normal
        return float(np.clip(h.min() / self.margin, 0.0, 1.0))


@dataclass
class ApproachFrom(Constraint):
    """approach_from: the approach points along a required direction.

    With t the angle between the candidate's approach and ``direction``,

        s = 1 for t <= full_deg,  0 for t >= zero_deg,  linear in t in between.

    Attributes:
        label: What the direction means (for the constraint's name), e.g. ``"front"``.
        direction: Required approach (palm towards object), world, normalised here.
        full_deg: Largest deviation that still scores 1.
        zero_deg: Deviation from which the score is 0.
    """

    label: str
    direction: np.ndarray
    full_deg: float = 30.0
    zero_deg: float = 90.0

    def __post_init__(self) -> None:
        self.direction = _as_direction(self.direction, f"approach_from:{self.label}")
        if not (0.0 <= self.full_deg < self.zero_deg <= 180.0):
            raise ValueError(f"need 0 <= full_deg < zero_deg <= 180, got {self.full_deg}, {self.zero_deg}")
        self.name = f"approach_from:{self.label}"

    def score(self, cand: GraspCandidate) -> float:
        t = float(np.degrees(np.arccos(np.clip(np.dot(cand.approach, self.direction), -1.0, 1.0))))
        return _ramp(t, self.zero_deg, self.full_deg)


@dataclass
class HoldsTilt(Constraint):
    """holds_tilt: the grasp holds the container's weight while it is tipped to pour.

    A parallel-jaw grasp resists a turn about its *approach* axis by shape: the part would
    have to push the fingers apart, with the pads' width as the lever. About its *closing*
    axis only the pads' torsional friction resists, and about the third axis (along a bar it
    closes across) only sliding friction on the bar's small radius (the bar rolls): a 0.5-1.2
    kg kettle held by its handle and tipped about the line through the pads turns in the
    fingers. So the weight's lever about those two weak axes, per unit weight, is the measure:
    with r from the TCP to the container's centre and g(theta) gravity in the container's frame
    as it tips about ``axis`` by theta in [0, tilt_deg],

        L = max_theta |((r x g(theta)) . x, (r x g(theta)) . y)|    (x, y the grasp's axes)
        s = 1 for L <= full_lever,  floor for L >= zero_lever,  linear in between.

    A grasp from the side on a kettle's loop handle (approach along the tilt axis) has L near
    0; a top-down grasp on the same handle has the handle's whole reach (~10 cm). The floor
    keeps a grasp that relies on friction as a last resort for a light container, ranked below
    every grasp that holds by shape.

    Attributes:
        axis: The tilt axis (world, horizontal); the container's top tips towards
            ``axis x up`` (its spout). Normalised here.
        center: The container's centre (world), standing in for its centre of mass.
        tilt_deg: Largest tilt of the pour (the pour skill's ``pour_tilt_deg``).
        full_lever / zero_lever: Levers (m) that score 1 and ``floor``.
        floor: Score of a grasp whose lever reaches ``zero_lever``.
    """

    axis: np.ndarray
    center: np.ndarray
    tilt_deg: float = 80.0
    full_lever: float = 0.02
    zero_lever: float = 0.08
    floor: float = 0.25

    def __post_init__(self) -> None:
        self.axis = _as_direction(self.axis, "holds_tilt")
        self.center = np.asarray(self.center, dtype=np.float64).reshape(3)
        if not (0.0 < self.tilt_deg < 180.0) or not (0.0 <= self.floor <= 1.0):
            raise ValueError(
                f"need 0 < tilt_deg < 180 and 0 <= floor <= 1, got {self.tilt_deg}, {self.floor}"
            )
        if not (0.0 <= self.full_lever < self.zero_lever):
            raise ValueError(f"need 0 <= full_lever < zero_lever, got {self.full_lever}, {self.zero_lever}")
        self.name = "holds_tilt"
        # Gravity as the container sees it, tipped by theta about the axis: rotated by -theta.
        thetas = np.deg2rad(np.linspace(0.0, self.tilt_deg, 9))
        self._gravity = Rotation.from_rotvec(-np.outer(thetas, self.axis)).apply([0.0, 0.0, -1.0])

    def lever(self, cand: GraspCandidate) -> float:
        """L of the class docstring (m)."""
        rot = np.asarray(cand.rotation, dtype=np.float64)
        moments = np.cross(self.center - cand.position, self._gravity)  # (T, 3)
        weak = moments @ rot[:, :2]  # about the grasp's x (along the pads) and y (closing)
        return float(np.max(np.linalg.norm(weak, axis=1)))

    def score(self, cand: GraspCandidate) -> float:
        return self.floor + (1.0 - self.floor) * _ramp(self.lever(cand), self.zero_lever, self.full_lever)


@dataclass
class HoldsLoad(Constraint):
    """holds_load: the grasp holds the object's weight as it is carried upright.

    :class:`HoldsTilt`'s measure with the object upright: the lever of the weight about the
    grasp's two weak axes (along the pads, and the closing axis), per unit weight,

        L = |((c - p) x g) . x, ((c - p) x g) . y|    (g = -up, c the centre, p the TCP),

    scored 1 at ``full_lever`` or less and ``floor`` at ``zero_lever`` or more. A kettle held
    top-down across its side handle has its 10 cm reach about the closing axis and turned 40-50
    degrees in the fingers on the lift (seed 0 of place-kettle-kettle-base-v1); closed through
    the loop, towards the body, the weight is held by the pads' normal forces.

    Attributes:
        center: The object's centre (world), standing in for its centre of mass.
        up: World up.
        full_lever / zero_lever: Levers (m) that score 1 and ``floor``.
        floor: Score of a grasp whose lever reaches ``zero_lever``: the last resort.
    """

    center: np.ndarray
    up: np.ndarray = field(default_factory=lambda: _UP.copy())
    full_lever: float = 0.02
    zero_lever: float = 0.08
    floor: float = 0.25

    def __post_init__(self) -> None:
        self.center = np.asarray(self.center, dtype=np.float64).reshape(3)
        self.up = _as_direction(self.up, "holds_load up")
        if not (0.0 <= self.full_lever < self.zero_lever) or not (0.0 <= self.floor <= 1.0):
            raise ValueError(f"need 0 <= full_lever < zero_lever and 0 <= floor <= 1, got "
                             f"{self.full_lever}, {self.zero_lever}, {self.floor}")
        self.name = "holds_load"

    def lever(self, cand: GraspCandidate) -> float:
        """L of the class docstring (m)."""
        rot = np.asarray(cand.rotation, dtype=np.float64)
        moment = np.cross(self.center - np.asarray(cand.position, dtype=np.float64), -self.up)
        return float(np.linalg.norm(moment @ rot[:, :2]))

    def score(self, cand: GraspCandidate) -> float:
        return self.floor + (1.0 - self.floor) * _ramp(self.lever(cand), self.zero_lever, self.full_lever)


@dataclass
class AvoidOccluding(Constraint):
    """avoid_occluding: the gripper stays off the camera's line of sight to a point.

    s = clip(d / margin, 0, 1), d the smallest distance between the gripper skeleton samples
    and the segment from ``camera`` to ``target``: a hand in front of the lens or the spout
    hides what the next step has to watch.

    Attributes:
        camera: Camera optical centre (world).
        target: Point that must stay visible (world).
        margin: Distance from the sight line at which the score is 1 (m).
        gripper: Skeleton sampled.
        step: Spacing of the skeleton samples (m).
    """

    camera: np.ndarray
    target: np.ndarray
    margin: float = 0.04
    gripper: GripperGeometry = field(default_factory=GripperGeometry)
    step: float = 0.005

    def __post_init__(self) -> None:
        self.camera = np.asarray(self.camera, dtype=np.float64).reshape(3)
        self.target = np.asarray(self.target, dtype=np.float64).reshape(3)
        if not (np.all(np.isfinite(self.camera)) and np.all(np.isfinite(self.target))):
            raise ValueError("avoid_occluding needs finite camera and target positions")
        if not (self.margin > 0 and self.step > 0):
            raise ValueError("avoid_occluding needs margin > 0 and step > 0")
        self.name = "avoid_occluding"

    def score(self, cand: GraspCandidate) -> float:
        x = self.gripper.sample_points(cand, self.step)
        d = points_to_segments_distance(x, self.camera[None, :], self.target[None, :]).min()
        return float(min(1.0, d / self.margin))


@dataclass(frozen=True)
class TaskContext:
    """Scene facts the constraints need beyond the object's parts.

    Attributes:
        object_center: Centre of the target object (world); the mean of all part points when None.
        pull_axis: Direction a drawer or door handle moves when pulled open (world); estimated
            as the horizontal direction from the object centre to the grasped part when None.
        camera_position: Camera optical centre (world); ``avoid_occluding`` is compiled only
            when it is given and ``avoid_occluding`` is True.
        avoid_occluding: Whether to compile the optional occlusion constraint.
        up: World up, for the bottom face and horizontal directions.
    """

    object_center: tuple[float, float, float] | None = None
    pull_axis: tuple[float, float, float] | None = None
    camera_position: tuple[float, float, float] | None = None
    avoid_occluding: bool = False
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)

    def __post_init__(self) -> None:
        for name in ("object_center", "camera_position"):
            v = getattr(self, name)
            if v is not None and (np.shape(v) != (3,) or not np.all(np.isfinite(v))):
                raise ValueError(f"{name} must be a finite 3-vector or None, got {v!r}")
        if self.pull_axis is not None:
            _as_direction(self.pull_axis, "pull_axis")
        _as_direction(self.up, "up")


@dataclass(frozen=True)
class TaskConstraintConfig:
    """Thresholds of the compiled constraints.

    Attributes:
        keep_clear_distance: keep_part_clear scores 1 from this distance (m); 4 cm.
        face_margin: clearance scores 1 when the gripper is this far behind the face (m).
        footprint_radius: Lateral tolerance of a face's footprint (m).
        approach_full_deg: approach_from scores 1 within this angle of the direction.
        approach_zero_deg: approach_from scores 0 from this angle on.
        side_zero_deg: Zero angle for the "opposite side" approaches (HANG, POUR): wider than
            ``approach_zero_deg`` so that a top-down grasp (90 deg from a horizontal side
            direction) keeps a partial score instead of being vetoed.
        min_side_offset: A part whose centroid is closer than this, horizontally, to the object
            centre (a rim all around) defines no side; no approach_from is compiled for it (m).
        occlusion_margin: avoid_occluding scores 1 this far from the sight line (m).
        pour_tilt_deg: How far a pour tips the container (holds_tilt); the pour skill's
            ``SkillConfig.pour_tilt_deg``.
        gripper: Skeleton all distances are measured from.
    """

    keep_clear_distance: float = 0.04
    face_margin: float = 0.02
    footprint_radius: float = 0.01
    approach_full_deg: float = 30.0
    approach_zero_deg: float = 90.0
    side_zero_deg: float = 135.0
    min_side_offset: float = 0.01
    occlusion_margin: float = 0.04
    pour_tilt_deg: float = 80.0
    gripper: GripperGeometry = field(default_factory=GripperGeometry)

    def __post_init__(self) -> None:
        for name in ("keep_clear_distance", "face_margin", "occlusion_margin", "min_side_offset"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.footprint_radius < 0:
            raise ValueError(f"footprint_radius must be >= 0, got {self.footprint_radius}")
        if not (0.0 <= self.approach_full_deg < self.approach_zero_deg <= 180.0):
            raise ValueError("need 0 <= approach_full_deg < approach_zero_deg <= 180")
        if not (self.approach_full_deg < self.side_zero_deg <= 180.0):
            raise ValueError("need approach_full_deg < side_zero_deg <= 180")


def _part(cloud_parts: Mapping[str, np.ndarray], name: str, why: str) -> np.ndarray:
    if name not in cloud_parts:
        raise KeyError(f"{why} needs the points of part {name!r}; parts given: {sorted(cloud_parts)}")
    return _as_points(cloud_parts[name], f"part {name!r}")


def _parts_affording(category: str, affordance: str, cloud_parts: Mapping[str, np.ndarray]) -> list[str]:
    """Parts of ``category`` offering ``affordance`` that have points here (ontology order)."""
    cat = CATEGORIES.get(category)
    return [p for p in cat.parts_with(affordance) if p in cloud_parts] if cat else []


def _horizontal(v: np.ndarray, up: np.ndarray) -> np.ndarray:
    return v - np.dot(v, up) * up


def load_axis(intent: Intent, handle: np.ndarray, center: Sequence[float] | np.ndarray,
              up: np.ndarray = _UP) -> np.ndarray | None:
    """The horizontal axis a thing carried by its handle to be set down (``CARRIES``) hangs
    about in the fingers, up x the way from the handle to the centre; None unless the grasp is
    on a handle whose middle is ``SIDE_HANDLE_M`` or more off the centre. Where it is not None
    the grasp is scored by ``holds_load`` and the ``tilt`` sampler proposes grasps along it."""
    cat = CATEGORIES.get(intent.target)
    if intent.next_action not in CARRIES or cat is None or len(handle) == 0 \
            or "grasp_handle" not in cat.affordances.get(intent.grasp_region, ()):
        return None
    up = _as_direction(up, "up")
    towards = _horizontal(np.asarray(center, dtype=np.float64) - np.asarray(handle).mean(axis=0), up)
    if np.linalg.norm(towards) < SIDE_HANDLE_M:
        return None
    return np.cross(up, towards / np.linalg.norm(towards))


def compile_constraints(
    intent: Intent,
    cloud_parts: Mapping[str, np.ndarray],
    context: TaskContext,
    config: TaskConstraintConfig | None = None,
) -> list[Constraint]:
    """Constraints on the grasp implied by ``intent`` (see the module docstring for the table).

    Args:
        intent: The resolved task; its ``keep_clear`` and ``next_action`` drive the result.
        cloud_parts: World points of the target's parts by part name (``"handle"`` -> (N, 3)).
            Every part a constraint needs must be present.
        context: Scene facts (object centre, pull axis, camera).
        config: Thresholds; defaults when None.

    Raises:
        KeyError: a needed part has no points in ``cloud_parts``.
        ValueError: empty or non-finite part points.
    """
    cfg = config or TaskConstraintConfig()
    if not cloud_parts:
        raise ValueError(f"no part points for {intent.target!r}: constraints need the object's parts")
    up = _as_direction(context.up, "up")
    all_points = np.concatenate([_as_points(p, f"part {k!r}") for k, p in cloud_parts.items()])
    center = (
        np.asarray(context.object_center, dtype=np.float64)
        if context.object_center is not None
        else all_points.mean(axis=0)
    )
    action = intent.next_action
    out: list[Constraint] = []

    def keep_clear(part: str, why: str) -> None:
        if any(isinstance(c, KeepPartClear) and c.part == part for c in out):
            return
        out.append(KeepPartClear(part, _part(cloud_parts, part, why), cfg.keep_clear_distance, cfg.gripper))

    def side_opposite(part: str, why: str) -> None:
        # Approaching towards the part, from the far side of the object, leaves the part free.
        offset = _horizontal(_part(cloud_parts, part, why).mean(axis=0) - center, up)
        if np.linalg.norm(offset) >= cfg.min_side_offset:
            out.append(ApproachFrom(f"opposite_{part}", offset, cfg.approach_full_deg, cfg.side_zero_deg))

    def centred(part: str) -> bool:
        # A part all round the object's axis (a cup's rim) is near any hand on the body; only a
        # part off to one side (a spout) can be kept clear by choosing where to hold.
        if part not in cloud_parts:
            return False
        offset = _horizontal(np.asarray(cloud_parts[part]).mean(axis=0) - center, up)
        return bool(np.linalg.norm(offset) < cfg.min_side_offset)

    pour_ring = action == NextAction.POUR and intent.use_region is not None and centred(intent.use_region)
    for part in intent.keep_clear:
        if pour_ring and part == intent.use_region:
            continue  # the pour skill tilts away from the fingers instead
        keep_clear(part, "keep_clear")

    if action in (NextAction.PLACE, NextAction.STACK, NextAction.INSERT):
        # The footprint is the whole object's outline: wherever it reaches, the support is there.
        lowest = all_points[int(np.argmin(all_points @ up))]
        face = FaceClearance(
            "bottom", lowest, -up, all_points, cfg.face_margin, cfg.footprint_radius, cfg.gripper
        )
        out.append(face)
    elif action == NextAction.POUR:
        use = intent.use_region or next(iter(_parts_affording(intent.target, "pour_out", cloud_parts)), None)
        if use is not None and use != intent.grasp_region and not centred(use):
            keep_clear(use, f"{action.value} (use region)")
            cat = CATEGORIES.get(intent.target)
            out_dir = spout_direction(_part(cloud_parts, use, f"{action.value} (use region)"), center)
            if cat is not None and cat.is_spout(use) and out_dir is not None:
                out.append(HoldsTilt(np.cross(up, out_dir), center, cfg.pour_tilt_deg))
            else:  # no spout to tip towards: the far side keeps the pouring part free
                side_opposite(use, f"{action.value} (use region)")
    elif action == NextAction.HANG:
        for part in _parts_affording(intent.target, "hang", cloud_parts):
            if part != intent.grasp_region:
                side_opposite(part, "hang")
    elif action in (NextAction.OPEN, NextAction.PULL) or (
        action in (NextAction.CLOSE, NextAction.PUSH) and context.pull_axis is not None
    ):
        if context.pull_axis is not None:
            pull = _as_direction(context.pull_axis, "pull_axis")
        else:
            grasped = _part(cloud_parts, intent.grasp_region, action.value)
            pull = _horizontal(grasped.mean(axis=0) - center, up)
            if np.linalg.norm(pull) < cfg.min_side_offset:
                raise ValueError(
                    f"{action.value}: cannot tell the pull axis of {intent.grasp_region!r} (its centroid "
                    "is above the object centre); pass TaskContext.pull_axis"
                )
        out.append(ApproachFrom("front", -pull, cfg.approach_full_deg, cfg.approach_zero_deg))

    # Carried by a handle to be set down: the weight must not hang on the pads' friction.
    handle = cloud_parts.get(intent.grasp_region)
    if handle is not None and load_axis(intent, handle, center, up) is not None:
        out.append(HoldsLoad(center, up))

    if context.avoid_occluding and context.camera_position is not None:
        watched = intent.use_region or intent.grasp_region
        target = cloud_parts[watched].mean(axis=0) if watched in cloud_parts else center
        out.append(
            AvoidOccluding(np.asarray(context.camera_position), target, cfg.occlusion_margin, cfg.gripper)
        )
    return out


def task_term(cand: GraspCandidate, constraints: Sequence[Constraint]) -> float:
    """task = product of the constraint scores; 1.0 with no constraints."""
    return float(np.prod([c.score(cand) for c in constraints])) if constraints else 1.0


def fill_task_terms(
    cands: Sequence[GraspCandidate], constraints: Sequence[Constraint]
) -> list[GraspCandidate]:
    """Write ``task`` (the product) and each ``task.<constraint name>`` score into every candidate."""
    for cand in cands:
        scores = {c.name: c.score(cand) for c in constraints}
        for name, s in scores.items():
            cand.terms[f"task.{name}"] = s
        cand.terms["task"] = float(np.prod(list(scores.values()))) if scores else 1.0
    return list(cands)
