"""camera: the real world's RGB-D driver, a RealSense (live or a recording) onto the contract topics.

Publishes what ``sim_world`` publishes for the camera (colour ``rgb8``, depth aligned to colour
``16UC1`` in millimetres, the colour ``CameraInfo``, and the latched hand-eye extrinsics), so
perception cannot tell which world it is in. The simulator's ground-truth topics (``/sim/*``)
have no real counterpart and are not published. On a full ROS 2 install the upstream
``realsense2_camera`` driver can replace this node by remapping its topics onto the contract's
names (``align_depth.enable:=true``) and publishing the extrinsics separately.

The frames come from :mod:`afford_perception.realsense`; this node only holds parameters, turns
arrays into messages, and runs the blocking frame loop in a thread of its own so that the
executor stays free for parameter and graph services.

Stamps: messages carry this node's clock at the moment the frameset arrived, not the sensor's
clock, so a recording played now looks like a camera now and the staleness check downstream
compares like with like.
"""

from __future__ import annotations

import faulthandler
import math
import os
import sys
import threading
import traceback
from typing import NoReturn

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image

from afford_perception.realsense import CameraError, RealSenseCamera, RealSenseConfig, RealSenseFrame
from afford_ros import contract
from afford_ros.nodes.convert import camera_info, image_to_msg, pose_to_msg
from afford_ros.nodes.spin import clean_shutdown, quiet_sigint, spin_until_shutdown
from afford_ros.qos import qos_profile

COLOR_TOPIC = "/camera/color/image_raw"
DEPTH_TOPIC = "/camera/aligned_depth_to_color/image_raw"
INFO_TOPIC = "/camera/color/camera_info"
EXTRINSICS_TOPIC = "/camera/extrinsics"
UNCALIBRATED = [math.nan] * 7


#: Seconds shutdown waits for the RealSense pipeline to stop.
_STOP_TIMEOUT_S = 3.0
#: Seconds the whole teardown may take (frame thread, pipeline, ROS) before the stacks are
#: dumped and the process exits 1; the waits inside it add up to well under this.
_TEARDOWN_LIMIT_S = 12.0


