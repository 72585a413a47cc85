"""Tests of the independently authored test objects and their simulated depth views.

The objects exist to test a part-segmentation model on shapes its training generator never made,
so these tests check what such a test set must get right: every face carries a part of its own
category, parts sit where a person would put them, sizes are real-world, the same seed gives the
same object, and a partial view looks like one depth frame (one side only, noisy, with holes and
flying pixels) and carries only ontology labels.
"""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.spatial import cKDTree

from afford_core.ontology import category as ontology_category
from afford_data import independent_objects as io

SEEDS = range(5)

# (longest side, height) ranges in metres: real objects of the kind, posed as the module poses them
# (hammers lie on their side; a pan's or ladle's handle adds to its height).
SIZES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "mug": ((0.07, 0.16), (0.05, 0.13)),
    "kettle": ((0.15, 0.5), (0.1, 0.35)),
    "hammer": ((0.2, 0.4), (0.015, 0.08)),
    "pan": ((0.3, 0.55), (0.01, 0.16)),
    "pot": ((0.15, 0.5), (0.05, 0.3)),
    "scoop": ((0.1, 0.35), (0.01, 0.32)),
    "paper_cup": ((0.05, 0.17), (0.05, 0.17)),
    "bowl": ((0.1, 0.26), (0.03, 0.12)),
    "bottle": ((0.1, 0.36), (0.1, 0.36)),
    "basket": ((0.18, 0.45), (0.06, 0.4)),
    "cutting_board": ((0.25, 0.5), (0.008, 0.05)),
}

# Parts that may be missing, and why: pots often stand open on a counter (no lid, so no knob);
# the watering-can family of kettles has an open fill hole. Every other part is always present.
OPTIONAL = {("pot", "lid"), ("pot", "knob"), ("kettle", "lid")}


def _parts(category: str) -> tuple[str, ...]:
    return ontology_category(category).parts


def test_categories_are_the_requested_ontology_categories() -> None:
    assert set(io.CATEGORIES) == {
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
    }
    for name in io.CATEGORIES:
        assert _parts(name)  # raises on a name the ontology does not know


@pytest.mark.parametrize("category", io.CATEGORIES)
def test_objects_are_labelled_closed_upright_centred_and_real_sized(category: str) -> None:
    (lo_long, hi_long), (lo_h, hi_h) = SIZES[category]
    for seed in SEEDS:
        obj = io.make_object(category, seed)
        mesh = obj.mesh
        assert obj.category == category and obj.origin == "primitives" and obj.family
        assert len(obj.face_parts) == len(mesh.faces) > 200
        assert set(obj.face_parts.tolist()) <= set(_parts(category)), obj.family
        assert np.isfinite(mesh.vertices).all()
        # Closed, outward-wound shells: ray casting and "which side faces the camera" rely on it.
        assert mesh.is_watertight, obj.family
        assert mesh.volume > 0, obj.family
        lo, hi = mesh.bounds
        assert lo[2] == pytest.approx(0.0, abs=1e-9)
        assert lo[:2] + hi[:2] == pytest.approx([0.0, 0.0], abs=1e-6)
        ext = hi - lo
        assert lo_long <= ext.max() <= hi_long, (obj.family, ext)
        assert lo_h <= ext[2] <= hi_h, (obj.family, ext)


@pytest.mark.parametrize("category", io.CATEGORIES)
def test_every_part_appears_with_a_real_share_of_the_surface(category: str) -> None:
    seeds = range(14)
    present = {p: 0 for p in _parts(category)}
    for seed in seeds:
        obj = io.make_object(category, seed)
        area = obj.mesh.area_faces
        for part in obj.parts_present:
            present[part] += 1
            # A part is never a stray face or two: at least 0.2% of the surface (a pot's knob).
            assert area[obj.face_parts == part].sum() > 0.002 * area.sum(), (obj.family, part)
    for part, count in present.items():
        if (category, part) in OPTIONAL:
            assert count >= 0.6 * len(seeds), (part, count)
        else:
            assert count == len(seeds), (part, count)


