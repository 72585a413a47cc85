"""Simple graspable objects (box, cube, banana), flat ware (plate, tray) and a target mat.

The whole-body grasps (box, cube, banana) keep one horizontal width under 0.07 m so the
Franka hand can close across it; plate and tray are grasped by pinching their rims.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import palette
from .generator import Built, Generator
from .params import Params, count, span
from .shapes import PieceSet, carton, hull, lathe_shell, lathe_solid, slab, sweep


@dataclass
class BoxParams(Params):
    """A closed carton with a slightly overhanging lid, long side along x.

    Attributes:
        length: Length along x (m).
        width: Width along y (m); under 0.065 so the hand closes across it.
        height: Height (m).
        lid: Height of the lid band (m).
        overhang: How far the lid sticks out past the sides (m).
        mass: Mass with contents (kg).
    """

    length: float = span(0.08, 0.2)
    width: float = span(0.04, 0.065)
    height: float = span(0.03, 0.12)
    lid: float = span(0.006, 0.02)
    overhang: float = span(0.0, 0.0015)
    mass: float = span(0.05, 0.5)


def build_box(p: BoxParams, rng: np.random.Generator) -> Built:
    pieces = PieceSet()
    pieces.add("body", list(carton(p.length, p.width, p.height, min(p.lid, p.height / 3), p.overhang)))
    return Built.rigid(pieces, {"body": palette.pick(rng, palette.PLASTIC)}, p.mass)


@dataclass
class CubeParams(Params):
    """A wooden or plastic block with chamfered edges.

    Attributes:
        size: Edge length (m).
        bevel: Chamfer width (m).
        mass: Mass (kg).
    """

    # Down to 2.5 cm by hand: a block that drops into a mug (place-cube-mug-v2).
    size: float = span(0.04, 0.06, limits=(0.025, 0.07))
    bevel: float = span(0.0005, 0.005)
    mass: float = span(0.04, 0.2)


def build_cube(p: CubeParams, rng: np.random.Generator) -> Built:
    half, inset = p.size / 2, p.size / 2 - p.bevel
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    corners = []
    for axis in range(3):  # the hull of three crossed slabs is a chamfered cube
        extent = np.full(3, inset)
        extent[axis] = half
        corners.append(signs * extent)
    pieces = PieceSet()
    pieces.add("body", hull(np.vstack(corners) + [0.0, 0.0, half]))
    return Built.rigid(pieces, {"body": palette.pick(rng, palette.PLASTIC)}, p.mass)


@dataclass
class BananaParams(Params):
    """A banana lying on its side: a faceted tube bent along an arc in the table plane.

    Attributes:
        length: Length along the centreline without the stem (m).
        bend: Radius of curvature of the centreline (m); smaller is more curved.
        thickness: Largest section radius (m).
        sides: Facets of the section.
        stem_length: Length of the stem (m).
        mass: Mass (kg).
    """

    length: float = span(0.16, 0.22)
    bend: float = span(0.1, 0.2)
    thickness: float = span(0.016, 0.02)
    sides: int = count(5, 6)
    stem_length: float = span(0.012, 0.025)
    mass: float = span(0.1, 0.22)


def build_banana(p: BananaParams, rng: np.random.Generator) -> Built:
    s = np.linspace(-0.5, 0.5, 13)
    radius = p.thickness * (0.3 + 0.7 * (1 - (2 * s) ** 2) ** 0.6)
    arc = s * p.length / p.bend
    # Each section's centre sits at its own radius, so the underside lies flat on the table.
    path = np.column_stack([p.bend * np.sin(arc), p.bend * (1 - np.cos(arc)), radius])
    end_dir = np.array([np.cos(arc[-1]), np.sin(arc[-1]), 0.3])
    stem = path[-1] + np.outer([0.5, 1.0], end_dir / np.linalg.norm(end_dir) * p.stem_length)
    stem_r = 0.25 * p.thickness
    pieces = PieceSet()
    pieces.add("body", sweep(np.vstack([path, stem]), np.concatenate([radius, [stem_r, stem_r]]),
                             sections=p.sides, phase=np.pi))
    return Built.rigid(pieces, {"body": palette.pick(rng, palette.BANANA)}, p.mass, centre_xy=True)


@dataclass
class PlateParams(Params):
    """A round plate: a flat well (body) and a sloped rim that the hand pinches.

    Attributes:
        radius: Outer radius (m).
        well: Radius of the flat well as a share of ``radius``.
        base: Thickness of the well (m).
        rim_height: Height of the rim's top edge (m).
        rim_thickness: Thickness of the rim (m).
        mass: Mass (kg).
    """

    radius: float = span(0.09, 0.13)
    well: float = span(0.55, 0.75)
    base: float = span(0.005, 0.008)
    rim_height: float = span(0.012, 0.025)
    rim_thickness: float = span(0.004, 0.006)
    mass: float = span(0.25, 0.6)


def build_plate(p: PlateParams, rng: np.random.Generator) -> Built:
    well = p.well * p.radius
    rim = [(well, 0.0), (well + 0.6 * (p.radius - well), 0.4 * p.rim_height), (p.radius, p.rim_height)]
    pieces = PieceSet()
    pieces.add("body", lathe_solid([(well, 0.0), (well, p.base)], 48))
    pieces.add("rim", lathe_shell(rim, p.rim_thickness, 32))
    glaze = palette.pick(rng, palette.CERAMIC)
    return Built.rigid(pieces, {"body": glaze, "rim": palette.shade(glaze, 0.8)}, p.mass)


@dataclass
class TrayParams(Params):
    """A rectangular tray: a flat base and four mitred, slightly flared rim walls.

    Attributes:
        length: Outer length along x (m).
        width: Outer width along y (m).
        base: Base thickness (m).
        rim_height: Height of the walls above the base (m).
        rim_thickness: Wall thickness (m); the hand pinches across it.
        flare: Outward lean of the walls' top edge (m).
        mass: Mass (kg).
    """

    length: float = span(0.25, 0.4)
    width: float = span(0.18, 0.3)
    base: float = span(0.004, 0.008)
    rim_height: float = span(0.015, 0.035)
    rim_thickness: float = span(0.005, 0.009)
    flare: float = span(0.0, 0.015)
    mass: float = span(0.25, 0.8)


def _rectangle(hx: float, hy: float, z: float) -> np.ndarray:
    """(4, 3) corners of a centred rectangle, counter-clockwise."""
    return np.array([[hx, hy, z], [-hx, hy, z], [-hx, -hy, z], [hx, -hy, z]])


def build_tray(p: TrayParams, rng: np.random.Generator) -> Built:
    hx, hy, t, f = p.length / 2, p.width / 2, p.rim_thickness, p.flare
    top = p.base + p.rim_height
    rings = [_rectangle(hx, hy, p.base), _rectangle(hx - t, hy - t, p.base),
             _rectangle(hx + f, hy + f, top), _rectangle(hx - t + f, hy - t + f, top)]
    walls = [hull(np.vstack([r[[k, (k + 1) % 4]] for r in rings])) for k in range(4)]
    pieces = PieceSet()
    pieces.add("base", slab([-hx, -hy, 0.0], [hx, hy, p.base]))
    pieces.add("rim", walls)
    colour = palette.pick(rng, palette.WOOD if rng.random() < 0.5 else palette.PLASTIC)
    return Built.rigid(pieces, {"base": colour, "rim": palette.shade(colour, 0.85)}, p.mass)


@dataclass
class TargetMatParams(Params):
    """A round target mat, the spot a pushed object must reach (AffordSim's push-to-target).

    Thin, with its edge bevelled; the simulator does not let anything collide with it (a marking,
    ``afford_sim.mjcf.MARKINGS``): a pushed tin tripped over even a 1 mm edge.

    Attributes:
        radius: Radius (m); the push tasks' success is the object's centre over the mat.
        thickness: Thickness (m).
        bevel: Width of the bevelled edge (m).
        mass: Mass (kg); the ontology fixes the mat to the table (a marker taped down).
    """

    radius: float = span(0.06, 0.08)
    thickness: float = span(0.0006, 0.001)
    bevel: float = span(0.008, 0.012)
    mass: float = span(0.08, 0.15)


def build_target_mat(p: TargetMatParams, rng: np.random.Generator) -> Built:
    pieces = PieceSet()
    pieces.add("marking", lathe_solid([(p.radius, 0.0), (p.radius - p.bevel, p.thickness)], 40))
    return Built.rigid(pieces, {"marking": palette.pick(rng, palette.PLASTIC)}, p.mass)


GENERATORS: dict[str, Generator] = {
    "box": Generator(BoxParams, build_box),
    "cube": Generator(CubeParams, build_cube),
    "banana": Generator(BananaParams, build_banana),
    "plate": Generator(PlateParams, build_plate),
    "tray": Generator(TrayParams, build_tray),
    "target_mat": Generator(TargetMatParams, build_target_mat),
}
