"""Tests of the procedural asset library (afford_sim.assets)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import trimesh
from scipy.spatial import ConvexHull, Delaunay

from afford_core.ontology import CATEGORIES
from afford_sim.assets import (
    GENERATORS,
    Asset,
    categories,
    decompose,
    make,
    metadata,
    rack_hooks,
    render_labelled_cloud,
)
from afford_sim.assets.cookware import KettleParams, kettle_profile
from afford_sim.assets.params import Params, count, span

ALL = sorted(CATEGORIES)
FREE = [c for c in ALL if not CATEGORIES[c].fixed]
HOLLOW = ["mug", "paper_cup", "bowl", "pot", "kettle", "paper_box", "basket"]
SEEDS = (0, 1, 2)
# Franka Hand: 0.08 m maximum opening; grasped widths keep a 1 cm margin.
MAX_GRASP_WIDTH = 0.07
# Free space a fingertip needs behind the grasped material (m).
FINGER_ROOM = 0.008


@cache
def asset(category: str, seed: int = 0, **overrides: float) -> Asset:
    """Assets are deterministic, so each (category, seed) is built once per test session."""
    return make(category, seed, **overrides)


_CLOUDS: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def cloud(a: Asset, n: int = 4096, q: tuple[tuple[str, float], ...] = ()) -> tuple[np.ndarray, ...]:
    """Surface cloud of a cached asset, sampled once per (asset, n, q)."""
    key = (id(a), n, q)
    if key not in _CLOUDS:
        _CLOUDS[key] = a.surface_cloud(n, q=dict(q))
    return _CLOUDS[key]


def part_points(a: Asset, part: str, n: int = 4096, q: tuple[tuple[str, float], ...] = ()) -> np.ndarray:
    pts, _, labels = cloud(a, n, q)
    return pts[labels == a.info.parts.index(part)]


class Solid:
    """Point-in-solid queries against an asset's convex pieces (exact: pieces are convex)."""

    def __init__(self, a: Asset, q: dict[str, float] | None = None, parts: set[str] | None = None) -> None:
        tfs = a.link_transforms(q)
        self.hulls = []
        for lk in a.links:
            for pc in lk.pieces:
                if parts is None or pc.part in parts:
                    v = trimesh.transform_points(pc.mesh.vertices, tfs[lk.name])
                    self.hulls.append((ConvexHull(v).equations, v.min(axis=0), v.max(axis=0)))

    def contains(self, points: np.ndarray, tol: float = 1e-6) -> np.ndarray:
        pts = np.asarray(points).reshape(-1, 3)
        inside = np.zeros(len(pts), dtype=bool)
        for eq, lo, hi in self.hulls:
            near = np.all((pts >= lo - tol) & (pts <= hi + tol), axis=1) & ~inside
            if near.any():
                sub = pts[near]
                inside[near] = np.all(sub @ eq[:, :3].T + eq[:, 3] <= tol, axis=1)
        return inside


def radial(p: np.ndarray) -> np.ndarray:
    return np.linalg.norm(p[:, :2], axis=1)


# --- the catalogue ------------------------------------------------------------------------------


def test_categories_match_ontology() -> None:
    """Every category the task parser can name must be buildable, and no unnamed extras exist."""
    assert categories() == sorted(CATEGORIES)


def test_unknown_category_lists_known_ones() -> None:
    """A typo in a task or scene file must say what exists, not fail deep inside a generator."""
    with pytest.raises(KeyError, match="known: .*mug"):
        make("saucepan")


def test_bad_seed_and_overrides_are_rejected() -> None:
    """Out-of-range shapes (a mug too wide for the hand) must not be producible by accident."""
    with pytest.raises(ValueError, match="seed"):
        make("mug", -1)
    with pytest.raises(ValueError, match="outside"):
        make("mug", 0, radius=0.05)
    with pytest.raises(ValueError, match="no parameters"):
        make("mug", 0, girth=0.03)


def test_override_pins_one_parameter_only() -> None:
    """Pinning a parameter must leave the rest of the seeded object (colours too) unchanged."""
    a, b = asset("mug", 4), make("mug", 4, radius=0.03)
    assert b.params["radius"] == 0.03
    assert {k: v for k, v in a.params.items() if k != "radius"} == {k: v for k, v in b.params.items()
                                                                    if k != "radius"}
    assert a.rgba == b.rgba


def test_params_validate_their_ranges() -> None:
    """Parameter classes check hand-made values against the ranges that sampling uses."""

    @dataclass
    class P(Params):
        width: float = span(0.01, 0.02)
        n: int = count(1, 3)

    assert P().width == pytest.approx(0.015)
    with pytest.raises(ValueError, match="width"):
        P(width=0.5)
    with pytest.raises(ValueError, match="integer"):
        P(n=1.5)  # type: ignore[arg-type]
    sampled = P.sample(np.random.default_rng(0))
    assert 0.01 <= sampled.width <= 0.02 and isinstance(sampled.n, int)


