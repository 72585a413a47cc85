"""Tests of depth-only object segmentation (table-plane removal and clustering).

On the real robot the camera gives depth and no object masks; these tests hold the depth path
to the simulator's ground-truth masks on the task scenes, and to exact answers on synthetic
scenes whose geometry is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest

from afford_perception.parser import parse
from afford_perception.segmentation import (
    DepthSegmenterConfig,
    Segment,
    SegmentationError,
    depth_to_world,
    nearest_segment,
    segment_objects,
    segment_points,
)

# Pick-and-place and pour: the two-object skills whose target and receiver must both be cut out.
SCENES = [
    ("put the banana on the plate", 0),
    ("put the banana on the plate", 1),
    ("pour water from the kettle into the bowl", 0),
    ("pour water from the kettle into the bowl", 1),
]


@dataclass(frozen=True)
class View:
    depth: np.ndarray
    K: np.ndarray
    world_T_camera: np.ndarray
    masks: dict[str, np.ndarray]  # ground truth per object, robot, table and "object/part"
    centres: dict[str, np.ndarray]  # true object centres (where a detector would point)


@cache
def rendered(text: str, seed: int) -> View:
    """One simulator render of a task scene, with its ground truth (rendered once per session)."""
    from afford_sim.scene import sample_scene
    from afford_sim.tasks import task_for
    from afford_sim.world import BatchWorld

    task = task_for(parse(text))
    world = BatchWorld(sample_scene(task.scene(seed), seed))
    try:
        obs = world.render(rgb=False)
        names = [o.name for o in world.placed.objects]
        return View(
            depth=obs.depth, K=obs.K, world_T_camera=obs.world_T_camera,
            masks={n: obs.mask(n) for n in [*names, "robot", "table"]}
            | {f"{o}/{p}": obs.mask(o, p) for o, p in obs.labels if o in names},
            centres={n: world.object_center(n) for n in names},
        )
    finally:
        world.close()


def iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max(1, (a | b).sum()))


@pytest.mark.parametrize(("text", "seed"), SCENES)
def test_masks_match_the_simulators_objects(text: str, seed: int) -> None:
    """Each object's mask from depth alone overlaps its true mask (IoU >= 0.8), one segment per
    object: the grasp is planned on this cloud, so a merged or clipped object means a grasp on
    the wrong thing or on air."""
    view = rendered(text, seed)
    segments = segment_objects(view.depth, view.K, view.world_T_camera)
    assert len(segments) == len(view.centres), [s.center.round(3) for s in segments]
    for name, centre in view.centres.items():
        seg = nearest_segment(segments, centre, max_distance=0.1)  # the centre is inside the body
        score = iou(seg.mask, view.masks[name])
        assert score >= 0.8, f"{name}: IoU {score:.3f}"


def test_a_handle_hidden_behind_its_body_stays_with_it() -> None:
    """From the front camera the kettle's handle shows 3-4 cm behind the body's visible
    surface; cut off, it would vanish from the cloud the grasp is grounded on, and the handle is
    what the robot must hold."""
    view = rendered("pour water from the kettle into the bowl", 0)
    segments = segment_objects(view.depth, view.K, view.world_T_camera)
    handle = view.masks["kettle/handle"]
    assert handle.sum() > 50
    kettle = nearest_segment(segments, view.centres["kettle"])
    assert (kettle.mask & handle).sum() >= 0.9 * handle.sum()
    apart = segment_objects(view.depth, view.K, view.world_T_camera, DepthSegmenterConfig(fragment_gap=0.0))
    assert len(apart) == 3, "the scene no longer splits the handle off; pick one that does"


@pytest.mark.parametrize(("text", "seed"), SCENES[::2])
def test_table_and_robot_are_not_segments(text: str, seed: int) -> None:
    """The table is removed and the arm at its ready pose is cropped out: either one taken for
    an object would send the gripper at the table or at itself."""
    view = rendered(text, seed)
    assert view.masks["robot"].sum() > 1000, "the camera should see the arm for this test to mean anything"
    for seg in segment_objects(view.depth, view.K, view.world_T_camera):
        assert (seg.mask & view.masks["table"]).sum() <= 0.01 * seg.mask.sum()
        assert not (seg.mask & view.masks["robot"]).any()
        assert seg.height > 0.01
        np.testing.assert_allclose(seg.plane[:3], [0, 0, 1], atol=1e-3)  # the table top is z = 0
        assert abs(seg.plane[3]) < 1e-3
    # The crop is what keeps the arm out: opened up to the arm's reach, the arm is segmented.
    wide = DepthSegmenterConfig(workspace_min=(-0.3, -0.6, -0.05), workspace_max=(1.0, 0.6, 1.0),
                                max_height=0.9)
    with_arm = segment_objects(view.depth, view.K, view.world_T_camera, wide)
    assert any((s.mask & view.masks["robot"]).any() for s in with_arm)


def test_depth_noise_keeps_objects_whole() -> None:
    """A real sensor's 1 mm depth noise must not shatter the objects or leave table speckle as
    objects (the kettle and bowl stand well clear of the noise band)."""
    view = rendered("pour water from the kettle into the bowl", 0)
    rng = np.random.default_rng(0)
    noisy = (view.depth + rng.normal(0, 0.001, view.depth.shape) * (view.depth > 0)).astype(np.float32)
    cfg = DepthSegmenterConfig(plane_distance=0.004, min_height=0.006)
    segments = segment_objects(noisy, view.K, view.world_T_camera, cfg)
    assert len(segments) == 2
    for name, centre in view.centres.items():
        assert iou(nearest_segment(segments, centre).mask, view.masks[name]) >= 0.8


# --- synthetic scenes with exact answers ---------------------------------------------------------

TABLE_Z = 0.1  # not 0: nothing may assume the table height


def top_down_view(boxes: list[tuple[slice, slice, float]], distance: float = 0.8,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Depth image of a table seen straight down from ``distance`` above it, with flat-topped
    blocks (rows, cols, height) standing on it, plus K and the camera pose."""
    K = np.array([[500.0, 0, 319.5], [0, 500.0, 239.5], [0, 0, 1]])
    pose = np.eye(4)
    # OpenCV camera looking down: z forward = -world z, x right = -world y, y down = -world x.
    pose[:3, :3] = np.array([[0, -1, 0], [-1, 0, 0], [0, 0, -1]], dtype=float)
    pose[:3, 3] = (0.5, 0.0, TABLE_Z + distance)
    depth = np.full((480, 640), distance, dtype=np.float32)
    for rows, cols, height in boxes:
        depth[rows, cols] = distance - height
    return depth, K, pose


