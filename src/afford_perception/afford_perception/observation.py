"""From one RGB-D frame to object clouds: what the perception node needs, in either world.

A :class:`Frame` is one colour image, the depth aligned to it (metres), its intrinsics and the
camera's pose in the robot base frame. It is what the simulator's render and a RealSense both
reduce to, so everything downstream is the same code for both.

Object masks come from one of two places:

- the simulator's ground-truth segmentation (:func:`masks_from_labels`: a label image whose
  index ``i + 1`` is the ``i``-th scene object, as ``/sim/ground_truth/segmentation`` carries
  it), which names every mask;
- a :class:`MaskSource` on a real camera, which gives unnamed masks: ``"depth"`` (table-plane
  removal and clustering, :mod:`afford_perception.segmentation`, the default) or ``"sam"`` (a
  SAM-family model from a local checkpoint, :mod:`afford_perception.sam`).

Limitation: no open-vocabulary detector ships with the stack, so on a real camera nothing says
which unnamed segment is the "mug" of the sentence. :func:`pick_target` chooses by a stated
rule (the largest object, or the one nearest the image centre) and the operator approves the
trial; the category is then the intent's, taken on trust.

:func:`object_cloud` back-projects a mask into an :class:`~afford_core.types.ObjectCloud`
in the base frame (the back-projection is :func:`afford_perception.segmentation.depth_to_world`,
shared with the segmenter) and drops the isolated points a mask edge picks up from the
background ("flying pixels" where depth jumps). :func:`scene_cloud` gives what stands above the
table, the planner's obstacles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from afford_core.registry import Registry
from afford_core.types import ObjectCloud
from afford_perception.segmentation import (
    DepthSegmenterConfig,
    depth_to_world,
    segment_objects,
    table_plane,
)

#: Largest deviation of ``base_T_camera``'s rotation from orthonormal (Frobenius norm of
#: ``R^T R - I``) and of its determinant from 1. A calibration stored with 6 decimals passes;
#: a scaled or sheared matrix (a projection matrix passed by mistake) does not.
RIGID_TOLERANCE = 1e-4


@dataclass(frozen=True, eq=False)  # eq=False: array fields
class Frame:
    """One RGB-D observation, validated on construction.

    Attributes:
        rgb: (H, W, 3) uint8 colour image, RGB order.
        depth: (H, W) float32 depth along the optical axis in metres, aligned to ``rgb``;
            0 means no return. NaN and +-Inf (how ROS float depth marks no return, REP 118)
            are stored as 0; negative depth is an error.
        K: (3, 3) intrinsics of ``rgb`` (OpenCV: pixel centres at integer coordinates).
        base_T_camera: (4, 4) rigid pose of the optical frame (z forward, x right, y down)
            in the robot base frame: the hand-eye calibration.
        stamp: Acquisition time in seconds (ROS time or the sensor's clock).
    """

    rgb: np.ndarray
    depth: np.ndarray
    K: np.ndarray
    base_T_camera: np.ndarray
    stamp: float

    def __post_init__(self) -> None:
        rgb = np.asarray(self.rgb)
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ValueError(f"rgb must be an (H, W, 3) uint8 image, got {rgb.shape} {rgb.dtype}")
        depth = np.asarray(self.depth)
        if depth.ndim != 2 or depth.shape != rgb.shape[:2]:
            raise ValueError(f"depth must be (H, W) = {rgb.shape[:2]} like rgb (aligned), got {depth.shape}")
        if not np.issubdtype(depth.dtype, np.floating):
            raise ValueError(
                f"depth must be float metres, got {depth.dtype}; convert millimetre images with "
                "depth_from_millimetres()"
            )
        depth = depth.astype(np.float32, copy=True)
        depth[~np.isfinite(depth)] = 0.0
        if np.any(depth < 0):
            raise ValueError(f"depth has negative values (min {depth.min():.3f} m); expected metres >= 0")
        K = np.array(self.K, dtype=np.float64)
        if K.shape != (3, 3) or not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0:
            raise ValueError(
                f"K must be a finite 3x3 intrinsics matrix with positive focal lengths, got\n{K}"
            )
        pose = np.array(self.base_T_camera, dtype=np.float64)
        if pose.shape != (4, 4) or not np.all(np.isfinite(pose)):
            raise ValueError(f"base_T_camera must be a finite 4x4 pose, got shape {pose.shape}")
        rot = pose[:3, :3]
        if (
            not np.allclose(pose[3], (0.0, 0.0, 0.0, 1.0), atol=RIGID_TOLERANCE)
            or np.linalg.norm(rot.T @ rot - np.eye(3)) > RIGID_TOLERANCE
            or abs(np.linalg.det(rot) - 1.0) > RIGID_TOLERANCE
        ):
            raise ValueError(
                f"base_T_camera must be a rigid transform (rotation and translation), got\n{pose}"
            )
        stamp = float(self.stamp)
        if not math.isfinite(stamp):
            raise ValueError(f"stamp must be a finite time in seconds, got {self.stamp}")
        for name, value in (("rgb", rgb), ("depth", depth), ("K", K), ("base_T_camera", pose)):
            value.setflags(write=False)  # a frame is shared between consumers: nobody edits it
            object.__setattr__(self, name, value)
        object.__setattr__(self, "stamp", stamp)

    @property
    def shape(self) -> tuple[int, int]:
        """(H, W) of the images."""
        return (int(self.depth.shape[0]), int(self.depth.shape[1]))

    @property
    def valid(self) -> np.ndarray:
        """(H, W) bool: pixels with a depth return."""
        return self.depth > 0


def depth_from_millimetres(depth_u16: np.ndarray, scale: float = 1e-3) -> np.ndarray:
    """Float32 metres from a 16-bit depth image (16UC1, as RealSense and the contract publish it).

    Args:
        depth_u16: (H, W) uint16 depth in sensor units; 0 = no return (stays 0).
        scale: Metres per unit (0.001 for millimetres; a RealSense reports its own
            ``depth_units``, 0.001 on the D400 series by default).
    """
    depth = np.asarray(depth_u16)
    if depth.ndim != 2 or depth.dtype != np.uint16:
        raise ValueError(f"expected an (H, W) uint16 depth image, got {depth.shape} {depth.dtype}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be positive metres per unit, got {scale}")
    return (depth.astype(np.float32) * np.float32(scale)).astype(np.float32)


def masks_from_labels(labels: np.ndarray, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Named (H, W) bool masks from a ground-truth label image: index ``i + 1`` is ``names[i]``.

    Every name gets a mask (empty when the object is out of view). A label beyond ``names``
    means the label image and the name list come from different scenes (a stale object list
    after a reset): that is an error rather than a silently dropped object.
    """
    labels = np.asarray(labels)
    if labels.ndim != 2 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be an (H, W) integer image, got {labels.shape} {labels.dtype}")
    names = list(names)
    if len(set(names)) != len(names):
        raise ValueError(f"object names must be unique, got {names}")
    if labels.size and (labels.min() < 0 or labels.max() > len(names)):
        raise ValueError(
            f"label image holds indices {int(labels.min())}..{int(labels.max())} but only {len(names)} "
            "object names were given (0 = none, i + 1 = names[i]): are labels and names from the same scene?"
        )
    return {name: labels == i + 1 for i, name in enumerate(names)}


@dataclass(frozen=True)
class CloudConfig:
    """How a mask becomes an object cloud.

    Attributes:
        min_points: Fewest points (after outlier removal) that make a usable cloud; grounding
            and grasp sampling on fewer are guesses. A mug 0.8 m away covers ~1,500 pixels at
            640x480; 50 is a sliver at the image border.
        outlier_neighbors: k of the statistical outlier test: a point is judged by its mean
            distance to its k nearest neighbours. 0 disables the test.
        outlier_std_ratio: A point is dropped when that mean distance exceeds the cloud's mean
            by this many standard deviations. Mask edges that bleed onto the background give
            points far behind the object, isolated in 3-D though adjacent in the image.
    """

    min_points: int = 50
    outlier_neighbors: int = 8
    outlier_std_ratio: float = 2.5

    def __post_init__(self) -> None:
        if self.min_points < 1:
            raise ValueError(f"min_points must be >= 1, got {self.min_points}")
        if self.outlier_neighbors < 0:
            raise ValueError(f"outlier_neighbors must be >= 0 (0: off), got {self.outlier_neighbors}")
        if not (math.isfinite(self.outlier_std_ratio) and self.outlier_std_ratio > 0):
            raise ValueError(f"outlier_std_ratio must be positive, got {self.outlier_std_ratio}")


def remove_outliers(points: np.ndarray, neighbors: int, std_ratio: float) -> np.ndarray:
    """Boolean keep-mask of ``points`` (N, 3) by the statistical outlier test (see
    :class:`CloudConfig`); keeps everything when there are too few points to judge."""
    if neighbors <= 0 or len(points) <= neighbors + 1:
        return np.ones(len(points), dtype=bool)
    from scipy.spatial import cKDTree

    dist, _ = cKDTree(points).query(points, k=neighbors + 1)  # column 0 is the point itself
    mean = dist[:, 1:].mean(axis=1)
    return mean <= mean.mean() + std_ratio * mean.std()


def object_cloud(
    frame: Frame, mask: np.ndarray, category: str, config: CloudConfig | None = None
) -> ObjectCloud:
    """The object's observed points in the base frame, from its mask in ``frame``.

    Pixels without depth are dropped, then isolated points (see :class:`CloudConfig`).
    ``object_center`` is the middle of the points' bounding box: one camera sees the near side,
    so the centroid lies on the surface, while the box middle lies inside the object, which is
    what orienting normals outward needs.

    Raises:
        ValueError: the mask is not (H, W) bool, or it gives fewer than ``min_points`` points
            (the message says how many pixels the mask had and how many had depth).
    """
    cfg = config or CloudConfig()
    mask = np.asarray(mask)
    if mask.shape != frame.shape or mask.dtype != np.bool_:
        raise ValueError(f"mask must be an (H, W) = {frame.shape} bool image, got {mask.shape} {mask.dtype}")
    with_depth = mask & frame.valid
    pixels, returns = int(mask.sum()), int(with_depth.sum())
    if returns < cfg.min_points:
        raise ValueError(
            f"too few points for {category!r}: its mask has {pixels} pixels, {returns} with depth, "
            f"need {cfg.min_points} (out of view, occluded, too far, or a surface the sensor cannot see)"
        )
    points, _ = depth_to_world(np.where(with_depth, frame.depth, 0.0), frame.K, frame.base_T_camera)
    points = points[remove_outliers(points, cfg.outlier_neighbors, cfg.outlier_std_ratio)]
    if len(points) < cfg.min_points:
        raise ValueError(
            f"too few points for {category!r}: {len(points)} of {returns} remain after outlier removal, "
            f"need {cfg.min_points}"
        )
    center = 0.5 * (points.min(axis=0) + points.max(axis=0))
    return ObjectCloud(points=points, category=category, object_center=center)


def scene_cloud(
    frame: Frame,
    exclude: np.ndarray | None = None,
    min_height: float = 0.01,
    config: DepthSegmenterConfig | None = None,
    voxel_size: float = 0.005,
) -> np.ndarray:
    """Points (N, 3) in the base frame standing above the table plane: the planner's obstacles.

    Args:
        frame: The observation.
        exclude: (H, W) bool pixels to leave out (the object about to be grasped).
        min_height: Height above the fitted table plane (m) below which points are the table
            itself (the planner models the table as a box of its own).
        config: Workspace crop and plane fit (``DepthSegmenterConfig``); the crop keeps the
            robot at its ready pose out. An arm elsewhere in view is not removed here.
        voxel_size: Points are thinned to one (the mean) per voxel of this edge (m), which is
            finer than any collision margin and bounds the octree's size; 0 keeps every point.

    Raises:
        ValueError: no valid depth, or a malformed ``exclude``.
        SegmentationError: no table plane in the workspace box.
    """
    cfg = config or DepthSegmenterConfig()
    if not (math.isfinite(min_height) and min_height >= 0):
        raise ValueError(f"min_height must be >= 0 m, got {min_height}")
    if not (math.isfinite(voxel_size) and voxel_size >= 0):
        raise ValueError(f"voxel_size must be >= 0 m (0: no thinning), got {voxel_size}")
    if exclude is not None:
        exclude = np.asarray(exclude)
        if exclude.shape != frame.shape or exclude.dtype != np.bool_:
            raise ValueError(f"exclude must be an (H, W) = {frame.shape} bool image, got {exclude.shape}")
    points, flat = depth_to_world(frame.depth, frame.K, frame.base_T_camera)
    lo, hi = np.asarray(cfg.workspace_min), np.asarray(cfg.workspace_max)
    inside = np.all((points >= lo) & (points <= hi), axis=1)
    # The plane is fitted with the excluded object still in: it does not change the table.
    plane = table_plane(points[inside], cfg)
    if exclude is not None:
        inside &= ~exclude.ravel()[flat]
    points = points[inside]
    points = points[points @ plane[:3] + plane[3] > min_height]
    if voxel_size > 0 and len(points):
        keys = np.floor(points / voxel_size).astype(np.int64)
        _, voxel_of, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
        sums = np.zeros((len(counts), 3))
        np.add.at(sums, voxel_of.ravel(), points)
        points = sums / counts[:, None]
    return points


# --- unnamed masks on a real camera ------------------------------------------------------------


@runtime_checkable
class MaskSource(Protocol):
    """Finds object masks in a frame without naming them (a real camera has no labels)."""

    def segments(self, frame: Frame) -> list[np.ndarray]:
        """(H, W) bool masks of the objects in ``frame``, one per object, largest first."""
        ...


class DepthMaskSource:
    """Masks from depth alone: table-plane removal and clustering
    (:func:`afford_perception.segmentation.segment_objects`).

    Args:
        config: The segmenter's parameters; ``DepthSegmenterConfig()`` by default.
        **overrides: Fields of ``DepthSegmenterConfig`` to change from the defaults (as a
            parameter file gives them); not allowed together with ``config``.

    ``segments`` raises ``SegmentationError`` when there is no table or nothing on it: on a real
    robot that is a miscalibrated camera or an empty table, which the operator should hear.
    """

    def __init__(self, config: DepthSegmenterConfig | None = None, **overrides: Any) -> None:
        if config is not None and overrides:
            raise ValueError("give either config or individual DepthSegmenterConfig fields, not both")
        self.config = config or DepthSegmenterConfig(**overrides)

    def segments(self, frame: Frame) -> list[np.ndarray]:
        found = segment_objects(frame.depth, frame.K, frame.base_T_camera, self.config)
        return [s.mask for s in found if s.mask is not None]


#: Mask sources by name. ``sam`` is registered lazily: its module imports torch and
#: transformers, and it builds on this one (``DepthMaskSource``), so this module must not import it.
MASK_SOURCES: Registry[Callable[..., MaskSource]] = Registry("mask source")
MASK_SOURCES.register("depth", DepthMaskSource)
MASK_SOURCES.register_lazy("sam", "afford_perception.sam:SamMaskSource")


def make_mask_source(name: str = "depth", **kwargs: Any) -> MaskSource:
    """A mask source by name: ``"depth"`` (:class:`DepthMaskSource`) or ``"sam"``
    (:class:`afford_perception.sam.SamMaskSource`, which needs ``checkpoint=`` a local path);
    ``kwargs`` go to its constructor.

    Raises:
        KeyError: an unknown name (the message lists the known ones).
    """
    return MASK_SOURCES.get(name)(**kwargs)


#: Rules accepted by :func:`pick_target`.
TARGET_RULES: tuple[str, ...] = ("largest", "nearest_image_center")


def pick_target(segments: Sequence[np.ndarray], frame: Frame, rule: str = "largest") -> int:
    """Index of the segment taken as the task's target when nothing names the segments.

    Rules:
        ``largest``: the largest visible surface in square metres, each pixel counting the
            area it covers at its depth (``z^2 / (fx fy)``), so a near small object does not
            beat a far large one by pixel count. Pixels without depth do not count.
        ``nearest_image_center``: the segment whose pixel centroid is closest to the image
            centre: the operator points the camera (or the arm) at the object.

    Ties go to the lower index, so the choice is repeatable. This is a documented stopgap: no
    open-vocabulary detector ships with the stack, and the operator approves every real trial.

    Raises:
        ValueError: no segments, an unknown rule, a mask of the wrong shape, or (``largest``)
            no segment with any depth.
    """
    if rule not in TARGET_RULES:
        raise ValueError(f"unknown target rule {rule!r}; known: {', '.join(TARGET_RULES)}")
    if len(segments) == 0:
        raise ValueError("no segments to pick a target from: nothing was found on the table")
    masks = [np.asarray(m) for m in segments]
    for i, m in enumerate(masks):
        if m.shape != frame.shape or m.dtype != np.bool_:
            raise ValueError(
                f"segment {i} must be an (H, W) = {frame.shape} bool mask, got {m.shape} {m.dtype}"
            )
    if rule == "largest":
        pixel_area = frame.depth.astype(np.float64) ** 2 / (frame.K[0, 0] * frame.K[1, 1])
        areas = np.array([pixel_area[m].sum() for m in masks])
        if not np.any(areas > 0):
            raise ValueError("no segment has any depth: cannot tell which is largest")
        return int(np.argmax(areas))
    h, w = frame.shape
    centre = np.array([(h - 1) / 2.0, (w - 1) / 2.0])
    gaps = [float(np.linalg.norm(np.argwhere(m).mean(axis=0) - centre)) if m.any() else np.inf for m in masks]
    if not np.isfinite(min(gaps)):
        raise ValueError("every segment is empty")
    return int(np.argmin(gaps))
