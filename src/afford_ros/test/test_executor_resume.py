"""A trajectory franky's own planner fails part-way is followed on from where the arm rests.

franky generates the arm's references with Ruckig, and now and then Ruckig fails mid-motion on
a path it took a moment before (error -111; CI saw it on a push with both cores busy). It
cannot be called up on demand, so this test makes franky's planner fail the same way by a
waypoint it must refuse (a velocity five times the joint's limit, error -100) in the middle of
the first ``FAULTS`` motions the executor sends: the executor process here is the real node
with that one change to the waypoints its client hands franky, run by this file as a script
(``python test_executor_resume.py --executor HOST FAULTS``); the server is franky-sim (the
executor tests' server). Everything from the fault up (franky's exception, the executor's
resume and its checks, the action's result) is the real code path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("franky")
pytest.importorskip("rclpy")

HERE = Path(__file__).resolve().parent
HOST = f"127.{(os.getpid() >> 8) % 200 + 20}.{os.getpid() % 256}.{9}"
DOMAIN_ID = str(30 + os.getpid() % 30)  # 30-59: apart from the other node tests' domains


def run_faulty_executor(host: str, faults: int) -> None:
    """The executor node, whose first ``faults`` motions carry a waypoint franky refuses."""
    from afford_ros import robot_client
    from afford_ros.nodes import executor

    plan = robot_client.RobotClient.plan
    left = [faults]

    def faulty(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = plan(self, *args, **kwargs)
        if left[0] > 0 and len(out.velocities) >= 3:
            left[0] -= 1
            out.velocities[len(out.velocities) // 2, 0] = 5.0 * self._vmax[0]
        return out

    robot_client.RobotClient.plan = faulty  # type: ignore[method-assign]
    sys.exit(executor.main(["executor", "--ros-args", "-p", f"robot_ip:={host}"]))


def _env() -> dict[str, str]:
    return dict(os.environ, ROS_DOMAIN_ID=DOMAIN_ID)


@pytest.fixture(scope="module")
def sim_server() -> Iterator[subprocess.Popen[str]]:
    from test_executor_node import _kill, _wait_line

    proc = subprocess.Popen([sys.executable, str(HERE / "test_executor_node.py"), "--serve", HOST],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env())
    try:
        _wait_line(proc, "READY", 60.0)
        yield proc
    finally:
        _kill(proc)


def _executor(faults: int) -> tuple[subprocess.Popen[str], list[str]]:
    import threading

    from test_executor_node import _wait_line

    proc = subprocess.Popen([sys.executable, __file__, "--executor", HOST, str(faults)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env())
    log: list[str] = []
    _wait_line(proc, "executor ready", 60.0)

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line)

    threading.Thread(target=drain, daemon=True).start()
    return proc, log


def _follow(faults: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, np.ndarray, np.ndarray, str]:
    """Run a 3 s ramp through an executor whose first ``faults`` motions fail part-way; the
    action's result, the planned end, the arm's end, and the executor's log."""
    import test_executor_node
    from test_executor_node import Graph, _kill, ramp

    monkeypatch.setattr(test_executor_node, "DOMAIN_ID", DOMAIN_ID)  # the domain Graph joins
    proc, log = _executor(faults)
    graph = Graph()
    try:
        q0 = graph.q(timeout=20.0)
        times, qs = ramp(q0, np.array([0.3, 0.15, 0.0, 0.2, 0.0, 0.1, 0.0]), 3.0)
        goal = graph.send(times, qs)
        result = graph.wait(goal.get_result_async(), 60.0).result
        time.sleep(0.5)
        q_end = graph.q()
        # Back to where it started, for the next test.
        back_t, back_q = ramp(q_end, q0 - q_end, 3.0)
        graph.wait(graph.send(back_t, back_q).get_result_async(), 60.0)
        return result, qs[-1], q_end, "".join(log)
    finally:
        graph.close()
        _kill(proc)


def test_a_trajectory_franky_fails_part_way_is_followed_on_from_where_the_arm_rests(
    sim_server: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    result, planned_end, q_end, log = _follow(1, monkeypatch)
    assert result.success, f"{result.error_kind}: {result.message}\n{log}"
    assert np.max(np.abs(q_end - planned_end)) < 0.01, q_end - planned_end
    assert "Motion planner failed" in log and "following the rest from where the arm rests" in log, log
    import re

    at = [int(m) for m in re.findall(r"Motion planner failed with error code -?\d+ at (\d+)% of", log)]
    # By the clock, which runs ahead of a loaded simulator: the fault came after the start.
    assert len(at) == 1 and at[0] >= 10, f"the fault was not mid-way: {at}"


def test_a_fault_that_comes_back_after_every_resume_ends_the_goal_with_it(
    sim_server: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from afford_ros.nodes.executor import MAX_RESUMES

    result, planned_end, q_end, log = _follow(MAX_RESUMES + 1, monkeypatch)
    assert not result.success
    assert result.error_kind == "limit" and "Motion planner failed" in result.message, result.message
    assert log.count("following the rest from where the arm rests") == MAX_RESUMES, log
    assert np.max(np.abs(q_end - planned_end)) > 0.01, "the arm reached the end: the fault was not injected"


def test_the_rest_joins_the_stretch_the_arm_was_on_not_one_it_passed_near_before() -> None:
    """A path out and back passes one point twice; stopped on the way back, the rest continues
    the way back (from rest, the join no faster than the resume speed), not the way out; and a
    clock that ran ahead of the arm (a slow simulator) still finds the stretch it was on."""
    from afford_ros.nodes.executor import _RESUME_JOIN_SPEED, remaining_trajectory

    t = np.arange(0.0, 6.0 + 1e-9, 0.01)
    s = np.where(t <= 3.0, t / 3.0, (6.0 - t) / 3.0)  # joint 1 out to 0.6 and back
    qs = np.zeros((len(t), 7))
    qs[:, 0] = 0.6 * s
    vels = np.gradient(qs, t, axis=0)
    q_now = np.zeros(7)
    q_now[0] = 0.205  # near 1.0 s on the way out and 5.0 s on the way back
    rest_t, rest_q, rest_v = remaining_trajectory(t, qs, vels, q_now, progress=5.0 / 6.0)
    assert rest_v is not None
    assert np.allclose(rest_q[0], q_now) and np.allclose(rest_v[0], 0.0)
    assert abs((rest_t[-1] - rest_t[1]) - 1.0) < 0.05, "did not join the way back near 5.0 s"
    assert np.allclose(rest_q[-1], qs[-1])
    join = float(np.max(np.abs(rest_q[1] - rest_q[0]))) / (rest_t[1] - rest_t[0])
    assert join <= _RESUME_JOIN_SPEED + 1e-9
    assert np.all(np.diff(rest_t) > 0)
    # Stopped at 0.205 on the way out at 1.0 s, with the clock reading 1.8 s (a simulator at
    # 0.55x real time): the rest goes out and back, not only back.
    rest_t, rest_q, _ = remaining_trajectory(t, qs, vels, q_now, progress=1.8 / 6.0)
    assert abs((rest_t[-1] - rest_t[1]) - 5.0) < 0.05, "lost the way out to a clock ahead of the arm"


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--executor":
    run_faulty_executor(sys.argv[2], int(sys.argv[3]))