SYNTH_CONFIG = DepthSegmenterConfig(workspace_min=(0.0, -0.5, 0.0), workspace_max=(1.0, 0.5, 0.6))
BOXES = [(slice(100, 180), slice(100, 200), 0.08), (slice(300, 360), slice(400, 520), 0.05)]


def test_blocks_on_a_plane_are_found_exactly() -> None:
    """Two blocks on a raised table: exactly two segments, masks equal to the blocks' pixels,
    heights measured from the fitted plane: the grasp depth and the place height come from
    these numbers."""
    depth, K, pose = top_down_view(BOXES)
    segments = segment_objects(depth, K, pose, SYNTH_CONFIG)
    assert len(segments) == 2
    by_height = sorted(segments, key=lambda s: -s.height)
    for seg, (rows, cols, height) in zip(by_height, BOXES, strict=True):
        expected = np.zeros(depth.shape, dtype=bool)
        expected[rows, cols] = True
        np.testing.assert_array_equal(seg.mask, expected)
        assert seg.height == pytest.approx(height, abs=1e-5)
        assert seg.bounds[:, 2] == pytest.approx([TABLE_Z + height] * 2, abs=1e-5)
        np.testing.assert_array_equal(seg.indices, np.flatnonzero(expected))
    np.testing.assert_allclose(segments[0].plane, [0, 0, 1, -TABLE_Z], atol=1e-6)


def test_point_cloud_input_returns_the_rows_of_each_box() -> None:
    """Clouds from another source (a fused or filtered cloud) segment the same way; indices
    point back into the caller's array so per-point data (colour, labels) can follow."""
    rng = np.random.default_rng(1)
    table = np.c_[rng.uniform(0.1, 0.9, (20000, 2)) - [0, 0.4], np.full(20000, TABLE_Z)]
    box_a = np.c_[rng.uniform([0.3, -0.2], [0.4, -0.1], (1500, 2)), np.full(1500, TABLE_Z + 0.06)]
    box_b = np.c_[rng.uniform([0.6, 0.1], [0.7, 0.25], (1500, 2)), np.full(1500, TABLE_Z + 0.12)]
    cloud = np.vstack([table, box_a, box_b, [[np.nan, 0, 0]]])
    segments = segment_points(cloud, SYNTH_CONFIG)
    assert len(segments) == 2 and all(s.mask is None for s in segments)
    found = {round(s.height, 4): set(s.indices.tolist()) for s in segments}
    assert found[0.06] == set(range(20000, 21500))
    assert found[0.12] == set(range(21500, 23000))
    assert nearest_segment(segments, [0.65, 0.2, TABLE_Z]).height == pytest.approx(0.12)


