"""Point clouds between numpy and ``sensor_msgs/PointCloud2``: x, y, z plus named float32 fields.

Clouds in the graph are unorganised (height 1), little-endian float32, dense. Region clouds carry
one extra field per grounded region (1 inside, 0 outside), named after the region, so a viewer
can colour by any of them and the planner can split them back into per-region point sets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def to_cloud(
    points: np.ndarray, header: Header, fields: Mapping[str, np.ndarray] | None = None
) -> PointCloud2:
    """``points`` (N, 3) and per-point ``fields`` (each (N,)) as one PointCloud2."""
    pts = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    extra = dict(fields or {})
    for name, values in extra.items():
        if not _NAME.match(name) or name in ("x", "y", "z"):
            raise ValueError(f"bad point field name {name!r}")
        if np.shape(values) != (len(pts),):
            raise ValueError(f"field {name!r} has shape {np.shape(values)}, need ({len(pts)},)")
    names = ["x", "y", "z", *extra]
    data = np.empty((len(pts), len(names)), dtype="<f4")
    data[:, :3] = pts
    for i, values in enumerate(extra.values()):
        data[:, 3 + i] = np.asarray(values, dtype=np.float32)
    msg = PointCloud2()
    msg.header = header
    msg.height, msg.width = 1, len(pts)
    msg.fields = [
        PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1) for i, n in enumerate(names)
    ]
    msg.is_bigendian = False
    msg.point_step = 4 * len(names)
    msg.row_step = msg.point_step * len(pts)
    msg.is_dense = bool(np.all(np.isfinite(data)))
    msg.data = data.tobytes()
    return msg


def from_cloud(msg: PointCloud2) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The points (N, 3) and the extra float32 fields of a cloud written by :func:`to_cloud`."""
    if msg.is_bigendian:
        raise ValueError("big-endian point clouds are not supported")
    n = msg.width * msg.height
    if n == 0:
        return np.empty((0, 3)), {f.name: np.empty(0) for f in msg.fields if f.name not in ("x", "y", "z")}
    for f in msg.fields:
        if f.datatype != PointField.FLOAT32 or f.count != 1:
            raise ValueError(f"field {f.name!r} is not a single float32")
    dtype = np.dtype(
        {
            "names": [f.name for f in msg.fields],
            "formats": ["<f4"] * len(msg.fields),
            "offsets": [f.offset for f in msg.fields],
            "itemsize": msg.point_step,
        }
    )
    rows = np.frombuffer(bytes(msg.data), dtype=dtype, count=n)
    names = {f.name for f in msg.fields}
    if not {"x", "y", "z"} <= names:
        raise ValueError(f"cloud lacks x, y, z fields (has {sorted(names)})")
    points = np.stack([rows["x"], rows["y"], rows["z"]], axis=1).astype(float)
    extra = {f.name: rows[f.name].astype(float) for f in msg.fields if f.name not in ("x", "y", "z")}
    return points, extra
