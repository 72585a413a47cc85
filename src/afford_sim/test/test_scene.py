"""Tests of scene descriptions, seeded placement and the collision export (afford_sim.scene).

No physics here: placement is pure geometry, so these run in well under a second each.
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np
import pytest
import trimesh

from afford_sim.assets import Asset, JointSpec, Link, Piece, make
from afford_sim.scene import (
    CameraSpec,
    ObjectSpec,
    PlacedScene,
    PlacementError,
    Relation,
    Relative,
    SamplerConfig,
    SceneSpec,
    TableSpec,
    Window,
    collision_shapes,
    look_at,
    sample_scene,
)


@cache
def cached_make(category: str, seed: int) -> Asset:
    """Assets are deterministic; build each once per session (the sampler only reads them)."""
    return make(category, seed)


def yaw_of(pose: np.ndarray) -> float:
    return math.atan2(pose[1, 0], pose[0, 0])


def place(spec: SceneSpec, seed: int = 0, **kw: object) -> PlacedScene:
    return sample_scene(spec, seed, make_asset=cached_make, **kw)  # type: ignore[arg-type]


def table_scene(n: int = 5) -> SceneSpec:
    cats = ["mug", "cube", "bowl", "box", "bottle", "cube", "mug"]
    return SceneSpec(objects=tuple(
        ObjectSpec(f"o{i}", cats[i % len(cats)], i, Window(center=(0.5, 0.0), size=(0.5, 0.8)))
        for i in range(n)
    ))


def test_window_placement_respects_window_and_yaw_range() -> None:
    """A task generator relies on objects landing where it asked, turned as it asked."""
    spec = SceneSpec(objects=(
        ObjectSpec("mug", "mug", 0, Window(center=(0.45, -0.2), size=(0.1, 0.06), yaw=(0.2, 0.5))),
        ObjectSpec("cube", "cube", 1, Window(center=(0.6, 0.25), size=(0.0, 0.0), yaw=(-1.0, -1.0))),
    ))
    for seed in range(10):
        placed = place(spec, seed)
        mug, cube = placed.object("mug"), placed.object("cube")
        assert abs(mug.pose[0, 3] - 0.45) <= 0.05 + 1e-12 and abs(mug.pose[1, 3] + 0.2) <= 0.03 + 1e-12
        assert 0.2 - 1e-12 <= yaw_of(mug.pose) <= 0.5 + 1e-12
        np.testing.assert_allclose(cube.pose[:2, 3], (0.6, 0.25), atol=1e-12)
        assert yaw_of(cube.pose) == pytest.approx(-1.0)
        # Resting on the table top, just above it (the drop keeps it out of penetration).
        assert mug.pose[2, 3] == pytest.approx(SceneSpec().table.top_z + SamplerConfig().drop)


def test_footprints_do_not_overlap_stay_on_table_and_clear_the_robot() -> None:
    """Free objects starting inside each other explode in simulation; off-table ones fall."""
    spec = table_scene(6)
    cfg = SamplerConfig(min_gap=0.01)
    table = spec.table
    lo = np.array(table.center) - np.array(table.size) / 2 + table.margin
    hi = np.array(table.center) + np.array(table.size) / 2 - table.margin
    for seed in range(5):
        placed = place(spec, seed, config=cfg)
        for a, b in itertools.combinations(placed.objects, 2):
            assert a.footprint.distance(b.footprint) >= cfg.min_gap - 1e-6, (seed, a.name, b.name)
        for o in placed.objects:
            corners = o.footprint.corners()
            assert np.all(corners >= lo - 1e-9) and np.all(corners <= hi + 1e-9), (seed, o.name)
            assert o.footprint.distance_to_point(np.zeros(2), spec.robot_clearance) >= 0


def test_footprint_is_the_oriented_bounds_of_the_asset() -> None:
    """Overlap checks are only as good as the footprint: it must cover the asset at its yaw."""
    placed = place(SceneSpec(objects=(ObjectSpec("mug", "mug", 3, Window(yaw=(0.7, 0.7))),)))
    mug = placed.object("mug")
    verts = mug.asset.mesh().vertices @ mug.pose[:3, :3].T + mug.pose[:3, 3]
    # Every vertex inside the rectangle: express it in the footprint's own axes.
    c, s = math.cos(mug.footprint.yaw), math.sin(mug.footprint.yaw)
    local = (verts[:, :2] - mug.footprint.center) @ np.array([[c, -s], [s, c]])
    assert np.all(np.abs(local) <= mug.footprint.half + 1e-9)
    assert np.allclose(np.abs(local).max(axis=0), mug.footprint.half, atol=1e-6)  # and tight


def test_same_seed_same_scene_other_seed_other_scene() -> None:
    """Evaluations are replayed from (spec, seed); a different seed must actually vary the scene."""
    spec = table_scene(4)
    a, b, c = place(spec, 7), place(spec, 7), place(spec, 8)
    for oa, ob in zip(a.objects, b.objects, strict=True):
        np.testing.assert_array_equal(oa.pose, ob.pose)
    assert any(not np.allclose(oa.pose, oc.pose) for oa, oc in zip(a.objects, c.objects, strict=True))


def test_side_relations_offset_in_the_robot_frame() -> None:
    """'the cup left of the mug' must put it on the robot's left (+y) with the asked gap."""
    gap = 0.06
    cases: tuple[tuple[Relation, int, int], ...] = (
        ("left_of", 1, 1), ("right_of", 1, -1), ("behind", 0, 1), ("in_front_of", 0, -1))
    for rel, axis, sign in cases:
        spec = SceneSpec(objects=(
            ObjectSpec("mug", "mug", 0, Window(center=(0.5, 0.0), size=(0.05, 0.05), yaw=(0.0, 0.0))),
            ObjectSpec("cube", "cube", 0, Relative(rel, "mug", distance=gap, jitter=0.0, yaw=(0.0, 0.0))),
        ))
        placed = place(spec, 1)
        mug, cube = placed.object("mug"), placed.object("cube")
        # With both yaws 0 the footprints are axis aligned, so the free gap is exact.
        mug_lo, mug_hi = mug.footprint.corners().min(0), mug.footprint.corners().max(0)
        cube_lo, cube_hi = cube.footprint.corners().min(0), cube.footprint.corners().max(0)
        free = cube_lo[axis] - mug_hi[axis] if sign > 0 else mug_lo[axis] - cube_hi[axis]
        assert free == pytest.approx(gap, abs=1e-9), rel
        assert cube.support == "table" and cube.pose[2, 3] == pytest.approx(mug.pose[2, 3])


