"""Geometry of observed point clouds that every layer uses: centres, thinning, clusters, fronts.

Pure numpy/scipy functions of world-frame points (metres); perception, the planner and the
pipeline share them, so they live at the bottom of the stack.
"""

from __future__ import annotations

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
