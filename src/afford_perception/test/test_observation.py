"""Frames, masks and object clouds: the step from an RGB-D image to what grounding consumes.

The scene is ray-cast analytically (a table plane and two boxes seen by a pinhole camera
looking down at the table, as a wrist-free fixed RealSense does), so every expected point is
known exactly and the tests run in milliseconds without a renderer.
"""

from __future__ import annotations

import numpy as np
import pytest

from afford_perception.observation import (
    CloudConfig,
    DepthMaskSource,
    Frame,
    MaskSource,
    depth_from_millimetres,
    make_mask_source,
    masks_from_labels,
    object_cloud,
    pick_target,
    scene_cloud,
)
from afford_perception.segmentation import DepthSegmenterConfig, SegmentationError

W, H = 200, 150
K = np.array([[170.0, 0.0, (W - 1) / 2], [0.0, 170.0, (H - 1) / 2], [0.0, 0.0, 1.0]])
# Boxes standing on the table (z = 0): (min corner, max corner) in the base frame.
BIG = (np.array([0.50, 0.05, 0.0]), np.array([0.60, 0.15, 0.10]))
SMALL = (np.array([0.44, -0.14, 0.0]), np.array([0.49, -0.09, 0.06]))


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """base_T_camera of an optical frame at ``eye`` looking at ``target`` (image x along -y base)."""
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    pose = np.eye(4)
    pose[:3, :3] = np.stack([x, y, z], axis=1)
    pose[:3, 3] = eye
    return pose


POSE = look_at(np.array([0.05, 0.0, 0.65]), np.array([0.52, 0.0, 0.0]))


