"""Procedural flat objects for pre-grasp pushing (PreAfford's categories).

PreAfford's hard-to-grasp categories lie flat on the table and are wider than a parallel
gripper opens: the fingers find no side to close on until the object overhangs an edge, leans
on a slope, tips into a slot or is held against a wall. The seed trains on five (hat, laptop,
scissors, keyboard, tablet) and tests on four others (phone, pliers, switch, window); we keep
that split. Each object is a set of convex pieces in its own frame (origin at the centre of its
footprint, resting on z = 0), so the pieces are at once its visual and its exact collision
geometry, as for the benchmark's assets (``afford_sim.assets``).

Sizes are those of the real things (a tablet 18-28 cm, a closed laptop 30-38 cm, a phone 7-8.2
cm wide). Some are narrower than the Franka Hand's 8 cm opening along one side (a phone, a
switch plate, scissors' blades); whether those can be picked up where they lie is measured
(``afford_sim.preafford.world``), not assumed: that is what the necessity check is for.
The seed pairs them with five easy-to-grasp training categories and four test ones (for its
necessity check, Table III) without naming them. Ours are things a parallel gripper closes round
where they stand or lie, narrower than the hand opens one way and at least 2 cm tall: training
bottle, can, mug, carton, block; test cup, jar, remote, soap (:data:`EASY_TRAIN_CATEGORIES`,
:data:`EASY_TEST_CATEGORIES`). Whether each is graspable in a given scene is measured too (the
direct grasp's ceiling), not assumed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import trimesh

from afford_sim.assets.shapes import hull, lathe_solid, slab

TRAIN_CATEGORIES: tuple[str, ...] = ("hat", "laptop", "scissors", "keyboard", "tablet")
"""The seed's hard-to-grasp training categories."""
TEST_CATEGORIES: tuple[str, ...] = ("phone", "pliers", "switch", "window")
"""The seed's hard-to-grasp test categories: never in training data."""
EASY_TRAIN_CATEGORIES: tuple[str, ...] = ("bottle", "can", "mug", "carton", "block")
"""Easy-to-grasp training categories (ours: the seed names none)."""
EASY_TEST_CATEGORIES: tuple[str, ...] = ("cup", "jar", "remote", "soap")
"""Easy-to-grasp test categories: never in training data."""
EASY_CATEGORIES: tuple[str, ...] = EASY_TRAIN_CATEGORIES + EASY_TEST_CATEGORIES


def split_of(category: str) -> str:
    """``train`` for a training category (hard or easy), else ``test``."""
    return "train" if category in TRAIN_CATEGORIES + EASY_TRAIN_CATEGORIES else "test"


@dataclass
class FlatObject:
    """One generated object.

    Attributes:
        category: Its category (one of :data:`TRAIN_CATEGORIES` or :data:`TEST_CATEGORIES`).
        pieces: Convex meshes in the object's frame, resting on z = 0.
        mass: Total mass (kg), spread over the pieces by volume.
        rgba: Colour.
    """

    category: str
    pieces: list[trimesh.Trimesh]
    mass: float
    rgba: tuple[float, float, float, float]

    @property
    def split(self) -> str:
        return split_of(self.category)

    @property
    def easy(self) -> bool:
        """One of the easy-to-grasp categories (the seed's "graspable", G)."""
        return self.category in EASY_CATEGORIES

    def mesh(self) -> trimesh.Trimesh:
        """All pieces as one mesh (for sampling its surface)."""
        return trimesh.util.concatenate(self.pieces)

    @property
    def extents(self) -> np.ndarray:
        """(3,) size of its bounding box in its own frame (m)."""
        return np.asarray(self.mesh().extents, dtype=float)


def _rounded_slab(
    length: float, width: float, thickness: float, radius: float, z0: float = 0.0
) -> trimesh.Trimesh:
    """A slab with rounded corners (a tablet, a phone), centred on the origin, from z0 up."""
    corner = np.linspace(0.0, np.pi / 2, 5)
    r = min(radius, 0.45 * min(length, width))
    pts: list[tuple[float, float]] = []
    for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1)):
        cx, cy = sx * (length / 2 - r), sy * (width / 2 - r)
        a = corner + {(1, 1): 0.0, (-1, 1): np.pi / 2, (-1, -1): np.pi, (1, -1): 1.5 * np.pi}[(sx, sy)]
        pts.extend(zip(cx + r * np.cos(a), cy + r * np.sin(a), strict=True))
    xy = np.asarray(pts)
    return hull(np.vstack([np.c_[xy, np.full(len(xy), z0)], np.c_[xy, np.full(len(xy), z0 + thickness)]]))


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _grey(rng: np.random.Generator) -> tuple[float, float, float, float]:
    v = _u(rng, 0.1, 0.5)
    return (v, v, v * 1.05, 1.0)


