"""Collision checking of a robot (arm, hand and fingers) against itself and named obstacles.

Geometry: every link's collision geometry (URDF or MJCF, as the robot's kinematic model file
has it) is replaced by one convex hull per link: the FR3's finger boxes, a Robotiq finger's
pieces, each become one hull. Convex shapes let coal answer with GJK in about a
microsecond per pair instead of walking two triangle BVHs, and they are also what MuJoCo
collides with (it always uses the convex hull of a mesh geom), so a configuration that is free
here is free in the simulator too. The fingers sit at a chosen opening
(:meth:`CollisionWorld.set_finger_width`); the kinematic model locks them there.

The whole check runs inside pinocchio's ``computeCollisions`` (forward kinematics, placement
update and all coal pair tests in C++): no Python loop over pairs on the hot path.

Pairs checked:
    * self: every pair of links at least two joints apart (parent/child links always touch
      through their shared joint; the last link, the hand and the locked fingers form one rigid
      group), except the pairs the joint limits keep apart (the description's
      ``never_colliding``);
    * environment: every arm link against every obstacle, except the base link (by default),
      which cannot move and rests on whatever the robot is mounted on;
    * minus allowed pairs (:meth:`CollisionWorld.allow`), e.g. the target object against the
      hand during the final approach of a grasp.

Obstacles are padded by ``CollisionConfig.padding``: a configuration closer than that to an
obstacle counts as colliding. This absorbs the gaps between the states a planner checks along a
motion, and the robot's tracking error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import coal
import numpy as np
import pinocchio as pin
import trimesh

from afford_planner.robot_model import RobotModel, as_pose, se3_from_matrix


@dataclass
class CollisionConfig:
    """How the robot is modelled for collision checks.

    Attributes:
        finger_width: Opening between the fingers (m) for the finger geometry; ``None``: the
            gripper's largest.
        padding: Clearance (m) demanded between the robot and every obstacle. Planners check
            discrete states, so the padding must exceed the largest distance any robot point
            travels from the nearest checked state (see ``PlannerConfig.collision_step``). It
            also keeps fingertips that far above a table: a top-down grasp needs its TCP about
            1 cm + padding above the surface.
        self_padding: Clearance (m) demanded between non-adjacent links of the robot itself.
        check_base_link: Also check the base link against obstacles. Off by default: the base
            is bolted down and touches the table it stands on, and no motion can change that.
        skip_never_colliding: Leave out the robot's ``never_colliding`` self pairs (about a
            third of the FR3's self checks). Off only to audit that list.
    """

    finger_width: float | None = None
    padding: float = 0.005
    self_padding: float = 0.0
    check_base_link: bool = False
    skip_never_colliding: bool = True

    def __post_init__(self) -> None:
        if self.finger_width is not None and not 0.0 <= self.finger_width <= 0.3:
            raise ValueError(f"finger_width must be in [0, 0.3] m, got {self.finger_width}")
        if not 0.0 <= self.padding <= 0.1:
            raise ValueError(f"padding must be in [0, 0.1] m, got {self.padding}")
        if not 0.0 <= self.self_padding <= 0.05:
            raise ValueError(f"self_padding must be in [0, 0.05] m, got {self.self_padding}")


def convex_from_points(points: np.ndarray) -> coal.Convex:
    """coal convex shape of the hull of ``points`` (N, 3); needs 4+ non-coplanar points."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    hull = trimesh.Trimesh(vertices=pts).convex_hull
    if len(hull.faces) < 4 or hull.volume <= 0.0:
        raise ValueError(f"the {len(pts)} points span no volume: a convex obstacle needs thickness")
    vertices = coal.StdVec_Vec3s()
    for v in hull.vertices:
        vertices.append(np.asarray(v, dtype=np.float64))
    triangles = coal.StdVec_Triangle()
    for a, b, c in hull.faces:
        triangles.append(coal.Triangle(int(a), int(b), int(c)))
    return coal.Convex(vertices, triangles)


def _box_corners(half: np.ndarray, placement: pin.SE3) -> np.ndarray:
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
    return (signs * half) @ placement.rotation.T + placement.translation


