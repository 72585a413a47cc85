"""AffordSim's benchmark objects: produce (carrot, leek, bell pepper), packaged food (soup can,
chocolate box, sugar box, cheese box, coffee can) and small kitchen items (pen, cutting board).

Produce and the pen lie on their side along x. Their sections are polygons with a flat face
down (each section's centre sits at its own apothem), so the underside is one level strip
that cannot roll: a free object must stand still where it is put. Whatever is grasped whole
keeps one horizontal width under 0.07 m so the Franka hand (0.08 m stroke) closes across it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import trimesh
from numpy.typing import ArrayLike

from . import palette
from .generator import Built, Generator
from .params import Params, count, span
from .shapes import PieceSet, carton, hull, lathe_solid, ring, slab


def _section(x: float, half_w: float, half_h: float, sides: int) -> np.ndarray:
    """(sides, 3) polygon in the plane at ``x``, with a flat edge lying on z = 0.

    Its semi-axes are ``half_w`` along y and ``half_h`` along z (to the vertices); the centre
    sits at the apothem, so the two lowest vertices are on the table.
    """
    a = -np.pi / 2 + np.pi / sides + 2 * np.pi * np.arange(sides) / sides
    zc = half_h * np.cos(np.pi / sides)
    return np.column_stack([np.full(sides, x), half_w * np.cos(a), zc + half_h * np.sin(a)])


def _lying(xs: ArrayLike, half_w: ArrayLike, half_h: ArrayLike, sides: int) -> list[trimesh.Trimesh]:
    """A faceted rod lying along x: one hull per step between consecutive sections.

    Consecutive hulls share their section polygon, so the rod has no cracks, and every
    section's flat underside is on z = 0, so the whole rod rests on one level strip.
    """
    rings = [_section(float(x), float(w), float(h), sides)
             for x, w, h in zip(np.ravel(xs), np.ravel(half_w), np.ravel(half_h), strict=True)]
    return [hull(np.vstack([r0, r1])) for r0, r1 in zip(rings[:-1], rings[1:], strict=True)]


def _apothem(half_h: float, sides: int) -> float:
    """Height of a :func:`_section`'s centre above the table."""
    return half_h * float(np.cos(np.pi / sides))


# --- produce ------------------------------------------------------------------------------------


@dataclass
class CarrotParams(Params):
    """A carrot lying on its side: a faceted root tapering along -x, a leaf tuft at the +x crown.

    Attributes:
        length: Root length from the tip to the crown (m).
        diameter: Largest root diameter, across the section's vertices (m); under 0.05 so the
            hand closes across it with room to spare.
        taper: Exponent of the radius along the root (radius ~ share of length ** taper);
            below 1 the root is full-bodied, at 1 a straight cone.
        sides: Facets of the section (a flat one lies on the table).
        leaf_length: Length of the leaf stalks beyond the crown (m); a trimmed tuft.
        leaves: Number of leaf stalks in the tuft.
        spread: Half-angle of the tuft's fan in the table plane (rad).
        mass: Mass (kg).
    """

    length: float = span(0.14, 0.2)
    diameter: float = span(0.028, 0.045)
    taper: float = span(0.55, 1.0)
    sides: int = count(7, 9)
    leaf_length: float = span(0.03, 0.06)
    leaves: int = count(3, 5)
    spread: float = span(0.25, 0.6)
    mass: float = span(0.05, 0.12)


# The crown rounds off to this share of the largest radius; the tip keeps this share of it.
CARROT_CROWN = 0.75
CARROT_TIP = 0.1


