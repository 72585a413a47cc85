"""The training-time cloud changes (``affordance.augment``): labels follow the points, each change
does what it says, and the switched-off configuration is a rigid yaw."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from afford_perception.affordance.augment import YAW_AND_SCALE, AugmentConfig, augment_cloud, augment_clouds

P = 1024
OFF = replace(YAW_AND_SCALE, scale=(1.0, 1.0))


def _mug(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A cylinder body (label 0, 80 %) with a box handle to its +x side (label 1), bbox-centred."""
    n_body = int(0.8 * P)
    ang = rng.uniform(0, 2 * np.pi, n_body)
    body = np.stack([0.04 * np.cos(ang), 0.04 * np.sin(ang), rng.uniform(0, 0.1, n_body)], axis=1)
    handle = rng.uniform([0.04, -0.005, 0.02], [0.07, 0.005, 0.08], size=(P - n_body, 3))
    pts = np.concatenate([body, handle])
    pts -= 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    return pts.astype(np.float32), np.r_[np.zeros(n_body, int), np.ones(P - n_body, int)]


def _extent(p: np.ndarray) -> np.ndarray:
    return p.max(axis=0) - p.min(axis=0)


def _spread(p: np.ndarray) -> float:
    """RMS distance from the centroid: a size that a turn about z leaves alone."""
    return float(np.sqrt(((p - p.mean(axis=0)) ** 2).sum(axis=1).mean()))


def test_switched_off_it_is_a_rigid_turn_about_z_keeping_every_point() -> None:
    rng = np.random.default_rng(0)
    pts, labels = _mug(rng)
    out, index = augment_cloud(pts, labels, rng, OFF)
    np.testing.assert_array_equal(index, np.arange(P))
    sample = rng.choice(P, 64, replace=False)
    d_in = np.linalg.norm(pts[sample, None] - pts[None, sample], axis=2)
    d_out = np.linalg.norm(out[sample, None] - out[None, sample], axis=2)
    np.testing.assert_allclose(d_out, d_in, atol=1e-5)
    np.testing.assert_allclose(out[:, 2], pts[:, 2], atol=1e-5)  # z stays up


def test_the_default_changes_shapes_yet_keeps_shapes_sizes_and_centres_sane() -> None:
    rng = np.random.default_rng(1)
    pts, labels = _mug(rng)
    batch = np.stack([pts] * 16)
    out, index = augment_clouds(batch, np.stack([labels] * 16), rng, AugmentConfig())
    assert out.shape == (16, P, 3) and out.dtype == np.float32 and index.shape == (16, P)
    assert np.all(np.isfinite(out)) and index.min() >= 0 and index.max() < P
    centres = 0.5 * (out.min(axis=1) + out.max(axis=1))
    np.testing.assert_allclose(centres, 0.0, atol=1e-6)
    size = np.linalg.norm(_extent(pts))
    sizes = np.linalg.norm(out.max(axis=1) - out.min(axis=1), axis=1)
    assert np.all(sizes > 0.5 * size) and np.all(sizes < 2.0 * size)
    # Not all the same: different clouds drew different changes.
    assert len({round(float(s), 5) for s in sizes}) > 8


def test_the_same_seed_gives_the_same_clouds() -> None:
    pts, labels = _mug(np.random.default_rng(2))
    a = augment_cloud(pts, labels, np.random.default_rng(7), AugmentConfig())
    b = augment_cloud(pts, labels, np.random.default_rng(7), AugmentConfig())
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_an_occluder_hides_one_side_and_the_cloud_is_refilled_from_what_is_left() -> None:
    rng = np.random.default_rng(3)
    pts, labels = _mug(rng)
    cfg = replace(OFF, p_occlude=1.0, occlude_fraction=(0.3, 0.3))
    out, index = augment_cloud(pts, labels, rng, cfg)
    kept = np.unique(index)
    assert abs(len(kept) - 0.7 * P) <= 2
    assert len(out) == P
    # Refilled by repeating kept points: every output point is one of them.
    assert set(index.tolist()) == set(kept.tolist())


