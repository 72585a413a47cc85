"""Realistic object clouds from procedural assets, without the simulator, and the grounding benchmark.

A grounding source that only works on complete model clouds is useless on the robot, which sees
one side of an object from one camera, with depth noise and holes. These helpers make such
clouds from an asset (exact labels kept, so any source can be scored against the oracle):

1. sample the asset's surface (area-uniform, labelled) and place it at a world pose;
2. keep the samples the camera sees: a ray from the camera to each sample is cast against the
   asset's own mesh (open3d's ray-casting scene), and a sample hidden behind other geometry
   (the far wall of a mug, the inside of a drawer) is dropped; samples seen at a grazing angle
   are dropped too, as a depth camera returns nothing there;
3. add Gaussian noise along the viewing ray (a depth camera errs in depth, not sideways) and
   drop a random fraction of the rest (speckle, specularities).

``evaluate`` runs a source over categories x seeds x views and reports IoU per (category, part).
The asset library lives in ``afford_sim``; it is imported lazily so that perception's core does
not depend on the simulator package.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from afford_core.ontology import category
from afford_core.types import ObjectCloud
from afford_perception.grounding.base import GroundingSource, region_mask

AssetFactory = Callable[[str, int], Any]


def yaw_pose(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """4x4 pose of an upright object: its asset frame at (x, y, z), rotated ``yaw`` about world z."""
    c, s = math.cos(yaw), math.sin(yaw)
    pose = np.eye(4)
    pose[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    pose[:3, 3] = (x, y, z)
    return pose


def camera_position(target: np.ndarray, distance: float, azimuth: float, elevation: float) -> np.ndarray:
    """A camera ``distance`` m from ``target`` at world ``azimuth`` (from +x, rad) and ``elevation``
    (above the horizontal, rad)."""
    ce = math.cos(elevation)
    offset = np.array([ce * math.cos(azimuth), ce * math.sin(azimuth), math.sin(elevation)])
    return np.asarray(target, dtype=float) + distance * offset


def _transform(pose: np.ndarray, points: np.ndarray, normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pose = np.asarray(pose, dtype=float)
    if pose.shape != (4, 4):
        raise ValueError(f"pose must be a 4x4 homogeneous transform, got shape {pose.shape}")
    return points @ pose[:3, :3].T + pose[:3, 3], normals @ pose[:3, :3].T


class Occluder:
    """An asset's mesh at a world pose, for visibility tests (open3d ray casting).

    Built once per cloud, so a full scan from many cameras pays for one bounding-volume tree.
    """

    def __init__(self, asset: Any, pose: np.ndarray, q: dict[str, float] | None = None) -> None:
        import open3d as o3d  # heavy; only the view helpers need it

        mesh = asset.mesh(q)
        pose = np.asarray(pose, dtype=float)
        if pose.shape != (4, 4):
            raise ValueError(f"pose must be a 4x4 homogeneous transform, got shape {pose.shape}")
        self.vertices = np.asarray(mesh.vertices) @ pose[:3, :3].T + pose[:3, 3]
        self._o3d = o3d
        self._scene = o3d.t.geometry.RaycastingScene()
        faces = np.ascontiguousarray(mesh.faces, dtype=np.uint32)
        self._scene.add_triangles(o3d.core.Tensor.from_numpy(self.vertices.astype(np.float32)),
                                  o3d.core.Tensor.from_numpy(faces))

    def unoccluded(self, points: np.ndarray, camera_pos: np.ndarray, tolerance: float = 1e-3) -> np.ndarray:
        """Points on the surface whose ray from ``camera_pos`` hits nothing else first (within
        ``tolerance`` of the point)."""
        rays_d = points - camera_pos
        dist = np.linalg.norm(rays_d, axis=1)
        rays = np.hstack([np.broadcast_to(camera_pos, points.shape), rays_d / dist[:, None]])
        hits = self._scene.cast_rays(self._o3d.core.Tensor.from_numpy(rays.astype(np.float32)))
        t_hit = hits["t_hit"].numpy()
        return t_hit >= dist - tolerance

    def seen(self, points: np.ndarray, normals: np.ndarray, camera_pos: np.ndarray,
             grazing_cos: float = 0.0) -> np.ndarray:
        """Points a camera sees: unoccluded and facing it more than at grazing incidence (which
        also drops the back faces that the ray test lets through within its tolerance at edges)."""
        rays = points - camera_pos
        rays /= np.linalg.norm(rays, axis=1, keepdims=True)
        facing = np.einsum("ij,ij->i", rays, normals) < -grazing_cos
        out = np.zeros(len(points), dtype=bool)
        out[facing] = self.unoccluded(points[facing], camera_pos)
        return out


def full_cloud(asset: Any, pose: np.ndarray, n: int = 4096, seed: int = 0,
               q: dict[str, float] | None = None, voxel: float | None = None) -> ObjectCloud:
    """The asset's complete outer surface at ``pose``: what a full scan from all around sees.

    ``surface_cloud`` samples every face of every convex piece, including faces buried inside
    the object where pieces meet (between the wedges of a wall, under a lid); no sensor sees
    those, so only samples visible from some camera on a ring around and above the object are
    kept. No noise, no dropout, and nothing below the support (the table hides the underside).
    ``voxel`` downsamples as in :func:`single_view`.
    """
    pts, nrm, lab = asset.surface_cloud(n, seed=seed, q=q)
    pts, nrm = _transform(pose, pts, nrm)
    occluder = Occluder(asset, pose, q)
    lo, hi = occluder.vertices.min(axis=0), occluder.vertices.max(axis=0)
    centre = 0.5 * (lo + hi)
    reach = 2.0 * float(np.linalg.norm(hi - lo)) + 0.3
    seen = np.zeros(len(pts), dtype=bool)
    for elevation in (math.radians(15), math.radians(45), math.radians(89)):
        for azimuth in np.linspace(0, 2 * math.pi, 8, endpoint=False):
            todo = np.flatnonzero(~seen)
            cam = camera_position(centre, reach, azimuth, elevation)
            seen[todo] = occluder.seen(pts[todo], nrm[todo], cam)
    pts, nrm, lab = _downsample(pts[seen], nrm[seen], lab[seen], voxel)
    return ObjectCloud(points=pts, category=asset.category, normals=nrm, part_labels=lab,
                       part_names=category(asset.category).parts)


def _downsample(pts: np.ndarray, nrm: np.ndarray, lab: np.ndarray,
                voxel: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One point per ``voxel``-sided cube (the first drawn), or everything when ``voxel`` is None."""
    if voxel is None:
        return pts, nrm, lab
    if voxel <= 0:
        raise ValueError(f"voxel must be positive, got {voxel}")
    _, first = np.unique(np.floor(pts / voxel).astype(np.int64), axis=0, return_index=True)
    first = np.sort(first)
    return pts[first], nrm[first], lab[first]


