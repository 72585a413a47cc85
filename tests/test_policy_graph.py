"""A visuomotor policy on the sim graph: ``afford bringup fr3_sim_policy``, RunTask goals that
name a policy, over DDS.

The policy node reads the policy cameras franky-sim's world renders and ``/joint_states``, and
streams joint targets through the executor's checks to franky-sim, exactly as it would to the
lab's FR3. The control is a recorded demonstration replayed through the graph (it must do the
task); a LeRobot ACT policy trained for two steps must run its time through the same path (it
does nothing useful, which the simulator's check says); what cannot run is refused before the
arm moves; the operator's stop ends a run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from test_graph_e2e import Monitor, _at_rest, _stop_graph  # noqa: E402 - the sim graph's test helpers
from test_graph_e2e import _task as e2e_task  # noqa: E402

pytestmark = pytest.mark.slow

TASK = "place-banana-plate-v1"
SIZE = 64  # the policy cameras and the dataset's images
DOMAIN = str(180 + os.getpid() % 40)
HOST = f"127.1.{os.getpid() % 200 + 20}.{os.getpid() % 250 + 1}"


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demonstration of the task (seed 0) at the cameras' size."""
    from afford_data.demos import DemoConfig, generate

    out = tmp_path_factory.mktemp("demos") / "ds"
    generate(DemoConfig(TASK, 1, image_size=(SIZE, SIZE)), out)
    return out


@pytest.fixture(scope="module")
def act_policy(demos: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ACT trained two steps on it with LeRobot's own trainer (afford policy train's flags)."""
    from afford_policy.training import lerobot_train_command, pretrained_dir

    out = tmp_path_factory.mktemp("act") / "act"
    cmd = lerobot_train_command(demos, out, policy="act", steps=2, batch_size=2, workers=0, log_every=1)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pretrained_dir(out)


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    env = dict(os.environ, ROS_DOMAIN_ID=DOMAIN, PYTHONUNBUFFERED="1")
    os.environ["ROS_DOMAIN_ID"] = DOMAIN
    log = tmp_path_factory.mktemp("graph") / "graph.log"
    sets = {
        "sim_world.hostname": HOST, "executor.robot_ip": HOST, "sim_world.fps": "5.0",  # as the e2e test
        "sim_world.policy_camera_width": str(SIZE), "sim_world.policy_camera_height": str(SIZE),
    }
    args = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "afford_bringup.launcher", "fr3_sim_policy", *args],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    monitor = Monitor()
    try:
        end = time.monotonic() + 120
        while not monitor.run_task.wait_for_server(timeout_sec=1.0):
            assert proc.poll() is None, "the graph died at start:\n" + log.read_text()[-4000:]
            assert time.monotonic() < end, "no /run_task after 120 s:\n" + log.read_text()[-4000:]
        # Ready means the robot's state and the policy camera are both flowing: a deadline of
        # its own, as the e2e graph's, since on two busy cores the simulator came up 76 s after
        # /run_task did.
        end = time.monotonic() + 120
        wrist = "/policy_camera/wrist/image_raw"
        while (monitor.q is None or monitor.counts[wrist] == 0) and time.monotonic() < end:
            time.sleep(0.1)
        assert monitor.q is not None and monitor.counts[wrist] > 0, "no state or policy camera:\n" + (
            log.read_text()[-4000:])
        yield {"proc": proc, "log": log, "monitor": monitor}
    finally:
        monitor.close()
        _stop_graph(proc)


def _task(policy: str, seed: int = 0) -> tuple[Any, str]:
    _, result, feedback = e2e_task("", seed=seed, task_id=TASK, policy=policy)
    return result, feedback


def _log(graph: dict[str, Any]) -> str:
    return graph["log"].read_text()[-6000:]


def test_a_demonstration_replayed_through_the_graph_does_the_task(graph: dict[str, Any], demos: Path) -> None:
    """The serving path's control: the recorded episode's joint targets and gripper commands,
    streamed through the executor's checks to franky-sim, put the banana on the plate."""
    monitor = graph["monitor"]
    before = dict(monitor.counts)
    result, feedback = _task(f"replay:{demos}", seed=0)
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(graph)}"
    assert list(result.stage_names) == ["policy", "evaluate"] and all(result.stage_success)
    assert "[execute:policy]" in feedback and "gripper closed" in feedback
    # Its first feedback says it starts acting, before any step's: the task server watches the
    # cameras from it (loading a policy moves nothing).
    from afford_policy.nodes.policy import STARTED

    first = next(line for line in feedback.splitlines() if line.startswith("[execute:policy]"))
    assert first == f"[execute:policy] step 0, 0 s: {STARTED}", feedback
    streamed = ("/executor/joint_targets", "/policy_camera/front/image_raw", "/policy_camera/wrist/image_raw")
    for topic in streamed:
        assert monitor.counts[topic] > before[topic], topic
    refused = [e for e in monitor.errors if "refused" in e]
    assert not refused, refused


