"""Containers: mug, paper cup, bowl, bottle, scrub bottle, paper box, basket.

Vessels are truly hollow (wedge walls and a base disc), so objects fit inside and the Franka
hand can pinch a rim wall. Every body that is grasped whole stays under 0.07 m across, inside
the hand's 0.08 m opening with room to spare.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import palette
from .generator import Built, Generator
from .params import Params, count, span
from .shapes import (
    PieceSet,
    Z,
    hull,
    in_plane,
    interp_radius,
    lathe_solid,
    open_vessel,
    ring,
    rod,
    slab,
    superellipse,
    sweep,
)

# Smallest clear opening of a mug handle ring (m): a 10-12 mm hook rod must pass with margin.
MUG_HANDLE_OPENING = 0.03


@dataclass
class MugParams(Params):
    """A ceramic mug with a loop handle on +x.

    Attributes:
        radius: Outer radius at the top (m); at most 0.034 so the body is < 0.07 m across.
        height: Overall height (m).
        taper: Fraction by which the bottom radius is smaller than the top radius.
        wall: Wall thickness (m).
        base: Base thickness (m).
        rim_band: Height of the top band of the wall labelled rim (m).
        handle_radius: Radius of the handle's round section (m).
        handle_reach: How far the handle centreline sticks out from the wall (m); at least
            the opening plus the section radius.
        handle_slack: Share (0-1) of the spare wall height the handle span takes beyond the
            minimum opening: small values give a short handle, 1 a handle as tall as fits.
        handle_squareness: Superellipse exponent of the loop: 2 round, 4+ D-shaped.
        mass: Mass (kg).
    """

    radius: float = span(0.028, 0.034)
    height: float = span(0.088, 0.115)
    taper: float = span(0.0, 0.12)
    wall: float = span(0.004, 0.006)
    base: float = span(0.006, 0.009)
    rim_band: float = span(0.008, 0.012)
    handle_radius: float = span(0.0045, 0.006)
    handle_reach: float = span(0.038, 0.048)
    handle_slack: float = span(0.2, 1.0)
    handle_squareness: float = span(2.0, 4.5)
    mass: float = span(0.22, 0.33)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.handle_reach - self.handle_radius < MUG_HANDLE_OPENING:
            raise ValueError("mug handle_reach leaves less than a 0.03 m opening")

    def handle_ends(self) -> tuple[float, float]:
        """Heights of the handle's upper and lower attachment (m)."""
        top = self.height - self.rim_band - self.handle_radius - 0.004
        lowest = self.base + self.handle_radius + 0.006
        least = MUG_HANDLE_OPENING + 2 * self.handle_radius
        spare = top - lowest - least
        if spare < 0:
            raise ValueError(f"mug height {self.height} too short for a handle with a 0.03 m opening")
        return top, top - least - self.handle_slack * spare


@dataclass
class TeacupParams(MugParams):
    """A teacup: the mug's build, squat and flared, with a thinner handle that still leaves the
    mug's 3 cm opening for a hook (see :class:`MugParams`). Its body is under 7.2 cm across, so
    the hand still closes around it."""

    radius: float = span(0.032, 0.036)
    height: float = span(0.074, 0.084)
    taper: float = span(0.15, 0.3)
    wall: float = span(0.003, 0.0045)
    base: float = span(0.005, 0.007)
    rim_band: float = span(0.007, 0.01)
    handle_radius: float = span(0.0035, 0.0045)
    handle_reach: float = span(0.036, 0.042)
    handle_slack: float = span(0.2, 1.0)
    handle_squareness: float = span(2.0, 3.5)
    mass: float = span(0.15, 0.22)