def render(boxes: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Depth (metres along the optical axis) and a label image (i + 1 = boxes[i], 0 = table)."""
    v, u = np.mgrid[0:H, 0:W]
    rays_cam = np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u, float)], -1)
    rays = rays_cam.reshape(-1, 3) @ POSE[:3, :3].T  # t along these rays is optical-axis depth
    origin = POSE[:3, 3]
    best = np.where(rays[:, 2] < 0, -origin[2] / np.where(rays[:, 2] < 0, rays[:, 2], -1.0), np.inf)
    label = np.zeros(len(rays), dtype=np.int32)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, (lo, hi) in enumerate(boxes):
            t1, t2 = (lo - origin) / rays, (hi - origin) / rays
            near = np.nanmax(np.minimum(t1, t2), axis=1)
            far = np.nanmin(np.maximum(t1, t2), axis=1)
            hit = (far >= near) & (near > 0) & (near < best)
            best[hit], label[hit] = near[hit], i + 1
    depth = np.where(np.isfinite(best), best, 0.0).reshape(H, W).astype(np.float32)
    return depth, label.reshape(H, W)


@pytest.fixture(scope="module")
def scene() -> tuple[Frame, np.ndarray]:
    depth, labels = render([BIG, SMALL])
    rgb = np.zeros((H, W, 3), dtype=np.uint8)
    return Frame(rgb=rgb, depth=depth, K=K, base_T_camera=POSE, stamp=1.5), labels


def test_frame_rejects_what_a_misconfigured_driver_sends() -> None:
    """A millimetre image passed as metres, a colour/depth size mismatch (depth not aligned), or
    a projection matrix where a pose belongs must fail at the frame, not as a wrong grasp."""
    rgb, depth = np.zeros((4, 5, 3), np.uint8), np.ones((4, 5), np.float32)
    Frame(rgb, depth, K, np.eye(4), 0.0)
    with pytest.raises(ValueError, match="depth_from_millimetres"):
        Frame(rgb, np.ones((4, 5), np.uint16), K, np.eye(4), 0.0)
    with pytest.raises(ValueError, match="aligned"):
        Frame(rgb, np.ones((4, 6), np.float32), K, np.eye(4), 0.0)
    with pytest.raises(ValueError, match="uint8"):
        Frame(rgb.astype(np.float32), depth, K, np.eye(4), 0.0)
    with pytest.raises(ValueError, match="negative"):
        Frame(rgb, -depth, K, np.eye(4), 0.0)
    with pytest.raises(ValueError, match="rigid"):
        Frame(rgb, depth, K, np.diag([2.0, 2.0, 2.0, 1.0]), 0.0)
    with pytest.raises(ValueError, match="rigid"):
        Frame(rgb, depth, K, np.diag([1.0, 1.0, -1.0, 1.0]), 0.0)  # a reflection, not a rotation
    with pytest.raises(ValueError, match="K must"):
        Frame(rgb, depth, np.full((3, 3), np.nan), np.eye(4), 0.0)
    with pytest.raises(ValueError, match="stamp"):
        Frame(rgb, depth, K, np.eye(4), float("nan"))


def test_frame_maps_nan_depth_to_no_return_and_is_read_only() -> None:
    """ROS float depth marks no return with NaN (REP 118); downstream treats 0 as no return.
    Frames are shared by several consumers, so none may edit another's input."""
    depth = np.array([[0.5, np.nan], [np.inf, 0.0]], dtype=np.float64)
    frame = Frame(np.zeros((2, 2, 3), np.uint8), depth, K, np.eye(4), 3.0)
    assert frame.depth.dtype == np.float32
    assert frame.depth.tolist() == [[0.5, 0.0], [0.0, 0.0]]
    assert np.isnan(depth[0, 1])  # the caller's array is untouched
    with pytest.raises(ValueError):
        frame.depth[0, 0] = 1.0


def test_depth_from_millimetres() -> None:
    """The contract's 16UC1 depth is millimetres; 0 must stay 'no return', not become a point."""
    mm = np.array([[0, 1234], [65535, 1]], dtype=np.uint16)
    m = depth_from_millimetres(mm)
    assert m.dtype == np.float32
    np.testing.assert_allclose(m, [[0.0, 1.234], [65.535, 0.001]], rtol=1e-6)
    with pytest.raises(ValueError, match="uint16"):
        depth_from_millimetres(mm.astype(np.float32))


def test_masks_from_labels_names_each_index_and_refuses_a_stale_name_list() -> None:
    """The simulator's label image and its object list come on two topics; if they are from
    different scenes (after a reset), naming a mask wrongly would grasp the wrong object."""
    labels = np.array([[0, 1], [2, 2]], dtype=np.uint16)
    masks = masks_from_labels(labels, ["mug", "rack", "bowl"])
    assert masks["mug"].tolist() == [[False, True], [False, False]]
    assert masks["rack"].sum() == 2 and not masks["bowl"].any()
    with pytest.raises(ValueError, match="same scene"):
        masks_from_labels(labels, ["mug"])
    with pytest.raises(ValueError, match="unique"):
        masks_from_labels(labels, ["mug", "mug"])


def test_object_cloud_points_lie_on_the_object_in_the_base_frame(scene: tuple[Frame, np.ndarray]) -> None:
    """Back-projection with the hand-eye pose: a wrong axis convention would put the cloud
    somewhere else entirely, and the arm would grasp air."""
    frame, labels = scene
    masks = masks_from_labels(labels, ["big", "small"])
    cloud = object_cloud(frame, masks["big"], "box")
    assert cloud.category == "box" and len(cloud) > 500
    lo, hi = BIG
    assert np.all(cloud.points >= lo - 1e-4) and np.all(cloud.points <= hi + 1e-4)
    # The camera sees the top face and the two faces towards it.
    assert cloud.points[:, 2].max() == pytest.approx(hi[2], abs=1e-4)
    assert np.all(cloud.center > lo) and np.all(cloud.center < hi)


def test_object_cloud_drops_flying_pixels(scene: tuple[Frame, np.ndarray]) -> None:
    """Depth edges give pixels halfway between object and background; a mask that includes them
    puts phantom points in the cloud, which grounding then scores as part of the object."""
    frame, labels = scene
    depth = frame.depth.copy()
    rows, cols = np.nonzero(labels == 1)
    pick = np.random.default_rng(0).choice(len(rows), 6, replace=False)
    depth[rows[pick], cols[pick]] += 0.15  # 15 cm behind the surface, isolated in 3-D
    noisy = Frame(frame.rgb, depth, frame.K, frame.base_T_camera, frame.stamp)
    cloud = object_cloud(noisy, labels == 1, "box")
    lo, hi = BIG
    assert np.all(cloud.points >= lo - 1e-4) and np.all(cloud.points <= hi + 1e-4)
    assert len(cloud) == int((labels == 1).sum()) - 6
    kept = object_cloud(noisy, labels == 1, "box", CloudConfig(outlier_neighbors=0))
    assert len(kept) == int((labels == 1).sum())  # the test is off: the phantoms stay


def test_object_cloud_refuses_too_few_points(scene: tuple[Frame, np.ndarray]) -> None:
    """An object hidden or out of view must stop the trial with a reason, not ground noise."""
    frame, labels = scene
    sliver = np.zeros_like(labels, dtype=bool)
    sliver[np.nonzero(labels == 2)[0][:10], np.nonzero(labels == 2)[1][:10]] = True
    with pytest.raises(ValueError, match=r"too few points for 'cup'.* 10 pixels, 10 with depth"):
        object_cloud(frame, sliver, "cup")
    with pytest.raises(ValueError, match="bool"):
        object_cloud(frame, labels, "cup")  # a label image, not a mask


def test_scene_cloud_is_what_stands_on_the_table_minus_the_target(scene: tuple[Frame, np.ndarray]) -> None:
    """The planner avoids these points; the target must not be among them (the gripper has to
    touch it) and the table must not be (it is a box of its own in the planner)."""
    frame, labels = scene
    both = scene_cloud(frame, min_height=0.01)
    assert both[:, 2].min() > 0.01 - 1e-6
    in_big = np.all((both >= BIG[0] - 1e-3) & (both <= BIG[1] + 1e-3), axis=1)
    in_small = np.all((both >= SMALL[0] - 1e-3) & (both <= SMALL[1] + 1e-3), axis=1)
    assert np.all(in_big | in_small) and in_big.any() and in_small.any()
    rest = scene_cloud(frame, exclude=labels == 1, min_height=0.01)
    assert len(rest) > 20
    assert np.all(np.all((rest >= SMALL[0] - 1e-3) & (rest <= SMALL[1] + 1e-3), axis=1))
    # Thinned to one point per 5 mm voxel: far fewer than the pixels.
    assert len(both) < int((labels > 0).sum())


def test_depth_mask_source_finds_both_objects(scene: tuple[Frame, np.ndarray]) -> None:
    """The real camera's default segmentation must separate the objects standing on the table."""
    frame, labels = scene
    source = make_mask_source("depth")
    assert isinstance(source, DepthMaskSource) and isinstance(source, MaskSource)
    segments = source.segments(frame)
    assert len(segments) == 2
    for seg, truth in zip(segments, (labels == 1, labels == 2), strict=True):  # largest first
        iou = (seg & truth).sum() / (seg | truth).sum()
        assert iou > 0.85, iou
    with pytest.raises(KeyError, match="known: depth, sam"):
        make_mask_source("detector")
    with pytest.raises(ValueError, match="not both"):
        DepthMaskSource(DepthSegmenterConfig(), voxel_size=0.01)


def test_depth_mask_source_reports_an_empty_table() -> None:
    """An empty table (or a camera that misses it) is something the operator must hear about."""
    depth, _ = render([])
    frame = Frame(np.zeros((H, W, 3), np.uint8), depth, K, POSE, 0.0)
    with pytest.raises(SegmentationError, match="nothing stands on the table"):
        make_mask_source("depth").segments(frame)


def test_pick_target_largest_counts_square_metres_not_pixels() -> None:
    """A small object near the camera covers more pixels than a large one behind it; the rule
    must pick the object that is really larger."""
    depth = np.full((20, 20), 1.0, np.float32)
    depth[:10] = 0.5
    frame = Frame(np.zeros((20, 20, 3), np.uint8), depth, K, np.eye(4), 0.0)
    near = np.zeros((20, 20), bool)
    near[:10, :10] = True  # 100 pixels at 0.5 m: 25 units of area
    far = np.zeros((20, 20), bool)
    far[10:16, :10] = True  # 60 pixels at 1.0 m: 60 units
    assert pick_target([near, far], frame, "largest") == 1
    centred = np.zeros((20, 20), bool)
    centred[8:12, 8:12] = True
    assert pick_target([near, far, centred], frame, "nearest_image_center") == 2
    with pytest.raises(ValueError, match="nothing was found"):
        pick_target([], frame)
    with pytest.raises(ValueError, match="unknown target rule"):
        pick_target([near], frame, "leftmost")