def test_params_pinned_within_wider_limits_but_never_drawn_there() -> None:
    """A field with limits beyond its range takes a hand-given value there (a task's small
    cube), refuses one beyond them, and still draws only from its range."""

    @dataclass
    class P(Params):
        size: float = span(0.04, 0.06, limits=(0.025, 0.07))

    assert P(size=0.03).size == 0.03
    with pytest.raises(ValueError, match=r"outside \[0.025, 0.07\]"):
        P(size=0.02)
    assert P.limits() == {"size": (0.025, 0.07)} and P.ranges() == {"size": (0.04, 0.06)}
    rng = np.random.default_rng(0)
    assert all(0.04 <= P.sample(rng).size <= 0.06 for _ in range(200))
    with pytest.raises(ValueError, match="contain the range"):
        span(0.04, 0.06, limits=(0.05, 0.07))
    assert make("cube", 3, size=0.03).params["size"] == 0.03


def test_an_integer_pinned_within_its_limits_builds_the_variant() -> None:
    """A count with wider limits (the pot's ``lidded``, always 1 when drawn) takes a pinned 0:
    the open pot a lid is put on, without its lid and knob; 2 is refused."""
    assert {p.part for p in asset("pot", 5).links[0].pieces} >= {"lid", "knob"}
    open_pot = make("pot", 5, lidded=0)
    assert {p.part for p in open_pot.links[0].pieces} == {"body", "handle"}
    with pytest.raises(ValueError, match=r"lidded = 2 is outside \[0, 1\]"):
        make("pot", 5, lidded=2)
    with pytest.raises(ValueError, match="contain the range"):
        count(1, 1, limits=(2, 3))


# --- every category ---------------------------------------------------------------------------


@pytest.mark.parametrize("category", ALL)
def test_pieces_are_convex_and_solid(category: str) -> None:
    """Pieces double as MuJoCo convex collision geoms: a non-convex or flat one collides wrongly."""
    for seed in SEEDS:
        a = asset(category, seed)
        for lk in a.links:
            for pc in lk.pieces:
                m = pc.mesh
                assert m.is_watertight and m.is_convex, f"{a.name}/{lk.name}/{pc.part}"
                assert m.volume > 1e-9
                assert np.isfinite(m.vertices).all()


@pytest.mark.parametrize("category", ALL)
def test_rests_on_the_support_plane(category: str) -> None:
    """Placed at z = 0 an object must touch the table: not sink into it, not drop onto it."""
    for seed in SEEDS:
        lo = asset(category, seed).mesh().bounds[0]
        assert lo[2] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("category", FREE)
def test_free_objects_are_statically_stable(category: str) -> None:
    """A free object must stay where it is put: its centre of mass is over its contact patch."""
    for seed in SEEDS:
        m = asset(category, seed).mesh()
        feet = m.vertices[m.vertices[:, 2] < 1.5e-3, :2]
        com = m.center_mass[:2]
        assert Delaunay(feet).find_simplex(com) >= 0, f"{category} {seed}: com {com} off its footprint"


@pytest.mark.parametrize("category", ALL)
def test_labels_cover_every_part(category: str) -> None:
    """Grounding looks parts up by label, so every ontology part must have geometry and colour."""
    a = asset(category)
    _, normals, labels = cloud(a)
    assert set(labels.tolist()) == set(range(len(a.info.parts)))
    assert set(a.rgba) == set(a.info.parts)
    assert np.allclose(np.linalg.norm(normals, axis=1), 1.0)


@pytest.mark.parametrize("category", ALL)
def test_same_seed_same_object(category: str) -> None:
    """Benchmarks replay scenes from seeds, so a seed must always give the very same object."""
    a, b = asset(category, 5), make(category, 5)
    assert a.params == b.params and a.rgba == b.rgba and a.mass == b.mass
    assert np.array_equal(a.mesh().vertices, b.mesh().vertices)


@pytest.mark.parametrize("category", ALL)
def test_different_seeds_differ(category: str) -> None:
    """Training on one shape per category would overfit: seeds must change shape and colour."""
    objs = [asset(category, s) for s in SEEDS]
    ranges = GENERATORS[category].params.ranges()
    for i in range(len(objs)):
        for j in range(i + 1, len(objs)):
            a, b = objs[i], objs[j]
            colour_gap = max(np.abs(np.subtract(a.rgba[p], b.rgba[p])).max() for p in a.rgba)
            assert colour_gap > 0.03, f"{category} seeds {i},{j} look the same colour"
            # A field drawn at one value (the pot's lidded, pinned only by a task) varies nothing.
            shape_gap = max(abs(a.params[k] - b.params[k]) / (hi - lo)
                            for k, (lo, hi) in ranges.items() if hi > lo)
            assert shape_gap > 0.2, f"{category} seeds {i},{j} have nearly the same parameters"
    extents = np.array([np.ptp(a.mesh().vertices, axis=0) for a in objs])
    assert (np.ptp(extents, axis=0) / extents.mean(axis=0)).max() > 0.03  # proportions vary


@pytest.mark.parametrize("category", ALL)
def test_metadata_describes_the_asset(category: str) -> None:
    """Metadata is written next to datasets and scenes, so it must be complete and JSON-clean."""
    a = asset(category)
    meta = json.loads(json.dumps(metadata(a)))
    info = CATEGORIES[category]
    assert meta["category"] == category and meta["seed"] == 0
    assert meta["parts"] == list(info.parts)
    assert meta["affordances"] == {p: list(info.affordances.get(p, ())) for p in info.parts}
    assert meta["fixed"] == info.fixed and meta["articulated"] == info.articulated
    assert np.allclose(meta["bounds"], a.mesh().bounds)
    assert meta["params"] == a.params and meta["mass"] > 0
    assert bool(meta["joints"]) == info.articulated