def build_mug(p: MugParams, rng: np.random.Generator) -> Built:
    profile = [(p.radius * (1 - p.taper), 0.0), (p.radius, p.height)]
    body, rim = open_vessel(profile, p.wall, p.base, p.rim_band, base_radius=profile[0][0] - p.wall)
    top, bottom = p.handle_ends()
    r_top, r_bot = interp_radius(profile, top), interp_radius(profile, bottom)
    loop = superellipse(p.handle_reach, (top - bottom) / 2, p.handle_squareness) + [r_top, (top + bottom) / 2]
    # Short stubs into the wall join the loop to a tapered body without a gap.
    path2d = np.vstack([[r_top - p.wall / 2, top], loop, [r_bot - p.wall / 2, bottom]])
    pieces = PieceSet()
    pieces.add("body", body)
    pieces.add("rim", rim)
    pieces.add("handle", sweep(np.column_stack([path2d[:, 0], np.zeros(len(path2d)), path2d[:, 1]]),
                               p.handle_radius))
    glaze = palette.pick(rng, palette.CERAMIC)
    rgba = {"body": glaze, "handle": palette.shade(glaze, 0.8), "rim": palette.shade(glaze, 1.5)}
    return Built.rigid(pieces, rgba, p.mass)


@dataclass
class PaperCupParams(Params):
    """A tapered disposable cup with a rolled rim bead.

    Attributes:
        bottom_radius: Outer radius at the bottom (m).
        flare: How much wider the top radius is than the bottom (m); the top stays < 0.035.
        height: Height (m).
        wall: Wall thickness (m).
        bead: Radius of the rolled rim bead (m).
        recess: Height of the bottom disc above the support (m); the cup stands on its wall.
        rim_band: Height of the top band of the wall labelled rim (m); taller than the bead.
        mass: Mass (kg).
    """

    bottom_radius: float = span(0.021, 0.025)
    flare: float = span(0.005, 0.009)
    height: float = span(0.08, 0.11)
    wall: float = span(0.0015, 0.0025)
    bead: float = span(0.0015, 0.0025)
    recess: float = span(0.003, 0.008)
    rim_band: float = span(0.0055, 0.008)
    mass: float = span(0.008, 0.02)


def build_paper_cup(p: PaperCupParams, rng: np.random.Generator) -> Built:
    top = p.bottom_radius + p.flare
    profile = [(p.bottom_radius, 0.0), (top, p.height)]
    r_base = interp_radius(profile, p.recess) - p.wall
    body, rim = open_vessel(profile, p.wall, p.wall, p.rim_band, base_radius=r_base, base_z=p.recess)
    bead = ring(top - p.wall / 2 + p.bead * 0.3, p.height - p.bead, 24)
    pieces = PieceSet()
    pieces.add("body", body)
    pieces.add("rim", rim)
    pieces.add("rim", sweep(bead, p.bead, sections=8, closed=True))
    cup = palette.pick(rng, palette.PAPER)
    return Built.rigid(pieces, {"body": cup, "rim": palette.shade(cup, 1.3)}, p.mass)


@dataclass
class BowlParams(Params):
    """A round bowl with a flat foot, grasped by pinching its rim wall.

    Attributes:
        radius: Outer radius at the rim (m).
        height: Height (m).
        foot: Radius of the flat foot as a share of ``radius``.
        curve: Exponent of the side profile: < 1 fuller, > 1 more conical.
        wall: Wall thickness (m).
        base: Foot disc thickness (m).
        rim_band: Height of the top band of the wall labelled rim (m).
        mass: Mass (kg).
    """

    # Up to 15 cm by hand: a fruit bowl that a 20 cm banana lies in (place-banana-bowl-v2).
    radius: float = span(0.06, 0.09, limits=(0.05, 0.15))
    height: float = span(0.045, 0.075)
    foot: float = span(0.4, 0.6)
    curve: float = span(0.8, 1.3)
    wall: float = span(0.004, 0.006)
    base: float = span(0.005, 0.008)
    rim_band: float = span(0.008, 0.014)
    mass: float = span(0.15, 0.45)


def bowl_profile(radius: float, height: float, foot: float, curve: float, steps: int = 8) -> np.ndarray:
    """(steps, 2) outer (r, z) profile of a bowl: flat at the foot, vertical at the rim."""
    phi = np.linspace(0, np.pi / 2, steps)
    return np.column_stack([foot + (radius - foot) * np.sin(phi), height * (1 - np.cos(phi)) ** curve])


def build_bowl(p: BowlParams, rng: np.random.Generator) -> Built:
    foot = p.foot * p.radius
    body, rim = open_vessel(bowl_profile(p.radius, p.height, foot, p.curve, 6), p.wall, p.base, p.rim_band,
                            base_radius=foot, sections=18)
    pieces = PieceSet()
    pieces.add("body", body)
    pieces.add("rim", rim)
    glaze = palette.pick(rng, palette.CERAMIC)
    return Built.rigid(pieces, {"body": glaze, "rim": palette.shade(glaze, 1.4)}, p.mass)


