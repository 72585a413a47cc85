"""Hand tools: hammer and scoop, elongated along x and lying on the table.

Both rest on two supports (the head and the handle's butt, the bowl's foot and the handle's
tip) so they lie still where they are dropped, and their footprints are centred on the
origin. The handles are well under 0.07 m across, so the hand closes on them from above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import trimesh

from . import palette
from .containers import bowl_profile
from .generator import Built, Generator
from .params import Params, count, span
from .shapes import PieceSet, hull, lathe_solid, open_vessel, slab, sweep

# Turns a solid of revolution about z into one about x (z -> x, x -> -z).
_Z_TO_X = trimesh.transformations.rotation_matrix(np.pi / 2, [0.0, 1.0, 0.0])


@dataclass
class HammerParams(Params):
    """A hammer lying on its side: handle along x, head at the +x end, striking face on +y.

    Attributes:
        length: Overall length (m).
        head_length: Length of the head from face to peen (m).
        head_size: Side of the head's square section (m); the handle axis sits at half of it.
        face_share: Radius of the round striking face as a share of half ``head_size``.
        face_length: Length of the round-to-square neck of the face (m).
        peen_length: Length of the peen on -y (m).
        peen_style: 0 = wedge (claw-like), 1 = ball.
        grip_radius: Grip radius (m); capped at half ``head_size`` so the head touches down.
        neck_radius: Handle radius just below the head (m).
        mass: Mass (kg).
    """

    length: float = span(0.25, 0.33)
    head_length: float = span(0.09, 0.13)
    head_size: float = span(0.022, 0.03)
    face_share: float = span(0.8, 1.0)
    face_length: float = span(0.015, 0.025)
    peen_length: float = span(0.025, 0.04)
    peen_style: int = count(0, 1)
    grip_radius: float = span(0.01, 0.014)
    neck_radius: float = span(0.007, 0.009)
    mass: float = span(0.35, 0.8)


def _square(x: float, y: float, z: float, wx: float, wz: float) -> np.ndarray:
    """(4, 3) corners of a rectangle in a plane y = const, centred on (x, z)."""
    return np.array([[x + sx * wx / 2, y, z + sz * wz / 2] for sx in (-1, 1) for sz in (-1, 1)])


def build_hammer(p: HammerParams, rng: np.random.Generator) -> Built:
    s, half = p.head_size, p.head_size / 2
    x_head = p.length - half
    grip = min(p.grip_radius, half)
    # The butt flares to the axis height, so the hammer lies on its head and its butt.
    profile = [(0.9 * half, 0.0), (half, 0.006), (grip, 0.02), (grip, 0.55 * p.length),
               (p.neck_radius, 0.85 * x_head), (p.neck_radius, x_head)]
    handle = [m.apply_transform(_Z_TO_X).apply_translation([0.0, 0.0, half])
              for m in lathe_solid(profile, 16)]
    y_face, y_peen = p.head_length / 2 - p.face_length, -p.head_length / 2 + p.peen_length
    face = np.array([x_head, p.head_length / 2, half])
    a = np.linspace(0, 2 * np.pi, 20, endpoint=False)
    rim = face + p.face_share * half * np.column_stack([np.cos(a), np.zeros_like(a), np.sin(a)])
    head = [slab([p.length - s, y_peen, 0.0], [p.length, y_face, s]),
            hull(np.vstack([_square(x_head, y_face, half, s, s), rim]))]
    if p.peen_style == 0:
        head.append(hull(np.vstack([_square(x_head, y_peen, half, s, s),
                                    _square(x_head, -p.head_length / 2, half, 0.3 * s, 0.9 * s)])))
    else:
        centre = [x_head, -p.head_length / 2 + 0.48 * s, half]
        ball = trimesh.creation.icosphere(1, radius=0.48 * s).vertices + centre
        head.append(hull(np.vstack([_square(x_head, y_peen, half, s, s), ball])))
    pieces = PieceSet()
    pieces.add("head", head)
    pieces.add("handle", handle)
    rgba = {"head": palette.pick(rng, palette.METAL), "handle": palette.pick(rng, palette.WOOD)}
    return Built.rigid(pieces, rgba, p.mass, centre_xy=True)


@dataclass
class ScoopParams(Params):
    """A scoop (ladle, spoon): a hollow bowl with a handle to +x that reaches down to the table.

    Attributes:
        bowl_radius: Outer radius of the bowl's rim (m).
        depth: Bowl depth as a share of ``bowl_radius``.
        foot: Radius of the bowl's flat foot as a share of ``bowl_radius``.
        wall: Wall thickness (m).
        handle_length: Horizontal length of the handle beyond the rim (m).
        handle_radius: Handle half-width (m).
        handle_flatness: Handle half-thickness (vertical) as a share of ``handle_radius``.
        handle_sag: Height of the handle's mid-point above the straight line rim-to-tip (m).
        mass: Mass (kg).
    """

    bowl_radius: float = span(0.03, 0.045)
    depth: float = span(0.6, 1.0)
    foot: float = span(0.3, 0.45)
    wall: float = span(0.0025, 0.0035)
    handle_length: float = span(0.14, 0.22)
    handle_radius: float = span(0.006, 0.009)
    handle_flatness: float = span(0.5, 1.0)
    handle_sag: float = span(-0.005, 0.02)
    mass: float = span(0.05, 0.2)


def build_scoop(p: ScoopParams, rng: np.random.Generator) -> Built:
    r, depth = p.bowl_radius, p.depth * p.bowl_radius
    body, band = open_vessel(bowl_profile(r, depth, p.foot * r, 1.0, 5), p.wall, p.wall + 0.001, 0.006,
                             base_radius=p.foot * r, sections=16)
    thick = p.handle_radius * p.handle_flatness
    root = np.array([r - p.wall / 2, 0.0, depth - 0.004])
    tip = np.array([r + p.handle_length, 0.0, thick])  # touches the table: the second support
    bend = (root + tip) / 2 + [0.0, 0.0, 2 * p.handle_sag]
    s = np.linspace(0, 1, 8)[:, None]
    path = (1 - s) ** 2 * root + 2 * s * (1 - s) * bend + s**2 * tip
    pieces = PieceSet()
    pieces.add("bowl", [body, band])
    radii = np.column_stack([np.full(len(s), thick), np.full(len(s), p.handle_radius)])
    pieces.add("handle", sweep(path, radii))
    colour = palette.pick(rng, palette.METAL if rng.random() < 0.5 else palette.PLASTIC)
    return Built.rigid(pieces, {"bowl": colour, "handle": palette.pick(rng, palette.PLASTIC)}, p.mass,
                       centre_xy=True)


GENERATORS: dict[str, Generator] = {
    "hammer": Generator(HammerParams, build_hammer),
    "scoop": Generator(ScoopParams, build_scoop),
}