def _shape_points(geom: coal.CollisionGeometry, placement: pin.SE3, where: str) -> np.ndarray:
    """Points whose hull is the shape (mesh vertices, box corners, capsule/cylinder end caps)."""
    if isinstance(geom, coal.BVHModelBase):
        pts = np.array([geom.vertices(i) for i in range(geom.num_vertices)])
        return pts @ placement.rotation.T + placement.translation
    if isinstance(geom, coal.Box):
        return _box_corners(np.asarray(geom.halfSide), placement)
    if isinstance(geom, coal.Sphere):
        return _box_corners(np.full(3, geom.radius), placement)
    if isinstance(geom, coal.Capsule | coal.Cylinder):
        r = float(geom.radius)
        h = float(geom.halfLength) + (r if isinstance(geom, coal.Capsule) else 0.0)
        return _box_corners(np.array([r, r, h]), placement)
    raise ValueError(f"unexpected collision shape {type(geom).__name__} on {where}")


def _robot_geometry(robot: RobotModel) -> pin.GeometryModel:
    """Convex collision geometry of arm, hand and fingers on ``robot.full_model``: one hull per
    link (the frame a collision geometry hangs from)."""
    path = robot.model_path
    full = robot.full_model
    if path.suffix == ".urdf":
        raw = pin.buildGeomFromUrdf(full, str(path), pin.COLLISION, package_dirs=[str(path.parent)])
    else:
        raw = pin.buildGeomFromMJCF(full, str(path), pin.COLLISION)
    hulls: dict[str, tuple[int, int, list[np.ndarray]]] = {}
    for obj in raw.geometryObjects:
        frame = full.frames[obj.parentFrame]
        # A URDF link is one body frame; an MJCF geom hangs from its body's frame.
        link = frame.name
        pts = _shape_points(obj.geometry, obj.placement, link)
        hulls.setdefault(link, (obj.parentJoint, obj.parentFrame, []))[2].append(pts)
    model = pin.GeometryModel()
    for link, (joint, frame, parts) in hulls.items():
        model.addGeometryObject(
            pin.GeometryObject(link, joint, frame, pin.SE3.Identity(), convex_from_points(np.vstack(parts)))
        )
    return model


@dataclass
class _Obstacle:
    geometry: coal.CollisionGeometry
    placement: pin.SE3  # in the robot base frame
    kind: str


