"""The real-robot graph (``afford bringup fr3_real``) with franky-sim standing in for the FR3.

Every node is the one the lab runs: the camera node playing a RealSense recording (made by
librealsense's own recorder from the scene's render, so only the USB device is missing), depth
segmentation and the graph's grounding (geometric), the planner, the executor connecting with franky over
the libfranka protocol (to franky-sim serving the same scene on a loopback address), and the
task server in real mode. What the lab does is what the test does: ``afford task "..."`` (which
asks for automatic approval, as it does by default), then ``afford trial approve`` or ``abort``
with the operator's token. The real task server must wait for the operator whatever the goal
asks, move the arm only after the approval, and never after an abort.

The stand-in: franky-sim is a simulator (physics, not the FR3's controller), and the camera's
recording is of the scene at its start, so the camera keeps seeing the object where it was.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from test_graph_e2e import Monitor, _at_rest, _task  # noqa: E402 - the sim graph's test helpers

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
DOMAIN = str(170 + os.getpid() % 20)  # apart from tests/test_graph_e2e.py's 110-169
HOST = f"127.1.{os.getpid() % 200 + 20}.{os.getpid() % 250 + 1}"
TASK, SEED = "pick-mug-v1", 3
IMAGES = ("/camera/color/image_raw", "/camera/aligned_depth_to_color/image_raw", "/afford/object_masks")


def _readline(proc: subprocess.Popen[str], timeout: float) -> str:
    box: dict[str, str] = {}
    reader = threading.Thread(target=lambda: box.setdefault("line", proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    return box.get("line", "")


def _stop(proc: subprocess.Popen, timeout: float = 40.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def real_graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    env = dict(os.environ, ROS_DOMAIN_ID=DOMAIN, PYTHONUNBUFFERED="1")
    os.environ["ROS_DOMAIN_ID"] = DOMAIN  # for this process's ROS contexts and the CLI functions
    out = tmp_path_factory.mktemp("real")
    world = subprocess.Popen(
        [sys.executable, str(HERE / "_real_graph_world.py"), HOST, str(out), TASK, str(SEED)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    graph: subprocess.Popen | None = None
    monitor: Monitor | None = None
    try:
        setup = _readline(world, 180.0)
        assert setup.startswith("{"), f"the stand-in world did not start: {setup!r}"
        assert _readline(world, 30.0).strip() == "READY"
        spec = json.loads(setup)
        log = out / "graph.log"
        with open(log, "w") as sink:
            graph = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "afford_bringup.launcher",
                    "fr3_real",
                    "--set",
                    f"executor.robot_ip={HOST}",
                    "--set",
                    f"camera.bag_file={spec['recording']}",
                    "--set",
                    "camera.loop_playback=true",
                    "--set",
                    f"camera.extrinsics={json.dumps(spec['extrinsics'])}",
                    # Depth segmentation and the learned model on a full frame take seconds on
                    # two loaded cores (about 1 s and 5 s alone here), not the lab PC's fraction.
                    "--set",
                    "task_server.service_timeout_s=240.0",
                    # librealsense restarts a looped recording with a pause of its own; a real
                    # camera streams on (the watchdog's 1 s stays the default in the lab).
                    "--set",
                    "task_server.max_frame_age_s=3.0",
                ],
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        # Images are not watched here: two cores carry the world, the camera and the nodes.
        monitor = Monitor(skip=IMAGES)
        state = {"proc": graph, "log": log, "monitor": monitor, "world": world}
        client = monitor.run_task
        end = time.monotonic() + 180
        while not client.wait_for_server(timeout_sec=1.0):
            assert graph.poll() is None, "the real graph died at start:\n" + log.read_text()[-4000:]
            assert time.monotonic() < end, "no /run_task after 180 s:\n" + log.read_text()[-4000:]
        # The client stays until the monitor closes: destroying it while the monitor's thread
        # spins the same node can fail inside that spin.
        end = time.monotonic() + 120
        info = "/camera/color/camera_info"
        while (monitor.q is None or monitor.counts[info] == 0) and time.monotonic() < end:
            time.sleep(0.1)
        ready = monitor.q is not None and monitor.counts[info] > 0
        assert ready, "no state or camera:\n" + log.read_text()[-4000:]
        yield state
    finally:
        if monitor is not None:
            monitor.close()
        if graph is not None:
            _stop(graph)
        _stop(world)


def _log(graph: dict) -> str:
    return graph["log"].read_text()[-6000:]


def _wait_for_approval(graph: dict, sentence: str) -> tuple[threading.Thread, dict, np.ndarray]:
    """Send the goal `afford task` sends; return once the trial waits for the operator, with
    the arm's joints then (after a second of checking that waiting means waiting)."""
    monitor = graph["monitor"]
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("out", _task(sentence, auto_approve=True)))
    thread.start()
    end = time.monotonic() + 240
    while monitor.trial_state != "approve" and time.monotonic() < end and thread.is_alive():
        time.sleep(0.05)
    if monitor.trial_state != "approve":
        thread.join(timeout=60)
        raise AssertionError(f"the trial never waited for approval (monitor saw {monitor.trial_state!r}, "
                             f"its spin errors: {monitor.spin_errors}): {box.get('out')}\n{_log(graph)}")
    before = _at_rest(monitor)
    time.sleep(1.0)
    assert np.max(np.abs(monitor.q - before)) < 1e-3, "the arm moved before the approval"
    return thread, box, before


def test_a_real_trial_the_operator_aborts_moves_nothing(real_graph: dict) -> None:
    """First, while the scene is as the camera's recording shows it."""
    from afford_ros.graph_cli import approve_trial

    thread, box, before = _wait_for_approval(real_graph, "pick up the mug")
    accepted, message = approve_trial(False, "wrong mug")
    assert accepted, message
    thread.join(timeout=60)
    status, result, _ = box["out"]
    assert not result.success and "the operator aborted the trial: wrong mug" in result.abstain_reason
    time.sleep(0.5)
    assert np.max(np.abs(real_graph["monitor"].q - before)) < 1e-3


def test_a_real_trial_moves_the_arm_only_after_the_operator_approves(real_graph: dict) -> None:
    from afford_ros.graph_cli import approve_trial

    thread, box, before = _wait_for_approval(real_graph, "pick up the mug")
    accepted, message = approve_trial(True, "looked at the grasp")
    assert accepted, message
    thread.join(timeout=300)
    status, result, feedback = box["out"]
    assert "automatic approval does not apply to the real robot" in feedback
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(real_graph)}"
    assert "evaluate" not in result.stage_names  # no simulator to judge a real trial
    moved = np.max(np.abs(real_graph["monitor"].q - before))
    assert moved > 0.05, f"the arm moved only {moved:.3f} rad"
