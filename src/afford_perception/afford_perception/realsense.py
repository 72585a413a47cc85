"""Intel RealSense RGB-D frames through ``pyrealsense2``, from a live camera or a recorded file.

The ROS-free core of the real world's ``camera`` node: open a device (by serial number, or the
first one connected) or play a recording, align depth to the colour image, and hand out plain
arrays with the colour intrinsics. The node only converts them to messages.

Why align here: the graph contract carries depth *aligned to colour* (one K for both images),
as ``realsense2_camera`` does with ``align_depth.enable``; ``rs.align`` reprojects every depth
pixel with the factory calibration stored in the device (or in the recording).

Recordings. librealsense 2.59 records to a rosbag2 SQLite file (``.db3``) and plays both that
and the older ROS 1 ``.bag`` files. :func:`write_recording` writes a ``.db3`` from arrays
through a ``software_device`` and the librealsense recorder, the same writer a camera recording
uses, so the playback path can be exercised (and a simulated scene replayed through the real
camera code) without hardware. Playback may lose the first framesets of a file (seen here: 0-2
of 10, varying run to run), played before the pipeline's synchroniser has matched a colour and
depth pair; after that every frameset arrives, colour and depth from the same instant. Lead a
short recording with a few spare frames.

Colour comes out as RGB. A live camera is asked for ``rgb8``; a recording keeps the format it
was made with, so ``bgr8``/``rgba8``/``bgra8`` are converted here and other formats (YUYV, raw)
are refused with the format's name.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from afford_perception.observation import Frame, depth_from_millimetres

#: Recording file endings librealsense plays back.
RECORDING_SUFFIXES: tuple[str, ...] = (".bag", ".db3")


class CameraError(RuntimeError):
    """The camera or recording cannot be opened or has stopped delivering frames."""


@dataclass(frozen=True)
class RealSenseConfig:
    """Where frames come from and in what shape.

    Attributes:
        serial: Serial number of the camera to open; empty: the first one connected.
            Ignored when ``bag_file`` is set.
        bag_file: A recording (``.bag`` or ``.db3``) to play instead of a live camera.
        width: Colour and depth image width asked of a live camera (a recording keeps its own).
        height: Image height asked of a live camera.
        fps: Frame rate asked of a live camera; the D400 series offers 6, 15, 30, 60 and 90.
        timeout_s: Longest wait for one frameset before the camera counts as stalled.
        real_time: Play a recording at its recorded rate; ``False`` delivers frames as fast
            as they are read (tests, batch processing).
        repeat: Loop a recording forever; otherwise :meth:`RealSenseCamera.read` returns
            ``None`` at its end.
    """

    serial: str = ""
    bag_file: str = ""
    width: int = 640
    height: int = 480
    fps: float = 30.0
    timeout_s: float = 2.0
    real_time: bool = True
    repeat: bool = False

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"width and height must be positive, got {self.width}x{self.height}")
        if not (math.isfinite(self.fps) and self.fps > 0):
            raise ValueError(f"fps must be positive, got {self.fps}")
        if round(self.fps) != self.fps:
            raise ValueError(
                f"fps must be a whole number of frames per second for a RealSense, got {self.fps}"
            )
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.bag_file and Path(self.bag_file).suffix not in RECORDING_SUFFIXES:
            raise ValueError(f"bag_file must end in one of {RECORDING_SUFFIXES}, got {self.bag_file!r}")


@dataclass(frozen=True, eq=False)  # eq=False: array fields
class RealSenseFrame:
    """One colour image with the depth aligned to it.

    Attributes:
        rgb: (H, W, 3) uint8 colour image, RGB order.
        depth: (H, W) uint16 depth aligned to ``rgb``, in units of ``depth_scale``; 0 = no return.
        depth_scale: Metres per depth unit (the sensor's ``depth_units``; 0.001 by default).
        K: (3, 3) colour intrinsics (OpenCV convention), valid for ``depth`` too.
        distortion_model: librealsense's name of the colour lens model (``"brown_conrady"``,
            ``"inverse_brown_conrady"``, ``"none"``, ...).
        distortion: The model's five coefficients.
        stamp: Sensor timestamp of the frameset in seconds (its clock: see ``timestamp_domain``).
        timestamp_domain: librealsense's name of the clock (``"global_time"``, ``"hardware_clock"``,
            ``"system_time"``).
        frame_number: The colour frame's counter.
    """

    rgb: np.ndarray
    depth: np.ndarray
    depth_scale: float
    K: np.ndarray
    distortion_model: str
    distortion: tuple[float, ...]
    stamp: float
    timestamp_domain: str
    frame_number: int

    def depth_millimetres(self) -> np.ndarray:
        """(H, W) uint16 depth in millimetres (the contract's 16UC1 encoding)."""
        if abs(self.depth_scale - 1e-3) < 1e-9:
            return self.depth
        mm = np.rint(self.depth.astype(np.float64) * (self.depth_scale * 1e3))
        return np.clip(mm, 0, np.iinfo(np.uint16).max).astype(np.uint16)

    def to_frame(self, base_T_camera: np.ndarray) -> Frame:
        """The :class:`~afford_perception.observation.Frame` perception consumes."""
        return Frame(
            rgb=self.rgb,
            depth=depth_from_millimetres(self.depth, self.depth_scale),
            K=self.K,
            base_T_camera=base_T_camera,
            stamp=self.stamp,
        )


def _rs() -> Any:
    try:
        import pyrealsense2 as rs
    except ImportError as exc:  # the package is a dependency; say what to install if it is missing
        raise CameraError(
            "pyrealsense2 is not installed: pip install pyrealsense2 (needs libusb-1.0)"
        ) from exc
    return rs


def intrinsics_matrix(intr: Any) -> np.ndarray:
    """3x3 K from an ``rs.intrinsics`` (librealsense uses the same pixel-centre convention)."""
    return np.array([[intr.fx, 0.0, intr.ppx], [0.0, intr.fy, intr.ppy], [0.0, 0.0, 1.0]])


class RealSenseCamera:
    """RGB-D framesets, depth aligned to colour, from a live RealSense or a recording.

    Use as a context manager, or call :meth:`start` and :meth:`stop`::

        with RealSenseCamera(RealSenseConfig(bag_file="scene.db3")) as cam:
            for frame in cam.frames():
                ...
    """

    def __init__(self, config: RealSenseConfig | None = None) -> None:
        self.config = config or RealSenseConfig()
        self._pipeline: Any = None
        self._align: Any = None
        self.depth_scale = 1e-3
        self.device_name = ""
        self.serial = ""
        #: Framesets skipped because colour and depth were not from the same instant.
        self.mismatched = 0

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Open the device or file and start streaming.

        Raises:
            CameraError: the file does not exist, no camera is connected, the serial is not
                among the connected ones (the message lists them), or the streams cannot start.
        """
        rs = _rs()
        cfg = self.config
        rs_config = rs.config()
        if cfg.bag_file:
            path = Path(cfg.bag_file).expanduser()
            if not path.is_file():
                raise CameraError(f"recording {path} does not exist")
            rs_config.enable_device_from_file(str(path), repeat_playback=cfg.repeat)
            # A recording has the streams it has; asking for others would fail to resolve.
            rs_config.enable_stream(rs.stream.depth)
            rs_config.enable_stream(rs.stream.color)
        else:
            connected = {d.get_info(rs.camera_info.serial_number): d for d in rs.context().query_devices()}
            if not connected:
                raise CameraError("no RealSense camera is connected (check the USB 3 cable and udev rules)")
            if cfg.serial and cfg.serial not in connected:
                raise CameraError(f"no RealSense with serial {cfg.serial!r}; connected: {sorted(connected)}")
            if cfg.serial:
                rs_config.enable_device(cfg.serial)
            fps = int(cfg.fps)
            rs_config.enable_stream(rs.stream.depth, cfg.width, cfg.height, rs.format.z16, fps)
            rs_config.enable_stream(rs.stream.color, cfg.width, cfg.height, rs.format.rgb8, fps)
        pipeline = rs.pipeline()
        try:
            profile = pipeline.start(rs_config)
        except RuntimeError as exc:
            source = f"recording {cfg.bag_file}" if cfg.bag_file else f"camera {cfg.serial or '(first)'}"
            raise CameraError(f"cannot start {source}: {exc}") from exc
        device = profile.get_device()
        if cfg.bag_file:
            device.as_playback().set_real_time(cfg.real_time)
        self.depth_scale = float(device.first_depth_sensor().get_depth_scale())
        if device.supports(rs.camera_info.name):  # a recording made without device info lacks it
            self.device_name = device.get_info(rs.camera_info.name)
        if device.supports(rs.camera_info.serial_number):
            self.serial = device.get_info(rs.camera_info.serial_number)
        self._align = rs.align(rs.stream.color)
        self._pipeline = pipeline

    def stop(self, timeout: float | None = None) -> bool:
        """Stop streaming and release the device or file (idempotent).

        Args:
            timeout: Most seconds to wait for librealsense's ``pipeline.stop()``, or None to
                wait as long as it takes. Stopping a looped playback can block inside
                librealsense; a node shutting down must not hang on it.

        Returns:
            False when the stop was still running at ``timeout`` (it goes on in a daemon
            thread), True otherwise.
        """
        if self._pipeline is None:
            return True
        pipeline, self._pipeline = self._pipeline, None
        if timeout is None:
            pipeline.stop()
            return True
        done = threading.Event()

        def stop() -> None:
            try:
                pipeline.stop()
            finally:
                done.set()

        threading.Thread(target=stop, name="realsense_stop", daemon=True).start()
        return done.wait(timeout)

    def __enter__(self) -> RealSenseCamera:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- frames --------------------------------------------------------------------------------

    def read(self) -> RealSenseFrame | None:
        """The next frameset, depth aligned to colour; ``None`` at the end of a recording.

        Raises:
            CameraError: not started, or a live camera delivered nothing for ``timeout_s``.
        """
        if self._pipeline is None:
            raise CameraError("camera not started: call start() or use it as a context manager")
        while True:
            ok, frames = self._pipeline.try_wait_for_frames(int(self.config.timeout_s * 1000))
            if not ok:
                if self.config.bag_file and not self.config.repeat:
                    return None
                raise CameraError(
                    f"no frames for {self.config.timeout_s} s: the camera stalled or was unplugged"
                )
            if self._synchronous(frames):
                break
            self.mismatched += 1
        aligned = self._align.process(frames)
        color, depth = aligned.get_color_frame(), aligned.get_depth_frame()
        if not color or not depth:
            raise CameraError("a frameset lacks colour or depth: both streams are needed")
        return self._convert(color, depth, frames)

    @staticmethod
    def _synchronous(frames: Any) -> bool:
        """Whether the colour and depth of a frameset were taken within half a frame period.

        The pipeline's synchroniser pairs the nearest frames it has, and at a looped recording's
        wrap-around it pairs the last colour with the first depth (seen here). A cloud cut from
        such a pair puts the object where it was, not where it is, so the pair is skipped.
        """
        color, depth = frames.get_color_frame(), frames.get_depth_frame()
        if not color or not depth:
            return True  # reported as missing by read()
        period_ms = 1000.0 / max(1, color.get_profile().fps())
        return abs(color.get_timestamp() - depth.get_timestamp()) <= 0.5 * period_ms

    def frames(self) -> Iterator[RealSenseFrame]:
        """Framesets until a recording ends (forever for a live camera)."""
        while (frame := self.read()) is not None:
            yield frame

    def _convert(self, color: Any, depth: Any, frames: Any) -> RealSenseFrame:
        rs = _rs()
        profile = color.get_profile().as_video_stream_profile()
        intr = profile.get_intrinsics()
        fmt = profile.format()
        image = np.asanyarray(color.get_data())
        if fmt == rs.format.rgb8:
            rgb = image
        elif fmt == rs.format.bgr8:
            rgb = image[..., ::-1]
        elif fmt == rs.format.rgba8:
            rgb = image[..., :3]
        elif fmt == rs.format.bgra8:
            rgb = image[..., 2::-1]
        else:
            raise CameraError(f"colour format {fmt} is not supported; record colour as rgb8 or bgr8")
        depth_image = np.asanyarray(depth.get_data())
        if depth_image.shape != rgb.shape[:2]:
            raise CameraError(f"aligned depth {depth_image.shape} does not match colour {rgb.shape[:2]}")
        return RealSenseFrame(
            # Copies: the arrays view librealsense's buffers, which it reuses once released.
            rgb=np.ascontiguousarray(rgb, dtype=np.uint8).copy(),
            depth=np.array(depth_image, dtype=np.uint16, copy=True),
            depth_scale=self.depth_scale,
            K=intrinsics_matrix(intr),
            distortion_model=str(intr.model).split(".")[-1],
            distortion=tuple(float(c) for c in intr.coeffs),
            stamp=float(frames.get_timestamp()) / 1000.0,
            timestamp_domain=str(frames.get_frame_timestamp_domain()).split(".")[-1],
            frame_number=int(color.get_frame_number()),
        )


def write_recording(
    path: str | Path,
    frames: Iterable[tuple[np.ndarray, np.ndarray]],
    color_K: np.ndarray,
    depth_K: np.ndarray | None = None,
    depth_to_color: np.ndarray | None = None,
    fps: int = 30,
    depth_scale: float = 1e-3,
) -> Path:
    """Record ``(rgb, depth)`` pairs to a librealsense ``.db3`` file, as a camera would.

    Args:
        path: Output file; must end in ``.db3`` (the format librealsense 2.59 writes).
        frames: (H, W, 3) uint8 RGB images and (H, W) uint16 depth images in ``depth_scale``
            units, all of one size each; the depth is in the depth camera's own geometry.
        color_K: Colour intrinsics (3, 3).
        depth_K: Depth intrinsics; default ``color_K``.
        depth_to_color: (4, 4) rigid transform from the depth to the colour optical frame;
            default identity (a simulated camera renders both from one viewpoint).
        fps: Recorded frame rate (timestamps step by ``1/fps``).
        depth_scale: Metres per depth unit, stored as the depth sensor's ``depth_units``.

    Returns:
        ``path``. Playback may lose the first framesets (module docstring).
    """
    rs = _rs()
    path = Path(path)
    if path.suffix != ".db3":
        raise ValueError(f"librealsense records to .db3 files, got {path}")
    depth_K = color_K if depth_K is None else depth_K
    depth_to_color = np.eye(4) if depth_to_color is None else np.asarray(depth_to_color, dtype=np.float64)
    frames = list(frames)
    if not frames:
        raise ValueError("no frames to record")
    (ch, cw, _), (dh, dw) = frames[0][0].shape, frames[0][1].shape
    for i, (rgb, depth) in enumerate(frames):
        if (
            rgb.shape != (ch, cw, 3)
            or rgb.dtype != np.uint8
            or depth.shape != (dh, dw)
            or depth.dtype != np.uint16
        ):
            raise ValueError(
                f"frame {i}: need ({ch}, {cw}, 3) uint8 and ({dh}, {dw}) uint16, got "
                f"{rgb.shape} {rgb.dtype} and {depth.shape} {depth.dtype}"
            )

    def intrinsics(K: np.ndarray, w: int, h: int) -> Any:
        intr = rs.intrinsics()
        intr.width, intr.height = w, h
        intr.fx, intr.fy, intr.ppx, intr.ppy = float(K[0, 0]), float(K[1, 1]), float(K[0, 2]), float(K[1, 2])
        intr.model = rs.distortion.none
        intr.coeffs = [0.0] * 5
        return intr

    def stream(kind: Any, fmt: Any, bpp: int, uid: int, K: np.ndarray, w: int, h: int) -> Any:
        vs = rs.video_stream()
        vs.type, vs.index, vs.uid, vs.fmt, vs.bpp = kind, 0, uid, fmt, bpp
        vs.width, vs.height, vs.fps = w, h, fps
        vs.intrinsics = intrinsics(K, w, h)
        return vs

    device = rs.software_device()
    depth_sensor = device.add_sensor("Depth")
    color_sensor = device.add_sensor("Color")
    depth_profile = depth_sensor.add_video_stream(
        stream(rs.stream.depth, rs.format.z16, 2, 0, depth_K, dw, dh)
    )
    color_profile = color_sensor.add_video_stream(
        stream(rs.stream.color, rs.format.rgb8, 3, 1, color_K, cw, ch)
    )
    depth_sensor.add_read_only_option(rs.option.depth_units, float(depth_scale))
    extrinsics = rs.extrinsics()
    # librealsense stores rotations column-major.
    extrinsics.rotation = [float(x) for x in depth_to_color[:3, :3].T.ravel()]
    extrinsics.translation = [float(x) for x in depth_to_color[:3, 3]]
    depth_profile.register_extrinsics_to(color_profile, extrinsics)
    device.create_matcher(rs.matchers.dlr_c)
    recorder = rs.recorder(str(path), device)
    recorded = {s.get_info(rs.camera_info.name): s for s in recorder.query_sensors()}
    recorded["Depth"].open(depth_profile)
    recorded["Color"].open(color_profile)
    for sensor in recorded.values():
        sensor.start(lambda _frame: None)  # the recorder writes what passes; nobody else listens
    try:
        for i, (rgb, depth) in enumerate(frames):
            for sensor, profile, pixels, bpp in (
                (depth_sensor, depth_profile, depth, 2),
                (color_sensor, color_profile, rgb, 3),
            ):
                frame = rs.software_video_frame()
                frame.pixels = np.ascontiguousarray(pixels)
                frame.bpp = bpp
                frame.stride = pixels.shape[1] * bpp
                frame.timestamp = i * 1000.0 / fps
                frame.domain = rs.timestamp_domain.hardware_clock
                frame.frame_number = i
                frame.profile = profile.as_video_stream_profile()
                sensor.on_video_frame(frame)
            time.sleep(0.001)  # let the recorder's writer keep up; it queues otherwise
    finally:
        for opened in recorded.values():
            opened.stop()
            opened.close()
        # The file is finalised when the recorder is destroyed.
        recorded.clear()
        del recorder
    return path
