"""QoS profiles of the graph contract, by name (see :mod:`afford_ros.contract`).

``sensor``: reliable, keep last 2, volatile: only the newest frames matter, but best effort
lost a third of the 640x480 frames between two processes with Fast DDS on these machines
(bench/results/bench_camera_stream.txt) and reliable lost none; realsense2_camera's default
QoS is reliable as well. ``reliable``: reliable, keep last 10, volatile;
``latched``: reliable, transient local, keep last 1, so a node that starts late still gets the
latest state (extrinsics, object names, the chosen grasp).
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from afford_ros.contract import QosName

_PROFILES: dict[str, tuple[ReliabilityPolicy, DurabilityPolicy, int]] = {
    "sensor": (ReliabilityPolicy.RELIABLE, DurabilityPolicy.VOLATILE, 2),
    "reliable": (ReliabilityPolicy.RELIABLE, DurabilityPolicy.VOLATILE, 10),
    "latched": (ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL, 1),
}


def qos_profile(name: QosName | str) -> QoSProfile:
    """A fresh QoSProfile for a contract profile name; ValueError names the known ones."""
    try:
        reliability, durability, depth = _PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown QoS profile {name!r}; known: {sorted(_PROFILES)}") from None
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=reliability, durability=durability
    )