# --- grasping -----------------------------------------------------------------------------------


def pinch_widths(a: Asset, part: str, lines: int = 300) -> np.ndarray:
    """Widths the hand would close on, pinching ``part`` along surface normals.

    From surface points of the part, walk inward along the normal through the solid; a pinch
    is feasible where the material ends within the hand's stroke and there is free space
    behind it for the far finger. Returns the widths of the feasible pinches.
    """
    solid = Solid(a)
    surface = a.part_mesh(part)
    p, faces = trimesh.sample.sample_surface(surface, lines, seed=7)
    n = surface.face_normals[faces]
    outside = ~solid.contains(p + 0.002 * n)  # drop faces buried between pieces
    p, n = p[outside], n[outside]
    steps = np.arange(0.0005, 0.08 + FINGER_ROOM, 0.001)
    probes = p[:, None, :] - steps[None, :, None] * n[:, None, :]
    occupied = solid.contains(probes).reshape(len(p), len(steps))
    widths = []
    for row in occupied:
        if not row[0]:
            continue
        exit_ = int(np.argmin(row))
        if row[exit_] or exit_ + 8 > len(row) or row[exit_:exit_ + 8].any():
            continue
        widths.append(steps[exit_])
    return np.array(widths)


# Pushed, never picked up: wider than the hand opens, as the real object (a YCB coffee can is
# 0.102 m across); test_coffee_can_is_pushed_not_grasped checks that it really is.
PUSHED_ONLY = ("coffee_can",)


@pytest.mark.parametrize("category", [c for c in ALL if c not in PUSHED_ONLY])
def test_default_grasp_part_fits_the_hand(category: str) -> None:
    """The part grasped when a task names only the object must fit between the Franka fingers."""
    for seed in SEEDS[:2]:
        a = asset(category, seed)
        widths = pinch_widths(a, a.info.default_grasp)
        assert (widths < MAX_GRASP_WIDTH).sum() >= 10, f"{a.name}: no pinch of {a.info.default_grasp} fits"


@pytest.mark.parametrize(("category", "part"), [("mug", "body"), ("paper_cup", "body"), ("bottle", "body"),
                                                 ("cube", "body"), ("box", "body"), ("carrot", "body"),
                                                 ("leek", "stalk"), ("pen", "body"), ("soup_can", "body"),
                                                 ("chocolate_box", "body"), ("sugar_box", "body"),
                                                 ("bell_pepper", "body"), ("scrub_bottle", "body")])
def test_whole_body_grasps_fit_the_hand(category: str, part: str) -> None:
    """Objects grasped around the whole body must be narrower than the hand opening."""
    for seed in SEEDS:
        p = part_points(asset(category, seed), part)
        width = min(np.ptp(p @ [np.cos(t), np.sin(t), 0.0]) for t in np.linspace(0, np.pi, 36))
        assert width < MAX_GRASP_WIDTH


# --- shapes: labels on the right geometry -----------------------------------------------------


def test_mug_parts() -> None:
    """Mug: the handle sticks out on +x with a hook-sized opening, the rim is the top band."""
    for seed in SEEDS:
        a = asset("mug", seed)
        r, h = a.params["radius"], a.params["height"]
        body, handle, rim = (part_points(a, p) for p in ("body", "handle", "rim"))
        assert 0.055 <= 2 * radial(body).max() <= 0.068
        wall_r = r * (1 - a.params["taper"] * (1 - handle[:, 2] / h))  # outer radius at each height
        assert np.mean(radial(handle) > wall_r - a.params["wall"] / 2) > 0.97 and handle[:, 0].mean() > r
        assert rim[:, 2].min() >= h - a.params["rim_band"] - 0.001 and rim[:, 2].max() == pytest.approx(h)
        assert body[:, 2].max() <= h - a.params["rim_band"] + 0.001
        assert 0.2 <= a.mass <= 0.35


def test_mug_handle_opening_passes_a_hook() -> None:
    """Hanging a mug needs the hook rod through the handle ring: a 0.03 m circle must fit in it."""
    for seed in SEEDS:
        a = asset("mug", seed)
        slab_pts = np.vstack([part_points(a, p, 20000) for p in ("handle", "body")])
        slab_pts = slab_pts[np.abs(slab_pts[:, 1]) < 0.006][:, [0, 2]]
        handle = part_points(a, "handle", 20000)
        xs = np.linspace(a.params["radius"], handle[:, 0].max(), 40)
        zs = np.linspace(handle[:, 2].min(), handle[:, 2].max(), 40)
        centres = np.array([(x, z) for x in xs for z in zs])
        clearance = np.min(np.linalg.norm(centres[:, None] - slab_pts[None], axis=2), axis=1)
        assert 2 * clearance.max() >= 0.03


@pytest.mark.parametrize("category", HOLLOW)
def test_containers_are_hollow(category: str) -> None:
    """Things must fit inside containers: the middle is empty, walled all round and floored."""
    for seed in SEEDS[:2]:
        a = asset(category, seed)
        solid = Solid(a)
        top = part_points(a, a.info.parts_with("contain")[0])[:, 2].max()
        centre = np.array([0.0, 0.0, 0.5 * top])
        assert not solid.contains(centre[None])[0]
        steps = np.arange(0.001, 0.2, 0.001)[:, None]
        for t in np.linspace(0, 2 * np.pi, 8, endpoint=False):
            assert solid.contains(centre + steps * [np.cos(t), np.sin(t), 0.0]).any(), f"{a.name}: no wall"
        assert solid.contains(centre - steps * [0.0, 0.0, 1.0]).any(), f"{a.name}: no floor"


