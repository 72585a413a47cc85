"""Scripted pushes and grasps that know where the feature is: a reference for the scenes, not a
method.

They read the scene's feature pose from the simulator (privileged: the seed's method and its
baselines see only a point cloud), so they show what each scene makes possible and test that the
geometry does what :mod:`afford_sim.preafford.scenes` says; they are not a row of Table II.
"""

from __future__ import annotations

import numpy as np

from afford_core.grasp import hand_frame

from .scenes import Feature, footprint_exit, footprint_reach
from .world import PreGraspWorld, PushResult

OVERHANG = 0.05
"""How far an edge push aims to leave the object overhanging: the lower finger (1.2 cm thick)
and 2-4 cm of pad under it, short of tipping a 13 cm phone over."""


def _yaw(world: PreGraspWorld) -> float:
    r = world.object_pose()[:3, :3]
    return float(np.arctan2(r[1, 0], r[0, 0]))


def push_towards(
    world: PreGraspWorld, feature: Feature, extra: float | None = None, scale: float = 1.0
) -> PushResult:
    """Push the object straight at ``feature`` from its far side, through its centre: by the gap
    plus ``extra`` (default per feature: leave :data:`OVERHANG` over an edge, press on a wall,
    run half the object onto a slope, carry the centre 5 cm past a slot's near side), times
    ``scale``."""
    d = np.asarray(feature.direction, dtype=float)
    centre = world.object_pose()[:2, 3]
    scene = world.scene
    yaw = _yaw(world)
    # The footprint is measured in the object's own frame about its origin (its footprint centre).
    ahead = footprint_reach(scene.obj, yaw, d)
    behind = footprint_exit(scene.obj, yaw, -d)  # the point on the outline behind the centre
    gap = feature.offset - (centre @ d + ahead)
    if extra is None:
        extra = {"edge": OVERHANG, "wall": 0.01, "slope": ahead, "slot": ahead + 0.05}[feature.kind]
        extra *= scale
    return world.push(centre - behind * d, float(np.arctan2(d[1], d[0])), gap + extra)


def side_grasp_over_edge(
    world: PreGraspWorld, feature: Feature, depth: float = 0.04
) -> tuple[np.ndarray, np.ndarray]:
    """The grasp an overhang offers: approach horizontally against the push, fingers above and
    below the slab (closing axis vertical), the TCP ``depth`` in from the overhanging edge (or
    1 cm short of the table edge if it overhangs less)."""
    d = np.r_[np.asarray(feature.direction, dtype=float), 0.0]
    pts = world.object_points()
    along = pts[:, :2] @ d[:2]
    overhang = float(along.max() - feature.offset)
    tcp = pts[int(np.argmax(along))].copy()
    tcp[:2] -= min(depth, max(overhang - 0.01, 0.005)) * d[:2]
    tcp[2] = float(pts[:, 2].mean())
    z = -d
    y = np.array([0.0, 0.0, 1.0])
    return tcp, hand_frame(z, y)