def build_carrot(p: CarrotParams, rng: np.random.Generator) -> Built:
    r = p.diameter / 2
    s = np.array([0.0, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9, 0.96, 1.0])
    radius = r * (CARROT_TIP + (1 - CARROT_TIP) * s ** p.taper)
    radius[-1] = CARROT_CROWN * r
    pieces = PieceSet()
    pieces.add("body", _lying(p.length * s, radius, radius, p.sides))
    # Leaf stalks: flat blades from the middle of the crown face, drooping to just above the table.
    base_z = _apothem(radius[-1], p.sides)
    half = 0.4 * radius[-1]
    angles = np.linspace(-p.spread, p.spread, p.leaves) + rng.uniform(-0.08, 0.08, p.leaves)
    for a in angles:
        root = np.array([[p.length, y, base_z + z] for y in (-half / 2, half / 2) for z in (-0.001, 0.001)])
        tip_xy = np.array([p.length + p.leaf_length * np.cos(a), p.leaf_length * np.sin(a)])
        side = 0.003 * np.array([-np.sin(a), np.cos(a)])
        tip = np.array([[*(tip_xy + k * side), z] for k in (-1, 1) for z in (0.0005, 0.0017)])
        pieces.add("leaves", hull(np.vstack([root, tip])))
    orange = palette.pick(rng, palette.CARROT)
    return Built.rigid(pieces, {"body": orange, "leaves": palette.pick(rng, palette.LEAF)}, p.mass,
                       centre_xy=True)


@dataclass
class LeekParams(Params):
    """A leek lying on its side: a round white stalk from the root plate at x = 0, then the dark
    green leaves, flattened and fanning wider towards +x.

    Attributes:
        length: Overall length (m).
        leaf_share: Share of the length that is leaves.
        diameter: Stalk diameter across the section's vertices (m); under 0.045, a grasp across
            it leaves the hand a wide margin.
        leaf_width: Width of the leaf end as a multiple of the stalk diameter.
        leaf_flat: Height of the leaf end as a multiple of the stalk diameter.
        sides: Facets of the section.
        mass: Mass (kg).
    """

    length: float = span(0.22, 0.32)
    leaf_share: float = span(0.35, 0.5)
    diameter: float = span(0.025, 0.04)
    leaf_width: float = span(1.15, 1.5)
    leaf_flat: float = span(0.3, 0.45)
    sides: int = count(7, 9)
    mass: float = span(0.15, 0.35)


def build_leek(p: LeekParams, rng: np.random.Generator) -> Built:
    r = p.diameter / 2
    join = p.length * (1 - p.leaf_share)
    leaf = p.length - join
    pieces = PieceSet()
    # Root plate, a slight bulb, then a straight stalk.
    pieces.add("stalk", _lying([0.0, 0.008, 0.025, join], [0.7 * r, 1.05 * r, r, r],
                               [0.7 * r, 1.05 * r, r, r], p.sides))
    # Leaves: the section flattens within 15 mm of the join, then keeps flattening and widening.
    xs = [join, join + 0.015, join + 0.5 * leaf, p.length]
    half_w = r * np.array([1.0, 1.1, 0.5 * (1.1 + p.leaf_width), p.leaf_width])
    half_h = r * np.array([1.0, 0.65, 0.5 * (0.65 + p.leaf_flat), p.leaf_flat])
    pieces.add("leaves", _lying(xs, half_w, half_h, p.sides))
    stalk = palette.pick(rng, palette.STALK)
    rgba = {"stalk": stalk, "leaves": palette.shade(palette.pick(rng, palette.LEAF), 0.75)}
    return Built.rigid(pieces, rgba, p.mass, centre_xy=True)


