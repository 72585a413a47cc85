"""Push contacts: behind the object along the push, low enough not to tip it, on the region."""

from __future__ import annotations

import numpy as np
import pytest

from afford_planner.push import PushConfig, push_direction, push_goal, push_rotation, sample_push_contacts


def _can(radius: float = 0.05, height: float = 0.14, centre: tuple[float, float] = (0.5, -0.1),
         n: int = 4000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 2 * np.pi, n)
    z = rng.uniform(0, height, n)
    return np.column_stack([centre[0] + radius * np.cos(a), centre[1] + radius * np.sin(a), z])


def _centre(pts: np.ndarray) -> np.ndarray:
    return 0.5 * (pts.min(0) + pts.max(0))


def test_contacts_sit_behind_the_object_low_and_pitched_towards_the_push() -> None:
    can = _can()
    c = _centre(can)
    d = push_direction(c, c + [0.0, 0.2, 0.0])
    assert np.allclose(d, [0.0, 1.0, 0.0])
    cands = sample_push_contacts(can, can, c, d, width=0.08)
    assert cands
    base = float(np.percentile(can[:, 2], 1))  # heights count from the lowest points seen
    for g in cands:
        behind = float((g.position - c) @ d)
        assert -0.05 - 0.011 <= behind <= -0.05 + 0.001, behind  # 1 cm behind the back
        assert g.position[2] - base == pytest.approx(0.025)  # low: the contact height
        assert g.approach[2] < 0 and g.approach @ d > 0  # down and forwards: fingertips lead
        assert abs(g.closing_axis @ d) < 1e-9  # fingers spread across the push
        assert g.width == 0.08 and g.source == "push"


def test_a_flat_box_is_pushed_below_its_top_and_a_narrow_post_not_at_all() -> None:
    rng = np.random.default_rng(1)
    box = np.column_stack([rng.uniform(0.4, 0.6, 3000), rng.uniform(-0.2, -0.05, 3000),
                           rng.uniform(0, 0.05, 3000)])
    c = _centre(box)
    cands = sample_push_contacts(box, box, c, np.array([0.0, 1.0, 0.0]), width=0.08)
    base = float(np.percentile(box[:, 2], 1))
    assert cands and {round(g.position[2] - base, 4) for g in cands} == {0.025}
    # A 4 cm box: 2.5 cm is above 55% of its height, where the fingertips ride over its edge.
    flat = box[box[:, 2] <= 0.04]
    assert sample_push_contacts(flat, flat, _centre(flat), np.array([0.0, 1.0, 0.0]), width=0.08) == []
    # A tall, narrow post (its base 2 cm deep each way) would tip: no contact.
    post = _can(radius=0.02, height=0.3)
    assert sample_push_contacts(post, post, _centre(post), np.array([0.0, 1.0, 0.0]), width=0.08) == []


def test_no_contact_where_the_region_does_not_reach_the_back() -> None:
    can = _can()
    c = _centre(can)
    d = np.array([0.0, 1.0, 0.0])
    front_half = can[(can - c) @ d > 0]  # the region is the half the push would not touch
    assert sample_push_contacts(front_half, can, c, d, width=0.08) == []
    assert sample_push_contacts(can, can, c, np.zeros(3), width=0.08) == []
    assert sample_push_contacts(np.empty((0, 3)), can, c, d, width=0.08) == []


def test_push_goal_is_the_middle_of_the_receiving_points() -> None:
    rng = np.random.default_rng(2)
    a, r = rng.uniform(0, 2 * np.pi, 2000), 0.07 * np.sqrt(rng.uniform(0, 1, 2000))
    disc = np.column_stack([0.45 + r * np.cos(a), 0.1 + r * np.sin(a), np.full(2000, 0.001)])
    assert np.allclose(push_goal(disc)[:2], [0.45, 0.1], atol=0.005)
    with pytest.raises(ValueError, match="points"):
        push_goal(np.empty((0, 3)))


def test_push_rotation_is_a_right_handed_frame() -> None:
    for pitch in (0.0, 30.0, 60.0):
        rot = push_rotation(np.array([np.cos(0.3), np.sin(0.3), 0.0]), pitch)
        assert np.allclose(rot.T @ rot, np.eye(3)) and np.linalg.det(rot) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [dict(height=0.0), dict(height=-0.01), dict(tip_share=0.0),
                                 dict(offsets=()), dict(pitches_deg=(90.0,)), dict(gap=-0.01),
                                 dict(band=0.0)])
def test_config_refuses_nonsense(bad: dict) -> None:
    with pytest.raises(ValueError):
        PushConfig(**bad)


def test_push_goal_finds_a_mat_half_hidden_behind_something_tall() -> None:
    """A shelf beside a round mat hides its far part from the camera: the seen points end at a
    straight edge. The middle of what is seen lies off towards the seen part (the push stopped
    short of the mat); the circle through the seen outline is the whole mat's."""
    rng = np.random.default_rng(3)
    a, r = rng.uniform(0, 2 * np.pi, 3000), 0.07 * np.sqrt(rng.uniform(0, 1, 3000))
    disc = np.column_stack([0.42 + r * np.cos(a), 0.05 + r * np.sin(a), np.full(3000, 0.001)])
    seen = disc[disc[:, 1] < 0.05 + 0.01]  # the far 6 cm of a 14 cm mat hidden
    lo, hi = np.percentile(seen[:, :2], 2, axis=0), np.percentile(seen[:, :2], 98, axis=0)
    assert abs(0.5 * (lo + hi)[1] - 0.05) > 0.02  # the seen extent's middle: 2-3 cm off
    assert np.allclose(push_goal(seen)[:2], [0.42, 0.05], atol=0.006)
