"""The whole sim graph as real processes: ``afford bringup fr3_sim``, RunTask goals over DDS.

franky-sim serves the libfranka protocol on a loopback address of its own, the executor drives
it with franky exactly as it drives the lab's FR3, and every other node is the one the real
graph runs. These tests are what "the same ROS 2 graph in simulation and on the robot" means:
if they pass, a lab's first real trial exercises code that has already run end to end.
"""

from __future__ import annotations

import os
import signal
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

from afford_ros import contract  # noqa: E402

pytestmark = pytest.mark.slow

DOMAIN = str(110 + os.getpid() % 60)
HOST = f"127.0.{os.getpid() % 200 + 20}.{os.getpid() % 250 + 1}"
#: What a scripted trial publishes: not the operator's stop, not a policy's joint targets or its
#: cameras (no policy runs here: tests/test_policy_graph.py), not robot errors (none should happen).
SEEN_BY_GRAPH = [
    t for t in contract.TOPICS
    if t.publisher not in ("operator", "policy", "policy_camera") and t.name != "/afford/robot_error"
]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _descendants(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.split(")")[-1].split()[1]) == pid:
                child = int(entry.name)
                out += [child, *_descendants(child)]
    return out


def _message(type_name: str) -> type:
    """The message class of ``pkg/msg/Name``."""
    import importlib

    pkg, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


class Monitor:
    """Counts messages on every contract topic (but ``skip``) and keeps the latest joint state."""

    def __init__(self, skip: tuple[str, ...] = ()) -> None:
        from afford_ros.qos import qos_profile

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("e2e_monitor", context=self.context)
        self.counts: dict[str, int] = {t.name: 0 for t in contract.TOPICS}
        self.q: np.ndarray | None = None
        self.errors: list[str] = []
        self.trial_state = ""
        self.spin_errors: list[str] = []
        for t in contract.TOPICS:
            if t.name not in skip:
                cb = self._counter(t.name)
                self.node.create_subscription(_message(t.type), t.name, cb, qos_profile(t.qos))
        from std_msgs.msg import Empty

        self.stop_pub = self.node.create_publisher(Empty, "/afford/stop", qos_profile("reliable"))
        from rclpy.executors import SingleThreadedExecutor

        from afford_interfaces.action import RunTask
        from afford_ros.action_client import GoalSafeActionClient

        # Made before the spin starts: rclpy's ActionClient registers itself with the node before
        # it is fully built, and a spin running meanwhile dies on the half-made client.
        self.run_task: Any = GoalSafeActionClient(self.node, RunTask, "/run_task")

        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        # An exception in one callback (or in the executor's wait set while an entity is being
        # destroyed) must not end the spin silently: every later message would be missed and a
        # test would wait for a state it had in fact been sent. It is kept and shown instead.
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except Exception as e:  # noqa: BLE001 - kept for the test's message
                if not self.context.ok():
                    return
                self.spin_errors.append(f"{type(e).__name__}: {e}")
                time.sleep(0.01)

    def _counter(self, name: str):
        def cb(msg) -> None:
            self.counts[name] += 1
            if name == "/joint_states":
                idx = {n: i for i, n in enumerate(msg.name)}
                self.q = np.array([msg.position[idx[j]] for j in contract.ARM_JOINTS])
            if name == "/afford/robot_error":
                self.errors.append(f"{msg.kind}: {msg.message}")
            if name == "/afford/trial_state":
                self.trial_state = msg.data

        return cb

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> Iterator[dict]:
    env = dict(os.environ, ROS_DOMAIN_ID=DOMAIN, PYTHONUNBUFFERED="1")
    os.environ["ROS_DOMAIN_ID"] = DOMAIN
    log = tmp_path_factory.mktemp("graph") / "graph.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "afford_bringup.launcher",
                "fr3_sim",
                "--set",
                f"sim_world.hostname={HOST}",
                "--set",
                f"executor.robot_ip={HOST}",
                # 5 frames a second (config/fr3_sim.yaml: 30): software rendering of a frame takes
                # about 85 ms on these two cores, and the 1 kHz loop, perception and the planner
                # need the rest. The task server's camera watchdog (1 s) still sees five a second.
                "--set",
                "sim_world.fps=5.0",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    monitor = Monitor()
    state = {"proc": proc, "log": log, "monitor": monitor}
    try:
        client = monitor.run_task
        end = time.monotonic() + 120
        while not client.wait_for_server(timeout_sec=1.0):
            assert proc.poll() is None, "the graph died at start:\n" + log.read_text()[-4000:]
            assert time.monotonic() < end, "no /run_task after 120 s:\n" + log.read_text()[-4000:]
        # The client is not destroyed here: destroying it while the monitor's thread spins the
        # same node can fail inside that spin (the node's destruction at close takes it).
        # Ready means the robot's state and the camera are both flowing.
        end = time.monotonic() + 120
        depth = "/camera/aligned_depth_to_color/image_raw"
        while (monitor.q is None or monitor.counts[depth] == 0) and time.monotonic() < end:
            time.sleep(0.1)
        assert monitor.q is not None and monitor.counts[depth] > 0, (
            "no state or camera:\n" + log.read_text()[-4000:]
        )
        yield state
    finally:
        monitor.close()
        _stop_graph(proc)