@dataclass
class BellPepperParams(Params):
    """An upright bell pepper: a body of 3 or 4 lobes round its axis, a short stem on top.

    The body is one convex hull per lobe and height step, each a sector from the axis out to
    the lobe's bulge, so the creases between lobes are real and every piece stays convex. The
    section is an ellipse squashed along y, so the hand closes across y.

    Attributes:
        diameter: Width across the lobes along x (m); a small pepper (most are 0.07-0.09 m).
        squash: Width along y as a share of ``diameter``; at most 0.9, so the pepper is under
            0.068 m across y and fits the 0.08 m hand with a 1 cm margin.
        height: Height of the body, without the stem (m); peppers are about as tall as wide.
        lobes: Number of lobes (bell peppers have 3 or 4).
        crease: Depth of the creases between lobes as a share of the radius.
        foot: Radius of the blossom end the pepper stands on, as a share of the largest radius.
        shoulder: Radius of the flat top round the stem, as a share of the largest radius;
            bell peppers have broad shoulders.
        stem_length: Stem length above the top (m); a trimmed stem.
        stem_radius: Stem radius (m).
        stem_tilt: Lean of the stem from vertical (rad).
        mass: Mass (kg).
    """

    diameter: float = span(0.06, 0.075)
    squash: float = span(0.8, 0.9)
    height: float = span(0.055, 0.075)
    lobes: int = count(3, 4)
    crease: float = span(0.08, 0.16)
    foot: float = span(0.5, 0.65)
    shoulder: float = span(0.5, 0.62)
    stem_length: float = span(0.01, 0.02)
    stem_radius: float = span(0.004, 0.006)
    stem_tilt: float = span(0.0, 0.4)
    mass: float = span(0.12, 0.22)


def build_bell_pepper(p: BellPepperParams, rng: np.random.Generator) -> Built:
    r = p.diameter / 2
    # Radius share over height: the blossom end, the widest belt, the shoulders, the flat top.
    s = np.array([0.0, 0.1, 0.3, 0.55, 0.78, 0.92, 1.0])
    share = np.array([p.foot, 0.85, 0.98, 1.0, 0.96, 0.82, p.shoulder])
    z = p.height * s
    twist = rng.uniform(0, 2 * np.pi / p.lobes)
    pieces = PieceSet()
    for k in range(p.lobes):
        a = twist + 2 * np.pi * (k + np.linspace(0.0, 1.0, 9)) / p.lobes
        bulge = 1 - p.crease + p.crease * np.sin(np.pi * np.linspace(0.0, 1.0, 9)) ** 0.5
        rings = [np.column_stack([r * f * bulge * np.cos(a), p.squash * r * f * bulge * np.sin(a),
                                  np.full(len(a), zz)]) for f, zz in zip(share, z, strict=True)]
        axis = [np.array([[0.0, 0.0, zz]]) for zz in z]
        pieces.add("body", [hull(np.vstack([r0, r1, a0, a1])) for r0, r1, a0, a1
                            in zip(rings[:-1], rings[1:], axis[:-1], axis[1:], strict=True)])
    lean = rng.uniform(0, 2 * np.pi)
    top = np.array([np.cos(lean), np.sin(lean)]) * p.stem_length * np.tan(p.stem_tilt)
    stem_top = ring(p.stem_radius, p.height + p.stem_length, 10) + [*top, 0.0]
    pieces.add("stem", hull(np.vstack([ring(1.2 * p.stem_radius, p.height - 0.003, 10), stem_top])))
    rgba = {"body": palette.pick(rng, palette.PEPPER),
            "stem": palette.shade(palette.pick(rng, palette.LEAF), 0.7)}
    return Built.rigid(pieces, rgba, p.mass)


# --- a pen --------------------------------------------------------------------------------------


@dataclass
class PenParams(Params):
    """A capped pen lying on the table: a hexagonal barrel from the writing tip at x = 0, the
    cap over the +x end with a clip along its top.

    The hexagon lies on a flat face, so the pen does not roll.

    Attributes:
        length: Overall length, capped (m).
        diameter: Barrel diameter across the hexagon's corners (m).
        cap_length: Cap length (m).
        cap_wall: How much wider the cap is than the barrel, per side (m).
        tip_length: Length of the conical writing end (m).
        clip_share: Clip length as a share of the cap length.
        mass: Mass (kg).
    """

    length: float = span(0.13, 0.15)
    diameter: float = span(0.009, 0.012)
    cap_length: float = span(0.04, 0.055)
    cap_wall: float = span(0.0007, 0.001)
    tip_length: float = span(0.012, 0.02)
    clip_share: float = span(0.55, 0.8)
    mass: float = span(0.008, 0.02)