def test_near_relation_keeps_the_gap_in_some_direction() -> None:
    spec = SceneSpec(objects=(
        ObjectSpec("bowl", "bowl", 0, Window(center=(0.5, 0.0), size=(0.05, 0.05))),
        ObjectSpec("cube", "cube", 0, Relative("near", "bowl", distance=0.04, jitter=0.0)),
    ))
    for seed in range(5):
        placed = place(spec, seed)
        d = placed.object("bowl").footprint.distance(placed.object("cube").footprint)
        assert 0.01 <= d <= 0.04 + 0.12  # rotated rectangles: the gap along the ray bounds it above


def test_in_puts_an_object_on_the_container_floor() -> None:
    """'the cube in the bowl': inside, on the inner floor, not on the rim or the table."""
    spec = SceneSpec(objects=(
        ObjectSpec("bowl", "bowl", 0, Window(center=(0.5, 0.0), size=(0.1, 0.1))),
        ObjectSpec("cube", "cube", 0, Relative("in", "bowl")),
    ))
    placed = place(spec)
    bowl, cube = placed.object("bowl"), placed.object("cube")
    np.testing.assert_allclose(cube.pose[:2, 3], bowl.pose[:2, 3], atol=1e-9)
    floor = cube.pose[2, 3] - bowl.pose[2, 3]
    bowl_height = bowl.asset.mesh().bounds[1, 2]
    assert 0.0 < floor < 0.3 * bowl_height
    assert cube.support == "bowl"


