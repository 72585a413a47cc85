"""Part-labelled 3-D objects authored independently of the project's procedural asset generator.

Why this module exists: a part-segmentation model trained on one procedural generator learns that
generator's habits (its handle paths, its rim bands, its proportions). Testing it on more output of
the same generator says little about real objects. These objects were written from scratch by an
author who never read that generator, from the ontology's part names and from how the real things
look, so a model's score on them measures transfer to shapes it never saw.

Every object is a :class:`LabelledMesh`: a triangle mesh in metres, standing upright on ``z = 0``,
centred in x-y, with one ontology part name per face. Shapes come from surfaces of revolution with
real wall thickness (vessels are hollow: a camera sees into a mug), tubes swept along curves with
round, oval, flat or D-shaped sections (handles, spouts, bails), thick parametric sheets (a flour
scoop's trough), star-shaped extrusions (cutting boards) and a few trimesh primitives (boxes,
cylinders, spheres). The seed picks a shape family per category and its proportions, so a handful
of seeds already covers loops, hooks, goosenecks, rolled rims and square-ish bodies.

Part boundaries, as a person would draw them:

* ``rim`` is the top band of a vessel's wall, inside and outside, 4-15 mm tall, with whatever
  lies on top of it (a rolled bead, a rounded lip, a flared lip); a basket's braided border too.
* a pot's or kettle's ``lid`` is the removable cover; a kettle's lid knob is part of its lid
  (the kettle has no ``knob`` part), a pot lid's knob, ring or bar is the pot's ``knob``.
* ``handle`` is everything grasped by the hand from where it leaves the body: loop, grip,
  bracket and hanging ring; a cutting board's ``handle`` is its paddle tab or the end strip that
  holds its hand hole.
* a hammer's ``head`` is the metal/wooden head (face, claw, peen, ball); ``handle`` the shaft.
* a scoop's ``bowl`` is the whole cup/trough including its rim; ``handle`` the shaft.
* a bottle's ``cap`` is the closure on top of the neck; the neck and its collar are ``body``.

Parts that may be absent: a pot's ``lid`` and ``knob`` (about one pot in seven stands open, as
pots often do on a counter); a kettle's ``lid`` on the watering-can family (its fill hole is
open). Every other part is present on every instance.

Robosuite 1.5.2's object meshes (``models/assets/objects/meshes``) are a bottle, bread, a can,
a cereal box, a lemon, a milk carton, door handles and cube/cylinder/sphere primitives. Only
``bottle.stl`` fits a category here (``bottle``); its cap is found by geometry (the separate
shell above the narrow neck). The can is a soup can and the milk mesh a gable-top carton, neither
in these eleven categories, so they are not used.

:func:`partial_view` turns an object into what a RealSense D4xx sees from one viewpoint: ray cast
on the camera's pixel grid, depth noise growing with the square of distance, holes at grazing
angles and where the second imager cannot see (stereo shadow), speckle dropouts and flying pixels
smeared along the viewing ray at depth edges.

Public API: :data:`CATEGORIES`, :func:`make_object`, :func:`instances`, :func:`partial_view`, and
for finer control :func:`render_view` (the whole frame, with noise-free surface points and the
camera, as :class:`PartialView`), :func:`robosuite_sources`, :func:`robosuite_object` and
:func:`nearest_faces`.
"""

from __future__ import annotations

import importlib.util
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import trimesh

from afford_core.ontology import category as ontology_category

CATEGORIES: tuple[str, ...] = (
    "mug",
    "kettle",
    "hammer",
    "pan",
    "pot",
    "scoop",
    "paper_cup",
    "bowl",
    "bottle",
    "basket",
    "cutting_board",
)

# A radial factor r(phi, z) -> multiplier, shape (len(z), len(phi)): square-ish bodies, ribs, weave.
Shape = Callable[[np.ndarray, np.ndarray], np.ndarray]

_TWO_PI = 2.0 * math.pi


@dataclass(frozen=True, eq=False)
class LabelledMesh:
    """One test object: a mesh and the ontology part of each of its faces.

    Attributes:
        category: Ontology category name (``"mug"``).
        mesh: Triangle mesh in metres, upright on ``z = 0``, centred in x-y. Meshes may be unions
            of overlapping closed shells (a handle's end sits inside the wall it joins): faces
            hidden inside another shell are never seen by a camera.
        face_parts: One part name per face, each among the category's ontology parts.
        origin: ``"primitives"`` for objects built here, ``"robosuite:<path>"`` (path relative to
            the robosuite package) for a robosuite mesh labelled here.
        family: Shape family within the category (``"teapot"``, ``"claw"``), for breaking scores
            down by kind of shape.
    """

    category: str
    mesh: trimesh.Trimesh
    face_parts: np.ndarray
    origin: str
    family: str = ""

    def __post_init__(self) -> None:
        if len(self.face_parts) != len(self.mesh.faces):
            raise ValueError(f"{len(self.face_parts)} face labels for {len(self.mesh.faces)} faces")

    @property
    def parts_present(self) -> tuple[str, ...]:
        """The category's parts that label at least one face, in ontology order."""
        present = set(self.face_parts.tolist())
        return tuple(p for p in ontology_category(self.category).parts if p in present)


# --------------------------------------------------------------------------------------------------
# Geometry helpers
# --------------------------------------------------------------------------------------------------


def _signed_volume(vertices: np.ndarray, faces: np.ndarray) -> float:
    """Signed volume of a closed triangle surface; negative when its faces wind inwards."""
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def _closed_mesh(vertices: np.ndarray, faces: np.ndarray) -> trimesh.Trimesh:
    """A mesh with outward-wound faces (every builder here makes closed shells, so the sign of
    the volume tells which way they wind); ``process=False`` keeps face order for the labels."""
    faces = np.asarray(faces, dtype=np.int64)
    if _signed_volume(vertices, faces) < 0:
        faces = faces[:, ::-1]
    return trimesh.Trimesh(vertices=np.asarray(vertices, dtype=np.float64), faces=faces, process=False)