def extrinsics_matrix(values: list[float] | tuple[float, ...]) -> np.ndarray | None:
    """4x4 base_T_camera from ``x y z qx qy qz qw``; ``None`` when not calibrated (any NaN).

    Raises:
        ValueError: not 7 numbers, an infinite value, or a quaternion far from unit length
            (a typo in the calibration file rather than rounding).
    """
    v = np.asarray(values, dtype=np.float64)
    if v.shape != (7,):
        raise ValueError(f"extrinsics must be 7 numbers x y z qx qy qz qw, got {len(v)}")
    if np.any(np.isnan(v)):
        return None
    if not np.all(np.isfinite(v)):
        raise ValueError(f"extrinsics must be finite, got {v.tolist()}")
    q = v[3:]
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > 1e-3:
        raise ValueError(f"extrinsics quaternion (qx qy qz qw) must be unit length, got norm {norm:.4f}")
    x, y, z, w = q / norm
    pose = np.eye(4)
    pose[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    pose[:3, 3] = v[:3]
    return pose


def camera_info_msg(frame: RealSenseFrame, stamp: Time) -> CameraInfo:
    """CameraInfo of the colour image (which the aligned depth shares).

    RealSense colour lenses report (inverse) Brown-Conrady with five coefficients; they are
    passed on under ``plumb_bob``, the ROS name of the five-coefficient model (they are zeros on
    the D400 colour sensors, whose images the firmware already rectifies).
    """
    h, w = frame.rgb.shape[:2]
    msg = camera_info(frame.K, w, h, contract.CAMERA_FRAME, stamp)
    msg.d = [float(c) for c in frame.distortion]
    return msg


def frame_messages(frame: RealSenseFrame, stamp: Time) -> tuple[Image, Image, CameraInfo]:
    """Colour (rgb8), aligned depth (16UC1, mm) and camera info of one frameset, one stamp."""
    color = image_to_msg(frame.rgb, "rgb8", contract.CAMERA_FRAME, stamp)
    depth = image_to_msg(frame.depth_millimetres(), "16UC1", contract.CAMERA_FRAME, stamp)
    return color, depth, camera_info_msg(frame, stamp)


def pose_msg(pose: np.ndarray, stamp: Time) -> PoseStamped:
    """The extrinsics as a PoseStamped in the base frame."""
    msg = PoseStamped()
    msg.header.frame_id, msg.header.stamp = contract.BASE_FRAME, stamp
    msg.pose = pose_to_msg(pose)
    return msg


class CameraNode(Node):
    def __init__(self) -> None:
        super().__init__("camera")

        def declare(name: str, default: object, description: str) -> None:
            self.declare_parameter(name, default, ParameterDescriptor(description=description))

        declare("serial", "", "Serial number of the RealSense to open; empty: the first connected.")
        declare("bag_file", "", "Recording (.bag or .db3) to play instead of a live camera; empty: live.")
        declare("width", 640, "Image width asked of a live camera (a recording keeps its own).")
        declare("height", 480, "Image height asked of a live camera.")
        declare("fps", 30.0, "Frame rate asked of a live camera (whole frames per second).")
        declare(
            "extrinsics",
            UNCALIBRATED,
            "Pose of the colour optical frame in fr3_link0: x y z qx qy qz qw (m, unit quaternion), "
            "from hand-eye calibration. NaN: not calibrated, nothing is published on /camera/extrinsics "
            "and perception refuses to run.",
        )
        declare("loop_playback", False, "Replay bag_file forever; otherwise publishing stops at its end.")
        p = self.get_parameter
        self.config = RealSenseConfig(
            serial=str(p("serial").value),
            bag_file=str(p("bag_file").value),
            width=int(p("width").value),
            height=int(p("height").value),
            fps=float(p("fps").value),
            repeat=bool(p("loop_playback").value),
        )
        values = [float(x) for x in p("extrinsics").value]
        pose = extrinsics_matrix(values)

        sensor = qos_profile(contract.topic(COLOR_TOPIC).qos)
        self.pub_color = self.create_publisher(Image, COLOR_TOPIC, sensor)
        self.pub_depth = self.create_publisher(
            Image, DEPTH_TOPIC, qos_profile(contract.topic(DEPTH_TOPIC).qos)
        )
        self.pub_info = self.create_publisher(
            CameraInfo, INFO_TOPIC, qos_profile(contract.topic(INFO_TOPIC).qos)
        )
        self.pub_extrinsics = self.create_publisher(
            PoseStamped, EXTRINSICS_TOPIC, qos_profile(contract.topic(EXTRINSICS_TOPIC).qos)
        )
        if pose is None:
            self.get_logger().warn(
                "extrinsics not set: images only; perception needs the hand-eye calibration"
            )
        else:
            self.pub_extrinsics.publish(pose_msg(pose, self.get_clock().now().to_msg()))

        self.camera = RealSenseCamera(self.config)
        self.camera.start()
        source = (
            f"recording {self.config.bag_file}"
            if self.config.bag_file
            else (f"{self.camera.device_name or 'RealSense'} {self.camera.serial}")
        )
        self.get_logger().info(f"streaming from {source}")
        self.published = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="camera_frames", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and rclpy.ok():
            try:
                frame = self.camera.read()
            except CameraError as err:
                if self._stop.is_set():
                    return
                # A stall is reported and retried: downstream sees stale frames and stops the trial.
                self.get_logger().error(str(err), throttle_duration_sec=5.0)
                continue
            if frame is None:
                self.get_logger().info(
                    f"recording ended after {self.published} framesets; publishing stopped"
                )
                return
            try:
                messages = frame_messages(frame, self.get_clock().now().to_msg())
                for pub, msg in zip((self.pub_color, self.pub_depth, self.pub_info), messages, strict=True):
                    pub.publish(msg)
            except Exception:
                if self._stop.is_set() or not rclpy.ok():
                    return  # shutting down (Ctrl-C, SIGTERM) while a frameset was on its way out
                raise
            self.published += 1

    def destroy_node(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.config.timeout_s + 1.0)
        # Bounded: librealsense can block stopping a looped playback, and a node that does not
        # exit on SIGTERM gets killed by the launcher with its device half released.
        if not self.camera.stop(timeout=_STOP_TIMEOUT_S):
            self.get_logger().warning(
                f"the RealSense pipeline did not stop within {_STOP_TIMEOUT_S:.0f} s; exiting without it"
            )
        super().destroy_node()


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the camera node until Ctrl-C or SIGTERM; the process ends here, never returning.

    librealsense's teardown can deadlock: its playback and dispatcher threads wait on each
    other (seen here twice in about 220 stops of a looped recording), and a process with
    librealsense threads stuck may then hang in the library's destructors at interpreter exit.
    So the node stops what it owns within bounded waits, shuts ROS down, and leaves with
    ``os._exit``: the kernel releases the device and the file, and no vendor destructor can
    hold a lab's Ctrl-C. Should the teardown itself stall, every thread's stack is written to
    stderr and the process exits 1 after ``_TEARDOWN_LIMIT_S``.
    """
    quiet_sigint()
    rclpy.init(args=argv if argv is not None else sys.argv)
    node = None
    code = 0
    try:
        with clean_shutdown():
            # An executor of its own, built before the node: rclpy.spin's global one is gone
            # when Ctrl-C or SIGTERM lands while the node is starting (opening the camera takes
            # a while), and spin then fails on None.
            executor = SingleThreadedExecutor()
            node = CameraNode()
            executor.add_node(node)
            spin_until_shutdown(executor)
    except (CameraError, ValueError) as err:
        # Startup faults (no camera, bad file, bad parameters): say why and exit non-zero.
        print(f"camera: {err}", file=sys.stderr)
        code = 1
    except Exception:
        traceback.print_exc()  # still through the bounded teardown and os._exit below
        code = 1
    finally:
        faulthandler.dump_traceback_later(_TEARDOWN_LIMIT_S, exit=True)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