def tablet(rng: np.random.Generator) -> FlatObject:
    """A tablet: one rounded slab, 18-28 x 12-19 cm, 6-10 mm thick, 0.3-0.7 kg."""
    length = _u(rng, 0.18, 0.28)
    width = _u(rng, 0.12, min(0.19, length - 0.03))
    return FlatObject(
        "tablet",
        [_rounded_slab(length, width, _u(rng, 0.006, 0.010), _u(rng, 0.005, 0.02))],
        _u(rng, 0.3, 0.7),
        _grey(rng),
    )


def phone(rng: np.random.Generator) -> FlatObject:
    """A phone: one rounded slab, 13-17 x 7-8.2 cm, 7-10 mm thick, 0.14-0.25 kg."""
    return FlatObject(
        "phone",
        [
            _rounded_slab(
                _u(rng, 0.13, 0.17), _u(rng, 0.07, 0.082), _u(rng, 0.007, 0.010), _u(rng, 0.006, 0.012)
            )
        ],
        _u(rng, 0.14, 0.25),
        _grey(rng),
    )


def laptop(rng: np.random.Generator) -> FlatObject:
    """A closed laptop: base and lid slabs, 30-38 x 21-26 cm, 1.5-2.4 cm thick, 1.0-2.0 kg."""
    length, width = _u(rng, 0.30, 0.38), _u(rng, 0.21, 0.26)
    base, lid = _u(rng, 0.009, 0.014), _u(rng, 0.006, 0.010)
    r = _u(rng, 0.005, 0.015)
    return FlatObject(
        "laptop",
        [
            _rounded_slab(length, width, base, r),
            _rounded_slab(length - 0.002, width - 0.002, lid, r, z0=base),
        ],
        _u(rng, 1.0, 2.0),
        (0.75, 0.76, 0.78, 1.0),
    )


def keyboard(rng: np.random.Generator) -> FlatObject:
    """A keyboard: a wedge body (back higher than front) and rows of keys, 30-45 x 11-16 cm."""
    length, width = _u(rng, 0.30, 0.45), _u(rng, 0.11, 0.16)
    front, back = _u(rng, 0.008, 0.012), _u(rng, 0.014, 0.022)
    x, y = length / 2, width / 2
    body = hull(
        [
            [-x, -y, 0],
            [x, -y, 0],
            [-x, y, 0],
            [x, y, 0],
            [-x, -y, front],
            [x, -y, front],
            [-x, y, back],
            [x, y, back],
        ]
    )
    pieces = [body]
    rows = int(rng.integers(4, 7))
    margin = 0.012
    pitch = (width - 2 * margin) / rows
    for i in range(rows):
        y0 = -y + margin + i * pitch
        top = front + (back - front) * (y0 + pitch / 2 + y) / width
        pieces.append(
            slab([-x + margin, y0 + 0.001, top - 0.001], [x - margin, y0 + pitch - 0.001, top + 0.006])
        )
    return FlatObject("keyboard", pieces, _u(rng, 0.4, 1.0), _grey(rng))


def switch(rng: np.random.Generator) -> FlatObject:
    """A wall switch plate lying face up: a plate 7-12 cm square-ish, 8-12 mm, and its rocker."""
    a, b = _u(rng, 0.07, 0.12), _u(rng, 0.07, 0.12)
    t = _u(rng, 0.008, 0.012)
    rocker = slab([-0.012, -0.02, t - 0.001], [0.012, 0.02, t + _u(rng, 0.004, 0.008)])
    return FlatObject(
        "switch", [_rounded_slab(a, b, t, 0.004), rocker], _u(rng, 0.05, 0.12), (0.93, 0.93, 0.9, 1.0)
    )