def test_depth_to_world_matches_the_simulators_backprojection() -> None:
    """The real path must back-project exactly as the simulator's camera model does, or masks
    painted back into the image would be shifted."""
    from afford_sim.camera import backproject

    view = rendered(*SCENES[0])
    points, flat = depth_to_world(view.depth, view.K, view.world_T_camera)
    np.testing.assert_allclose(points, backproject(view.depth, view.K, view.world_T_camera), atol=1e-9)
    assert flat.size == int((view.depth > 0).sum())


# --- errors --------------------------------------------------------------------------------------


def test_unusable_depth_images_are_rejected_with_the_reason() -> None:
    """A dead or misconfigured camera must fail loudly, not yield an empty scene."""
    _, K, pose = top_down_view([])
    with pytest.raises(ValueError, match="no valid pixel"):
        segment_objects(np.zeros((480, 640), np.float32), K, pose)
    with pytest.raises(ValueError, match="no valid pixel"):
        segment_objects(np.full((480, 640), np.nan, np.float32), K, pose)
    with pytest.raises(ValueError, match="float metres"):
        segment_objects(np.full((480, 640), 800, np.uint16), K, pose)
    with pytest.raises(ValueError, match="negative"):
        segment_objects(np.full((480, 640), -1.0, np.float32), K, pose)
    with pytest.raises(ValueError, match="3x3"):
        segment_objects(np.ones((480, 640), np.float32), np.eye(4), pose)
    with pytest.raises(ValueError, match=r"\(H, W\)"):
        segment_objects(np.ones(10, np.float32), K, pose)


def test_nan_pixels_are_missing_readings_not_errors() -> None:
    """ROS float depth images mark invalid pixels NaN (REP 118); holes must not break the rest."""
    depth, K, pose = top_down_view(BOXES)
    depth[::7, ::5] = np.nan
    assert len(segment_objects(depth, K, pose, SYNTH_CONFIG)) == 2


def test_empty_table_and_missing_table_are_distinct_errors() -> None:
    """'Nothing on the table' and 'no table in view' need different fixes on the robot."""
    depth, K, pose = top_down_view([])
    with pytest.raises(SegmentationError, match="nothing stands on the table"):
        segment_objects(depth, K, pose, SYNTH_CONFIG)
    # Tip the camera 90 deg: the only plane it sees is a wall.
    rng = np.random.default_rng(0)
    wall = np.c_[np.full(5000, 0.5), rng.uniform(-0.4, 0.4, 5000), rng.uniform(0.05, 0.5, 5000)]
    with pytest.raises(SegmentationError, match="no table plane"):
        segment_points(wall, SYNTH_CONFIG)
    with pytest.raises(SegmentationError, match="workspace box"):
        segment_points(wall + [5.0, 0, 0], SYNTH_CONFIG)


def test_nearest_segment_refuses_far_or_no_segments() -> None:
    """Picking the wrong object because it was the only one left is worse than stopping."""
    depth, K, pose = top_down_view(BOXES)
    segments = segment_objects(depth, K, pose, SYNTH_CONFIG)
    with pytest.raises(ValueError, match="beyond max_distance"):
        nearest_segment(segments, [5.0, 5.0, 0.0], max_distance=0.1)
    with pytest.raises(ValueError, match="no segments"):
        nearest_segment([], [0, 0, 0])
    assert isinstance(nearest_segment(segments, segments[1].center), Segment)
    assert nearest_segment(segments, segments[1].center) is segments[1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"voxel_size": 0.0}, "voxel_size"),
        ({"cluster_eps": 0.005}, "voxel diagonal"),
        ({"min_height": 0.5}, "min_height < max_height"),
        ({"up_tolerance_deg": 90.0}, "up_tolerance_deg"),
        ({"up": (0.0, 0.0, 0.0)}, "non-zero"),
        ({"workspace_min": (1.0, 0.0, 0.0), "workspace_max": (0.0, 1.0, 1.0)}, "empty"),
        ({"min_cluster_voxels": 0}, "min_cluster_voxels"),
        ({"fragment_ratio": 1.0}, "fragment_ratio"),
        ({"fragment_gap": -0.01}, "fragment_gap"),
        ({"plane_distance": math.nan}, "plane_distance"),
    ],
)
def test_config_rejects_inconsistent_values(kwargs: dict[str, object], message: str) -> None:
    """A mistyped threshold should fail at start-up, not as a silent empty scene mid-task."""
    with pytest.raises(ValueError, match=message):
        DepthSegmenterConfig(**kwargs)  # type: ignore[arg-type]
