"""Point clouds with region fields between numpy and sensor_msgs/PointCloud2."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sensor_msgs")

from std_msgs.msg import Header  # noqa: E402

from afford_ros.nodes.clouds import from_cloud, to_cloud  # noqa: E402


def test_round_trip_keeps_points_and_region_fields() -> None:
    """The planner splits the grounded regions back out of perception's cloud: a field lost or
    shifted by one point would move the grasp region."""
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(500, 3))
    handle = (rng.random(500) > 0.7).astype(float)
    msg = to_cloud(pts, Header(frame_id="fr3_link0"), {"handle": handle, "body": 1 - handle})
    assert [f.name for f in msg.fields] == ["x", "y", "z", "handle", "body"]
    assert msg.point_step == 20 and msg.width == 500 and msg.height == 1
    back, fields = from_cloud(msg)
    np.testing.assert_allclose(back, pts, atol=1e-6)
    np.testing.assert_array_equal(fields["handle"], handle)
    np.testing.assert_array_equal(fields["body"], 1 - handle)


def test_empty_cloud_and_bad_fields() -> None:
    """An empty destination cloud is legal; a field with the wrong length or a bad name is not."""
    back, fields = from_cloud(to_cloud(np.zeros((0, 3)), Header()))
    assert back.shape == (0, 3) and fields == {}
    with pytest.raises(ValueError, match="shape"):
        to_cloud(np.zeros((3, 3)), Header(), {"handle": np.zeros(2)})
    with pytest.raises(ValueError, match="name"):
        to_cloud(np.zeros((3, 3)), Header(), {"drawer handle": np.zeros(3)})