def _closest_faces(mesh: trimesh.Trimesh, points: np.ndarray) -> np.ndarray:
    return io.nearest_faces(mesh, points)[0]


def _centroid_z(obj: io.LabelledMesh, part: str) -> np.ndarray:
    return obj.mesh.triangles_center[obj.face_parts == part, 2]


@pytest.mark.parametrize("category", ["mug", "paper_cup", "bowl", "basket"])
def test_rims_are_the_top_band_of_the_wall(category: str) -> None:
    for seed in SEEDS:
        obj = io.make_object(category, seed)
        rim_z = _centroid_z(obj, "rim")
        body_z = _centroid_z(obj, "body")
        top = float(rim_z.max())
        # A band of a few mm to ~1.5 cm (a basket's border bead adds its own height).
        assert top - rim_z.min() < (0.03 if category == "basket" else 0.02), obj.family
        assert np.median(body_z) < rim_z.min(), obj.family
        if category != "basket":  # handles may rise above; nothing else does
            assert obj.mesh.bounds[1, 2] - top < 0.004, obj.family


def test_caps_knobs_lids_and_heads_are_where_a_person_puts_them() -> None:
    for seed in SEEDS:
        bottle = io.make_object("bottle", seed)
        assert _centroid_z(bottle, "cap").min() > 0.6 * bottle.mesh.bounds[1, 2], bottle.family
        kettle = io.make_object("kettle", seed)
        if "lid" in kettle.parts_present:
            assert np.median(_centroid_z(kettle, "lid")) > np.median(_centroid_z(kettle, "body"))
        pot = io.make_object("pot", seed)
        if "knob" in pot.parts_present:
            assert (
                np.median(_centroid_z(pot, "knob"))
                > np.median(_centroid_z(pot, "lid"))
                > np.median(_centroid_z(pot, "body"))
            )
        hammer = io.make_object("hammer", seed)
        head_x = hammer.mesh.triangles_center[hammer.face_parts == "head", 0]
        handle_x = hammer.mesh.triangles_center[hammer.face_parts == "handle", 0]
        assert np.median(handle_x) - np.median(head_x) > 0.08, hammer.family  # the head at one end
        for category in ("mug", "pan", "scoop", "cutting_board"):
            obj = io.make_object(category, seed)
            grip = "handle"
            main = {"mug": "body", "pan": "body", "scoop": "bowl", "cutting_board": "board"}[category]
            c = obj.mesh.triangles_center
            # The handle sticks out of the main part: its far end lies beyond the main part's extent.
            far = np.abs(c[obj.face_parts == grip, :2]).max()
            assert far > np.abs(c[obj.face_parts == main, :2]).max() - 1e-3, (category, obj.family)


def test_same_seed_same_object_other_seed_other_object() -> None:
    for category in io.CATEGORIES:
        a, b, c = io.make_object(category, 3), io.make_object(category, 3), io.make_object(category, 4)
        assert np.array_equal(a.mesh.vertices, b.mesh.vertices)
        assert np.array_equal(a.mesh.faces, b.mesh.faces)
        assert np.array_equal(a.face_parts, b.face_parts)
        assert a.mesh.vertices.shape != c.mesh.vertices.shape or not np.allclose(
            a.mesh.vertices, c.mesh.vertices
        )


@pytest.mark.parametrize("category", io.CATEGORIES)
def test_seeds_cover_several_shape_families(category: str) -> None:
    families = {io.make_object(category, s).family for s in range(10)}
    kinds = {f.split("/")[0] for f in families}
    assert len(families) >= 6, families
    assert len(kinds) >= 3, kinds


def test_unknown_category_is_refused() -> None:
    with pytest.raises(KeyError):
        io.make_object("banana", 0)


