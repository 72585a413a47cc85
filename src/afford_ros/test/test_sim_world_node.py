"""The sim_world node as a process: contract topics, reset and evaluate, clean shutdown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from afford_interfaces.srv import InjectFault, ResetScene  # noqa: E402
from afford_ros import contract  # noqa: E402
from afford_ros.nodes.convert import msg_to_image  # noqa: E402
from afford_ros.qos import qos_profile  # noqa: E402

DOMAIN = str(100 + os.getpid() % 100)
HOST = f"127.1.{os.getpid() % 250 + 1}.{(os.getpid() // 250) % 250 + 1}"
TYPES = {
    "sensor_msgs/msg/Image": Image,
    "sensor_msgs/msg/CameraInfo": CameraInfo,
    "geometry_msgs/msg/PoseStamped": PoseStamped,
    "std_msgs/msg/String": String,
    "diagnostic_msgs/msg/DiagnosticArray": DiagnosticArray,
}


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


@pytest.fixture(scope="module")
def node_proc() -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "ROS_DOMAIN_ID": DOMAIN}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "afford_ros.nodes.sim_world",
            "--ros-args",
            "-p",
            f"hostname:={HOST}",
            "-p",
            "task:=pick-cube-v1",
            "-p",
            "seed:=0",
            "-p",
            "width:=320",
            "-p",
            "height:=240",
            "-p",
            "fps:=15.0",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def probe(node_proc: subprocess.Popen[bytes]) -> Iterator[Node]:
    os.environ["ROS_DOMAIN_ID"] = DOMAIN
    rclpy.init()
    n = Node("sim_world_probe")
    yield n
    n.destroy_node()
    rclpy.shutdown()


def _collect(node: Node, seconds: float, until: Any = None) -> dict[str, list[Any]]:
    got: dict[str, list[Any]] = {}
    subs = []
    for t in contract.TOPICS:
        if t.publisher == "sim_world":
            subs.append(
                node.create_subscription(
                    TYPES[t.type],
                    t.name,
                    lambda m, name=t.name: got.setdefault(name, []).append(m),
                    qos_profile(t.qos),
                )
            )
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until and until(got)):
        rclpy.spin_once(node, timeout_sec=0.05)
    for s in subs:
        node.destroy_subscription(s)
    return got


def _call(node: Node, srv_type: Any, name: str, request: Any, timeout: float = 30.0) -> Any:
    client = node.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=timeout), f"{name} not offered"
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    node.destroy_client(client)
    assert future.done(), f"{name} did not answer"
    return future.result()


def test_topics_follow_the_contract(probe: Node, node_proc: subprocess.Popen[bytes]) -> None:
    """Perception consumes these exactly as a RealSense driver publishes them; a wrong encoding,
    frame or QoS would silently break the real graph where the simulator looked fine."""
    names = {t.name for t in contract.TOPICS if t.publisher == "sim_world"}
    got = _collect(probe, 60.0, until=lambda g: set(g) >= names and len(g["/camera/color/image_raw"]) >= 2)
    assert node_proc.poll() is None, node_proc.stdout.read().decode() if node_proc.stdout else ""
    assert set(got) >= names, f"missing {names - set(got)}"
    for t in contract.TOPICS:
        if t.publisher == "sim_world" and t.frame:
            assert got[t.name][-1].header.frame_id == t.frame, t.name
    rgb = got["/camera/color/image_raw"][-1]
    depth = got["/camera/aligned_depth_to_color/image_raw"][-1]
    seg = got["/sim/ground_truth/segmentation"][-1]
    assert (rgb.encoding, depth.encoding, seg.encoding) == ("rgb8", "16UC1", "16UC1")
    assert (rgb.width, rgb.height) == (depth.width, depth.height) == (320, 240)
    d = msg_to_image(depth)
    assert 300 < d[d > 0].min() < d.max() < 10000  # millimetres
    assert got["/sim/ground_truth/objects"][-1].data == "cube"
    info = got["/camera/color/camera_info"][-1]
    assert info.k[0] > 0 and info.width == 320 and info.k[2] == pytest.approx(159.5)
    ext = got["/camera/extrinsics"][-1].pose.position
    assert (ext.x, ext.z) == pytest.approx((1.2, 0.9), abs=1e-6)


def _loop_statuses(got: dict[str, list[Any]]) -> list[Any]:
    return [s for m in got.get("/diagnostics", []) for s in m.status if s.name == contract.SIM_LOOP_STATUS]


def test_a_stalled_loop_is_reported_on_diagnostics(probe: Node) -> None:
    """Once a second the simulator says how it kept real time; a stall (injected here, as a
    starved machine would cause) is an ERROR status that names it, with the measured values a
    monitor or the task server reads."""
    fine = _loop_statuses(_collect(probe, 20.0, until=lambda g: len(_loop_statuses(g)) >= 1))
    assert fine, "no loop status on /diagnostics"
    keys = {kv.key for kv in fine[-1].values}
    assert keys >= {
        "realtime_factor", "deadline_misses", "worst_gap_s", "dropped_s", "loop_nice", "loop_rt_priority",
    }
    refused = _call(
        probe, InjectFault, "/sim_world/inject_fault", InjectFault.Request(kind="meteor", seconds=1.0)
    )
    assert not refused.success and "unknown fault" in refused.message
    refused = _call(
        probe, InjectFault, "/sim_world/inject_fault", InjectFault.Request(kind="stall", seconds=-1.0)
    )
    assert not refused.success
    ok = _call(probe, InjectFault, "/sim_world/inject_fault", InjectFault.Request(kind="stall", seconds=0.8))
    assert ok.success, ok.message

    def stalled(g: dict[str, list[Any]]) -> bool:
        return any(s.level == DiagnosticStatus.ERROR for s in _loop_statuses(g))

    got = _loop_statuses(_collect(probe, 20.0, until=stalled))
    errors = [s for s in got if s.level == DiagnosticStatus.ERROR]
    assert errors, [(s.level, s.message) for s in got]
    assert errors[0].message.startswith("the simulation fell behind real time: the loop stalled for")
    gap = max(float({kv.key: kv.value for kv in s.values}["worst_gap_s"]) for s in errors)
    assert gap >= 0.5, gap  # the window that saw it reports at least the part it saw


def test_reset_and_evaluate(probe: Node) -> None:
    """Trials start from a fresh scene and end with a ground-truth verdict."""
    res = _call(
        probe,
        ResetScene,
        "/sim_world/reset",
        ResetScene.Request(task_id="place-banana-plate-v1", seed=1),
    )
    assert res.success, res.message
    assert sorted(res.objects) == ["banana", "plate"]
    got = _collect(probe, 20.0, until=lambda g: "/sim/ground_truth/objects" in g)
    assert sorted(got["/sim/ground_truth/objects"][-1].data.split("\n")) == ["banana", "plate"]
    ev = _call(probe, Trigger, "/sim_world/evaluate", Trigger.Request())
    assert not ev.success and ev.message.startswith("place-banana-plate-v1/place")
    bad = _call(probe, ResetScene, "/sim_world/reset", ResetScene.Request(task_id="", seed=0))
    assert not bad.success
    bad = _call(probe, ResetScene, "/sim_world/reset", ResetScene.Request(task_id="juggle-v1", seed=0))
    assert not bad.success and "unknown task 'juggle-v1'" in bad.message


def test_sigint_ends_cleanly(node_proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C must stop the render process and free the libfranka ports: an orphan would hold
    them and the next launch could not bind."""
    assert node_proc.poll() is None
    kids = _children(node_proc.pid)
    assert kids, "the render process should be a child of the node"
    node_proc.send_signal(signal.SIGINT)
    assert node_proc.wait(timeout=20) == 0
    time.sleep(0.2)
    alive = [
        k
        for k in kids
        if Path(f"/proc/{k}").exists()
        and "Z" not in (Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[0])
    ]
    assert not alive, f"children left: {alive}"