def _superellipse(n: float, aspect: float = 1.0) -> Shape:
    """Radial factor of a superellipse ``|x|^n + |y/aspect|^n = 1``, 1 along +x and -x.

    Why: one lathe then makes round (n=2), oval (aspect<1) and square-ish (n=4..6) bodies, and a
    handle attached at phi=0 always meets the wall at the profile's own radius.
    """

    def factor(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        c = np.abs(np.cos(phi))
        s = np.abs(np.sin(phi)) / aspect
        rho = (c**n + s**n + 1e-12) ** (-1.0 / n)
        return np.broadcast_to(rho, (len(z), len(phi))).copy()

    return factor


def _combine(*shapes: Shape | None) -> Shape | None:
    """Product of radial factors (a square body that is also ribbed)."""
    used = [s for s in shapes if s is not None]
    if not used:
        return None

    def factor(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        out = np.ones((len(z), len(phi)))
        for s in used:
            out = out * s(phi, z)
        return out

    return factor


def _lathe(
    profile: Sequence[Sequence[float]] | np.ndarray,
    labels: Sequence[str],
    *,
    sections: int = 72,
    shape: Shape | None = None,
    closed: bool = False,
) -> tuple[trimesh.Trimesh, np.ndarray]:
    """Revolve an (r, z) profile about the z axis into a closed shell, one label per segment.

    An open profile must start and end on the axis (r = 0): those points become poles and the
    result is a closed solid (a hollow mug is one such profile: outside, rim, inside). A closed
    profile (``closed=True``) is a loop off the axis and makes a ring (a rolled rim, a bead).
    Written here rather than with ``trimesh.creation.revolve`` so each profile segment keeps its
    label and an optional radial ``shape`` can make the ring non-circular.

    Returns:
        The mesh and a label per face.
    """
    prof = np.asarray(profile, dtype=np.float64)
    keep = np.ones(len(prof), dtype=bool)
    keep[1:] = np.linalg.norm(np.diff(prof, axis=0), axis=1) > 1e-9
    seg_labels = list(labels)
    if not keep.all():  # drop repeated points, and the label of the zero-length segment before them
        idx = np.flatnonzero(~keep)
        for i in sorted(idx, reverse=True):
            del seg_labels[i - 1]
        prof = prof[keep]
    m = len(prof)
    expected = m if closed else m - 1
    if len(seg_labels) != expected:
        raise ValueError(f"{len(seg_labels)} labels for {expected} profile segments")
    phi = np.linspace(0.0, _TWO_PI, sections, endpoint=False)
    factor = shape(phi, prof[:, 1]) if shape is not None else np.ones((m, sections))
    verts: list[np.ndarray] = []
    rings: list[np.ndarray | int] = []
    count = 0
    for j, (r, z) in enumerate(prof):
        if not closed and r <= 1e-9:
            verts.append(np.array([[0.0, 0.0, z]]))
            rings.append(count)
            count += 1
        else:
            rr = r * factor[j]
            verts.append(np.column_stack([rr * np.cos(phi), rr * np.sin(phi), np.full(sections, z)]))
            rings.append(np.arange(count, count + sections))
            count += sections
    k = np.arange(sections)
    k1 = (k + 1) % sections
    faces: list[np.ndarray] = []
    face_labels: list[np.ndarray] = []
    pairs = [(j, j + 1) for j in range(m - 1)] + ([(m - 1, 0)] if closed else [])
    for s, (ja, jb) in enumerate(pairs):
        a, b = rings[ja], rings[jb]
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            f = np.concatenate([np.column_stack([a[k], a[k1], b[k1]]), np.column_stack([a[k], b[k1], b[k]])])
        elif isinstance(b, np.ndarray):  # pole to ring
            f = np.column_stack([np.full(sections, a), b[k1], b[k]])
        elif isinstance(a, np.ndarray):  # ring to pole
            f = np.column_stack([a[k], a[k1], np.full(sections, b)])
        else:
            continue
        faces.append(f)
        face_labels.append(np.full(len(f), seg_labels[s], dtype=object))
    mesh = _closed_mesh(np.concatenate(verts), np.concatenate(faces))
    return mesh, np.concatenate(face_labels)


def _frames(path: np.ndarray, side: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tangent, side and normal along a polyline.

    With ``side`` given (the normal of a planar path), the section's first axis stays along it, so
    a flat handle keeps its broad face where it belongs; otherwise a rotation-minimising frame.
    """
    tangent = np.gradient(path, axis=0)
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True) + 1e-15
    n = len(path)
    u = np.zeros_like(path)
    if side is not None:
        s = np.asarray(side, dtype=np.float64)
        u = s[None, :] - (tangent @ s)[:, None] * tangent
    if side is None or np.any(np.linalg.norm(u, axis=1) < 1e-6):
        ref = np.array([0.0, 0.0, 1.0]) if abs(tangent[0, 2]) < 0.9 else np.array([1.0, 0.0, 0.0])
        u[0] = ref - (ref @ tangent[0]) * tangent[0]
        u[0] /= np.linalg.norm(u[0])
        for i in range(1, n):  # parallel transport
            v = u[i - 1] - (u[i - 1] @ tangent[i]) * tangent[i]
            u[i] = v / (np.linalg.norm(v) + 1e-15)
    u /= np.linalg.norm(u, axis=1, keepdims=True) + 1e-15
    v = np.cross(tangent, u)
    return tangent, u, v


def _sweep(
    path: np.ndarray,
    section: np.ndarray,
    *,
    side: Sequence[float] | None = None,
    scale: np.ndarray | float = 1.0,
    closed: bool = False,
) -> trimesh.Trimesh:
    """A closed tube: ``section`` (C, 2) swept along ``path`` (K, 3), optionally scaled per point.

    The section's x is laid along ``side`` and its y along ``tangent x side``. Open tubes get flat
    end caps (fans from the path point: every section here is star-shaped about its centre).
    """
    path = np.asarray(path, dtype=np.float64)
    sec = np.asarray(section, dtype=np.float64)
    sc_in = np.asarray(scale, dtype=np.float64)
    sc: np.ndarray
    if sc_in.ndim == 0:
        sc = np.full((len(path), 2), float(sc_in))
    elif sc_in.ndim == 1:
        sc = np.repeat(sc_in[:, None], 2, axis=1)
    else:
        sc = sc_in
    if closed:  # frames of a loop from a wrapped gradient
        ext = np.concatenate([path[-1:], path, path[:1]])
        _, u, v = _frames(ext, None if side is None else np.asarray(side))
        u, v = u[1:-1], v[1:-1]
    else:
        _, u, v = _frames(path, None if side is None else np.asarray(side))
    c, k = len(sec), len(path)
    ring = (
        path[:, None, :]
        + u[:, None, :] * (sc[:, None, 0:1] * sec[None, :, 0:1])
        + v[:, None, :] * (sc[:, None, 1:2] * sec[None, :, 1:2])
    )
    verts = ring.reshape(-1, 3)
    i = np.arange(c)
    i1 = (i + 1) % c
    faces = []
    for j in range(k if closed else k - 1):
        jn = (j + 1) % k
        a, b = j * c, jn * c
        faces.append(np.column_stack([a + i, a + i1, b + i1]))
        faces.append(np.column_stack([a + i, b + i1, b + i]))
    if not closed:
        start, end = len(verts), len(verts) + 1
        verts = np.concatenate([verts, path[:1], path[-1:]])
        last = (k - 1) * c
        faces.append(np.column_stack([np.full(c, start), i1, i]))
        faces.append(np.column_stack([np.full(c, end), last + i, last + i1]))
    return _closed_mesh(verts, np.concatenate(faces))


def _section(kind: str, width: float, height: float, n: int = 20) -> np.ndarray:
    """A handle/spout cross-section, ``width`` along the sweep's side axis, ``height`` across it.

    ``round``/``oval``: ellipse; ``flat``: rounded rectangle (a strap or a pressed-steel handle);
    ``D``: round on +y, nearly flat on -y (the flat side faces the hand's palm or the body).
    """
    t = np.linspace(0.0, _TWO_PI, n, endpoint=False)
    c, s = np.cos(t), np.sin(t)
    if kind in ("round", "oval"):
        return np.column_stack([0.5 * width * c, 0.5 * height * s])
    if kind == "flat":
        p = 5.0
        return np.column_stack(
            [
                0.5 * width * np.sign(c) * np.abs(c) ** (2 / p),
                0.5 * height * np.sign(s) * np.abs(s) ** (2 / p),
            ]
        )
    if kind == "D":
        y = np.where(s >= 0, 0.5 * height * s, -0.5 * height * np.abs(s) ** 0.15)
        xs = np.where(s >= 0, c, np.sign(c) * np.abs(c) ** 0.4)
        return np.column_stack([0.5 * width * xs, y])
    raise ValueError(f"unknown section {kind!r}")


def _block(grid: np.ndarray) -> np.ndarray:
    """Boundary faces of a structured (U, V, 2) vertex-index block (a thick sheet).

    Each face of the block is wound the same way relative to the index axes, so the whole surface is
    consistently oriented and :func:`_closed_mesh` only has to pick the sign.
    """

    def quads(a: np.ndarray) -> np.ndarray:  # a: (P, Q) indices, quads (p,q),(p+1,q),(p+1,q+1),(p,q+1)
        p0, p1 = a[:-1, :-1].ravel(), a[1:, :-1].ravel()
        p2, p3 = a[1:, 1:].ravel(), a[:-1, 1:].ravel()
        return np.concatenate([np.column_stack([p0, p1, p2]), np.column_stack([p0, p2, p3])])

    g = grid
    faces = [
        quads(g[:, :, 1]),
        quads(g[:, :, 0])[:, ::-1],
        quads(g[-1, :, :]),
        quads(g[0, :, :])[:, ::-1],
        quads(g[:, -1, :].T),
        quads(g[:, 0, :].T)[:, ::-1],
    ]
    return np.concatenate(faces)


def _thick_sheet(surface: np.ndarray, thickness: float) -> trimesh.Trimesh:
    """A closed sheet of ``thickness`` from a (U, V, 3) grid of points on one of its faces."""
    du = np.gradient(surface, axis=0)
    dv = np.gradient(surface, axis=1)
    normal = np.cross(du, dv)
    normal /= np.linalg.norm(normal, axis=2, keepdims=True) + 1e-15
    other = surface - thickness * normal
    u, v = surface.shape[:2]
    verts = np.concatenate([surface.reshape(-1, 3), other.reshape(-1, 3)])
    grid = np.stack([np.arange(u * v).reshape(u, v), u * v + np.arange(u * v).reshape(u, v)], axis=2)
    return _closed_mesh(verts, _block(grid))


def _star_prism(
    outline: np.ndarray,
    center: Sequence[float],
    z0: float,
    z1: float,
    *,
    hole: np.ndarray | None = None,
    bevel: float = 0.0,
    flat_x: float | Sequence[float] = (),
    n: int = 160,
) -> trimesh.Trimesh:
    """A slab between ``z0`` and ``z1`` whose outline is star-shaped about ``center``.

    The outline (a closed (P, 2) polygon) and the optional hole are resampled along rays from the
    centre, so top and bottom are strips between matching points and no polygon triangulator is
    needed. ``bevel`` rounds the top and bottom edges (the outline shrinks towards the faces),
    except along the lines ``x = flat_x`` where the slab meets another part of the same board.
    """
    cx, cy = float(center[0]), float(center[1])
    theta = np.linspace(0.0, _TWO_PI, n, endpoint=False)
    r_out = _ray_polygon(outline, (cx, cy), theta)
    r_in = _ray_polygon(hole, (cx, cy), theta) if hole is not None else np.zeros(n)
    levels = [z0, z1]
    insets = [0.0, 0.0]
    if bevel > 0:
        a = np.linspace(0, 0.5 * math.pi, 4)
        # Rows from the bottom face up: a quarter round at each edge, (height, inset) per row.
        bottom = [(z0 + bevel * (1 - math.cos(x)), bevel * (1 - math.sin(x))) for x in a]
        top = [(z1 - bevel + bevel * math.sin(x), bevel * (1 - math.cos(x))) for x in a]
        levels = [z for z, _ in bottom] + [z for z, _ in top]
        insets = [i for _, i in bottom] + [i for _, i in top]
    dirs = np.column_stack([np.cos(theta), np.sin(theta)])
    edge_x = cx + r_out * dirs[:, 0]
    soft = np.ones(n)
    for fx in np.atleast_1d(np.asarray(flat_x, dtype=np.float64)):
        soft[np.abs(edge_x - fx) < 1e-5] = 0.0
    rows_out = [
        np.column_stack(
            [cx + (r_out - d * soft) * dirs[:, 0], cy + (r_out - d * soft) * dirs[:, 1], np.full(n, z)]
        )
        for z, d in zip(levels, insets, strict=True)
    ]
    nl = len(levels)
    if hole is None:
        # Column 0: centre point at each end; the block is (n, [bottom-centre, rings..., top-centre]).
        verts = np.concatenate(rows_out + [np.array([[cx, cy, z0], [cx, cy, z1]])])
        base = len(verts) - 2
        ring = np.arange(n)
        nxt = (ring + 1) % n
        faces = []
        for j in range(nl - 1):
            lo_row, hi_row = j * n, (j + 1) * n
            faces.append(np.column_stack([lo_row + ring, lo_row + nxt, hi_row + nxt]))
            faces.append(np.column_stack([lo_row + ring, hi_row + nxt, hi_row + ring]))
        faces.append(np.column_stack([np.full(n, base), nxt, ring]))
        top_row = (nl - 1) * n
        faces.append(np.column_stack([np.full(n, base + 1), top_row + ring, top_row + nxt]))
        return _closed_mesh(verts, np.concatenate(faces))
    rows_in = [
        np.column_stack([cx + (r_in + d) * dirs[:, 0], cy + (r_in + d) * dirs[:, 1], np.full(n, z)])
        for z, d in zip(levels, insets, strict=True)
    ]
    # A ring of quads: outer wall rows, then top strip, then inner wall rows (reversed), bottom strip.
    loop = rows_out + rows_in[::-1]
    verts = np.concatenate(loop)
    m = len(loop)
    ring = np.arange(n)
    nxt = (ring + 1) % n
    strips = []
    for j in range(m):
        lo_row, hi_row = j * n, ((j + 1) % m) * n
        strips.append(np.column_stack([lo_row + ring, lo_row + nxt, hi_row + nxt]))
        strips.append(np.column_stack([lo_row + ring, hi_row + nxt, hi_row + ring]))
    return _closed_mesh(verts, np.concatenate(strips))


def _ray_polygon(poly: np.ndarray, center: tuple[float, float], theta: np.ndarray) -> np.ndarray:
    """Distance from ``center`` to a star-shaped closed polygon along each direction ``theta``."""
    p = np.asarray(poly, dtype=np.float64) - np.asarray(center)
    a, b = p, np.roll(p, -1, axis=0)
    d = np.column_stack([np.cos(theta), np.sin(theta)])
    e = b - a  # (P, 2)
    # Solve t*d = a + s*e for each ray/edge pair.
    den = d[:, None, 0] * e[None, :, 1] - d[:, None, 1] * e[None, :, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (a[None, :, 0] * e[None, :, 1] - a[None, :, 1] * e[None, :, 0]) / den
        s = (a[None, :, 0] * d[:, None, 1] - a[None, :, 1] * d[:, None, 0]) / den
    ok = (np.abs(den) > 1e-15) & (s >= -1e-9) & (s <= 1 + 1e-9) & (t > 0)
    t = np.where(ok, t, np.inf)
    return t.min(axis=1)


def _rounded_rect(length: float, width: float, radius: float, n: int = 24) -> np.ndarray:
    """Closed outline of a rectangle centred at the origin with rounded corners."""
    radius = min(radius, 0.5 * min(length, width) - 1e-4)
    pts = []
    corners = [(1, 1, 0.0), (-1, 1, 0.5 * math.pi), (-1, -1, math.pi), (1, -1, 1.5 * math.pi)]
    for sx, sy, a0 in corners:
        cx, cy = sx * (0.5 * length - radius), sy * (0.5 * width - radius)
        for a in np.linspace(a0, a0 + 0.5 * math.pi, n):
            pts.append((cx + radius * math.cos(a), cy + radius * math.sin(a)))
    return np.array(pts)


def _insert_level(curve: np.ndarray, z: float) -> np.ndarray:
    """The polyline with a vertex added wherever it crosses height ``z``, so a part boundary at that
    height falls on a face edge (labels are per face and must not straddle it)."""
    out = [curve[0]]
    for a, b in zip(curve[:-1], curve[1:], strict=True):
        if (a[1] - z) * (b[1] - z) < 0:
            t = (z - a[1]) / (b[1] - a[1])
            out.append(a + t * (b - a))
        out.append(b)
    return np.array(out)


def _cut_at(curve: np.ndarray, z: float) -> np.ndarray:
    """The prefix of a polyline that rises to height ``z``, ending exactly there."""
    above = np.flatnonzero(curve[:, 1] >= z)
    above = above[above > 0]
    if len(above) == 0:
        return curve
    i = int(above[0])
    a, b = curve[i - 1], curve[i]
    t = (z - a[1]) / (b[1] - a[1]) if b[1] != a[1] else 1.0
    return np.concatenate([curve[:i], [a + t * (b - a)]])


def _wall_curve(
    height: float, radius: Callable[[np.ndarray], np.ndarray], fillet: float, n: int = 48
) -> np.ndarray:
    """Outer (r, z) profile of a vessel: flat bottom from the axis, a fillet, then ``radius(s)``
    up to ``s = 1`` (z = height), extended a little above for the wall offset to be cut cleanly."""
    s = np.linspace(0.0, 1.0, n)
    wall = np.column_stack([radius(s), s * height])
    r0 = float(wall[0, 0])
    dz = 1e-3 * height
    drdz = (float(radius(np.array([dz / height]))[0]) - r0) / dz
    beta = math.atan(drdz)  # wall angle from vertical, outward positive
    pts = [np.array([0.0, 0.0])]
    if fillet > 0 and beta < math.radians(70):
        theta = 0.5 * math.pi + beta  # angle between the bottom (inward) and the wall
        d = fillet / math.tan(0.5 * theta)
        d = min(d, 0.8 * r0)
        f = d * math.tan(0.5 * theta)
        center = np.array([r0 - d, f])
        t2 = np.array([r0 + d * math.sin(beta), d * math.cos(beta)])
        a0 = -0.5 * math.pi
        a1 = math.atan2(t2[1] - center[1], t2[0] - center[0])
        pts.append(np.array([r0 - d, 0.0]))
        for a in np.linspace(a0, a1, 8)[1:]:
            pts.append(center + f * np.array([math.cos(a), math.sin(a)]))
        wall = wall[wall[:, 1] > pts[-1][1] + 1e-6]
    else:
        pts.append(np.array([max(r0, 1e-4), 0.0]))
        wall = wall[1:]
    curve = np.concatenate([np.array(pts), wall])
    # Extend along the last tangent so the inner offset reaches the cut height everywhere.
    tdir = curve[-1] - curve[-2]
    tdir /= np.linalg.norm(tdir)
    ext = curve[-1] + np.outer(np.linspace(0.004, 0.02, 4), tdir)
    return np.concatenate([curve, ext])


def _offset_inward(curve: np.ndarray, wall: float, bottom: float) -> np.ndarray:
    """The inside of a vessel: the outer profile moved along its inward normal, by ``bottom`` where
    the surface faces down and ``wall`` where it faces out (thicker bases, thinner walls)."""
    t = np.gradient(curve, axis=0)
    t /= np.linalg.norm(t, axis=1, keepdims=True) + 1e-15
    normal = np.column_stack([-t[:, 1], t[:, 0]])
    d = wall * np.abs(normal[:, 0]) + bottom * np.abs(normal[:, 1])
    inner = curve + d[:, None] * normal
    inner[0, 0] = 0.0
    keep = inner[:, 0] >= 0.0
    keep[0] = True
    inner = inner[keep]
    # Drop points that would fold the inner profile back on itself at sharp outer corners.
    out = [inner[0]]
    for p in inner[1:]:
        if p[1] >= out[-1][1] - 1e-9 or p[0] > out[-1][0]:
            out.append(p)
    return np.array(out)


@dataclass
class _Vessel:
    """A hollow vessel built by :func:`_vessel`, with what handles and lids need to attach."""

    mesh: trimesh.Trimesh
    labels: np.ndarray
    top: float  # height of the highest point of the rim
    wall_top: float  # height where the wall ends and the rim cap begins
    outer: np.ndarray  # outer (r, z) wall profile, z increasing
    inner_top: float  # inner radius at the wall top
    thickness: float

    def outer_radius(self, z: float) -> float:
        """Outer radius of the wall at height ``z`` (along +x / -x)."""
        w = self.outer[self.outer[:, 0] > 0.5 * self.outer[:, 0].max()]
        return float(np.interp(z, w[:, 1], w[:, 0]))


def _vessel(
    height: float,
    radius: Callable[[np.ndarray], np.ndarray],
    *,
    wall: float,
    bottom: float,
    rim: str,
    band: float,
    body: str = "body",
    rim_label: str = "rim",
    fillet: float | None = None,
    foot: tuple[float, float, float] | None = None,
    shape: Shape | None = None,
    sections: int = 80,
) -> _Vessel:
    """A hollow vessel of revolution with a labelled rim band.

    ``radius(s)`` gives the outer radius at ``z = s * height``; the wall is offset inward by
    ``wall`` (``bottom`` at the base). ``rim`` is ``flat``, ``rounded`` (half-round lip),
    ``bead`` (a thickened rolled-over lip, a ring around the wall top) or ``rolled`` (a bead curled
    outwards, as on paper cups and steel bowls). Faces within ``band`` of the wall top, inside and
    outside, and the rim cap are ``rim_label``; the rest ``body``. ``foot`` is (height, inner
    radius, outer radius) of a foot ring.
    """
    fillet = 1.4 * max(wall, bottom) if fillet is None else max(fillet, 1.3 * max(wall, bottom))
    outer_full = _wall_curve(height, radius, fillet)
    inner_full = _offset_inward(outer_full, wall, bottom)
    wall_top = height
    cap_h = 0.0
    if rim == "rounded":
        cap_h = 0.5 * wall
    wall_top = height - cap_h
    z_band = wall_top - band
    outer = _insert_level(_cut_at(outer_full, wall_top), z_band)
    inner = _insert_level(_cut_at(inner_full, wall_top), z_band)
    ro, ri = outer[-1, 0], inner[-1, 0]
    if rim == "rounded":
        mid, half = 0.5 * (ro + ri), 0.5 * (ro - ri)
        cap = [
            (mid + half * math.cos(a), wall_top + half * math.sin(a))
            for a in np.linspace(0, math.pi, 9)[1:-1]
        ]
    else:
        cap = []
    if foot is not None:
        hf, rf_in, rf_out = foot
        outer = outer + np.array([0.0, hf])
        inner = inner + np.array([0.0, hf])
        wall_top += hf
        z_band += hf
        cap = [(r, z + hf) for r, z in cap]
        bev = 0.2 * (rf_out - rf_in)
        head = outer[outer[:, 0] < rf_in]
        tail = outer[outer[:, 0] > rf_out + 0.3 * (rf_out - rf_in)]
        outer = np.concatenate([head, [[rf_in, hf], [rf_in + bev, 0.0], [rf_out - bev, 0.0]], tail])
    prof = np.concatenate([outer, np.array(cap).reshape(-1, 2), inner[::-1]])
    prof[-1, 0] = 0.0
    zmin_seg = np.minimum(prof[:-1, 1], prof[1:, 1])
    rmin_seg = np.minimum(prof[:-1, 0], prof[1:, 0])
    is_rim = (zmin_seg >= z_band - 1e-9) & (rmin_seg > 0.3 * ri)
    labels = [rim_label if r else body for r in is_rim]
    mesh, face_labels = _lathe(prof, labels, sections=sections, shape=shape)
    top = wall_top + cap_h
    parts_m = [mesh]
    parts_l = [face_labels]
    if rim in ("bead", "rolled"):
        b = max(0.6 * wall, 0.0012) if rim == "bead" else max(1.1 * wall, 0.0013)
        if rim == "bead":
            c = (0.5 * (ro + ri), wall_top)
        else:
            c = (ro - 0.5 * wall + 0.45 * b, wall_top - 0.25 * b)
        ring = [
            (c[0] + b * math.cos(a), c[1] + b * math.sin(a))
            for a in np.linspace(0, _TWO_PI, 14, endpoint=False)
        ]
        bead, _ = _lathe(ring, [rim_label] * len(ring), sections=sections, shape=shape, closed=True)
        parts_m.append(bead)
        parts_l.append(np.full(len(bead.faces), rim_label, dtype=object))
        top = max(top, c[1] + b)
    merged = trimesh.util.concatenate(parts_m) if len(parts_m) > 1 else mesh
    return _Vessel(
        mesh=merged,
        labels=np.concatenate(parts_l),
        top=top,
        wall_top=wall_top,
        outer=outer,
        inner_top=ri,
        thickness=wall,
    )


class _Parts:
    """Collects labelled closed shells and turns them into a :class:`LabelledMesh`."""

    def __init__(self) -> None:
        self.meshes: list[trimesh.Trimesh] = []
        self.labels: list[np.ndarray] = []

    def add(self, mesh: trimesh.Trimesh, label: str | np.ndarray) -> None:
        self.meshes.append(mesh)
        if isinstance(label, str):
            self.labels.append(np.full(len(mesh.faces), label, dtype=object))
        else:
            self.labels.append(np.asarray(label, dtype=object))

    def build(self, category: str, family: str, origin: str = "primitives") -> LabelledMesh:
        verts, faces, offset = [], [], 0
        for m in self.meshes:
            verts.append(np.asarray(m.vertices))
            faces.append(np.asarray(m.faces) + offset)
            offset += len(m.vertices)
        v = np.concatenate(verts)
        f = np.concatenate(faces)
        lo, hi = v.min(axis=0), v.max(axis=0)
        v = v - np.array([0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), lo[2]])
        mesh = trimesh.Trimesh(vertices=v, faces=f, process=False)
        labels = np.concatenate(self.labels).astype(str)
        return LabelledMesh(category=category, mesh=mesh, face_parts=labels, origin=origin, family=family)


def _place(
    mesh: trimesh.Trimesh,
    rotation: np.ndarray | None = None,
    translation: Sequence[Any] | np.ndarray = (0, 0, 0),
) -> trimesh.Trimesh:
    """A copy of ``mesh`` rotated (3x3) then translated."""
    v = np.asarray(mesh.vertices)
    if rotation is not None:
        v = v @ np.asarray(rotation).T
    v = v + np.asarray(translation, dtype=np.float64)
    return trimesh.Trimesh(vertices=v, faces=np.asarray(mesh.faces), process=False)


def _rot(axis: str, angle: float) -> np.ndarray:
    """Rotation matrix about a coordinate axis."""
    c, s = math.cos(angle), math.sin(angle)
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _bezier(points: Sequence[Any] | np.ndarray, n: int = 40) -> np.ndarray:
    """Points on a Bezier curve (handles, spouts, goosenecks)."""
    p = np.asarray(points, dtype=np.float64)
    t = np.linspace(0.0, 1.0, n)[:, None]
    deg = len(p) - 1
    out = np.zeros((n, p.shape[1]))
    for i, q in enumerate(p):
        out += math.comb(deg, i) * (1 - t) ** (deg - i) * t**i * q
    return out


def _cylinder(
    radius: float, z0: float, z1: float, sections: int = 32, center: Sequence[float] = (0, 0)
) -> trimesh.Trimesh:
    """A z-aligned cylinder between two heights (trimesh primitive, moved into place)."""
    cyl = trimesh.creation.cylinder(radius=radius, height=z1 - z0, sections=sections)
    return _place(cyl, None, (center[0], center[1], 0.5 * (z0 + z1)))


class _Rand:
    """Thin wrapper over a numpy Generator with the draws the builders use."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.g = rng

    def u(self, lo: float, hi: float) -> float:
        return float(self.g.uniform(lo, hi))

    def pick(self, options: Sequence[str], weights: Sequence[float] | None = None) -> str:
        p = None if weights is None else np.asarray(weights, dtype=np.float64) / np.sum(weights)
        return str(options[int(self.g.choice(len(options), p=p))])

    def chance(self, p: float) -> bool:
        return bool(self.g.random() < p)


def _rng(purpose: str, category: str, seed: int) -> np.random.Generator:
    """A generator keyed on purpose, category and seed (crc32: stable across runs, unlike hash())."""
    return np.random.default_rng(
        [zlib.crc32(purpose.encode()), zlib.crc32(category.encode()), seed % (1 << 63)]
    )


def _handle_section(r: _Rand, scale: float = 1.0) -> tuple[str, float, float]:
    """A handle cross-section kind and its (width along the side axis, height across) in metres."""
    kind = r.pick(["round", "oval", "flat", "D"])
    if kind == "round":
        d = r.u(0.008, 0.013)
        w, h = d, d
    elif kind == "oval":
        w, h = r.u(0.011, 0.017), r.u(0.007, 0.010)
    elif kind == "flat":
        w, h = r.u(0.012, 0.022), r.u(0.005, 0.008)
    else:
        w, h = r.u(0.010, 0.016), r.u(0.007, 0.011)
    return kind, w * scale, h * scale


def _loop_path(
    r: _Rand,
    style: str,
    base: Callable[[np.ndarray], np.ndarray],
    z_top: float,
    z_bot: float,
    reach: float,
    n: int = 56,
) -> np.ndarray:
    """A side handle's centre line in the x-z plane, from the top attachment out and down.

    ``base(z)`` is the x where the path meets the wall at height z (a little inside it). Styles:
    ``C`` half ellipse, ``D`` squared-off loop, ``ear`` wider at the top, ``angular`` near
    rectangle, ``open_hook`` attached at the top only with a free lower end.
    """
    theta_end = -0.5 * math.pi
    p, ear, lean = 2.0, 0.0, r.u(-0.25, 0.25) * reach
    if style == "D":
        p = r.u(3.5, 6.0)
    elif style == "angular":
        p = 14.0
    elif style == "ear":
        ear = r.u(0.2, 0.45)
    elif style == "open_hook":
        p = r.u(2.0, 3.0)
        theta_end = -math.radians(r.u(35.0, 60.0))
    theta = np.linspace(0.5 * math.pi, theta_end, n)
    c, s = np.cos(theta), np.sin(theta)
    xs = np.sign(c) * np.abs(c) ** (2.0 / p)
    zs = np.sign(s) * np.abs(s) ** (2.0 / p)
    zc, hh = 0.5 * (z_top + z_bot), 0.5 * (z_top - z_bot)
    z = zc + hh * zs
    x = base(z) + (reach + lean * zs) * xs * (1.0 + ear * zs)
    path = np.column_stack([x, np.zeros(n), z])
    start = np.array([[float(base(np.array([z_top]))[0]) - 0.003, 0.0, z_top]])
    path = np.concatenate([start, path])
    if style != "open_hook":
        end = np.array([[float(base(np.array([z_bot]))[0]) - 0.003, 0.0, z_bot]])
        path = np.concatenate([path, end])
    return path


def _side_handle(
    parts: _Parts,
    r: _Rand,
    outer_radius: Callable[[float], float],
    wall: float,
    radius: float,
    *,
    z_top: float,
    z_bot: float,
    reach: float,
    styles: Sequence[str],
    size: float = 1.0,
    label: str = "handle",
    angle: float = 0.0,
) -> str:
    """Add a vertical loop handle to a body's side at azimuth ``angle``; returns its style.

    ``outer_radius(z)`` is the body's outer radius along +x at height z; the handle's ends sink
    half a ``wall`` into it (and a little more for wide sections on a curved wall) so no gap shows.
    """
    kind, w, h = _handle_section(r, size)
    style = r.pick(styles)

    def base(z: np.ndarray) -> np.ndarray:
        return (
            np.array([outer_radius(float(zz)) for zz in np.atleast_1d(z)]) - 0.5 * wall - w * w / (8 * radius)
        )

    path = _loop_path(r, style, base, z_top, z_bot, reach)
    taper = 1.0 + (0.15 if style == "ear" else 0.0) * (path[:, 2] - 0.5 * (z_top + z_bot)) / max(
        z_top - z_bot, 1e-3
    )
    tube = _sweep(path, _section(kind, w, h), side=(0, 1, 0), scale=taper)
    parts.add(_place(tube, _rot("z", angle)), label)
    return f"{style}/{kind}"


# --------------------------------------------------------------------------------------------------
# Categories
# --------------------------------------------------------------------------------------------------


def _mug(r: _Rand) -> tuple[_Parts, str]:
    """Mugs: straight, barrel, tapered, wide-based, waisted and square-ish bodies; flat, rounded,
    flared and beaded rims; C, D, ear, angular and open-hook handles (a finger ring on espressos)."""
    espresso = r.chance(0.15)
    height, radius = (
        (r.u(0.055, 0.07), r.u(0.027, 0.034)) if espresso else (r.u(0.08, 0.115), r.u(0.036, 0.047))
    )
    body = r.pick(["cylinder", "barrel", "tapered", "wide_base", "waisted", "square"])
    wall, bottom = r.u(0.0028, 0.0055), r.u(0.005, 0.009)
    rim = r.pick(["flat", "rounded", "flared", "bead"])
    band = r.u(0.005, 0.012)
    shape: Shape | None = None
    k = r.u(0.06, 0.14)
    if body == "barrel":

        def prof(s: np.ndarray) -> np.ndarray:
            return radius * (1 + k * np.sin(np.pi * s))
    elif body == "tapered":
        k = r.u(0.72, 0.88)

        def prof(s: np.ndarray) -> np.ndarray:
            return radius * (k + (1 - k) * s)
    elif body == "wide_base":
        k = r.u(1.12, 1.28)

        def prof(s: np.ndarray) -> np.ndarray:
            return radius * (k - (k - 1) * s)
    elif body == "waisted":

        def prof(s: np.ndarray) -> np.ndarray:
            return radius * (1 - 0.8 * k * np.sin(np.pi * s))
    else:
        if body == "square":
            shape = _superellipse(r.u(3.5, 6.0))
            radius *= 0.92

        def prof(s: np.ndarray) -> np.ndarray:
            return radius + 0 * s

    radial = prof
    style = rim
    if rim == "flared":
        flare, frac = r.u(0.003, 0.007), r.u(0.1, 0.2)

        def radial(s: np.ndarray) -> np.ndarray:
            return prof(s) + flare * np.clip((s - (1 - frac)) / frac, 0, 1) ** 2

        style = "rounded"
    fillet = 1.4 * max(wall, bottom)
    foot = None
    if r.chance(0.35):
        r_out = float(radial(np.zeros(1))[0]) - fillet - r.u(0.002, 0.005)
        foot = (r.u(0.002, 0.005), r_out - r.u(0.004, 0.008), r_out)
    vessel = _vessel(height, radial, wall=wall, bottom=bottom, rim=style, band=band, foot=foot, shape=shape)
    parts = _Parts()
    parts.add(vessel.mesh, vessel.labels)
    kind, w, h = _handle_section(r)
    z_rim = vessel.wall_top - band
    z_top = min(z_rim - 0.5 * h - 0.004, vessel.wall_top * r.u(0.72, 0.88))
    z0 = foot[0] if foot else 0.0
    z_bot = max(z0 + 0.5 * h + 0.004, z0 + height * r.u(0.14, 0.32))
    z_bot = min(z_bot, z_top - 0.022)
    if espresso and r.chance(0.5):
        # A finger ring on a short stem.
        zm = 0.5 * (z_top + z_bot)
        x0 = vessel.outer_radius(zm) - 0.5 * wall
        ring_r, d = r.u(0.008, 0.012), r.u(0.005, 0.008)
        stem = r.u(0.004, 0.008)
        cx = x0 + 0.5 * wall + stem + ring_r
        a = np.linspace(0, _TWO_PI, 40, endpoint=False)
        loop = np.column_stack([cx + ring_r * np.cos(a), np.zeros_like(a), zm + ring_r * np.sin(a)])
        parts.add(_sweep(loop, _section("round", d, d), side=(0, 1, 0), closed=True), "handle")
        stem_path = np.array([[x0 - 0.002, 0, zm], [cx - ring_r, 0, zm]])
        parts.add(_sweep(stem_path, _section("oval", 1.3 * d, d), side=(0, 1, 0)), "handle")
        handle = "ring"
    else:
        reach = r.u(0.015, 0.025) if espresso else r.u(0.022, 0.038)
        handle = _side_handle(
            parts,
            r,
            vessel.outer_radius,
            wall,
            radius,
            z_top=z_top,
            z_bot=z_bot,
            reach=reach,
            styles=["C", "D", "ear", "angular", "open_hook"],
        )
    return parts, f"{'espresso-' if espresso else ''}{body}/{rim}/{handle}"


def _paper_cup(r: _Rand) -> tuple[_Parts, str]:
    """Paper cups: conical walls (straight or slightly bellied) on a recessed base, a rolled bead
    at the mouth; plain, with a cardboard sleeve, or with a rippled outer wall."""
    r_top = r.u(0.03, 0.046)
    height = float(np.clip(r_top * r.u(1.7, 3.3), 0.06, 0.16))
    r_bot = r_top * r.u(0.62, 0.8)
    wall = r.u(0.0005, 0.0011)
    recess, disc = r.u(0.004, 0.010), r.u(0.0006, 0.0012)
    family = r.pick(["plain", "sleeve", "ripple", "bellied"])
    belly = r.u(0.002, 0.005) if family == "bellied" else 0.0
    bead = r.u(0.0012, 0.0022)
    band = max(r.u(0.004, 0.009), 2 * bead + 0.001)
    wall_top = height - bead

    def ro(z: np.ndarray | float) -> np.ndarray:
        zz = np.asarray(z, dtype=np.float64)
        return r_bot + (r_top - r_bot) * zz / height + belly * np.sin(np.pi * zz / height)

    def ri(z: np.ndarray | float) -> np.ndarray:
        return ro(z) - wall

    zs = np.unique(np.concatenate([np.linspace(0, wall_top, 40), [wall_top - band + bead]]))
    zs_in = zs[zs >= recess + disc]
    z_band = wall_top - band + bead
    prof = [(0.0, recess), (float(ri(recess)), recess), (float(ri(0.0)), 0.0)]
    prof += [(float(ro(z)), float(z)) for z in zs]
    prof += [(float(ri(z)), float(z)) for z in zs_in[::-1]]
    prof += [(float(ri(recess + disc)), recess + disc), (0.0, recess + disc)]
    p = np.array(prof)
    zmin = np.minimum(p[:-1, 1], p[1:, 1])
    labels = ["rim" if z >= z_band - 1e-9 else "body" for z in zmin]
    parts = _Parts()
    mesh, lab = _lathe(p, labels, sections=72)
    parts.add(mesh, lab)
    # The bead swallows the wall's top edge and bulges outwards, as a rolled paper lip does.
    c = (float(ro(wall_top)) - 0.5 * wall + 0.4 * bead, wall_top)
    ring = [
        (c[0] + bead * math.cos(a), c[1] + bead * math.sin(a))
        for a in np.linspace(0, _TWO_PI, 12, endpoint=False)
    ]
    bead_mesh, _ = _lathe(ring, ["rim"] * len(ring), sections=72, closed=True)
    parts.add(bead_mesh, "rim")
    if family in ("sleeve", "ripple"):
        z1 = height * r.u(0.2, 0.35) if family == "sleeve" else recess + 0.002
        z2 = height * r.u(0.6, 0.75) if family == "sleeve" else z_band - r.u(0.003, 0.008)
        thick = r.u(0.0015, 0.003)
        zz = np.linspace(z1, z2, 12)
        band_prof = [(float(ro(z)) + thick, float(z)) for z in zz] + [
            (float(ro(z)) - 0.0003, float(z)) for z in zz[::-1]
        ]
        ripple = None
        if family == "ripple":
            lobes, amp = int(r.u(24, 40)), r.u(0.0006, 0.0012) / r_top

            def ripple(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
                return np.broadcast_to(1 + amp * np.cos(lobes * phi), (len(z), len(phi))).copy()

        sleeve, _ = _lathe(band_prof, ["body"] * len(band_prof), sections=96, shape=ripple, closed=True)
        parts.add(sleeve, "body")
    size = "small" if height < 0.085 else "medium" if height < 0.12 else "large"
    return parts, f"{family}/{size}/{'wide' if r_top / height > 0.45 else 'slim'}"


def _bowl_profile(r_bot: float, r_top: float, q: float) -> Callable[[np.ndarray], np.ndarray]:
    """Wall radius ``r_bot + (r_top - r_bot) * (1 - (1 - s)^q)^(1/q)``: q=1 conical, q=2 a
    quarter ellipse (hemispherical with r_bot=0), larger q boxier."""

    def f(s: np.ndarray) -> np.ndarray:
        return r_bot + (r_top - r_bot) * (1 - np.clip(1 - s, 0, 1) ** q) ** (1 / q)

    return f


def _bowl(r: _Rand) -> tuple[_Parts, str]:
    """Bowls: hemispherical on a foot ring, conical, rounded, square-ish, deep noodle bowls and thin
    steel mixing bowls; rounded, flat, flared, beaded and rolled rims."""
    family = r.pick(["hemi", "conical", "rounded", "square", "mixing", "deep"])
    r_top = r.u(0.055, 0.115)
    ratio = {
        "hemi": (0.5, 0.8),
        "conical": (0.4, 0.65),
        "rounded": (0.4, 0.7),
        "square": (0.4, 0.6),
        "mixing": (0.45, 0.65),
        "deep": (0.7, 0.95),
    }[family]
    height = float(np.clip(r_top * r.u(*ratio), 0.035, 0.11))
    wall, bottom = r.u(0.0025, 0.007), r.u(0.004, 0.009)
    shape = None
    foot = None
    rim = r.pick(["rounded", "flat", "flared", "bead"])
    if family == "hemi":
        r_bot, q = r_top * r.u(0.1, 0.25), 2.0
    elif family == "conical":
        r_bot, q = r_top * r.u(0.35, 0.55), 1.0
    elif family == "rounded":
        r_bot, q = r_top * r.u(0.4, 0.6), r.u(1.5, 2.5)
    elif family == "square":
        r_bot, q = r_top * r.u(0.45, 0.6), r.u(1.5, 3.0)
        shape = _superellipse(r.u(3.0, 5.0))
        r_top *= 0.9
        r_bot *= 0.9
    elif family == "mixing":
        r_bot, q = r_top * r.u(0.45, 0.6), r.u(1.3, 2.0)
        wall = bottom = r.u(0.0008, 0.0015)
        rim = "rolled"
    else:
        r_bot, q = r_top * r.u(0.35, 0.5), r.u(1.5, 2.5)
    base = _bowl_profile(r_bot, r_top, q)
    radial = base
    style = rim
    if rim == "flared":
        flare, frac = r.u(0.004, 0.010), r.u(0.1, 0.2)

        def radial(s: np.ndarray) -> np.ndarray:
            return base(s) + flare * np.clip((s - (1 - frac)) / frac, 0, 1) ** 2

        style = "rounded"
    band = r.u(0.005, 0.015)
    if family in ("hemi", "deep") or (family != "mixing" and r.chance(0.4)):
        hf = r.u(0.004, 0.009)
        r_out = max(r_top * r.u(0.32, 0.45), r_bot + 0.004)
        if family not in ("hemi",):
            r_out = min(r_out, r_bot - 0.004) if r_bot > 0.02 else r_out
        foot = (hf, r_out - r.u(0.004, 0.008), r_out)
    vessel = _vessel(
        height,
        radial,
        wall=wall,
        bottom=bottom,
        rim=style,
        band=band,
        foot=foot,
        shape=shape,
        fillet=r.u(0.006, 0.015),
        sections=96,
    )
    parts = _Parts()
    parts.add(vessel.mesh, vessel.labels)
    return parts, f"{family}/{rim}{'/foot' if foot else ''}"


def _bottle(r: _Rand) -> tuple[_Parts, str]:
    """Bottles: water, wine, squat sauce, square-shouldered, waisted and ribbed bodies; screw caps
    (knurled), sports caps, flip-tops, wine capsules and stoppers."""
    family = r.pick(["water", "wine", "squat", "square", "waisted", "ribbed"])
    if family == "wine":
        rb, hb, hs, rn, hn = (
            r.u(0.036, 0.04),
            r.u(0.16, 0.2),
            r.u(0.04, 0.06),
            r.u(0.0125, 0.015),
            r.u(0.07, 0.1),
        )
    elif family == "squat":
        rb, hb, hs, rn, hn = (
            r.u(0.035, 0.045),
            r.u(0.07, 0.1),
            r.u(0.02, 0.03),
            r.u(0.016, 0.022),
            r.u(0.01, 0.016),
        )
    else:
        rb, hb, hs, rn, hn = (
            r.u(0.028, 0.037),
            r.u(0.12, 0.18),
            r.u(0.03, 0.05),
            r.u(0.0125, 0.0145),
            r.u(0.012, 0.02),
        )
    height = hb + hs + hn
    round_shoulder = family == "wine" or r.chance(0.5)
    waist = r.u(0.08, 0.15) if family == "waisted" else 0.0

    def radial(s: np.ndarray) -> np.ndarray:
        z = s * height
        u = np.clip((z - hb) / hs, 0, 1)
        sh = np.sqrt(1 - u**2) if round_shoulder else 0.5 * (1 + np.cos(np.pi * u))
        out = np.where(z < hb, rb, rn + (rb - rn) * sh)
        if waist:
            out = out * (1 - waist * np.sin(np.pi * np.clip(z / hb, 0, 1)) ** 2 * (z < hb))
        return out

    shapes: list[Shape | None] = []
    if family == "square":
        se = _superellipse(r.u(3.5, 6.0))

        def square(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
            w = np.clip(1 - (z - hb) / (0.7 * hs), 0, 1)[:, None]
            return 1 + (se(phi, z) - 1) * w

        shapes.append(square)
    if family == "ribbed":
        pitch, depth = r.u(0.008, 0.015), r.u(0.001, 0.002) / rb
        z_lo, z_hi = hb * r.u(0.2, 0.35), hb * r.u(0.7, 0.9)

        def ribs(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
            g = (0.5 + 0.5 * np.cos(_TWO_PI * (z - z_lo) / pitch)) ** 6 * ((z > z_lo) & (z < z_hi))
            return np.broadcast_to((1 - depth * g)[:, None], (len(z), len(phi))).copy()

        shapes.append(ribs)
    shape = _combine(*shapes)
    curve = _wall_curve(height, radial, r.u(0.004, 0.01), n=90)
    curve = _cut_at(_insert_level(curve, hb), height)
    prof = np.concatenate([curve, [[0.0, height]]])
    if family == "wine" and r.chance(0.7):  # a punt: the base pushed up into the bottle
        punt = r.u(0.006, 0.015)
        prof = np.concatenate([[[0.0, punt], [rb * 0.55, 0.002]], prof[1:]])
    parts = _Parts()
    body, lab = _lathe(prof, ["body"] * (len(prof) - 1), sections=72, shape=shape)
    parts.add(body, lab)
    cap_kind = r.pick(
        {"wine": ["capsule", "screw_long", "stopper"], "squat": ["screw", "flip"]}.get(
            family, ["screw", "sports", "flip"]
        )
    )
    rc = rn + r.u(0.0015, 0.003)
    if cap_kind == "capsule":
        cap_h = r.u(0.03, 0.05)
        z0, z1 = height - cap_h, height + 0.0015
        cap = [
            (0.0, z0 + 0.004),
            (rn + 0.0004, z0 + 0.004),
            (rn + 0.0008, z0),
            (rn + 0.0008, z1 - 0.002),
            (rn - 0.001, z1),
            (0.0, z1),
        ]
    elif cap_kind == "screw_long":
        cap_h = r.u(0.04, 0.06)
        z0, z1 = height - cap_h, height + 0.002
        cap = [(0.0, z0), (rc, z0), (rc, z1 - 0.002), (rc - 0.002, z1), (0.0, z1)]
    elif cap_kind == "stopper":
        z0, z1 = height - 0.01, height + r.u(0.012, 0.02)
        top_r = rn + r.u(0.003, 0.008)
        cap = [
            (0.0, z0),
            (rn - 0.001, z0),
            (rn - 0.001, height),
            (top_r, height),
            (top_r, z1 - 0.006),
            (0.7 * top_r, z1 - 0.001),
            (0.0, z1),
        ]
    elif cap_kind == "sports":
        h1, h2 = r.u(0.012, 0.018), r.u(0.008, 0.014)
        z0 = height - 0.7 * h1
        r2 = rc * r.u(0.5, 0.65)
        cap = [
            (0.0, z0),
            (rc, z0),
            (rc, z0 + h1),
            (r2 + 0.002, z0 + h1 + 0.002),
            (r2, z0 + h1 + 0.002),
            (r2, z0 + h1 + h2),
            (0.6 * r2, z0 + h1 + h2 + 0.003),
            (0.0, z0 + h1 + h2 + 0.003),
        ]
    else:
        cap_h = r.u(0.012, 0.022)
        z0, z1 = height - 0.75 * cap_h, height + 0.25 * cap_h
        cap = [(0.0, z0), (rc, z0), (rc, z1 - 0.0015), (rc - 0.0015, z1), (0.0, z1)]
    knurl = None
    if cap_kind in ("screw", "screw_long", "sports") and r.chance(0.7):
        teeth, amp = int(r.u(30, 60)), 0.0004 / rc

        def knurl(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
            return np.broadcast_to(1 + amp * np.cos(teeth * phi), (len(z), len(phi))).copy()

    cap_mesh, _ = _lathe(cap, ["cap"] * (len(cap) - 1), sections=72, shape=knurl)
    parts.add(cap_mesh, "cap")
    if cap_kind == "flip":  # the flip lid's thumb tab
        tab = trimesh.creation.box(extents=(0.006, 0.012, 0.004))
        parts.add(_place(tab, None, (rc + 0.002, 0.0, cap[-1][1] - 0.003)), "cap")
    if family in ("water", "ribbed", "waisted", "square") and cap_kind in ("screw", "sports", "flip"):
        z_ring = cap[0][1] - r.u(0.002, 0.004)  # the neck's support ring (body)
        ring = [
            (rn + 0.0015 + 0.0012 * math.cos(a), z_ring + 0.0008 * math.sin(a))
            for a in np.linspace(0, _TWO_PI, 10, endpoint=False)
        ]
        ring_mesh, _ = _lathe(ring, ["body"] * 10, sections=72, closed=True)
        parts.add(ring_mesh, "body")
    return parts, f"{family}/{cap_kind}"


def _knob(r: _Rand, z: float, label: str) -> tuple[trimesh.Trimesh, str]:
    """A small lid knob standing on height ``z``: mushroom, ball or cylinder."""
    kind = r.pick(["mushroom", "ball", "cylinder"])
    stem_r, stem_h = r.u(0.004, 0.008), r.u(0.006, 0.014)
    if kind == "ball":
        rb = r.u(0.009, 0.015)
        prof = [(0.0, z - 0.002), (stem_r, z - 0.002), (stem_r, z + stem_h)]
        zc = z + stem_h + 0.8 * rb
        prof += [(rb * math.sin(a), zc - rb * math.cos(a)) for a in np.linspace(0.35, math.pi, 12)[:-1]]
        prof += [(0.0, zc + rb)]
    elif kind == "mushroom":
        rc, hc = r.u(0.012, 0.022), r.u(0.006, 0.012)
        prof = [
            (0.0, z - 0.002),
            (stem_r, z - 0.002),
            (stem_r, z + stem_h),
            (rc, z + stem_h + 0.002),
            (rc, z + stem_h + 0.5 * hc),
            (0.6 * rc, z + stem_h + hc),
            (0.0, z + stem_h + 1.1 * hc),
        ]
    else:
        rc = r.u(0.008, 0.014)
        prof = [
            (0.0, z - 0.002),
            (rc, z - 0.002),
            (rc, z + stem_h + 0.006),
            (rc - 0.002, z + stem_h + 0.008),
            (0.0, z + stem_h + 0.008),
        ]
    mesh, _ = _lathe(prof, [label] * (len(prof) - 1), sections=40)
    return mesh, kind


def _spout_path(r: _Rand, kind: str, start: np.ndarray, body_r: float, tip_z: float) -> np.ndarray:
    """A spout's centre line leaving the body towards -x: ``straight`` cone or ``gooseneck``."""
    z0 = float(start[2])
    if kind == "straight":
        rise = tip_z - z0
        run = rise / math.tan(math.radians(r.u(35.0, 60.0)))
        end = np.array([-(body_r + run), 0.0, tip_z])
        return _bezier([start, 0.5 * (start + end), end], 24)
    out = r.u(0.05, 0.09)
    return _bezier(
        [
            start,
            [-(body_r + 0.2 * out), 0.0, z0 + 0.005],
            [-(body_r + 0.35 * out), 0.0, tip_z - 0.02],
            [-(body_r + 0.6 * out), 0.0, tip_z + 0.02],
            [-(body_r + out), 0.0, tip_z],
        ],
        40,
    )


def _lid_dome(
    rl: float, z0: float, dome: float, *, seat: float | None = None, label: str = "lid"
) -> trimesh.Trimesh:
    """A lid: a seat ring going down into the opening (radius ``seat``), a short edge at ``rl`` and a
    dome of height ``dome`` above ``z0``."""
    prof: list[tuple[float, float]] = []
    if seat is not None:
        prof += [(0.0, z0 - 0.008), (seat, z0 - 0.008), (seat, z0)]
    else:
        prof += [(0.0, z0)]
    edge = 0.003
    prof += [(rl, z0), (rl, z0 + edge)]
    for a in np.linspace(0, 1, 10)[1:-1]:
        rr = rl * (1 - a)
        prof.append((rr, z0 + edge + dome * math.sqrt(max(0.0, 1 - (rr / rl) ** 2))))
    prof.append((0.0, z0 + edge + dome))
    mesh, _ = _lathe(prof, [label] * (len(prof) - 1), sections=72)
    return mesh


def _kettle(r: _Rand) -> tuple[_Parts, str]:
    """Kettles: electric jugs with a beak spout, stovetop kettles with a bail handle over the lid,
    teapots, pour-over kettles with a gooseneck, and watering cans (open fill hole: no lid)."""
    family = r.pick(["electric", "stovetop", "teapot", "pour_over", "watering_can"], [1, 1, 1, 0.8, 0.7])
    parts = _Parts()
    shape = None
    spout_kind = ""
    if family == "electric":
        rb, height = r.u(0.07, 0.085), r.u(0.18, 0.24)
        rt, e = rb * r.u(0.78, 1.0), r.u(0.006, 0.012)

        def radial(s: np.ndarray) -> np.ndarray:
            return rb + (rt - rb) * s

        curve = _wall_curve(height - e, radial, r.u(0.01, 0.02))
        prof = _cut_at(curve, height - e)
        prof = np.concatenate(
            [
                prof,
                [
                    (rt - e + e * math.cos(a), height - e + e * math.sin(a))
                    for a in np.linspace(0, 0.5 * math.pi, 5)[1:]
                ],
                [[0.0, height]],
            ]
        )
        body, _ = _lathe(prof, ["body"] * (len(prof) - 1), sections=80)
        parts.add(body, "body")
        rl = rt * r.u(0.55, 0.75)
        parts.add(_lid_dome(rl, height - 0.002, r.u(0.004, 0.012)), "lid")
        button = _cylinder(
            r.u(0.008, 0.014), height, height + r.u(0.012, 0.02), center=(rl * r.u(0.0, 0.5), 0)
        )
        parts.add(button, "lid")
        # A beak: a short flattened tube rising out of the top edge, opposite the handle.
        start = np.array([-(rt - 0.02), 0.0, height - 0.035])
        length = r.u(0.015, 0.035)
        path = _bezier(
            [start, [-(rt + 0.2 * length), 0, height - 0.02], [-(rt + length), 0, height - 0.002]], 16
        )
        w, h = r.u(0.03, 0.045), r.u(0.012, 0.02)
        taper = np.column_stack([np.linspace(1.0, 0.55, 16), np.linspace(1.0, 0.45, 16)])
        parts.add(_sweep(path, _section("flat", w, h), side=(0, 1, 0), scale=taper), "spout")
        spout_kind = "beak"
        z_top, z_bot = height - r.u(0.012, 0.025), height * r.u(0.2, 0.45)
        reach, styles, size, body_r = r.u(0.035, 0.05), ["D", "angular", "C"], 1.8, rb
        outer = prof
    elif family in ("stovetop", "teapot", "pour_over", "watering_can"):
        if family == "stovetop":
            rb, height = r.u(0.085, 0.105), r.u(0.12, 0.17)
            z_dome, ro = height * r.u(0.2, 0.4), rb * r.u(0.38, 0.52)

            def radial(s: np.ndarray) -> np.ndarray:
                z = s * height
                u = np.clip((z - z_dome) / (height - z_dome), 0, 1)
                return ro + (rb - ro) * np.sqrt(1 - u**2)
        elif family == "teapot":
            rm = r.u(0.06, 0.085)
            a = rm * r.u(0.65, 0.85)
            rbot, ro = rm * r.u(0.5, 0.7), rm * r.u(0.4, 0.55)
            zb = -a * math.sqrt(1 - (rbot / rm) ** 2)
            zt = a * math.sqrt(1 - (ro / rm) ** 2)
            height = zt - zb
            rb = rm

            def radial(s: np.ndarray) -> np.ndarray:
                z = s * height + zb
                return rm * np.sqrt(np.clip(1 - (z / a) ** 2, 0, 1))
        else:
            rb = r.u(0.06, 0.075) if family == "pour_over" else r.u(0.07, 0.1)
            height = r.u(0.1, 0.14) if family == "pour_over" else r.u(0.15, 0.24)
            ro = rb * r.u(0.55, 0.75)
            if family == "watering_can" and r.chance(0.6):
                shape = _superellipse(2.0, r.u(0.6, 0.85))

            def radial(s: np.ndarray) -> np.ndarray:
                return rb + 0 * s

        e = 0.0 if family in ("stovetop", "teapot") else r.u(0.008, 0.015)
        curve = _wall_curve(height - e, radial, r.u(0.006, 0.015), n=60)
        prof = _cut_at(curve, height - e)
        if e:
            prof = np.concatenate(
                [
                    prof,
                    [
                        (rb - e + e * math.cos(t), height - e + e * math.sin(t))
                        for t in np.linspace(0, 0.5 * math.pi, 5)[1:]
                    ],
                ]
            )
        outer = prof.copy()
        if family == "teapot":  # a short gallery the lid sits in
            prof = np.concatenate(
                [prof, [[prof[-1, 0], height + 0.006], [prof[-1, 0] - 0.004, height + 0.006]]]
            )
        prof = np.concatenate([prof, [[0.0, prof[-1, 1]]]])
        body, _ = _lathe(prof, ["body"] * (len(prof) - 1), sections=80, shape=shape)
        parts.add(body, "body")
        body_r = rb
        top = float(prof[-1, 1])
        if family == "watering_can":
            # The open fill hole: a collar round an opening near the back.
            cr = r.u(0.03, 0.045)
            ring = [
                (cr, top - 0.004),
                (cr + 0.004, top - 0.004),
                (cr + 0.004, top + 0.015),
                (cr, top + 0.015),
            ]
            collar, _ = _lathe(ring, ["body"] * 4, sections=48, closed=True)
            parts.add(_place(collar, None, (0.35 * rb, 0, 0)), "body")
        else:
            r_lid = (ro if family in ("stovetop", "teapot") else rb * r.u(0.55, 0.75)) + 0.003
            lid_z = top - 0.002
            dome = r.u(0.012, 0.028) if family != "pour_over" else r.u(0.004, 0.012)
            parts.add(_lid_dome(r_lid, lid_z, dome, seat=max(r_lid - 0.008, 0.005)), "lid")
            knob, _ = _knob(r, lid_z + 0.003 + dome - 0.001, "lid")
            parts.add(knob, "lid")
        # Spout from the lower body towards -x.
        if family == "watering_can":
            spout_kind = "long"
            z0 = height * r.u(0.1, 0.25)
            tip_z = height * r.u(0.95, 1.2)
            ang = math.radians(r.u(30, 45))
            run = (tip_z - z0) / math.tan(ang)
            start = np.array([-(rb - 0.02), 0.0, z0])
            end = np.array([-(rb + run), 0.0, tip_z])
            path = _bezier([start, end], 30)
            r0, r1 = r.u(0.012, 0.017), r.u(0.006, 0.009)
            parts.add(
                _sweep(path, _section("round", 2 * r0, 2 * r0), scale=np.linspace(1, r1 / r0, 30)), "spout"
            )
            if r.chance(0.6):  # the rose
                d = (end - start) / np.linalg.norm(end - start)
                rose_r = r.u(0.015, 0.025)
                rose = _bezier([end - 0.004 * d, end + 0.02 * d], 6)
                sc = np.linspace(r1 / rose_r * 1.1, 1.0, 6)
                parts.add(_sweep(rose, _section("round", 2 * rose_r, 2 * rose_r), scale=sc), "spout")
                spout_kind = "rose"
        else:
            spout_kind = "gooseneck" if family == "pour_over" else r.pick(["straight", "gooseneck"])
            z0 = height * (r.u(0.08, 0.15) if family == "pour_over" else r.u(0.2, 0.4))
            body_at = float(np.interp(z0, outer[:, 1], outer[:, 0]))
            r0 = r.u(0.006, 0.008) if family == "pour_over" else r.u(0.011, 0.017)
            r1 = r.u(0.003, 0.004) if family == "pour_over" else r.u(0.005, 0.008)
            tip_z = top + (r.u(0.0, 0.04) if family == "pour_over" else r.u(-0.02, 0.01))
            start = np.array([-(body_at - r0 - 0.004), 0.0, z0])
            path = _spout_path(r, spout_kind, start, body_at, tip_z)
            parts.add(
                _sweep(path, _section("round", 2 * r0, 2 * r0), scale=np.linspace(1, r1 / r0, len(path))),
                "spout",
            )
        z_top, z_bot = top - r.u(0.015, 0.03), height * r.u(0.2, 0.4)
        reach, styles, size = r.u(0.03, 0.05), ["C", "D", "ear"], 1.4
    handle = ""
    if family in ("stovetop", "watering_can") and (family == "stovetop" or r.chance(0.6)):
        # A bail arching over the top, in the spout's plane.
        top = float(outer[-1, 1])
        if family == "stovetop":
            xa = ro + r.u(0.008, 0.02)
            dome_part = outer[outer[:, 1] >= z_dome]
            za = float(np.interp(xa, dome_part[::-1, 0], dome_part[::-1, 1])) - 0.004
            xb, zb_ = -xa, za
        else:
            xa, za = 0.85 * body_r, top - 0.004
            xb, zb_ = -r.u(0.0, 0.3) * body_r, top - 0.004
        rise = r.u(0.06, 0.1)
        p = r.u(2.0, 4.0)
        t = np.linspace(0, math.pi, 50)
        c, s = np.cos(t), np.sin(t)
        xs = 0.5 * (xa + xb) + 0.5 * (xa - xb) * np.sign(c) * np.abs(c) ** (2 / p)
        zs = np.interp(xs, sorted([xb, xa]), [zb_, za] if xb < xa else [za, zb_]) + rise * np.abs(s) ** (
            2 / p
        )
        path = np.column_stack([xs, np.zeros_like(xs), zs])
        kind, w, h = _handle_section(r, 1.3)
        parts.add(_sweep(path, _section(kind, w, h), side=(0, 1, 0)), "handle")
        handle = f"bail/{kind}"
    else:

        def body_radius(z: float) -> float:
            return float(np.interp(z, outer[:, 1], outer[:, 0]))

        handle = _side_handle(
            parts,
            r,
            body_radius,
            0.004,
            body_r,
            z_top=z_top,
            z_bot=z_bot,
            reach=reach,
            styles=styles,
            size=size,
        )
    return parts, f"{family}/{spout_kind}/{handle}"


def _horizontal_loop(
    r: _Rand,
    radius_at: Callable[[float], float],
    z: float,
    wall: float,
    *,
    width: float,
    reach: float,
    tilt: float,
    section: tuple[str, float, float],
    angle: float,
) -> trimesh.Trimesh:
    """A loop handle sticking out sideways (pot and basket ears), its plane tilted up by ``tilt``."""
    kind, w, h = section
    rad = radius_at(z)
    t = np.linspace(-0.5 * math.pi, 0.5 * math.pi, 40)
    p = r.u(2.0, 4.0)
    a = np.abs(np.cos(t)) ** (2 / p) * reach
    b = np.sign(np.sin(t)) * np.abs(np.sin(t)) ** (2 / p) * 0.5 * width
    base = np.sqrt(np.maximum(rad**2 - b**2, 0.0)) - 0.5 * wall
    x = base + a * math.cos(tilt)
    zz = z + a * math.sin(tilt)
    path = np.column_stack([x, b, zz])
    path = np.concatenate([[[base[0] - 0.003, b[0], z]], path, [[base[-1] - 0.003, b[-1], z]]])
    normal = (-math.sin(tilt), 0.0, math.cos(tilt))
    return _place(_sweep(path, _section(kind, w, h), side=normal), _rot("z", angle))


def _long_handle(
    r: _Rand,
    x0: float,
    z0: float,
    *,
    length: float,
    rise_deg: float,
    thickness: float = 1.0,
    ring: bool = False,
) -> tuple[list[trimesh.Trimesh], str]:
    """A pan or saucepan stick handle leaving the wall at (x0, z0) along +x, rising, maybe curved,
    maybe ending in a hanging ring."""
    kind = r.pick(["round", "oval", "flat", "D"])
    w = r.u(0.018, 0.028) * thickness if kind != "round" else r.u(0.016, 0.022) * thickness
    h = {"round": w, "oval": w * r.u(0.6, 0.8), "flat": r.u(0.006, 0.01) * thickness, "D": w * r.u(0.6, 0.8)}[
        kind
    ]
    rise = math.radians(rise_deg)
    bend = r.u(-0.4, 0.6)
    end = np.array([x0 + length * math.cos(rise), 0.0, z0 + length * math.sin(rise)])
    mid = np.array(
        [x0 + 0.5 * length * math.cos(rise), 0.0, z0 + 0.5 * length * math.sin(rise) + bend * 0.1 * length]
    )
    path = _bezier([[x0 - 0.004, 0.0, z0], [x0 + 0.01, 0.0, z0], mid, end], 40)
    grip = np.interp(np.linspace(0, 1, 40), [0, 0.25, 0.8, 1.0], [0.75, 0.85, 1.0, 1.0])
    meshes = [_sweep(path, _section(kind, w, h), side=(0, 1, 0), scale=np.column_stack([grip, grip]))]
    style = f"stick/{kind}"
    if ring:
        # A hanging ring in the handle's plane, round the end.
        d = (path[-1] - path[-2]) / np.linalg.norm(path[-1] - path[-2])
        rr = r.u(0.008, 0.013)
        c = path[-1] + d * (rr + 0.002)
        a = np.linspace(0, _TWO_PI, 36, endpoint=False)
        side = np.cross(d, np.array([0.0, 1.0, 0.0]))
        side = -side if side[2] < 0 else side
        loop = c + rr * (np.outer(np.cos(a), d) + np.outer(np.sin(a), np.array([0.0, 1.0, 0.0])))
        tube = max(0.5 * h, 0.003)
        meshes.append(_sweep(loop, _section("round", 2 * tube, 2 * tube), side=tuple(side), closed=True))
        style += "/ring"
    return meshes, style


def _pot(r: _Rand) -> tuple[_Parts, str]:
    """Pots: stockpots and casseroles with two loop or tab ears, saucepans and milk pots with a
    stick handle (and a helper loop), tapered pots; domed, flat glass or stepped lids with a
    mushroom, ball, cylinder, loop or bar knob. About one in seven stands without its lid."""
    family = r.pick(["stockpot", "saucepan", "casserole", "tapered", "milk_pot"])
    if family == "stockpot":
        radius = r.u(0.1, 0.14)
        height = min(radius * r.u(1.1, 1.7), 0.26)
    elif family == "saucepan":
        radius = r.u(0.07, 0.1)
        height = radius * r.u(0.8, 1.2)
    elif family == "casserole":
        radius = r.u(0.1, 0.14)
        height = radius * r.u(0.55, 0.85)
    elif family == "tapered":
        radius = r.u(0.09, 0.12)
        height = radius * r.u(0.7, 1.1)
    else:
        radius = r.u(0.055, 0.075)
        height = radius * r.u(1.0, 1.35)
    wall = r.u(0.004, 0.006) if family == "casserole" else r.u(0.0015, 0.003)
    bottom = wall + r.u(0.001, 0.004)
    k = r.u(0.75, 0.88)
    bulge = r.u(0.03, 0.08)

    def radial(s: np.ndarray) -> np.ndarray:
        if family == "tapered":
            return radius * (k + (1 - k) * s)
        if family == "casserole":
            return radius * (1 + bulge * np.sin(np.pi * s))
        return radius + 0 * s

    rim = r.pick(["flat", "rounded", "flared", "bead"])
    radial_f = radial
    style = rim
    if rim == "flared":
        flare, frac = r.u(0.003, 0.008), r.u(0.06, 0.12)

        def radial_f(s: np.ndarray) -> np.ndarray:
            return radial(s) + flare * np.clip((s - (1 - frac)) / frac, 0, 1) ** 2

        style = "rounded"
    vessel = _vessel(
        height,
        radial_f,
        wall=wall,
        bottom=bottom,
        rim=style,
        band=0.01,
        rim_label="body",
        fillet=r.u(0.008, 0.02),
        sections=96,
    )
    parts = _Parts()
    parts.add(vessel.mesh, vessel.labels)
    ro_top = vessel.outer_radius(vessel.wall_top)
    handles = ""
    sec = _handle_section(r, 1.1)
    if family in ("stockpot", "casserole", "tapered"):
        ear = r.pick(["loop", "tab"]) if family == "casserole" else "loop"
        z = vessel.wall_top - r.u(0.015, 0.04)
        for angle in (0.0, math.pi):
            if ear == "loop":
                m = _horizontal_loop(
                    r,
                    vessel.outer_radius,
                    z,
                    wall,
                    width=r.u(0.05, 0.09),
                    reach=r.u(0.02, 0.035),
                    tilt=math.radians(r.u(0, 35)),
                    section=sec,
                    angle=angle,
                )
            else:
                x0 = vessel.outer_radius(z) - 0.5 * wall
                path = _bezier([[x0 - 0.004, 0, z], [x0 + r.u(0.02, 0.035), 0, z + r.u(0.0, 0.01)]], 12)
                tab = _section("flat", r.u(0.05, 0.08), r.u(0.01, 0.018))
                m = _place(
                    _sweep(path, tab, side=(0, 1, 0), scale=np.linspace(1.0, 0.8, 12)), _rot("z", angle)
                )
            parts.add(m, "handle")
        handles = f"ears-{ear}/{sec[0]}"
    else:
        z = vessel.wall_top - r.u(0.01, 0.03)
        x0 = vessel.outer_radius(z) - 0.5 * wall
        meshes, handles = _long_handle(
            r, x0, z, length=r.u(0.14, 0.22), rise_deg=r.u(5, 25), ring=r.chance(0.3)
        )
        for m in meshes:
            parts.add(m, "handle")
        if family == "saucepan" and radius > 0.085 and r.chance(0.6):
            parts.add(
                _horizontal_loop(
                    r,
                    vessel.outer_radius,
                    z,
                    wall,
                    width=r.u(0.04, 0.06),
                    reach=r.u(0.015, 0.025),
                    tilt=math.radians(r.u(10, 30)),
                    section=sec,
                    angle=math.pi,
                ),
                "handle",
            )
            handles += "+helper"
    lid = "open"
    if r.chance(6 / 7):
        lid = r.pick(["dome", "flat_glass", "stepped"])
        rl = ro_top + r.u(0.0, 0.004)
        z0 = vessel.top
        seat = vessel.inner_top - 0.0015
        if lid == "stepped":
            prof = [
                (0.0, z0 - 0.008),
                (seat, z0 - 0.008),
                (seat, z0),
                (rl, z0),
                (rl, z0 + 0.004),
                (0.85 * rl, z0 + r.u(0.008, 0.015)),
            ]
            hd = r.u(0.004, 0.012)
            prof += [
                (0.85 * rl * (1 - a), prof[-1][1] + hd * math.sqrt(1 - (1 - a) ** 2))
                for a in np.linspace(0.2, 1, 6)
            ]
            prof[-1] = (0.0, prof[-1][1])
            mesh, _ = _lathe(prof, ["lid"] * (len(prof) - 1), sections=96)
            parts.add(mesh, "lid")
            lid_top = prof[-1][1]
        else:
            dome = r.u(0.01, 0.03) if lid == "dome" else r.u(0.004, 0.012)
            parts.add(_lid_dome(rl, z0, dome, seat=seat), "lid")
            lid_top = z0 + 0.003 + dome
            if lid == "flat_glass":  # the steel band round the glass
                b = 0.0025
                ring = [
                    (rl - 0.001 + b * math.cos(a), z0 + 0.003 + b * math.sin(a))
                    for a in np.linspace(0, _TWO_PI, 10, endpoint=False)
                ]
                band_mesh, _ = _lathe(ring, ["lid"] * 10, sections=96, closed=True)
                parts.add(band_mesh, "lid")
        knob = r.pick(["turned", "loop", "bar"])
        if knob == "turned":
            mesh, knob = _knob(r, lid_top - 0.001, "knob")
            parts.add(mesh, "knob")
        elif knob == "loop":
            span, rise = r.u(0.04, 0.07), r.u(0.015, 0.03)
            t = np.linspace(0, math.pi, 30)
            path = np.column_stack(
                [0.5 * span * np.cos(t), np.zeros_like(t), lid_top - 0.004 + rise * np.sin(t)]
            )
            kind, w, h = _handle_section(r, 1.0)
            parts.add(_sweep(path, _section(kind, w, h), side=(0, 1, 0)), "knob")
        else:
            span, post = r.u(0.05, 0.08), r.u(0.012, 0.02)
            for x in (-0.4 * span, 0.4 * span):
                parts.add(_cylinder(0.005, lid_top - 0.003, lid_top + post, 16, (x, 0)), "knob")
            bar = np.array([[-0.5 * span, 0, lid_top + post], [0.5 * span, 0, lid_top + post]])
            parts.add(
                _sweep(bar, _section("oval", r.u(0.012, 0.02), r.u(0.008, 0.012)), side=(0, 1, 0)), "knob"
            )
    return parts, f"{family}/{handles}/{lid}"


def _pan(r: _Rand) -> tuple[_Parts, str]:
    """Pans: frying pans with flared walls, straight-sided sautes, round-bottomed woks, shallow
    crepe pans, square grill pans with ridges and cast-iron skillets with a short handle and a
    pouring-side helper lip; stick handles round, oval, flat or D, straight or curved, with or
    without a hanging ring or a riveted bracket."""
    family = r.pick(["frying", "saute", "wok", "crepe", "grill", "cast_iron"])
    shape = None
    wall = r.u(0.0025, 0.004)
    if family == "frying":
        rt, height, rb_f, q = r.u(0.1, 0.15), r.u(0.035, 0.055), r.u(0.72, 0.85), r.u(1.0, 1.6)
    elif family == "saute":
        rt, height, rb_f, q = r.u(0.11, 0.14), r.u(0.055, 0.075), r.u(0.88, 0.95), 1.0
    elif family == "wok":
        rt, height, rb_f, q = r.u(0.14, 0.17), r.u(0.08, 0.1), r.u(0.25, 0.35), 2.0
        wall = r.u(0.0015, 0.0025)
    elif family == "crepe":
        rt, height, rb_f, q = r.u(0.11, 0.13), r.u(0.015, 0.022), r.u(0.85, 0.92), 1.0
    elif family == "grill":
        rt, height, rb_f, q = r.u(0.1, 0.13), r.u(0.04, 0.05), r.u(0.85, 0.92), 1.0
        shape = _superellipse(r.u(4.0, 6.0))
    else:
        rt, height, rb_f, q = r.u(0.1, 0.14), r.u(0.04, 0.055), r.u(0.8, 0.88), 1.0
        wall = r.u(0.005, 0.0065)
    bottom = wall + r.u(0.0, 0.002)
    base = _bowl_profile(rb_f * rt, rt, q)
    rim = r.pick(["rounded", "flat", "flared"])
    radial = base
    style = rim
    if rim == "flared":
        flare, frac = r.u(0.003, 0.008), r.u(0.1, 0.25)

        def radial(s: np.ndarray) -> np.ndarray:
            return base(s) + flare * np.clip((s - (1 - frac)) / frac, 0, 1) ** 2

        style = "rounded"
    vessel = _vessel(
        height,
        radial,
        wall=wall,
        bottom=bottom,
        rim=style,
        band=0.01,
        rim_label="body",
        fillet=r.u(0.008, 0.02) if family != "crepe" else 0.006,
        shape=shape,
        sections=96,
    )
    parts = _Parts()
    parts.add(vessel.mesh, vessel.labels)
    if family == "grill":  # ridges across the cooking surface
        pitch = r.u(0.018, 0.028)
        inner = rb_f * rt * 0.85
        for x in np.arange(-inner + 0.5 * pitch, inner, pitch):
            rib = trimesh.creation.box(extents=(0.004, 2 * inner * 0.95, 0.006))
            parts.add(_place(rib, None, (x, 0.0, bottom + 0.002)), "body")
    handle_z = vessel.wall_top - (r.u(0.006, 0.015) if family != "crepe" else 0.004)
    if family == "wok" and r.chance(0.5):
        sec = _handle_section(r, 1.2)
        for angle in (0.0, math.pi):
            parts.add(
                _horizontal_loop(
                    r,
                    vessel.outer_radius,
                    handle_z - 0.01,
                    wall,
                    width=r.u(0.05, 0.08),
                    reach=r.u(0.025, 0.04),
                    tilt=math.radians(r.u(10, 30)),
                    section=sec,
                    angle=angle,
                ),
                "handle",
            )
        return parts, f"{family}/ears/{sec[0]}"
    x0 = vessel.outer_radius(handle_z) - 0.5 * wall
    if family == "cast_iron":
        length, rise, thick = r.u(0.11, 0.15), r.u(5, 15), 1.3
    else:
        length, rise, thick = r.u(0.16, 0.24), r.u(5, 22), 1.0
    meshes, style_h = _long_handle(
        r, x0, handle_z, length=length, rise_deg=rise, thickness=thick, ring=r.chance(0.35)
    )
    for m in meshes:
        parts.add(m, "handle")
    if family not in ("cast_iron", "crepe") and r.chance(0.4):  # riveted bracket on the wall
        bracket = trimesh.creation.box(extents=(0.012, r.u(0.03, 0.045), r.u(0.025, 0.035)))
        parts.add(_place(bracket, None, (x0 + 0.002, 0.0, handle_z - 0.004)), "handle")
        style_h += "/bracket"
    if family == "cast_iron" or (family == "saute" and r.chance(0.5)):  # helper lip/loop opposite
        zh = handle_z - 0.004
        xh = vessel.outer_radius(zh) - 0.5 * wall
        path = _bezier([[xh - 0.004, 0, zh], [xh + r.u(0.02, 0.035), 0, zh + 0.004]], 10)
        helper = _sweep(
            path,
            _section("flat", r.u(0.04, 0.06), r.u(0.008, 0.012)),
            side=(0, 1, 0),
            scale=np.linspace(1.0, 0.85, 10),
        )
        parts.add(_place(helper, _rot("z", math.pi)), "handle")
        style_h += "+helper"
    return parts, f"{family}/{style_h}/{rim}"


def _scoop(r: _Rand) -> tuple[_Parts, str]:
    """Scoops: ladles with a hooked handle, measuring scoops, spoons lying on their back, flour
    scoops (an open trough with a closed back) and ice-cream dippers with a thick grip."""
    family = r.pick(["ladle", "measuring", "spoon", "trough", "dipper"])
    parts = _Parts()
    if family == "trough":
        rs, ls, t = r.u(0.03, 0.045), r.u(0.07, 0.12), r.u(0.0012, 0.002)
        a_back, a_front = r.u(0.8, 0.93) * math.pi, r.u(0.45, 0.6) * math.pi
        xs = np.linspace(0, ls, 30)
        v = np.linspace(-1, 1, 48)
        alpha = a_back + (a_front - a_back) * xs / ls
        phi = alpha[:, None] * v[None, :]
        grid = np.stack(
            [np.broadcast_to(xs[:, None], phi.shape), rs * np.sin(phi), rs - rs * np.cos(phi)], axis=2
        )
        parts.add(_thick_sheet(grid, t), "bowl")
        back = _place(_cylinder(rs, -t, 0.0, 48), _rot("y", 0.5 * math.pi), (0.0, 0.0, rs))
        parts.add(back, "bowl")
        hl, hr = r.u(0.07, 0.11), r.u(0.008, 0.012)
        path = _bezier([[0.002, 0, rs], [-hl, 0, rs + r.u(0.0, 0.02)]], 30)
        sc = np.interp(np.linspace(0, 1, 30), [0, 0.15, 0.85, 1], [0.8, 1.0, 1.1, 1.0])
        parts.add(_sweep(path, _section("round", 2 * hr, 2 * hr), scale=sc), "handle")
        return parts, family
    if family == "spoon":
        radius, depth = r.u(0.02, 0.035), r.u(0.007, 0.014)
        shape = _superellipse(2.0, r.u(0.55, 0.75))
    elif family == "ladle":
        radius = r.u(0.035, 0.05)
        depth, shape = radius * r.u(0.6, 0.9), None
    elif family == "dipper":
        radius = r.u(0.025, 0.035)
        depth, shape = radius * r.u(0.8, 1.0), None
    else:
        radius, depth, shape = r.u(0.022, 0.035), r.u(0.022, 0.04), None
    t = r.u(0.0012, 0.0022)
    q = 1.0 if family == "measuring" else 2.0
    rb = radius * (r.u(0.85, 0.95) if family == "measuring" else r.u(0.1, 0.3))
    vessel = _vessel(
        depth,
        _bowl_profile(rb, radius, q),
        wall=t,
        bottom=t,
        rim="rounded",
        band=0.005,
        body="bowl",
        rim_label="bowl",
        fillet=0.004 if family == "measuring" else 0.002,
        shape=shape,
        sections=64,
    )
    parts.add(vessel.mesh, vessel.labels)
    top = vessel.top
    x0 = radius - 0.5 * t
    if family == "ladle":
        rise = math.radians(r.u(55, 78))
        length = r.u(0.2, 0.3)
        start = np.array([x0 - 0.002, 0.0, top - 0.004])
        end = start + length * np.array([math.cos(rise), 0.0, math.sin(rise)])
        main = _bezier([start, start + [0.012, 0, 0.004], end], 40)
        rh, turn = r.u(0.01, 0.02), math.radians(r.u(100, 180))
        center = end + rh * np.array([math.sin(rise), 0.0, -math.cos(rise)])
        a = np.linspace(0, turn, 16)[1:]
        hook = center + rh * np.column_stack([-np.sin(rise - a), np.zeros_like(a), np.cos(rise - a)])
        path = np.concatenate([main, hook])
        kind = r.pick(["flat", "round", "oval"])
        w, h = (
            (r.u(0.012, 0.02), r.u(0.003, 0.005))
            if kind == "flat"
            else (r.u(0.007, 0.011), r.u(0.006, 0.009))
        )
        parts.add(_sweep(path, _section(kind, w, h), side=(0, 1, 0)), "handle")
        style = f"hook/{kind}"
    elif family == "measuring":
        length = r.u(0.08, 0.14)
        drop = r.u(-0.005, 0.01)
        path = _bezier([[x0 - 0.002, 0, top - 0.003], [x0 + length, 0, top - 0.003 - drop]], 20)
        w, h = r.u(0.012, 0.02), r.u(0.002, 0.0035)
        parts.add(
            _sweep(
                path,
                _section("flat", w, h),
                side=(0, 1, 0),
                scale=np.column_stack([np.linspace(0.8, 1.1, 20), np.ones(20)]),
            ),
            "handle",
        )
        style = "flat"
        if r.chance(0.5):
            rr = 0.35 * w
            c = np.array([x0 + length + rr, 0.0, top - 0.003 - drop])
            a = np.linspace(0, _TWO_PI, 32, endpoint=False)
            loop = c + rr * np.column_stack([np.cos(a), np.sin(a), np.zeros_like(a)])
            parts.add(_sweep(loop, _section("flat", h, 0.3 * w), side=(0, 0, 1), closed=True), "handle")
            style += "/ring"
    elif family == "spoon":
        length = r.u(0.11, 0.18)
        w, h = r.u(0.007, 0.012), r.u(0.0022, 0.0035)
        path = _bezier(
            [
                [x0 - 0.002, 0, top - 0.001],
                [x0 + 0.3 * length, 0, top + 0.012],
                [x0 + 0.7 * length, 0, top + 0.006],
                [x0 + length, 0, 0.5 * h],
            ],
            40,
        )
        widen = np.column_stack(
            [np.interp(np.linspace(0, 1, 40), [0, 0.3, 1], [0.8, 0.9, r.u(1.4, 2.0)]), np.ones(40)]
        )
        parts.add(_sweep(path, _section("flat", w, h), side=(0, 1, 0), scale=widen), "handle")
        style = "flat"
    else:
        length, hr = r.u(0.1, 0.14), r.u(0.008, 0.012)
        path = _bezier([[x0 - 0.004, 0, top - 0.006], [x0 + length, 0, top + r.u(0.0, 0.02)]], 30)
        sc = np.interp(np.linspace(0, 1, 30), [0, 0.2, 0.7, 1], [0.6, 0.9, 1.1, 1.0])
        parts.add(
            _sweep(path, _section(r.pick(["round", "oval"]), 2 * hr, 1.7 * hr), side=(0, 1, 0), scale=sc),
            "handle",
        )
        style = "grip"
    return parts, f"{family}/{style}"


def _hammer(r: _Rand) -> tuple[_Parts, str]:
    """Hammers lying on their side (handle along +x, head along y): claw, ball-peen, cross-peen,
    club (lump) hammers and mallets; oval, round or rounded-rectangle shafts, straight or
    slightly curved, with a neck, a flared butt and sometimes a rubber grip sleeve."""
    family = r.pick(["claw", "ball_peen", "cross_peen", "club", "mallet"])
    parts = _Parts()
    to_y = _rot("x", -0.5 * math.pi)  # z-aligned primitives -> along +y
    width = r.u(0.022, 0.03)  # head thickness along z
    eye = r.u(0.024, 0.034)  # head size along the handle (x)
    if family == "mallet":
        hr, hl = r.u(0.025, 0.04), r.u(0.08, 0.13)
        e = 0.15 * hr
        prof = [
            (0.0, -0.5 * hl),
            (hr - e, -0.5 * hl),
            (hr, -0.5 * hl + e),
            (hr, 0.5 * hl - e),
            (hr - e, 0.5 * hl),
            (0.0, 0.5 * hl),
        ]
        head, _ = _lathe(prof, ["head"] * 5, sections=48)
        parts.add(_place(head, to_y), "head")
        shaft_in, handle_len = -0.5 * hr, r.u(0.28, 0.35)
        kind = "round"
        sw = sh = r.u(0.02, 0.026)
        z_axis = 0.0
        style = "mallet"
    elif family == "club":
        side_len, hl = r.u(0.038, 0.05), r.u(0.1, 0.13)
        path = np.array([[0.0, -0.5 * hl, 0.0], [0.0, 0.5 * hl, 0.0]])
        head = _sweep(path, _section("flat", side_len, side_len, 28), side=(0, 0, 1))
        parts.add(head, "head")
        shaft_in, handle_len = -0.4 * side_len, r.u(0.22, 0.28)
        kind, sw, sh = r.pick(["oval", "flat"]), r.u(0.024, 0.03), r.u(0.032, 0.04)
        z_axis = 0.0
        style = "club"
    else:
        block = trimesh.creation.box(extents=(eye, r.u(0.03, 0.04), width))
        parts.add(block, "head")
        face_r = r.u(0.012, 0.016)
        neck_r = face_r * r.u(0.7, 0.85)
        reach = r.u(0.045, 0.07)
        face_len = r.u(0.012, 0.022)
        prof = [
            (0.0, 0.0),
            (neck_r, 0.0),
            (neck_r, reach - face_len),
            (face_r, reach - face_len + 0.004),
            (face_r, reach - 0.0015),
            (face_r - 0.0015, reach),
            (0.0, reach),
        ]
        striker, _ = _lathe(prof, ["head"] * 6, sections=40)
        parts.add(_place(striker, to_y), "head")
        if family == "claw":
            rc, sweep_deg = r.u(0.05, 0.08), r.u(40, 70)
            a = np.linspace(0, math.radians(sweep_deg), 24)
            # Circle through (0, -0.01) heading -y, curving towards +x (the handle).
            cx = rc
            pts = np.column_stack([cx - rc * np.cos(a), -0.012 - rc * np.sin(a), np.zeros_like(a)])
            pts = np.concatenate([[[0.0, 0.005, 0.0]], pts])
            thick = np.interp(np.linspace(0, 1, len(pts)), [0, 0.2, 1], [1.0, 1.0, 0.2])
            gap = r.u(0.002, 0.004)
            prong_w = 0.5 * (width - gap)
            for zz in (-0.5 * (prong_w + gap), 0.5 * (prong_w + gap)):
                prong = _sweep(
                    pts + [0, 0, zz],
                    _section("flat", prong_w, r.u(0.014, 0.02)),
                    side=(0, 0, 1),
                    scale=np.column_stack([np.ones(len(pts)), thick]),
                )
                parts.add(prong, "head")
            style = "claw"
        elif family == "ball_peen":
            br = r.u(0.011, 0.016)
            ball_y = -r.u(0.03, 0.045)
            neck = _place(_cylinder(0.7 * br, 0.0, -ball_y, 24), to_y, (0, ball_y, 0))
            parts.add(neck, "head")
            ball = trimesh.creation.icosphere(subdivisions=2, radius=br)
            parts.add(_place(ball, None, (0.0, ball_y - 0.5 * br, 0.0)), "head")
            style = "ball_peen"
        else:
            pl = r.u(0.035, 0.05)
            path = np.array([[0.0, 0.0, 0.0], [0.0, -pl, 0.0]])
            wedge = _sweep(
                path,
                _section("flat", width, eye * 0.9),
                side=(0, 0, 1),
                scale=np.array([[1.0, 1.0], [1.0, 0.12]]),
            )
            parts.add(wedge, "head")
            style = "cross_peen"
        shaft_in, handle_len = -0.35 * eye, r.u(0.27, 0.35)
        kind, sw, sh = r.pick(["oval", "flat", "round"]), r.u(0.02, 0.026), r.u(0.028, 0.036)
        if kind == "round":
            sh = sw
        z_axis = 0.0
    n = 50
    xs = np.linspace(shaft_in, handle_len, n)
    bend = r.u(-0.012, 0.012) if family in ("claw", "cross_peen", "ball_peen") else 0.0
    ys = bend * np.sin(np.pi * (xs - shaft_in) / (handle_len - shaft_in))
    path = np.column_stack([xs, ys, np.full(n, z_axis)])
    u = np.linspace(0, 1, n)
    profile = np.interp(u, [0, 0.15, 0.35, 0.85, 0.95, 1.0], [0.85, 0.78, 0.9, 1.0, 1.12, 1.05])
    # Section x along z (thickness of the shaft), y across in the hammer's plane (striking direction).
    parts.add(
        _sweep(path, _section(kind, sw, sh), side=(0, 0, 1), scale=np.column_stack([profile, profile])),
        "handle",
    )
    if family != "mallet" and r.chance(0.4):  # a rubber grip sleeve over the back of the shaft
        g = u > r.u(0.45, 0.6)
        parts.add(
            _sweep(
                path[g],
                _section(kind, sw * 1.12, sh * 1.12),
                side=(0, 0, 1),
                scale=np.column_stack([profile[g], profile[g]]),
            ),
            "handle",
        )
        style += "/grip"
    return parts, f"{style}/{kind}"


def _basket(r: _Rand) -> tuple[_Parts, str]:
    """Baskets: round, oval and rectangular; woven (a basket-weave relief), solid plastic or open
    wire (rods and hoops you can see through); a braided or rolled border; a bail arching over
    the top, two ears rising from the rim, or two loops sticking out."""
    plan = r.pick(["round", "oval", "rect"])
    aspect = 1.0 if plan == "round" else r.u(0.6, 0.8)
    n = 2.0 if plan != "rect" else r.u(4.0, 6.0)
    plan_shape = _superellipse(n, aspect)
    radius = r.u(0.1, 0.17)
    height = r.u(0.07, 0.16)
    rb = radius * r.u(0.78, 0.95)
    band = r.u(0.008, 0.015)
    walls = r.pick(["woven", "wire", "solid"])
    parts = _Parts()

    def radial(s: np.ndarray) -> np.ndarray:
        return rb + (radius - rb) * s

    if walls == "wire":
        rod = r.u(0.0015, 0.0025)
        hoop = r.u(0.0015, 0.0022)
        floor = _lathe(
            [(0.0, 0.0), (rb - 0.004, 0.0), (rb - 0.004, 0.003), (0.0, 0.003)],
            ["body"] * 3,
            sections=64,
            shape=plan_shape,
        )[0]
        parts.add(floor, "body")
        phi_ring = np.linspace(0, _TWO_PI, 120, endpoint=False)

        def ring_at(z: float) -> np.ndarray:
            rr = float(radial(np.array([z / height]))[0]) * plan_shape(phi_ring, np.array([z]))[0]
            return np.column_stack([rr * np.cos(phi_ring), rr * np.sin(phi_ring), np.full(len(phi_ring), z)])

        spacing = r.u(0.03, 0.045)
        for z in np.arange(0.004, height - band - 0.004, spacing):
            parts.add(
                _sweep(ring_at(float(z)), _section("round", 2 * hoop, 2 * hoop), side=None, closed=True),
                "body",
            )
        top_r = r.u(0.003, 0.005)
        parts.add(_sweep(ring_at(height), _section("round", 2 * top_r, 2 * top_r), closed=True), "rim")
        parts.add(
            _sweep(ring_at(height - band + 0.002), _section("round", 2 * hoop, 2 * hoop), closed=True), "rim"
        )
        perimeter = float(np.sum(np.linalg.norm(np.diff(ring_at(height), axis=0), axis=1)))
        count = max(12, int(perimeter / r.u(0.018, 0.03)))
        for phi in np.linspace(0, _TWO_PI, count, endpoint=False):
            f = float(plan_shape(np.array([phi]), np.array([0.0]))[0, 0])
            d = np.array([math.cos(phi) * f, math.sin(phi) * f, 0.0])
            lo = d * rb + [0, 0, 0.0015]
            mid = d * float(radial(np.array([(height - band) / height]))[0]) + [0, 0, height - band]
            hi = d * radius + [0, 0, height]
            parts.add(_sweep(np.array([lo, mid]), _section("round", 2 * rod, 2 * rod, 10)), "body")
            parts.add(_sweep(np.array([mid, hi]), _section("round", 2 * rod, 2 * rod, 10)), "rim")
        top = height + top_r
        attach_r = radius
        wall_t = 2 * top_r
    else:
        weave = None
        wall = r.u(0.003, 0.006)
        if walls == "woven":
            lobes = max(8, 2 * int(math.pi * radius / r.u(0.015, 0.025)))
            pitch, amp = r.u(0.012, 0.022), r.u(0.0008, 0.0016) / radius

            def weave(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
                return 1 + amp * np.sin(lobes * phi)[None, :] * np.sin(_TWO_PI * z / pitch)[:, None]

        vessel = _vessel(
            height,
            radial,
            wall=wall,
            bottom=wall,
            rim="flat",
            band=band,
            shape=_combine(plan_shape, weave),
            fillet=r.u(0.008, 0.02),
            sections=120,
        )
        parts.add(vessel.mesh, vessel.labels)
        border = r.u(0.004, 0.008)
        c = (radius - 0.5 * wall, vessel.wall_top)
        ring = [
            (c[0] + border * math.cos(a), c[1] + border * math.sin(a))
            for a in np.linspace(0, _TWO_PI, 14, endpoint=False)
        ]
        braid_lobes = int(r.u(40, 90))

        def braid(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
            return 1 + (0.35 * border / radius) * np.abs(np.sin(braid_lobes * phi))[None, :] * np.ones(
                (len(z), 1)
            )

        bead, _ = _lathe(
            ring,
            ["rim"] * len(ring),
            sections=180,
            closed=True,
            shape=_combine(plan_shape, braid if walls == "woven" else None),
        )
        parts.add(bead, "rim")
        top = vessel.wall_top + border
        attach_r = radius - 0.5 * wall
        wall_t = wall
    handle = r.pick(["bail", "ears", "loops"])
    kind, w, h = _handle_section(r, 1.2)
    y_half = attach_r * aspect
    if handle == "bail":
        rise = r.u(0.1, 0.2)
        p = r.u(2.0, 3.5)
        t = np.linspace(0, math.pi, 60)
        c_, s_ = np.cos(t), np.sin(t)
        ys = y_half * np.sign(c_) * np.abs(c_) ** (2 / p)
        zs = top - 0.006 + rise * np.abs(s_) ** (2 / p)
        path = np.column_stack([np.zeros_like(ys), ys, zs])
        parts.add(_sweep(path, _section(kind, w, h), side=(1, 0, 0)), "handle")
    elif handle == "ears":
        span, rise = r.u(0.05, 0.09), r.u(0.03, 0.05)
        t = np.linspace(0, math.pi, 30)
        for sign in (1.0, -1.0):
            path = np.column_stack(
                [
                    np.full(30, sign * (attach_r - 0.001)),
                    0.5 * span * np.cos(t),
                    top - 0.006 + rise * np.sin(t),
                ]
            )
            parts.add(_sweep(path, _section(kind, w, h), side=(1, 0, 0)), "handle")
    else:

        def radius_at(z: float) -> float:
            return attach_r + 0.5 * wall_t

        for angle in (0.0, math.pi):
            parts.add(
                _horizontal_loop(
                    r,
                    radius_at,
                    top - 0.012,
                    wall_t,
                    width=r.u(0.05, 0.09),
                    reach=r.u(0.02, 0.035),
                    tilt=math.radians(r.u(0, 30)),
                    section=(kind, w, h),
                    angle=angle,
                ),
                "handle",
            )
    return parts, f"{plan}/{walls}/{handle}/{kind}"


def _stadium(cx: float, cy: float, length_y: float, width_x: float, n: int = 32) -> np.ndarray:
    """Closed outline of a slot (a rectangle with round ends) with its long axis along y."""
    rr = 0.5 * width_x
    half = 0.5 * length_y - rr
    a = np.linspace(0, math.pi, n // 2)
    top = np.column_stack([cx + rr * np.cos(a), cy + half + rr * np.sin(a)])
    bottom = np.column_stack([cx - rr * np.cos(a), cy - half - rr * np.sin(a)])
    return np.concatenate([top, bottom])


def _clip_x(poly: np.ndarray, x: float, keep_below: bool) -> np.ndarray:
    """A convex polygon clipped to ``x' <= x`` (or ``>= x``) (Sutherland-Hodgman, one edge)."""
    out = []
    sign = 1.0 if keep_below else -1.0
    for a, b in zip(poly, np.roll(poly, -1, axis=0), strict=True):
        ina, inb = sign * (a[0] - x) <= 0, sign * (b[0] - x) <= 0
        if ina:
            out.append(a)
        if ina != inb:
            t = (x - a[0]) / (b[0] - a[0])
            out.append(a + t * (b - a))
    return np.array(out)


def _cutting_board(r: _Rand) -> tuple[_Parts, str]:
    """Cutting boards: rectangular or round with a paddle handle (maybe with a hanging hole),
    rectangular with a hand hole at one end or at both; square or bevelled edges, sometimes on
    feet. The handle is the paddle, or the end strip that holds the hand hole."""
    family = r.pick(["paddle_rect", "paddle_round", "slot", "two_slots"])
    thick = r.u(0.012, 0.035)
    bevel = r.u(0.002, min(0.005, 0.25 * thick)) if r.chance(0.5) else 0.0
    feet = r.chance(0.3)
    z0 = r.u(0.005, 0.009) if feet else 0.0
    z1 = z0 + thick
    parts = _Parts()
    if family in ("paddle_rect", "paddle_round"):
        if family == "paddle_rect":
            length, width = r.u(0.25, 0.38), r.u(0.16, 0.26)
            corner = r.u(0.005, 0.04)
            board = _rounded_rect(length, width, corner)
            tab_w = r.u(0.05, min(0.1, width - 2 * corner - 0.01))
            x_join = 0.5 * length
        else:
            radius = r.u(0.11, 0.17)
            length = width = 2 * radius
            a = np.linspace(0, _TWO_PI, 200, endpoint=False)
            tab_w = r.u(0.05, 0.09)
            x_join = math.sqrt(radius**2 - (0.5 * tab_w) ** 2)
            board = _clip_x(
                np.column_stack([radius * np.cos(a), radius * np.sin(a)]), x_join, keep_below=True
            )
        center = board.mean(axis=0)
        parts.add(_star_prism(board, center, z0, z1, bevel=bevel, flat_x=x_join), "board")
        tab_l = r.u(0.06, 0.12)
        rr = 0.5 * tab_w
        a = np.linspace(-0.5 * math.pi, 0.5 * math.pi, 24)
        end_c = x_join + tab_l - rr
        tab = np.concatenate(
            [[[x_join, -rr]], np.column_stack([end_c + rr * np.cos(a), rr * np.sin(a)]), [[x_join, rr]]]
        )
        hole = None
        if r.chance(0.6):
            hr = min(r.u(0.007, 0.014), 0.5 * rr)
            t = np.linspace(0, _TWO_PI, 32, endpoint=False)
            hole = np.column_stack([end_c + hr * np.cos(t), hr * np.sin(t)])
        parts.add(_star_prism(tab, (end_c, 0.0), z0, z1, hole=hole, bevel=bevel, flat_x=x_join), "handle")
        style = f"{family}{'/hole' if hole is not None else ''}"
        feet_xy = [(sx * 0.3 * length, sy * 0.3 * width) for sx in (-1, 1) for sy in (-1, 1)]
    else:
        length, width = r.u(0.3, 0.45), r.u(0.2, 0.3)
        corner = r.u(0.01, 0.04)
        outline = _rounded_rect(length, width, corner)
        slot_w, slot_l = r.u(0.022, 0.032), r.u(0.08, 0.11)
        inset = r.u(0.025, 0.04)
        margin = r.u(0.012, 0.02)
        ends = (1.0, -1.0) if family == "two_slots" else (1.0,)
        x_cut = 0.5 * length - inset - slot_w - margin
        board = outline
        for e in ends:
            board = _clip_x(board, e * x_cut, keep_below=e > 0)
        parts.add(
            _star_prism(board, board.mean(axis=0), z0, z1, bevel=bevel, flat_x=[e * x_cut for e in ends]),
            "board",
        )
        for e in ends:
            strip = _clip_x(outline, e * x_cut, keep_below=e < 0)
            sc = e * (0.5 * length - inset - 0.5 * slot_w)
            hole = _stadium(sc, 0.0, slot_l, slot_w)
            parts.add(
                _star_prism(strip, (sc, 0.0), z0, z1, hole=hole, bevel=bevel, flat_x=e * x_cut), "handle"
            )
        style = family
        feet_xy = [(sx * (x_cut - 0.03), sy * 0.35 * width) for sx in (-1, 1) for sy in (-1, 1)]
    if feet:
        fr = r.u(0.008, 0.012)
        for x, y in feet_xy:
            parts.add(_cylinder(fr, 0.0, z0 + 0.001, 20, (x, y)), "board")
        style += "/feet"
    return parts, f"{style}{'/bevel' if bevel else ''}"


_BUILDERS: dict[str, Callable[[_Rand], tuple[_Parts, str]]] = {
    "mug": _mug,
    "paper_cup": _paper_cup,
    "bowl": _bowl,
    "bottle": _bottle,
    "kettle": _kettle,
    "pot": _pot,
    "pan": _pan,
    "scoop": _scoop,
    "hammer": _hammer,
    "basket": _basket,
    "cutting_board": _cutting_board,
}


def make_object(category: str, seed: int) -> LabelledMesh:
    """A primitive-made instance of ``category``, the same for the same seed."""
    if category not in _BUILDERS:
        raise KeyError(f"no independent objects for {category!r}; known: {', '.join(CATEGORIES)}")
    parts, family = _BUILDERS[category](_Rand(_rng("object", category, seed)))
    return parts.build(category, family)


# --------------------------------------------------------------------------------------------------
# Robosuite meshes
# --------------------------------------------------------------------------------------------------

# Robosuite object meshes that fit a category here, by path relative to the robosuite package.
_ROBOSUITE_MESHES: dict[str, tuple[str, ...]] = {
    "bottle": ("models/assets/objects/meshes/bottle.stl",),
}
_ROBOSUITE_EVERY = 4  # every 4th instance of a category with robosuite meshes is one of them


def _robosuite_root() -> Path | None:
    """The installed robosuite package folder, found without importing it (its import is slow and
    prints warnings about optional controllers)."""
    spec = importlib.util.find_spec("robosuite")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def robosuite_sources(category: str) -> tuple[str, ...]:
    """Robosuite mesh paths (relative to the package) used for ``category``; empty without
    robosuite installed or for categories robosuite has no mesh for."""
    root = _robosuite_root()
    if root is None:
        return ()
    return tuple(p for p in _ROBOSUITE_MESHES.get(category, ()) if (root / p).is_file())


def _label_bottle(mesh: trimesh.Trimesh) -> np.ndarray:
    """Cap vs body of an upright bottle mesh, from its geometry alone.

    The neck starts where the radius first drops below 60% of the body's; the cap is the lowest
    separate shell lying wholly above that (caps are modelled as their own shell), and every face
    from the cap's bottom up. A bottle made of one shell falls back to the top third of the neck.
    """
    v = np.asarray(mesh.vertices)
    f = np.asarray(mesh.faces)
    radius = np.hypot(v[:, 0], v[:, 1])
    z = v[:, 2]
    z_lo, z_hi = float(z.min()), float(z.max())
    upper = z > z_lo + 0.5 * (z_hi - z_lo)
    narrow = upper & (radius < 0.6 * radius.max())
    neck_z = float(z[narrow].min()) if narrow.any() else z_lo + 0.8 * (z_hi - z_lo)
    comps = trimesh.graph.connected_components(mesh.face_adjacency, nodes=np.arange(len(f)))
    face_zmin = z[f].min(axis=1)
    cap_bottoms = [float(face_zmin[c].min()) for c in comps if face_zmin[c].min() >= neck_z - 1e-6]
    z_cap = min(cap_bottoms) if cap_bottoms else neck_z + (2.0 / 3.0) * (z_hi - neck_z)
    centroid_z = z[f].mean(axis=1)
    return np.where(centroid_z >= z_cap - 1e-6, "cap", "body").astype(str)


_ROBOSUITE_LABELLERS: dict[str, Callable[[trimesh.Trimesh], np.ndarray]] = {"bottle": _label_bottle}


def robosuite_object(category: str, path: str, variant: int = 0, seed: int = 0) -> LabelledMesh:
    """A robosuite mesh as a labelled object, upright on z = 0 and centred in x-y.

    Variant 0 is the mesh at its own size; later variants are uniformly scaled by 0.85-1.2 (the
    sizes robosuite tasks scale their objects to), as the only way to draw more than one instance
    from a single real mesh.
    """
    root = _robosuite_root()
    if root is None:
        raise FileNotFoundError("robosuite is not installed")
    mesh = trimesh.load(str(root / path), force="mesh")
    if not isinstance(mesh, trimesh.Trimesh):
        raise ValueError(f"{path} did not load as a single triangle mesh")
    v = np.asarray(mesh.vertices, dtype=np.float64)
    if variant:
        v = v * _Rand(_rng("robosuite", f"{category}|{path}", seed * 1000 + variant)).u(0.85, 1.2)
    lo, hi = v.min(axis=0), v.max(axis=0)
    v = v - np.array([0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), lo[2]])
    placed = trimesh.Trimesh(vertices=v, faces=np.asarray(mesh.faces), process=False)
    labels = _ROBOSUITE_LABELLERS[category](placed)
    return LabelledMesh(
        category=category,
        mesh=placed,
        face_parts=labels,
        origin=f"robosuite:{path}",
        family=f"robosuite/{Path(path).stem}{f'/x{variant}' if variant else ''}",
    )


def instances(category: str, count: int, seed: int = 0) -> list[LabelledMesh]:
    """``count`` instances of ``category``, the same list for the same seed.

    Slot ``i`` is ``make_object(category, seed * 1_000_003 + i)``, except that for categories with
    robosuite meshes every fourth slot (3, 7, 11...) takes the next robosuite mesh instead (its
    first use at native size, later ones rescaled), so real meshes make up about a quarter.
    """
    sources = robosuite_sources(category)
    out: list[LabelledMesh] = []
    for i in range(count):
        if sources and i % _ROBOSUITE_EVERY == _ROBOSUITE_EVERY - 1:
            j = i // _ROBOSUITE_EVERY
            out.append(
                robosuite_object(category, sources[j % len(sources)], variant=j // len(sources), seed=seed)
            )
        else:
            out.append(make_object(category, seed * 1_000_003 + i))
    return out


# --------------------------------------------------------------------------------------------------
# A RealSense-like partial view
# --------------------------------------------------------------------------------------------------

_IMAGE_W, _IMAGE_H = 848, 480  # D435/D455 depth stream at its native resolution
_BASELINE = 0.05  # metres between the two IR imagers (D435: 50 mm)
_DEPTH_UNIT = 0.001  # z16 depth is in millimetres
_FLYING_REACH = 0.08  # flying pixels kept up to 8 cm behind their edge, as an object crop would


@dataclass(frozen=True, eq=False)
class PartialView:
    """Everything a single simulated depth frame of one object yields, in one frame of reference.

    The frame has the world's axes (z up, the table at the posed object's foot) and its origin at
    the centre of the measured points' bounding box.

    Attributes:
        points: (N, 3) float32 measured points (noise, flying pixels and all).
        parts: (N,) part name per point (for a flying pixel, the part of the nearest surface point).
        flying: (N,) True for flying pixels.
        surface: (N, 3) noise-free surface point behind each measurement (the nearest surface point
            for a flying pixel), for checking the simulation.
        camera: (3,) the depth camera's optical centre.
        mesh: The object in the pose it was seen in; faces keep their order (labels still apply).
        stats: Pixel counts: ``pixels`` cast, ``hit`` the object, lost to ``grazing``, ``shadow``
            (unseen by the second imager) and ``speckle``, turned ``flying``, and ``valid`` kept.
        sigma_coeff: ``k`` in the depth noise ``sigma = k * z**2``.
    """

    points: np.ndarray
    parts: np.ndarray
    flying: np.ndarray
    surface: np.ndarray
    camera: np.ndarray
    mesh: trimesh.Trimesh
    stats: dict[str, int] = field(default_factory=dict)
    sigma_coeff: float = 0.0


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues rotation about a unit axis."""
    a = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def _scene(mesh: trimesh.Trimesh):  # type: ignore[no-untyped-def]
    """An Open3D ray-casting scene of the mesh (Embree: no rtree/embree Python packages needed)."""
    import open3d as o3d

    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(
        o3d.core.Tensor(np.asarray(mesh.vertices, dtype=np.float32)),  # type: ignore[call-overload]
        o3d.core.Tensor(np.asarray(mesh.faces, dtype=np.uint32)),  # type: ignore[call-overload]
    )
    return scene


def _cast(scene, origins: np.ndarray, dirs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """First hits: distance (inf on a miss), face index and face normal per ray."""
    import open3d as o3d

    rays = np.concatenate([np.broadcast_to(origins, dirs.shape), dirs], axis=1).astype(np.float32)
    out = scene.cast_rays(o3d.core.Tensor(rays))  # type: ignore[call-overload]
    return (
        out["t_hit"].numpy().astype(np.float64),
        out["primitive_ids"].numpy().astype(np.int64),
        out["primitive_normals"].numpy().astype(np.float64),
    )


def nearest_faces(mesh: trimesh.Trimesh, points: np.ndarray, scene=None) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """The face nearest each point and the nearest surface point on it (how a flying pixel, or any
    off-surface point, gets its part label)."""
    import open3d as o3d

    scene = _scene(mesh) if scene is None else scene
    query = o3d.core.Tensor(np.asarray(points, dtype=np.float32).reshape(-1, 3))  # type: ignore[call-overload]
    closest = scene.compute_closest_points(query)
    return closest["primitive_ids"].numpy().astype(np.int64), closest["points"].numpy().astype(np.float64)


def render_view(
    obj: LabelledMesh,
    seed: int,
    *,
    distance: float | None = None,
    elevation_deg: float | None = None,
) -> PartialView:
    """Simulate one RealSense D4xx depth frame of ``obj`` and keep the object's points.

    The object is turned to a random yaw, tilted up to 8 degrees and stood on a table (z = 0); the
    camera sits 0.5-0.9 m away, 20-60 degrees above the table, aimed at the object. Each pixel of
    an 848x480 image (fx ~ 415-440 px) casts a ray; a hit becomes a measurement unless

    * the surface is seen at a grazing angle (always lost beyond 72-80 degrees, increasingly
      likely from 55 degrees): stereo matching fails on strongly foreshortened texture;
    * the second imager, 50 mm to the right, cannot see the point (stereo shadow): this cuts
      holes in the body beside a handle;
    * a random speckle dropout (0.5-2% of pixels).

    Depth gets Gaussian noise ``sigma = k z^2`` (k 0.004-0.008, so 1-2 mm at 0.5 m, 3-6 mm at
    0.9 m: stereo depth error grows with the square of range) and is rounded to the 1 mm depth unit.
    Flying pixels (2-5% of the kept points) are pixels just across a depth edge that report a depth
    between the edge and what lies behind (a mixed pixel), up to 8 cm behind the edge. They are
    labelled with the part of the nearest surface point.
    """
    rng = _rng("view", f"{obj.category}|{obj.origin}", seed)
    # Every scalar of the frame is drawn first, so fixing the distance or the elevation changes
    # nothing else about the view (the per-pixel draws come after).
    yaw = rng.uniform(0.0, _TWO_PI)
    tilt_axis = rng.uniform(0.0, _TWO_PI)
    tilt = math.radians(rng.uniform(0.0, 8.0))
    dist_drawn, elev_drawn, azim = rng.uniform(0.5, 0.9), rng.uniform(20.0, 60.0), rng.uniform(0.0, _TWO_PI)
    aim_jitter = rng.normal(0.0, 0.01, 3)
    fx = float(rng.uniform(415.0, 440.0))
    cx = 0.5 * _IMAGE_W + rng.normal(0.0, 2.0)
    cy = 0.5 * _IMAGE_H + rng.normal(0.0, 2.0)
    max_inc, soft = float(rng.uniform(72.0, 80.0)), 55.0
    p_speckle = float(rng.uniform(0.005, 0.02))
    fly_frac = float(rng.uniform(0.02, 0.05))
    k = float(rng.uniform(0.004, 0.008))
    rot = _axis_rotation(np.array([math.cos(tilt_axis), math.sin(tilt_axis), 0.0]), tilt) @ _rot("z", yaw)
    v = np.asarray(obj.mesh.vertices) @ rot.T
    lo, hi = v.min(axis=0), v.max(axis=0)
    v = v - np.array([0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), lo[2]])
    posed = trimesh.Trimesh(vertices=v, faces=np.asarray(obj.mesh.faces), process=False)
    dist = float(dist_drawn) if distance is None else float(distance)
    elev = math.radians(float(elev_drawn) if elevation_deg is None else float(elevation_deg))
    target = 0.5 * (v.min(axis=0) + v.max(axis=0)) + aim_jitter
    cam = target + dist * np.array(
        [math.cos(elev) * math.cos(azim), math.cos(elev) * math.sin(azim), math.sin(elev)]
    )
    forward = (target - cam) / np.linalg.norm(target - cam)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    # Only the pixels around the object's projection: the rest would miss it anyway.
    rel = (v - cam) @ np.column_stack([right, down, forward])
    u_px = fx * rel[:, 0] / rel[:, 2] + cx
    v_px = fx * rel[:, 1] / rel[:, 2] + cy
    u0, u1 = max(int(u_px.min()) - 2, 0), min(int(u_px.max()) + 3, _IMAGE_W - 1)
    v0, v1 = max(int(v_px.min()) - 2, 0), min(int(v_px.max()) + 3, _IMAGE_H - 1)
    uu, vv = np.meshgrid(np.arange(u0, u1 + 1), np.arange(v0, v1 + 1))
    h, w = uu.shape
    d = (
        right[None, :] * ((uu.ravel() - cx) / fx)[:, None]
        + down[None, :] * ((vv.ravel() - cy) / fx)[:, None]
        + forward[None, :]
    )
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    along = d @ forward  # converts range along a ray to depth (z in the camera frame)
    scene = _scene(posed)
    t_hit, prim, normal = _cast(scene, cam, d)
    hit = np.isfinite(t_hit)
    # What lies behind the object: the table, or a wall 3 m off for rays above the horizon.
    with np.errstate(divide="ignore"):
        t_table = np.where(d[:, 2] < -1e-6, -cam[2] / d[:, 2], 3.0)
    depth_fg = np.where(hit, t_hit * along, np.inf)
    depth_all = np.where(hit, depth_fg, np.minimum(t_table, 4.0) * along)
    stats = {"pixels": int(h * w), "hit": int(hit.sum())}
    valid = hit.copy()
    # Grazing angles.
    cos_inc = np.abs(np.einsum("ij,ij->i", normal, d))
    inc = np.degrees(np.arccos(np.clip(cos_inc, 0.0, 1.0)))
    p_lose = np.clip((inc - soft) / (max_inc - soft), 0.0, 1.0) ** 3
    lost = valid & ((inc > max_inc) | (rng.random(len(d)) < p_lose))
    stats["grazing"] = int(lost.sum())
    valid &= ~lost
    # Stereo shadow: the second imager must see the same surface point.
    surface = cam + d * np.where(hit, t_hit, 0.0)[:, None]
    idx = np.flatnonzero(valid)
    cam_r = cam + _BASELINE * right
    to_pt = surface[idx] - cam_r
    rng_r = np.linalg.norm(to_pt, axis=1)
    t_r, _, _ = _cast(scene, cam_r, to_pt / rng_r[:, None])
    shadow = t_r < rng_r - 0.002
    stats["shadow"] = int(shadow.sum())
    valid[idx[shadow]] = False
    speckle = valid & (rng.random(len(d)) < p_speckle)
    stats["speckle"] = int(speckle.sum())
    valid &= ~speckle
    # Flying pixels: the far pixel of each depth edge next to the object.
    grid_fg = depth_fg.reshape(h, w)
    grid_all = depth_all.reshape(h, w)
    near_depth = np.full((h, w), np.inf)
    hitg = hit.reshape(h, w)
    for dy, dx in ((0, 1), (0, -1), (1, 0), (-1, 0)):
        a = (slice(max(-dy, 0), h - max(dy, 0)), slice(max(-dx, 0), w - max(dx, 0)))
        b = (slice(max(dy, 0), h - max(-dy, 0)), slice(max(dx, 0), w - max(-dx, 0)))
        edge = hitg[a] & (grid_all[b] > grid_fg[a] + 0.02)
        near_depth[b] = np.where(edge, np.minimum(near_depth[b], grid_fg[a]), near_depth[b])
    cand = np.flatnonzero(np.isfinite(near_depth.ravel()))
    n_fly = min(len(cand), int(round(fly_frac * valid.sum())))
    fly_idx = np.sort(rng.choice(cand, n_fly, replace=False)) if n_fly else np.zeros(0, dtype=np.int64)
    z_near = near_depth.ravel()[fly_idx]
    z_far = depth_all[fly_idx]
    z_fly = z_near + rng.uniform(0.05, 0.95, n_fly) * np.minimum(z_far - z_near, _FLYING_REACH)
    valid[fly_idx] = False  # a flying pixel replaces whatever that pixel would have measured
    stats["flying"] = int(n_fly)
    stats["valid"] = int(valid.sum())
    # Depth noise and quantisation on the kept pixels.
    keep = np.flatnonzero(valid)
    z = depth_fg[keep]
    z_meas = np.round((z + rng.normal(0.0, 1.0, len(z)) * k * z**2) / _DEPTH_UNIT) * _DEPTH_UNIT
    pts = cam + d[keep] * (z_meas / along[keep])[:, None]
    labels = obj.face_parts[prim[keep]]
    fly_pts = cam + d[fly_idx] * (z_fly / along[fly_idx])[:, None]
    fly_faces, fly_surface = nearest_faces(posed, fly_pts, scene)
    all_pts = np.concatenate([pts, fly_pts])
    all_labels = np.concatenate([labels, obj.face_parts[fly_faces]]).astype(str)
    flying = np.concatenate([np.zeros(len(pts), dtype=bool), np.ones(n_fly, dtype=bool)])
    all_surface = np.concatenate([surface[keep], fly_surface])
    if len(all_pts):
        centre = 0.5 * (all_pts.min(axis=0) + all_pts.max(axis=0))
    else:
        centre = np.zeros(3)
    moved = trimesh.Trimesh(vertices=v - centre, faces=np.asarray(obj.mesh.faces), process=False)
    return PartialView(
        points=(all_pts - centre).astype(np.float32),
        parts=all_labels,
        flying=flying,
        surface=all_surface - centre,
        camera=cam - centre,
        mesh=moved,
        stats=stats,
        sigma_coeff=k,
    )


def partial_view(obj: LabelledMesh, seed: int, num_points: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """A single-camera RealSense-like view of ``obj`` (see :func:`render_view`), resampled.

    Returns (points (num_points, 3) float32 centred on their bounding box, part name per point).
    A view with more points is subsampled without replacement; one with fewer keeps every point
    and repeats random ones to fill up (as a fixed-size network input would); a view that sees
    nothing returns empty arrays.
    """
    view = render_view(obj, seed)
    n = len(view.points)
    if n == 0:
        return np.zeros((0, 3), dtype=np.float32), np.zeros(0, dtype=str)
    rng = _rng("resample", obj.category, seed)
    if n >= num_points:
        idx = rng.choice(n, num_points, replace=False)
    else:
        idx = np.concatenate([np.arange(n), rng.choice(n, num_points - n, replace=True)])
        rng.shuffle(idx)
    pts = view.points[idx].astype(np.float64)
    pts -= 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    return pts.astype(np.float32), view.parts[idx].astype(str)
