"""The perception node as a process over DDS, fed camera frames rendered by MuJoCo.

The frames come from the batch world (real rendering of a task scene), published on the
contract topics exactly as the sim world publishes them; the node must cut the right object
out, ground its parts, and refuse what it cannot do with a reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from afford_ros.nodes.clouds import from_cloud  # noqa: E402
from afford_ros.nodes.convert import camera_info, image_to_msg, pose_to_msg  # noqa: E402
from afford_ros.qos import qos_profile  # noqa: E402

SENTENCE = "hang the mug on the rack"


@pytest.fixture(scope="module")
def scene() -> dict:
    from afford_perception.parser import parse
    from afford_sim.scene import sample_scene
    from afford_sim.tasks import task_for
    from afford_sim.world import BatchWorld

    task = task_for(parse(SENTENCE))
    world = BatchWorld(sample_scene(task.scene(0), seed=0))
    obs = world.render()
    names = [o.name for o in world.placed.objects]
    labels = np.zeros(obs.depth.shape, np.uint16)
    for k, name in enumerate(names):
        labels[obs.mask(name)] = k + 1
    truth = world.observed_cloud(obs, "mug", depth_noise_std=0.0, dropout=0.0)
    world.close()
    return {"obs": obs, "names": names, "labels": labels, "truth": truth}


@pytest.fixture(scope="module")
def domain() -> Iterator[str]:
    old = os.environ.get("ROS_DOMAIN_ID")
    os.environ["ROS_DOMAIN_ID"] = str(40 + os.getpid() % 50)
    yield os.environ["ROS_DOMAIN_ID"]
    if old is None:
        os.environ.pop("ROS_DOMAIN_ID", None)
    else:
        os.environ["ROS_DOMAIN_ID"] = old


class Camera:
    """Publishes one rendered frame at 10 Hz with fresh stamps, like a live camera."""

    def __init__(self, scene: dict) -> None:
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import CameraInfo, Image
        from std_msgs.msg import Header, String

        self.node = rclpy.create_node("fake_world_camera")
        sensor, latched = qos_profile("sensor"), qos_profile("latched")
        self.scene = scene
        self.pubs = {
            "rgb": self.node.create_publisher(Image, "/camera/color/image_raw", sensor),
            "depth": self.node.create_publisher(Image, "/camera/aligned_depth_to_color/image_raw", sensor),
            "info": self.node.create_publisher(CameraInfo, "/camera/color/camera_info", sensor),
            "seg": self.node.create_publisher(Image, "/sim/ground_truth/segmentation", sensor),
        }
        ext = self.node.create_publisher(PoseStamped, "/camera/extrinsics", latched)
        objs = self.node.create_publisher(String, "/sim/ground_truth/objects", latched)
        stamp = self.node.get_clock().now().to_msg()
        ext.publish(
            PoseStamped(
                header=Header(stamp=stamp, frame_id="fr3_link0"),
                pose=pose_to_msg(scene["obs"].world_T_camera),
            )
        )
        objs.publish(String(data="\n".join(scene["names"])))
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        obs = self.scene["obs"]
        depth_mm = np.round(obs.depth * 1000).astype(np.uint16)
        h, w = obs.depth.shape
        frame = "camera_color_optical_frame"
        while self.running:
            stamp = self.node.get_clock().now().to_msg()
            self.pubs["rgb"].publish(image_to_msg(obs.rgb, "rgb8", frame, stamp))
            self.pubs["depth"].publish(image_to_msg(depth_mm, "16UC1", frame, stamp))
            self.pubs["seg"].publish(image_to_msg(self.scene["labels"], "16UC1", frame, stamp))
            self.pubs["info"].publish(camera_info(obs.K, w, h, frame, stamp))
            time.sleep(0.1)

    def stop(self) -> None:
        self.running = False
        self.thread.join()


@pytest.fixture(scope="module")
def graph(scene: dict, domain: str) -> Iterator[tuple]:
    rclpy.init()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "afford_ros.nodes.perception",
            "--ros-args",
            "-p",
            "segmentation:=ground_truth",
            "-p",
            "grounding:=geometric",
            "-p",
            "max_frame_age_s:=1.0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    cam = Camera(scene)
    from afford_interfaces.srv import Perceive

    client = cam.node.create_client(Perceive, "/perception/perceive")
    try:
        assert client.wait_for_service(timeout_sec=60), "perception node did not come up"
        _wait_for_frames(cam, client)
        yield cam, client, proc
    finally:
        cam.stop()
        proc.send_signal(2)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        cam.node.destroy_node()
        rclpy.shutdown()


def _wait_for_frames(cam, client, timeout: float = 60.0) -> None:
    """Until perception has the camera's info and extrinsics (a loaded machine delivers the first
    messages late): ask it, and stop once it answers anything but 'not received yet'."""
    end = time.monotonic() + timeout
    while True:
        res = _call(cam, client, SENTENCE)
        if "received yet" not in res.reason:
            return
        assert time.monotonic() < end, f"perception never got the camera: {res.reason}"
        time.sleep(0.2)


def _call(cam, client, sentence: str, grounding: str = ""):
    from afford_interfaces.srv import Perceive

    future = client.call_async(Perceive.Request(sentence=sentence, grounding=grounding))
    rclpy.spin_until_future_complete(cam.node, future, timeout_sec=60)
    assert future.done(), "perceive did not answer"
    return future.result()


def test_perceive_grounds_the_handle_on_the_mug(graph, scene) -> None:
    """The grasp is planned on these points: the cloud must be the mug's, in the base frame, and
    the grounded handle must lie on the real handle, or the arm reaches for the wrong spot."""
    cam, client, _ = graph
    res = _call(cam, client, SENTENCE)
    assert res.success, res.reason
    assert res.intent.target == "mug" and res.intent.destination == "rack"
    pts, fields = from_cloud(res.target_cloud)
    truth = scene["truth"]
    # Same pixels, depth quantised to 1 mm: every point within a few mm of the true surface.
    from scipy.spatial import cKDTree

    d, _ = cKDTree(truth.points).query(pts)
    assert np.percentile(d, 95) < 0.004
    assert set(res.region_names) >= {res.intent.grasp_region}
    handle = pts[fields["handle"] >= 0.5]
    true_handle = truth.points[truth.part_mask("handle")]
    assert len(handle) >= 10
    d, _ = cKDTree(true_handle).query(handle)
    assert np.median(d) < 0.01
    dpts, dfields = from_cloud(res.destination_cloud)
    assert len(dpts) > 50 and "hook" in dfields


def test_unknown_or_absent_objects_and_empty_sentences_are_refused(graph) -> None:
    """A task about something the camera does not show must end with a reason, never a guess."""
    cam, client, _ = graph
    res = _call(cam, client, "pick up the banana")
    assert not res.success and "banana" in res.reason and "view" in res.reason
    res = _call(cam, client, "   ")
    assert not res.success and "empty" in res.reason
    res = _call(cam, client, "hang the mug on the rack", grounding="oracle")
    assert not res.success and "oracle" in res.reason


def test_a_frozen_camera_is_refused(graph) -> None:
    """A frozen camera stream must stop a trial: perception refuses frames older than its limit."""
    cam, client, _ = graph
    cam.stop()
    time.sleep(1.3)
    res = _call(cam, client, SENTENCE)
    assert not res.success and "stale camera" in res.reason


def test_missing_weights_stop_the_node_at_launch_naming_the_fix(tmp_path) -> None:
    """With the learned model as the graph's source, if its weights are missing on the robot PC
    the launch must fail at once saying how to provide them, not when an operator starts a trial."""
    env = {**os.environ, "AFFORD_AFFORDANCE_WEIGHTS": str(tmp_path / "absent.pt"),
           "ROS_DOMAIN_ID": str(40 + (os.getpid() + 7) % 50)}
    done = subprocess.run([sys.executable, "-m", "afford_ros.nodes.perception", "--ros-args",
                           "-p", "grounding:=learned"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "AFFORD_AFFORDANCE_WEIGHTS" in done.stderr and "absent.pt" in done.stderr