def test_a_randomized_node_publishes_the_batch_worlds_draw() -> None:
    """``randomize`` dresses every scene as the batch world dresses it for the same task, seed
    and preset: the camera stands where the draw moved it (the extrinsics perception projects
    with), the images carry pixel noise, and the draw is said at start and on each reset, so a
    trial's record can hold it. A node of its own (the module's has stopped by now), on a domain
    and an address of its own."""
    from afford_sim.franky_world import dressed_scene

    domain = str(200 + os.getpid() % 15)  # 200-214: Fast DDS takes ids up to 232, the module is on 100-199
    host = f"127.4.{os.getpid() % 250 + 1}.{(os.getpid() // 250) % 250 + 1}"
    env = {**os.environ, "ROS_DOMAIN_ID": domain}
    proc = subprocess.Popen(
        [sys.executable, "-m", "afford_ros.nodes.sim_world", "--ros-args", "-p", f"hostname:={host}",
         "-p", "task:=pick-cube-v1", "-p", "seed:=0", "-p", "width:=320", "-p", "height:=240",
         "-p", "fps:=15.0", "-p", "randomize:=visual"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    old_domain = os.environ.get("ROS_DOMAIN_ID")
    os.environ["ROS_DOMAIN_ID"] = domain
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node("sim_world_randomized_probe", context=context)
    try:
        got: dict[str, list[Any]] = {}
        subs = [
            node.create_subscription(TYPES[t.type], t.name,
                                     lambda m, n=t.name: got.setdefault(n, []).append(m), qos_profile(t.qos))
            for t in contract.TOPICS if t.name in ("/camera/color/image_raw", "/camera/extrinsics")
        ]
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        end = time.monotonic() + 90.0
        while time.monotonic() < end and not (len(got.get("/camera/color/image_raw", [])) >= 3
                                               and got.get("/camera/extrinsics")):
            executor.spin_once(timeout_sec=0.05)
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        assert got.get("/camera/extrinsics") and len(got.get("/camera/color/image_raw", [])) >= 3, sorted(got)
        _, placed, draw = dressed_scene("pick-cube-v1", 0, "visual")
        assert draw is not None and draw.noise_std > 0 and draw.cameras
        want = placed.spec.cameras[0].extrinsics()[:3, 3]
        ext = got["/camera/extrinsics"][-1].pose.position
        assert (ext.x, ext.y, ext.z) == pytest.approx(tuple(want), abs=1e-4)
        assert (ext.x, ext.z) != pytest.approx((1.2, 0.9), abs=1e-3)  # moved from the task's camera
        # The arm holds still: two frames differ by the pixel noise, drawn afresh for each.
        a, b = (msg_to_image(m).astype(int) for m in got["/camera/color/image_raw"][-2:])
        assert 0.5 * draw.noise_std < np.abs(a - b).mean() < 4 * draw.noise_std
        for sub in subs:
            node.destroy_subscription(sub)
        client = node.create_client(ResetScene, "/sim_world/reset")
        assert client.wait_for_service(timeout_sec=30.0)
        future = client.call_async(ResetScene.Request(task_id="pick-cube-v1", seed=1))
        executor.spin_until_future_complete(future, timeout_sec=30.0)
        res = future.result()
        assert res is not None and res.success, res
        said = json.loads(res.message.split("domain randomization: ", 1)[1])
        assert said == dressed_scene("pick-cube-v1", 1, "visual")[2].as_dict()  # type: ignore[union-attr]
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
        if old_domain is None:
            os.environ.pop("ROS_DOMAIN_ID", None)
        else:
            os.environ["ROS_DOMAIN_ID"] = old_domain
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log = proc.stdout.read().decode() if proc.stdout else ""
    assert "domain randomization: {" in log, log[-2000:]


@pytest.mark.parametrize(("value", "fragment"), [
    ("pose", "unknown randomization 'pose'"),  # the pose windows are table1's and table2's
    ("table1,table2", "different pose windows"),
])
def test_a_bad_randomize_is_refused_by_name(value: str, fragment: str) -> None:
    """A misspelt preset stops the node before franky-sim or the renderer start, saying which
    parameter, rather than a KeyError traceback from deep inside the world."""
    from afford_ros.nodes.sim_world import SimWorldParams

    with pytest.raises(ValueError, match="randomize: ") as err:
        SimWorldParams(randomize=value)
    assert fragment in str(err.value)
    assert SimWorldParams(randomize="texture, lighting").randomize == "texture, lighting"


def test_the_pixel_noise_repeats_with_the_scene() -> None:
    """The noise is drawn per image from the scene's draw and the image's number since the scene
    began: a reset to the same task, seed and preset publishes the same noisy frames again."""
    from afford_ros.nodes.sim_world import _noisy

    rgb = np.full((24, 32, 3), 128, np.uint8)
    a, b = _noisy(rgb, 5.0, [3, 1, 0, 0]), _noisy(rgb, 5.0, [3, 1, 0, 0])
    assert np.array_equal(a, b)
    other = _noisy(rgb, 5.0, [3, 1, 1, 0])
    assert not np.array_equal(a, other)
    assert 3.0 < float(np.std(a.astype(float))) < 7.0