def test_rims_sit_at_the_top_of_cups_and_bowls() -> None:
    """Pour and rim-pinch actions target the rim, so it must be the top edge of the wall."""
    for category in ("paper_cup", "bowl"):
        for seed in SEEDS:
            a = asset(category, seed)
            body, rim = part_points(a, "body"), part_points(a, "rim")
            # The band boundary is square to the wall, so on a tapered wall it slants by < 1 mm.
            assert rim[:, 2].min() >= body[:, 2].max() - 0.001
            assert rim[:, 2].max() == pytest.approx(a.mesh().bounds[1, 2])
            assert radial(rim).min() > 0.5 * radial(body).max()


def test_plate_and_tray_rims_are_at_the_edge() -> None:
    """A plate or tray is lifted by its rim: it must be the raised outer edge."""
    for seed in SEEDS:
        plate = asset("plate", seed)
        body, rim = part_points(plate, "body"), part_points(plate, "rim")
        assert radial(rim).min() > radial(body).max() - 2 * plate.params["rim_thickness"]
        assert rim[:, 2].max() > body[:, 2].max() + 0.005
        tray = asset("tray", seed)
        hx, hy = tray.params["length"] / 2, tray.params["width"] / 2
        rim, base = part_points(tray, "rim"), part_points(tray, "base")
        margin = np.minimum(hx - np.abs(rim[:, 0]), hy - np.abs(rim[:, 1]))
        assert margin.max() <= tray.params["rim_thickness"] + 1e-6
        assert rim[:, 2].min() >= base[:, 2].max() - 1e-6


@pytest.mark.parametrize("style", [0, 1])
def test_kettle_parts(style: int) -> None:
    """Kettle: handle and spout stand off the body (spout on +x), the lid closes the top."""
    for seed in SEEDS[:2]:
        a = asset("kettle", seed, handle_style=style)
        profile = kettle_profile(KettleParams(**a.params))
        h = a.params["height"]

        def outside(p: np.ndarray, profile: np.ndarray = profile, h: float = h) -> np.ndarray:
            return (radial(p) > np.interp(p[:, 2], profile[:, 1], profile[:, 0])) | (p[:, 2] > h)

        handle, spout, lid = (part_points(a, p) for p in ("handle", "spout", "lid"))
        assert outside(handle).mean() > 0.9
        assert outside(spout).mean() > 0.85 and spout[:, 0].min() > 0
        assert lid[:, 2].min() >= h - 1e-6 and lid[:, 2].max() > part_points(a, "body")[:, 2].max()
        if style == 0:
            assert handle[:, 0].max() < 0  # opposite the spout
        else:
            assert handle[:, 2].max() > lid[:, 2].max() + a.params["handle_reach"]


def test_pot_parts() -> None:
    """Pot: one handle each side outside the wall, lid on the rim, knob on top of the lid."""
    for seed in SEEDS:
        a = asset("pot", seed)
        r, h = a.params["radius"], a.params["height"]
        handle, lid, knob = (part_points(a, p) for p in ("handle", "lid", "knob"))
        assert (handle[:, 0] > r).sum() > 20 and (handle[:, 0] < -r).sum() > 20
        assert np.mean(radial(handle) > r - a.params["wall"] / 2) > 0.95
        assert lid[:, 2].min() >= h - 1e-6
        assert knob[:, 2].max() > lid[:, 2].max() + 0.01
        assert radial(knob).max() <= a.params["knob_radius"] + 1e-6  # centred on the lid


def test_pan_and_scoop_handles() -> None:
    """Pan and scoop handles run out along +x from the vessel, where the hand can reach them."""
    for seed in SEEDS:
        pan = asset("pan", seed)
        handle, body = part_points(pan, "handle"), part_points(pan, "body")
        assert np.mean(radial(handle) > pan.params["radius"]) > 0.9
        tip = handle[np.argmax(handle[:, 0])]
        assert tip[2] > body[:, 2].max() - 0.01  # tilted up, clear of the table
        scoop = asset("scoop", seed)
        handle, bowl = part_points(scoop, "handle"), part_points(scoop, "bowl")
        assert handle[:, 0].mean() > bowl[:, 0].max() - 0.01
        assert handle[:, 2].min() < 0.002  # the handle tip is the second support


def test_hammer_head_is_at_one_end() -> None:
    """Hammering and tool hand-overs depend on which end is the head."""
    for seed in SEEDS:
        a = asset("hammer", seed)
        head, handle = part_points(a, "head"), part_points(a, "handle")
        lo, hi = a.mesh().bounds
        assert 0.25 <= hi[0] - lo[0] <= 0.33 and hi[0] - lo[0] > 2 * (hi[1] - lo[1])
        assert head[:, 0].min() > lo[0] + 0.85 * (hi[0] - lo[0])
        assert handle[:, 0].mean() < head[:, 0].mean()


