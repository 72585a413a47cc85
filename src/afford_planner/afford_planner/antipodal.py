"""Generic antipodal grasps over a whole object cloud: what a grasp estimator without affordance
knowledge (AnyGrasp, GPD) proposes, for the baselines of the counterfactual evaluation.

The sampler knows nothing of parts or tasks; it looks for places where a parallel gripper can
squeeze the object:

1. surface normals by PCA over each point's k nearest neighbours (open3d);
2. random seed points; for each, the partner point within the finger stroke whose contact
   pair is most antipodal: with d the unit vector from seed p to partner q and n_p, n_q the
   normals, the pair's quality is

       q(p, q) = min(|n_p . d|, |n_q . d|)          (1 for two parallel faces squeezed head-on)

   and a pair is kept when q >= cos(friction_cone_deg), i.e. both normals lie within the
   friction cone around the closing line. Normals are compared up to sign: on a single-view
   cloud of a thin wall the PCA normal's sign is a guess, while two contact planes facing
   each other across the line are what the fingers need;
3. the grasp: TCP at the pair's midpoint, finger closing axis y = d, approach z the direction
   perpendicular to y nearest top-down (the executor's preferred approach), or horizontal
   away from the robot base when the pair is vertical;
4. support clearance: the object's lowest observed point stands for the surface it rests on;
   a grasp whose lower fingertip is less than ``min_tcp_height`` above it is backed off
   along the approach (the pads are long enough to hold the contacts a little off-centre),
   by at most ``max_backoff``, else the pair is dropped: a grasp estimator checks its grasps
   against the scene, and fingertips driven into the table are not a grasp;
5. non-maximum suppression by TCP distance, best quality first.

Each candidate carries ``terms["antipodal"] = q`` and ``source = "generic"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree

from afford_core.grasp import GraspCandidate
from afford_core.robots import DEFAULT_ROBOT, HOME_TCP_ROTATION, get_robot

_HOME_ROTATION = HOME_TCP_ROTATION
_DOWN = np.array([0.0, 0.0, -1.0])


@dataclass(frozen=True)
class AntipodalConfig:
    """Parameters of the generic antipodal sampler.

    Attributes:
        num_candidates: Most grasps returned (after suppression), best quality first.
        num_seeds: Seed points drawn from the cloud; each yields at most one pair.
        num_neighbors: Points in each PCA normal fit (20 spans ~1 cm at a depth camera's
            3-5 mm spacing: local enough for a handle, enough for a stable plane).
        max_width: Finger stroke (m); default the reference robot's gripper's (the pipeline
            passes the robot's own).
        min_width: Shortest contact distance considered (m): closer pairs are one noisy
            surface patch (2 mm depth noise tilts PCA normals), not two faces.
        width_margin: Added to the contact distance for the opening before closing (m), so the
            open fingers clear the surfaces on the way in; the opening is capped at max_width.
        friction_cone_deg: Half-angle of the friction cone (deg); 30 deg is mu ~ 0.58, a
            rubber pad on plastic.
        min_tcp_height: Lowest height of the lower fingertip's centre (the TCP for a
            horizontal closing axis) above the object's lowest observed point (m); 0.016 keeps
            fingertip pads like the Franka Hand's (which reach ~1 cm below their centre) off the
            support.
        max_backoff: Most the TCP is moved back along the approach to meet min_tcp_height
            (m); about half a fingertip pad, so the contacts stay between the pads.
        suppression_radius: Kept grasps' TCPs are at least this far apart (m).
        vertical_tolerance: A closing axis with |y . z_world| above this counts as vertical,
            and the grasp approaches horizontally instead of from above.
        seed: Seed of the sampler's random draws.
    """

    num_candidates: int = 12
    num_seeds: int = 300
    num_neighbors: int = 20
    max_width: float = field(default_factory=lambda: get_robot(DEFAULT_ROBOT).gripper.max_width)
    min_width: float = 0.015
    width_margin: float = 0.01
    friction_cone_deg: float = 30.0
    min_tcp_height: float = 0.016
    max_backoff: float = 0.012
    suppression_radius: float = 0.015
    vertical_tolerance: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if self.num_candidates < 1 or self.num_seeds < 1:
            raise ValueError(
                f"num_candidates and num_seeds must be >= 1, got {self.num_candidates}, {self.num_seeds}"
            )
        if self.num_neighbors < 3:
            raise ValueError(f"num_neighbors must be >= 3 for a plane fit, got {self.num_neighbors}")
        if not (0.0 <= self.min_width < self.max_width):
            raise ValueError(f"need 0 <= min_width < max_width, got {self.min_width}, {self.max_width}")
        if self.width_margin < 0:
            raise ValueError(f"width_margin must be >= 0, got {self.width_margin}")
        if not (0.0 < self.friction_cone_deg < 90.0):
            raise ValueError(f"friction_cone_deg must be in (0, 90), got {self.friction_cone_deg}")
        if self.min_tcp_height < 0 or self.max_backoff < 0:
            raise ValueError(
                f"min_tcp_height and max_backoff must be >= 0, got {self.min_tcp_height}, {self.max_backoff}"
            )
        if self.suppression_radius < 0:
            raise ValueError(f"suppression_radius must be >= 0, got {self.suppression_radius}")
        if not (0.0 < self.vertical_tolerance < 1.0):
            raise ValueError(f"vertical_tolerance must be in (0, 1), got {self.vertical_tolerance}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")


def estimate_normals(points: np.ndarray, num_neighbors: int) -> np.ndarray:
    """Unit PCA normals (N, 3) of ``points`` (smallest-variance direction of the k neighbours).

    The sign is arbitrary: the antipodal test compares normals up to sign.
    """
    import open3d as o3d  # heavy import (~1 s): only when a generic sampler actually runs

    pcd = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points))
    pcd.estimate_normals(o3d.geometry.KDTreeSearchParamKNN(knn=min(num_neighbors, len(points))))
    return np.asarray(pcd.normals, dtype=np.float64)


def _orient_like_home(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Rotation (y x z, +-y, z) with the finger order nearest the home TCP orientation, so that
    the last wrist joint stays away from its limits (both orders are the same parallel-jaw
    grasp)."""
    x = np.cross(y, z)
    if _HOME_ROTATION[:, 0] @ x + _HOME_ROTATION[:, 1] @ y < -1e-9:
        x, y = -x, -y
    return np.column_stack([x, y, z])


