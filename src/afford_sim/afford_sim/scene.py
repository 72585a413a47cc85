"""Scene descriptions and their seeded placement on the table.

A :class:`SceneSpec` says what is in a scene (a table, objects with placement rules, cameras,
the robot's start configuration); :func:`sample_scene` turns it into a :class:`PlacedScene`,
the world pose of every object, by rejection sampling. The placed scene is the single input of
the MuJoCo compiler (:mod:`afford_sim.mjcf`) and of the planner's collision export
(:func:`collision_shapes`).

World conventions: metres, z up, the FR3 base at the world origin on the table's near edge,
looking along +x over the table. Directions in relations are the robot's: ``left_of`` is +y,
``behind`` is +x (further from the robot), ``in_front_of`` is -x (closer to the robot).

Object footprints are the oriented rectangles of each asset's bounds at its default joint
configuration; two objects standing on the same support may not come closer than
:attr:`SamplerConfig.min_gap`, which keeps free objects from starting in contact.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import coal
import numpy as np

from afford_core.ontology import category as ontology_category
from afford_core.robots import DEFAULT_ROBOT, get_robot
from afford_sim.assets import make
from afford_sim.assets.base import Asset

Relation = Literal["on", "in", "left_of", "right_of", "near", "behind", "in_front_of"]
RELATIONS: tuple[str, ...] = ("on", "in", "left_of", "right_of", "near", "behind", "in_front_of")
# Unit directions (world x, y) of the side relations, seen from the robot at the origin facing +x.
_SIDE_DIRECTIONS: dict[str, tuple[float, float]] = {
    "left_of": (0.0, 1.0),
    "right_of": (0.0, -1.0),
    "behind": (1.0, 0.0),
    "in_front_of": (-1.0, 0.0),
}
RESERVED_NAMES: frozenset[str] = frozenset({"robot", "table", "floor", "world", "domain"})
"""Names the simulator uses for its own geometry (and ``domain``, the key of a rollout's domain
randomization beside its objects in the record); objects may not take them."""

"""The usual Franka ready pose (elbow up, hand pointing down); the default start."""

AssetFactory = Callable[..., Asset]
"""``(category, seed, **params) -> Asset``; ``params`` only for objects that pin some."""


def _vec(values: Iterable[float], n: int, what: str) -> tuple[float, ...]:
    out = tuple(float(v) for v in values)
    if len(out) != n or not all(math.isfinite(v) for v in out):
        raise ValueError(f"{what} must be {n} finite numbers, got {out}")
    return out


def _check_yaw(yaw: tuple[float, float], what: str) -> tuple[float, float]:
    lo, hi = _vec(yaw, 2, f"{what} yaw range")
    if lo > hi:
        raise ValueError(f"{what}: yaw range ({lo}, {hi}) is empty (lower > upper)")
    return lo, hi


@dataclass(frozen=True)
class TableSpec:
    """The table the robot stands on and the objects rest on.

    Attributes:
        size: (depth along x, width along y) of the top in metres.
        center: (x, y) of the top's centre in world. The default puts the robot base (world
            origin) on the middle of the near edge.
        top_z: Height of the table top in world (the objects' support plane).
        thickness: Thickness of the top slab (its collision box).
        height: Distance from the top down to the floor (a plane that catches dropped objects).
        margin: Objects' footprints stay this far inside the table's edges.
        rgba: Colour of the top.
    """

    size: tuple[float, float] = (1.0, 1.2)
    center: tuple[float, float] = (0.5, 0.0)
    top_z: float = 0.0
    thickness: float = 0.04
    height: float = 0.75
    margin: float = 0.02
    rgba: tuple[float, float, float, float] = (0.62, 0.5, 0.38, 1.0)

    def __post_init__(self) -> None:
        size = _vec(self.size, 2, "table size")
        if min(size) <= 0:
            raise ValueError(f"table size must be positive, got {size}")
        _vec(self.center, 2, "table center")
        if not math.isfinite(self.top_z):
            raise ValueError(f"table top_z must be finite, got {self.top_z}")
        if self.thickness <= 0 or self.height < self.thickness:
            raise ValueError(
                f"table needs thickness > 0 and height >= thickness, got {self.thickness}, {self.height}"
            )
        if not 0 <= 2 * self.margin < min(size):
            raise ValueError(f"table margin {self.margin} leaves no room on a {size} top")

    def pose(self) -> np.ndarray:
        """4x4 world pose of the centre of the top slab (its collision box)."""
        t = np.eye(4)
        t[:3, 3] = (self.center[0], self.center[1], self.top_z - self.thickness / 2)
        return t


@dataclass(frozen=True)
class Window:
    """Place an object uniformly in a rectangle on the table.

    Attributes:
        center: (x, y) world centre of the window the asset origin is sampled in.
        size: (x extent, y extent) of the window; zero extent pins that coordinate.
        yaw: (lower, upper) range of the yaw about world z, radians. ``None``: any yaw for
            free objects; for fixed furniture, the yaw that turns its front (+x) to the robot.
    """

    center: tuple[float, float] = (0.5, 0.0)
    size: tuple[float, float] = (0.4, 0.6)
    yaw: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        _vec(self.center, 2, "window center")
        if min(_vec(self.size, 2, "window size")) < 0:
            raise ValueError(f"window size must be >= 0, got {self.size}")
        if self.yaw is not None:
            _check_yaw(self.yaw, "window")


@dataclass(frozen=True)
class Relative:
    """Place an object relative to another one.

    Attributes:
        relation: ``on``/``in``: at the reference's top surface or inside it (see
            :func:`sample_scene`), at ``offset`` from its origin; ``left_of``, ``right_of``,
            ``behind``, ``in_front_of``: beside it in that robot-frame direction;
            ``near``: beside it in a random direction.
        reference: Name of the other object (placed first).
        distance: Free gap (m) between the two footprints for the side relations.
        jitter: Random shift (m) of a side placement, uniform in +-jitter on both axes.
        offset: (x, y) in the reference's frame of the point an ``on``/``in`` object goes to.
        yaw: (lower, upper) range of the object's yaw about world z, radians; ``None`` as for
            :class:`Window`.
    """

    relation: Relation
    reference: str
    distance: float = 0.05
    jitter: float = 0.02
    offset: tuple[float, float] = (0.0, 0.0)
    yaw: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise ValueError(f"unknown relation {self.relation!r}; known: {', '.join(RELATIONS)}")
        if not self.reference:
            raise ValueError("a relative placement needs a reference object name")
        if self.distance < 0 or self.jitter < 0:
            raise ValueError(f"distance and jitter must be >= 0, got {self.distance}, {self.jitter}")
        _vec(self.offset, 2, "relation offset")
        if self.yaw is not None:
            _check_yaw(self.yaw, "relation")


Placement = Window | Relative


@dataclass(frozen=True)
class ObjectSpec:
    """One object of a scene.

    Attributes:
        name: Unique name in the scene; prefixes its geoms (``mug/handle/0``), so no ``/``.
        category: Ontology category of the asset (``"mug"``).
        seed: Seed of the procedural asset (its shape), independent of the scene seed.
        placement: Where it goes: a :class:`Window` on the table or a :class:`Relative` rule.
        params: Shape parameters pinned instead of drawn from the seed, as ``(name, value)``
            pairs (``(("size", 0.03),)`` for a small cube); checked by the generator against
            its limits. A task that needs a shape the everyday draw rarely makes says so here.
        joints: Starting positions of an articulated object's joints (m or rad), as
            ``(joint name, value)`` pairs (``(("door", 1.2),)``: a microwave standing open);
            checked against the joint's range when the scene is compiled. Joints not named
            start at 0, closed.
    """

    name: str
    category: str
    seed: int = 0
    placement: Placement = field(default_factory=Window)
    params: tuple[tuple[str, float], ...] = ()
    joints: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name in RESERVED_NAMES:
            raise ValueError(
                f"object name {self.name!r} must be non-empty, contain no '/', and not be one of "
                f"{sorted(RESERVED_NAMES)}"
            )
        ontology_category(self.category)  # raises with the known categories listed
        if not isinstance(self.placement, Window | Relative):
            raise TypeError(f"{self.name}: placement must be a Window or Relative, got {self.placement!r}")
        names = [j for j, _ in self.joints]
        if len(set(names)) != len(names) or not all(np.isfinite(v) for _, v in self.joints):
            raise ValueError(f"{self.name}: joints must name each joint once with a finite value, got "
                             f"{self.joints!r}")


def look_at(position: Sequence[float], target: Sequence[float],
            up: Sequence[float] = (0, 0, 1)) -> np.ndarray:
    """4x4 world pose of an OpenCV camera (x right, y down, z forward) at ``position`` facing ``target``."""
    p = np.asarray(position, dtype=float)
    z = np.asarray(target, dtype=float) - p
    if np.linalg.norm(z) < 1e-9:
        raise ValueError("camera position and target coincide")
    z /= np.linalg.norm(z)
    x = np.cross(z, np.asarray(up, dtype=float))
    if np.linalg.norm(x) < 1e-9:
        raise ValueError("camera 'up' is parallel to the viewing direction; choose another up")
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    t = np.eye(4)
    t[:3, :3] = np.column_stack([x, y, z])
    t[:3, 3] = p
    return t


@dataclass(frozen=True, eq=False)  # eq=False: K and the pose are arrays
class CameraSpec:
    """A pinhole RGB-D camera.

    Either give ``fovy`` with ``position``/``target`` (a look-at camera), or give ``K`` and/or
    ``world_T_camera`` explicitly (they override the look-at fields); use
    :meth:`from_calibration` for a calibrated camera.

    Attributes:
        name: Camera name in the model.
        width: Image width (pixels).
        height: Image height (pixels).
        fovy: Vertical field of view (degrees) when ``K`` is not given.
        position: (3,) world position of a look-at camera. The default stands in front of the
            table facing the robot, above it, so it sees objects between robot and camera.
        target: (3,) world point the look-at camera faces.
        up: (3,) world direction that appears upwards in the image.
        K: Optional 3x3 intrinsics (OpenCV: pixel centres at integer coordinates).
        world_T_camera: Optional 4x4 pose of the OpenCV camera frame (x right, y down,
            z forward) in world (in the TCP frame for a camera on the hand).
        mount: ``"world"`` for a fixed camera; ``"tcp"`` for one carried by the hand (a wrist
            camera), whose pose fields are then in the robot's TCP frame.
    """

    name: str = "front"
    width: int = 640
    height: int = 480
    fovy: float = 55.0
    position: tuple[float, float, float] = (1.2, 0.0, 0.9)
    target: tuple[float, float, float] = (0.4, 0.0, 0.05)
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)
    K: np.ndarray | None = None
    world_T_camera: np.ndarray | None = None
    mount: str = "world"

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"camera name {self.name!r} must be non-empty without '/'")
        if self.mount not in ("world", "tcp"):
            raise ValueError(f"camera {self.name}: mount must be 'world' or 'tcp', got {self.mount!r}")
        if self.width < 8 or self.height < 8:
            raise ValueError(f"camera {self.name}: image {self.width}x{self.height} is too small")
        if not 1.0 <= self.fovy <= 170.0:
            raise ValueError(f"camera {self.name}: fovy {self.fovy} deg outside [1, 170]")
        _vec(self.position, 3, "camera position")
        _vec(self.target, 3, "camera target")
        if self.K is not None:
            k = np.asarray(self.K, dtype=float)
            if k.shape != (3, 3) or k[0, 0] <= 0 or k[1, 1] <= 0 or abs(k[0, 1]) > 1e-12:
                raise ValueError(f"camera {self.name}: K must be 3x3 with fx, fy > 0 and no skew, got {k}")
            object.__setattr__(self, "K", k)
        if self.world_T_camera is not None:
            t = np.asarray(self.world_T_camera, dtype=float)
            if t.shape != (4, 4) or not np.allclose(t[:3, :3].T @ t[:3, :3], np.eye(3), atol=1e-6) \
                    or np.linalg.det(t[:3, :3]) < 0:
                raise ValueError(f"camera {self.name}: world_T_camera must be a 4x4 rigid transform")
            object.__setattr__(self, "world_T_camera", t)
        else:
            look_at(self.position, self.target, self.up)  # validates the geometry early

    @classmethod
    def from_calibration(
        cls, name: str, K: np.ndarray, world_T_camera: np.ndarray, width: int, height: int
    ) -> CameraSpec:
        """A camera from calibrated intrinsics and OpenCV-convention extrinsics."""
        return cls(name=name, width=width, height=height, K=np.asarray(K, dtype=float),
                   world_T_camera=np.asarray(world_T_camera, dtype=float))

    def intrinsics(self) -> np.ndarray:
        """3x3 K. From ``fovy``: square pixels, principal point at the image centre."""
        if self.K is not None:
            return self.K.copy()
        f = 0.5 * self.height / math.tan(math.radians(self.fovy) / 2)
        # OpenCV puts pixel centres at integers, so the image centre is at (W-1)/2, (H-1)/2.
        return np.array([[f, 0, (self.width - 1) / 2], [0, f, (self.height - 1) / 2], [0, 0, 1]])

    def extrinsics(self) -> np.ndarray:
        """4x4 world_T_camera in the OpenCV convention (x right, y down, z forward)."""
        if self.world_T_camera is not None:
            return self.world_T_camera.copy()
        return look_at(self.position, self.target, self.up)


@dataclass(frozen=True)
class SceneSpec:
    """Everything a scene contains before placement.

    Attributes:
        objects: The objects; relative placements may refer to any other object by name.
        table: The table.
        cameras: Cameras rendered by the simulator.
        robot: The robot (a name in ``afford_core.robots.ROBOTS``); its base stands at the origin.
        robot_q: The arm's joint positions at reset (radians); empty: the robot's home.
        robot_clearance: Objects on the table keep their footprints this far from the robot
            base axis, so the start configuration is collision-free and the base is reachable.
    """

    objects: tuple[ObjectSpec, ...] = ()
    table: TableSpec = field(default_factory=TableSpec)
    cameras: tuple[CameraSpec, ...] = field(default_factory=lambda: (CameraSpec(),))
    robot: str = DEFAULT_ROBOT
    robot_q: tuple[float, ...] = ()
    robot_clearance: float = 0.2

    def __post_init__(self) -> None:
        object.__setattr__(self, "objects", tuple(self.objects))
        object.__setattr__(self, "cameras", tuple(self.cameras))
        arm = get_robot(self.robot)  # KeyError listing the known robots
        q = self.robot_q if len(self.robot_q) else arm.home
        object.__setattr__(self, "robot_q", _vec(q, arm.dof, "robot_q"))
        names = [o.name for o in self.objects]
        dup = sorted(n for n, c in Counter(names).items() if c > 1)
        if dup:
            raise ValueError(f"duplicate object names in scene: {dup}")
        cams = [c.name for c in self.cameras]
        if len(set(cams)) != len(cams):
            raise ValueError(f"duplicate camera names in scene: {cams}")
        if self.robot_clearance < 0:
            raise ValueError(f"robot_clearance must be >= 0, got {self.robot_clearance}")
        for o in self.objects:
            if isinstance(o.placement, Relative):
                if o.placement.reference not in names:
                    raise ValueError(
                        f"{o.name} is placed {o.placement.relation} {o.placement.reference!r}, "
                        f"which is not in the scene (objects: {names})"
                    )
                if o.placement.reference == o.name:
                    raise ValueError(f"{o.name} is placed relative to itself")
        placement_order(self.objects)  # raises on cycles

    def object(self, name: str) -> ObjectSpec:
        for o in self.objects:
            if o.name == name:
                return o
        raise KeyError(f"no object {name!r} in scene; objects: {[o.name for o in self.objects]}")


def placement_order(objects: Sequence[ObjectSpec]) -> list[ObjectSpec]:
    """Objects ordered so that every reference is placed before the objects relative to it."""
    by_name = {o.name: o for o in objects}
    order: list[ObjectSpec] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(o: ObjectSpec, path: list[str]) -> None:
        if state.get(o.name) == 2:
            return
        if state.get(o.name) == 1:
            raise ValueError(f"placement relations form a cycle: {' -> '.join([*path, o.name])}")
        state[o.name] = 1
        if isinstance(o.placement, Relative):
            visit(by_name[o.placement.reference], [*path, o.name])
        state[o.name] = 2
        order.append(o)

    for o in objects:
        visit(o, [])
    return order


@dataclass(frozen=True)
class SamplerConfig:
    """How :func:`sample_scene` searches.

    Attributes:
        attempts_per_object: Proposals tried for one object before the scene is restarted.
        restarts: Whole-scene restarts (earlier objects re-sampled) before giving up.
        min_gap: Smallest free distance (m) between footprints on the same support.
        drop: Height (m) above its support an object starts at, so it never starts in
            penetration (the simulator lets it settle).
    """

    attempts_per_object: int = 200
    restarts: int = 20
    min_gap: float = 0.01
    drop: float = 0.001

    def __post_init__(self) -> None:
        if self.attempts_per_object < 1 or self.restarts < 0:
            raise ValueError("attempts_per_object must be >= 1 and restarts >= 0")
        if self.min_gap < 0 or self.drop < 0:
            raise ValueError("min_gap and drop must be >= 0")


class PlacementError(ValueError):
    """An object could not be placed; ``object_name`` names it, ``reasons`` counts why."""

    def __init__(self, object_name: str, message: str, reasons: Counter[str] | None = None) -> None:
        super().__init__(message)
        self.object_name = object_name
        self.reasons: Counter[str] = reasons or Counter()


@dataclass
class Footprint:
    """An object's oriented bounding rectangle on its support.

    Attributes:
        center: (2,) world centre of the rectangle.
        half: (2,) half extents along the rectangle's own axes.
        yaw: Rotation of the rectangle about world z (the object's yaw).
    """

    center: np.ndarray
    half: np.ndarray
    yaw: float

    def corners(self) -> np.ndarray:
        """(4, 2) world corners."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        r = np.array([[c, -s], [s, c]])
        signs = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=float)
        return self.center + (signs * self.half) @ r.T

    def reach(self, direction: np.ndarray, origin: np.ndarray) -> float:
        """How far the rectangle extends from ``origin`` along unit ``direction``."""
        return float(np.max((self.corners() - origin) @ direction))

    def distance(self, other: Footprint) -> float:
        """Free distance between two footprints; <= 0 when they overlap."""
        return _coal_distance(self._box(), self._tf(), other._box(), other._tf())

    def distance_to_point(self, point: np.ndarray, radius: float) -> float:
        """Free distance to a disc of ``radius`` around ``point``; <= 0 when they overlap."""
        tf = coal.Transform3s(np.eye(3), np.array([point[0], point[1], 0.0]))
        return _coal_distance(self._box(), self._tf(), coal.Cylinder(max(radius, 1e-6), 0.01), tf)

    def inside(self, lo: np.ndarray, hi: np.ndarray) -> bool:
        """Whether the rectangle lies within the axis-aligned box [lo, hi]."""
        c = self.corners()
        return bool(np.all(c >= lo) and np.all(c <= hi))

    def _box(self) -> coal.Box:
        return coal.Box(2 * float(self.half[0]), 2 * float(self.half[1]), 0.01)

    def _tf(self) -> coal.Transform3s:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
        return coal.Transform3s(rot, np.array([self.center[0], self.center[1], 0.0]))