@dataclass
class BottleParams(Params):
    """A closed bottle with a screw cap (solid: its inside is never reached).

    Attributes:
        radius: Body radius (m); at most 0.034 so the body is < 0.07 m across.
        height: Height including the cap (m).
        shoulder: Height where the shoulder starts, as a share of the height below the neck.
        waist: Fractional narrowing of the body at half the shoulder height (a grip).
        neck_radius: Neck radius (m).
        neck_height: Neck height below the cap (m).
        cap_height: Cap height (m).
        mass: Mass with contents (kg).
    """

    radius: float = span(0.028, 0.034)
    height: float = span(0.17, 0.24)
    shoulder: float = span(0.55, 0.72)
    waist: float = span(0.0, 0.08)
    neck_radius: float = span(0.0105, 0.0135)
    neck_height: float = span(0.012, 0.03)
    cap_height: float = span(0.012, 0.02)
    mass: float = span(0.25, 0.6)


def build_bottle(p: BottleParams, rng: np.random.Generator) -> Built:
    neck_top = p.height - p.cap_height
    neck = neck_top - p.neck_height
    shoulder = p.shoulder * neck
    s = np.linspace(0, 1, 6)[1:-1]
    curve = [(p.neck_radius + (p.radius - p.neck_radius) * np.cos(np.pi / 2 * t),
              shoulder + t * (neck - shoulder)) for t in s]
    profile = [(0.9 * p.radius, 0.0), (p.radius, 0.008), (p.radius * (1 - p.waist), shoulder / 2),
               (p.radius, shoulder), *curve, (p.neck_radius, neck), (p.neck_radius, neck_top)]
    cap_r = p.neck_radius + 0.0015
    pieces = PieceSet()
    pieces.add("body", lathe_solid(profile, 24))
    cap = [(cap_r, neck_top), (cap_r, p.height - 0.002), (cap_r - 0.002, p.height)]
    pieces.add("cap", lathe_solid(cap, 20))
    plastic = palette.pick(rng, palette.PLASTIC)
    return Built.rigid(pieces, {"body": plastic, "cap": palette.pick(rng, palette.PLASTIC)}, p.mass)


def _section(half_x: float, half_y: float, exponent: float, z: float, n: int = 28) -> np.ndarray:
    """(n, 3) convex superellipse ring at height ``z`` (exponent 2 an ellipse, larger squarer)."""
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    c, s = np.cos(a), np.sin(a)
    e = 2.0 / exponent
    return np.column_stack([half_x * np.sign(c) * np.abs(c) ** e, half_y * np.sign(s) * np.abs(s) ** e,
                            np.full(n, z)])


@dataclass
class ScrubBottleParams(Params):
    """An upright cleaner spray bottle: a flattened body with a grip waist, a shoulder up to a
    round neck, and a trigger sprayer (the cap) whose head and nozzle point along +x.

    Attributes:
        depth: Body depth along x, front to back (m).
        width: Body width along y (m); at most 0.066, so the hand closes across it.
        squareness: Superellipse exponent of the body's section: 2 oval, 4 boxy.
        waist: Fractional narrowing of the body at half its height (the grip).
        body_height: Height of the straight body below the shoulder (m).
        shoulder: Height of the shoulder from the body to the neck (m).
        neck_radius: Neck radius (m); a 28 mm sprayer thread.
        neck_height: Neck height below the sprayer's collar (m).
        head_height: Height of the sprayer head above its collar (m).
        head_length: How far the head reaches forward (+x) of the bottle's axis (m).
        mass: Mass, filled (kg).
    """

    depth: float = span(0.07, 0.095)
    width: float = span(0.05, 0.066)
    squareness: float = span(2.2, 3.5)
    waist: float = span(0.0, 0.1)
    body_height: float = span(0.14, 0.19)
    shoulder: float = span(0.025, 0.04)
    neck_radius: float = span(0.012, 0.015)
    neck_height: float = span(0.015, 0.025)
    head_height: float = span(0.03, 0.045)
    head_length: float = span(0.05, 0.07)
    mass: float = span(0.35, 0.7)


