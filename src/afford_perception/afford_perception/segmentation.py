"""Object masks from depth alone: crop to the workspace, remove the table plane, cluster the rest.

A real camera gives no simulator masks. This module finds the objects standing on the table
from one depth image (or a world-frame point cloud) with no learning and no colour:

1. *Back-project* every valid pixel to the world frame (OpenCV pinhole, ``world_T_camera``),
   keeping each point's pixel so the clusters can be painted back as masks.
2. *Crop* to the workspace box. This is also what keeps the robot out of the result: with the
   default box (matched to the default table and the FR3's ready pose, ``afford_sim.scene``),
   ``x >= 0.15`` drops the base and shoulder (links 0-2 stay within 0.1 m of the base) and
   ``z <= 0.45`` drops the hand and fingers (0.48 m and up at the ready pose). An arm
   elsewhere, mid-task, is not excluded; masking it by its known pose is not done here.
3. *Fit the table*: RANSAC (open3d ``segment_plane``) on a voxel-thinned copy, accepting only a
   plane whose normal is within a tolerance of the expected up direction. A wall or a cabinet
   front that outnumbers the table is set aside and the next plane is tried.
4. *Keep what stands on it*: points in a height band above the plane (below it: the table's
   edges, the floor; far above it: whatever the crop let through).
5. *Cluster* (open3d ``cluster_dbscan``) on voxel centres, so the cost depends on the size of
   the objects, not on the image resolution; each point takes its voxel's cluster. A small
   cluster close to a much larger one is a piece of it that occlusion cut off (a handle seen
   behind its body) and is merged back.

Nothing assumes the table's height or the objects' positions; the up direction is the one
prior (a camera calibrated to the robot base knows it). Two objects that touch, or one inside
another, come out as one cluster.

Invalid depth: 0, NaN and +-Inf mean "no reading" (the RealSense driver writes 0; ROS float
depth images write NaN/Inf, REP 118). An image with no reading at all is an error, as is
negative depth or an integer (millimetre) image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

Vec3 = tuple[float, float, float]


class SegmentationError(ValueError):
    """The scene cannot be segmented: no table plane, or nothing standing on it."""


@dataclass(frozen=True)
class DepthSegmenterConfig:
    """Parameters of table-plane removal and clustering (metres unless noted).

    Attributes:
        voxel_size: Edge of the voxels the plane fit and the clustering run on. Larger is
            faster but merges objects closer than about two voxels.
        plane_distance: RANSAC inlier distance from the table plane; above depth noise (a
            RealSense D435 at 1 m: about 2 mm), below the thinnest object's height.
        plane_iterations: RANSAC iterations per plane tried.
        max_planes: Planes tried, largest first, before giving up on finding the table (walls
            and furniture fronts may be larger than the visible table top).
        up: World direction the table's normal should have (z up for a robot on a table).
        up_tolerance_deg: Largest angle (degrees) between a plane's normal and ``up`` for the
            plane to count as the table.
        min_height: Lowest height above the plane that counts as an object. Flat ware stands
            only a few millimetres proud of the table (a plate's well: about 5 mm), so this is
            kept just above ``plane_distance``'s noise band.
        max_height: Highest height above the plane that counts as an object; drops what hangs
            over the table (the hand) when the crop alone does not.
        cluster_eps: DBSCAN neighbourhood radius. Must exceed a voxel's diagonal so a surface
            sampled at ``voxel_size`` stays connected; objects closer than this merge.
        cluster_min_points: DBSCAN core-point density (neighbours within ``cluster_eps``, in
            voxels); lower keeps thin parts (handles) attached, higher rejects speckle.
        min_cluster_voxels: Clusters with fewer occupied voxels are noise (depth speckle,
            a sliver of an object at the image border). Counted in voxels, so the threshold
            does not depend on how far the camera is; applied after fragments are merged.
        fragment_gap: A cluster this close (nearest points) to one at least
            ``1 / fragment_ratio`` times its size is a fragment of it and joins it. One view
            splits objects where the near part hides the middle of the far part: a kettle's
            handle behind its body comes out 3-4 cm from the body's visible front. Objects
            placed closer than this still stay apart when both are of similar size.
        fragment_ratio: Largest size (in voxels) of a fragment relative to the cluster it
            joins; in (0, 1).
        workspace_min: (x, y, z) lower corner of the world-frame crop box.
        workspace_max: (x, y, z) upper corner of the crop box; see the module docstring for
            how the defaults keep the FR3 at its ready pose out.
        seed: Seed of open3d's RANSAC, so the same image always gives the same segments.
    """

    voxel_size: float = 0.005
    plane_distance: float = 0.003
    plane_iterations: int = 200
    max_planes: int = 3
    up: Vec3 = (0.0, 0.0, 1.0)
    up_tolerance_deg: float = 10.0
    min_height: float = 0.003
    max_height: float = 0.40
    cluster_eps: float = 0.012
    cluster_min_points: int = 4
    min_cluster_voxels: int = 20
    fragment_gap: float = 0.05
    fragment_ratio: float = 0.25
    workspace_min: Vec3 = (0.15, -0.6, -0.05)
    workspace_max: Vec3 = (1.0, 0.6, 0.45)
    seed: int = 0
    _up_unit: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("voxel_size", "plane_distance", "cluster_eps", "max_height"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of metres, got {value}")
        if not 0 <= self.min_height < self.max_height:
            raise ValueError(f"need 0 <= min_height < max_height, got {self.min_height}, {self.max_height}")
        if self.cluster_eps <= self.voxel_size * math.sqrt(3):
            raise ValueError(
                f"cluster_eps {self.cluster_eps} must exceed the voxel diagonal "
                f"{self.voxel_size * math.sqrt(3):.4f}, or a sampled surface falls apart into voxels"
            )
        if not (math.isfinite(self.fragment_gap) and self.fragment_gap >= 0):
            raise ValueError(f"fragment_gap must be >= 0 m (0: never merge), got {self.fragment_gap}")
        if not 0 < self.fragment_ratio < 1:
            raise ValueError(f"fragment_ratio must be in (0, 1), got {self.fragment_ratio}")
        if not 0 < self.up_tolerance_deg < 90:
            raise ValueError(f"up_tolerance_deg must be in (0, 90), got {self.up_tolerance_deg}")
        for name in ("plane_iterations", "max_planes", "cluster_min_points", "min_cluster_voxels"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        up = np.asarray(self.up, dtype=np.float64)
        if up.shape != (3,) or not np.all(np.isfinite(up)) or np.linalg.norm(up) < 1e-9:
            raise ValueError(f"up must be a non-zero 3-vector, got {self.up}")
        lo = np.asarray(self.workspace_min, dtype=np.float64)
        hi = np.asarray(self.workspace_max, dtype=np.float64)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(np.isfinite(np.r_[lo, hi])):
            raise ValueError(f"workspace corners must be finite (x, y, z), got {self.workspace_min}, "
                             f"{self.workspace_max}")
        if np.any(lo >= hi):
            raise ValueError(
                f"workspace box is empty: min {self.workspace_min} not below max {self.workspace_max}"
            )
        object.__setattr__(self, "_up_unit", up / np.linalg.norm(up))


@dataclass(frozen=True, eq=False)  # eq=False: array fields
class Segment:
    """One object found standing on the table.

    Attributes:
        points: (N, 3) world points of the object, at full resolution.
        indices: (N,) indices of those points in the input: flat pixel indices (row-major)
            for a depth image, row indices for a point cloud.
        mask: (H, W) bool mask of the object's pixels; ``None`` for point-cloud input.
        centroid: (3,) mean of ``points``.
        bounds: (2, 3) world axis-aligned bounding box, ``[min, max]``.
        height: Highest point's height above the table plane (m).
        plane: (4,) table plane ``(a, b, c, d)`` with ``a x + b y + c z + d = 0`` and the unit
            normal ``(a, b, c)`` pointing up; the same for every segment of one call.
    """

    points: np.ndarray
    indices: np.ndarray
    mask: np.ndarray | None
    centroid: np.ndarray
    bounds: np.ndarray
    height: float
    plane: np.ndarray

    @property
    def center(self) -> np.ndarray:
        """Middle of the bounding box: one camera sees one side, so the centroid sits on the
        near surface while the box middle is nearer the object's axis."""
        return 0.5 * (self.bounds[0] + self.bounds[1])

    def __len__(self) -> int:
        return len(self.points)


def depth_to_world(depth: np.ndarray, K: np.ndarray,
                   world_T_camera: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World points of the valid pixels of a depth image and their flat (row-major) indices.

    Args:
        depth: (H, W) float depth along the optical axis in metres; 0, NaN, Inf: no reading.
        K: 3x3 OpenCV intrinsics (pixel centres at integer coordinates).
        world_T_camera: 4x4 pose of the OpenCV camera frame (x right, y down, z forward).

    Raises:
        ValueError: on malformed inputs, negative depth, or an image with no valid pixel.
    """
    depth = np.asarray(depth)
    if depth.ndim != 2:
        raise ValueError(f"depth must be an (H, W) image, got shape {depth.shape}")
    if not np.issubdtype(depth.dtype, np.floating):
        raise ValueError(f"depth must be float metres, got {depth.dtype} (millimetre images: depth * 1e-3)")
    K = np.asarray(K, dtype=np.float64)
    world_T_camera = np.asarray(world_T_camera, dtype=np.float64)
    if K.shape != (3, 3) or not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0:
        raise ValueError(f"K must be a finite 3x3 intrinsics matrix with positive focal lengths, got\n{K}")
    if world_T_camera.shape != (4, 4) or not np.all(np.isfinite(world_T_camera)):
        raise ValueError(f"world_T_camera must be a finite 4x4 pose, got shape {world_T_camera.shape}")
    finite = np.isfinite(depth)
    if np.any(depth[finite] < 0):
        raise ValueError(f"depth has negative values (min {depth[finite].min():.3f} m); expected metres >= 0")
    valid = finite & (depth > 0)
    if not valid.any():
        raise ValueError(
            f"depth image {depth.shape} has no valid pixel ({int((~finite).sum())} NaN/Inf, "
            f"{int((depth[finite] == 0).sum())} zero): the camera saw nothing"
        )
    flat = np.flatnonzero(valid)
    v, u = np.divmod(flat, depth.shape[1])
    z = depth.ravel()[flat].astype(np.float64)
    cam = np.empty((flat.size, 3))
    cam[:, 0] = (u - K[0, 2]) * (z / K[0, 0])
    cam[:, 1] = (v - K[1, 2]) * (z / K[1, 1])
    cam[:, 2] = z
    return cam @ world_T_camera[:3, :3].T + world_T_camera[:3, 3], flat


def segment_objects(depth: np.ndarray, K: np.ndarray, world_T_camera: np.ndarray,
                    config: DepthSegmenterConfig | None = None) -> list[Segment]:
    """Segments of the objects standing on the table in one depth image, largest first.

    Raises:
        ValueError: malformed input or no valid depth (see :func:`depth_to_world`).
        SegmentationError: nothing in the workspace, no table plane, or nothing on the table.
    """
    points, flat = depth_to_world(depth, K, world_T_camera)
    return _segment(points, flat, np.shape(depth), config or DepthSegmenterConfig())


def segment_points(points: np.ndarray, config: DepthSegmenterConfig | None = None) -> list[Segment]:
    """Segments of the objects on the table in a world-frame (N, 3) cloud; masks are ``None``.

    Non-finite rows are ignored (a sensor's missing readings). ``Segment.indices`` index
    ``points``.
    """
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"points must be (N, 3), got {points.shape}")
    rows = np.flatnonzero(np.all(np.isfinite(points), axis=1))
    if rows.size == 0:
        raise ValueError(f"point cloud of {len(points)} rows has no finite point")
    return _segment(points[rows], rows, None, config or DepthSegmenterConfig())


def nearest_segment(segments: list[Segment], point: np.ndarray, max_distance: float | None = None) -> Segment:
    """The segment with a point closest to ``point`` (e.g. where a detector or the user says
    the object is).

    Raises:
        ValueError: no segments, or the closest is farther than ``max_distance``.
    """
    if not segments:
        raise ValueError("no segments to choose from")
    p = np.asarray(point, dtype=np.float64)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise ValueError(f"point must be a finite (x, y, z), got {point}")
    gaps = [float(np.min(np.linalg.norm(s.points - p, axis=1))) for s in segments]
    best = int(np.argmin(gaps))
    if max_distance is not None and gaps[best] > max_distance:
        raise ValueError(f"the nearest segment is {gaps[best]:.3f} m from {p.round(3).tolist()}, "
                         f"beyond max_distance {max_distance} m")
    return segments[best]


# --- internals ---------------------------------------------------------------------------------


def _segment(points: np.ndarray, ids: np.ndarray, shape: tuple[int, ...] | None,
             cfg: DepthSegmenterConfig) -> list[Segment]:
    lo, hi = np.asarray(cfg.workspace_min), np.asarray(cfg.workspace_max)
    inside = np.all((points >= lo) & (points <= hi), axis=1)
    points, ids = points[inside], ids[inside]
    if len(points) < 3:
        raise SegmentationError(
            f"only {len(points)} points inside the workspace box {cfg.workspace_min}..{cfg.workspace_max}: "
            "is world_T_camera right, and does the camera face the table?"
        )
    plane = table_plane(points, cfg)
    height = points @ plane[:3] + plane[3]
    above = (height > cfg.min_height) & (height <= cfg.max_height)
    if not above.any():
        raise SegmentationError(
            f"nothing stands on the table: no point between {cfg.min_height} and {cfg.max_height} m "
            f"above the plane {np.round(plane, 4).tolist()}"
        )
    points, ids, height = points[above], ids[above], height[above]
    labels, voxels_per_label = _cluster(points, cfg)
    segments = []
    for k in np.argsort(-voxels_per_label, kind="stable"):
        if voxels_per_label[k] < cfg.min_cluster_voxels:
            continue
        sel = labels == k
        pts = points[sel]
        mask = None
        if shape is not None:
            mask = np.zeros(shape, dtype=bool)
            mask.ravel()[ids[sel]] = True
        segments.append(Segment(points=pts, indices=ids[sel], mask=mask, centroid=pts.mean(axis=0),
                                bounds=np.stack([pts.min(axis=0), pts.max(axis=0)]),
                                height=float(height[sel].max()), plane=plane))
    if not segments:
        raise SegmentationError(
            f"{len(points)} points stand on the table but form no cluster of "
            f"{cfg.min_cluster_voxels}+ voxels ({cfg.voxel_size} m): speckle, or objects cut by the crop"
        )
    return segments


def table_plane(points: np.ndarray, cfg: DepthSegmenterConfig) -> np.ndarray:
    """The largest plane whose normal is near ``cfg.up``, as (a, b, c, d) with the normal up."""
    import open3d as o3d  # heavy import, paid on the first segmentation rather than at module load

    o3d.utility.random.seed(cfg.seed)
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points)).voxel_down_sample(cfg.voxel_size)
    rejected = []
    for _ in range(cfg.max_planes):
        if len(cloud.points) < 3:
            break
        model, inliers = cloud.segment_plane(cfg.plane_distance, 3, cfg.plane_iterations)
        model = np.asarray(model, dtype=np.float64).ravel()
        model /= np.linalg.norm(model[:3])
        if model[:3] @ cfg._up_unit < 0:
            model = -model
        tilt = math.degrees(math.acos(min(1.0, float(model[:3] @ cfg._up_unit))))
        if tilt <= cfg.up_tolerance_deg:
            return model
        rejected.append(f"{len(inliers)} points at {tilt:.0f} deg")
        cloud = cloud.select_by_index(inliers, invert=True)
    raise SegmentationError(
        f"no table plane: no plane within {cfg.up_tolerance_deg} deg of up {cfg.up} among the "
        f"{cfg.max_planes} largest (found: {'; '.join(rejected) or 'none, too few points'})"
    )


def _cluster(points: np.ndarray, cfg: DepthSegmenterConfig) -> tuple[np.ndarray, np.ndarray]:
    """Cluster label per point (-1: noise) and the voxel count of each cluster.

    DBSCAN runs on one centre per occupied voxel; every point inherits its voxel's label. The
    voxel grid is built here rather than with open3d's ``voxel_down_sample_and_trace``, whose
    trace comes back as one Python list per voxel.
    """
    import open3d as o3d

    keys = np.floor(points / cfg.voxel_size).astype(np.int64)
    _, voxel_of, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    voxel_of = voxel_of.ravel()
    centres = np.zeros((len(counts), 3))
    np.add.at(centres, voxel_of, points)
    centres /= counts[:, None]
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(centres))
    voxel_labels = _merge_fragments(
        centres, np.asarray(cloud.cluster_dbscan(cfg.cluster_eps, cfg.cluster_min_points)), cfg
    )
    n = int(voxel_labels.max()) + 1 if voxel_labels.size else 0
    voxels_per_label = np.bincount(voxel_labels[voxel_labels >= 0], minlength=n)
    return voxel_labels[voxel_of], voxels_per_label


def _merge_fragments(centres: np.ndarray, labels: np.ndarray, cfg: DepthSegmenterConfig) -> np.ndarray:
    """Relabel each small cluster near a much larger one as part of it (smallest first)."""
    from scipy.spatial import cKDTree

    if cfg.fragment_gap == 0 or labels.max(initial=-1) < 1:
        return labels
    labels = labels.copy()
    sizes = np.bincount(labels[labels >= 0])
    trees = {k: cKDTree(centres[labels == k]) for k in range(len(sizes))}
    for k in np.argsort(sizes, kind="stable"):
        hosts = [j for j in trees if j != k and sizes[k] <= cfg.fragment_ratio * sizes[j]]
        if not hosts:
            continue
        mine = centres[labels == k]
        gaps = [float(trees[j].query(mine, distance_upper_bound=cfg.fragment_gap)[0].min()) for j in hosts]
        best = int(np.argmin(gaps))
        if gaps[best] <= cfg.fragment_gap:
            host = hosts[best]
            labels[labels == k] = host
            sizes[host] += sizes[k]
            sizes[k] = 0
            trees[host] = cKDTree(centres[labels == host])
            del trees[k]
    return labels