class CollisionWorld:
    """A robot and named obstacles, checked with coal through pinocchio.

    Obstacles are given in the world frame; the robot's base pose comes from the
    :class:`RobotModel`. Every check takes the arm's joint angles.
    """

    def __init__(self, robot: RobotModel, config: CollisionConfig | None = None) -> None:
        self.robot = robot
        self.config = config or CollisionConfig()
        self._robot_full_geometry = _robot_geometry(robot)
        self.hand_links: tuple[str, ...] = robot.robot.gripper.hand_links
        unknown = set(self.hand_links) - {g.name for g in self._robot_full_geometry.geometryObjects}
        if unknown:
            raise ValueError(f"{robot.robot.name}: hand links {sorted(unknown)} have no collision geometry")
        self._obstacles: dict[str, _Obstacle] = {}
        # obstacle name -> robot links it may touch (None: all of them)
        self._allowed: dict[str, frozenset[str] | None] = {}
        #: Number of configurations checked so far (for planner statistics).
        self.checks = 0
        gripper = robot.robot.gripper
        width = gripper.max_width if self.config.finger_width is None else self.config.finger_width
        if width > gripper.max_width:
            raise ValueError(f"finger width {width} m exceeds the {gripper.name}'s {gripper.max_width} m")
        self._build_robot(width)

    # ----------------------------------------------------------------- robot set-up
    def _build_robot(self, finger_width: float) -> None:
        q_ref = self.robot.full_configuration(self.robot.q_home, finger_width)
        self._model, geoms = pin.buildReducedModel(
            self.robot.full_model, self._robot_full_geometry, self.robot._locked_ids, q_ref
        )
        self._data = self._model.createData()
        self._robot_geoms: pin.GeometryModel = geoms
        self._robot_names = [g.name for g in geoms.geometryObjects]
        # Chain position of each robot geometry (its joint in the arm model): pairs less than
        # two apart are never checked; the locked fingers ride on the last joint.
        self._chain = {g.name: int(g.parentJoint) for g in geoms.geometryObjects}
        self._finger_width = finger_width
        self._rebuild()

    def set_finger_width(self, width: float) -> None:
        """Re-pose the finger geometry at opening ``width`` (m, up to the gripper's largest)."""
        width_max = self.robot.robot.gripper.max_width
        if not 0.0 <= width <= width_max:
            raise ValueError(f"finger width must be in [0, {width_max}] m, got {width}")
        if width != self._finger_width:
            self._build_robot(float(width))

    @property
    def finger_width(self) -> float:
        return self._finger_width

    @property
    def robot_links(self) -> list[str]:
        """Names of the robot's collision bodies."""
        return list(self._robot_names)

    # ----------------------------------------------------------------- obstacles
    def _check_new_name(self, name: str) -> None:
        if not name or not isinstance(name, str):
            raise ValueError(f"obstacle name must be a non-empty string, got {name!r}")
        if name in self._obstacles:
            raise ValueError(f"obstacle {name!r} already exists; remove it first")
        if name in {g.name for g in self._robot_full_geometry.geometryObjects}:
            raise ValueError(f"obstacle name {name!r} clashes with a robot link")

    def _add(self, name: str, geometry: coal.CollisionGeometry, pose: np.ndarray, kind: str) -> None:
        placement = self.robot.base_se3.actInv(se3_from_matrix(pose))
        self._obstacles[name] = _Obstacle(geometry, placement, kind)
        self._rebuild()

    def add_box(self, name: str, size: Iterable[float], pose: np.ndarray | None = None) -> None:
        """Box with full edge lengths ``size`` (x, y, z in m), centred at ``pose`` (4x4, world)."""
        self._check_new_name(name)
        dims = np.asarray(list(size), dtype=np.float64)
        if dims.shape != (3,) or not np.all(np.isfinite(dims)) or np.any(dims <= 0.0):
            raise ValueError(f"box {name!r} size must be 3 positive lengths (m), got {dims}")
        pose = np.eye(4) if pose is None else as_pose(pose, f"pose of box {name!r}")
        self._add(name, coal.Box(*dims), pose, "box")

    def add_convex_mesh(
        self,
        name: str,
        vertices: np.ndarray,
        faces: np.ndarray | None = None,
        pose: np.ndarray | None = None,
    ) -> None:
        """Convex obstacle: the hull of ``vertices`` (N, 3, in the obstacle frame) at ``pose``.

        ``faces`` (M, 3) are validated against the vertices but the shape is always rebuilt as
        the vertices' convex hull: coal's GJK walks the hull's vertex adjacency, which a
        non-convex or inconsistent face list would corrupt silently.
        """
        self._check_new_name(name)
        verts = np.asarray(vertices, dtype=np.float64)
        if verts.ndim != 2 or verts.shape[1] != 3 or len(verts) < 4 or not np.all(np.isfinite(verts)):
            raise ValueError(f"mesh {name!r} vertices must be finite (N>=4, 3), got shape {verts.shape}")
        if faces is not None:
            f = np.asarray(faces)
            if f.ndim != 2 or f.shape[1] != 3 or f.size == 0:
                raise ValueError(f"mesh {name!r} faces must be (M, 3) vertex indices, got shape {f.shape}")
            if f.min() < 0 or f.max() >= len(verts):
                raise ValueError(f"mesh {name!r} faces index outside the {len(verts)} vertices")
        pose = np.eye(4) if pose is None else as_pose(pose, f"pose of mesh {name!r}")
        self._add(name, convex_from_points(verts), pose, "convex")

    def add_point_cloud(self, name: str, points: np.ndarray, resolution: float = 0.01) -> None:
        """Obstacle from a world-frame point cloud (N, 3): an octree of ``resolution`` (m) cells.

        Every cell holding a point is occupied; unseen space counts as free, so a partial view
        only blocks where it saw something.
        """
        self._check_new_name(name)
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) == 0 or not np.all(np.isfinite(pts)):
            raise ValueError(f"point cloud {name!r} must be finite (N>=1, 3), got shape {pts.shape}")
        if not 0.001 <= resolution <= 0.2:
            raise ValueError(f"octree resolution must be in [0.001, 0.2] m, got {resolution}")
        # The octree is built in the world frame; its placement is then just the base inverse.
        self._add(name, coal.makeOctree(pts, float(resolution)), np.eye(4), "octree")

    def remove(self, name: str) -> None:
        """Delete obstacle ``name`` (and any allowance for it)."""
        if name not in self._obstacles:
            raise KeyError(f"no obstacle {name!r}; known: {sorted(self._obstacles)}")
        del self._obstacles[name]
        self._allowed.pop(name, None)
        self._rebuild()

    def allow(self, name: str, links: Iterable[str] | None = None) -> None:
        """Ignore contacts between obstacle ``name`` and ``links`` (all robot links if None).

        Typical use: ``allow(target, world.hand_links)`` for the last centimetres of a grasp, so the
        fingers may touch the object while the arm still may not sweep through it.
        """
        if name not in self._obstacles:
            raise KeyError(f"no obstacle {name!r}; known: {sorted(self._obstacles)}")
        if links is None:
            self._allowed[name] = None
        else:
            chosen = frozenset(links)
            unknown = chosen - set(self._robot_names)
            if unknown or not chosen:
                raise ValueError(f"unknown robot links {sorted(unknown)}; known: {self._robot_names}")
            self._allowed[name] = chosen
        self._rebuild()

    def disallow(self, name: str) -> None:
        """Check obstacle ``name`` against every robot link again."""
        if self._allowed.pop(name, "absent") != "absent":
            self._rebuild()

    @property
    def obstacle_names(self) -> list[str]:
        return list(self._obstacles)

    @property
    def allowed(self) -> dict[str, frozenset[str] | None]:
        """Current allowances: obstacle -> links it may touch (None = all)."""
        return dict(self._allowed)

    # ----------------------------------------------------------------- pair bookkeeping
    def _rebuild(self) -> None:
        geoms = self._robot_geoms.copy()
        n_robot = len(self._robot_names)
        names = list(self._robot_names)
        for name, ob in self._obstacles.items():
            geoms.addGeometryObject(pin.GeometryObject(name, 0, 0, ob.placement, ob.geometry))
            names.append(name)

        pairs: list[tuple[int, int, float]] = []
        # Environment pairs first: in a cluttered scene they are the likely hits, and the
        # first hit ends an in_collision() query.
        base = self.robot.robot.base_link
        never = self.robot.robot.never_colliding
        for k, name in enumerate(names[n_robot:], start=n_robot):
            allowed = self._allowed.get(name, frozenset())
            for i, link in enumerate(self._robot_names):
                if link == base and not self.config.check_base_link:
                    continue
                if allowed is None or link in allowed:
                    continue
                pairs.append((i, k, self.config.padding))
        for i in range(n_robot):
            for j in range(i + 1, n_robot):
                if abs(self._chain[names[i]] - self._chain[names[j]]) < 2:
                    continue
                if self.config.skip_never_colliding and frozenset((names[i], names[j])) in never:
                    continue
                pairs.append((i, j, self.config.self_padding))

        for i, j, _ in pairs:
            geoms.addCollisionPair(pin.CollisionPair(i, j))
        gdata = geoms.createData()
        for k, (_, _, margin) in enumerate(pairs):
            gdata.collisionRequests[k].security_margin = margin
        self._geoms = geoms
        self._gdata = gdata
        self._pair_names = [(names[i], names[j]) for i, j, _ in pairs]

    # ----------------------------------------------------------------- queries
    def in_collision(self, q: np.ndarray) -> bool:
        """True when the robot at ``q`` touches an obstacle (within padding) or itself.

        The planner's hot path: ``q`` is not validated here (use ``robot.check_q`` first).
        """
        self.checks += 1
        return bool(pin.computeCollisions(self._model, self._data, self._geoms, self._gdata, q, True))

    def colliding_pairs(self, q: np.ndarray) -> list[tuple[str, str]]:
        """All (robot link, obstacle or link) pairs in contact at ``q``."""
        q = self.robot.check_q(q)
        pin.computeCollisions(self._model, self._data, self._geoms, self._gdata, q, False)
        return [
            self._pair_names[k] for k, res in enumerate(self._gdata.collisionResults) if res.isCollision()
        ]

    def min_distance(self, q: np.ndarray) -> float:
        """Smallest distance (m) over all checked pairs at ``q``, padding not subtracted.

        Zero or negative when something touches; ``inf`` when no pair is checked.
        """
        return self.closest_pair(q)[1]

    def closest_pair(self, q: np.ndarray) -> tuple[tuple[str, str] | None, float]:
        """The checked pair nearest to contact at ``q`` and its distance (m)."""
        q = self.robot.check_q(q)
        if not self._pair_names:
            return None, float("inf")
        k = pin.computeDistances(self._model, self._data, self._geoms, self._gdata, q)
        return self._pair_names[k], float(self._gdata.distanceResults[k].min_distance)

    def is_valid(self, q: np.ndarray) -> bool:
        """Within joint limits and collision-free."""
        return self.robot.within_limits(q) and not self.in_collision(q)

    def describe_collision(self, q: np.ndarray) -> str:
        """Short text naming what touches at ``q`` (for failure reasons)."""
        pairs = self.colliding_pairs(q)
        if not pairs:
            return "no contact"
        shown = ", ".join(f"{a}<->{b}" for a, b in pairs[:4])
        more = f" and {len(pairs) - 4} more" if len(pairs) > 4 else ""
        return shown + more
