"""Convex piece builders shared by the generators.

Every function here returns convex meshes only, because a piece is both the visual mesh and
one convex element of the collision decomposition. Non-convex shapes are therefore built as
lists of convex pieces: a wall of revolution as wedges, a handle as a chain of short hulls of
consecutive cross-section rings. Adjacent pieces share their boundary vertices exactly, so the
union has no cracks for a gripper finger or a point cloud to fall into.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import trimesh
from numpy.typing import ArrayLike

from .base import Piece

# Smallest accepted piece volume (m^3, i.e. 1 mm^3): anything thinner is a modelling error
# that would also make a degenerate collision geom.
MIN_PIECE_VOLUME = 1e-9

Z = np.array([0.0, 0.0, 1.0])

# A lathe profile: (radius, z) pairs from the bottom up, as a list or a (k, 2) array.
Profile = Sequence[tuple[float, float]] | np.ndarray


def hull(points: ArrayLike) -> trimesh.Trimesh:
    """Convex hull of ``points`` (k, 3); raises on a degenerate (flat or tiny) result."""
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    mesh = trimesh.convex.convex_hull(pts)
    if mesh.volume < MIN_PIECE_VOLUME:
        raise ValueError(f"degenerate convex piece: volume {mesh.volume:.3g} m^3 from {len(pts)} points")
    return mesh


def slab(lo: ArrayLike, hi: ArrayLike) -> trimesh.Trimesh:
    """Axis-aligned box between corners ``lo`` and ``hi``."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if np.any(hi - lo <= 0):
        raise ValueError(f"box corners must satisfy lo < hi, got {lo} and {hi}")
    return trimesh.creation.box(bounds=np.stack([lo, hi]))


def carton(length: float, width: float, height: float, band: float,
           overhang: float = 0.0) -> tuple[trimesh.Trimesh, trimesh.Trimesh]:
    """A box on the support, centred on its origin, as two slabs: the body below and a top
    band ``band`` tall, wider by ``overhang`` on every side (a lid's rim the fingers can find).
    The box, the chocolate box and the sugar box label the band as they need (body, lid, top)."""
    half = np.array([length, width]) / 2
    top = half + overhang
    return (slab([*-half, 0.0], [*half, height - band]),
            slab([*-top, height - band], [*top, height]))


def rod(p0: ArrayLike, p1: ArrayLike, radius: float, sections: int = 16) -> trimesh.Trimesh:
    """Solid cylinder of ``radius`` from ``p0`` to ``p1``."""
    segment = np.stack([p0, p1]).astype(float)
    return trimesh.creation.cylinder(radius=radius, segment=segment, sections=sections)


def ring(radius: float, z: float, sections: int, phase: float = 0.0) -> np.ndarray:
    """(sections, 3) points on a horizontal circle (a single point when ``radius`` is 0)."""
    if radius <= 0:
        return np.array([[0.0, 0.0, z]])
    a = phase + np.linspace(0, 2 * np.pi, sections, endpoint=False)
    return np.column_stack([radius * np.cos(a), radius * np.sin(a), np.full(sections, z)])


def lathe_solid(profile: Profile, sections: int = 24) -> list[trimesh.Trimesh]:
    """Solid of revolution about z as one frustum per profile step.

    Args:
        profile: (r, z) points with increasing z; r may be 0 at the ends (a cone tip).
        sections: Polygon sides of each ring.
    """
    prof = np.asarray(profile, dtype=float)
    if np.any(np.diff(prof[:, 1]) <= 0):
        raise ValueError("lathe_solid profile z must strictly increase")
    return [hull(np.vstack([ring(r0, z0, sections), ring(r1, z1, sections)]))
            for (r0, z0), (r1, z1) in zip(prof[:-1], prof[1:], strict=True)]


