"""Geometry of observed point clouds that every layer uses: centres, thinning, clusters, fronts.

Pure numpy/scipy functions of world-frame points (metres); perception, the planner and the
pipeline share them, so they live at the bottom of the stack.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage


def perceived_center(points: np.ndarray) -> np.ndarray:
    """Centre of an observed object: the middle of its bounding box (one camera sees one side,
    so the centroid would sit on the near surface)."""
    return 0.5 * (points.min(axis=0) + points.max(axis=0))


SPOUT_MIN_OFFSET = 0.02
"""A pouring part whose centre is farther than this (m) from the container's axis is a spout
(it sets the side to pour from); nearer, it is a rim all round."""


def spout_direction(use_points: np.ndarray, center: np.ndarray) -> np.ndarray | None:
    """Horizontal unit direction from a container's centre to its pouring part when that part
    is off to one side (a kettle's spout), None when it lies all round the axis (a cup's rim)
    or was not seen."""
    pts = np.asarray(use_points, dtype=float).reshape(-1, 3)
    if len(pts) == 0:
        return None
    offset = pts[:, :2].mean(axis=0) - np.asarray(center, dtype=float)[:2]
    norm = float(np.linalg.norm(offset))
    if norm <= SPOUT_MIN_OFFSET:
        return None
    return np.array([offset[0] / norm, offset[1] / norm, 0.0])


def front_normal(handle: np.ndarray, face: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """Horizontal outward normal of the front a handle stands on: the plane of the face's
    points (a drawer front) turned towards the handle; from the object's centre through the
    handle when the face was not seen; zero when no handle point was seen (the episode then
    abstains for want of a grasp region)."""
    if len(handle) == 0:
        return np.zeros(3)
    if len(face) >= 30:
        n = np.linalg.svd(face - face.mean(0), full_matrices=False)[2][-1]
        if np.dot(n, handle.mean(0) - face.mean(0)) < 0:
            n = -n
    else:
        n = handle.mean(0) - perceived_center(whole)
    n = np.array([n[0], n[1], 0.0])
    return n / (np.linalg.norm(n) + 1e-9)


@dataclass(frozen=True)
class Hinge:
    """A door's vertical hinge as perception estimates it (world frame).

    Attributes:
        point: A point on the hinge line (3,).
        axis: Unit vertical direction about which a positive turn swings the door open
            (moves its handle out of the front, :func:`door_hinge`).
        normal: Horizontal outward normal of the door's face (the side its handle is on).
        opened: The door's angle from the front it closes (rad, 0 = shut).
        radius: Horizontal distance from the hinge line to the handle (m).
    """

    point: np.ndarray
    axis: np.ndarray
    normal: np.ndarray
    opened: float
    radius: float


def _rectangle_normals(xy: np.ndarray) -> np.ndarray:
    """The four outward normals (4, 2) of the smallest-area rectangle round ``xy``: the sides
    of a box-shaped body seen from above (one of its hull's edges lies on such a rectangle)."""
    from scipy.spatial import ConvexHull

    hull = xy[ConvexHull(xy).vertices]
    best, best_area = np.array([1.0, 0.0]), np.inf
    for a, b in zip(hull, np.roll(hull, -1, axis=0), strict=True):
        e = (b - a) / (np.linalg.norm(b - a) + 1e-12)
        n = np.array([-e[1], e[0]])
        area = float(np.ptp(hull @ e) * np.ptp(hull @ n))
        if area < best_area:
            best, best_area = e, area
    e, n = best, np.array([-best[1], best[0]])
    return np.array([e, -e, n, -n])


def _face_line(xy: np.ndarray, tol: float, tries: int = 300) -> tuple[np.ndarray, float]:
    """The line through most of ``xy`` (within ``tol``): a consensus over lines through seeded
    pairs of points, refined by a fit to its inliers. Returns its unit normal and offset. A
    least-squares fit alone would tilt across two parallel faces side by side (a shut door and
    the panel a door's thickness behind it)."""
    rng = np.random.default_rng(0)
    best, best_count = (np.array([1.0, 0.0]), 0.0), -1
    for _ in range(tries):
        a, b = xy[rng.choice(len(xy), 2, replace=False)]
        if np.linalg.norm(b - a) < 0.02:
            continue
        e = (b - a) / np.linalg.norm(b - a)
        n = np.array([-e[1], e[0]])
        count = int(np.sum(np.abs(xy @ n - a @ n) < tol))
        if count > best_count:
            best, best_count = (n, float(a @ n)), count
    n, off = best
    inl = xy[np.abs(xy @ n - off) < tol]
    if len(inl) >= 3:
        n = np.linalg.svd(inl - inl.mean(0), full_matrices=False)[2][-1]
        n = n if np.dot(n, best[0]) >= 0 else -n
        off = float(np.median(inl @ n))
    return n, off


def _run(s: np.ndarray, start: float, step: float, gap: float) -> float:
    """How far from ``start`` the values ``s`` continue without a gap wider than ``gap``,
    walking in the direction of ``step`` (+1 or -1); the end reached."""
    ahead = np.sort(step * (s - start))
    ahead = ahead[ahead >= 0]
    if not len(ahead):
        return start
    gaps = np.nonzero(np.diff(np.r_[0.0, ahead]) > gap)[0]
    end = ahead[gaps[0] - 1] if len(gaps) and gaps[0] > 0 else (0.0 if len(gaps) else ahead[-1])
    return start + step * float(end)


def door_hinge(handle: np.ndarray, whole: np.ndarray, near: float = 0.12, apart: float = 0.015,
               band: float = 0.01, gap: float = 0.02) -> Hinge | None:
    """Where a hinged door's vertical hinge is, from what one camera sees of its handle and of
    the whole object; None when too little was seen or the door stands almost square to the
    front.

    Geometry only, so that it holds whatever a grounding called the door: the door's face is
    the plane through the object's points beside the handle (within ``near``, at the handle's
    heights, more than ``apart`` from its points), at the front-most of the planes there (a
    shut door stands a door's thickness before the body's front beside it). Along that face,
    at the handle's heights, the points continue without a ``gap`` from the handle to the
    door's edges: the far edge is the hinge side (a handle sits at the free edge, where a pull
    turns the door most easily). The rest of the object is the body; its front is the side of
    the smallest rectangle round its points, seen from above, that the door stands beyond. The
    hinge line is where the door's face, followed from its hinge-side edge along its own normal,
    meets that front: whichever face of the door was seen, its hinge-side edge lies on the line
    the door turns about or one door thickness out along the door's normal, which that step
    removes. The door's angle is the one between its normal and the front's.
    """
    from scipy.spatial import cKDTree

    handle, whole = (np.asarray(p, dtype=float).reshape(-1, 3) for p in (handle, whole))
    if len(handle) < 10 or len(whole) < 100:
        return None
    hc = handle.mean(axis=0)
    z_lo, z_hi = np.quantile(handle[:, 2], [0.05, 0.95])
    off_handle = ~np.isfinite(cKDTree(handle).query(whole, distance_upper_bound=apart)[0])
    level = (whole[:, 2] >= z_lo) & (whole[:, 2] <= z_hi) & off_handle
    local = whole[level & (np.linalg.norm(whole[:, :2] - hc[:2], axis=1) < near)]
    if len(local) < 30:
        return None
    n, face = _face_line(local[:, :2], band / 2)
    n_d = np.array([n[0], n[1], 0.0])
    if np.dot(n_d[:2], hc[:2]) < face:
        n_d, face = -n_d, -face  # towards the handle: the door's outside
    t_d = np.array([-n_d[1], n_d[0], 0.0])
    on_face = level & (np.abs(whole @ n_d - face) < band)
    s = whole[on_face] @ t_d
    s_h = float(hc @ t_d)
    ends = [_run(s, s_h, step, gap) for step in (1.0, -1.0)]
    far = int(np.argmax([abs(e - s_h) for e in ends]))
    s_edge = ends[far]
    if abs(s_edge - s_h) < 0.1:  # no door face runs from the handle
        return None
    if far == 0:
        t_d = -t_d  # from the hinge towards the handle
        s_edge, s_h, s = -s_edge, -s_h, -s
    run = (s >= s_edge - 0.005) & (s <= s_h + 0.06)
    door_face = whole[on_face][run]
    edge = door_face[(door_face @ t_d) <= s_edge + 0.01].mean(axis=0)
    # Everything of the door (its face, edges, a seen inside) lies within its thickness behind
    # the face and within the run: the rest, the handle aside, is the body.
    depth = face - whole @ n_d
    along = whole @ t_d
    in_door = (depth > -band) & (depth < 0.04) & (along >= s_edge - 0.01) & (along <= s_h + 0.06)
    body = whole[~in_door & off_handle]
    if len(body) < 30:
        return None
    normals = _rectangle_normals(body[:, :2])
    beyond = [float(np.median(door_face[:, :2] @ m) - np.quantile(body[:, :2] @ m, 0.99)) for m in normals]
    n_b = np.append(normals[int(np.argmax(beyond))], 0.0)
    front = float(np.quantile(body @ n_b, 0.99))
    cos = float(np.dot(n_d, n_b))
    if cos < 0.2:  # the door stands almost square to the front: its face meets it at no clear point
        return None
    point = edge - (float(edge @ n_b) - front) / cos * n_d
    point[2] = float(hc[2])
    axis = np.cross(t_d, n_d)
    return Hinge(point=point, axis=axis / np.linalg.norm(axis), normal=n_d,
                 opened=float(np.arccos(min(cos, 1.0))), radius=float(np.linalg.norm((hc - point)[:2])))


def voxel_down(points: np.ndarray, voxel: float) -> np.ndarray:
    """One point per occupied voxel (the first seen): thins a dense depth cloud evenly."""
    if len(points) == 0:
        return points
    keys = np.floor(points / voxel).astype(np.int64)
    _, first = np.unique(keys, axis=0, return_index=True)
    return points[np.sort(first)]


def cluster_nearest(points: np.ndarray, to: np.ndarray, radius: float = 0.015) -> np.ndarray:
    """The connected cluster of ``points`` (single linkage at ``radius``) nearest ``to``."""
    if len(points) < 3:
        return points
    sub = points if len(points) <= 3000 else points[np.linspace(0, len(points) - 1, 3000).astype(int)]
    labels = fcluster(linkage(sub, "single"), radius, criterion="distance")
    best = min(set(labels), key=lambda k: float(np.min(np.linalg.norm(sub[labels == k] - to, axis=1))))
    return sub[labels == best]
