"""RealSense core: a recording written through librealsense's own recorder, played back through
the same pipeline, alignment and conversion a live camera goes through.

No camera is attached here, so the live path can only be checked for its error; everything
after ``pipeline.start`` (alignment, format conversion, intrinsics, timestamps) is the code a
camera's frames take too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from afford_perception.observation import Frame
from afford_perception.realsense import (
    CameraError,
    RealSenseCamera,
    RealSenseConfig,
    RealSenseFrame,
    write_recording,
)

W, H = 64, 48
K = np.array([[50.0, 0.0, 31.5], [0.0, 50.0, 23.5], [0.0, 0.0, 1.0]])


def coded_frames(count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Frames whose colour and depth both encode their index, so a mismatched pair shows."""
    out = []
    for i in range(count):
        rgb = np.zeros((H, W, 3), np.uint8)
        rgb[..., 0], rgb[..., 1], rgb[..., 2] = 10 * i, 255 - 10 * i, np.arange(W, dtype=np.uint8)[None, :]
        depth = np.full((H, W), 500 + 7 * i, np.uint16)
        depth[:5] = 0  # no return: must stay 0 through alignment
        out.append((rgb, depth))
    return out


def play(path: Path) -> list[RealSenseFrame]:
    config = RealSenseConfig(bag_file=str(path), real_time=False, timeout_s=0.5)
    with RealSenseCamera(config) as camera:
        return list(camera.frames())


def test_config_refuses_what_a_realsense_cannot_do() -> None:
    """A fractional frame rate or an unknown file type would fail deep inside librealsense with
    a cryptic message; fail at configuration instead."""
    with pytest.raises(ValueError, match="whole number"):
        RealSenseConfig(fps=29.97)
    with pytest.raises(ValueError, match=".bag"):
        RealSenseConfig(bag_file="scene.mp4")
    with pytest.raises(ValueError, match="positive"):
        RealSenseConfig(width=0)


def test_missing_camera_or_file_is_a_clear_error(tmp_path: Path) -> None:
    """On the robot PC the commonest faults are an unplugged camera and a wrong path."""
    with pytest.raises(CameraError, match="does not exist"):
        RealSenseCamera(RealSenseConfig(bag_file=str(tmp_path / "none.db3"))).start()
    # No camera here: "none connected"; on a lab PC with a camera: "no RealSense with serial".
    with pytest.raises(CameraError, match="no RealSense"):
        RealSenseCamera(RealSenseConfig(serial="not-a-serial")).start()
    with pytest.raises(CameraError, match="not started"):
        RealSenseCamera().read()


def test_recording_plays_back_synchronised_frames(tmp_path: Path) -> None:
    """Colour and depth of one frameset must come from the same instant: a depth from another
    frame puts the object cloud where the object was, not where it is."""
    recorded = coded_frames(10)
    path = write_recording(tmp_path / "scene.db3", recorded, K)
    frames = play(path)
    # The player may lose the first framesets (module docstring); never more than 3 of 10 here.
    assert len(frames) >= 7, [f.frame_number for f in frames]
    numbers = [f.frame_number for f in frames]
    assert numbers == list(range(numbers[0], 10))  # after the start, none lost and in order
    for f in frames:
        rgb, depth = recorded[f.frame_number]
        np.testing.assert_array_equal(f.rgb, rgb)
        # Same lens and viewpoint: alignment keeps every depth it maps. rs.align splats each depth
        # pixel's footprint and leaves rounding holes (0 = no return), a few percent here.
        hit = f.depth > 0
        np.testing.assert_array_equal(f.depth[hit], depth[hit])
        assert hit.sum() >= 0.9 * (depth > 0).sum()
        np.testing.assert_allclose(f.K, K)
        assert f.depth_scale == pytest.approx(1e-3)
        assert f.stamp == pytest.approx(f.frame_number / 30.0, abs=1e-6)
        assert f.distortion_model == "none" and len(f.distortion) == 5


def test_looped_playback_never_pairs_frames_of_different_instants(tmp_path: Path) -> None:
    """At a looped recording's wrap-around librealsense's synchroniser pairs the last colour with
    the first depth; such a pair must be skipped, or a replayed scene gives a cloud from another
    instant (seen in the camera node before the check existed)."""
    recorded = coded_frames(6)
    path = write_recording(tmp_path / "loop.db3", recorded, K)
    config = RealSenseConfig(bag_file=str(path), real_time=True, repeat=True, timeout_s=1.0)
    seen = []
    with RealSenseCamera(config) as camera:
        for _ in range(20):  # more than three passes through the file
            f = camera.read()
            assert f is not None
            index = int(f.rgb[0, 0, 0]) // 10
            hit = f.depth > 0
            assert np.all(f.depth[hit] == recorded[index][1][hit]), (index, np.unique(f.depth))
            seen.append(index)
    assert seen.count(5) >= 2, seen  # it did loop


def test_depth_is_aligned_to_the_colour_camera(tmp_path: Path) -> None:
    """Depth and colour lenses differ on a RealSense; the published depth must be in colour
    pixels, or masks found in colour select the wrong depths."""
    depth_K = K.copy()
    color_K = K.copy()
    color_K[0, 0] = color_K[1, 1] = 60.0  # narrower colour field of view, as on a D435
    depth = np.full((H, W), 800, np.uint16)
    depth[:, :40] = 500  # a step at depth column 40
    frames = [(np.zeros((H, W, 3), np.uint8), depth)] * 6
    out = play(write_recording(tmp_path / "step.db3", frames, color_K, depth_K=depth_K))
    assert out
    aligned = out[-1].depth
    np.testing.assert_allclose(out[-1].K, color_K)

    # Colour column u sees depth column 31.5 + (u - 31.5) * 50 / 60: the step moves to ~41.7.
    def column(u: int) -> float:
        values = aligned[5:-5, u]
        return float(np.median(values[values > 0]))

    assert column(40) == 500 and depth[H // 2, 40] == 800
    assert column(44) == 800


def test_frame_conversion_to_millimetres_and_metres() -> None:
    """Sensors with 0.1 mm depth units (D405) must still publish millimetres on the contract."""
    frame = RealSenseFrame(
        rgb=np.zeros((2, 2, 3), np.uint8),
        depth=np.array([[0, 5000], [12345, 65535]], np.uint16),
        depth_scale=1e-4,
        K=K,
        distortion_model="none",
        distortion=(0.0,) * 5,
        stamp=1.0,
        timestamp_domain="global_time",
        frame_number=3,
    )
    np.testing.assert_array_equal(frame.depth_millimetres(), [[0, 500], [1234, 6554]])
    converted = frame.to_frame(np.eye(4))
    assert isinstance(converted, Frame)
    np.testing.assert_allclose(converted.depth, [[0.0, 0.5], [1.2345, 6.5535]], rtol=1e-6)