def _coal_distance(a: coal.CollisionGeometry, ta: coal.Transform3s,
                   b: coal.CollisionGeometry, tb: coal.Transform3s) -> float:
    # The thin footprint boxes share one z span, so a negative result is an overlap.
    return float(coal.distance(a, ta, b, tb, coal.DistanceRequest(), coal.DistanceResult()))


@dataclass
class PlacedObject:
    """An object with its asset and world pose.

    Attributes:
        spec: The object's description.
        asset: The procedural asset (geometry, parts, joints).
        pose: 4x4 world pose of the asset frame (origin at the footprint centre, z up).
        support: ``"table"`` or the name of the object it stands on or in.
        footprint: Its oriented rectangle on the support.
    """

    spec: ObjectSpec
    asset: Asset
    pose: np.ndarray
    support: str
    footprint: Footprint

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def category(self) -> str:
        return self.spec.category

    @property
    def fixed(self) -> bool:
        """Furniture and racks are welded to the world; everything else gets a free joint."""
        return self.asset.fixed

    def link_poses(self, q: dict[str, float] | None = None) -> dict[str, np.ndarray]:
        """4x4 world pose of every link at joint values ``q`` (default: all closed)."""
        return {k: self.pose @ t for k, t in self.asset.link_transforms(q).items()}