def _stop_graph(proc: subprocess.Popen) -> None:
    """Ctrl-C to `afford bringup`, as a user stops it; killed if it is not down in 40 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()


def _task(sentence: str, seed: int = 0, timeout: float = 300.0, auto_approve: bool = True, **goal: Any):
    """One RunTask goal (``goal``: run_task's other fields, e.g. task_id, policy); returns
    (status, result, the feedback printed)."""
    from afford_ros.graph_cli import run_task

    lines: list[str] = []

    class Out:
        def write(self, s: str) -> None:
            lines.append(s)

        def flush(self) -> None:
            pass

    status, result = run_task(
        sentence, seed=seed, timeout=timeout, out=Out(), auto_approve=auto_approve, **goal
    )
    return status, result, "".join(lines)


def _log(graph: dict) -> str:
    return graph["log"].read_text()[-6000:]


def _at_rest(monitor: Monitor, still: float = 3e-4, window: float = 1.0, timeout: float = 20.0) -> np.ndarray:
    """The arm's joints once they have moved less than ``still`` rad for ``window`` seconds.

    "Nothing moves" is judged from rest: after a trial an object left touching the hand (a mug
    settling on the rack) can still nudge the wrist by a milliradian, which is not a command."""
    samples: list[tuple[float, np.ndarray]] = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        now = time.monotonic()
        samples = [(t, q) for t, q in samples if now - t <= window] + [(now, monitor.q.copy())]
        qs = np.array([q for _, q in samples])
        if now - samples[0][0] >= 0.9 * window and np.ptp(qs, axis=0).max() < still:
            return samples[-1][1]
        time.sleep(0.05)
    raise AssertionError(f"the arm did not come to rest in {timeout} s: drift {np.ptp(qs, axis=0)}")


def test_pick_and_place_through_the_graph(graph) -> None:
    """A sentence goes in, the banana ends on the plate (simulator's check), and every topic of
    the contract carried messages: what a lab will see in RViz or Foxglove on its first trial."""
    status, result, feedback = _task("put the banana on the plate", seed=1)
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(graph)}"
    assert "[perceive]" in feedback and "[execute:grasp]" in feedback and "[evaluate]" in feedback
    assert result.stage_names[:2] == ["perceive", "plan"] and all(result.stage_success)
    counts = graph["monitor"].counts
    silent = [t.name for t in SEEN_BY_GRAPH if counts[t.name] == 0]
    assert not silent, f"contract topics that carried nothing: {silent}"


def test_hang_through_the_graph(graph) -> None:
    """The hang skill, the one whose success depends most on where the mug is held."""
    status, result, feedback = _task("hang the mug on the rack", seed=0)
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(graph)}"


def test_push_through_the_graph(graph) -> None:
    """The push skill: the open hand slides the tin onto the mat, a motion the executor runs
    with the same checks as any other; the operator is shown a push contact, not a grasp."""
    status, result, feedback = _task("push the coffee can onto the target", seed=0)
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(graph)}"
    assert "push contact #" in feedback and "grasp" not in feedback, feedback
    assert result.stage_names[-3:] == ["approach", "push", "evaluate"], result.stage_names


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [("pick up the unicorn", "unicorn"), ("   ", "empty"), ("fly the mug to the moon", "action")],
)
def test_bad_goals_are_refused_with_a_reason_and_nothing_moves(graph, sentence, reason) -> None:
    """A task the stack cannot parse or ground must end before the arm moves, and say why. (An
    object missing from the view is refused by perception: src/afford_bringup/test/test_perception_node.py;
    in sim mode every goal first builds its own scene, so it cannot be staged here.)"""
    monitor = graph["monitor"]
    before = _at_rest(monitor)
    planned = monitor.counts["/afford/trajectory"]
    status, result, _ = _task(sentence)
    assert not result.success and result.abstain_reason and reason in result.abstain_reason.lower()
    time.sleep(0.3)
    assert monitor.counts["/afford/trajectory"] == planned, "a refused goal reached the planner"
    assert np.max(np.abs(monitor.q - before)) < 1e-3


def test_a_trial_waits_for_the_operator_and_an_abort_moves_nothing(graph) -> None:
    """On the real arm every trial waits for a person: a goal that does not ask for automatic
    approval stops at the approve stage, and `afford trial abort` ends it before any motion."""
    from afford_ros.graph_cli import approve_trial

    monitor = graph["monitor"]
    assert approve_trial(True)[0] is False  # nothing is waiting yet
    box: dict = {}
    thread = threading.Thread(
        target=lambda: box.setdefault("out", _task("pick up the mug", 4, auto_approve=False))
    )
    thread.start()
    end = time.monotonic() + 120
    while monitor.trial_state != "approve" and time.monotonic() < end:
        time.sleep(0.05)
    assert monitor.trial_state == "approve", monitor.trial_state
    before = _at_rest(monitor)  # the reset placed the arm just now
    time.sleep(1.0)  # waiting means waiting: the arm stays put
    assert np.max(np.abs(monitor.q - before)) < 1e-3
    accepted, message = approve_trial(False, "test abort")
    assert accepted, message
    thread.join(timeout=60)
    status, result, _ = box["out"]
    assert not result.success and "operator aborted" in result.abstain_reason
    assert "test abort" in result.abstain_reason
    assert np.max(np.abs(monitor.q - before)) < 1e-3


def test_a_simulation_stall_mid_trial_is_explained_and_the_next_trial_works(graph) -> None:
    """A machine too busy to run the simulator (its loop silent past libfranka's 1 s timeout
    while the arm moves) ends the trial with that reason first, not a stale state to decode;
    the arm holds, the robot's state comes back by itself, and after the operator's recovery
    (`afford robot recover`) the next trial runs, without restarting the graph."""
    from afford_interfaces.srv import InjectFault
    from afford_ros.graph_cli import recover_robot

    monitor = graph["monitor"]
    inject: Any = monitor.node.create_client(InjectFault, "/sim_world/inject_fault")
    assert inject.wait_for_service(timeout_sec=10.0)
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("out", _task("pick up the mug", seed=3)))
    before = monitor.counts["/afford/trajectory"]
    thread.start()
    end = time.monotonic() + 120
    while time.monotonic() < end and monitor.counts["/afford/trajectory"] == before:
        time.sleep(0.05)
    time.sleep(0.3)  # the arm is moving
    answer = inject.call_async(InjectFault.Request(kind="stall", seconds=1.5))
    end = time.monotonic() + 10
    while not answer.done() and time.monotonic() < end:
        time.sleep(0.05)
    assert answer.done() and answer.result().success, answer.result()
    thread.join(timeout=120)
    status, result, feedback = box["out"]
    assert not result.success
    reason = result.abstain_reason
    assert reason.startswith("the simulation fell behind real time: the loop stalled for"), reason
    assert "communication" in reason, reason
    assert "stale robot state" not in reason, reason
    _at_rest(monitor, timeout=30.0)  # the state flows again, and the arm holds

    refused_status, refused, _ = _task("pick up the mug", seed=3)
    assert not refused.success and "/executor/recover" in refused.abstain_reason, refused.abstain_reason
    ok, message = recover_robot()
    assert ok, message
    status, result, feedback = _task("pick up the mug", seed=3)
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(graph)}"


def _during_motion(graph: dict, sentence: str, seed: int) -> tuple[threading.Thread, dict]:
    """Start a trial in a thread; returns once the planner has published its trajectory (the
    arm is about to move) and 0.3 s more."""
    monitor = graph["monitor"]
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("out", _task(sentence, seed=seed)))
    before = monitor.counts["/afford/trajectory"]
    thread.start()
    end = time.monotonic() + 120
    while time.monotonic() < end and monitor.counts["/afford/trajectory"] == before:
        time.sleep(0.05)
    assert monitor.counts["/afford/trajectory"] > before, "the trial never reached a motion\n" + _log(graph)
    time.sleep(0.3)
    return thread, box


def _inject(graph: dict, kind: str, seconds: float = 0.0) -> Any:
    from afford_interfaces.srv import InjectFault

    client: Any = graph["monitor"].node.create_client(InjectFault, "/sim_world/inject_fault")
    assert client.wait_for_service(timeout_sec=10.0)
    answer = client.call_async(InjectFault.Request(kind=kind, seconds=seconds))
    end = time.monotonic() + 10
    while not answer.done() and time.monotonic() < end:
        time.sleep(0.05)
    assert answer.done(), f"no answer from /sim_world/inject_fault ({kind})"
    return answer.result()


def test_a_reflex_mid_trial_stops_it_and_waits_for_the_operators_recovery(graph) -> None:
    """franky-sim's robot raises a reflex (as after a collision) while the arm moves: the trial
    ends naming the reflex, the arm holds, no trial moves the arm until the operator's
    `afford robot recover`, and the trial after that succeeds, without restarting the graph."""
    from afford_ros.graph_cli import recover_robot

    monitor = graph["monitor"]
    thread, box = _during_motion(graph, "pick up the mug", 3)
    answer = _inject(graph, "reflex")
    assert answer.success, answer.message
    thread.join(timeout=120)
    status, result, feedback = box["out"]
    assert not result.success
    assert "reflex" in result.abstain_reason, result.abstain_reason
    assert "stale robot state" not in result.abstain_reason
    assert any(e.startswith("reflex:") for e in monitor.errors), monitor.errors
    _at_rest(monitor, timeout=30.0)

    status, refused, _ = _task("pick up the mug", seed=3)
    assert not refused.success and "/executor/recover" in refused.abstain_reason, refused.abstain_reason
    assert "reflex" in refused.abstain_reason, refused.abstain_reason
    # The refused trial reset the scene (the arm to the scene's start) and moved nothing else.
    ok, message = recover_robot()
    assert ok, message
    status, result, feedback = _task("pick up the mug", seed=3)
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(graph)}"


def _pid_of(graph: dict, node: str) -> int:
    pids = [p for p in _descendants(graph["proc"].pid) if f"nodes.{node}" in _cmdline(p) and _alive(p)]
    assert len(pids) == 1, (node, pids)
    return pids[0]


def _servers(monitor: Monitor, service: str) -> set[bytes]:
    from afford_ros.nodes.task_server import service_servers

    return service_servers(monitor.node, service)


def _wait_new_server(monitor: Monitor, service: str, old: set[bytes], timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end and not (_servers(monitor, service) - old):
        time.sleep(0.2)
    assert _servers(monitor, service) - old, f"no new server on {service} after {timeout:.0f} s"


def test_the_planner_or_perception_killed_is_reported_restarted_and_the_next_trial_works(graph) -> None:
    """The planner killed while it runs the skill (out of memory, a crash): the trial ends
    saying so and the arm stops; the launcher restarts it. Perception killed between trials
    comes back the same way. The next trial succeeds without restarting the graph."""
    monitor = graph["monitor"]
    planner = _pid_of(graph, "planner")
    old_planner = _servers(monitor, "/planner/plan_grasp")
    old_perception = _servers(monitor, "/perception/perceive")
    thread, box = _during_motion(graph, "pick up the mug", 3)
    os.kill(planner, signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive(), "the trial went on waiting for a dead planner"
    status, result, feedback = box["out"]
    assert not result.success
    reason = result.abstain_reason
    assert reason.startswith("the planner (which runs the skill) "), reason
    assert ("was restarted while it worked" in reason or "went away" in reason) and "arm stopped" in reason
    _at_rest(monitor, timeout=30.0)

    os.kill(_pid_of(graph, "perception"), signal.SIGKILL)
    _wait_new_server(monitor, "/planner/plan_grasp", old_planner)
    _wait_new_server(monitor, "/perception/perceive", old_perception)
    assert graph["proc"].poll() is None, "the graph stopped:\n" + _log(graph)
    status, result, feedback = _task("pick up the mug", seed=3)
    assert result.success, f"{result.abstain_reason}\n{feedback}\n{_log(graph)}"
    log = graph["log"].read_text()
    for name in ("planner", "perception"):
        assert f"{name} exited with code -9; restarting" in log, name


def _answer(monitor: Monitor, srv_type: Any, name: str, request: Any, timeout: float = 60.0) -> Any:
    client: Any = monitor.node.create_client(srv_type, name)
    try:
        assert client.wait_for_service(timeout_sec=10.0), f"no {name}"
        future = client.call_async(request)
        end = time.monotonic() + timeout
        while not future.done() and time.monotonic() < end:
            time.sleep(0.02)
        assert future.done(), f"{name} did not answer {request!r:.200}"
        return future.result()
    finally:
        monitor.node.destroy_client(client)


def test_bad_input_from_anywhere_on_the_graph_is_refused_and_nothing_moves(graph) -> None:
    """The worst of what the message fuzzing (src/afford_ros/test/test_message_fuzz.py) found
    to matter, sent over DDS to the live nodes: non-finite, stale, future-stamped, wrongly framed,
    unreadable or huge inputs on every topic and service the graph takes. Each service answers
    with a refusal and its reason; no node crashes; no trajectory is published; the arm does not
    move; and perception still works on the real camera afterwards (a forged frame stamped in
    the future would otherwise be taken as the newest frame until its stamp passed)."""
    from geometry_msgs.msg import Pose, PoseStamped
    from sensor_msgs.msg import Image
    from std_msgs.msg import Header
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from afford_interfaces.action import FollowTrajectory
    from afford_interfaces.msg import Intent
    from afford_interfaces.srv import ApproveTrial, Gripper, InjectFault, Perceive, PlanGrasp, ResetScene
    from afford_ros.action_client import GoalSafeActionClient
    from afford_ros.nodes.clouds import to_cloud
    from afford_ros.nodes.convert import image_to_msg
    from afford_ros.qos import qos_profile

    monitor = graph["monitor"]
    node = monitor.node
    pids = {n: _pid_of(graph, n) for n in ("sim_world", "perception", "planner", "executor", "task_server")}
    # From a fresh scene: the trial before this one can leave a mug in the closed fingers,
    # slipping slowly enough to pass the rest check yet turn the wrist by a milliradian or two
    # over this test's minute (seen in CI). A fresh scene has nothing touching the hand.
    fresh_scene = ResetScene.Request(task_id="pick-mug-v1", seed=3)
    start = _answer(monitor, ResetScene, "/sim_world/reset", fresh_scene)
    assert start.success, start.message
    before = _at_rest(monitor)
    planned = monitor.counts["/afford/trajectory"]
    now = node.get_clock().now()
    from rclpy.duration import Duration

    stamp, later, earlier = now.to_msg(), (now + Duration(seconds=100)).to_msg(), Header().stamp
    joints = list(contract.ARM_JOINTS)

    def chunk(q: list[float], names: list[str] = joints, when: Any = stamp, n: int = 1) -> JointTrajectory:
        pts = [
            JointTrajectoryPoint(positions=q, time_from_start=Duration(seconds=0.1 * (i + 1)).to_msg())
            for i in range(n)
        ]
        header = Header(stamp=when, frame_id=contract.BASE_FRAME)
        return JointTrajectory(header=header, joint_names=names, points=pts)

    nan, huge = float("nan"), 1e9
    q0 = [float(v) for v in before]
    bad_motions = [
        chunk([nan] * 7),
        chunk([float("inf")] * 7),
        chunk([huge] * 7),
        chunk(q0, names=["joint_a"] * 7),
        chunk(q0[:3]),
        chunk(q0, when=earlier),  # unstamped
        chunk(q0, when=(now - Duration(seconds=30)).to_msg()),  # stale
        chunk(q0, when=later),  # stamped in the future
        chunk([q + 0.5 for q in q0], n=5000),
    ]
    # Topics: a policy's joint targets, and forged camera frames (one stamped 100 s ahead).
    targets = node.create_publisher(JointTrajectory, "/executor/joint_targets", qos_profile("reliable"))
    depth = node.create_publisher(Image, "/camera/aligned_depth_to_color/image_raw", qos_profile("sensor"))
    extrinsics = node.create_publisher(PoseStamped, "/camera/extrinsics", qos_profile("reliable"))
    flat = np.full((48, 64), 500, np.uint16)
    forged = [
        image_to_msg(flat, "16UC1", contract.CAMERA_FRAME, later),
        image_to_msg(flat, "16UC1", "world", stamp),
        image_to_msg(flat, "16UC1", contract.CAMERA_FRAME, stamp),
    ]
    forged[2].encoding = "bogus"
    short = image_to_msg(flat, "16UC1", contract.CAMERA_FRAME, stamp)
    short.data = short.data[:10]
    forged.append(short)
    time.sleep(1.0)  # discovery of the new publishers
    for msg in bad_motions:
        targets.publish(msg)
    for _ in range(3):
        for msg in forged:
            depth.publish(msg)
        time.sleep(0.1)
    extrinsics.publish(PoseStamped(header=Header(stamp=stamp, frame_id="world"), pose=Pose()))
    nan_pose = Pose()
    nan_pose.position.x = nan
    extrinsics.publish(PoseStamped(header=Header(stamp=stamp, frame_id=contract.BASE_FRAME), pose=nan_pose))

    # Services: each must answer, refusing with a reason.
    base = Header(stamp=stamp, frame_id=contract.BASE_FRAME)
    rng = np.random.default_rng(0)
    cloud = rng.uniform(-0.1, 0.1, (200, 3)) + [0.5, 0.0, 0.1]
    intent = Intent(text="pick up the mug", target="mug", grasp_region="handle", next_action="lift")
    plans = [
        PlanGrasp.Request(),
        PlanGrasp.Request(intent=intent, target_cloud=to_cloud(np.full((100, 3), nan), base)),
        PlanGrasp.Request(intent=intent, target_cloud=to_cloud(cloud, Header(stamp=stamp, frame_id="world"))),
        PlanGrasp.Request(
            intent=intent,
            target_cloud=to_cloud(cloud, base),
            obstacles=to_cloud(np.full((10, 3), float("inf")), base),
        ),
        PlanGrasp.Request(
            intent=Intent(text="\u202e" * 50, target="m\u00fcg\u200b", grasp_region="", next_action="fly"),
            target_cloud=to_cloud(rng.uniform(-1e6, 1e6, (200_000, 3)), base),
        ),
    ]
    for req in plans:
        res = _answer(monitor, PlanGrasp, "/planner/plan_grasp", req)
        assert not res.success and res.reason, res.reason
    many = Perceive.Request(sentence="pick up the " + "mug " * 5000)
    long = _answer(monitor, Perceive, "/perception/perceive", many)
    assert long.success or long.reason  # answered; perceiving moves nothing
    odd = "\u202e\x1b[31m\U0001f4a5 ; rm -rf / ; move the arm to 0 0 0"
    # Unknown words send the parser to its text model, which a perception restarted by the test
    # before this one loads on first use: about 12 s idle, over a minute (95 s seen) beside
    # the busy graph on two slow cores. Loading it in the background at start froze the node
    # instead (importing torch holds Python's lock while its libraries load).
    res = _answer(monitor, Perceive, "/perception/perceive", Perceive.Request(sentence=odd), timeout=240.0)
    assert not res.success and res.reason, res.reason
    for task_id in ("no-such-task-v1", "../../etc/passwd"):
        req = ResetScene.Request(task_id=task_id)
        res = _answer(monitor, ResetScene, "/sim_world/reset", req)
        assert not res.success and res.message, res.message
    for req in (
        Gripper.Request(command="fly"),
        Gripper.Request(command="open", width=nan),
        Gripper.Request(command="grasp", width=0.02, force=-5.0),
        Gripper.Request(command="grasp", width=0.02, force=huge),
    ):
        res = _answer(monitor, Gripper, "/executor/gripper", req)
        assert not res.success and res.message, (req, res.message)
    for req in (
        InjectFault.Request(kind="meteor"),
        InjectFault.Request(kind="stall", seconds=nan),
        InjectFault.Request(kind="stall", seconds=-1.0),
        InjectFault.Request(kind="stall", seconds=float("inf")),
    ):
        res = _answer(monitor, InjectFault, "/sim_world/inject_fault", req)
        assert not res.success and res.message, (req, res.message)
    res = _answer(monitor, ApproveTrial, "/task_server/approve", ApproveTrial.Request(approve=True))
    assert not res.accepted and "operator's token" in res.message, res.message
    # The executor's action: each goal refused (or run to a refusal) with a reason.
    follow: Any = GoalSafeActionClient(node, FollowTrajectory, "/executor/follow_trajectory")
    try:
        assert follow.wait_for_server(timeout_sec=10.0)
        for traj in (JointTrajectory(), chunk([nan] * 7), chunk([huge] * 7), chunk(q0, names=["a"] * 7)):
            sent = follow.send_goal_async(FollowTrajectory.Goal(trajectory=traj))
            end = time.monotonic() + 30
            while not sent.done() and time.monotonic() < end:
                time.sleep(0.02)
            handle = sent.result()
            if handle.accepted:
                got = handle.get_result_async()
                while not got.done() and time.monotonic() < end:
                    time.sleep(0.02)
                assert got.done()
                res = got.result().result
                assert not res.success and res.message, res.message
    finally:
        follow.destroy()
    node.destroy_publisher(targets)
    node.destroy_publisher(depth)
    node.destroy_publisher(extrinsics)

    time.sleep(0.5)
    assert {n: _pid_of(graph, n) for n in pids} == pids, "a node crashed (and was restarted)"
    assert monitor.counts["/afford/trajectory"] == planned, "the planner published a trajectory"
    assert np.max(np.abs(monitor.q - before)) < 1e-3, "the arm moved"
    # Perception still takes the real camera's frames (the forged future frame was refused).
    fresh = ResetScene.Request(task_id="pick-mug-v1", seed=3)
    reset = _answer(monitor, ResetScene, "/sim_world/reset", fresh)
    assert reset.success, reset.message
    time.sleep(1.2)
    seen = _answer(monitor, Perceive, "/perception/perceive", Perceive.Request(sentence="pick up the mug"))
    assert seen.success, seen.reason
    assert seen.target_cloud.width * seen.target_cloud.height > 100


def test_losing_the_camera_mid_trial_stops_the_arm_and_aborts(graph) -> None:
    """A camera that dies while the arm moves must stop the trial: the arm never acts on a scene
    it can no longer see. The sim world's render process is killed while the skill runs."""
    sim_world = [p for p in _descendants(graph["proc"].pid) if "nodes.sim_world" in _cmdline(p)]
    assert sim_world, "no sim_world process"
    renderers = [p for p in _descendants(sim_world[0]) if _alive(p)]
    assert renderers, "sim_world has no render process"
    box: dict = {}

    def run() -> None:
        box["out"] = _task("pick up the mug", seed=3)

    thread = threading.Thread(target=run)
    thread.start()
    monitor = graph["monitor"]
    end = time.monotonic() + 120
    before = dict(monitor.counts)
    while time.monotonic() < end and monitor.counts["/afford/trajectory"] == before["/afford/trajectory"]:
        time.sleep(0.05)
    for pid in renderers:
        os.kill(pid, signal.SIGKILL)
    thread.join(timeout=120)
    status, result, feedback = box["out"]
    assert not result.success
    assert "camera stream lost" in result.abstain_reason, result.abstain_reason


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_ctrl_c_takes_the_whole_graph_down(graph) -> None:
    """Ctrl-C on `afford bringup` must leave no node, render process or franky-sim behind: a
    stray executor would keep a connection to the robot."""
    proc = graph["proc"]
    family = [proc.pid, *_descendants(proc.pid)]
    assert len(family) >= 6
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=40) == 0, _log(graph)
    time.sleep(0.5)
    left = [p for p in family if _alive(p)]
    assert not left, f"left running: {[_cmdline(p) for p in left]}"
