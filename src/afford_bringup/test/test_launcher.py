"""The pip-only launcher (``afford bringup``) with real processes: shutdown, failures, dry runs.

The fixture graph's nodes are small processes (``_launcher_fixture_node.py``) that each start a
helper, as the sim world starts its render process, and then misbehave in the ways real nodes
do: forget their helper, leave one that ignores SIGINT, or one that escaped into its own
session. The checks are by pid, through ``/proc``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from afford_bringup.graph import GRAPHS, config_dir
from afford_bringup.launcher import GraphRunner, _proc_stat, parse_sets

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "_launcher_fixture_graph.py"


def _gone(pid: int) -> bool:
    st = _proc_stat(pid)
    return st is None or st[0] == "Z"


def _start(tmp_path: Path, *specs: str, min_uptime: float = 15.0) -> subprocess.Popen[str]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        FIXTURE_MIN_UPTIME=str(min_uptime),
    )
    # Its own session, like a shell job, so the test can send Ctrl-C to its whole group.
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(tmp_path), *specs],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _wait_pids(
    tmp_path: Path, names: list[str], proc: subprocess.Popen[str], timeout: float = 30.0
) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = [tmp_path / f"{n}.pids" for n in names]
        if all(f.is_file() for f in files):
            return [int(p) for f in files for p in f.read_text().split()]
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    out, err = proc.communicate(timeout=10) if proc.poll() is not None else ("", "")
    raise AssertionError(f"fixture nodes did not start: rc {proc.poll()}\n{out}\n{err}")


def _finish(proc: subprocess.Popen[str], timeout: float = 30.0) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"launcher did not exit within {timeout} s\n{out}\n{err}") from None
    return proc.returncode, out, err


def _kill_leftovers(pids: list[int]) -> None:
    for pid in pids:  # only if the test failed: do not leave processes behind for other workers
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_stops_every_node_and_every_helper(tmp_path: Path) -> None:
    """Ctrl-C in the terminal running `afford bringup` must end the whole graph: on a lab PC a
    left-over sim world keeps the libfranka port and the camera busy, and the next bring-up
    then talks to a ghost. Helpers that ignore SIGINT or escaped into their own session are
    ended too, and the launcher reports a clean stop."""
    proc = _start(tmp_path, "alpha:run:group", "beta:run:session")
    pids = _wait_pids(tmp_path, ["alpha", "beta"], proc)
    try:
        assert not any(_gone(p) for p in pids)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        t0 = time.monotonic()
        rc, out, err = _finish(proc)
        took = time.monotonic() - t0
        leftover = [p for p in pids if not _gone(p)]
    finally:
        _kill_leftovers(pids)
    assert leftover == [], f"processes outlived the launcher: {leftover}\n{err}"
    assert rc == 0, err
    assert "graph stopped" in err
    # The nodes' own output arrives, prefixed by node name; SIGINT reached the nodes first.
    assert "[alpha] ready as alpha" in out and "[beta ] ready as beta" in out
    assert "[alpha] interrupted, exiting" in out
    # The SIGINT-proof helper needed the SIGTERM stage (1.5 s grace), not SIGKILL (3 s).
    assert "sending SIGTERM" in err and "sending SIGKILL" not in err
    assert took < 10.0


def test_a_required_node_that_dies_stops_the_graph_and_is_named(tmp_path: Path) -> None:
    """A graph that lost its executor or perception must not go on accepting tasks: the
    launcher stops everything, exits non-zero and says which node died and how."""
    proc = _start(tmp_path, "steady:run:group", "flaky:die:group")
    pids = _wait_pids(tmp_path, ["steady", "flaky"], proc)
    try:
        rc, out, err = _finish(proc)
        leftover = [p for p in pids if not _gone(p)]
    finally:
        _kill_leftovers(pids)
    assert rc == 1, err
    assert "required node flaky exited with code 3" in err
    assert "[flaky ] failing on purpose" in out
    assert leftover == [], f"processes outlived the launcher: {leftover}"


def test_an_optional_node_may_exit_while_the_graph_runs_on(tmp_path: Path) -> None:
    """Only required nodes bring the graph down; an optional viewer may come and go."""
    proc = _start(tmp_path, "core:run:group", "viewer:die:group:optional")
    pids = _wait_pids(tmp_path, ["core", "viewer"], proc)
    try:
        deadline = time.monotonic() + 10
        while not _gone(pids[2]) and time.monotonic() < deadline:  # the viewer node itself
            time.sleep(0.05)
        time.sleep(0.5)
        assert proc.poll() is None, "the graph stopped because an optional node exited"
        os.killpg(proc.pid, signal.SIGINT)
        rc, out, err = _finish(proc)
        leftover = [p for p in pids if not _gone(p)]
    finally:
        _kill_leftovers(pids)
    assert rc == 0, err
    assert "viewer exited with code 3 (not required" in err
    assert leftover == []


def test_a_respawning_node_killed_mid_work_comes_back_and_the_graph_runs_on(tmp_path: Path) -> None:
    """Perception and the planner respawn: a kill (out of memory, a crash) restarts the node
    after its delay, and the graph keeps running."""
    proc = _start(tmp_path, "core:run:group", "worker:run:group:respawn", min_uptime=0.5)
    pids = _wait_pids(tmp_path, ["core", "worker"], proc)
    try:
        time.sleep(1.0)  # past min_uptime: a crash mid-work, not a failed start
        os.kill(pids[2], signal.SIGKILL)
        deadline = time.monotonic() + 20
        new: list[int] = []
        while time.monotonic() < deadline:
            new = [int(p) for p in (tmp_path / "worker.pids").read_text().split()]
            if new[0] != pids[2]:
                break
            time.sleep(0.05)
        assert new[0] != pids[2] and not _gone(new[0]), "the worker was not restarted"
        assert proc.poll() is None, "the graph stopped because a respawning node was killed"
        os.killpg(proc.pid, signal.SIGINT)
        rc, out, err = _finish(proc)
        leftover = [p for p in [*pids, *new] if not _gone(p)]
    finally:
        _kill_leftovers([*pids, *new])
    assert rc == 0, err
    assert "worker exited with code -9; restarting in 0.2 s" in err
    assert leftover == [], f"processes outlived the launcher: {leftover}"


def test_a_respawning_node_that_cannot_start_stops_the_graph_instead_of_looping(tmp_path: Path) -> None:
    """A node that dies right after every start (a bad parameter, a missing model) is not
    restarted forever: after three failed starts in a row the graph stops and names it."""
    proc = _start(tmp_path, "core:run:group", "broken:die:group:respawn")
    pids = _wait_pids(tmp_path, ["core", "broken"], proc)
    try:
        rc, out, err = _finish(proc, timeout=60)
    finally:
        _kill_leftovers(pids)
    assert rc == 1, err
    assert err.count("broken exited with code 3; restarting") == 2, err
    assert "broken exited with code 3 within 15 s of starting, 3 times in a row" in err
    assert out.count("[broken] failing on purpose") == 3


def _launcher(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afford_bringup.launcher", *args], capture_output=True, text=True, timeout=60
    )


def test_dry_run_prints_each_node_command_with_files_overrides_and_fixed_parameters() -> None:
    """`--dry-run` is how an operator checks what will run on the robot before it runs."""
    res = _launcher(
        "fr3_real", "--dry-run", "--set", "executor.robot_ip=10.0.0.7", "--set", "camera.serial='0123'"
    )
    assert res.returncode == 0, res.stderr
    commands = [line for line in res.stdout.splitlines() if not line.startswith("#")]
    assert len(commands) == len(GRAPHS["fr3_real"].nodes)
    cfg = config_dir() / "fr3_real.yaml"
    by_node = {n.name: c for n, c in zip(GRAPHS["fr3_real"].nodes, commands, strict=True)}
    assert by_node["executor"].endswith(
        f"-m afford_ros.nodes.executor --ros-args -r __node:=executor --params-file {cfg} "
        "-p 'robot_ip:=\"10.0.0.7\"'"
    )
    # A serial of digits stays a string; fixed parameters come last so nothing overrides them.
    assert "-p 'serial:=\"0123\"'" in by_node["camera"]
    assert by_node["task_server"].endswith("-p 'mode:=\"real\"' -p auto_approve:=false")


def test_set_refuses_parameters_the_graph_fixes_and_unknown_nodes() -> None:
    """No command line may switch the real graph to automatic approval."""
    res = _launcher("fr3_real", "--dry-run", "--set", "task_server.auto_approve=true")
    assert res.returncode == 2
    assert "task_server.auto_approve is fixed by graph fr3_real" in res.stderr
    with pytest.raises(KeyError, match="no node 'planer'"):
        parse_sets(["planer.gate=false"], GRAPHS["fr3_sim"])
    with pytest.raises(ValueError, match="NODE.PARAM=VALUE"):
        parse_sets(["gate=false"], GRAPHS["fr3_sim"])
    assert parse_sets(["planner.plan_top_k=3", "sim_world.task=hang-mug-v1"], GRAPHS["fr3_sim"]) == {
        "planner": {"plan_top_k": 3},
        "sim_world": {"task": "hang-mug-v1"},
    }


def test_the_sim_graph_discovers_on_localhost_only_unless_the_caller_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A simulated FR3 needs no other machine: its nodes get ROS_AUTOMATIC_DISCOVERY_RANGE
    LOCALHOST, so the sim graph is not open to the network it sits on; a caller who sets a
    range (a lab showing the graph in RViz on another machine) keeps it; the real graph
    leaves the caller's setting alone."""
    monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
    assert GraphRunner(GRAPHS["fr3_sim"]).environment()["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE" not in GraphRunner(GRAPHS["fr3_real"]).environment()
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")
    assert GraphRunner(GRAPHS["fr3_sim"]).environment()["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET"


def test_a_node_the_graph_restarts_talks_dds_over_udp_unless_the_caller_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Perception and the planner, restarted when they exit, use Fast DDS over UDP only: a node
    killed mid-flight leaves shared-memory state behind that its successor in the same slot
    never got past (reproduced: the restarted perception dropped from the graph, every trial
    after it refused). The nodes that are not restarted keep Fast DDS's default transports; a
    choice of the caller's is kept for every node."""
    from afford_bringup.graph import RESPAWNED_TRANSPORTS, node_environment

    monkeypatch.delenv("FASTDDS_BUILTIN_TRANSPORTS", raising=False)
    for name in ("fr3_sim", "fr3_real"):
        graph = GRAPHS[name]
        env = GraphRunner(graph).environment()
        restarted = {n.name for n in graph.nodes if n.respawn}
        assert {"perception", "planner"} <= restarted
        for node in graph.nodes:
            got = node_environment(node, env).get("FASTDDS_BUILTIN_TRANSPORTS")
            assert got == (RESPAWNED_TRANSPORTS if node.name in restarted else None), node.name
    monkeypatch.setenv("FASTDDS_BUILTIN_TRANSPORTS", "SHM")
    env = GraphRunner(GRAPHS["fr3_sim"]).environment()
    assert all("FASTDDS_BUILTIN_TRANSPORTS" not in node_environment(n, env) for n in GRAPHS["fr3_sim"].nodes)


def test_the_graphs_nodes_read_the_stacks_dds_profiles_unless_the_caller_names_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """Every graph's nodes get FASTDDS_DEFAULT_PROFILES_FILE naming config/fastdds_profiles.xml
    (a service waits 2 s, not 100 ms, for a new client's reader: tests/test_dds_profiles.py), on
    the real arm too; a file the caller names is kept."""
    from afford_bringup.graph import DDS_PROFILES, config_dir

    for var in ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE", "ROS_DISTRO"):
        monkeypatch.delenv(var, raising=False)
    for name in ("fr3_sim", "fr3_real"):
        env = GraphRunner(GRAPHS[name]).environment()
        named = env["FASTDDS_DEFAULT_PROFILES_FILE"]
        assert Path(named) == config_dir() / DDS_PROFILES and Path(named).is_file()
        assert "FASTRTPS_DEFAULT_PROFILES_FILE" not in env  # Fast DDS 3 warns about the old name
    own = tmp_path / "lab.xml"
    monkeypatch.setenv("FASTDDS_DEFAULT_PROFILES_FILE", str(own))
    assert GraphRunner(GRAPHS["fr3_real"]).environment()["FASTDDS_DEFAULT_PROFILES_FILE"] == str(own)
    # The lab image's Jazzy runs Fast DDS 2, which reads the older name only.
    monkeypatch.delenv("FASTDDS_DEFAULT_PROFILES_FILE")
    monkeypatch.setenv("ROS_DISTRO", "jazzy")
    env = GraphRunner(GRAPHS["fr3_real"]).environment()
    assert Path(env["FASTRTPS_DEFAULT_PROFILES_FILE"]) == config_dir() / DDS_PROFILES
    monkeypatch.setenv("FASTRTPS_DEFAULT_PROFILES_FILE", str(own))
    assert GraphRunner(GRAPHS["fr3_real"]).environment()["FASTRTPS_DEFAULT_PROFILES_FILE"] == str(own)