def test_instances_are_deterministic_and_mix_in_robosuite_meshes() -> None:
    for category in io.CATEGORIES:
        got = io.instances(category, 5, seed=2)
        assert len(got) == 5 and all(o.category == category for o in got)
        again = io.instances(category, 5, seed=2)
        assert all(np.array_equal(x.mesh.vertices, y.mesh.vertices) for x, y in zip(got, again, strict=True))
        for i, obj in enumerate(got):
            if obj.origin == "primitives":
                ref = io.make_object(category, 2 * 1_000_003 + i)
                assert np.array_equal(obj.mesh.vertices, ref.mesh.vertices)
        if not io.robosuite_sources(category):
            assert all(o.origin == "primitives" for o in got)
    assert io.instances("mug", 0) == []


def test_robosuite_bottle_is_labelled_cap_over_body() -> None:
    sources = io.robosuite_sources("bottle")
    if not sources:
        pytest.skip("robosuite not installed")
    assert sources == ("models/assets/objects/meshes/bottle.stl",)
    got = io.instances("bottle", 8)
    real = [o for o in got if o.origin.startswith("robosuite:")]
    assert [got.index(o) for o in real] == [3, 7]
    native, scaled = real
    assert native.origin == "robosuite:models/assets/objects/meshes/bottle.stl"
    height = native.mesh.bounds[1, 2]
    assert height == pytest.approx(0.16, abs=0.005) and native.mesh.bounds[0, 2] == pytest.approx(0.0)
    assert set(native.face_parts.tolist()) == {"body", "cap"}
    cap_z = _centroid_z(native, "cap")
    assert cap_z.min() > 0.85 * height  # only the closure over the neck, not the neck or shoulder
    assert (native.face_parts == "cap").mean() < 0.5
    assert not np.isclose(scaled.mesh.bounds[1, 2], height)
    assert np.array_equal(scaled.face_parts, native.face_parts)
    assert {o.origin for o in io.instances("mug", 8)} == {"primitives"}


# --------------------------------------------------------------------------------------------------
# Partial views
# --------------------------------------------------------------------------------------------------

VIEWS = [(c, s) for s, c in enumerate(io.CATEGORIES)]


@pytest.fixture(scope="module")
def views() -> dict[tuple[str, int], tuple[io.LabelledMesh, io.PartialView]]:
    out = {}
    for category, seed in VIEWS:
        obj = io.make_object(category, seed)
        out[(category, seed)] = (obj, io.render_view(obj, seed))
    return out


def test_partial_view_returns_a_fixed_size_centred_labelled_cloud() -> None:
    for category, seed in VIEWS[:4]:
        obj = io.make_object(category, seed)
        pts, parts = io.partial_view(obj, seed)
        assert pts.shape == (2048, 3) and pts.dtype == np.float32
        assert parts.shape == (2048,) and parts.dtype.kind == "U"
        assert set(parts.tolist()) <= set(_parts(category))
        assert (pts.min(axis=0) + pts.max(axis=0)) == pytest.approx(np.zeros(3), abs=1e-5)
        again = io.partial_view(obj, seed)
        assert np.array_equal(pts, again[0]) and np.array_equal(parts, again[1])
        other = io.partial_view(obj, seed + 1)
        assert not np.array_equal(pts, other[0])


def test_partial_view_subsamples_or_repeats_to_the_size_asked() -> None:
    obj = io.make_object("mug", 0)
    view = io.render_view(obj, 0)
    few, _ = io.partial_view(obj, 0, num_points=256)
    assert len(np.unique(few, axis=0)) == 256  # subsampled without replacement
    many, labels = io.partial_view(obj, 0, num_points=len(view.points) + 500)
    assert len(many) == len(view.points) + 500 and len(labels) == len(many)
    # Every measured point is kept once and some repeated: the unique points are the view's own.
    assert len(np.unique(many, axis=0)) == len(np.unique(view.points, axis=0))