def build_pen(p: PenParams, rng: np.random.Generator) -> Built:
    r = p.diameter / 2
    rc = r + p.cap_wall
    cap_start = p.length - p.cap_length
    pieces = PieceSet()
    pieces.add("body", _lying([0.0, p.tip_length, cap_start], [0.0012, r, r], [0.0012, r, r], 6))
    cap_r = [rc, rc, 0.8 * rc]
    pieces.add("cap", _lying([cap_start, p.length - 0.003, p.length], cap_r, cap_r, 6))
    top = 2 * _apothem(rc, 6)  # the hexagon's upper face
    clip_start = p.length - 0.004 - p.clip_share * p.cap_length
    pieces.add("cap", slab([clip_start, -0.0012, top], [p.length - 0.004, 0.0012, top + 0.0015]))
    barrel = palette.pick(rng, palette.PLASTIC)
    return Built.rigid(pieces, {"body": barrel, "cap": palette.pick(rng, palette.PLASTIC)}, p.mass,
                       centre_xy=True)


# --- packaged food ------------------------------------------------------------------------------


@dataclass
class SoupCanParams(Params):
    """An upright, closed tin can: a labelled body and a lid with a rolled rim.

    Attributes:
        radius: Radius (m); a soup tin is 0.065-0.075 m across, kept under 0.0345 here so
            the can is under 0.07 m across and the hand closes round it with a 1 cm margin.
        height: Height including the lid (m).
        lid: Height of the lid band, the rolled rim and the top (m).
        bevel: Height of the chamfer at the bottom seam (m).
        mass: Mass with contents (kg).
    """

    radius: float = span(0.032, 0.0345)
    height: float = span(0.08, 0.12)
    lid: float = span(0.004, 0.008)
    bevel: float = span(0.002, 0.004)
    mass: float = span(0.3, 0.45)


def build_soup_can(p: SoupCanParams, rng: np.random.Generator) -> Built:
    r, top = p.radius, p.height - p.lid
    pieces = PieceSet()
    pieces.add("body", lathe_solid([(r - p.bevel, 0.0), (r, p.bevel), (r, top)], 32))
    pieces.add("lid", lathe_solid([(r, top), (r, p.height - 0.0015), (r - 0.003, p.height)], 32))
    rgba = {"body": palette.pick(rng, palette.PLASTIC), "lid": palette.pick(rng, palette.METAL)}
    return Built.rigid(pieces, rgba, p.mass)


@dataclass
class ChocolateBoxParams(Params):
    """A flat carton of chocolates, long side along x, with a printed lid band on top.

    Attributes:
        length: Length along x (m).
        width: Width along y (m); under 0.065 so the hand closes across it.
        height: Height (m).
        lid: Height of the lid band (m).
        overhang: How far the lid sticks out past the sides (m).
        mass: Mass with contents (kg).
    """

    length: float = span(0.12, 0.2)
    width: float = span(0.045, 0.064)
    height: float = span(0.02, 0.04)
    lid: float = span(0.006, 0.01)
    overhang: float = span(0.0, 0.0015)
    mass: float = span(0.1, 0.3)


def build_chocolate_box(p: ChocolateBoxParams, rng: np.random.Generator) -> Built:
    body, lid = carton(p.length, p.width, p.height, p.lid, p.overhang)
    pieces = PieceSet()
    pieces.add("body", body)
    pieces.add("lid", lid)
    rgba = {"body": palette.pick(rng, palette.PLASTIC), "lid": palette.pick(rng, palette.PLASTIC)}
    return Built.rigid(pieces, rgba, p.mass)