@dataclass
class PlacedScene:
    """A scene with every object posed in world; the input of the simulator and planner.

    Attributes:
        spec: The description it was sampled from.
        seed: The placement seed.
        objects: Placed objects in the order of ``spec.objects``.
    """

    spec: SceneSpec
    seed: int
    objects: list[PlacedObject]

    def object(self, name: str) -> PlacedObject:
        for o in self.objects:
            if o.name == name:
                return o
        raise KeyError(f"no object {name!r} in the placed scene; objects: {[o.name for o in self.objects]}")

    @property
    def names(self) -> list[str]:
        return [o.name for o in self.objects]


# ---------------------------------------------------------------------------------------------
# Geometry of assets used by the sampler.


def _asset_bounds(asset: Asset) -> np.ndarray:
    """(2, 3) axis-aligned bounds of the asset in its own frame at the default joint values."""
    return np.asarray(asset.mesh().bounds, dtype=float)


def _footprint(bounds: np.ndarray, xy: np.ndarray, yaw: float) -> Footprint:
    c_local = (bounds[0, :2] + bounds[1, :2]) / 2
    c, s = math.cos(yaw), math.sin(yaw)
    center = xy + np.array([[c, -s], [s, c]]) @ c_local
    return Footprint(center=center, half=(bounds[1, :2] - bounds[0, :2]) / 2, yaw=yaw)


