"""Domain randomization: each axis does what it declares, and only that; draws are seeded and
recorded; the visual axes never touch geometry, depth, segmentation of objects or physics."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from afford_pipeline.spine import SpineConfig, run_task, task_world
from afford_sim.randomization import (
    AXES,
    DOMAINS,
    DomainRandomization,
    domain_randomization,
    draw_domain,
    jittered_pose,
    temperature_rgb,
    widen_windows,
)
from afford_sim.scene import RESERVED_NAMES, ObjectSpec, Relative, SceneSpec, Window, sample_scene
from afford_sim.tasks import get_task

TASK, SEED = "place-banana-plate-v1", 3


@pytest.fixture(scope="module")
def plain():
    w = task_world(TASK, SEED)
    yield w
    w.close()


def _world(axes: str):
    return task_world(TASK, SEED, randomize=axes)


def test_presets_and_comma_lists():
    assert domain_randomization("none").axes == ()
    assert domain_randomization(None).axes == ()
    assert domain_randomization("texture, lighting").axes == ("texture", "lighting")
    assert domain_randomization("visual").axes == AXES[1:]
    assert domain_randomization("table1").axes == AXES
    assert domain_randomization("table1").pose == (0.30, 60.0)  # AffordSim's Table 1
    assert domain_randomization("table2").axes == ("pose",)
    assert domain_randomization("table2").pose == (0.15, 30.0)  # its policy table
    assert domain_randomization("table2,noise").axes == ("pose", "noise")
    assert set(DOMAINS.names()) >= {"none", "visual", "table1", "table2", *AXES[1:]}
    with pytest.raises(KeyError, match="texture"):  # the error lists the known presets
        domain_randomization("textures")
    with pytest.raises(ValueError, match="pose windows"):
        domain_randomization("table1,table2")
    with pytest.raises(KeyError):
        SpineConfig(randomize="sunshine")


@pytest.mark.parametrize("bad", [
    {"pose": (0.0, 60.0)}, {"pose": (0.3, 400.0)}, {"camera_shift": -0.01}, {"noise_std": (5.0, 2.0)},
    {"lights": (0, 2)}, {"light_elevation_deg": (10.0, 95.0)}, {"pattern_cell": (0.0, 0.01)},
])
def test_bad_ranges_are_refused(bad):
    with pytest.raises(ValueError):
        DomainRandomization(**bad)


def test_draws_are_seeded_and_axes_draw_independently():
    parts = {"mug": ("body", "handle", "rim")}
    a = draw_domain(domain_randomization("visual"), parts, ["front"], seed=5)
    assert a == draw_domain(domain_randomization("visual"), parts, ["front"], seed=5)
    assert a.as_dict() != draw_domain(domain_randomization("visual"), parts, ["front"], seed=6).as_dict()
    # Switching another axis off leaves an axis's own draw as it was.
    alone = draw_domain(domain_randomization("texture"), parts, ["front"], seed=5)
    assert alone.parts == a.parts and not alone.lights and not alone.cameras and alone.noise_std == 0
    assert set(a.parts) == {"mug/body", "mug/handle", "mug/rim"}
    assert 1 <= len(a.lights) <= 3 and all(lt.kind in ("directional", "spot", "point") for lt in a.lights)
    json.dumps(a.as_dict())  # the record is plain JSON


def test_colour_temperature_runs_warm_to_cold():
    warm, day, cold = temperature_rgb(2700), temperature_rgb(6500), temperature_rgb(10000)
    assert warm[0] == 1.0 and warm[2] < 0.5  # a bulb is red-heavy
    assert max(abs(c - 1.0) for c in day) < 0.06  # daylight is near white
    assert cold[2] == 1.0 and cold[0] < 0.9


def test_none_builds_the_world_it_always_built(plain):
    w = _world("none")
    try:
        assert w.domain is None
        assert w.spec.to_xml() == plain.spec.to_xml()
    finally:
        w.close()


def test_visual_axes_keep_geometry_physics_and_what_perception_sees(plain):
    base = plain.render("front")
    w = _world("texture,lighting,background,noise")
    try:
        obs = w.render("front")
        assert obs.rgb is not None and base.rgb is not None
        # Objects, table and robot: the same depth and labels (the walls only hide floor).
        floor = [i for i, (o, _) in enumerate(base.labels) if o == "floor"]
        seen = (base.segmentation >= 0) & ~np.isin(base.segmentation, floor)
        np.testing.assert_array_equal(obs.depth[seen], base.depth[seen])
        # (the walls add a label, so compare labels by name, not by index)
        names = np.array([f"{o}/{p}" for o, p in obs.labels])
        base_names = np.array([f"{o}/{p}" for o, p in base.labels])
        np.testing.assert_array_equal(names[obs.segmentation[seen]], base_names[base.segmentation[seen]])
        np.testing.assert_array_equal(w.observed_cloud(obs, "banana").points,
                                      plain.observed_cloud(base, "banana").points)
        exclude = ["banana", "table", "floor"]
        np.testing.assert_array_equal(w.scene_cloud(obs, exclude), plain.scene_cloud(base, exclude))
        # The picture changed everywhere: objects, table, background.
        diff = np.abs(obs.rgb.astype(int) - base.rgb.astype(int)).sum(axis=2)
        for name in ("banana", "plate", "table"):
            assert diff[base.mask(name)].mean() > 20, name
        assert diff[~seen].mean() > 20  # the background: walls and floor
        assert w.model.stat.extent == plain.model.stat.extent  # the depth's planes
        # Physics: the same motion gives the same state.
        for world in (plain, w):
            world.reset()
            world.set_arm_target(np.asarray(world.arm_q()) + 0.05)
            world.step(300)
        np.testing.assert_allclose(w.data.qpos, plain.data.qpos, atol=1e-9)
    finally:
        plain.reset()
        w.close()


def test_texture_dresses_objects_only(plain):
    base = plain.render("front")
    w = _world("texture")
    try:
        obs = w.render("front")
        diff = np.abs(obs.rgb.astype(int) - base.rgb.astype(int)).sum(axis=2)
        assert diff[base.mask("banana")].mean() > 20
        assert diff[base.mask("table")].max() == 0  # not the table: that is the background axis
        assert set(w.domain.parts) == {"banana/body", "plate/body", "plate/rim"}
    finally:
        w.close()


def test_camera_jitter_moves_each_camera_within_its_bounds(plain):
    dr = domain_randomization("camera")
    w = _world("camera")
    try:
        for name in plain.cameras:
            a, b = plain.render(name).world_T_camera, w.render(name).world_T_camera
            shift = b[:3, 3] - a[:3, 3]
            angle = math.degrees(math.acos(np.clip((np.trace(a[:3, :3].T @ b[:3, :3]) - 1) / 2, -1, 1)))
            assert 0 < np.abs(shift).max() <= dr.camera_shift + 1e-9, name
            assert 0 < angle <= dr.camera_turn_deg + 1e-6, name
            drawn_shift, drawn_turn = w.domain.cameras[name]
            np.testing.assert_allclose(shift, drawn_shift, atol=1e-6)
    finally:
        w.close()


def test_jittered_pose_turns_in_place():
    pose = np.eye(4)
    pose[:3, 3] = (1.0, 2.0, 3.0)
    out = jittered_pose(pose, (0.01, 0.0, 0.0), (0.0, 0.0, 90.0))
    np.testing.assert_allclose(out[:3, 3], (1.01, 2.0, 3.0))
    np.testing.assert_allclose(out[:3, 0], (0.0, 1.0, 0.0), atol=1e-12)


def test_pixel_noise_is_drawn_per_image_and_repeats_from_the_seed(plain):
    base = plain.render("front").rgb.astype(float)
    w = _world("noise")
    try:
        first, second = w.render("front").rgb.astype(float), w.render("front").rgb.astype(float)
        std = w.domain.noise_std
        assert 2.0 <= std <= 8.0
        residual = first - base
        inside = (base > 30).all(axis=2) & (base < 225).all(axis=2)  # away from clipping
        assert abs(residual[inside].std() - std) < 0.15 * std
        assert abs(residual[inside].mean()) < 0.5
        assert np.abs(first - second).max() > 0  # a new draw per image
    finally:
        w.close()
    again = _world("noise")
    try:
        np.testing.assert_array_equal(again.render("front").rgb, first.astype(np.uint8))
    finally:
        again.close()


def test_the_pose_axis_widens_the_manipulated_objects_window_only():
    spec = SceneSpec(objects=(
        ObjectSpec("mug", "mug", 1, Window(center=(0.5, -0.1), size=(0.16, 0.16), yaw=(0.2, 0.8))),
        ObjectSpec("plate", "plate", 2, Window(center=(0.5, 0.2), size=(0.1, 0.1))),
        ObjectSpec("cube", "cube", 3, Relative("on", "plate")),
    ))
    wide = widen_windows(spec, domain_randomization("table1"), {"mug", "cube"})
    mug = wide.object("mug").placement
    assert mug.size == (0.30, 0.30) and mug.center == (0.5, -0.1)
    assert mug.yaw == pytest.approx((0.5 - math.radians(30), 0.5 + math.radians(30)))
    assert wide.object("plate") == spec.object("plate")  # not manipulated
    assert wide.object("cube") == spec.object("cube")  # follows its reference
    assert widen_windows(spec, domain_randomization("visual"), {"mug"}) is spec
    with pytest.raises(KeyError, match="kettle"):
        widen_windows(spec, domain_randomization("table1"), {"kettle"})


def test_the_pose_axis_reaches_beyond_the_tasks_window():
    task = get_task(TASK)
    own = task.scene(0).object(task.target_name).placement
    spread = []
    for seed in range(30):
        spec = widen_windows(task.scene(seed), domain_randomization("table1"), {task.target_name})
        xy = sample_scene(spec, seed).object(task.target_name).pose[:2, 3]
        spread.append(np.abs(xy - np.asarray(own.center)).max())
    assert max(spread) > own.size[0] / 2 + 0.02  # placements the task's own 16 cm never makes
    assert max(spread) <= 0.15 + 1e-9


def test_a_run_records_its_draw_and_repeats_from_its_seed():
    cfg = SpineConfig(seed=SEED, randomize="table1", execute=False)
    a, b = run_task(TASK, cfg), run_task(TASK, cfg)
    domain = a.randomization["domain"]
    assert domain["axes"] == ",".join(AXES) and domain["pose"] == {"window_m": 0.3, "yaw_deg": 60.0}
    assert {"texture", "background", "lighting", "camera", "noise"} <= set(domain)
    assert a.randomization == b.randomization and a.selected == b.selected
    assert "randomized: pose,texture" in a.summary()
    assert "domain" not in run_task(TASK, SpineConfig(seed=SEED, execute=False)).randomization
    assert "domain" in RESERVED_NAMES  # no object can take the record's key