@dataclass
class SugarBoxParams(Params):
    """A carton like YCB's sugar box (0.089 x 0.038 x 0.175 m), standing on its long narrow side.

    Upright (0.175 m tall on a 0.089 x 0.038 m foot) it would be tippy, and its top too small
    to set a chocolate box on; lying on its broad side its 0.089 m width would not fit the
    hand's 0.08 m stroke. On its long narrow side it is both: the hand closes across its
    thickness (under 0.07 m), its top is a flat 0.17-0.19 x 0.036-0.046 m face along x that
    a box is set on, and it is about twice as tall as it is thick. The top is a band of its
    own, the highest face.

    Attributes:
        length: Length along x (m).
        thickness: Thickness along y (m); the hand closes across it.
        height: Height (m).
        top: Height of the top band (m).
        mass: Mass with contents (kg).
    """

    length: float = span(0.165, 0.19)
    thickness: float = span(0.036, 0.046)
    height: float = span(0.08, 0.095)
    top: float = span(0.003, 0.006)
    mass: float = span(0.4, 0.55)


def build_sugar_box(p: SugarBoxParams, rng: np.random.Generator) -> Built:
    body, top = carton(p.length, p.thickness, p.height, p.top)
    pieces = PieceSet()
    pieces.add("body", body)
    pieces.add("top", top)
    colour = palette.pick(rng, palette.PLASTIC)
    return Built.rigid(pieces, {"body": colour, "top": palette.shade(colour, 1.35)}, p.mass)


@dataclass
class CheeseBoxParams(Params):
    """A cracker carton like YCB's Cheez-It box (0.16 x 0.06 x 0.21 m), lying on a broad face.

    Upright, 0.21 m tall on a 0.06 m deep foot, a push at its middle would tip it over; lying
    on its broad face it slides when pushed, and its thickness is still under 0.07 m, so the
    hand can close on it from above.

    Attributes:
        length: Length along x, the carton's height when it stands (m).
        width: Width along y, its broad face's width (m).
        thickness: Height as it lies (m); under 0.065 so the hand closes across it.
        chamfer: Chamfer of the carton's edges (m); folded card is rounded, not sharp.
        mass: Mass with contents (kg); YCB's box weighs 0.41 kg.
    """

    length: float = span(0.19, 0.22)
    width: float = span(0.14, 0.165)
    thickness: float = span(0.05, 0.064)
    chamfer: float = span(0.002, 0.005)
    mass: float = span(0.35, 0.5)


def build_cheese_box(p: CheeseBoxParams, rng: np.random.Generator) -> Built:
    hx, hy, t, c = p.length / 2, p.width / 2, p.thickness, p.chamfer
    # The faces inset by the chamfer at every edge: the hull is the box with its edges cut.
    sides = [(sx * x, sy * y, z) for sx in (-1, 1) for sy in (-1, 1) for z in (c, t - c)
             for x, y in ((hx, hy - c), (hx - c, hy))]
    caps = [(sx * (hx - c), sy * (hy - c), z) for sx in (-1, 1) for sy in (-1, 1) for z in (0.0, t)]
    pieces = PieceSet()
    pieces.add("body", hull(sides + caps))
    return Built.rigid(pieces, {"body": palette.pick(rng, palette.PLASTIC)}, p.mass)


@dataclass
class CoffeeCanParams(Params):
    """An upright coffee tin like YCB's (0.102 m across, 0.139 m tall) with a plastic snap lid.

    Wider than the hand's 0.08 m stroke, as the real one: it is pushed, not picked up.

    Attributes:
        radius: Radius of the tin (m); YCB's is 0.051.
        height: Height including the lid (m).
        lid: Height of the lid (m).
        overhang: How far the lid's skirt stands out past the tin (m).
        bevel: Height of the chamfer at the bottom seam (m).
        mass: Mass with contents (kg); YCB's tin weighs 0.41 kg.
    """

    radius: float = span(0.046, 0.053)
    height: float = span(0.12, 0.16)
    lid: float = span(0.008, 0.014)
    overhang: float = span(0.001, 0.003)
    bevel: float = span(0.002, 0.005)
    mass: float = span(0.35, 0.5)