def lathe_shell(
    profile: Profile, thickness: float, sections: int = 20
) -> list[list[trimesh.Trimesh]]:
    """Thin wall of revolution about z, as wedges: result[j][i] spans profile step j, sector i.

    Args:
        profile: (r, z) points of the OUTER surface from bottom to top; the wall grows inward,
            along each point's in-plane normal, by ``thickness``. A rising wall ends in a level
            top edge.
        thickness: Wall thickness (m).
        sections: Angular sectors; each wedge is the hull of 8 points, so it is convex.
    """
    prof = np.asarray(profile, dtype=float)
    if len(prof) < 2 or thickness <= 0:
        raise ValueError("lathe_shell needs >= 2 profile points and a positive thickness")
    step = np.diff(prof, axis=0)
    step /= np.linalg.norm(step, axis=1, keepdims=True)
    tangent = np.vstack([step[:1], step[:-1] + step[1:], step[-1:]])
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    outward = np.column_stack([tangent[:, 1], -tangent[:, 0]])  # (dz, -dr): away from the axis
    inner = prof - thickness * outward
    if tangent[-1, 1] > 0.1:  # slide the top inner point along the wall so the top edge is level
        inner[-1] += tangent[-1] * (prof[-1, 1] - inner[-1, 1]) / tangent[-1, 1]
    angles = np.linspace(0, 2 * np.pi, sections + 1)
    cos, sin = np.cos(angles), np.sin(angles)

    def at(rz: np.ndarray, i: int) -> np.ndarray:
        return np.array([rz[0] * cos[i], rz[0] * sin[i], rz[1]])

    return [[hull([at(p, i) for p in (prof[j], prof[j + 1], inner[j], inner[j + 1]) for i in (k, k + 1)])
             for k in range(sections)] for j in range(len(prof) - 1)]