def test_bottle_cap_on_top() -> None:
    """Opening or pouring acts on the cap, so it must crown the bottle."""
    for seed in SEEDS:
        a = asset("bottle", seed)
        body, cap = part_points(a, "body"), part_points(a, "cap")
        assert cap[:, 2].min() >= body[:, 2].max() - 1e-6
        assert radial(cap).max() < 0.5 * radial(body).max()


def lengthwise(a: Asset, part: str) -> np.ndarray:
    """x of a part's points, for objects lying along x."""
    return part_points(a, part)[:, 0]


def test_carrot_leaves_are_a_low_tuft_at_the_thick_end() -> None:
    """A grasp of the carrot must land on the root, not the tuft, and the tuft marks which end
    is the crown: the leaves sit beyond the thickest end, lower than the root they leave."""
    for seed in SEEDS:
        a = asset("carrot", seed)
        body, leaves = part_points(a, "body"), part_points(a, "leaves")
        assert leaves[:, 0].min() >= body[:, 0].max() - 1e-6
        length = np.ptp(body[:, 0])
        crown = body[body[:, 0] > body[:, 0].max() - length / 3]
        tip = body[body[:, 0] < body[:, 0].min() + 0.15 * length]
        assert np.ptp(crown[:, 1]) > 2 * np.ptp(tip[:, 1]) and crown[:, 2].max() > 2 * tip[:, 2].max()
        assert leaves[:, 2].max() < 0.6 * body[:, 2].max()
        assert 2 * np.abs(body[:, 1]).max() < 0.05 and np.ptp(body[:, 0]) > 3 * np.ptp(body[:, 1])


def test_leek_leaves_are_the_flat_green_end() -> None:
    """A leek is held by its round stalk; the flattened leaves are the far end, lower than it."""
    for seed in SEEDS:
        a = asset("leek", seed)
        stalk, leaves = part_points(a, "stalk"), part_points(a, "leaves")
        lo, hi = a.mesh().bounds
        assert 0.22 <= hi[0] - lo[0] <= 0.32 + 1e-9
        assert leaves[:, 0].min() >= stalk[:, 0].max() - 1e-6
        end = leaves[leaves[:, 0] > hi[0] - 0.02]
        assert end[:, 2].max() < 0.5 * stalk[:, 2].max()  # flattened
        assert 2 * np.abs(stalk[:, 1]).max() < 0.045


def test_pen_cap_is_at_one_end_and_the_pen_lies_flat() -> None:
    """Uncapping or pressing acts on the cap, a grasp on the barrel: the cap is one end only.
    A pen that rolls off the table cannot be picked up: it lies on a flat face."""
    for seed in SEEDS:
        a = asset("pen", seed)
        body, cap = lengthwise(a, "body"), lengthwise(a, "cap")
        lo, hi = a.mesh().bounds
        assert 0.13 <= hi[0] - lo[0] <= 0.15 + 1e-9 and 0.009 <= hi[1] - lo[1] <= 0.014
        assert cap.min() >= body.max() - 1e-6 and cap.max() == pytest.approx(hi[0])
        assert 0.04 <= np.ptp(cap) <= 0.056
        m = a.mesh()
        feet = m.vertices[m.vertices[:, 2] < 1e-6]
        assert np.ptp(feet[:, 1]) > 0.004  # a face, not a line, on the table


def test_soup_can_lid_crowns_the_can() -> None:
    """The lid is pressed or opened from above: it is the top of an upright can that fits the hand."""
    for seed in SEEDS:
        a = asset("soup_can", seed)
        body, lid = part_points(a, "body"), part_points(a, "lid")
        assert lid[:, 2].min() >= body[:, 2].max() - 1e-6
        assert lid[:, 2].max() == pytest.approx(a.mesh().bounds[1, 2])
        assert 2 * radial(body).max() < MAX_GRASP_WIDTH and 0.08 <= a.params["height"] <= 0.12


def test_chocolate_box_lid_is_its_top() -> None:
    """Things set on a chocolate box rest on its lid: the lid is the whole top of a flat carton."""
    for seed in SEEDS:
        a = asset("chocolate_box", seed)
        body, lid = part_points(a, "body"), part_points(a, "lid")
        lo, hi = a.mesh().bounds
        assert lid[:, 2].min() >= body[:, 2].max() - 1e-6 and lid[:, 2].max() == pytest.approx(hi[2])
        assert hi[2] - lo[2] < min(hi[1] - lo[1], 0.35 * (hi[0] - lo[0]))  # flat
        assert np.ptp(body[:, 1]) < 0.065


def test_sugar_box_top_is_the_highest_face_and_holds_a_chocolate_box() -> None:
    """AffordSim sets a chocolate box on the sugar box: the top is its flat highest face, and the
    pair stays standing with the chocolate box centred on it, or 1 cm off to the side."""
    for seed in SEEDS:
        a = asset("sugar_box", seed)
        pts, normals, labels = cloud(a)
        top = labels == a.info.parts.index("top")
        hi = a.mesh().bounds[1]
        exposed = ~Solid(a).contains(pts + 0.001 * normals)  # not a face buried between pieces
        up = (normals[:, 2] > 0.999) & (pts[:, 2] > 0.01) & exposed
        assert np.all(top[up]) and np.allclose(pts[up, 2], hi[2])  # one level face, all top
        assert pts[top, 2].min() >= hi[2] - 0.006 - 1e-6
        assert np.ptp(pts[up, 0]) > 0.16 and np.ptp(pts[up, 1]) > 0.035
        assert a.params["height"] < 2.7 * a.params["thickness"]
        choc = asset("chocolate_box", seed)
        half_t = a.params["thickness"] / 2
        for offset in (0.0, 0.01):  # the chocolate box's centre, off the sugar box's midline (m)
            com_y = (choc.mass * offset) / (choc.mass + a.mass)
            assert abs(offset) < half_t and abs(com_y) < 0.5 * half_t  # both over the support