class _Occupancy:
    """Solid z intervals of an asset along vertical lines, in its own frame (closed joints).

    Each piece is convex, i.e. the intersection of its faces' half-spaces ``n . p <= d``, so a
    vertical line meets it in one interval found by clipping against those planes. The planes
    are computed once per asset; each query is a few array operations.
    """

    def __init__(self, asset: Asset) -> None:
        self.planes: list[tuple[np.ndarray, np.ndarray]] = []
        for lk, tf in zip(asset.links, asset.link_transforms().values(), strict=True):
            for pc in lk.pieces:
                mesh = pc.mesh.copy().apply_transform(tf)
                n = np.asarray(mesh.face_normals)
                self.planes.append((n, np.einsum("ij,ij->i", n, mesh.triangles[:, 0])))
        self.top = float(asset.mesh().bounds[1, 2])

    def intervals(self, x: float, y: float) -> list[tuple[float, float]]:
        """Merged, sorted solid intervals (z_low, z_high) of the line through (x, y)."""
        found: list[tuple[float, float]] = []
        for n, d in self.planes:
            rhs = d - n[:, 0] * x - n[:, 1] * y  # n_z * z <= rhs on every face
            up, down = n[:, 2] > 1e-9, n[:, 2] < -1e-9
            if np.any(rhs[~(up | down)] < -1e-9):
                continue  # the line passes beside this piece
            hi = np.min(rhs[up] / n[up, 2]) if up.any() else np.inf
            lo = np.max(rhs[down] / n[down, 2]) if down.any() else -np.inf
            if hi > lo + 1e-9:
                found.append((float(lo), float(hi)))
        found.sort()
        merged: list[tuple[float, float]] = []
        for lo, hi in found:
            if merged and lo <= merged[-1][1] + 1e-6:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        return merged