def window(rng: np.random.Generator) -> FlatObject:
    """A window sash lying flat: four frame bars round a thinner pane, 25-45 x 20-35 cm, 1-1.4 kg."""
    length, width = _u(rng, 0.25, 0.45), _u(rng, 0.20, 0.35)
    t, bar = _u(rng, 0.015, 0.03), _u(rng, 0.025, 0.045)
    x, y = length / 2, width / 2
    pieces = [
        slab([-x, -y, 0], [x, -y + bar, t]),
        slab([-x, y - bar, 0], [x, y, t]),
        slab([-x, -y + bar, 0], [-x + bar, y - bar, t]),
        slab([x - bar, -y + bar, 0], [x, y - bar, t]),
        slab([-x + bar, -y + bar, t * 0.35], [x - bar, y - bar, t * 0.65]),
    ]
    return FlatObject("window", pieces, _u(rng, 1.0, 1.4), (0.85, 0.85, 0.82, 1.0))


def hat(rng: np.random.Generator) -> FlatObject:
    """A flat cap upright: a brim disc 22-30 cm across, 3-5 mm thick, and a low crown (a
    spherical cap 16-19 cm across, 3-6 cm high) on it; too wide to close on anywhere but the
    brim, which lies on the table."""
    brim_r, brim_t = _u(rng, 0.11, 0.15), _u(rng, 0.003, 0.005)
    crown_r, crown_h = _u(rng, 0.08, 0.095), _u(rng, 0.03, 0.06)
    a = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    disc = np.c_[np.cos(a), np.sin(a)]
    brim = hull(np.vstack([np.c_[brim_r * disc, np.zeros(24)], np.c_[brim_r * disc, np.full(24, brim_t)]]))
    rings = [np.c_[crown_r * disc, np.full(24, brim_t)]]
    for s in np.linspace(0.25, 1.0, 4):  # the cap's dome: height s * crown_h at radius
        rings.append(np.c_[crown_r * np.sqrt(1 - s**2) * disc, np.full(24, brim_t + s * crown_h)])
    crown = hull(np.vstack(rings))
    return FlatObject("hat", [brim, crown], _u(rng, 0.08, 0.2), (*rng.uniform(0.1, 0.8, 3), 1.0))


def _disc(radius: float, thickness: float) -> trimesh.Trimesh:
    a = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    ring = np.c_[radius * np.cos(a), radius * np.sin(a)]
    return hull(np.vstack([np.c_[ring, np.zeros(16)], np.c_[ring, np.full(16, thickness)]]))


def _handle_loop(center: np.ndarray, a: float, b: float, t: float, bar: float) -> list[trimesh.Trimesh]:
    """A flat finger loop (an ellipse of half-axes a, b) as six convex bar segments."""
    pts = [center + np.array([a * np.cos(th), b * np.sin(th)]) for th in np.linspace(0, 2 * np.pi, 7)]
    out = []
    for p, q in zip(pts[:-1], pts[1:], strict=True):
        d = (q - p) / np.linalg.norm(q - p)
        n = np.array([-d[1], d[0]]) * bar / 2
        quad = np.array([p + n, p - n, q + n, q - n])
        out.append(hull(np.vstack([np.c_[quad, np.zeros(4)], np.c_[quad, np.full(4, t)]])))
    return out


def _two_jaw_tool(
    category: str,
    rng: np.random.Generator,
    length: tuple[float, float],
    thickness: tuple[float, float],
    jaw_width: tuple[float, float],
    mass: tuple[float, float],
    loops: bool,
) -> FlatObject:
    """Scissors or pliers lying flat: two jaws (thin tapered blades) to the +x side of the pivot,
    two handles to the -x side (finger loops for scissors, bars for pliers)."""
    total, t = _u(rng, *length), _u(rng, *thickness)
    jaw, w = total * _u(rng, 0.35, 0.55), _u(rng, *jaw_width)
    pieces: list[trimesh.Trimesh] = []
    spread = _u(rng, 0.0, 0.15)  # how far the jaws stand open (rad)
    for side in (1, -1):
        a = side * spread / 2
        tip = np.array([jaw * np.cos(a), jaw * np.sin(a)])
        blade = np.array([[0.0, side * w / 2], [0.0, 0.0], tip + [0, side * 0.002], tip])
        z0 = 0.0 if side > 0 else t / 2  # the two halves lie on each other at the pivot
        pieces.append(hull(np.vstack([np.c_[blade, np.full(4, z0)], np.c_[blade, np.full(4, z0 + t / 2)]])))
    pieces.append(_disc(0.009, t))  # the pivot, where the two halves overlap
    handle = total - jaw
    for side in (1, -1):
        if loops:
            c = np.array([-handle * 0.6, side * _u(rng, 0.018, 0.028)])
            pieces.append(
                hull(
                    np.vstack(
                        [
                            np.c_[[[0, side * 0.003], [c[0] + 0.015, c[1]], [0, 0]], np.zeros(3)],
                            np.c_[[[0, side * 0.003], [c[0] + 0.015, c[1]], [0, 0]], np.full(3, t)],
                        ]
                    )
                )
            )
            pieces.extend(_handle_loop(c, handle * 0.4, _u(rng, 0.012, 0.018), t, 0.006))
        else:
            end = np.array([-handle, side * _u(rng, 0.015, 0.03)])
            bar = np.array([[0, side * 0.002], [0, side * 0.009], end, end + [0, side * 0.012]])
            pieces.append(hull(np.vstack([np.c_[bar, np.zeros(4)], np.c_[bar, np.full(4, t)]])))
    obj = FlatObject(category, pieces, _u(rng, *mass), (*rng.uniform(0.1, 0.9, 3), 1.0))
    centre = obj.mesh().bounds.mean(axis=0)
    for p in obj.pieces:
        p.apply_translation([-centre[0], -centre[1], 0.0])
    return obj


