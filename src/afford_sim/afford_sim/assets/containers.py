"""Tableware containers: mug, paper cup, bowl, bottle.

Vessels are truly hollow (wedge walls and a base disc), so objects fit inside and the Franka
hand can pinch a rim wall. Every body that is grasped whole stays under 0.07 m across, inside
the hand's 0.08 m opening with room to spare.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import palette
from .generator import Built, Generator
from .params import Params, span
from .shapes import PieceSet, interp_radius, lathe_solid, open_vessel, ring, superellipse, sweep

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

    radius: float = span(0.06, 0.09)
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


GENERATORS: dict[str, Generator] = {
    "mug": Generator(MugParams, build_mug),
    "paper_cup": Generator(PaperCupParams, build_paper_cup),
    "bowl": Generator(BowlParams, build_bowl),
    "bottle": Generator(BottleParams, build_bottle),
}