def test_views_see_only_surfaces_facing_the_camera(views) -> None:  # type: ignore[no-untyped-def]
    for (category, _), (_, view) in views.items():
        solid = ~view.flying
        surf = view.surface[solid]
        rng = np.linalg.norm(surf - view.camera, axis=1)
        d = (surf - view.camera) / rng[:, None]
        scene = io._scene(view.mesh)
        t, _, normal = io._cast(scene, view.camera, d)
        # The point is the first surface along its ray: nothing of the object hides it.
        assert np.mean(np.abs(t - rng) < 1e-3) > 0.995, category
        # The surface turns its outside towards the camera, and not at a grazing angle.
        cos = np.einsum("ij,ij->i", normal, -d)
        assert np.mean(cos > 0) > 0.995, category
        assert np.mean(cos > np.cos(np.radians(80.5))) > 0.995, category


def test_views_are_partial(views) -> None:  # type: ignore[no-untyped-def]
    for (category, seed), (_, view) in views.items():
        full, faces = trimesh.sample.sample_surface(view.mesh, 4000, seed=seed)
        seen_normals = view.mesh.face_normals[_closest_faces(view.mesh, view.surface)]
        # A sample counts as seen when a view point lies within ~5 mm on a surface facing the same
        # way (the normal, scaled to 1 cm, keeps a thin wall's inside apart from its outside).
        seen = np.hstack([view.surface, 0.01 * seen_normals])
        near = cKDTree(seen).query(
            np.hstack([full, 0.01 * view.mesh.face_normals[faces]]), distance_upper_bound=0.006
        )
        covered = np.isfinite(near[0]).mean()
        # One viewpoint sees well under the whole surface (the far side, the underside, insides).
        assert covered < 0.7, (category, covered)
        assert (
            view.stats["valid"] + view.stats["flying"]
            == len(view.points)
            < view.stats["hit"] + view.stats["flying"]
        )


def test_depth_noise_is_realsense_like_and_grows_with_distance() -> None:
    obj = io.make_object("bowl", 1)
    near = io.render_view(obj, 5, distance=0.5)
    far = io.render_view(obj, 5, distance=0.9)
    spreads = []
    for view in (near, far):
        solid = ~view.flying
        residual = np.linalg.norm(view.points[solid] - view.camera, axis=1) - np.linalg.norm(
            view.surface[solid] - view.camera, axis=1
        )
        assert abs(np.mean(residual)) < 0.001
        spreads.append(float(np.std(residual)))
    assert near.sigma_coeff == far.sigma_coeff
    # sigma = k z^2 with k in 0.004-0.008: 1-2 mm at 0.5 m (plus 1 mm depth steps), ~3x at 0.9 m.
    assert 0.0008 < spreads[0] < 0.0025
    assert 2.2 < spreads[1] / spreads[0] < 4.5


def test_views_have_grazing_holes_and_flying_pixels(views) -> None:  # type: ignore[no-untyped-def]
    grazing = shadow = 0
    for (category, _), (obj, view) in views.items():
        grazing += view.stats["grazing"]
        shadow += view.stats["shadow"]
        fly = view.flying
        assert 0.01 < fly.mean() < 0.06, (category, fly.mean())
        # Flying pixels float off the surface (between an edge and what is behind it), further
        # than depth noise moves a good measurement, but within the 8 cm an object crop keeps...
        off = np.linalg.norm(view.points[fly] - view.surface[fly], axis=1)
        noise = np.linalg.norm(view.points[~fly] - view.surface[~fly], axis=1)
        assert np.median(off) > max(1.5 * np.median(noise), 0.002), category
        assert off.max() < 0.1, category
        # ...and carry the part of the surface point nearest to them.
        agree = np.mean(obj.face_parts[_closest_faces(view.mesh, view.points[fly])] == view.parts[fly])
        assert agree > 0.95, (category, agree)
        assert set(view.parts.tolist()) <= set(_parts(category))
    # Holes: surfaces seen edge-on, and the stereo shadow beside handles and rims.
    assert grazing > 0.02 * sum(v.stats["hit"] for _, v in views.values())
    assert shadow > 0