def scissors(rng: np.random.Generator) -> FlatObject:
    """Scissors lying flat: 15-22 cm, 6-9 mm thick where the halves overlap, finger loops."""
    return _two_jaw_tool(
        "scissors", rng, (0.15, 0.22), (0.006, 0.009), (0.014, 0.02), (0.05, 0.12), loops=True
    )


def pliers(rng: np.random.Generator) -> FlatObject:
    """Pliers lying flat: 15-21 cm, 10-16 mm thick at the pivot, straight handles."""
    return _two_jaw_tool(
        "pliers", rng, (0.15, 0.21), (0.010, 0.016), (0.012, 0.018), (0.15, 0.3), loops=False
    )


def _frustum(r0: float, r1: float, z0: float, z1: float) -> trimesh.Trimesh:
    """A round solid from radius ``r0`` at ``z0`` to ``r1`` at ``z1`` (a cylinder when equal)."""
    return lathe_solid([(r0, z0), (r1, z1)], sections=20)[0]


def _colour(rng: np.random.Generator) -> tuple[float, float, float, float]:
    r, g, b = (float(v) for v in rng.uniform(0.1, 0.9, 3))
    return (r, g, b, 1.0)


def bottle(rng: np.random.Generator) -> FlatObject:
    """A bottle standing: body 5.5-7 cm across, 14-22 cm tall, a shoulder, a neck and a cap; 0.3-0.6 kg."""
    r, h = _u(rng, 0.0275, 0.035), _u(rng, 0.14, 0.22)
    body = h * _u(rng, 0.62, 0.72)
    neck_r, top = _u(rng, 0.011, 0.015), h - 0.02
    return FlatObject(
        "bottle",
        [
            _frustum(r, r, 0.0, body),
            _frustum(r, neck_r, body, top),
            _frustum(neck_r + 0.001, neck_r + 0.001, top, h),
        ],
        _u(rng, 0.3, 0.6),
        _colour(rng),
    )


def can(rng: np.random.Generator) -> FlatObject:
    """A food can standing: 6.5-7.5 cm across, 8-12 cm tall, 0.25-0.45 kg."""
    r, h = _u(rng, 0.0325, 0.0375), _u(rng, 0.08, 0.12)
    return FlatObject("can", [_frustum(r, r, 0.0, h)], _u(rng, 0.25, 0.45), _colour(rng))


def mug(rng: np.random.Generator) -> FlatObject:
    """A mug standing (solid: its cavity does not matter to a pinch round it): 6.6-7.6 cm across,
    8-10.5 cm tall, a handle on +x; 0.25-0.4 kg."""
    r, h = _u(rng, 0.033, 0.038), _u(rng, 0.08, 0.105)
    reach, bar = _u(rng, 0.022, 0.03), _u(rng, 0.008, 0.012)
    z0, z1 = h * 0.2, h * 0.85
    handle = [
        slab([r - 0.004, -bar / 2, z1 - bar], [r + reach, bar / 2, z1]),
        slab([r + reach - bar, -bar / 2, z0], [r + reach, bar / 2, z1 - bar]),
        slab([r - 0.004, -bar / 2, z0], [r + reach - bar, bar / 2, z0 + bar]),
    ]
    return FlatObject("mug", [_frustum(r, r, 0.0, h), *handle], _u(rng, 0.25, 0.4), _colour(rng))