def _support_height(ref_name: str, occupancy: _Occupancy, obj_name: str, relation: str,
                    local_points: np.ndarray, obj_height: float) -> float:
    """Height (in the reference's frame) where an object ``on``/``in`` the reference rests.

    ``on``: the highest top surface of the reference under any of ``local_points`` (the
    object's footprint centre and corners, in the reference frame). ``in``: at the centre
    point, the highest free gap inside the reference that is closed above and tall enough
    for the object; or, for an open container (a bowl, a mug), its floor when the container
    rises above it elsewhere.
    """
    if relation == "on":
        tops = [occ[-1][1] for p in local_points if (occ := occupancy.intervals(*p))]
        if not tops:
            raise PlacementError(obj_name, f"{obj_name} cannot go on {ref_name}: nothing of {ref_name} "
                                           "lies under its footprint (check the relation offset)")
        return max(tops)
    occ = occupancy.intervals(*local_points[0])
    if not occ:
        raise PlacementError(obj_name, f"{obj_name} cannot go in {ref_name}: nothing of {ref_name} lies "
                                       "under the placement point (check the relation offset)")
    gaps = [(lo_top, hi_bottom) for (_, lo_top), (hi_bottom, _) in zip(occ[:-1], occ[1:], strict=True)
            if hi_bottom - lo_top >= obj_height]
    if gaps:
        return max(g[0] for g in gaps)
    top = occ[-1][1]
    if top < occupancy.top - 0.005:
        return top
    raise PlacementError(obj_name, f"{obj_name} (height {obj_height:.3f} m) cannot go in {ref_name}: it has "
                                   "no interior at the placement point that is open or tall enough")