# Height of the sprayer's threaded collar (m) and how far it stands out of the neck.
SPRAYER_COLLAR = 0.012
SPRAYER_COLLAR_WALL = 0.003


def build_scrub_bottle(p: ScrubBottleParams, rng: np.random.Generator) -> Built:
    hx, hy, n, h = p.depth / 2, p.width / 2, p.squareness, p.body_height
    rings = [_section(0.94 * hx, 0.94 * hy, n, 0.0), _section(hx, hy, n, 0.006),
             _section(hx * (1 - p.waist), hy * (1 - p.waist), n, h / 2), _section(hx, hy, n, h)]
    neck_z = h + p.shoulder
    neck = [ring(p.neck_radius, neck_z, 28), ring(p.neck_radius, neck_z + p.neck_height, 28)]
    pieces = PieceSet()
    pieces.add("body", [hull(np.vstack([r0, r1])) for r0, r1 in zip(rings[:-1], rings[1:], strict=True)])
    pieces.add("body", [hull(np.vstack([rings[-1], neck[0]])), hull(np.vstack(neck))])
    collar_z = neck_z + p.neck_height
    head_z = collar_z + SPRAYER_COLLAR
    rc = p.neck_radius + SPRAYER_COLLAR_WALL
    cap = lathe_solid([(rc, collar_z), (rc, head_z)], 24)
    # The head: a block from behind the collar to the nozzle, lower at the front.
    back, front, half = -rc, p.head_length, 0.7 * rc
    top, nose = head_z + p.head_height, head_z + 0.55 * p.head_height
    cap.append(hull([(x, y, z) for y in (-half, half) for x, z in
                     ((back, head_z), (back, top), (0.3 * front, top), (front, nose), (front, head_z))]))
    nozzle_z = head_z + 0.3 * p.head_height
    cap.append(rod([front - 0.004, 0.0, nozzle_z], [front + 0.008, 0.0, nozzle_z], 0.0045, sections=12))
    # The trigger hangs below the head, in front of the collar and clear of the shoulder.
    drop = 0.8 * (p.neck_height + SPRAYER_COLLAR)
    tx = rc + 0.006
    cap.append(hull([(x, y, z) for y in (-0.007, 0.007) for x, z in
                     ((tx, head_z), (tx + 0.012, head_z), (tx + 0.004, head_z - drop),
                                      (tx + 0.012, head_z - drop))]))
    pieces.add("cap", cap)
    plastic = palette.pick(rng, palette.PLASTIC)
    return Built.rigid(pieces, {"body": plastic, "cap": palette.pick(rng, palette.PLASTIC)}, p.mass)


@dataclass
class PaperBoxParams(Params):
    """An open-top cardboard box that things are dropped into, long side along x.

    The floor and the walls below the rim band are the inside; the top band of the four walls
    is the rim, pinched across a wall's thickness to hold the box.

    Attributes:
        length: Outer length along x (m).
        width: Outer width along y (m).
        height: Outer height (m); low enough for a dropped cube to land, not bounce, inside.
        wall: Wall thickness (m); corrugated board is 3-5 mm.
        floor: Floor thickness (m).
        rim_band: Height of the walls' top band labelled rim (m).
        mass: Mass (kg); far above an empty carton's 0.1-0.2 kg: the benchmark's box is
            weighted at the floor so a cube dropped in or a brushing finger does not slide it.
    """

    length: float = span(0.2, 0.3)
    width: float = span(0.15, 0.22)
    height: float = span(0.08, 0.14)
    wall: float = span(0.003, 0.005)
    floor: float = span(0.003, 0.005)
    rim_band: float = span(0.008, 0.015)
    mass: float = span(0.6, 1.2)


