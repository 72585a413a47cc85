"""PreAfford's five scenes: a table with an edge, a wall, a slope, a slot, or all four.

The table top is z = 0. A feature lies on one side of the object (``direction``, a unit vector
in the table plane, from the object towards it); "multi" puts the four round it, one per side,
as the seed's unseen scene does. Geometry (all justified by what the feature must do):

- **edge**: the table ends; the floor is 0.75 m below. Pushed until it overhangs, a flat object
  offers its edge to a side grasp (the lower finger under the overhang).
- **wall**: a 20 cm high wall standing on the table. Held against it, an object's far side is
  covered; the seed grasps from the opposite side (its lowest-scoring scene, 43-48%).
- **slope**: a wedge rising from the table at 15-25 deg. An object pushed onto its foot lies
  tilted, one edge lifted off the table, for the fingers to go under.
- **slot**: a groove across the table, 3-5 cm deep and 70-90% as wide as the object is long
  towards it (at least 6 cm). An object pushed over it until its centre of mass passes the near
  side tips its leading edge in and lies angled, its trailing edge lifted off the table; a
  groove narrower than half the object is bridged, and nothing tips (the seed does not give its
  slot's size).

The object starts 3-20 cm from the feature (the gap between its nearest point and the
feature), with any yaw: the seed places objects "at random distances from features".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .objects import FlatObject, generate

SCENES: tuple[str, ...] = ("edge", "wall", "slope", "slot", "multi")
FEATURES: tuple[str, ...] = ("edge", "wall", "slope", "slot")
FLOOR_Z = -0.75
TABLE_HALF = 0.6  # m: the table top is 1.2 m square unless a feature cuts it
WALL_HEIGHT = 0.2
GAP_RANGE = (0.03, 0.20)


@dataclass(frozen=True)
class Feature:
    """One table feature.

    Attributes:
        kind: ``edge``, ``wall``, ``slope`` or ``slot``.
        direction: (2,) unit vector in the table plane from the object's start towards it.
        offset: Distance (m) from the scene origin to the feature's near side along ``direction``.
        size: The feature's own dimension: the slope's angle (rad), the slot's (width, depth) (m).
    """

    kind: str
    direction: tuple[float, float]
    offset: float
    size: tuple[float, ...] = ()


@dataclass
class PreGraspScene:
    """A scene: features, the object and its starting pose on the table.

    Attributes:
        kind: One of :data:`SCENES`.
        features: The table features.
        obj: The flat object.
        xy: (2,) its footprint centre at the start.
        yaw: Its yaw at the start (rad).
        seed: The seed it was drawn from.
        camera_eye: (3,) where the depth camera stands; it looks at the object's start.
    """

    kind: str
    features: list[Feature]
    obj: FlatObject
    xy: np.ndarray
    yaw: float
    seed: int
    camera_eye: np.ndarray = field(default_factory=lambda: np.array([0.0, -0.6, 0.6]))


def footprint_reach(obj: FlatObject, yaw: float, direction: np.ndarray) -> float:
    """How far the object's footprint reaches from its centre along ``direction`` at ``yaw``."""
    c, s = np.cos(yaw), np.sin(yaw)
    pts = obj.mesh().vertices[:, :2] @ np.array([[c, s], [-s, c]])
    return float(np.max(pts @ direction))


def footprint_exit(obj: FlatObject, yaw: float, direction: np.ndarray) -> float:
    """How far from its centre the line along ``direction`` leaves the object's footprint (its
    convex hull at ``yaw``): where a push through the centre first touches it, from behind."""
    from scipy.spatial import ConvexHull

    c, s = np.cos(yaw), np.sin(yaw)
    pts = obj.mesh().vertices[:, :2] @ np.array([[c, s], [-s, c]])
    hull = pts[ConvexHull(pts).vertices]
    d = np.asarray(direction, dtype=float)
    best = 0.0
    for a, b in zip(hull, np.roll(hull, -1, axis=0), strict=True):
        # Solve t * d = a + u * (b - a) for t >= 0, u in [0, 1].
        m = np.column_stack([d, a - b])
        if abs(np.linalg.det(m)) < 1e-12:
            continue
        t, u = np.linalg.solve(m, a)
        if t >= 0.0 and -1e-9 <= u <= 1.0 + 1e-9:
            best = max(best, float(t))
    return best


def sample_scene(kind: str, category: str, seed: int) -> PreGraspScene:
    """The scene ``kind`` with a ``category`` object, drawn from ``seed`` (reproducible)."""
    if kind not in SCENES:
        raise ValueError(f"no pre-grasp scene called {kind!r}; known: {', '.join(SCENES)}")
    obj = generate(category, seed)
    rng = np.random.default_rng([seed, SCENES.index(kind), 7])
    yaw = float(rng.uniform(-np.pi, np.pi))
    xy = np.zeros(2)
    kinds = FEATURES if kind == "multi" else (kind,)
    turn = float(rng.uniform(-np.pi, np.pi))
    order = rng.permutation(len(kinds))
    features = []
    for i, k in enumerate(kinds):
        a = turn + 0.5 * np.pi * order[i]
        d = np.array([np.cos(a), np.sin(a)])
        gap = float(rng.uniform(*GAP_RANGE))
        size: tuple[float, ...] = ()
        if k == "slope":
            size = (float(np.radians(rng.uniform(15.0, 25.0))),)
        elif k == "slot":
            along = footprint_reach(obj, yaw, d) + footprint_reach(obj, yaw, -d)
            size = (max(0.06, float(rng.uniform(0.7, 0.9)) * along), float(rng.uniform(0.03, 0.05)))
        features.append(Feature(k, (float(d[0]), float(d[1])), footprint_reach(obj, yaw, d) + gap, size))
    # The camera on a stream of its own (drawing it moves nothing else): 0.8-1.1 m from the
    # object, 40-70 deg above the table, from any side, as a robot's head camera sees a table.
    cam = np.random.default_rng([seed, SCENES.index(kind), 11])
    dist, elev, azim = cam.uniform(0.8, 1.1), np.radians(cam.uniform(40, 70)), cam.uniform(-np.pi, np.pi)
    eye = np.array(
        [dist * np.cos(elev) * np.cos(azim), dist * np.cos(elev) * np.sin(azim), dist * np.sin(elev)]
    )
    return PreGraspScene(kind, features, obj, xy, yaw, seed, eye)