def test_cutting_board_handle_is_a_tab_with_a_finger_hole() -> None:
    """A board is carried by its handle, and food goes on the board: the handle is the narrow
    tab at one end, flush with the board, with a hole a finger (or a gripper jaw) goes through."""
    for seed in SEEDS:
        a = asset("cutting_board", seed)
        board, handle = part_points(a, "board"), part_points(a, "handle")
        assert handle[:, 0].min() >= board[:, 0].max() - 1e-6
        assert np.ptp(handle[:, 1]) < 0.5 * np.ptp(board[:, 1])
        assert handle[:, 2].max() == pytest.approx(board[:, 2].max())
        x_hole = board[:, 0].max() + 0.5 * (a.params["handle_length"] - a.params["end_bar"])
        column = np.column_stack([np.full(20, x_hole), np.zeros(20), np.linspace(0.001, 0.03, 20)])
        solid = Solid(a)
        assert not solid.contains(column).any()
        for dy in (-1, 1):  # bars on both sides of the hole
            assert solid.contains([[x_hole, dy * (a.params["hole_width"] / 2 + 0.004), 0.005]])[0]
        widths = pinch_widths(a, "handle")
        assert (widths < 0.03).sum() >= 10  # a bar, pinched through the hole


def test_bell_pepper_stem_is_a_short_cap_on_top() -> None:
    """A pepper is picked by its body: the stem is a short stub on the axis at the top, where
    a grasp round the body's widest belt cannot land, and the body fits the hand across y."""
    for seed in SEEDS:
        a = asset("bell_pepper", seed)
        body, stem = part_points(a, "body"), part_points(a, "stem")
        assert stem[:, 2].min() >= a.params["height"] - 0.003 - 1e-6
        assert stem[:, 2].max() == pytest.approx(a.mesh().bounds[1, 2])
        assert radial(stem).max() < 0.015 and np.ptp(stem[:, 2]) < 0.025
        assert np.ptp(body[:, 0]) > 0.05 and np.ptp(body[:, 1]) < 0.069
        # Lobed: the outline has creases, so it reaches its full radius in some directions only.
        belt = body[np.abs(body[:, 2] - 0.55 * a.params["height"]) < 0.004]
        scaled = np.linalg.norm(belt[:, :2] / [1.0, a.params["squash"]], axis=1)
        assert scaled.min() < (1 - 0.5 * a.params["crease"]) * scaled.max()


def test_scrub_bottle_sprayer_crowns_the_bottle_and_points_forward() -> None:
    """The bottle is held by its body and sprays from its cap: the trigger head sits on the neck,
    above the shoulder, with the nozzle forward of the body (+x), so a grasp of the body leaves it
    free and a spray goes where the head points."""
    for seed in SEEDS:
        a = asset("scrub_bottle", seed)
        body, cap = part_points(a, "body"), part_points(a, "cap")
        shoulder_top = a.params["body_height"] + a.params["shoulder"]
        assert cap[:, 2].min() > shoulder_top
        assert cap[:, 2].max() == pytest.approx(a.mesh().bounds[1, 2])
        assert cap[:, 0].max() > body[:, 0].max() + 0.005
        assert np.ptp(body[:, 1]) < MAX_GRASP_WIDTH


def test_cheese_box_lies_flat_and_slides_when_pushed() -> None:
    """The cracker box is pushed across the table: lying on its broad face it is low for its
    footprint (a push at mid-height slides it rather than tipping it), and the hand can still
    close on it from above."""
    for seed in SEEDS:
        a = asset("cheese_box", seed)
        lo, hi = a.mesh().bounds
        size = hi - lo
        assert size[2] < 0.45 * min(size[0], size[1])
        assert size[2] < 0.065 and size[0] > size[1]
        widths = pinch_widths(a, "body")
        assert (widths < MAX_GRASP_WIDTH).sum() >= 10


def test_coffee_can_is_pushed_not_grasped() -> None:
    """The coffee can is as wide as YCB's, wider than the hand opens: it is pushed. Its lid is
    the top, a little wider than the tin (a snap-on lid), so pressing it acts from above."""
    for seed in SEEDS:
        a = asset("coffee_can", seed)
        body, lid = part_points(a, "body"), part_points(a, "lid")
        assert 2 * radial(body).max() > 0.08 + 0.01  # no grasp across it, with the margin
        assert lid[:, 2].min() >= body[:, 2].max() - 1e-6
        assert lid[:, 2].max() == pytest.approx(a.mesh().bounds[1, 2])
        assert radial(lid).max() > radial(body).max()
        assert a.mass > 0.3  # does not skid away from a light touch


