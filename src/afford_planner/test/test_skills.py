"""Skill geometry that does not need a simulator: carried clouds, tilts about a lip, configs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from afford_planner.skills.motions import HeldObject, SkillConfig, _axis_xy, _rotated_about, _translated


def _pose(rotvec: tuple[float, float, float], xyz: tuple[float, float, float]) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    t[:3, 3] = xyz
    return t


def test_held_object_moves_rigidly_with_the_tcp() -> None:
    """After the grasp the robot knows its object only as the cloud it saw, carried with the hand:
    moving the TCP must move every point (and every named part) by the same rigid motion."""
    grasp = _pose((0.1, -0.2, 0.3), (0.4, 0.1, 0.05))
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(50, 3)) * 0.03 + grasp[:3, 3]
    held = HeldObject.from_world(grasp, pts, {"handle": pts[:10]})
    assert np.allclose(held.in_world(grasp), pts)
    moved = _pose((0.0, 0.5, -0.2), (0.6, -0.1, 0.3))
    motion = moved @ np.linalg.inv(grasp)
    expected = pts @ motion[:3, :3].T + motion[:3, 3]
    assert np.allclose(held.in_world(moved), expected)
    assert np.allclose(held.in_world(moved, "handle"), expected[:10])


def test_tilt_about_the_lip_keeps_the_lip_in_place() -> None:
    """Pouring rotates the container about its lip so the stream stays over the bowl."""
    pose = _pose((0, 0, 0.4), (0.5, 0.0, 0.3))
    lip = np.array([0.55, 0.02, 0.25])
    axis = np.array([0.0, 1.0, 0.0])
    tilted = _rotated_about(pose, axis, np.deg2rad(80), lip)
    lip_in_tcp = np.linalg.inv(pose) @ np.append(lip, 1.0)
    assert np.allclose((tilted @ lip_in_tcp)[:3], lip)
    angle = np.degrees(np.arccos(np.clip(np.dot(tilted[:3, 2], pose[:3, 2]), -1, 1)))
    assert angle == pytest.approx(80.0, abs=1e-6)
    assert np.allclose(_translated(pose, np.array([0, 0, 0.1]))[:3, 3], pose[:3, 3] + [0, 0, 0.1])


def test_axis_of_a_half_seen_cylinder_is_its_true_axis() -> None:
    """One camera sees half a mug; the median of those points sits off the axis by a third of the
    radius, enough to thread a handle beside the hook instead of onto it."""
    theta = np.linspace(-np.pi / 2, np.pi / 2, 200)
    r = 0.032
    pts = np.column_stack([0.4 + r * np.cos(theta), -0.1 + r * np.sin(theta), np.linspace(0, 0.09, 200)])
    assert np.allclose(_axis_xy(pts), [0.4, -0.1], atol=1e-6)
    assert np.linalg.norm(np.median(pts[:, :2], axis=0) - [0.4, -0.1]) > 0.01


@pytest.mark.parametrize("field", ["pregrasp_offset", "lift_height", "settle_s", "retreat", "pull_distance"])
def test_skill_config_refuses_non_positive_distances(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SkillConfig(**{field: 0.0})


def test_skill_config_refuses_bad_speed_and_tilt() -> None:
    with pytest.raises(ValueError, match="vel_scale"):
        SkillConfig(vel_scale=1.5)
    with pytest.raises(ValueError, match="pour_tilt_deg"):
        SkillConfig(pour_tilt_deg=190)
