"""Fixed furniture: mug rack, shelf, cabinet, chest of drawers, microwave, coffee machine.

Fronts face +x: drawers slide out along +x, doors swing out towards +x and handles stand
off the +x faces, so a robot placed in front (on the +x side) reaches them. Joint value 0 is
closed. Handles stand off their faces far enough for a fingertip to get behind the bar.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import trimesh
from numpy.typing import ArrayLike

from . import palette
from .base import Asset, JointSpec, Link
from .generator import Built, Generator
from .params import Params, count, span
from .shapes import PieceSet, lathe_solid, rod, slab, sweep

# Density used for the (ignored) mass of fixed furniture (kg/m^3, wood).
FURNITURE_DENSITY = 600.0
# Gap between a moving panel and the opening it closes (m), so closed parts never touch.
CLEARANCE = 0.003


def bar_handle(centre: ArrayLike, along: ArrayLike, out: ArrayLike, length: float, radius: float,
               standoff: float) -> list[trimesh.Trimesh]:
    """A bar handle on two standoff posts.

    Args:
        centre: Point on the face under the middle of the bar.
        along: Unit direction of the bar.
        out: Unit outward normal of the face.
        length: Bar length (m).
        radius: Bar radius (m); the posts are slightly thinner.
        standoff: Distance from the face to the bar's axis (m).
    """
    centre, along, out = (np.asarray(v, dtype=float) for v in (centre, along, out))
    axis = centre + standoff * out
    pieces = [rod(axis - along * length / 2, axis + along * length / 2, radius)]
    for side in (-1, 1):
        foot = centre + side * along * (length / 2 - 0.012)
        pieces.append(rod(foot, foot + standoff * out, 0.75 * radius, sections=12))
    return pieces


@dataclass
class ChestParams(Params):
    """A chest of three equal drawers stacked on a plinth, fronts towards +x, each with a
    horizontal bar handle at its middle.

    The plinth keeps the bottom handle 13 cm or more above the table: a hand holding a bar
    from the front reaches about 10 cm below it.

    Attributes:
        width: Outer width along y (m).
        depth: Outer depth along x (m).
        height: Height of the carcass above the plinth (m).
        plinth: Height of the recessed base the carcass stands on (m).
        panel: Carcass panel thickness (m).
        drawer_wall: Thickness of the drawer box walls (m).
        handle_length: Handle bar length (m).
        handle_radius: Handle bar radius (m).
        handle_standoff: Distance from the front to the bar's axis (m); room for a fingertip.
    """

    width: float = span(0.4, 0.55)
    depth: float = span(0.3, 0.4)
    height: float = span(0.42, 0.54)
    plinth: float = span(0.06, 0.09)
    panel: float = span(0.012, 0.018)
    drawer_wall: float = span(0.006, 0.01)
    handle_length: float = span(0.08, 0.14)
    handle_radius: float = span(0.005, 0.008)
    handle_standoff: float = span(0.025, 0.035)


#: The chest's drawers, top first (the ontology's part names).
CHEST_DRAWERS = ("top_drawer", "middle_drawer", "bottom_drawer")


def build_chest(p: ChestParams, rng: np.random.Generator) -> Built:
    hx, hy, t, b = p.depth / 2, p.width / 2, p.panel, p.plinth
    inner = hy - t
    n = len(CHEST_DRAWERS)
    bay = (p.height - (n + 1) * t) / n  # each drawer's opening
    body = PieceSet()
    top = b + p.height
    carcass = [slab([-hx + 0.02, -hy + 0.02, 0.0], [hx - 0.02, hy - 0.02, b]),  # the plinth, set back
               slab([-hx, -hy, b], [hx, hy, b + t]), slab([-hx, -hy, top - t], [hx, hy, top]),
               slab([-hx, -hy, b + t], [hx, -inner, top - t]), slab([-hx, inner, b + t], [hx, hy, top - t]),
               slab([-hx, -inner, b + t], [-hx + t, inner, top - t])]
    carcass += [slab([-hx + t, -inner, b + k * (bay + t)], [hx, inner, b + k * (bay + t) + t])
                for k in range(1, n)]  # the rails between drawers
    body.add("body", carcass)
    links = [Link("body", body.pieces)]
    volume = body.volume
    wood = palette.pick(rng, palette.WOOD)
    metal = palette.pick(rng, palette.METAL)
    rgba = {"body": wood}
    for k, name in enumerate(CHEST_DRAWERS):
        centre = top - t - bay / 2 - k * (bay + t)
        drawer = _drawer(p, inner, bay / 2, name)
        links.append(Link(name, drawer.pieces, parent="body", pos=np.array([hx, 0.0, centre]),
                          joint=JointSpec(name, "slide", np.array([1.0, 0.0, 0.0]),
                                          range=(0.0, 0.8 * (p.depth - 2 * t)))))
        volume += drawer.volume
        rgba[name], rgba[f"{name}_handle"] = palette.shade(wood, 1.2), metal
    return Built(links, rgba, FURNITURE_DENSITY * volume)


@dataclass
class RackParams(Params):
    """A mug tree: a round base, a vertical pole and hooks that rise slightly, ending in a lip.

    Hook ``i`` points at azimuth ``2 pi i / hooks`` from +x (the first faces the robot), and
    its bend, where a hanging mug handle settles, is at ``hook_height + i * hook_step``.

    Attributes:
        base_radius: Base disc radius (m).
        base_thickness: Base disc thickness (m).
        pole_radius: Pole radius (m).
        pole_extra: Pole length above the highest hook root (m).
        hooks: Number of hooks.
        hook_height: Height of the first hook's bend (m).
        hook_step: Height step between consecutive hooks (m).
        hook_length: Hook rod length from the pole surface to the bend (m).
        hook_radius: Hook rod radius (m); a mug handle opening of 0.03 m passes it easily.
        hook_tilt: Upward tilt of the hook rod (rad), so a hung handle slides to the pole.
        lip_length: Length of the end lip (m), which keeps the handle from sliding off.
        lip_angle: Lip elevation above horizontal (rad).
    """

    base_radius: float = span(0.07, 0.1)
    base_thickness: float = span(0.015, 0.025)
    pole_radius: float = span(0.009, 0.014)
    pole_extra: float = span(0.03, 0.08)
    hooks: int = count(1, 4)
    hook_height: float = span(0.2, 0.26)
    hook_step: float = span(0.0, 0.013)
    hook_length: float = span(0.08, 0.1)
    hook_radius: float = span(0.004, 0.006)
    hook_tilt: float = span(0.1, 0.3)
    lip_length: float = span(0.01, 0.016)
    lip_angle: float = span(0.9, 1.3)

    def hook_paths(self) -> list[np.ndarray]:
        """Per hook, (4, 3) centreline points in the asset frame: root in the pole, midway, bend, lip end."""
        paths = []
        for i in range(int(self.hooks)):
            az = 2 * np.pi * i / self.hooks
            out = np.array([np.cos(az), np.sin(az), 0.0])
            rise = np.cos(self.hook_tilt) * out + [0.0, 0.0, np.sin(self.hook_tilt)]
            lip = np.cos(self.lip_angle) * out + [0.0, 0.0, np.sin(self.lip_angle)]
            reach = self.pole_radius + self.hook_length
            bend = reach * np.cos(self.hook_tilt) * out + [0.0, 0.0, self.hook_height + i * self.hook_step]
            root = bend - (reach - self.pole_radius / 2) * rise  # embedded halfway into the pole
            paths.append(np.array([root, (root + bend) / 2, bend, bend + self.lip_length * lip]))
        return paths


def build_rack(p: RackParams, rng: np.random.Generator) -> Built:
    hooks = p.hook_paths()
    top = max(path[0, 2] for path in hooks) + p.pole_extra
    pieces = PieceSet()
    pieces.add("base", lathe_solid([(p.base_radius, 0.0), (p.base_radius, p.base_thickness - 0.003),
                                    (p.base_radius - 0.003, p.base_thickness)], 40))
    pieces.add("pole", rod([0.0, 0.0, p.base_thickness - 0.001], [0.0, 0.0, top], p.pole_radius, 20))
    for path in hooks:
        pieces.add("hook", sweep(path, p.hook_radius, sections=12))
    wood = palette.pick(rng, palette.WOOD)
    rgba = {"base": wood, "pole": palette.shade(wood, 0.85), "hook": palette.pick(rng, palette.METAL)}
    return Built.rigid(pieces, rgba, FURNITURE_DENSITY * pieces.volume)


def rack_hooks(asset: Asset) -> list[np.ndarray]:
    """Hook centrelines of a rack asset (see :meth:`RackParams.hook_paths`), for hanging tasks."""
    if asset.category != "rack":
        raise ValueError(f"rack_hooks needs a rack, got a {asset.category}")
    return RackParams(**asset.params).hook_paths()  # type: ignore[arg-type]  # counts stored as floats


@dataclass
class ShelfParams(Params):
    """An open shelf unit: two sides and a back (frame) holding evenly spaced boards.

    Attributes:
        width: Outer width along y (m).
        depth: Outer depth along x (m).
        height: Outer height (m); the top board's upper face is at this height.
        boards: Number of boards, the bottom and top ones included.
        board_thickness: Board thickness (m).
        side_thickness: Side panel thickness (m).
        back_thickness: Back panel thickness (m).
        plinth: Height of the bottom board above the floor (m), on a kick board at the front.
    """

    width: float = span(0.4, 0.6)
    depth: float = span(0.2, 0.3)
    # Down to 0.2 m for a task's low shelf (a top board the hand reaches from above).
    height: float = span(0.3, 0.55, limits=(0.2, 0.55))
    boards: int = count(2, 4)
    board_thickness: float = span(0.015, 0.022)
    side_thickness: float = span(0.015, 0.02)
    back_thickness: float = span(0.005, 0.01)
    plinth: float = span(0.02, 0.06)


def build_shelf(p: ShelfParams, rng: np.random.Generator) -> Built:
    hx, hy, ts = p.depth / 2, p.width / 2, p.side_thickness
    inner = hy - ts
    back = -hx + p.back_thickness
    pieces = PieceSet()
    pieces.add("frame", [slab([-hx, -hy, 0.0], [hx, -inner, p.height]),
                         slab([-hx, inner, 0.0], [hx, hy, p.height]),
                         slab([-hx, -inner, 0.0], [back, inner, p.height]),
                         slab([hx - 0.03, -inner, 0.0], [hx - 0.012, inner, p.plinth])])
    levels = np.linspace(p.plinth, p.height - p.board_thickness, p.boards)
    pieces.add("board", [slab([back, -inner, z], [hx, inner, z + p.board_thickness]) for z in levels])
    wood = palette.pick(rng, palette.WOOD)
    return Built.rigid(pieces, {"board": wood, "frame": palette.shade(wood, 0.75)},
                       FURNITURE_DENSITY * pieces.volume)


@dataclass
class CabinetParams(Params):
    """A cabinet with a drawer (top) and a hinged door (below), both opening towards +x.

    Attributes:
        width: Outer width along y (m).
        depth: Outer depth along x (m).
        height: Outer height (m).
        panel: Carcass panel thickness (m).
        drawer_share: Share of the inner height taken by the drawer compartment.
        drawer_wall: Thickness of the drawer box walls (m).
        handle_length: Drawer handle bar length (m).
        handle_radius: Handle bar radius (m), for the drawer and the door.
        handle_standoff: Distance from the front to the bar's axis (m); room for a fingertip.
        door_handle_length: Door handle bar length (m); the bar is vertical.
    """

    width: float = span(0.35, 0.5)
    depth: float = span(0.3, 0.4)
    height: float = span(0.35, 0.5)
    panel: float = span(0.012, 0.018)
    drawer_share: float = span(0.3, 0.45)
    drawer_wall: float = span(0.006, 0.01)
    handle_length: float = span(0.08, 0.14)
    handle_radius: float = span(0.005, 0.008)
    handle_standoff: float = span(0.025, 0.035)
    door_handle_length: float = span(0.06, 0.1)


def _drawer(p: CabinetParams | ChestParams, half_w: float, half_h: float, name: str = "drawer") -> PieceSet:
    """Drawer pieces in the drawer frame: origin at the middle of its front face; the parts are
    ``name`` and ``name_handle``."""
    t, w, c = p.panel, p.drawer_wall, CLEARANCE
    fw, fh = half_w - c, half_h - c
    box_back = -p.depth + 2 * t + 0.01
    bw, bottom, top = fw - 0.004, -fh, fh - 0.01
    pieces = PieceSet()
    pieces.add(name, [slab([-t, -fw, -fh], [0.0, fw, fh]),
                          slab([box_back, -bw, bottom], [-t, bw, bottom + w]),
                          slab([box_back, -bw, bottom + w], [-t, -bw + w, top]),
                          slab([box_back, bw - w, bottom + w], [-t, bw, top]),
                          slab([box_back, -bw + w, bottom + w], [box_back + w, bw - w, top])])
    pieces.add(f"{name}_handle", bar_handle([0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0],
                                            p.handle_length, p.handle_radius, p.handle_standoff))
    return pieces


def build_cabinet(p: CabinetParams, rng: np.random.Generator) -> Built:
    hx, hy, t, c = p.depth / 2, p.width / 2, p.panel, CLEARANCE
    inner = hy - t
    drawer_h = p.drawer_share * (p.height - 3 * t)
    divider = p.height - 2 * t - drawer_h
    body = PieceSet()
    body.add("body", [slab([-hx, -hy, 0.0], [hx, hy, t]), slab([-hx, -hy, p.height - t], [hx, hy, p.height]),
                      slab([-hx, -hy, t], [hx, -inner, p.height - t]),
                      slab([-hx, inner, t], [hx, hy, p.height - t]),
                      slab([-hx, -inner, t], [-hx + t, inner, p.height - t]),
                      slab([-hx + t, -inner, divider], [hx, inner, divider + t])])
    drawer = _drawer(p, inner, drawer_h / 2)
    door_w, door_lo, door_hi = 2 * (inner - c), t + c, divider - c
    door = PieceSet()
    door.add("door", slab([-t, -door_w, door_lo], [0.0, 0.0, door_hi]))
    door.add("door_handle", bar_handle([0.0, -door_w + 0.04, (door_lo + door_hi) / 2], [0.0, 0.0, 1.0],
                                       [1.0, 0.0, 0.0], p.door_handle_length, p.handle_radius,
                                       p.handle_standoff))
    links = [
        Link("body", body.pieces),
        Link("drawer", drawer.pieces, parent="body", pos=np.array([hx, 0.0, p.height - t - drawer_h / 2]),
             joint=JointSpec("drawer", "slide", np.array([1.0, 0.0, 0.0]),
                             range=(0.0, 0.8 * (p.depth - 2 * t)))),
        # Hinged at the +y edge about +z: positive angles swing the free edge out towards +x.
        Link("door", door.pieces, parent="body", pos=np.array([hx, inner - c, 0.0]),
             joint=JointSpec("door", "hinge", np.array([0.0, 0.0, 1.0]), range=(0.0, 1.75))),
    ]
    wood = palette.pick(rng, palette.WOOD)
    metal = palette.pick(rng, palette.METAL)
    rgba = {"body": wood, "drawer": palette.shade(wood, 1.2), "door": palette.shade(wood, 1.1),
            "drawer_handle": metal, "door_handle": metal}
    volume = body.volume + drawer.volume + door.volume
    return Built(links, rgba, FURNITURE_DENSITY * volume)


@dataclass
class MicrowaveParams(Params):
    """A microwave oven: cavity on the left, control panel on the right, door hinged on the left.

    Seen from the front (+x), left is -y: the door hinges about a vertical axis at its -y edge
    and its handle is a vertical bar near the +y edge.

    Attributes:
        width: Outer width along y (m).
        depth: Body depth along x, without the door (m).
        height: Height (m).
        wall: Wall thickness (m).
        panel_width: Width of the control panel right of the door (m).
        door_thickness: Door thickness (m).
        handle_share: Handle bar length as a share of ``height``.
        handle_radius: Handle bar radius (m).
        handle_standoff: Distance from the door face to the bar's axis (m).
    """

    width: float = span(0.42, 0.52)
    depth: float = span(0.3, 0.38)
    height: float = span(0.25, 0.31)
    wall: float = span(0.01, 0.015)
    panel_width: float = span(0.09, 0.13)
    door_thickness: float = span(0.02, 0.03)
    handle_share: float = span(0.5, 0.7)
    handle_radius: float = span(0.006, 0.009)
    handle_standoff: float = span(0.025, 0.035)


def build_microwave(p: MicrowaveParams, rng: np.random.Generator) -> Built:
    hx, hy, w, h = p.depth / 2, p.width / 2, p.wall, p.height
    split = hy - p.panel_width  # y of the boundary between cavity side and control panel
    body = PieceSet()
    body.add("body", [slab([-hx, -hy, 0.0], [hx, hy, w]), slab([-hx, -hy, h - w], [hx, hy, h]),
                      slab([-hx, -hy, w], [hx, -hy + w, h - w]), slab([-hx, split - w, w], [hx, hy, h - w]),
                      slab([-hx, -hy + w, w], [-hx + w, split - w, h - w])])
    door_w = split + hy
    door = PieceSet()
    door.add("door", slab([0.0, 0.0, CLEARANCE], [p.door_thickness, door_w - CLEARANCE, h - CLEARANCE]))
    door.add("door_handle", bar_handle([p.door_thickness, door_w - 0.035, h / 2], [0.0, 0.0, 1.0],
                                       [1.0, 0.0, 0.0], p.handle_share * h, p.handle_radius,
                                       p.handle_standoff))
    links = [
        Link("body", body.pieces),
        # Hinged at the -y edge about -z: positive angles swing the free edge out towards +x.
        Link("door", door.pieces, parent="body", pos=np.array([hx, -hy, 0.0]),
             joint=JointSpec("door", "hinge", np.array([0.0, 0.0, -1.0]), range=(0.0, 1.9))),
    ]
    shell = palette.pick(rng, palette.METAL if rng.random() < 0.5 else palette.PLASTIC)
    rgba = {"body": shell, "door": palette.shade(shell, 0.35),
            "door_handle": palette.pick(rng, palette.METAL)}
    return Built(links, rgba, FURNITURE_DENSITY * (body.volume + door.volume))


@dataclass
class CoffeeMachineParams(Params):
    """A drip or espresso machine facing +x: a tower at the back, a head overhanging the bay in
    front of it with the nozzle under it, and the drip tray on the floor of the bay.

    Attributes:
        depth: Depth along x, back to the tray's front (m).
        width: Width along y (m).
        height: Height (m).
        tower_share: Share of the depth the tower at the back takes.
        head_height: Height of the overhanging head (m).
        head_reach: Share of the bay the head reaches over.
        tray_height: Height of the drip tray (m); a flat tray the hand pinches top to bottom.
        tray_share: Width of the tray as a share of the machine's width.
        nozzle_radius: Radius of the nozzle (m).
        nozzle_length: How far the nozzle hangs below the head (m).
    """

    depth: float = span(0.2, 0.28)
    width: float = span(0.16, 0.24)
    height: float = span(0.25, 0.35)
    tower_share: float = span(0.4, 0.55)
    head_height: float = span(0.05, 0.08)
    head_reach: float = span(0.75, 0.95)
    tray_height: float = span(0.012, 0.02)
    tray_share: float = span(0.7, 0.9)
    nozzle_radius: float = span(0.007, 0.012)
    nozzle_length: float = span(0.015, 0.03)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cup_clearance() < 0.12 - 1e-9:
            raise ValueError("coffee machine leaves less than 0.12 m for a cup under its nozzle")

    def cup_clearance(self) -> float:
        """Height from the tray's top to the nozzle's tip (m): a mug (up to 0.115 m) fits under."""
        return self.height - self.head_height - self.nozzle_length - self.tray_height


def build_coffee_machine(p: CoffeeMachineParams, rng: np.random.Generator) -> Built:
    hx, hy, h = p.depth / 2, p.width / 2, p.height
    tower = -hx + p.tower_share * p.depth  # x of the tower's front face
    head = tower + p.head_reach * (hx - tower)  # x of the head's front face
    under = h - p.head_height
    pieces = PieceSet()
    pieces.add("body", [slab([-hx, -hy, 0.0], [tower, hy, h]), slab([tower, -hy, under], [head, hy, h])])
    tw = p.tray_share * hy
    pieces.add("tray", slab([tower, -tw, 0.0], [hx, tw, p.tray_height]))
    xn = (tower + hx) / 2  # over the middle of the tray, where a cup stands
    pieces.add("nozzle", rod([xn, 0.0, under + 0.002], [xn, 0.0, under - p.nozzle_length], p.nozzle_radius))
    shell = palette.pick(rng, palette.PLASTIC if rng.random() < 0.5 else palette.METAL)
    rgba = {"body": shell, "tray": palette.pick(rng, palette.METAL), "nozzle": palette.shade(shell, 0.5)}
    return Built.rigid(pieces, rgba, FURNITURE_DENSITY * pieces.volume)


GENERATORS: dict[str, Generator] = {
    "rack": Generator(RackParams, build_rack),
    "shelf": Generator(ShelfParams, build_shelf),
    "cabinet": Generator(CabinetParams, build_cabinet),
    "chest": Generator(ChestParams, build_chest),
    "microwave": Generator(MicrowaveParams, build_microwave),
    "coffee_machine": Generator(CoffeeMachineParams, build_coffee_machine),
}