def test_on_puts_an_object_on_top_and_in_finds_a_closed_interior() -> None:
    """On a cabinet means its top; in a cabinet means a shelf or drawer floor inside it."""
    spec = SceneSpec(objects=(
        ObjectSpec("cabinet", "cabinet", 0, Window(center=(0.7, 0.1), size=(0.05, 0.05))),
        ObjectSpec("box", "box", 0, Relative("on", "cabinet")),
        ObjectSpec("cube", "cube", 0, Relative("in", "cabinet")),
    ))
    placed = place(spec)
    cab, box, cube = (placed.object(n) for n in ("cabinet", "box", "cube"))
    top = cab.asset.mesh().bounds[1, 2]
    # Both stand at their support plus the drop height, so heights differ by the support's.
    assert box.pose[2, 3] - cab.pose[2, 3] == pytest.approx(top + SamplerConfig().drop, abs=1e-6)
    inside = cube.pose[2, 3] - cab.pose[2, 3]
    assert 0.0 < inside < top - 0.045  # below the top panel by at least the cube's height


def test_furniture_faces_the_robot_by_default() -> None:
    """A cabinet turned away leaves its handles unreachable: fronts (+x) face the robot."""
    placed = place(SceneSpec(objects=(
        ObjectSpec("cabinet", "cabinet", 0, Window(center=(0.7, 0.2), size=(0.05, 0.05))),
        ObjectSpec("rack", "rack", 0, Window(center=(0.6, -0.3), size=(0.05, 0.05))),
    )))
    for o in placed.objects:
        to_robot = -o.pose[:2, 3] / np.linalg.norm(o.pose[:2, 3])
        assert o.pose[:2, 0] @ to_robot == pytest.approx(1.0, abs=1e-9)
        assert o.fixed


def test_unplaceable_specs_raise_naming_the_object() -> None:
    """A generator must learn which object did not fit and why, not get a hang or a bad scene."""
    crowded = SceneSpec(objects=tuple(
        ObjectSpec(f"cab{i}", "cabinet", i, Window(center=(0.6, 0.0), size=(0.05, 0.05))) for i in range(2)
    ))
    with pytest.raises(PlacementError, match=r"could not place 'cab1'.*overlaps 'cab0'") as err:
        place(crowded, config=SamplerConfig(attempts_per_object=20, restarts=2))
    assert err.value.object_name == "cab1"
    off_table = SceneSpec(objects=(ObjectSpec("mug", "mug", 0, Window(center=(2.0, 0.0), size=(0.1, 0.1))),))
    with pytest.raises(PlacementError, match="off the table"):
        place(off_table, config=SamplerConfig(attempts_per_object=10, restarts=0))
    at_robot = SceneSpec(objects=(ObjectSpec("mug", "mug", 0, Window(center=(0.1, 0.0), size=(0.0, 0.0))),))
    with pytest.raises(PlacementError, match="robot base"):
        place(at_robot, config=SamplerConfig(attempts_per_object=5, restarts=0))
    no_interior = SceneSpec(objects=(
        ObjectSpec("cube", "cube", 0, Window(size=(0.0, 0.0))),
        ObjectSpec("mug", "mug", 0, Relative("in", "cube")),
    ))
    with pytest.raises(PlacementError, match="cannot go in cube"):
        place(no_interior)