def _rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


# ---------------------------------------------------------------------------------------------
# Sampling.


def sample_scene(
    spec: SceneSpec,
    seed: int,
    config: SamplerConfig | None = None,
    make_asset: AssetFactory | None = None,
) -> PlacedScene:
    """Place every object of ``spec`` by seeded rejection sampling.

    Objects are placed in dependency order (references first). Window objects get a uniform
    position in their window and yaw in their range; side relations put the object's
    footprint ``distance`` beyond the reference's footprint in the relation's direction (plus
    jitter); ``on``/``in`` put it at the reference's top or interior (see
    :func:`_support_height`). A proposal is rejected when its footprint leaves the table
    (objects on the table), comes within ``robot_clearance`` of the robot base, or comes
    within ``min_gap`` of another object on the same support.

    Args:
        spec: The scene description.
        seed: Placement seed; the same seed gives the same scene.
        config: Search settings.
        make_asset: ``(category, seed) -> Asset``; defaults to ``afford_sim.assets.make``.

    Raises:
        PlacementError: naming the object that could not be placed and counting the reasons.
    """
    config = config or SamplerConfig()
    make_asset = make_asset or make
    order = placement_order(spec.objects)
    assets: dict[str, Asset] = {}
    for o in spec.objects:
        # A custom factory (one fixed asset, a test's) is called with params only when pinned.
        pinned = dict(o.params)
        asset = make_asset(o.category, o.seed, **pinned) if pinned else make_asset(o.category, o.seed)
        if asset.category != o.category:
            raise ValueError(f"{o.name}: asset factory made a {asset.category!r}, expected {o.category!r}")
        assets[o.name] = asset
    bounds = {name: _asset_bounds(a) for name, a in assets.items()}
    occupancy: dict[str, _Occupancy] = {}
    rng = np.random.default_rng(seed)
    last_failure: PlacementError | None = None
    for _ in range(config.restarts + 1):
        placed: dict[str, PlacedObject] = {}
        try:
            for o in order:
                placed[o.name] = _place_one(o, assets[o.name], bounds[o.name], placed, spec, config, rng,
                                            occupancy)
        except PlacementError as err:
            if not err.reasons:  # a geometric impossibility, not bad luck: retrying cannot help
                raise
            last_failure = err
            continue
        return PlacedScene(spec=spec, seed=seed, objects=[placed[o.name] for o in spec.objects])
    assert last_failure is not None
    raise PlacementError(
        last_failure.object_name,
        f"{last_failure} (after {config.restarts + 1} scene restarts with seed {seed})",
        last_failure.reasons,
    )