def build_coffee_can(p: CoffeeCanParams, rng: np.random.Generator) -> Built:
    r, top, ro = p.radius, p.height - p.lid, p.radius + p.overhang
    pieces = PieceSet()
    pieces.add("body", lathe_solid([(r - p.bevel, 0.0), (r, p.bevel), (r, top)], 40))
    pieces.add("lid", lathe_solid([(ro, top), (ro, p.height - 0.002), (ro - 0.002, p.height)], 40))
    rgba = {"body": palette.pick(rng, palette.PLASTIC), "lid": palette.pick(rng, palette.PLASTIC)}
    return Built.rigid(pieces, rgba, p.mass)


# --- a cutting board ----------------------------------------------------------------------------


@dataclass
class CuttingBoardParams(Params):
    """A wooden board with chamfered corners, and a handle tab beyond its +x end with a hole
    through it: two side bars and an end bar around the hole, each a slab.

    Attributes:
        length: Board length along x, without the handle (m).
        width: Board width along y (m).
        thickness: Thickness of board and handle (m).
        corner: Chamfer of the board's corners (m).
        handle_length: How far the handle reaches beyond the board (m).
        handle_width: Handle width along y (m).
        hole_width: Width of the hole along y (m); a finger passes through it.
        end_bar: Length of the handle's end bar along x (m).
        mass: Mass (kg).
    """

    length: float = span(0.25, 0.35)
    width: float = span(0.15, 0.22)
    thickness: float = span(0.012, 0.025)
    corner: float = span(0.005, 0.02)
    handle_length: float = span(0.045, 0.07)
    handle_width: float = span(0.055, 0.07)
    hole_width: float = span(0.022, 0.03)
    end_bar: float = span(0.012, 0.02)
    mass: float = span(0.4, 1.0)


def build_cutting_board(p: CuttingBoardParams, rng: np.random.Generator) -> Built:
    hx, hy, c, t = p.length / 2, p.width / 2, p.corner, p.thickness
    outline = [(hx, hy - c), (hx - c, hy), (-hx + c, hy), (-hx, hy - c),
               (-hx, -hy + c), (-hx + c, -hy), (hx - c, -hy), (hx, -hy + c)]
    pieces = PieceSet()
    pieces.add("board", hull([(x, y, z) for x, y in outline for z in (0.0, t)]))
    end = hx + p.handle_length
    hw, hole = p.handle_width / 2, p.hole_width / 2
    pieces.add("handle", [slab([hx, hole, 0.0], [end, hw, t]), slab([hx, -hw, 0.0], [end, -hole, t]),
                          slab([end - p.end_bar, -hole, 0.0], [end, hole, t])])
    wood = palette.pick(rng, palette.WOOD)
    return Built.rigid(pieces, {"board": wood, "handle": palette.shade(wood, 0.85)}, p.mass, centre_xy=True)


GENERATORS: dict[str, Generator] = {
    "carrot": Generator(CarrotParams, build_carrot),
    "leek": Generator(LeekParams, build_leek),
    "pen": Generator(PenParams, build_pen),
    "soup_can": Generator(SoupCanParams, build_soup_can),
    "chocolate_box": Generator(ChocolateBoxParams, build_chocolate_box),
    "sugar_box": Generator(SugarBoxParams, build_sugar_box),
    "cutting_board": Generator(CuttingBoardParams, build_cutting_board),
    "bell_pepper": Generator(BellPepperParams, build_bell_pepper),
    "cheese_box": Generator(CheeseBoxParams, build_cheese_box),
    "coffee_can": Generator(CoffeeCanParams, build_coffee_can),
}