def test_paper_box_is_open_at_the_top_with_a_thin_rim() -> None:
    """Things are dropped into the paper box: a vertical drop through the opening meets only its
    floor, the rim is the top band of all four walls, and a wall is thin enough to pinch."""
    for seed in SEEDS:
        a = asset("paper_box", seed)
        inside, rim = part_points(a, "inside"), part_points(a, "rim")
        h = a.params["height"]
        assert rim[:, 2].min() >= h - a.params["rim_band"] - 1e-6 and rim[:, 2].max() == pytest.approx(h)
        assert inside[:, 2].max() <= h - a.params["rim_band"] + 1e-6
        for sx, sy in ((1, 0), (-1, 0), (0, 1), (0, -1)):  # rim on every wall
            assert np.any(rim[:, :2] @ [sx, sy] > 0.9 * (np.abs(rim[:, :2]) @ np.abs([sx, sy])).max())
        drop = np.column_stack([np.full(50, 0.03), np.full(50, -0.02), np.linspace(h + 0.05, 0.0, 50)])
        hit = Solid(a).contains(drop)
        assert not hit[drop[:, 2] > a.params["floor"] + 1e-3].any() and hit[-1]
        assert (pinch_widths(a, "rim") < 0.006).sum() >= 10


def test_basket_handle_arches_over_the_opening() -> None:
    """A basket is carried by its handle: a thin bar arching from rim to rim over the middle,
    high enough that a hand (or the Franka's fingers) fits under it without touching the rim."""
    for seed in SEEDS:
        a = asset("basket", seed)
        handle, rim = part_points(a, "handle"), part_points(a, "rim")
        top = rim[:, 2].max()
        assert handle[:, 2].max() > top + 0.07
        crown = handle[handle[:, 2] > handle[:, 2].max() - 0.01]
        assert np.ptp(crown[:, 0]) < 0.03 and abs(crown[:, 1].mean()) < 0.01  # a bar, centred
        reach = 0.8 * a.params["radius"]
        assert (handle[:, 1] > reach).any() and (handle[:, 1] < -reach).any()  # from rim to rim
        bar_bottom = handle[:, 2].max() - 2 * a.params["handle_radius"]
        under = np.column_stack([np.zeros(30), np.zeros(30),
                                 np.linspace(top + 0.002, bar_bottom - 0.003, 30)])
        assert not Solid(a).contains(under).any() and bar_bottom - top > 0.05
        assert (pinch_widths(a, "handle") < 0.03).sum() >= 10


def test_kettle_base_plate_is_the_raised_middle() -> None:
    """A kettle is set down on the base's raised plate, in the middle; the low disc round it is
    where the hand pinches the base."""
    for seed in SEEDS:
        a = asset("kettle_base", seed)
        plate, base = part_points(a, "plate"), part_points(a, "base")
        lo, hi = a.mesh().bounds
        assert 0.015 <= hi[2] <= 0.03 + 1e-9 and 0.14 <= hi[0] - lo[0] <= 0.18 + 1e-9
        assert plate[:, 2].min() >= base[:, 2].max() - 1e-6 and plate[:, 2].max() == pytest.approx(hi[2])
        assert radial(plate).max() < 0.6 * radial(base).max()
        assert (pinch_widths(a, "base") < 0.025).sum() >= 10


def test_coffee_machine_tray_sits_under_the_nozzle_with_room_for_a_cup() -> None:
    """A cup is placed on the drip tray under the nozzle: the tray is the front of the floor of
    the bay, the nozzle hangs over its middle, and a mug (0.115 m) fits between them."""
    for seed in SEEDS:
        a = asset("coffee_machine", seed)
        tray, nozzle = part_points(a, "tray"), part_points(a, "nozzle")
        lo, hi = a.mesh().bounds
        assert 0.25 <= hi[2] <= 0.35 + 1e-9
        assert tray[:, 0].max() == pytest.approx(hi[0]) and tray[:, 2].max() <= 0.02 + 1e-6
        centre = nozzle[:, :2].mean(axis=0)
        assert tray[:, 0].min() < centre[0] < tray[:, 0].max() and abs(centre[1]) < 0.01
        gap = np.column_stack([np.full(40, centre[0]), np.full(40, centre[1]),
                               np.linspace(tray[:, 2].max() + 1e-3, nozzle[:, 2].min() - 1e-3, 40)])
        assert not Solid(a).contains(gap).any()
        assert nozzle[:, 2].min() - tray[:, 2].max() >= 0.12 - 1e-6


def test_lid_knob_is_on_top_in_the_middle() -> None:
    """A lid is wider than the hand and is lifted by its knob: the knob stands on the centre of
    the dome, and it, not the disc, fits between the fingers."""
    for seed in SEEDS:
        a = asset("lid", seed)
        lid, knob = part_points(a, "lid"), part_points(a, "knob")
        assert 2 * radial(lid).max() > 0.14 - 1e-6
        assert radial(knob).max() <= a.params["knob_radius"] + 1e-6
        assert knob[:, 2].max() > lid[:, 2].max() + 0.015
        assert (pinch_widths(a, "knob") < 0.04).sum() >= 10