def _place_one(o: ObjectSpec, asset: Asset, bounds: np.ndarray, placed: dict[str, PlacedObject],
               spec: SceneSpec, config: SamplerConfig, rng: np.random.Generator,
               occupancy: dict[str, _Occupancy]) -> PlacedObject:
    table = spec.table
    lo = np.array(table.center) - np.array(table.size) / 2 + table.margin
    hi = np.array(table.center) + np.array(table.size) / 2 - table.margin
    reasons: Counter[str] = Counter()
    pl = o.placement
    face_robot = pl.yaw is None and asset.fixed
    for _ in range(config.attempts_per_object):
        yaw = float(rng.uniform(*(pl.yaw or (-math.pi, math.pi))))
        if isinstance(pl, Window):
            xy = np.array(pl.center) + (rng.random(2) - 0.5) * np.array(pl.size)
            if face_robot:
                yaw = math.atan2(-xy[1], -xy[0])
            support, z = "table", table.top_z
        else:
            ref = placed[pl.reference]
            ref_yaw = math.atan2(ref.pose[1, 0], ref.pose[0, 0])
            if pl.relation in ("on", "in"):
                xy = ref.pose[:2, 3] + _rot_z(ref_yaw) @ np.array(pl.offset)
                if face_robot:
                    yaw = math.atan2(-xy[1], -xy[0])
                fp = _footprint(bounds, xy, yaw)
                # The object's corners and centre, in the reference's frame, for the height query.
                pts_world = np.vstack([xy, fp.corners()])
                pts_local = (pts_world - ref.pose[:2, 3]) @ _rot_z(ref_yaw)
                if ref.name not in occupancy:
                    occupancy[ref.name] = _Occupancy(ref.asset)
                h = _support_height(ref.name, occupancy[ref.name], o.name, pl.relation, pts_local,
                                    float(bounds[1, 2] - bounds[0, 2]))
                support, z = pl.reference, float(ref.pose[2, 3] + h)
            else:
                if pl.relation == "near":
                    ang = rng.uniform(-math.pi, math.pi)
                    direction = np.array([math.cos(ang), math.sin(ang)])
                else:
                    direction = np.array(_SIDE_DIRECTIONS[pl.relation])
                ref_origin = ref.pose[:2, 3]
                if face_robot:  # the yaw for the expected spot; the final spot differs by jitter only
                    reach = ref.footprint.reach(direction, ref_origin) + pl.distance
                    guess = ref_origin + direction * reach
                    yaw = math.atan2(-guess[1], -guess[0])
                own = _footprint(bounds, np.zeros(2), yaw)
                gap = ref.footprint.reach(direction, ref_origin) + own.reach(-direction, np.zeros(2))
                xy = ref_origin + direction * (gap + pl.distance) + rng.uniform(-pl.jitter, pl.jitter, 2)
                # Beside the reference means on its support: its height less its drop.
                support, z = ref.support, float(ref.pose[2, 3]) - config.drop
        fp = _footprint(bounds, xy, yaw)
        reason = _reject(fp, support, z, placed, spec, config, lo, hi)
        if reason:
            reasons[reason] += 1
            continue
        pose = np.eye(4)
        pose[:2, :2] = _rot_z(yaw)
        pose[:3, 3] = (xy[0], xy[1], z + config.drop)
        return PlacedObject(spec=o, asset=asset, pose=pose, support=support, footprint=fp)
    summary = ", ".join(f"{n}x {r}" for r, n in reasons.most_common())
    raise PlacementError(
        o.name,
        f"could not place {o.name!r} ({o.category}, {o.placement}) in {config.attempts_per_object} "
        f"attempts: {summary}",
        reasons,
    )


