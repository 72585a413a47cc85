"""The grasp samplers' vector helpers (``afford_core.grasp``)."""

from __future__ import annotations

import numpy as np

from afford_core.grasp import cross3, hand_frame


def test_cross3_is_np_cross_bit_for_bit() -> None:
    """``cross3`` replaces ``np.cross`` in the samplers for speed; the proposals (and every
    checked-in run drawn from them) stay the same only if it is bitwise ``np.cross``, float32
    and mixed inputs included."""
    rng = np.random.default_rng(0)
    kinds = (np.float64, np.float32)
    for _ in range(2000):
        for ka in kinds:
            for kb in kinds:
                a, b = rng.normal(size=3).astype(ka), rng.normal(size=3).astype(kb)
                got, want = cross3(a, b), np.cross(a, b)
                assert got.dtype == want.dtype and np.array_equal(got, want), (a, b)
    # Anything else is np.cross's.
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    assert np.array_equal(cross3(a, b), np.cross(a, b))
    assert np.array_equal(cross3(np.array([1, 0, 0]), np.array([0, 1, 0])), [0, 0, 1])


def test_hand_frame_is_a_rotation() -> None:
    approach, closing = np.array([0.0, 0.0, -1.0]), np.array([0.0, 1.0, 0.0])
    rot = hand_frame(approach, closing)
    assert np.allclose(rot @ rot.T, np.eye(3)) and np.isclose(np.linalg.det(rot), 1.0)