def test_rack_hooks_hold_a_mug() -> None:
    """Hooks must be thin enough for a mug handle, high enough for the mug and rise to a lip."""
    for seed in SEEDS:
        a = asset("rack", seed)
        hook, pole = part_points(a, "hook"), part_points(a, "pole")
        pole_r = a.params["pole_radius"]
        assert 0.004 <= a.params["hook_radius"] <= 0.006
        assert np.mean(radial(hook) > pole_r) > 0.85  # the rest is the root, inside the pole
        for root, _, bend, tip in rack_hooks(a):
            assert 0.2 <= bend[2] <= 0.3
            assert 0.08 <= np.linalg.norm(bend - root) - pole_r / 2 <= 0.1 + 1e-9  # root is in the pole
            assert bend[2] > root[2] and tip[2] > bend[2]  # tilted up, then the lip
        assert pole[:, 2].max() > max(root[2] for root, *_ in rack_hooks(a)) + 0.02


def test_shelf_boards_are_level_and_open_at_the_front() -> None:
    """Placing on a shelf needs flat boards and a clear approach from the front (+x)."""
    for seed in SEEDS:
        a = asset("shelf", seed)
        lo, hi = a.mesh().bounds
        pts, normals, labels = cloud(a)
        up = (labels == a.info.parts.index("board")) & (normals[:, 2] > 0.999)
        levels = np.unique(np.round(pts[up, 2], 6))
        assert len(levels) == a.params["boards"] and levels.max() == pytest.approx(hi[2], abs=1e-5)
        assert part_points(a, "frame")[:, 0].min() == pytest.approx(lo[0])  # back panel
        z = (levels[0] + levels[1]) / 2  # a ray from the front between the two lowest boards
        ray = np.column_stack([np.linspace(hi[0] + 0.05, lo[0] + 0.02, 100), np.zeros(100), np.full(100, z)])
        assert not Solid(a).contains(ray).any()


def test_cabinet_drawer_and_door_move_their_handles() -> None:
    """Opening furniture means pulling a handle: it must be in front and move with its panel."""
    for seed in SEEDS:
        a = asset("cabinet", seed)
        lo, hi = a.mesh().bounds
        assert 0.35 <= hi[2] <= 0.5
        front = {p: a.part_mesh(p).bounds[:, 0] for p in ("drawer", "drawer_handle", "door", "door_handle")}
        assert front["drawer_handle"][0] >= front["drawer"][1] - 1e-9 and front["drawer_handle"][1] == hi[0]
        assert front["door_handle"][0] >= front["door"][1] - 1e-9
        opened = (("drawer", 0.2), ("door", 1.2))
        for part in ("body", "drawer", "drawer_handle", "door", "door_handle"):
            before, after = part_points(a, part), part_points(a, part, q=opened)
            shift = after - before
            if part == "body":
                assert np.allclose(shift, 0.0)
            elif part.startswith("drawer"):
                assert np.allclose(shift, [0.2, 0.0, 0.0])
            else:
                assert np.allclose(shift[:, 2], 0.0) and after[:, 0].max() > before[:, 0].max() + 0.05
        inside = Solid(a, q=dict(opened))
        bin_point = np.array([hi[0] + 0.2 - 0.1, 0.0, part_points(a, "drawer_handle")[:, 2].mean()])
        assert not inside.contains(bin_point[None])[0]  # the pulled-out drawer is an open box
        assert inside.contains(bin_point - np.arange(0, 0.2, 0.001)[:, None] * [0, 0, 1]).any()


def test_microwave_door_swings_out_on_a_vertical_hinge() -> None:
    """The microwave door opens outward about a vertical axis at its left (-y) edge."""
    for seed in SEEDS:
        a = asset("microwave", seed)
        meta = metadata(a)
        (joint,) = meta["joints"]
        assert joint["kind"] == "hinge" and abs(joint["axis"][2]) == 1.0
        q = (("door", 1.2),)
        handle, door = part_points(a, "door_handle"), part_points(a, "door")
        assert handle[:, 0].min() >= door[:, 0].max() - 1e-6
        assert handle[:, 1].mean() > door[:, 1].mean()
        moved = part_points(a, "door_handle", q=q)
        assert moved[:, 0].mean() > handle[:, 0].mean() + 0.1
        assert np.allclose(part_points(a, "body", q=q), part_points(a, "body"))


# --- tools around the library ---------------------------------------------------------------------


def test_render_labelled_cloud(tmp_path: Path) -> None:
    """``afford show`` draws these; labels and score heat maps must both render, bad input fail."""
    a = asset("mug")
    out = render_labelled_cloud(a, tmp_path / "mug.png", n=512)
    assert out.stat().st_size > 10_000
    pts, _, _ = a.surface_cloud(512)
    scored = render_labelled_cloud(a, tmp_path / "heat.png", scores=pts[:, 2] / pts[:, 2].max(), n=512)
    assert scored.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="one value per point"):
        render_labelled_cloud(a, tmp_path / "bad.png", scores=np.zeros(10), n=512)


def test_decompose_splits_a_concave_mesh() -> None:
    """Imported meshes need convex parts: an L-shape must come back as >= 2 convex pieces."""
    bar = trimesh.creation.box(bounds=[[0, 0, 0], [0.1, 0.02, 0.02]])
    post = trimesh.creation.box(bounds=[[0, 0, 0.02], [0.02, 0.02, 0.1]])
    shape = trimesh.boolean.union([bar, post], engine="manifold")
    parts = decompose(shape)
    assert len(parts) >= 2 and all(p.is_convex for p in parts)
    assert sum(p.volume for p in parts) == pytest.approx(bar.volume + post.volume, rel=0.15)
    with pytest.raises(ValueError, match="threshold"):
        decompose(shape, threshold=0.0)