def _reject(fp: Footprint, support: str, z: float, placed: dict[str, PlacedObject], spec: SceneSpec,
            config: SamplerConfig, lo: np.ndarray, hi: np.ndarray) -> str | None:
    if support == "table":
        if not fp.inside(lo, hi):
            return "off the table"
        if fp.distance_to_point(np.zeros(2), spec.robot_clearance) < 0:
            return "too close to the robot base"
    for other in placed.values():
        # Objects compete for room only on the same surface: a cabinet's top and its drawer
        # floor are two supports.
        same_surface = other.support == support and abs(other.pose[2, 3] - config.drop - z) < 0.01
        if same_surface and fp.distance(other.footprint) < config.min_gap:
            return f"overlaps {other.name!r}"
    return None


# ---------------------------------------------------------------------------------------------
# Collision export for the motion planner.


@dataclass
class CollisionShape:
    """One convex collision shape in world, for building the planner's collision world.

    Attributes:
        name: Unique name; for object pieces the simulator's geom name ``{object}/{part}/{i}``.
        kind: ``"box"`` or ``"convex"``.
        pose: 4x4 world pose of the shape's frame.
        size: For boxes, (3,) full side lengths (coal.Box convention), centred on the frame.
        vertices: For convex shapes, (V, 3) vertices in the shape's frame.
        faces: For convex shapes, (F, 3) triangle indices into ``vertices``.
        object: The object it belongs to (``"table"`` for the table).
        part: The object's part it belongs to (``""`` for the table).
    """

    name: str
    kind: Literal["box", "convex"]
    pose: np.ndarray
    size: np.ndarray | None = None
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None
    object: str = ""
    part: str = ""

    def __post_init__(self) -> None:
        self.pose = np.asarray(self.pose, dtype=float)
        if self.pose.shape != (4, 4):
            raise ValueError(f"{self.name}: pose must be 4x4")
        if self.kind == "box":
            if self.size is None or np.shape(self.size) != (3,):
                raise ValueError(f"{self.name}: a box needs a (3,) size")
        elif self.kind == "convex":
            if self.vertices is None or self.faces is None:
                raise ValueError(f"{self.name}: a convex shape needs vertices and faces")
        else:
            raise ValueError(f"{self.name}: kind must be 'box' or 'convex', got {self.kind!r}")

    def world_vertices(self) -> np.ndarray:
        """(V, 3) vertices in world (box corners for boxes)."""
        if self.kind == "box":
            assert self.size is not None
            signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1], indexing="ij")).reshape(3, -1).T
            local = signs * np.asarray(self.size) / 2
        else:
            assert self.vertices is not None
            local = self.vertices
        return local @ self.pose[:3, :3].T + self.pose[:3, 3]


def piece_names(obj_name: str, asset: Asset) -> list[tuple[str, int, str, str]]:
    """``(link name, piece index in link, part, geom name)`` for every piece of an asset.

    The geom name ``{object}/{part}/{i}`` (``i`` counts that part's pieces) is the one contract
    between the simulator's geoms, segmentation labels and collision shapes.
    """
    counts: Counter[str] = Counter()
    out = []
    for lk in asset.links:
        for k, pc in enumerate(lk.pieces):
            out.append((lk.name, k, pc.part, f"{obj_name}/{pc.part}/{counts[pc.part]}"))
            counts[pc.part] += 1
    return out


def table_shape(table: TableSpec) -> CollisionShape:
    """The table top as a box shape."""
    return CollisionShape(name="table", kind="box", pose=table.pose(),
                          size=np.array([*table.size, table.thickness]), object="table", part="")


def object_shapes(obj: PlacedObject, link_poses: dict[str, np.ndarray]) -> list[CollisionShape]:
    """Convex shapes of one object given the world pose of each of its links."""
    out = []
    pieces = {lk.name: lk.pieces for lk in obj.asset.links}
    for link, k, part, name in piece_names(obj.name, obj.asset):
        mesh = pieces[link][k].mesh
        out.append(CollisionShape(
            name=name, kind="convex", pose=link_poses[link], vertices=np.asarray(mesh.vertices, dtype=float),
            faces=np.asarray(mesh.faces, dtype=np.int64), object=obj.name, part=part,
        ))
    return out


def collision_shapes(placed: PlacedScene) -> list[CollisionShape]:
    """The table and every object piece at the placed poses (joints closed).

    :meth:`afford_sim.world.BatchWorld.collision_shapes` gives the same at the simulated
    state (objects moved, drawers opened).
    """
    shapes = [table_shape(placed.spec.table)]
    for obj in placed.objects:
        shapes += object_shapes(obj, obj.link_poses())
    return shapes
