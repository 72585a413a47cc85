"""The generic antipodal sampler on a box whose answer is known: the baseline grasp estimator
of the counterfactual evaluation must propose real two-face squeezes, or the comparison with
affordance-guided grasps measures a broken baseline instead of a missing affordance."""

from __future__ import annotations

import numpy as np
import pytest

from afford_planner.antipodal import (
    AntipodalConfig,
    antipodal_pairs,
    estimate_normals,
    sample_antipodal_grasps,
)

SIZE = np.array([0.04, 0.06, 0.10])  # x, y within the 8 cm stroke; z is not
CENTRE = np.array([0.5, 0.0, 0.05])


def box_surface(size: np.ndarray, centre: np.ndarray, step: float = 0.004) -> np.ndarray:
    """Points on all six faces of an axis-aligned box, ``step`` apart."""
    half = size / 2
    faces = []
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]
        gu = np.arange(-half[u], half[u] + 1e-9, step)
        gv = np.arange(-half[v], half[v] + 1e-9, step)
        uu, vv = np.meshgrid(gu, gv)
        for sign in (-1.0, 1.0):
            p = np.zeros((uu.size, 3))
            p[:, u], p[:, v], p[:, axis] = uu.ravel(), vv.ravel(), sign * half[axis]
            faces.append(p)
    return np.unique(np.round(np.vstack(faces), 6), axis=0) + centre


@pytest.fixture(scope="module")
def box() -> np.ndarray:
    return box_surface(SIZE, CENTRE)


def test_pairs_lie_on_opposite_faces(box: np.ndarray) -> None:
    """Each kept pair joins two opposite faces across the thin (x) or middle (y) side: a pair on
    one face, or across the 10 cm side, cannot be closed on by the Franka Hand."""
    cfg = AntipodalConfig(num_seeds=150, seed=3)
    normals = estimate_normals(box, cfg.num_neighbors)
    si, pj, q = antipodal_pairs(box, normals, cfg)
    assert len(si) > 20
    assert np.all(q >= np.cos(np.radians(cfg.friction_cone_deg))) and np.all(q <= 1.0 + 1e-9)
    rel_p, rel_q = box[si] - CENTRE, box[pj] - CENTRE
    delta = rel_q - rel_p
    axis = np.argmax(np.abs(delta), axis=1)
    assert set(axis.tolist()) <= {0, 1}
    rows = np.arange(len(si))
    # Both ends on the faces of that axis, on opposite sides.
    half = SIZE[axis] / 2
    assert np.allclose(np.abs(rel_p[rows, axis]), half, atol=1e-6)
    assert np.allclose(rel_q[rows, axis], -rel_p[rows, axis], atol=1e-6)


def test_grasp_frame_follows_the_pair(box: np.ndarray) -> None:
    """Closing axis along the pair (a box face normal), TCP on the box's mid-plane between the
    faces, opening just over the face distance, approach from above, fingertips above the
    support: the fingers meet both faces at once, the object is not pushed sideways while they
    close, and the hand does not drive into the table."""
    cfg = AntipodalConfig(seed=1)
    grasps = sample_antipodal_grasps(box, cfg)
    assert len(grasps) >= 3
    for g in grasps:
        assert g.source == "generic" and 0.0 <= g.terms["antipodal"] <= 1.0
        y = g.closing_axis
        k = int(np.argmax(np.abs(y)))
        assert k in (0, 1) and abs(y[k]) > 0.99
        assert abs(g.position[k] - CENTRE[k]) < 0.003
        assert g.width == pytest.approx(min(cfg.max_width, SIZE[k] + cfg.width_margin), abs=0.005)
        assert abs(float(g.approach @ y)) < 1e-9
        assert g.approach[2] < -0.99  # horizontal closing axis: straight down
        # Fingertips stay off the surface the box stands on (its lowest point).
        assert g.position[2] >= box[:, 2].min() + cfg.min_tcp_height - 1e-9
    tcps = np.array([g.position for g in grasps])
    d = np.linalg.norm(tcps[:, None] - tcps[None], axis=2) + np.eye(len(tcps))
    assert d.min() >= cfg.suppression_radius - 1e-9
    qs = [g.terms["antipodal"] for g in grasps]
    assert qs == sorted(qs, reverse=True)


def test_seeded_and_limited_by_the_stroke(box: np.ndarray) -> None:
    """The same seed gives the same set (a candidate set must be reproducible to be hashed); an
    object wider than the stroke on every side gets no grasp at all rather than a fake one."""
    a = sample_antipodal_grasps(box, AntipodalConfig(seed=7))
    b = sample_antipodal_grasps(box, AntipodalConfig(seed=7))
    c = sample_antipodal_grasps(box, AntipodalConfig(seed=8))
    assert [g.position.tolist() for g in a] == [g.position.tolist() for g in b]
    assert [g.position.tolist() for g in a] != [g.position.tolist() for g in c]
    wide = box_surface(np.array([0.12, 0.12, 0.12]), CENTRE, step=0.006)
    assert sample_antipodal_grasps(wide, AntipodalConfig(seed=0)) == []


def test_bad_input_is_refused() -> None:
    """A config or cloud that cannot work says so instead of returning an empty, silent set."""
    with pytest.raises(ValueError, match="friction_cone_deg"):
        AntipodalConfig(friction_cone_deg=95.0)
    with pytest.raises(ValueError, match="min_width"):
        AntipodalConfig(min_width=0.1)
    with pytest.raises(ValueError, match="num_neighbors"):
        sample_antipodal_grasps(np.zeros((5, 3)), AntipodalConfig())