def test_an_occluder_that_would_leave_too_little_is_not_applied() -> None:
    rng = np.random.default_rng(4)
    pts, labels = _mug(rng)
    cfg = replace(OFF, p_occlude=1.0, occlude_fraction=(0.9, 0.9), min_kept=0.4)
    _, index = augment_cloud(pts, labels, rng, cfg)
    np.testing.assert_array_equal(index, np.arange(P))


def test_holes_remove_balls_of_points() -> None:
    rng = np.random.default_rng(5)
    pts, labels = _mug(rng)
    cfg = replace(OFF, p_holes=1.0, holes=3, hole_radius=(0.1, 0.1))
    _, index = augment_cloud(pts, labels, rng, cfg)
    missing = np.setdiff1d(np.arange(P), index)
    assert 0 < len(missing) < 0.6 * P


def test_rescaling_a_part_grows_that_part_only() -> None:
    """A thicker or longer handle: the chosen part's extent scales, the other part's does not."""
    rng = np.random.default_rng(6)
    pts, labels = _mug(rng)
    cfg = replace(OFF, p_part_scale=1.0, part_scale=(1.5, 1.5))
    grew = 0
    for _ in range(6):
        out, index = augment_cloud(pts, labels, rng, cfg)
        lab = labels[index]
        for part in (0, 1):
            ratio = _spread(out[lab == part]) / _spread(pts[labels == part])
            assert ratio == pytest.approx(1.0, abs=1e-4) or ratio == pytest.approx(1.5, abs=1e-3)
            grew += ratio > 1.1
    assert grew == 6  # exactly one part per cloud


def test_flying_pixels_and_noise_move_points_along_one_ray() -> None:
    rng = np.random.default_rng(8)
    pts, labels = _mug(rng)
    cfg = replace(OFF, p_flying=1.0, flying_fraction=(0.02, 0.02), flying_m=(0.03, 0.05))
    out, index = augment_cloud(pts, labels, rng, cfg)
    np.testing.assert_array_equal(index, np.arange(P))
    # Undo the yaw and recentring by aligning on the unmoved majority: the moved points' offsets
    # are all parallel (one viewing ray) and 3-5 cm long.
    moved = np.flatnonzero(
        np.abs(np.linalg.norm(out - out.mean(0), axis=1) - np.linalg.norm(pts - pts.mean(0), axis=1)) > 0.005
    )
    assert 5 <= len(moved) <= int(0.02 * P)


def test_taper_widens_one_end_and_narrows_the_other() -> None:
    rng = np.random.default_rng(9)
    pts, labels = _mug(rng)
    cfg = replace(OFF, p_taper=1.0, taper=0.35)
    out, index = augment_cloud(pts, labels, rng, cfg)
    body = labels[index] == 0
    z = out[body, 2]
    r = np.linalg.norm(out[body, :2] - np.median(out[body, :2], axis=0), axis=1)
    low, high = r[z < np.quantile(z, 0.1)].mean(), r[z > np.quantile(z, 0.9)].mean()
    assert abs(high - low) > 0.002  # a straight cylinder had equal radii at both ends


@pytest.mark.parametrize(
    "bad",
    [
        {"p_taper": 1.5},
        {"scale": (1.2, 1.0)},
        {"scale": (0.0, 1.0)},
        {"occlude_fraction": (0.5, 1.0)},
        {"holes": -1},
        {"noise_m": (-0.001, 0.002)},
    ],
)
def test_bad_settings_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        AugmentConfig(**bad)


def test_bad_clouds_are_refused() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="non-empty"):
        augment_cloud(np.zeros((0, 3)), np.zeros(0, int), rng, AugmentConfig())
    with pytest.raises(ValueError, match="one entry per point"):
        augment_cloud(np.zeros((5, 3)), np.zeros(4, int), rng, AugmentConfig())
