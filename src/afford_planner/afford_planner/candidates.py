"""Grasp candidate samplers: AffordSim Stage 1 on an affordance region, and the generic axis grasp.

``sample_affordance_grasps`` follows AffordSim section 3.2, Stage 1:

1. mean-shift clustering of the region points; the dominant cluster's centroid, snapped to the
   nearest region point, is the contact point p (a centroid of a curved part, a mug handle say,
   lies in the air; the snap puts it back on the surface);
2. PCA over p's m nearest neighbours in the whole cloud: the smallest-eigenvalue eigenvector,
   oriented away from the object centre, is the outward normal n;
3. K approach directions on the hemisphere opposite n, at polar tilt theta0 from -n and
   azimuth 2*pi*k/K around n:  d_k = -cos(theta0) n + sin(theta0) (cos(phi_k) u + sin(phi_k) v);
4. for each d_k the wrist yaw that puts the finger closing axis y (perpendicular to d_k) across
   the thin direction of the region near p: y minimises the variance of the local region
   points along y (the smaller eigenvector of their covariance projected onto the plane
   perpendicular to d_k), so a handle bar is closed across, not along.

The paper gives no values for K, m, theta0 or the mean-shift bandwidth, nor how deep the TCP
goes or how wide the fingers open; ``Stage1Config`` documents the values chosen here.

``sample_axis_grasps`` is AffordSim's Regime A for objects without functional structure: a short
segment on the object's long horizontal axis (its central third for elongated objects, a
small piece around the centre for boxy ones), top-down, closing across the segment.

All candidates use the gripper frame of ``afford_core.grasp`` (z approach, y closing axis,
position = TCP between the fingertips). Among the two finger orderings (y and -y are the same
grasp for a parallel gripper) the one nearest the home TCP orientation every robot shares
(gripper x along world x, y along world -y, z down) is kept, so that joint 7 stays away from
its limits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np
from scipy.spatial import cKDTree

from afford_core.grasp import GraspCandidate
from afford_core.ontology import CATEGORIES
from afford_core.robots import DEFAULT_ROBOT, HOME_TCP_ROTATION, GripperDescription, get_robot
from afford_core.types import ObjectCloud

_HOME_ROTATION = HOME_TCP_ROTATION
_DOWN = np.array([0.0, 0.0, -1.0])


@dataclass(frozen=True)
class Stage1Config:
    """Parameters of AffordSim Stage 1 (none are given in the paper; these are ours).

    Attributes:
        num_directions: K, approach directions per contact point (8: one every 45 deg).
        num_neighbors: m, cloud points in the PCA for the normal (30: enough for a stable plane
            fit at the 2-5 mm spacing of a depth-camera or asset cloud, few enough to stay local).
        tilt_deg: theta0, polar tilt of every approach from -n, in [0, 90) degrees (30). Must be
            positive when K > 1, otherwise the K directions coincide.
        bandwidth: Mean-shift kernel radius (m); 0.02 separates patches a few cm apart (two
            handles, a stray false-positive blob) while keeping a handle-sized part one cluster.
            A region much larger than the bandwidth (a 20 cm board) has a flat density and
            several modes; its dominant cluster is then one piece of it.
        kernel: ``"gaussian"`` (weights exp(-d^2 / (2 h^2)), points beyond 3 h ignored) or
            ``"flat"`` (mean of the points within the bandwidth). Gaussian by default: on a
            uniformly sampled part it has one mode, the flat kernel many (see ``mean_shift``).
        max_iter: Mean-shift iterations per seed before giving up on convergence.
        local_radius: Radius around p of the region points that define the local geometry
            (closing axis, width) (m).
        line_radius: Radius of the cylinder around the approach line through p whose region
            points give the part's thickness along that approach (m): the material between
            the fingertips on the way in, not the tilt of a wide patch.
        depth_fraction: The TCP goes this fraction of the local thickness along the approach
            past p, so the fingertip pads wrap the part instead of pinching its skin (0.5: the
            TCP on the part's mid-plane).
        max_depth: Cap on that push (m); default the reference robot's fingertip pad length
            (``GripperDescription.pad_length``; the pipeline passes the robot's own).
        width_margin: Added to the local extent along the closing axis, split across both
            fingers (m), so the open fingers clear the part on the way in.
        max_width: Largest opening (m); default the reference robot's gripper stroke (the
            pipeline passes the robot's own).
        isotropy_ratio: When the local region's two largest variances, or its two variances
            across the approach, are within this ratio of each other (a disc, a cylinder or
            sphere patch, a bar seen end-on), the geometry prefers no closing direction and the
            yaw nearest home is used.
        include_topdown: Also propose top-down grasps (approach -z world) at p, useful for
            tabletop objects and an executor that prefers top-down.
        num_topdown_yaws: K_yaw, top-down yaws: the geometry-aligned one, then evenly spaced
            over the half turn (2: across and along the local geometry).
        include_normal: Also propose the approach straight along -n (tilt 0), the one a
            person uses on a handle that stands out of a vertical face; the K tilted ones
            all come in at theta0 and can clip the face behind a drawer pull.
        center_on_part: Shift the TCP along the closing axis to the middle of the region
            points the pads close on. Parallel fingers close symmetrically about the TCP
            and the arm does not yield, so on a bar seen from one side (its top face) an
            uncentred TCP leaves one finger in the air. Off for wide patches (a plate's face),
            where the middle of the patch is not between the fingers.
    """

    num_directions: int = 8
    num_neighbors: int = 30
    tilt_deg: float = 30.0
    bandwidth: float = 0.02
    kernel: Literal["flat", "gaussian"] = "gaussian"
    max_iter: int = 300
    local_radius: float = 0.03
    line_radius: float = 0.006
    depth_fraction: float = 0.5
    max_depth: float = field(default_factory=lambda: _gripper().pad_length)
    width_margin: float = 0.02
    max_width: float = field(default_factory=lambda: _gripper().max_width)
    isotropy_ratio: float = 0.9
    include_topdown: bool = False
    num_topdown_yaws: int = 2
    include_normal: bool = False
    center_on_part: bool = False

    def __post_init__(self) -> None:
        if self.num_directions < 1:
            raise ValueError(f"num_directions (K) must be >= 1, got {self.num_directions}")
        if self.num_neighbors < 3:
            raise ValueError(f"num_neighbors (m) must be >= 3 for a plane fit, got {self.num_neighbors}")
        if not (0.0 <= self.tilt_deg < 90.0):
            raise ValueError(f"tilt_deg must be in [0, 90), got {self.tilt_deg}")
        if self.tilt_deg == 0.0 and self.num_directions > 1:
            raise ValueError("tilt_deg = 0 makes all K approach directions equal; use K = 1 or a tilt > 0")
        if not self.bandwidth > 0:
            raise ValueError(f"bandwidth must be positive, got {self.bandwidth}")
        if self.kernel not in ("flat", "gaussian"):
            raise ValueError(f"kernel must be 'flat' or 'gaussian', got {self.kernel!r}")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        _check_fit(self.local_radius, self.depth_fraction, self.max_depth, self.width_margin, self.max_width)
        if not (0.0 < self.line_radius <= self.local_radius):
            raise ValueError(f"line_radius must be in (0, local_radius], got {self.line_radius}")
        if not (0.0 < self.isotropy_ratio <= 1.0):
            raise ValueError(f"isotropy_ratio must be in (0, 1], got {self.isotropy_ratio}")
        if self.num_topdown_yaws < 1:
            raise ValueError(f"num_topdown_yaws must be >= 1, got {self.num_topdown_yaws}")


@dataclass(frozen=True)
class AxisGraspConfig:
    """Parameters of the generic axis grasp (AffordSim Regime A).

    Attributes:
        num_positions: Grasps spread evenly along the segment.
        shape: ``"elongated"``, ``"boxy"`` or ``"auto"``: the ontology's ``elongated`` flag for
            a known category, else the ratio of the horizontal extents.
        elongation_ratio: ``"auto"`` on an unknown category calls the object elongated when its
            long horizontal extent is at least this multiple of the short one.
        central_fraction: Share of the long axis, centred, that an elongated object's segment
            covers (1/3 in AffordSim).
        box_half_length: Half-length of the segment around a boxy object's centre (m).
        local_radius: Half-thickness of the slab of cloud points around a grasp position that
            gives the local height and width (m).
        depth_fraction: As in ``Stage1Config``, along -z from the local top.
        max_depth: As in ``Stage1Config``.
        width_margin: As in ``Stage1Config``.
        max_width: As in ``Stage1Config``.
    """

    num_positions: int = 5
    shape: Literal["auto", "elongated", "boxy"] = "auto"
    elongation_ratio: float = 2.0
    central_fraction: float = 1.0 / 3.0
    box_half_length: float = 0.01
    local_radius: float = 0.01
    depth_fraction: float = 0.5
    max_depth: float = field(default_factory=lambda: _gripper().pad_length)
    width_margin: float = 0.02
    max_width: float = field(default_factory=lambda: _gripper().max_width)

    def __post_init__(self) -> None:
        if self.num_positions < 1:
            raise ValueError(f"num_positions must be >= 1, got {self.num_positions}")
        if self.shape not in ("auto", "elongated", "boxy"):
            raise ValueError(f"shape must be 'auto', 'elongated' or 'boxy', got {self.shape!r}")
        if not self.elongation_ratio >= 1.0:
            raise ValueError(f"elongation_ratio must be >= 1, got {self.elongation_ratio}")
        if not (0.0 < self.central_fraction <= 1.0):
            raise ValueError(f"central_fraction must be in (0, 1], got {self.central_fraction}")
        if not self.box_half_length >= 0:
            raise ValueError(f"box_half_length must be >= 0, got {self.box_half_length}")
        _check_fit(self.local_radius, self.depth_fraction, self.max_depth, self.width_margin, self.max_width)


def _check_fit(
    local_radius: float, depth_fraction: float, max_depth: float, margin: float, max_width: float
) -> None:
    if not local_radius > 0:
        raise ValueError(f"local_radius must be positive, got {local_radius}")
    if not (0.0 <= depth_fraction <= 1.0):
        raise ValueError(f"depth_fraction must be in [0, 1], got {depth_fraction}")
    if not max_depth >= 0:
        raise ValueError(f"max_depth must be >= 0, got {max_depth}")
    if not margin >= 0:
        raise ValueError(f"width_margin must be >= 0, got {margin}")
    if not (0.0 < max_width <= 0.3):
        raise ValueError(f"max_width must be in (0, 0.3] m, got {max_width}")


# --------------------------------------------------------------------------- mean shift


@dataclass(frozen=True)
class MeanShiftResult:
    """Modes found by mean shift and the point-to-mode assignment.

    Attributes:
        modes: (C, 3) distinct modes, strongest (most points within the bandwidth) first.
        labels: (M,) index of the nearest mode for each input point.
        counts: (C,) number of points assigned to each mode.
    """

    modes: np.ndarray
    labels: np.ndarray
    counts: np.ndarray

    @property
    def dominant(self) -> int:
        """Index of the cluster with the most points (the strongest mode on a tie)."""
        return int(np.argmax(self.counts))


def mean_shift(
    points: np.ndarray,
    bandwidth: float,
    kernel: Literal["flat", "gaussian"] = "gaussian",
    max_iter: int = 300,
) -> MeanShiftResult:
    """Mean-shift clustering (Comaniciu & Meer) of ``points`` with a flat or gaussian kernel.

    Seeds are the centroids of the occupied cells of a grid with cell size ``bandwidth`` (one
    seed per cell instead of one per point). Each seed moves to the kernel-weighted mean of the
    points (binned, see below), x <- sum_i w_i p_i / sum_i w_i with w_i = exp(-|p_i - x|^2 / (2 h^2)) for
    |p_i - x| <= 3 h (gaussian) or w_i = [|p_i - x| <= h] (flat), until it moves less than
    1e-3 h; of two seeds that come within h/4 of each other only one is followed. Converged
    seeds closer than h to a stronger mode (more points within h) are merged
    into it; every point then joins its nearest mode.

    The flat kernel has a fixed point wherever its ball fits inside a uniformly sampled patch,
    so on a part larger than 2 h it returns several arbitrary modes; the gaussian kernel smooths
    a uniform convex patch into a single-peaked density, whose peak is the patch's middle.
    """
    pts = np.asarray(points, dtype=np.float64)
    # The density is estimated from cell centroids weighted by their counts: cells of h/4 move
    # it by at most ~h/8 and make the cost independent of how densely the part was sampled.
    centres, weights = _binned(pts, 0.25 * bandwidth)
    seeds, _ = _binned(pts, bandwidth)

    reach2 = (bandwidth if kernel == "flat" else 3.0 * bandwidth) ** 2
    tol = 1e-3 * bandwidth
    # Dense seed-by-cell weights, in blocks of seeds to bound memory at ~32 MB.
    block = max(1, 4_000_000 // len(centres))
    active = np.ones(len(seeds), dtype=bool)
    alive = np.ones(len(seeds), dtype=bool)
    for _ in range(max_iter):
        # Seeds that meet within h/4 share a basin; following one is enough. This cuts the
        # seeds from hundreds to the number of modes within a few iterations.
        live = np.flatnonzero(alive)
        for i, j in sorted(cKDTree(seeds[live]).query_pairs(0.25 * bandwidth)):
            if alive[live[i]]:
                alive[live[j]] = active[live[j]] = False
        idx = np.flatnonzero(active)
        if len(idx) == 0:
            break
        for start in range(0, len(idx), block):
            rows = idx[start : start + block]
            d2 = ((seeds[rows, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
            kern = np.ones_like(d2) if kernel == "flat" else np.exp(-d2 / (2.0 * bandwidth**2))
            w = np.where(d2 <= reach2, kern, 0.0) * weights
            # A seed starts on a cell centroid and moves to weighted means of them, so it always
            # has a cell within reach: no row of w is all zero.
            new = (w @ centres) / w.sum(axis=1, keepdims=True)
            moved = np.linalg.norm(new - seeds[rows], axis=1)
            seeds[rows] = new
            active[rows[moved < tol]] = False

    seeds = seeds[alive]
    tree = cKDTree(pts)
    support = np.array([len(n) for n in tree.query_ball_point(seeds, r=bandwidth)])
    order = np.argsort(-support, kind="stable")
    kept: list[int] = []
    for i in order:
        if all(np.linalg.norm(seeds[i] - seeds[j]) >= bandwidth for j in kept):
            kept.append(int(i))
    modes = seeds[kept]
    _, labels = cKDTree(modes).query(pts)
    counts = np.bincount(labels, minlength=len(modes))
    return MeanShiftResult(modes=modes, labels=labels, counts=counts)


# --------------------------------------------------------------------------- geometry helpers


def _binned(points: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Centroids of the occupied cells of a ``cell``-sized grid, and how many points each holds."""
    keys = np.floor((points - points.min(axis=0)) / cell).astype(np.int64)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse).astype(np.float64)
    sums = np.zeros((len(counts), 3))
    np.add.at(sums, inverse, points)
    return sums / counts[:, None], counts


def _validated_points(points: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(points, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must be an (M, 3) array, got shape {arr.shape}")
    if len(arr) == 0:
        raise ValueError(f"{name} is empty: the affordance region has no points to grasp")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains {int((~np.isfinite(arr)).any(axis=1).sum())} NaN/infinite points")
    return arr


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _perpendicular_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal (u, v) spanning the plane perpendicular to unit ``n``; u follows world z, else x."""
    ref = np.array([0.0, 0.0, 1.0]) if abs(n[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    u = _unit(ref - np.dot(ref, n) * n)
    return u, np.cross(n, u)


def surface_normal(cloud_tree: cKDTree, p: np.ndarray, m: int, center: np.ndarray) -> np.ndarray:
    """Outward unit normal at ``p``: smallest-variance PCA axis of its ``m`` nearest cloud points.

    Oriented so that n . (p - center) >= 0. When p coincides with the centre (no side is
    outward) the normal is turned to face up, where the camera and the robot usually are.
    """
    if cloud_tree.n < m:
        raise ValueError(
            f"the object cloud has {cloud_tree.n} points, fewer than the m = {m} needed for a normal"
        )
    _, idx = cloud_tree.query(p, k=m)
    nb = cloud_tree.data[np.atleast_1d(idx)]
    _, vecs = np.linalg.eigh(np.cov(nb.T))
    n = vecs[:, 0]
    out = p - center
    ref = out if np.linalg.norm(out) > 1e-9 else np.array([0.0, 0.0, 1.0])
    return n if np.dot(n, ref) >= 0 else -n


def approach_directions(n: np.ndarray, k: int, tilt_rad: float) -> np.ndarray:
    """(K, 3) unit approaches at polar angle ``tilt_rad`` from -n, azimuths 2*pi*j/K around n."""
    u, v = _perpendicular_basis(n)
    phi = 2.0 * np.pi * np.arange(k) / k
    lateral = np.cos(phi)[:, None] * u + np.sin(phi)[:, None] * v
    return -np.cos(tilt_rad) * n + np.sin(tilt_rad) * lateral


def _orient_like_home(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Rotation with columns (y x z, +-y, z), the sign of y nearest the home TCP orientation."""
    x = np.cross(y, z)
    # trace(H^T R) with z fixed changes only through x and y; keep the ordering that raises it.
    if _HOME_ROTATION[:, 0] @ x + _HOME_ROTATION[:, 1] @ y < -1e-9:
        x, y = -x, -y
    return np.column_stack([x, y, z])


def closing_axis(local: np.ndarray, approach: np.ndarray, isotropy_ratio: float) -> np.ndarray:
    """Unit y perpendicular to ``approach`` minimising the variance of ``local`` along it.

    That is the smaller eigenvector of the local covariance projected onto the plane
    perpendicular to the approach: across a bar, across the thin side of a slab. When the
    patch is isotropic (its two largest variances within ``isotropy_ratio``: a disc, a cylinder
    or sphere patch) or looks isotropic from the approach (a bar seen end-on), no direction is
    preferred and the one nearest the home yaw is returned.
    """
    e1, e2 = _perpendicular_basis(approach)
    basis = np.column_stack([e1, e2])
    if len(local) >= 3:
        centred = local - local.mean(axis=0)
        cov = centred.T @ centred / len(local)
        full = np.linalg.eigvalsh(cov)
        vals, vecs = np.linalg.eigh(basis.T @ cov @ basis)
        elongated = full[2] > 1e-12 and full[1] / full[2] < isotropy_ratio
        if elongated and vals[1] > 1e-12 and vals[0] / vals[1] < isotropy_ratio:
            return _unit(basis @ vecs[:, 0])
    home_y = _HOME_ROTATION[:, 1] - np.dot(_HOME_ROTATION[:, 1], approach) * approach
    if np.linalg.norm(home_y) < 1e-6:  # approach along world y: take home x instead
        home_y = _HOME_ROTATION[:, 0] - np.dot(_HOME_ROTATION[:, 0], approach) * approach
    return _unit(home_y)


#: Share of its smallest enclosing rectangle a top view must fill to be read as a square face
#: (a square fills all of it, a disc pi / 4 = 0.785 of it), and the least ratio of the
#: rectangle's short side to its long one (a bar's top view fills its rectangle too, but a
#: bar is closed across, as its principal axes say).
SQUARE_FILL = 0.9
SQUARE_SIDES = 0.8


def _square_face_axis(points: np.ndarray) -> np.ndarray | None:
    """For a top view that is a square face (a block's top, :data:`SQUARE_FILL`,
    :data:`SQUARE_SIDES`), the one of its two side directions nearest the home closing axis;
    None for anything else (a disc, a scatter, fewer than three points). A square's principal
    axes are undefined, and the home yaw, 45 deg off the robot's x, closes a parallel gripper on
    a block's opposite edges, from which it slips; across its faces it holds."""
    rect = _min_area_rect(np.asarray(points, dtype=float)[:, :2])
    if rect is None or rect.fill < SQUARE_FILL or rect.short / rect.long < SQUARE_SIDES:
        return None
    u = rect.axis
    v = np.array([-u[1], u[0]])
    home = _HOME_ROTATION[:2, 1]
    best = max((u, v), key=lambda a: abs(float(a @ home)))
    return np.array([best[0], best[1], 0.0])


def _extent(points: np.ndarray, axis: np.ndarray) -> float:
    t = points @ axis
    return float(t.max() - t.min()) if len(t) else 0.0


def _mid(points: np.ndarray, axis: np.ndarray) -> float:
    """Middle of the points' extent along ``axis`` (0 for no points)."""
    t = points @ axis
    return float(0.5 * (t.max() + t.min())) if len(t) else 0.0


def _width(extent: float, margin: float, max_width: float) -> float:
    return float(min(max_width, extent + margin))


def _local_points(
    region: np.ndarray, region_tree: cKDTree, p: np.ndarray, radius: float, k: int
) -> np.ndarray:
    """Region points within ``radius`` of p; the ``k`` nearest if that leaves fewer than 3."""
    local = region[region_tree.query_ball_point(p, r=radius)]
    if len(local) < 3:
        _, idx = region_tree.query(p, k=min(k, len(region)))
        local = region[np.atleast_1d(idx)]
    return local


# --------------------------------------------------------------------------- samplers


def contact_point(region: np.ndarray, config: Stage1Config) -> np.ndarray:
    """The dominant mean-shift cluster's centroid, snapped to the nearest region point."""
    ms = mean_shift(region, config.bandwidth, config.kernel, config.max_iter)
    members = region[ms.labels == ms.dominant]
    centroid = members.mean(axis=0)
    _, i = cKDTree(region).query(centroid)
    return region[int(i)]


def _grasp_along(p: np.ndarray, d: np.ndarray, local: np.ndarray, config: Stage1Config) -> GraspCandidate:
    """The grasp at contact point ``p`` approached along ``d``: fingers across the local
    geometry (``closing_axis``), the TCP on the part's mid-plane along the approach line."""
    y = closing_axis(local, d, config.isotropy_ratio)
    # Along the approach line through p the fingers first meet the part at t_min (0 when p
    # faces the gripper; below 0 when the snapped p sits on the far side of a thin bar).
    rel = local - p
    along = rel @ d
    t = along[np.linalg.norm(rel - np.outer(along, d), axis=1) <= config.line_radius]
    t_min = float(min(t.min(), 0.0)) if len(t) else 0.0
    t_max = float(max(t.max(), 0.0)) if len(t) else 0.0
    depth = min(config.max_depth, config.depth_fraction * (t_max - t_min))
    # Centre the fingers on the part across the closing axis: the fingers close
    # symmetrically about the TCP and the arm does not yield, so an off-centre TCP leaves
    # one finger in the air.
    tcp = p + (t_min + depth) * d
    between = local[np.abs((local - tcp) @ d) <= config.max_depth]  # what the pads close on
    return GraspCandidate(
        position=tcp + (_mid(between - tcp, y) * y if config.center_on_part else 0.0),
        rotation=_orient_like_home(y, d),
        width=_width(_extent(local, y), config.width_margin, config.max_width),
        source="affordance",
    )


def sample_affordance_grasps(
    region_points: np.ndarray, cloud: ObjectCloud, config: Stage1Config, normal: np.ndarray | None = None
) -> list[GraspCandidate]:
    """AffordSim Stage 1: K grasps (plus top-down ones if configured) on the region's peak.

    Args:
        region_points: (M, 3) world points of the affordance region (the part to grasp).
        cloud: The whole object's cloud; its points give the surface normal, its ``center``
            the outward side.
        config: Stage 1 parameters.
        normal: A surface normal at the contact known from a larger structure (a drawer
            front's plane for its pull, whose own few points give no stable PCA); None: the
            PCA normal of the m nearest cloud points, as in the paper.

    Returns:
        K side grasps at p: approach d_k; TCP = p + (t_min + depth_k) d_k, where t_min <= 0 and
        t_max >= 0 bound the region points within line_radius of the approach line through p
        (t measured from p along d_k; t_min = 0 when p is the first surface the fingers meet)
        and depth_k = min(max_depth, depth_fraction * (t_max - t_min)); width = min(max_width,
        local extent along y + margin). Then ``num_topdown_yaws`` top-down grasps when
        ``include_topdown``; ``source="affordance"``, ``index`` 0..n-1 in that order.

    Raises:
        ValueError: empty region, NaN points, or a cloud with fewer than m points.
    """
    region = _validated_points(region_points, "region_points")
    if len(cloud) < config.num_neighbors:
        raise ValueError(
            f"the {cloud.category} cloud has {len(cloud)} points; Stage 1 needs at least "
            f"m = {config.num_neighbors} for the PCA normal"
        )
    region_tree = cKDTree(region)
    p = contact_point(region, config)
    if normal is None:
        n = surface_normal(
            cKDTree(cloud.points), p, config.num_neighbors, np.asarray(cloud.center, dtype=float)
        )
    else:
        n = _unit(np.asarray(normal, dtype=float))
    local = _local_points(region, region_tree, p, config.local_radius, config.num_neighbors)

    out: list[GraspCandidate] = []
    directions = approach_directions(n, config.num_directions, np.deg2rad(config.tilt_deg))
    if config.include_normal:
        directions = np.vstack([directions, -n])
    for d in directions:
        out.append(_grasp_along(p, d, local, config))
    if config.include_topdown:
        out.extend(_topdown_grasps(region, p, config))
    for i, cand in enumerate(out):
        cand.index = i
    return out


def _topdown_grasps(region: np.ndarray, p: np.ndarray, config: Stage1Config) -> list[GraspCandidate]:
    """Top-down grasps over p, entering from the top of the region column around p.

    The snapped contact point may lie on the underside of a bar, so the TCP height is taken
    from the column of region points within ``local_radius`` of p horizontally: the top of the
    column minus min(max_depth, depth_fraction * column height).
    """
    horizontal = np.linalg.norm(region[:, :2] - p[:2], axis=1)
    column = region[horizontal <= config.local_radius]
    if len(column) == 0:  # p itself is a region point, so this only guards float edge cases
        column = p[None, :]
    top, bottom = column[:, 2].max(), column[:, 2].min()
    depth = min(config.max_depth, config.depth_fraction * (top - bottom))
    tcp = np.array([p[0], p[1], top - depth])
    # A block's square top (the whole region's top view: the column, cut round by the local
    # radius, is no square) is closed across its faces.
    y0 = _square_face_axis(region)
    if y0 is None:
        y0 = closing_axis(column, _DOWN, config.isotropy_ratio)
    out = []
    for j in range(config.num_topdown_yaws):
        angle = np.pi * j / config.num_topdown_yaws
        # Rotating y0 about the vertical keeps it horizontal, hence perpendicular to the approach.
        c, s = np.cos(angle), np.sin(angle)
        y = np.array([c * y0[0] - s * y0[1], s * y0[0] + c * y0[1], 0.0])
        out.append(
            GraspCandidate(
                position=tcp + (_mid(column - tcp, y) * y if config.center_on_part else 0.0),
                rotation=_orient_like_home(y, _DOWN),
                width=_width(_extent(column, y), config.width_margin, config.max_width),
                source="affordance",
            )
        )
    return out


def sample_tilt_grasps(
    region_points: np.ndarray,
    tilt_axis: np.ndarray,
    center: np.ndarray,
    config: Stage1Config,
    num_points: int = 6,
    obstacles: np.ndarray | None = None,
    finger_length: float = 0.05,
    max_towards_body: float = 0.7,
    travel: float = 0.1,
) -> list[GraspCandidate]:
    """Grasps on a handle that hold a container tipped about a horizontal ``tilt_axis``.

    Why: a parallel-jaw grasp holds a turn about its *closing* axis by the pads' torsional
    friction alone (a pour about the line through the pads lets a 1 kg kettle turn in the
    fingers), a turn about the bar it closes on by sliding friction on the bar's small radius
    (the bar rolls), but a turn about its *approach* axis only by pushing the fingers apart,
    with the pads' width as the lever. So these grasps approach along the tilt axis, from
    either side, where the part runs across that axis; the pour then turns the hand about its
    own approach axis (the wrist's last joint, the one with the most range).

    Args:
        region_points: (M, 3) world points of the part to hold (a kettle's handle).
        tilt_axis: The pour's tilt axis (world; made horizontal and unit here).
        center: The container's centre (world): contact points are taken behind it (away
            from the spout, which lies towards ``tilt_axis x up``) and on the outer half of the
            part, away from its axis, where the inner finger has room (not against the body a
            loop handle springs from).
        config: Stage 1's local geometry, depth and width settings.
        num_points: Contact points spread over the region (farthest-point order from the
            point nearest its centroid); each gives two grasps, one per side.
        obstacles: Points the fingers must not sweep through on their way in (the whole
            object's cloud: in a loop's corner the inner finger meets the loop's other side);
            None skips the test.
        finger_length: From the TCP back to the finger bases (m): the part of the hand that
            sweeps past the bar.
        max_towards_body: Largest horizontal component of the closing axis along the direction
            from the container's axis out to the contact point: a pinch across a loop handle's
            back bar closes towards the body and lays the hand's long side against it.
        travel: How far the fingers come in along the approach (the pre-grasp offset, m).

    Returns:
        Up to ``2 * num_points`` candidates, ``source="affordance"``: none at points where the
        part runs within 60 deg of the tilt axis, none closing towards the body, none whose
        fingers or hand would sweep through ``obstacles``, none for a vertical ``tilt_axis``.
    """
    region = _validated_points(region_points, "region_points")
    t = np.asarray(tilt_axis, dtype=float).copy()
    t[2] = 0.0
    if np.linalg.norm(t) < 1e-6:
        return []
    t = _unit(t)
    tree = cKDTree(region)
    c = np.asarray(center, dtype=float)[:2]
    # The spout lies towards t x up: contact points behind the axis only (a grounding that
    # bleeds onto the spout must not put the hand there), on the outer half of what is left.
    behind = region[(region[:, :2] - c) @ np.cross(t, [0.0, 0.0, 1.0])[:2] < 0]
    if len(behind) == 0:
        return []
    radial = np.linalg.norm(behind[:, :2] - c, axis=1)
    outer = behind[radial >= 0.5 * (radial.min() + radial.max())]
    chosen = [int(np.argmin(np.linalg.norm(outer - outer.mean(axis=0), axis=1)))]
    dist = np.linalg.norm(outer - outer[chosen[0]], axis=1)
    while len(chosen) < min(num_points, len(outer)):
        chosen.append(int(np.argmax(dist)))
        dist = np.minimum(dist, np.linalg.norm(outer - outer[chosen[-1]], axis=1))
    out: list[GraspCandidate] = []
    for i in chosen:
        p = outer[i]
        local = _local_points(region, tree, p, config.local_radius, config.num_neighbors)
        if len(local) < 3:
            continue
        centred = local - local.mean(axis=0)
        along = np.linalg.eigh(centred.T @ centred)[1][:, -1]  # where the bar runs
        if abs(float(along @ t)) > 0.5:  # a bar along the axis would roll between the pads
            continue
        axis_point = _tube_axis_point(local, p, along)
        outward = p[:2] - np.asarray(center, dtype=float)[:2]
        outward /= np.linalg.norm(outward) + 1e-12
        for sign in (1.0, -1.0):
            cand = _grasp_along(p, sign * t, local, config)
            # The hand is long along its closing axis (the Franka Hand 21 cm): closing towards
            # the body the handle springs from puts the hand's side against the part of the
            # body the camera did not see, which pushes the object away before the fingers close.
            if abs(float(cand.rotation[:2, 1] @ outward)) > max_towards_body:
                continue
            if axis_point is not None:
                # From one view the pads would close on the seen half of the bar: put the TCP on
                # the bar's axis instead, both along the approach and across it.
                cand = dataclasses.replace(cand, position=axis_point)
            if obstacles is None or _fingers_clear(cand, obstacles, finger_length, travel):
                out.append(cand)
    return out


_FINGER_HALF_WIDTH = 0.011
"""Half the width of a finger across the closing axis (m): the Franka Hand's are ~2 cm."""
_FINGER_THICKNESS = 0.01
"""A finger's thickness along the closing axis (m), outside the opening."""


_HAND_HALF_LENGTH = 0.105
"""Half the hand body's length along the closing axis (m): the Franka Hand is ~0.21 m long."""
_HAND_HALF_THICKNESS = 0.035
"""Half the hand body's thickness across the closing axis (m)."""
_HAND_DEPTH = 0.05
"""How far the hand body reaches back from the finger bases along the approach (m)."""


def _fingers_clear(cand: GraspCandidate, points: np.ndarray, finger_length: float, travel: float,
                   tolerance: int = 3) -> bool:
    """Whether the open fingers and the hand body behind them come in along the approach
    (``travel`` m) to ``cand`` without sweeping through more than ``tolerance`` of ``points``
    (depth noise) with the fingers, or any with the hand. The planner lets the hand touch the
    grasped object on this line, so a hand that meets the object's body on the way in would
    push the object away before the fingers close."""
    local = (np.asarray(points, dtype=float) - cand.position) @ np.asarray(cand.rotation, dtype=float)
    inner = 0.5 * cand.width
    x, y, z = np.abs(local[:, 0]), np.abs(local[:, 1]), local[:, 2]
    fingers = (x <= _FINGER_HALF_WIDTH) & (y >= inner) & (y <= inner + _FINGER_THICKNESS) & (
        z >= -(finger_length + travel)) & (z <= 0.005)
    hand = (x <= _HAND_HALF_THICKNESS) & (y <= _HAND_HALF_LENGTH) & (
        z >= -(finger_length + _HAND_DEPTH + travel)) & (z <= -finger_length)
    # The hand body is not where a noisy pixel lands by chance: any point there is the object.
    return int(fingers.sum()) <= tolerance and not bool(hand.any())


def _tube_axis_point(local: np.ndarray, p: np.ndarray, along: np.ndarray,
                     radius_range: tuple[float, float] = (0.003, 0.02)) -> np.ndarray | None:
    """The point on a round bar's axis next to ``p``, from a circle fitted to the bar's seen
    surface in the plane across it (``along`` the bar's direction); None when the slab holds
    too few points or the fitted radius is not a handle's."""
    rel = local - p
    slab = local[np.abs(rel @ along) <= 0.01]
    if len(slab) < 8:
        return None
    e1, e2 = _perpendicular_basis(along)
    uv = np.column_stack([(slab - p) @ e1, (slab - p) @ e2])
    # Kasa's algebraic fit: x^2 + y^2 + D x + E y + F = 0, linear in D, E, F.
    a = np.column_stack([uv, np.ones(len(uv))])
    b = -(uv**2).sum(axis=1)
    (d, e, f), *_ = np.linalg.lstsq(a, b, rcond=None)
    c = np.array([-d / 2.0, -e / 2.0])
    r2 = float(c @ c - f)
    if r2 <= 0 or not radius_range[0] <= np.sqrt(r2) <= radius_range[1]:
        return None
    return p + c[0] * e1 + c[1] * e2


def _is_elongated(cloud: ObjectCloud, extents: np.ndarray, config: AxisGraspConfig) -> bool:
    if config.shape != "auto":
        return config.shape == "elongated"
    if cloud.category in CATEGORIES:
        return CATEGORIES[cloud.category].elongated
    return bool(extents[0] >= config.elongation_ratio * max(extents[1], 1e-9))


def _hull_frames(xy: np.ndarray) -> tuple[np.ndarray, float, list[tuple[np.ndarray, np.ndarray]]] | None:
    """The convex hull of ``xy`` (its vertices and area) and, per edge of it, the edge's unit
    direction and its normal (the frames a rectangle fitted to the points can take); None for
    points on a line or fewer than three."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        found = ConvexHull(xy)
    except (QhullError, ValueError):
        return None
    hull = xy[found.vertices]
    frames = []
    for i in range(len(hull)):
        edge = hull[(i + 1) % len(hull)] - hull[i]
        n = float(np.linalg.norm(edge))
        if n >= 1e-9:
            u = edge / n
            frames.append((u, np.array([-u[1], u[0]])))
    return hull, float(found.volume), frames  # a 2-D hull's "volume" is its area


class _Rect(NamedTuple):
    """A rectangle fitted around points' top view."""

    centre: np.ndarray
    axis: np.ndarray
    """Direction of its long side."""
    long: float
    short: float
    fill: float
    """Share of it the points' convex hull covers."""


def _min_area_rect(xy: np.ndarray) -> _Rect | None:
    """The smallest rectangle around ``xy``; None for points on a line or fewer than three."""
    found = _hull_frames(xy)
    if found is None:
        return None
    hull, area, frames = found
    best: _Rect | None = None
    for u, v in frames:
        pu, pv = hull @ u, hull @ v
        su, sv = float(np.ptp(pu)), float(np.ptp(pv))
        if best is None or su * sv < best.long * best.short:
            centre = u * 0.5 * (pu.min() + pu.max()) + v * 0.5 * (pv.min() + pv.max())
            best = _Rect(centre, u if su >= sv else v, max(su, sv), min(su, sv),
                         area / (su * sv) if su * sv > 0 else 0.0)
    return best


def _min_area_axis(xy: np.ndarray) -> np.ndarray | None:
    """Direction of the long side of the smallest rectangle around ``xy`` (a box's face)."""
    rect = _min_area_rect(xy)
    if rect is None:
        return None
    u = rect.axis
    return -u if u[0] < -1e-12 or (abs(u[0]) <= 1e-12 and u[1] < 0) else u


def footprint_centre(points: np.ndarray, edge: float = 0.002) -> np.ndarray:
    """Horizontal centre of a box-shaped object from what one camera saw of it: the middle of
    the rectangle around the points' top view whose sides the most points lie on (within
    ``edge``), its sides along one of the convex hull's edges. A block seen from above shows its
    whole top face, whose four edges lie on the sides of that rectangle; held in the hand with the
    top hidden it shows two side faces, an L in the top view whose arms span the footprint and
    lie on two sides of it (the smallest rectangle around an L runs along its hypotenuse, and
    its middle is off). The points' median leans towards the camera by up to a quarter of a side.
    The median when the points span no area (fewer than three, or on a line)."""
    xy = np.asarray(points, dtype=float)[:, :2]
    median = np.median(xy, axis=0)
    found = _hull_frames(xy)
    if found is None:
        return median
    best: tuple[int, float, np.ndarray] | None = None
    for u, v in found[2]:
        pu, pv = xy @ u, xy @ v
        on_sides = int(np.sum((pu - pu.min() < edge) | (pu.max() - pu < edge)
                              | (pv - pv.min() < edge) | (pv.max() - pv < edge)))
        area = float(np.ptp(pu) * np.ptp(pv))
        if best is None or on_sides > best[0] or (on_sides == best[0] and area < best[1]):
            centre = u * 0.5 * (pu.min() + pu.max()) + v * 0.5 * (pv.min() + pv.max())
            best = (on_sides, area, centre)
    return median if best is None else best[2]


def sample_axis_grasps(cloud: ObjectCloud, config: AxisGraspConfig) -> list[GraspCandidate]:
    """AffordSim Regime A: top-down grasps on a short segment of the object's long horizontal axis.

    The long axis a is the principal axis of the cloud's horizontal (x, y) coordinates; the
    centre is the middle of the extents along the principal axes (not the mean, which leans
    towards densely sampled ends). The segment is the central ``central_fraction`` of the long
    extent for elongated objects and +-``box_half_length`` for boxy ones; ``num_positions``
    grasps are spread evenly along it. Each is top-down with the closing axis horizontal and
    perpendicular to a; its TCP sits min(max_depth, depth_fraction * local height) below the
    local top of the slab of points within ``local_radius`` (along a) of the position, and its
    width is that slab's extent across a plus the margin, capped. ``source="generic"``.

    AffordSim draws a uniform random wrist yaw; here the yaw is the one that closes across the
    segment, so that the same object always yields the same (content-hashed) set.
    """
    pts = cloud.points
    if len(pts) < 3:
        raise ValueError(f"the {cloud.category} cloud has {len(pts)} points; an axis needs at least 3")
    xy = pts[:, :2]
    mean_xy = xy.mean(axis=0)
    _, vecs = np.linalg.eigh(np.cov((xy - mean_xy).T))
    axis2 = vecs[:, 1]  # largest horizontal variance
    # Fix the axis sign so that the same object yields the same grasp order however it was sampled.
    if axis2[0] < -1e-12 or (abs(axis2[0]) <= 1e-12 and axis2[1] < 0):
        axis2 = -axis2
    a = np.array([axis2[0], axis2[1], 0.0])
    b = np.array([-a[1], a[0], 0.0])
    ta, tb = pts @ a, pts @ b
    extents = np.array([np.ptp(ta), np.ptp(tb)])
    if not _is_elongated(cloud, extents, config):
        # A square footprint has no principal axis: align with its faces instead.
        u = _min_area_axis(xy)
        if u is not None:
            a = np.array([u[0], u[1], 0.0])
            b = np.array([-a[1], a[0], 0.0])
            ta, tb = pts @ a, pts @ b
            extents = np.array([np.ptp(ta), np.ptp(tb)])
    mid_a, mid_b = 0.5 * (ta.max() + ta.min()), 0.5 * (tb.max() + tb.min())

    if _is_elongated(cloud, extents, config):
        half = 0.5 * config.central_fraction * extents[0]
    else:
        half = min(config.box_half_length, 0.5 * extents[0])
    offsets = np.linspace(-half, half, config.num_positions) if config.num_positions > 1 else np.zeros(1)
    rotation = _orient_like_home(b, _DOWN)

    out: list[GraspCandidate] = []
    for i, s in enumerate(offsets):
        slab = pts[np.abs(ta - (mid_a + s)) <= config.local_radius]
        if len(slab) == 0:
            slab = pts[np.argsort(np.abs(ta - (mid_a + s)))[:3]]
        top, bottom = slab[:, 2].max(), slab[:, 2].min()
        depth = min(config.max_depth, config.depth_fraction * (top - bottom))
        xy_pos = (mid_a + s) * a + mid_b * b
        out.append(
            GraspCandidate(
                position=np.array([xy_pos[0], xy_pos[1], top - depth]),
                rotation=rotation,
                width=_width(_extent(slab, b), config.width_margin, config.max_width),
                source="generic",
                index=i,
            )
        )
    return out


def index_candidates(*groups: Sequence[GraspCandidate]) -> list[GraspCandidate]:
    """Concatenate candidate groups into one set and number them 0..n-1 in that order.

    Selection breaks score ties by ``index`` and the content hash follows list order, so a set
    drawn from several samplers must be numbered once, here, before any method ranks it.
    """
    out = [c for group in groups for c in group]
    for i, cand in enumerate(out):
        cand.index = i
    return out


@dataclass(frozen=True)
class EnclosingGraspConfig:
    """Top-down grasps that close around a whole round body (a mug's or a bottle's).

    Stage 1 grasps a surface patch; a body of revolution narrower than the hand is better
    held around its axis, with both fingers on opposite sides of the wall. The axis comes from
    a circle fitted to the region's horizontal coordinates, so a single camera's half-view of
    the body is enough.

    Attributes:
        num_yaws: Closing-axis yaws spread over 180 deg (the task terms pick among them).
        max_fit_residual: Largest RMS distance (m) of the points from the fitted circle for the
            region to count as round.
        min_arc_deg: Smallest arc (deg) of the circle the points must cover, so that a flat
            patch is not mistaken for a huge circle.
        depth: How far below the region's top the TCP goes (m).
        width_margin: Added to the diameter for the pre-grasp opening (m).
        max_width: The hand's largest opening (m); wider bodies yield no grasps.
    """

    num_yaws: int = 4
    max_fit_residual: float = 0.004
    min_arc_deg: float = 90.0
    depth: float = 0.025
    width_margin: float = 0.008
    max_width: float = field(default_factory=lambda: _gripper().max_width)

    def __post_init__(self) -> None:
        if self.num_yaws < 1:
            raise ValueError(f"num_yaws must be >= 1, got {self.num_yaws}")
        if self.max_fit_residual <= 0 or self.depth <= 0 or self.width_margin < 0 or self.max_width <= 0:
            raise ValueError("max_fit_residual, depth and max_width must be > 0, width_margin >= 0")
        if not 0 < self.min_arc_deg <= 360:
            raise ValueError(f"min_arc_deg must be in (0, 360], got {self.min_arc_deg}")


def fit_circle(xy: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Least-squares circle through 2-D points (algebraic fit): centre, radius, RMS residual."""
    a = np.column_stack([2 * xy, np.ones(len(xy))])
    b = (xy**2).sum(axis=1)
    sol, *_ = np.linalg.lstsq(a, b, rcond=None)
    centre = sol[:2]
    radius = float(np.sqrt(max(sol[2] + centre @ centre, 0.0)))
    resid = float(np.sqrt(np.mean((np.linalg.norm(xy - centre, axis=1) - radius) ** 2)))
    return centre, radius, resid


def sample_enclosing_grasps(region_points: np.ndarray, config: EnclosingGraspConfig) -> list[GraspCandidate]:
    """Top-down grasps centred on a round region's vertical axis, closing across its diameter.

    Returns no grasp when the region is not round (fit residual or arc coverage fails) or is
    wider than the hand. The TCP sits ``depth`` below the region's top; yaws are spread over
    180 deg; ``source="affordance"``.
    """
    region = _validated_points(region_points, "region_points")
    if len(region) < 10:
        return []
    centre, radius, resid = fit_circle(region[:, :2])
    if resid > config.max_fit_residual or 2 * radius + config.width_margin > config.max_width:
        return []
    ang = np.sort(np.arctan2(region[:, 1] - centre[1], region[:, 0] - centre[0]))
    gaps = np.diff(np.concatenate([ang, [ang[0] + 2 * np.pi]]))
    if np.degrees(2 * np.pi - gaps.max()) < config.min_arc_deg:
        return []
    tcp = np.array([centre[0], centre[1], region[:, 2].max() - config.depth])
    # A tapered body (a paper cup) is widest near its top, where the pads close: size the
    # opening from the points at the pads' height, not from the whole-body fit.
    band = region[np.abs(region[:, 2] - tcp[2]) <= 0.01]
    if len(band):
        radius = max(radius, float(np.max(np.linalg.norm(band[:, :2] - centre, axis=1))))
    if 2 * radius + config.width_margin > config.max_width:
        return []
    out = []
    for j in range(config.num_yaws):
        t = np.pi * j / config.num_yaws
        y = np.array([np.cos(t), np.sin(t), 0.0])
        out.append(
            GraspCandidate(
                position=tcp,
                rotation=_orient_like_home(y, _DOWN),
                width=min(config.max_width, 2 * radius + config.width_margin),
                source="affordance",
            )
        )
    return out


def _gripper() -> GripperDescription:
    """The reference robot's gripper: where the configs' hand-size defaults come from."""
    return get_robot(DEFAULT_ROBOT).gripper


@dataclass(frozen=True)
class RimGraspConfig:
    """Top-down pinches of a round rim wider than the hand (a bowl's, a plate's).

    Attributes:
        num_angles: Pinch points spread evenly around the rim.
        max_fit_residual: Largest RMS distance (m) of the points from the fitted circle.
        depth: How far below the rim's top the TCP goes (m).
        width: Opening of the hand before it closes on the wall (m).
    """

    num_angles: int = 12
    max_fit_residual: float = 0.006
    depth: float = 0.012
    width: float = 0.04


def sample_rim_grasps(rim_points: np.ndarray, config: RimGraspConfig) -> list[GraspCandidate]:
    """Pinch grasps around a round rim: at each of ``num_angles`` points of the fitted circle, a
    top-down grasp whose fingers straddle the wall (closing radially). No grasp when the points
    are not round. ``source="generic"``; order: by angle from the circle's +x."""
    rim = _validated_points(rim_points, "rim_points")
    if len(rim) < 10:
        return []
    centre, radius, resid = fit_circle(rim[:, :2])
    if resid > config.max_fit_residual:
        return []
    top = float(rim[:, 2].max())
    out = []
    for k in range(config.num_angles):
        t = 2 * np.pi * k / config.num_angles
        radial = np.array([np.cos(t), np.sin(t), 0.0])
        tcp = np.array([centre[0] + radius * radial[0], centre[1] + radius * radial[1], top - config.depth])
        out.append(GraspCandidate(position=tcp, rotation=_orient_like_home(radial, _DOWN), width=config.width,
                                  source="generic"))
    return out