def test_invalid_specs_are_rejected_early() -> None:
    with pytest.raises(ValueError, match="not in the scene"):
        SceneSpec(objects=(ObjectSpec("mug", "mug", 0, Relative("on", "tray")),))
    with pytest.raises(ValueError, match="cycle"):
        SceneSpec(objects=(ObjectSpec("a", "mug", 0, Relative("near", "b")),
                           ObjectSpec("b", "mug", 1, Relative("near", "a"))))
    with pytest.raises(ValueError, match="duplicate object names"):
        SceneSpec(objects=(ObjectSpec("a", "mug"), ObjectSpec("a", "cube")))
    with pytest.raises(KeyError, match="unknown object category"):
        ObjectSpec("x", "spaceship")
    with pytest.raises(ValueError, match="must be non-empty"):
        ObjectSpec("robot", "mug")
    with pytest.raises(ValueError, match="unknown relation"):
        Relative("under", "mug")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty"):
        Window(yaw=(1.0, 0.0))
    with pytest.raises(ValueError, match="robot_q"):
        SceneSpec(robot_q=(0.0,) * 6)
    with pytest.raises(ValueError, match="margin"):
        TableSpec(size=(0.1, 0.1), margin=0.06)


def test_camera_spec_intrinsics_and_extrinsics() -> None:
    """Back-projection needs K and the OpenCV pose exactly as the renderer uses them."""
    cam = CameraSpec()
    k = cam.intrinsics()
    assert k[0, 0] == pytest.approx(240 / math.tan(math.radians(cam.fovy) / 2))
    assert (k[0, 2], k[1, 2]) == ((640 - 1) / 2, (480 - 1) / 2)
    t = cam.extrinsics()
    np.testing.assert_allclose(t[:3, :3].T @ t[:3, :3], np.eye(3), atol=1e-12)
    # z looks at the target, y points down in the world (the image's rows go down).
    view = np.array(cam.target) - np.array(cam.position)
    assert t[:3, 2] @ view / np.linalg.norm(view) == pytest.approx(1.0)
    assert t[2, 1] < 0
    pose = look_at((1, 0, 1), (0, 0, 0))
    calib = CameraSpec.from_calibration("wrist", k * [[1.1], [1.1], [1]], pose, 640, 480)
    np.testing.assert_allclose(calib.intrinsics(), k * [[1.1], [1.1], [1]])
    with pytest.raises(ValueError, match="K must be 3x3"):
        CameraSpec(K=np.eye(2))
    with pytest.raises(ValueError, match="rigid transform"):
        CameraSpec(world_T_camera=np.diag([1.0, 1.0, -1.0, 1.0]))


def two_link_drawer(category: str, seed: int) -> Asset:
    """A hand-built drawer unit: a carcass and a drawer sliding along +x."""
    body = trimesh.creation.box((0.3, 0.3, 0.2))
    body.apply_translation((0, 0, 0.1))
    drawer = trimesh.creation.box((0.25, 0.25, 0.05))
    return Asset(
        category="cabinet", seed=seed,
        links=[Link("body", [Piece("body", body)]),
               Link("drawer", [Piece("drawer", drawer)], parent="body", pos=np.array([0.05, 0.0, 0.25]),
                    joint=JointSpec("drawer", "slide", np.array([1.0, 0, 0]), range=(0.0, 0.2)))],
        rgba={"body": (0.5, 0.4, 0.3, 1.0), "drawer": (0.6, 0.5, 0.4, 1.0)},
    )


def test_collision_shapes_match_the_asset_geometry_in_world() -> None:
    """The planner's obstacles must be exactly where the simulator's geometry is."""
    placed = sample_scene(SceneSpec(objects=(ObjectSpec("unit", "cabinet", 0, Window(size=(0.1, 0.1))),)), 3,
                          make_asset=two_link_drawer)
    shapes = collision_shapes(placed)
    assert [s.name for s in shapes] == ["table", "unit/body/0", "unit/drawer/0"]
    table = shapes[0]
    assert table.kind == "box" and table.world_vertices()[:, 2].max() == pytest.approx(0.0)
    unit = placed.object("unit")
    for s, part in zip(shapes[1:], ("body", "drawer"), strict=True):
        expected = unit.asset.part_mesh(part).apply_transform(unit.pose).vertices
        np.testing.assert_allclose(np.sort(s.world_vertices(), axis=0), np.sort(expected, axis=0), atol=1e-12)
        assert (s.object, s.part, s.kind) == ("unit", part, "convex")
