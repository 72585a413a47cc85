"""numpy <-> ROS message conversions for images, camera info and poses (cv_bridge is not available).

Images: ``rgb8`` (H, W, 3) uint8, ``16UC1`` (H, W) uint16 (depth in millimetres, labels),
``32FC1`` (H, W) float32, ``mono8`` (H, W) uint8; little-endian, rows packed (``step`` = W x
pixel size). The message's ``data`` is set from an ``array.array`` so that field checking
(``ROS_PYTHON_CHECK_FIELDS=1``) does not walk a megabyte element by element.
"""

from __future__ import annotations

import array

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Pose
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from afford_core.robots import DEFAULT_ROBOT, RobotDescription
from afford_ros import contract

#: Encoding -> (numpy dtype, channels).
ENCODINGS: dict[str, tuple[np.dtype, int]] = {
    "rgb8": (np.dtype(np.uint8), 3),
    "bgr8": (np.dtype(np.uint8), 3),
    "mono8": (np.dtype(np.uint8), 1),
    "16UC1": (np.dtype("<u2"), 1),
    "mono16": (np.dtype("<u2"), 1),
    "32FC1": (np.dtype("<f4"), 1),
}


def stamp_from_ns(ns: int) -> Time:
    """A ``builtin_interfaces/Time`` from nanoseconds since the epoch."""
    return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))


def image_to_msg(image: np.ndarray, encoding: str, frame: str, stamp: Time) -> Image:
    """An Image message of ``image`` (shape and dtype must fit ``encoding``)."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unsupported encoding {encoding!r}; supported: {sorted(ENCODINGS)}")
    dtype, channels = ENCODINGS[encoding]
    arr = np.asarray(image)
    shape_ok = arr.ndim == 2 if channels == 1 else (arr.ndim == 3 and arr.shape[2] == channels)
    if not shape_ok or arr.dtype.kind != dtype.kind or arr.dtype.itemsize != dtype.itemsize:
        raise ValueError(
            f"{encoding} needs (H, W{'' if channels == 1 else f', {channels}'}) {dtype}, "
            f"got {arr.shape} {arr.dtype}"
        )
    arr = np.ascontiguousarray(arr, dtype=dtype)
    msg = Image()
    msg.header = Header(stamp=stamp, frame_id=frame)
    msg.height, msg.width = int(arr.shape[0]), int(arr.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = int(arr.shape[1] * channels * dtype.itemsize)
    data = array.array("B")
    data.frombytes(arr.tobytes())
    msg.data = data
    return msg


def image_problem(msg: Image) -> str:
    """Why ``msg`` cannot be read as an image ("" when it can): an unknown encoding, or data
    that does not hold its rows."""
    if msg.encoding not in ENCODINGS:
        return f"unsupported encoding {msg.encoding!r}; supported: {sorted(ENCODINGS)}"
    dtype, channels = ENCODINGS[msg.encoding]
    row = msg.width * channels * dtype.itemsize
    if msg.step < row or len(msg.data) < msg.step * msg.height:
        return f"image data too short: {len(msg.data)} bytes for {msg.height} rows of step {msg.step}"
    return ""


def msg_to_image(msg: Image) -> np.ndarray:
    """The (H, W[, C]) array of an Image message (a copy, writable)."""
    problem = image_problem(msg)
    if problem:
        raise ValueError(problem)
    dtype, channels = ENCODINGS[msg.encoding]
    if msg.is_bigendian:
        dtype = dtype.newbyteorder(">")
    row = msg.width * channels * dtype.itemsize
    raw = np.frombuffer(msg.data, dtype=np.uint8, count=msg.step * msg.height).reshape(msg.height, msg.step)
    pixels = raw[:, :row].copy().view(dtype)
    shape = (msg.height, msg.width) if channels == 1 else (msg.height, msg.width, channels)
    return pixels.reshape(shape).astype(dtype.newbyteorder("="), copy=False)


def depth_to_millimetres(depth_m: np.ndarray) -> np.ndarray:
    """uint16 millimetres (16UC1) from float metres; 0 (no return) stays 0, far values saturate."""
    d = np.asarray(depth_m, dtype=np.float32)
    mm = np.rint(np.nan_to_num(d, nan=0.0, posinf=0.0, neginf=0.0) * 1000.0)
    return np.clip(mm, 0, 65535).astype(np.uint16)


def camera_info(K: np.ndarray, width: int, height: int, frame: str, stamp: Time) -> CameraInfo:
    """Pinhole CameraInfo (plumb_bob, zero distortion) for intrinsics ``K``."""
    k = np.asarray(K, dtype=float).reshape(3, 3)
    msg = CameraInfo()
    msg.header = Header(stamp=stamp, frame_id=frame)
    msg.width, msg.height = int(width), int(height)
    msg.distortion_model = "plumb_bob"
    msg.d = [0.0] * 5
    msg.k = [float(v) for v in k.ravel()]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    p = np.zeros((3, 4))
    p[:, :3] = k
    msg.p = [float(v) for v in p.ravel()]
    return msg


def pose_to_msg(matrix: np.ndarray) -> Pose:
    """A geometry_msgs Pose from a 4x4 rigid transform."""
    from scipy.spatial.transform import Rotation

    m = np.asarray(matrix, dtype=float)
    if m.shape != (4, 4):
        raise ValueError(f"expected a 4x4 transform, got {m.shape}")
    x, y, z, w = Rotation.from_matrix(m[:3, :3]).as_quat()
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in m[:3, 3])
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = (
        float(x),
        float(y),
        float(z),
        float(w),
    )
    return pose


def matrix_from_pose(pose: Pose) -> np.ndarray:
    """The 4x4 transform of a geometry_msgs Pose (its quaternion is normalised)."""
    from scipy.spatial.transform import Rotation

    q = np.array([pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w], float)
    n = float(np.linalg.norm(q))
    if not np.isfinite(n) or n < 1e-9:
        raise ValueError(f"pose has no valid orientation quaternion: {q}")
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat(q / n).as_matrix()
    m[:3, 3] = [pose.position.x, pose.position.y, pose.position.z]
    return m


def trajectory_msg(
    times: np.ndarray,
    qs: np.ndarray,
    stamp: Time | None = None,
    robot: RobotDescription | str = DEFAULT_ROBOT,
) -> JointTrajectory:
    """Timed joint waypoints (``times`` (T,) s from the start, ``qs`` (T, n)) as a JointTrajectory
    of the robot's arm joints (the FR3's by default) in its base frame."""
    msg = JointTrajectory()
    msg.header = Header(stamp=stamp or Time(), frame_id=contract.base_frame(robot))
    msg.joint_names = list(contract.arm_joints(robot))
    for t, q in zip(times, qs, strict=True):
        sec = int(t)
        msg.points.append(
            JointTrajectoryPoint(
                positions=[float(v) for v in q],
                time_from_start=Duration(sec=sec, nanosec=int((t - sec) * 1e9)),
            )
        )
    return msg