def build_paper_box(p: PaperBoxParams, rng: np.random.Generator) -> Built:
    hx, hy, w, h = p.length / 2, p.width / 2, p.wall, p.height
    cut = h - p.rim_band
    pieces = PieceSet()
    pieces.add("inside", slab([-hx + w, -hy + w, 0.0], [hx - w, hy - w, p.floor]))
    for part, z0, z1 in (("inside", 0.0, cut), ("rim", cut, h)):
        # The end walls span the full width, the side walls fit between them.
        pieces.add(part, [slab([-hx, -hy, z0], [-hx + w, hy, z1]), slab([hx - w, -hy, z0], [hx, hy, z1]),
                          slab([-hx + w, -hy, z0], [hx - w, -hy + w, z1]),
                          slab([-hx + w, hy - w, z0], [hx - w, hy, z1])])
    card = palette.pick(rng, palette.CARDBOARD)
    return Built.rigid(pieces, {"inside": palette.shade(card, 0.8), "rim": card}, p.mass)


@dataclass
class BasketParams(Params):
    """A small round basket with a flared wall, woven-look bands round it, a rolled rim and an
    arched handle across the top (in the y-z plane).

    Attributes:
        radius: Outer radius at the rim (m).
        flare: How much narrower the bottom is than the rim (m).
        height: Height of the wall (m).
        wall: Wall thickness (m).
        base: Floor thickness (m).
        rim_band: Height of the wall's top band labelled rim (m).
        bands: Number of raised woven bands round the wall.
        band_radius: Section radius of a band (m).
        handle_rise: Height of the handle's arch above the rim (m); a hand reaches under it.
        handle_radius: Section radius of the handle bar (m); the bar is under 0.02 m thick.
        handle_squareness: Superellipse exponent of the arch: 2 round, 4 square-shouldered.
        mass: Mass (kg).
    """

    radius: float = span(0.07, 0.095)
    flare: float = span(0.008, 0.02)
    height: float = span(0.07, 0.1)
    wall: float = span(0.004, 0.006)
    base: float = span(0.005, 0.008)
    rim_band: float = span(0.01, 0.015)
    bands: int = count(2, 4)
    band_radius: float = span(0.002, 0.0035)
    handle_rise: float = span(0.08, 0.11)
    handle_radius: float = span(0.005, 0.009)
    handle_squareness: float = span(2.0, 3.5)
    mass: float = span(0.15, 0.35)


# Section radius of the rolled rim bead round a basket's top (m).
RIM_BEAD = 0.004


def build_basket(p: BasketParams, rng: np.random.Generator) -> Built:
    profile = [(p.radius - p.flare, 0.0), (p.radius, p.height)]
    body, rim = open_vessel(profile, p.wall, p.base, p.rim_band, base_radius=p.radius - p.flare - p.wall,
                           sections=16)
    pieces = PieceSet()
    pieces.add("body", body)
    for z in np.linspace(0.0, p.height - p.rim_band, p.bands + 2)[1:-1]:
        pieces.add("body", sweep(ring(interp_radius(profile, z) + 0.3 * p.band_radius, z, 12), p.band_radius,
                                 sections=8, closed=True))
    pieces.add("rim", rim)
    bead = ring(p.radius - p.wall / 2, p.height - RIM_BEAD, 16)
    pieces.add("rim", sweep(bead, RIM_BEAD, sections=8, closed=True))
    # The arch leaves the rim upward on both sides (y = -+ the wall's middle) and crosses over.
    foot = p.height - p.rim_band / 2
    arch = superellipse(p.handle_rise + p.rim_band / 2, p.radius - p.wall / 2, p.handle_squareness)
    path = in_plane(arch, [0.0, 0.0, foot], Z, [0.0, 1.0, 0.0])
    pieces.add("handle", sweep(path, p.handle_radius))
    wicker = palette.pick(rng, palette.WOOD)
    rgba = {"body": wicker, "rim": palette.shade(wicker, 0.8),
            "handle": palette.shade(palette.pick(rng, palette.WOOD), 0.9)}
    return Built.rigid(pieces, rgba, p.mass)


GENERATORS: dict[str, Generator] = {
    "mug": Generator(MugParams, build_mug),
    "teacup": Generator(TeacupParams, build_mug),
    "paper_cup": Generator(PaperCupParams, build_paper_cup),
    "bowl": Generator(BowlParams, build_bowl),
    "bottle": Generator(BottleParams, build_bottle),
    "scrub_bottle": Generator(ScrubBottleParams, build_scrub_bottle),
    "paper_box": Generator(PaperBoxParams, build_paper_box),
    "basket": Generator(BasketParams, build_basket),
}