def approach_for(closing: np.ndarray, tcp: np.ndarray, config: AntipodalConfig) -> np.ndarray:
    """Approach perpendicular to ``closing``: nearest top-down, else horizontal away from the base."""
    y = closing / np.linalg.norm(closing)
    if abs(float(y @ _DOWN)) <= config.vertical_tolerance:
        z = _DOWN - (_DOWN @ y) * y
    else:
        # A vertical pair (top and bottom faces) is reached from the side, from the robot.
        out = np.array([tcp[0], tcp[1], 0.0])
        out = out if np.linalg.norm(out) > 1e-6 else np.array([1.0, 0.0, 0.0])
        z = out - (out @ y) * y
    return z / np.linalg.norm(z)


def antipodal_pairs(
    points: np.ndarray, normals: np.ndarray, config: AntipodalConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best antipodal partner of each of ``num_seeds`` random seed points.

    Returns:
        (seed indices, partner indices, qualities) of the pairs that pass the friction cone,
        each (P,).
    """
    rng = np.random.default_rng(config.seed)
    tree = cKDTree(points)
    seeds = rng.choice(len(points), size=min(config.num_seeds, len(points)), replace=False)
    reach = config.max_width - config.width_margin
    cos_cone = float(np.cos(np.radians(config.friction_cone_deg)))
    out_i, out_j, out_q = [], [], []
    for i, nbrs in zip(seeds, tree.query_ball_point(points[seeds], r=reach), strict=True):
        nbrs = np.asarray(nbrs, dtype=np.int64)
        delta = points[nbrs] - points[i]
        dist = np.linalg.norm(delta, axis=1)
        ok = dist >= max(config.min_width, 1e-9)
        if not np.any(ok):
            continue
        nbrs, d = nbrs[ok], delta[ok] / dist[ok, None]
        q = np.minimum(np.abs(d @ normals[i]), np.abs(np.einsum("ij,ij->i", d, normals[nbrs])))
        best = int(np.argmax(q))
        if q[best] >= cos_cone:
            out_i.append(int(i))
            out_j.append(int(nbrs[best]))
            out_q.append(float(q[best]))
    return np.array(out_i, dtype=np.int64), np.array(out_j, dtype=np.int64), np.array(out_q)


def sample_antipodal_grasps(points: np.ndarray, config: AntipodalConfig) -> list[GraspCandidate]:
    """Generic antipodal grasps over the whole object cloud (module docstring); may be empty.

    Args:
        points: (N, 3) world points of the object, every part of it.
        config: Sampler parameters; ``config.seed`` fixes the draws.

    Raises:
        ValueError: ``points`` is not a finite (N, 3) array with at least ``num_neighbors`` points.
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3 or not np.all(np.isfinite(pts)):
        raise ValueError(f"points must be a finite (N, 3) array, got shape {pts.shape}")
    if len(pts) < config.num_neighbors:
        raise ValueError(
            f"need at least num_neighbors={config.num_neighbors} points for the normals, got {len(pts)}"
        )
    normals = estimate_normals(pts, config.num_neighbors)
    si, pj, quality = antipodal_pairs(pts, normals, config)
    support_z = float(pts[:, 2].min())
    kept: list[GraspCandidate] = []
    # Best first, ties by seed index so the order is a function of the draws alone.
    for k in np.lexsort((si, -quality)):
        p, q = pts[si[k]], pts[pj[k]]
        tcp = 0.5 * (p + q)
        y = (q - p) / np.linalg.norm(q - p)
        z = approach_for(y, tcp, config)
        y = y - (y @ z) * z  # exact orthogonality after the projection round-off
        y /= np.linalg.norm(y)
        width = min(config.max_width, float(np.linalg.norm(q - p)) + config.width_margin)
        # The lower fingertip, not the TCP, is what meets the support under a tilted pair.
        short = config.min_tcp_height - (tcp[2] - 0.5 * width * abs(float(y[2])) - support_z)
        if short > 0:
            rise = -float(z[2])  # height gained per metre backed off along -approach
            if rise <= 1e-6 or short / rise > config.max_backoff:
                continue
            tcp = tcp - z * (short / rise)
        if any(np.linalg.norm(c.position - tcp) < config.suppression_radius for c in kept):
            continue
        kept.append(
            GraspCandidate(
                position=tcp,
                rotation=_orient_like_home(y, z),
                width=width,
                source="generic",
                terms={"antipodal": float(quality[k])},
            )
        )
        if len(kept) == config.num_candidates:
            break
    return kept