def test_a_lerobot_act_policy_runs_its_time_through_the_graph(
    graph: dict[str, Any], act_policy: Path
) -> None:
    """ACT from a lerobot-train directory: the node loads it, feeds it both cameras, the joints
    and the instruction at 10 Hz, and streams what it answers; two training steps achieve
    nothing, and the simulator's check says so."""
    monitor = graph["monitor"]
    start = _at_rest(monitor)
    result, feedback = _task(str(act_policy), seed=0)
    assert list(result.stage_names) == ["policy", "evaluate"], f"{result.abstain_reason}\n{_log(graph)}"
    assert result.stage_success[0], f"{result.abstain_reason}\n{_log(graph)}"
    assert "[execute:policy] step" in feedback
    assert result.success or "the task was not achieved" in result.abstain_reason
    assert np.max(np.abs(monitor.q - start)) > 1e-3, "the policy never moved the arm"


@pytest.mark.parametrize("case", ["no weights", "no such seed"])
def test_a_policy_that_cannot_run_is_refused_before_the_arm_moves(
    graph: dict[str, Any], demos: Path, act_policy: Path, tmp_path: Path, case: str
) -> None:
    import shutil

    monitor = graph["monitor"]
    if case == "no weights":
        broken = tmp_path / "broken"
        shutil.copytree(act_policy, broken)
        (broken / "model.safetensors").unlink()
        policy, seed, why = str(broken), 0, "model.safetensors"
    else:
        policy, seed, why = f"replay:{demos}", 3, "no episode of seed 3"
    result, _ = _task(policy, seed=seed)
    before = _at_rest(monitor)  # after the reset the goal did, before anything could move
    assert not result.success and why in result.abstain_reason, result.abstain_reason
    assert list(result.stage_names) == ["policy"] and not result.stage_success[0]
    assert np.max(np.abs(_at_rest(monitor) - before)) < 1e-3


def test_the_operators_stop_ends_a_policy_run(graph: dict[str, Any], demos: Path) -> None:
    """/afford/stop mid-run: the executor halts the stream and refuses more until recovery, and
    the trial ends with that reason instead of running on."""
    from std_msgs.msg import Empty

    from afford_ros.graph_cli import recover_robot

    monitor = graph["monitor"]
    box: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: box.update(result=_task(f"replay:{demos}")[0]))
    runner.start()
    end = time.monotonic() + 120
    while monitor.trial_state != "execute:policy" and time.monotonic() < end:
        time.sleep(0.05)
    assert monitor.trial_state == "execute:policy", f"never ran: {monitor.trial_state}\n{_log(graph)}"
    time.sleep(1.0)
    monitor.stop_pub.publish(Empty())
    runner.join(timeout=120)
    result = box["result"]
    assert not result.success and "stop" in result.abstain_reason, result.abstain_reason
    stopped_at = _at_rest(monitor)
    time.sleep(1.0)
    assert np.max(np.abs(monitor.q - stopped_at)) < 1e-3
    # Streaming stays refused until the operator recovers; then the next run does the task.
    refused, _ = _task(f"replay:{demos}", seed=0)
    assert not refused.success and "recover" in refused.abstain_reason, refused.abstain_reason
    ok, message = recover_robot()
    assert ok, message
    result, feedback = _task(f"replay:{demos}", seed=0)
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(graph)}"