def carton(rng: np.random.Generator) -> FlatObject:
    """A drink carton standing: 5-7 x 4-6 cm, 10-15 cm tall, 0.15-0.4 kg."""
    a, b, h = _u(rng, 0.05, 0.07), _u(rng, 0.04, 0.06), _u(rng, 0.10, 0.15)
    return FlatObject("carton", [slab([-a / 2, -b / 2, 0.0], [a / 2, b / 2, h])], _u(rng, 0.15, 0.4),
                      _colour(rng))


def block(rng: np.random.Generator) -> FlatObject:
    """A toy block: a cube 4-6 cm, 0.03-0.12 kg."""
    e = _u(rng, 0.04, 0.06)
    return FlatObject("block", [slab([-e / 2, -e / 2, 0.0], [e / 2, e / 2, e])], _u(rng, 0.03, 0.12),
                      _colour(rng))


def cup(rng: np.random.Generator) -> FlatObject:
    """A paper cup standing: 5-6 cm across the foot, 6.5-7.6 cm at the rim, 8-11 cm tall, 0.03-0.15 kg."""
    return FlatObject(
        "cup",
        [_frustum(_u(rng, 0.025, 0.03), _u(rng, 0.0325, 0.038), 0.0, _u(rng, 0.08, 0.11))],
        _u(rng, 0.03, 0.15),
        _colour(rng),
    )


def jar(rng: np.random.Generator) -> FlatObject:
    """A jar standing: 6-7.4 cm across, 7-10 cm tall, with a lid a little wider; 0.2-0.5 kg."""
    r, h = _u(rng, 0.03, 0.035), _u(rng, 0.07, 0.10)
    lid = _u(rng, 0.012, 0.018)
    return FlatObject(
        "jar",
        [_frustum(r, r, 0.0, h - lid), _frustum(r + 0.002, r + 0.002, h - lid, h)],
        _u(rng, 0.2, 0.5),
        _colour(rng),
    )


def remote(rng: np.random.Generator) -> FlatObject:
    """A remote control lying face up: 15-21 x 4.2-5.5 cm, 2-2.8 cm thick, 0.1-0.2 kg; a pinch
    closes across its width."""
    length, width, t = _u(rng, 0.15, 0.21), _u(rng, 0.042, 0.055), _u(rng, 0.02, 0.028)
    return FlatObject("remote", [_rounded_slab(length, width, t, 0.01)], _u(rng, 0.1, 0.2), _grey(rng))


def soap(rng: np.random.Generator) -> FlatObject:
    """A bar of soap: 8-10 x 5.2-6.5 cm, 2.5-3.5 cm thick, rounded corners, 0.08-0.15 kg."""
    return FlatObject(
        "soap",
        [_rounded_slab(_u(rng, 0.08, 0.10), _u(rng, 0.052, 0.065), _u(rng, 0.025, 0.035), 0.015)],
        _u(rng, 0.08, 0.15),
        _colour(rng),
    )


GENERATORS: dict[str, Callable[[np.random.Generator], FlatObject]] = {
    "hat": hat,
    "laptop": laptop,
    "scissors": scissors,
    "keyboard": keyboard,
    "tablet": tablet,
    "phone": phone,
    "pliers": pliers,
    "switch": switch,
    "window": window,
    "bottle": bottle,
    "can": can,
    "mug": mug,
    "carton": carton,
    "block": block,
    "cup": cup,
    "jar": jar,
    "remote": remote,
    "soap": soap,
}
# A category's seed stream: the hard categories keep the index they had before the easy ones
# came (sorted among themselves), so every recorded scene is drawn as it was.
_STREAM: tuple[str, ...] = (*sorted(TRAIN_CATEGORIES + TEST_CATEGORIES), *EASY_CATEGORIES)


def generate(category: str, seed: int) -> FlatObject:
    """The object of ``category`` drawn from ``seed`` (the same seed gives the same object)."""
    if category not in GENERATORS:
        raise ValueError(f"no flat object called {category!r}; known: {', '.join(sorted(GENERATORS))}")
    return GENERATORS[category](np.random.default_rng([seed, _STREAM.index(category)]))
