"""Cookware: kettle, pot, pan, and two pieces that go with them: a cordless kettle's power
base and a pot lid on its own.

The bodies are wide and hollow; they are meant to be grasped by their handles (or pinched at
the wall), so only the handles have to fit the Franka hand. The kettle base is pinched at its
edge, the lid held by its knob.
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
    in_plane,
    interp_radius,
    lathe_shell,
    lathe_solid,
    open_vessel,
    superellipse,
    sweep,
)


@dataclass
class KettleParams(Params):
    """A bellied kettle with a lid, a spout on +x and a side (-x) or top handle.

    Attributes:
        base_radius: Outer radius at the bottom (m).
        belly: Widest radius as a multiple of ``base_radius``.
        opening: Radius of the top opening as a share of ``base_radius``.
        height: Body height without the lid (m).
        wall: Wall thickness (m).
        base: Base thickness (m).
        lid_height: Height of the domed lid and its knob (m).
        spout_height: Height where the spout leaves the body, as a share of ``height``.
        spout_angle: Spout elevation above horizontal at its root (rad).
        spout_length: Spout length along its centreline (m).
        spout_radius: Spout radius at the root (m); the tip is half as wide.
        handle_style: 0 = loop handle on the -x side, 1 = arched handle over the lid.
        handle_radius: Handle section radius (m).
        handle_reach: Clearance of the handle from the body or lid (m), room for the fingers.
        handle_squareness: Superellipse exponent of the handle: 2 round, 4 squarer.
        mass: Mass (kg), empty.
    """

    base_radius: float = span(0.06, 0.08)
    belly: float = span(1.0, 1.15)
    opening: float = span(0.55, 0.75)
    height: float = span(0.13, 0.19)
    wall: float = span(0.003, 0.004)
    base: float = span(0.004, 0.006)
    lid_height: float = span(0.015, 0.03)
    spout_height: float = span(0.2, 0.45)
    spout_angle: float = span(0.7, 1.1)
    spout_length: float = span(0.08, 0.12)
    spout_radius: float = span(0.01, 0.014)
    handle_style: int = count(0, 1)
    handle_radius: float = span(0.007, 0.01)
    handle_reach: float = span(0.04, 0.06)
    handle_squareness: float = span(2.0, 4.0)
    mass: float = span(0.5, 1.2)


def kettle_profile(p: KettleParams) -> np.ndarray:
    """(5, 2) outer (r, z) profile of the kettle body."""
    widest = p.base_radius * p.belly
    top = p.base_radius * p.opening
    return np.array([(p.base_radius, 0.0), (widest, 0.3 * p.height), (0.98 * widest, 0.6 * p.height),
                     ((widest + top) / 2 + 0.1 * (widest - top), 0.85 * p.height), (top, p.height)])


def _kettle_handle(p: KettleParams, profile: np.ndarray) -> np.ndarray:
    """(k, 3) handle centreline."""
    if p.handle_style == 0:
        top, bottom = 0.8 * p.height, 0.3 * p.height
        x0 = max(interp_radius(profile, z) for z in np.linspace(bottom, top, 9))
        loop = superellipse(p.handle_reach + p.handle_radius, (top - bottom) / 2, p.handle_squareness)
        path2d: np.ndarray = np.vstack([[interp_radius(profile, top) - p.wall / 2, top],
                                        loop + [x0, (top + bottom) / 2],
                                        [interp_radius(profile, bottom) - p.wall / 2, bottom]])
        return np.column_stack([-path2d[:, 0], np.zeros(len(path2d)), path2d[:, 1]])
    attach = 0.9 * p.height
    rise = p.height - attach + p.lid_height + p.handle_reach + p.handle_radius
    arch = superellipse(rise, interp_radius(profile, attach), p.handle_squareness)
    return in_plane(arch, [0.0, 0.0, attach], Z, [0.0, 1.0, 0.0])


def build_kettle(p: KettleParams, rng: np.random.Generator) -> Built:
    profile = kettle_profile(p)
    body, band = open_vessel(profile, p.wall, p.base, 0.01, base_radius=p.base_radius - p.wall)
    top, h = profile[-1, 0], p.height
    lid = [(top + 0.006, h), (top + 0.006, h + 0.005), (0.45 * top, h + 0.7 * p.lid_height),
           (0.012, h + 0.75 * p.lid_height), (0.012, h + p.lid_height - 0.003), (0.0, h + p.lid_height)]
    z0 = p.spout_height * p.height
    root = np.array([interp_radius(profile, z0) - p.wall / 2, 0.0, z0])
    mid = root + p.spout_length / 2 * np.array([np.cos(p.spout_angle), 0.0, np.sin(p.spout_angle)])
    # The outer half bends towards horizontal, like a gooseneck, so the tip points to pour.
    tip_dir = np.array([np.cos(0.7 * p.spout_angle), 0.0, np.sin(0.7 * p.spout_angle)])
    s = np.linspace(0, 1, 6)[:, None]
    spout = (1 - s) ** 2 * root + 2 * s * (1 - s) * mid + s**2 * (mid + p.spout_length / 2 * tip_dir)
    pieces = PieceSet()
    pieces.add("body", [body, band])
    pieces.add("lid", lathe_solid(lid, 24))
    pieces.add("spout", sweep(spout, p.spout_radius * (1 - 0.5 * s[:, 0])))
    pieces.add("handle", sweep(_kettle_handle(p, profile), p.handle_radius))
    steel = palette.pick(rng, palette.METAL if rng.random() < 0.5 else palette.PLASTIC)
    grip = palette.pick(rng, palette.PLASTIC)
    rgba = {"body": steel, "handle": grip, "spout": palette.shade(steel, 0.85), "lid": grip}
    return Built.rigid(pieces, rgba, p.mass)


@dataclass
class PotParams(Params):
    """A cooking pot with two side loop handles (on +x and -x), a domed lid and a knob.

    Attributes:
        radius: Outer body radius (m).
        height: Body height (m).
        wall: Wall thickness (m).
        base: Base thickness (m).
        lid_thickness: Thickness of the lid's edge (m).
        lid_dome: Rise of the lid's dome above its edge (m).
        knob_radius: Knob radius (m).
        knob_height: Knob height (m).
        handle_radius: Handle section radius (m).
        handle_reach: How far each loop sticks out from the wall (m); finger room inside it.
        handle_width: Distance between a loop's two attachments along the wall (m).
        handle_drop: Depth of the handles below the top edge (m).
        handle_tilt: Upward tilt of the loops from horizontal (rad).
        handle_squareness: Superellipse exponent of the loops.
        mass: Mass with lid (kg).
        lidded: 1 builds the lid and its knob; a task pins 0 for an open pot (a lid to put on
            it stands beside it, :class:`LidParams`).
    """

    radius: float = span(0.08, 0.115)
    height: float = span(0.08, 0.14)
    wall: float = span(0.003, 0.005)
    base: float = span(0.005, 0.008)
    lid_thickness: float = span(0.004, 0.006)
    lid_dome: float = span(0.005, 0.02)
    knob_radius: float = span(0.012, 0.018)
    knob_height: float = span(0.018, 0.03)
    handle_radius: float = span(0.005, 0.008)
    handle_reach: float = span(0.035, 0.05)
    handle_width: float = span(0.05, 0.075)
    handle_drop: float = span(0.012, 0.03)
    handle_tilt: float = span(0.0, 0.35)
    handle_squareness: float = span(2.0, 4.0)
    mass: float = span(0.8, 2.0)
    lidded: int = count(1, 1, limits=(0, 1))


def build_pot(p: PotParams, rng: np.random.Generator) -> Built:
    h, r = p.height, p.radius
    wall = lathe_shell([(r, 0.0), (r, h)], p.wall, 24)
    bottom = lathe_solid([(r - p.wall, 0.0), (r - p.wall, p.base)], 48)
    edge, top = h + p.lid_thickness, h + p.lid_thickness + p.lid_dome
    lid = [(r + 0.004, h), (r + 0.004, edge), (0.6 * r, edge + 0.7 * p.lid_dome), (0.0, top)]
    kr, kh = p.knob_radius, p.knob_height
    knob = [(kr / 2, top - 0.002), (kr / 2, top + 0.5 * kh), (kr, top + 0.6 * kh), (kr, top + kh - 0.003),
            (kr - 0.003, top + kh)]
    pieces = PieceSet()
    pieces.add("body", [wall, bottom])
    if p.lidded:
        pieces.add("lid", lathe_solid(lid, 32))
        pieces.add("knob", lathe_solid(knob, 16))
    # Attach where the loop's ends meet the middle of the wall, so the end caps sit in the wall.
    attach = np.sqrt((r - p.wall / 2) ** 2 - (p.handle_width / 2) ** 2)
    loop = superellipse(p.handle_reach + r - attach, p.handle_width / 2, p.handle_squareness)
    for azimuth in (0.0, np.pi):
        radial = np.array([np.cos(azimuth), np.sin(azimuth), 0.0])
        tangential = np.cross(Z, radial)
        out = np.cos(p.handle_tilt) * radial + np.sin(p.handle_tilt) * Z
        path = in_plane(loop, attach * radial + (h - p.handle_drop) * Z, out, tangential)
        pieces.add("handle", sweep(path, p.handle_radius))
    metal = palette.pick(rng, palette.METAL)
    grip = palette.pick(rng, palette.PLASTIC)
    rgba = {"body": metal, "handle": palette.shade(metal, 0.7), "lid": palette.shade(metal, 1.15),
            "knob": grip}
    return Built.rigid(pieces, rgba, p.mass)


@dataclass
class PanParams(Params):
    """A frying pan with a long handle on +x.

    Attributes:
        radius: Outer radius at the top edge (m).
        base_share: Radius of the flat bottom as a share of ``radius``.
        height: Height of the side wall (m).
        wall: Wall thickness (m).
        base: Bottom thickness (m).
        handle_length: Handle length from the wall (m).
        handle_tilt: Upward tilt of the handle from horizontal (rad).
        handle_width: Handle width across, horizontal (m).
        handle_thickness: Handle thickness, vertical (m).
        mass: Mass (kg).
    """

    radius: float = span(0.1, 0.13)
    base_share: float = span(0.7, 0.85)
    height: float = span(0.035, 0.055)
    wall: float = span(0.004, 0.005)
    base: float = span(0.005, 0.007)
    handle_length: float = span(0.15, 0.2)
    handle_tilt: float = span(0.1, 0.3)
    handle_width: float = span(0.018, 0.026)
    handle_thickness: float = span(0.01, 0.014)
    mass: float = span(0.5, 1.2)


def build_pan(p: PanParams, rng: np.random.Generator) -> Built:
    foot = p.base_share * p.radius
    profile = [(foot, 0.0), (p.radius, p.height)]
    body, band = open_vessel(profile, p.wall, p.base, 0.008, base_radius=foot - p.wall)
    z0 = p.height - 0.012
    root = np.array([interp_radius(profile, z0) - p.wall / 2, 0.0, z0])
    s = np.linspace(0, 1, 7)
    path = root + np.outer(s * p.handle_length, [np.cos(p.handle_tilt), 0.0, np.sin(p.handle_tilt)])
    # The grip widens away from the pan and ends rounded.
    widen = np.interp(s, [0, 0.3, 0.9, 1.0], [0.75, 0.8, 1.0, 0.7])
    radii = np.column_stack([widen * p.handle_thickness / 2, widen * p.handle_width / 2])
    pieces = PieceSet()
    pieces.add("body", [body, band])
    pieces.add("handle", sweep(path, radii))
    metal = palette.pick(rng, palette.METAL)
    return Built.rigid(pieces, {"body": metal, "handle": palette.pick(rng, palette.PLASTIC)}, p.mass)


@dataclass
class KettleBaseParams(Params):
    """The flat round power base of a cordless kettle: a low disc with a raised contact plate in
    the middle, where the kettle stands, and the connector pin at its centre.

    Attributes:
        diameter: Disc diameter (m); a kettle's foot is 0.13-0.17 m across.
        height: Height of the disc (m); with the plate the base is 0.015-0.03 m tall.
        bevel: Chamfer of the disc's top edge (m).
        plate_diameter: Diameter of the raised plate (m).
        plate_height: How far the plate stands above the disc (m).
        mass: Mass (kg); the cable wound in its underside makes a base heavy for its size.
    """

    diameter: float = span(0.14, 0.18)
    height: float = span(0.011, 0.02)
    bevel: float = span(0.002, 0.005)
    plate_diameter: float = span(0.06, 0.09)
    plate_height: float = span(0.003, 0.007)
    mass: float = span(0.35, 0.6)


# The connector pin at the plate's centre: radius and height (m).
KETTLE_PIN = (0.008, 0.004)


def build_kettle_base(p: KettleBaseParams, rng: np.random.Generator) -> Built:
    r, h, rp = p.diameter / 2, p.height, p.plate_diameter / 2
    top = h + p.plate_height
    pieces = PieceSet()
    pieces.add("base", lathe_solid([(r - 0.002, 0.0), (r, 0.002), (r, h - p.bevel), (r - p.bevel, h)], 48))
    pieces.add("plate", lathe_solid([(rp, h), (rp, top - 0.001), (rp - 0.001, top)], 40))
    pin_r, pin_h = KETTLE_PIN
    pieces.add("plate", lathe_solid([(pin_r, top), (0.75 * pin_r, top + pin_h)], 16))
    shell = palette.pick(rng, palette.PLASTIC)
    rgba = {"base": shell, "plate": palette.shade(palette.pick(rng, palette.METAL), 0.8)}
    return Built.rigid(pieces, rgba, p.mass)


@dataclass
class LidParams(Params):
    """A pot lid lying the right way up: a domed disc and a mushroom knob at its centre.

    Attributes:
        diameter: Lid diameter (m); wider than the hand, so it is held by the knob.
        edge: Thickness of the lid at its edge (m).
        dome: Rise of the dome above the edge (m).
        knob_radius: Radius of the knob's cap (m); the hand closes across it.
        knob_height: Height of the knob above the dome (m); the stem under the cap leaves
            room for fingertips.
        mass: Mass (kg); steel or glass lids.
    """

    diameter: float = span(0.14, 0.2)
    edge: float = span(0.004, 0.007)
    dome: float = span(0.008, 0.025)
    knob_radius: float = span(0.012, 0.018)
    knob_height: float = span(0.02, 0.032)
    mass: float = span(0.2, 0.5)


def build_lid(p: LidParams, rng: np.random.Generator) -> Built:
    r, top = p.diameter / 2, p.edge + p.dome
    kr, kh = p.knob_radius, p.knob_height
    knob = [(kr / 2, top - 0.002), (kr / 2, top + 0.5 * kh), (kr, top + 0.6 * kh), (kr, top + kh - 0.003),
            (kr - 0.003, top + kh)]
    pieces = PieceSet()
    pieces.add("lid", lathe_solid([(r, 0.0), (r, p.edge), (0.6 * r, p.edge + 0.7 * p.dome), (0.0, top)], 40))
    pieces.add("knob", lathe_solid(knob, 16))
    metal = palette.pick(rng, palette.METAL)
    return Built.rigid(pieces, {"lid": metal, "knob": palette.pick(rng, palette.PLASTIC)}, p.mass)


GENERATORS: dict[str, Generator] = {
    "kettle": Generator(KettleParams, build_kettle),
    "pot": Generator(PotParams, build_pot),
    "pan": Generator(PanParams, build_pan),
    "kettle_base": Generator(KettleBaseParams, build_kettle_base),
    "lid": Generator(LidParams, build_lid),
}