def single_view(
    asset: Any,
    pose_4x4: np.ndarray,
    camera_pos: np.ndarray,
    noise_std: float = 0.002,
    dropout: float = 0.1,
    n: int = 4096,
    seed: int = 0,
    grazing_cos: float = 0.1,
    q: dict[str, float] | None = None,
    voxel: float | None = None,
) -> ObjectCloud:
    """What one depth camera at ``camera_pos`` sees of ``asset`` placed at ``pose_4x4``.

    Args:
        asset: An ``afford_sim.assets.Asset`` (anything with ``category``, ``mesh(q)`` and
            ``surface_cloud(n, seed, q)``).
        pose_4x4: World pose of the asset frame.
        camera_pos: (3,) camera centre in the world.
        noise_std: Standard deviation (m) of the depth noise along each viewing ray.
        dropout: Fraction of visible points removed at random, in [0, 1).
        n: Surface samples drawn before the visibility test; a view keeps roughly 30-50 % of them.
        seed: Seeds the surface samples, the noise and the dropout.
        grazing_cos: Points whose outward normal does not face the camera with a cosine of at
            least this are dropped (depth cameras return nothing at grazing incidence).
        q: Joint values of an articulated asset (default closed).
        voxel: If given, keep one point per cube of this side (m), as a perception pipeline
            downsamples a depth cloud; draw ``n`` generously and let this set the density.

    Returns:
        An ``ObjectCloud`` in the world frame whose ``part_labels`` are the exact labels of the
        surviving points, so sources can be scored against the oracle.

    Raises:
        ValueError: bad parameters, or the camera sees nothing of the object.
    """
    if noise_std < 0:
        raise ValueError(f"noise_std must be >= 0, got {noise_std}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    camera_pos = np.asarray(camera_pos, dtype=float).reshape(3)
    rng = np.random.default_rng(seed)
    pts, nrm, lab = asset.surface_cloud(n, seed=seed, q=q)
    pts, nrm = _transform(pose_4x4, pts, nrm)
    keep = Occluder(asset, pose_4x4, q).seen(pts, nrm, camera_pos, grazing_cos)
    keep &= rng.random(len(pts)) >= dropout
    rays = pts - camera_pos
    rays /= np.linalg.norm(rays, axis=1, keepdims=True)
    if not keep.any():
        raise ValueError(f"the camera at {camera_pos.round(3).tolist()} sees nothing of {asset.category}")
    pts, nrm, lab, rays = pts[keep], nrm[keep], lab[keep], rays[keep]
    pts = pts + rays * rng.normal(0.0, noise_std, size=(len(pts), 1))
    pts, nrm, lab = _downsample(pts, nrm, lab, voxel)
    return ObjectCloud(points=pts, category=asset.category, normals=nrm, part_labels=lab,
                       part_names=category(asset.category).parts)


# --- benchmark ---------------------------------------------------------------------------------


def iou(pred_mask: np.ndarray, true_mask: np.ndarray) -> float:
    """Intersection over union of two boolean point masks; 1.0 when both are empty (agreement)."""
    pred, true = np.asarray(pred_mask, dtype=bool), np.asarray(true_mask, dtype=bool)
    if pred.shape != true.shape:
        raise ValueError(f"masks differ in shape: {pred.shape} vs {true.shape}")
    union = np.count_nonzero(pred | true)
    return 1.0 if union == 0 else np.count_nonzero(pred & true) / union


@dataclass(frozen=True)
class ViewSpec:
    """How one benchmark cloud is made from an asset.

    Attributes:
        yaw: Object yaw about world z (rad).
        azimuth: Camera azimuth about the object, world frame (rad); pi looks from the robot's
            side when the object sits in front of the robot (+x).
        elevation: Camera elevation above the horizontal (rad).
        distance: Camera distance from the surface of the object's bounding sphere (m), so one
            spec frames a mug and a cabinet alike.
        full: True for the complete model cloud (no camera, noise or dropout).
        noise_std: Depth noise along the ray (m).
        dropout: Random fraction of visible points removed.
        object_xyz: World position of the asset frame (a table top need not be at z = 0).
        density: Surface samples per cm^2 drawn before the visibility test when no sample
            count is given, so a pot and a mug are seen at the same resolution.
        max_samples: Cap on the samples drawn for large assets (furniture, whose hidden inner
            faces take most of the samples).
        voxel: Side (m) of the voxel grid a view is downsampled to, as a perception pipeline
            does with a depth cloud (about what ``density`` gives on a visible surface).
    """

    yaw: float = 0.0
    azimuth: float = math.pi
    elevation: float = math.radians(40)
    distance: float = 0.5
    full: bool = False
    noise_std: float = 0.002
    dropout: float = 0.1
    object_xyz: tuple[float, float, float] = (0.55, 0.0, 0.1)
    density: float = 8.0
    max_samples: int = 262144
    voxel: float = 0.0035

    def __post_init__(self) -> None:
        if self.distance <= 0:
            raise ValueError(f"camera distance must be positive, got {self.distance}")
        if not -math.pi / 2 < self.elevation < math.pi / 2:
            raise ValueError(f"elevation must be in (-pi/2, pi/2), got {self.elevation}")
        if self.density <= 0 or self.max_samples < 1:
            raise ValueError("density and max_samples must be positive")

    def samples(self, asset: Any) -> int:
        """Surface samples for ``asset`` at this spec's density."""
        area_cm2 = float(asset.mesh().area) * 1e4
        return int(np.clip(area_cm2 * self.density, 512, self.max_samples))

    def cloud(self, asset: Any, n: int | None = None, seed: int = 0) -> ObjectCloud:
        """The cloud this spec describes for ``asset`` (``n`` surface samples, default by density)."""
        n = n or self.samples(asset)
        pose = yaw_pose(*self.object_xyz, self.yaw)
        if self.full:
            return full_cloud(asset, pose, n=n, seed=seed, voxel=self.voxel)
        lo, hi = asset.mesh().bounds
        centre_local = np.array([0.0, 0.0, 0.5 * (lo[2] + hi[2])])
        target = pose[:3, :3] @ centre_local + pose[:3, 3]
        reach = self.distance + 0.5 * float(np.linalg.norm(hi - lo))
        cam = camera_position(target, reach, self.azimuth, self.elevation)
        return single_view(asset, pose, cam, noise_std=self.noise_std, dropout=self.dropout, n=n, seed=seed,
                           voxel=self.voxel)


@dataclass
class PartScore:
    """IoU of one (category, part) over a benchmark.

    Attributes:
        ious: IoU of every scored cloud.
        skipped: Clouds where the part had fewer visible points than ``min_part_points`` (the
            camera cannot see it, so no source could ground it).
        seconds: Time of each ``ground`` call (a source that partitions a cloud once, like the
            geometric one, pays it all on the first part asked of that cloud).
    """

    ious: list[float] = field(default_factory=list)
    skipped: int = 0
    seconds: list[float] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return float(np.mean(self.ious)) if self.ious else float("nan")

    @property
    def worst(self) -> float:
        return float(np.min(self.ious)) if self.ious else float("nan")


def evaluate(
    source: GroundingSource,
    categories: Sequence[str],
    seeds: Sequence[int],
    views: Sequence[ViewSpec],
    make_asset: AssetFactory,
    parts: dict[str, Sequence[str]] | None = None,
    n: int | None = None,
    threshold: float = 0.5,
    min_part_points: int = 10,
) -> dict[tuple[str, str], PartScore]:
    """IoU of ``source`` against the exact labels, per (category, part).

    Args:
        source: The grounding source under test.
        categories: Ontology categories to build assets of.
        seeds: Asset seeds (shape instances) per category.
        views: How each asset is observed; every asset is seen in every view.
        make_asset: ``(category, seed) -> Asset`` (``afford_sim.assets.make`` for the procedural
            library; perception itself never imports the simulator).
        parts: Parts to score per category; default all of the category's parts.
        n: Surface samples per cloud; default by each view's density.
        threshold: Score threshold that makes the predicted region.
        min_part_points: A cloud in which the part has fewer labelled points is skipped for that
            part and counted in ``PartScore.skipped``.
    """
    results: dict[tuple[str, str], PartScore] = {}
    for cat in categories:
        cat_parts = tuple(parts[cat]) if parts and cat in parts else category(cat).parts
        for seed in seeds:
            asset = make_asset(cat, seed)
            for v_idx, view in enumerate(views):
                cloud = view.cloud(asset, n=n, seed=1000 * seed + v_idx)
                for part in cat_parts:
                    score = results.setdefault((cat, part), PartScore())
                    truth = cloud.part_mask(part)
                    if truth.sum() < min_part_points:
                        score.skipped += 1
                        continue
                    t0 = time.perf_counter()
                    scores = source.ground(cloud, part)
                    score.seconds.append(time.perf_counter() - t0)
                    score.ious.append(iou(region_mask(scores, threshold), truth))
    return results