def sweep(
    path: ArrayLike,
    radius: float | ArrayLike,
    sections: int = 12,
    up: ArrayLike = Z,
    phase: float = 0.0,
    closed: bool = False,
) -> list[trimesh.Trimesh]:
    """A tube along ``path`` as one convex hull per path step.

    Each interior ring lies in the plane bisecting its two steps, so consecutive hulls share it
    and the tube has no gaps at bends. Ring frames are parallel-transported (no twist), which
    matters for non-circular sections.

    Args:
        path: (k, 3) centreline points.
        radius: Scalar, (k,) per point, or (k, 2) semi-axes (along the ``up``-side normal, along
            the binormal) for an elliptical section.
        sections: Polygon sides of each ring.
        up: Direction the first ring's first semi-axis leans towards.
        phase: Angle of the first polygon vertex (pi puts a vertex at the bottom when ``up`` is z).
        closed: Treat the path as a loop (last point joins the first).
    """
    pts = np.asarray(path, dtype=float)
    if closed:
        pts = np.vstack([pts, pts[:1]])
    k = len(pts)
    radii = np.asarray(radius, dtype=float)
    if radii.ndim == 0:
        radii = np.full((k - closed, 2), float(radii))
    elif radii.ndim == 1:
        radii = np.column_stack([radii, radii])
    if closed:
        radii = np.vstack([radii, radii[:1]])
    if radii.shape != (k, 2):
        raise ValueError(f"sweep radius must be scalar, (k,) or (k, 2) for k = {k - closed} points")
    steps = np.diff(pts, axis=0)
    lengths = np.linalg.norm(steps, axis=1)
    if np.any(lengths < 1e-6):
        raise ValueError("sweep path has repeated points")
    steps /= lengths[:, None]
    first = steps[-1] + steps[0] if closed else steps[0]
    last = first if closed else steps[-1]
    tangents = np.vstack([first, steps[:-1] + steps[1:], last])
    tangents /= np.linalg.norm(tangents, axis=1, keepdims=True)
    u = np.asarray(up, dtype=float) - np.dot(up, tangents[0]) * tangents[0]
    if np.linalg.norm(u) < 1e-6:  # up is along the path: any perpendicular will do
        u = np.cross(tangents[0], [1.0, 0.0, 0.0] if abs(tangents[0][0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    a = phase + np.linspace(0, 2 * np.pi, sections, endpoint=False)
    rings = []
    for p, t, (ru, rv) in zip(pts, tangents, radii, strict=True):
        u = u - np.dot(u, t) * t
        u /= np.linalg.norm(u)
        v = np.cross(t, u)
        rings.append(p + np.outer(ru * np.cos(a), u) + np.outer(rv * np.sin(a), v))
    return [hull(np.vstack([r0, r1])) for r0, r1 in zip(rings[:-1], rings[1:], strict=True)]


def superellipse(a: float, b: float, exponent: float, n: int = 17) -> np.ndarray:
    """(n, 2) points of the right half of a superellipse, from (0, b) round to (0, -b).

    ``exponent`` 2 gives an ellipse; larger values square it off (a D-shaped handle). The ends
    leave the axis horizontally, so a handle built on it meets a wall square-on.
    """
    t = np.linspace(np.pi / 2, -np.pi / 2, n)
    e = 2.0 / exponent
    return np.column_stack([a * np.abs(np.cos(t)) ** e, b * np.sign(np.sin(t)) * np.abs(np.sin(t)) ** e])


def in_plane(points2d: ArrayLike, origin: ArrayLike, u: ArrayLike, v: ArrayLike) -> np.ndarray:
    """Map (k, 2) plane coordinates to 3-D: ``origin + x * u + y * v``."""
    p = np.asarray(points2d, dtype=float)
    u_, v_ = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
    return np.asarray(origin, dtype=float) + np.outer(p[:, 0], u_) + np.outer(p[:, 1], v_)


def interp_radius(profile: Profile, z: float) -> float:
    """Radius of a lathe profile at height ``z`` (linear between profile points)."""
    prof = np.asarray(profile, dtype=float)
    return float(np.interp(z, prof[:, 1], prof[:, 0]))


def open_vessel(
    profile: Profile,
    wall: float,
    base: float,
    rim_band: float,
    base_radius: float,
    base_z: float = 0.0,
    sections: int = 20,
) -> tuple[list[trimesh.Trimesh], list[trimesh.Trimesh]]:
    """A hollow open-top vessel: a wall of revolution and a base disc.

    Args:
        profile: Outer (r, z) profile from the bottom to the top edge at the largest z.
        wall: Wall thickness (m).
        base: Base disc thickness (m).
        rim_band: Height of the top band of the wall returned as the rim.
        base_radius: Base disc radius, the inner radius of the wall at the base so they meet.
        base_z: Height of the underside of the base (> 0 for a recessed bottom).
        sections: Angular wedges of the wall.

    Returns:
        (body pieces: wall below the rim band and the base; rim pieces: the top band).
    """
    prof = np.asarray(profile, dtype=float)
    cut = prof[-1, 1] - rim_band
    if not prof[0, 1] < cut:
        raise ValueError(f"rim band {rim_band} is taller than the vessel profile")
    below = prof[prof[:, 1] < cut - 1e-4]
    r_cut = float(np.interp(cut, prof[:, 1], prof[:, 0]))
    prof = np.vstack([below, [r_cut, cut], prof[-1]])
    wedges = lathe_shell(prof, wall, sections)
    bottom = trimesh.creation.cylinder(radius=base_radius, segment=[[0, 0, base_z], [0, 0, base_z + base]],
                                       sections=2 * sections)
    body = [m for step in wedges[:-1] for m in step] + [bottom]
    return body, wedges[-1]


@dataclass
class PieceSet:
    """Labelled convex pieces of one link.

    Attributes:
        pieces: Pieces in the link frame.
    """

    pieces: list[Piece] = field(default_factory=list)

    def add(self, part: str, meshes: trimesh.Trimesh | Iterable) -> None:
        """Add ``meshes`` (one mesh or nested lists of them) as pieces of ``part``."""
        if isinstance(meshes, trimesh.Trimesh):
            self.pieces.append(Piece(part, meshes))
            return
        for m in meshes:
            self.add(part, m)

    @property
    def volume(self) -> float:
        return float(sum(pc.mesh.volume for pc in self.pieces))
