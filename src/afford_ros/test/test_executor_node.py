"""The executor node in real processes: a franky-sim server, the node, and this test as the graph.

franky-sim serves the libfranka protocol on a loopback address unique to this module; the
executor node connects to it with franky exactly as it connects to a real FR3; the test drives
it over ROS 2 (unique ROS_DOMAIN_ID) as the planner and the operator would.

Injected robot error. franky-sim simulates no robot errors, so the server here is
:class:`afford_sim.franky_faults.FaultSimulationServer`, whose robot raises a reflex on request
(libfranka's ``kReflexAborted`` Move status, reflex mode in the state, motion refused until
libfranka's automatic error recovery); this test's server requests it on SIGUSR1. Everything
from the wire up (libfranka raising its ControlException, franky, the executor, ROS) is the real
code path. On SIGUSR2 the same server stalls its loop for ``STALL_S`` (no step, no state
packet), as a simulator starved of CPU does: past libfranka's 1 s UDP timeout the client loses
the connection. Run as a script, this file is that server:
``python test_executor_node.py --serve 127.x.y.z``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

HOST = f"127.{(os.getpid() >> 8) % 200 + 20}.{os.getpid() % 256}.{7}"
DOMAIN_ID = str(100 + os.getpid() % 100)
#: How long SIGUSR2 stalls the test server's loop (s): past libfranka's 1 s UDP timeout.
STALL_S = 1.5


# ---------------------------------------------------------------------- the test-only server
def serve(hostname: str) -> None:
    """franky-sim (MuJoCo) on ``hostname`` with a SIGUSR1-triggered reflex; see the module doc."""
    from franky_sim.mujoco_simulator import MujocoSimulator

    from afford_sim.franky_faults import FaultSimulationServer

    with MujocoSimulator(enable_visualization=False) as sim:
        sim.add_robot()
        with FaultSimulationServer(sim, hostname_candidates=[hostname]) as server:

            def inject(_sig: int, _frame: Any) -> None:
                server.request_reflex()

            def finish(_sig: int, _frame: Any) -> None:
                server.running = False

            def stall(_sig: int, _frame: Any) -> None:
                # Handlers run on the main thread, between two of run_forever's steps.
                time.sleep(STALL_S)

            signal.signal(signal.SIGUSR1, inject)
            signal.signal(signal.SIGUSR2, stall)
            signal.signal(signal.SIGTERM, finish)
            signal.signal(signal.SIGINT, finish)
            print("READY", flush=True)
            server.run_forever()


# ---------------------------------------------------------------------- fixtures
def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = DOMAIN_ID
    return env


def _wait_line(proc: subprocess.Popen[str], token: str, timeout: float) -> None:
    end = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if token in line:
            return
        if not line and proc.poll() is not None:
            break
    raise RuntimeError(f"process did not print {token!r} within {timeout} s (rc={proc.poll()})")


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture(scope="module")
def sim_server() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", HOST],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    try:
        _wait_line(proc, "READY", 60.0)
        threading.Thread(target=lambda: proc.stdout and proc.stdout.read(), daemon=True).start()
        yield proc
    finally:
        _kill(proc)


@pytest.fixture(scope="module")
def executor_proc(sim_server: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "afford_ros.nodes.executor", "--ros-args", "-p", f"robot_ip:={HOST}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    log: list[str] = []

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line)

    proc.log = log  # type: ignore[attr-defined]  # read by tests that end the process
    try:
        _wait_line(proc, "executor ready", 60.0)
        threading.Thread(target=drain, daemon=True).start()
        yield proc
    finally:
        _kill(proc)
        # Shown by pytest only for a failing run: the node's own account of what happened.
        print("---- executor log ----\n" + "".join(log[-80:]))


class Graph:
    """The test's side of the graph: joint states, errors, the action and the services."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Empty
        from std_srvs.srv import Trigger

        from afford_interfaces.action import FollowTrajectory
        from afford_interfaces.msg import RobotError
        from afford_interfaces.srv import Gripper
        from afford_ros.action_client import GoalSafeActionClient
        from afford_ros.qos import qos_profile

        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=int(DOMAIN_ID))
        self.node = rclpy.create_node("executor_test", context=self.context)
        self.lock = threading.Lock()
        self.states: list[tuple[float, np.ndarray, np.ndarray]] = []
        self.errors: list[Any] = []
        self.node.create_subscription(JointState, "/joint_states", self._on_state, qos_profile("sensor"))
        self.node.create_subscription(
            RobotError, "/afford/robot_error", self._on_error, qos_profile("reliable")
        )
        self.stop_pub = self.node.create_publisher(Empty, "/afford/stop", qos_profile("reliable"))
        from trajectory_msgs.msg import JointTrajectory

        self.targets_pub = self.node.create_publisher(
            JointTrajectory, "/executor/joint_targets", qos_profile("reliable")
        )
        self.action: Any = GoalSafeActionClient(self.node, FollowTrajectory, "/executor/follow_trajectory")
        self.gripper: Any = self.node.create_client(Gripper, "/executor/gripper")
        self.recover: Any = self.node.create_client(Trigger, "/executor/recover")
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()
        self.FollowTrajectory, self.Gripper, self.Trigger, self.Empty = (
            FollowTrajectory,
            Gripper,
            Trigger,
            Empty,
        )

    def _on_state(self, msg: Any) -> None:
        with self.lock:
            self.states.append((time.monotonic(), np.array(msg.position[:7]), np.array(msg.velocity[:7])))
            del self.states[:-3000]

    def _on_error(self, msg: Any) -> None:
        with self.lock:
            self.errors.append(msg)

    def q(self, timeout: float = 10.0) -> np.ndarray:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if self.states and time.monotonic() - self.states[-1][0] < 0.2:
                    return self.states[-1][1].copy()
            time.sleep(0.02)
        raise AssertionError("no fresh /joint_states from the executor")

    def dq(self) -> np.ndarray:
        with self.lock:
            return self.states[-1][2].copy()

    def wait(self, future: Any, timeout: float) -> Any:
        end = time.monotonic() + timeout
        while not future.done():
            assert time.monotonic() < end, "no answer in time"
            time.sleep(0.01)
        return future.result()

    def send(self, times: np.ndarray, qs: np.ndarray, stamp: Any = None) -> Any:
        from afford_ros.nodes.convert import trajectory_msg

        msg = trajectory_msg(times, qs, stamp)
        assert self.action.wait_for_server(timeout_sec=10.0)
        self.feedback: list[float] = []
        goal = self.wait(
            self.action.send_goal_async(
                self.FollowTrajectory.Goal(trajectory=msg),
                feedback_callback=lambda f: self.feedback.append(f.feedback.progress),
            ),
            10.0,
        )
        assert goal.accepted
        return goal

    def call(self, client: Any, request: Any, timeout: float = 15.0) -> Any:
        assert client.wait_for_service(timeout_sec=10.0)
        return self.wait(client.call_async(request), timeout)

    def errors_since(self, n: int) -> list[Any]:
        with self.lock:
            return list(self.errors[n:])

    def wait_errors(self, n: int, count: int, timeout: float) -> list[Any]:
        """The robot errors after the first ``n``, once ``count`` have come (or at ``timeout``)."""
        end = time.monotonic() + timeout
        while len(self.errors_since(n)) < count and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.2)  # anything that would follow
        return self.errors_since(n)

    def wait_moving(self, speed: float = 0.05, timeout: float = 10.0, n_err: int | None = None) -> None:
        """Until a joint moves faster than ``speed``; failing, says the errors after ``n_err``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if np.max(np.abs(self.dq())) > speed:
                return
            time.sleep(0.005)
        said = "" if n_err is None else f": errors {[(e.kind, e.message) for e in self.errors_since(n_err)]}"
        raise AssertionError(f"the arm never started moving{said}")

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


@pytest.fixture(scope="module")
def graph(executor_proc: subprocess.Popen[str]) -> Iterator[Graph]:
    g = Graph()
    try:
        g.q(timeout=20.0)
        yield g
    finally:
        g.close()


def ramp(q0: np.ndarray, delta: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray]:
    """A 100 Hz cosine-profile joint trajectory from q0 to q0 + delta, as the planner emits."""
    t = np.arange(0.0, duration + 1e-9, 0.01)
    s = 0.5 * (1.0 - np.cos(np.pi * t / duration))
    return t, q0 + s[:, None] * np.asarray(delta)[None, :]


def at_rest_time(graph: Graph, since: float, timeout: float = 5.0, hold: float = 0.05) -> float:
    """Seconds from ``since`` until every /joint_states velocity stays below 0.01 rad/s for ``hold``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with graph.lock:
            samples = [(t, float(np.max(np.abs(dq)))) for t, _q, dq in graph.states if t >= since]
        calm: float | None = None
        for t, speed in samples:
            if speed < 0.01:
                calm = t if calm is None else calm
            else:
                calm = None
        if calm is not None and samples[-1][0] - calm >= hold:
            return calm - since
        time.sleep(0.02)
    raise AssertionError("the arm did not come to rest")


# ---------------------------------------------------------------------- tests
def test_trajectory_runs_and_joint_states_follow(graph: Graph) -> None:
    """A checked trajectory reaches the robot and /joint_states tracks it: the rest of the graph
    (the planner's next stage, the operator view) sees the arm where it really is."""
    q0 = graph.q()
    # Joint 7 is left alone: after a joint-7 motion franky-sim chatters it at +-0.077 rad/s forever
    # (position steady within 2e-4 rad), which would spoil every "at rest" check that follows.
    delta = np.array([0.3, 0.15, 0.0, 0.2, 0.0, 0.1, 0.0])
    times, qs = ramp(q0, delta, 2.0)
    goal = graph.send(times, qs)
    seen: list[np.ndarray] = []
    result_future = goal.get_result_async()
    while not result_future.done():
        seen.append(graph.q())
        time.sleep(0.05)
    result = result_future.result().result
    assert result.success, result.message
    assert result.error_kind == ""
    time.sleep(0.5)
    q_end = graph.q()
    assert np.max(np.abs(q_end - qs[-1])) < 0.01, q_end - qs[-1]
    # Mid-motion states lie on the planned path (not a jump to the end).
    path_err = [float(np.min(np.max(np.abs(qs - q), axis=1))) for q in seen]
    progressed = [float((q - q0)[0] / delta[0]) for q in seen]
    assert any(0.2 < p < 0.8 for p in progressed), progressed
    assert max(path_err) < 0.02, max(path_err)
    # Progress feedback came while it ran, within [0, 1] and never going back. The final 1.0 is
    # published just before the result, but rclpy's ActionClient drops a goal's feedback
    # callback as soon as the result arrives, so that last message may never be delivered:
    # completion is what the result and the arm's state above say.
    fb = list(graph.feedback)
    assert fb and all(0.0 <= f <= 1.0 for f in fb), fb
    assert all(b >= a for a, b in zip(fb, fb[1:], strict=False)), fb
    assert any(0.2 < f < 0.8 for f in fb), fb


def test_limit_violation_is_refused_and_arm_stays(graph: Graph) -> None:
    """A trajectory into joint 4's limit margin is refused before franky sees it, reported as a
    'limit' RobotError, and the arm does not move at all."""
    at_rest_time(graph, time.monotonic())
    q0 = graph.q()
    n_err = len(graph.errors_since(0))
    target = q0.copy()
    target[3] = -0.152 - 0.02  # FR3 joint 4 upper limit is -0.1518: inside the 0.05 rad margin
    times, qs = ramp(q0, target - q0, 8.0)
    goal = graph.send(times, qs)
    result = graph.wait(goal.get_result_async(), 10.0).result
    assert not result.success and result.error_kind == "limit"
    assert "joint 4" in result.message
    time.sleep(0.5)
    errors = graph.errors_since(n_err)
    assert [e.kind for e in errors] == ["limit"] and not errors[0].needs_recovery
    assert np.max(np.abs(graph.q() - q0)) < 1e-3


def test_a_trajectory_that_waited_too_long_or_comes_from_the_future_is_refused(graph: Graph) -> None:
    """A goal that sat in a queue past MAX_TRAJECTORY_AGE_S (its sender waits at most
    GOAL_ANSWER_S for the answer, then gives up) must not start: nobody follows it any more. A
    stamp ahead of the clock is refused too. Nothing moves; a fresh stamp runs."""
    from rclpy.duration import Duration

    from afford_ros.nodes.executor import MAX_TRAJECTORY_AGE_S
    from afford_ros.nodes.robot_link import GOAL_ANSWER_S

    assert MAX_TRAJECTORY_AGE_S < GOAL_ANSWER_S
    at_rest_time(graph, time.monotonic())
    q0 = graph.q()
    times, qs = ramp(q0, np.array([0.1, 0, 0, 0, 0, 0, 0]), 1.0)
    now = graph.node.get_clock().now()
    for stamp, why in (
        (now - Duration(seconds=MAX_TRAJECTORY_AGE_S + 1.0), "waited too long to start"),
        (now + Duration(seconds=2.0), "in the future"),
    ):
        result = graph.wait(graph.send(times, qs, stamp.to_msg()).get_result_async(), 10.0).result
        assert not result.success and result.error_kind == "limit" and why in result.message, result.message
    time.sleep(0.3)
    assert np.max(np.abs(graph.q() - q0)) < 1e-3
    fresh = graph.node.get_clock().now().to_msg()
    result = graph.wait(graph.send(times, qs, fresh).get_result_async(), 60.0).result
    assert result.success, result.message


def test_stop_topic_halts_moving_arm(graph: Graph, record_property: Any) -> None:
    """The software stop halts a moving arm: on the real robot this is what an operator reaches
    for first. The latency is recorded here and measured in bench/bench_stop.py; the test asks
    that the arm comes to rest (within 5 s, a failure timeout, not a speed goal) short of its goal."""
    q0 = graph.q()
    n_err = len(graph.errors_since(0))
    times, qs = ramp(q0, np.array([-0.6, 0, 0, 0, 0, 0, 0]), 3.0)
    goal = graph.send(times, qs)
    graph.wait_moving(0.15)
    t_stop = time.monotonic()
    graph.stop_pub.publish(graph.Empty())
    latency = at_rest_time(graph, t_stop)
    record_property("stop_to_rest_s", latency)
    print(f"stop topic -> arm at rest (|dq| < 0.01 rad/s): {latency:.3f} s")
    result = graph.wait(goal.get_result_async(), 5.0).result
    assert not result.success and result.error_kind == "stopped"
    assert np.max(np.abs(graph.q() - qs[-1])) > 0.1  # it stopped well short of the goal
    time.sleep(0.3)
    assert "stopped" in [e.kind for e in graph.errors_since(n_err)]


def test_cancel_halts_moving_arm(graph: Graph) -> None:
    """Cancelling the goal halts the arm too: a client that gives up must not leave it moving."""
    q0 = graph.q()
    times, qs = ramp(q0, np.array([0.6, 0, 0, 0, 0, 0, 0]), 3.0)
    goal = graph.send(times, qs)
    graph.wait_moving(0.15)
    t_cancel = time.monotonic()
    graph.wait(goal.cancel_goal_async(), 5.0)
    at_rest_time(graph, t_cancel)  # raises if the arm is still moving 5 s later
    response = graph.wait(goal.get_result_async(), 5.0)
    assert response.status == 5  # GoalStatus.STATUS_CANCELED
    assert response.result.error_kind == "stopped"
    assert np.max(np.abs(graph.q() - qs[-1])) > 0.1  # it stopped well short of the goal


def stream_chunks(
    graph: Graph,
    q0: np.ndarray,
    delta: np.ndarray,
    duration: float,
    rate: float = 10.0,
    seconds: float | None = None,
) -> list[float]:
    """Stream a cosine ramp from q0 to q0 + delta (over ``duration`` s) as a policy would: every
    1/rate s a chunk of the next three seconds of targets at 50 Hz, stamped.
    The ramp runs on the wall clock but never more than ``lead`` ahead of where the arm is seen
    on it (a policy acts on what it observes; on this loaded machine chunks now and then arrive
    up to 2.5 s late, the arm holds meanwhile, and an open-loop ramp would then jump ahead of it).
    Until the ramp is done, or ``seconds`` (default 3 x duration) have passed. Returns the
    chunks' stamps (s): a gap between two longer than stream_timeout_s starts a new stream."""
    from afford_ros.nodes.convert import trajectory_msg

    j = int(np.argmax(np.abs(delta)))
    lead = 0.25  # s of ramp ahead of the arm; franky-sim trails its setpoint by ~0.1 s

    def at(tau: np.ndarray) -> np.ndarray:
        s = 0.5 * (1.0 - np.cos(np.pi * np.clip(tau, 0.0, duration) / duration))
        return q0 + s[:, None] * delta[None, :]

    t0 = time.monotonic()
    end = t0 + (3.0 * duration if seconds is None else seconds)
    tau = 0.0
    stamps: list[float] = []
    while tau < duration and time.monotonic() < end:
        stamp = graph.node.get_clock().now().to_msg()  # the points' times count from here
        stamps.append(stamp.sec + 1e-9 * stamp.nanosec)
        tau = time.monotonic() - t0
        if delta[j] != 0.0:
            frac = float(np.clip((graph.q()[j] - q0[j]) / delta[j], 0.0, 1.0))
            tau = min(tau, duration * float(np.arccos(1.0 - 2.0 * frac)) / np.pi + lead)
        t = np.arange(1, 151) * 0.02
        graph.targets_pub.publish(trajectory_msg(t, at(tau + t), stamp))
        time.sleep(1.0 / rate)
    return stamps


STREAM_TIMEOUT_S = 0.5  # the executor's default stream_timeout_s


def streams_in(stamps: list[float]) -> int:
    """How many streams the executor saw in a sender's stamps: a stall of the sending thread
    longer than stream_timeout_s (a loaded machine) reads, rightly, as a new stream."""
    return 1 + int(np.sum(np.diff(stamps) > STREAM_TIMEOUT_S)) if stamps else 0


def test_streamed_joint_targets_move_the_arm_through_the_checks(graph: Graph) -> None:
    """A policy's chunks of joint targets drive the arm (each replacing the last), the arm holds the
    last target when they stop coming (reported once), and a chunk past a limit is refused and
    halts the arm."""
    at_rest_time(graph, time.monotonic())
    q0 = graph.q()
    n_err = len(graph.errors_since(0))
    delta = np.array([0.25, 0, 0, 0, 0, 0, 0])
    stream_chunks(graph, q0, delta, 2.5)
    # As a policy ends: the goal held for a moment, sent until it is surely there (a chunk that
    # arrives after all its targets are due is dropped; a loaded machine delays some).
    from afford_ros.nodes.convert import trajectory_msg

    for _ in range(3):
        stamp = graph.node.get_clock().now().to_msg()
        hold = np.tile(q0 + delta, (150, 1))
        graph.targets_pub.publish(trajectory_msg(np.arange(1, 151) * 0.02, hold, stamp))
        time.sleep(0.1)
    at_rest_time(graph, time.monotonic(), timeout=8.0)
    assert np.max(np.abs(graph.q() - (q0 + delta))) < 0.01  # it followed to the end and holds there
    # The stream counts as ended stream_timeout_s after the last chunk's last target (3 s past
    # its sending): reported once, as a stop.
    errors = graph.wait_errors(n_err, 1, timeout=10.0)
    said = [(e.kind, e.message) for e in errors]
    assert [e.kind for e in errors] == ["stopped"] and "no joint targets" in errors[0].message, said

    # An unstamped chunk is refused (sat in a queue, it would be taken as fresh): nothing moves.
    q1 = graph.q()
    n_err = len(graph.errors_since(0))
    t, qs = ramp(q1, np.array([0.1, 0, 0, 0, 0, 0, 0]), 1.0)
    graph.targets_pub.publish(trajectory_msg(t[1:], qs[1:]))
    errors = graph.wait_errors(n_err, 1, timeout=5.0)
    assert errors[0].kind == "limit" and "header.stamp" in errors[0].message
    assert np.max(np.abs(graph.dq())) < 0.01
    time.sleep(0.8)  # a refused chunk blocks the stream until the sender pauses stream_timeout_s

    # Now a chunk whose targets run into joint 4's limit margin: refused, the arm halts.
    q1 = graph.q()
    n_err = len(graph.errors_since(0))
    bad = np.array([-0.3, 0, 0, 0, 0, 0, 0])
    t, qs = ramp(q1, bad, 2.0)
    now = graph.node.get_clock().now().to_msg
    # A fine chunk: the arm moves. Sent again, freshly stamped, until it does, as a policy keeps
    # sending: on a loaded machine one chunk can come too late to take (dropped, logged).
    for _ in range(20):
        graph.targets_pub.publish(trajectory_msg(t[1:], qs[1:], now()))
        try:
            graph.wait_moving(0.05, timeout=0.25, n_err=n_err)
            break
        except AssertionError:
            continue
    graph.wait_moving(0.05, timeout=0.1, n_err=n_err)
    beyond = qs[-1].copy()
    beyond[3] = -0.152 - 0.02  # FR3 joint 4's upper limit is -0.1518: inside the 0.05 rad margin
    current = graph.q()
    graph.targets_pub.publish(trajectory_msg(np.array([1.0, 2.0]), np.stack([current, beyond]), now()))
    t_refused = time.monotonic()
    at_rest_time(graph, t_refused)
    errors = graph.wait_errors(n_err, 1, timeout=5.0)
    assert [e.kind for e in errors][:1] == ["limit"] and "joint targets refused" in errors[0].message
    assert np.max(np.abs(graph.q() - qs[-1])) > 0.05  # halted short of the fine chunk's end
    assert graph.q()[3] < -0.2  # and nowhere near the refused target


def test_a_late_chunk_is_retimed_and_its_stream_goes_on(graph: Graph) -> None:
    """A policy's two-point chunk (where the previous one puts the arm ``lead`` ahead, then the
    next target a period later) whose delivery a busy machine delays past its lead is re-timed,
    and the stream after it with it: its first target is not dropped, which would leave its
    second one a jump from the running chunk (a step here is 0.06 rad, over the 0.05 allowed)
    and the stream refused. The arm follows the whole ramp."""
    from afford_ros.nodes.convert import trajectory_msg

    time.sleep(0.8)  # the previous test's refused chunk blocks the stream until a pause
    at_rest_time(graph, time.monotonic())
    q0 = graph.q()
    # 0.24 rad/s: under the speed this executor's driver follows unslowed (dynamics_factor 0.15).
    step = np.array([0.06, 0, 0, 0, 0, 0, 0])
    lead, period, steps, late = 0.2, 0.25, 6, 0.3
    clock = graph.node.get_clock()
    for _attempt in range(3):
        n_err = len(graph.errors_since(0))
        t0 = clock.now().nanoseconds * 1e-9
        starved = 0.0  # how late this test's own publisher sent a chunk it meant to send on time
        for k in range(1, steps + 1):
            stamp = t0 + k * period
            # Chunk 3 reaches the executor 0.3 s after its stamp (its first target then 0.1 s
            # overdue: re-timed by 0.12 s); chunk 4, due before that, is sent right after it.
            due = stamp + (late if k == 3 else 0.0)
            while clock.now().nanoseconds * 1e-9 < due:
                time.sleep(0.002)
            if k not in (3, 4):
                starved = max(starved, clock.now().nanoseconds * 1e-9 - due)
            points = np.stack([q0 + (k - 1) * step, q0 + k * step])
            msg = trajectory_msg(np.array([lead, lead + period]), points)
            msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int((stamp % 1.0) * 1e9)
            graph.targets_pub.publish(msg)
        at_rest_time(graph, time.monotonic(), timeout=8.0)
        # The stream's end (reported once) or its fault: then a trajectory may run.
        said = [(e.kind, e.message) for e in graph.wait_errors(n_err, 1, timeout=10.0)]
        # franky's planner now and then fails a small motion from rest (error -111), which ends
        # the stream whatever its timing (the policy node starts again, as here). A publisher
        # this test could not run on time (a chunk 0.2 s late on a starved machine) made a gap
        # the executor rightly stops on: that run tests nothing, so it is run again.
        if not any("-111" in m for _, m in said) and starved < 0.2:
            break
        time.sleep(0.6)  # a halted stream refuses chunks until a pause; trajectories run at once
        times, qs = ramp(graph.q(), q0 - graph.q(), 1.0)
        assert graph.wait(graph.send(times, qs).get_result_async(), 15.0).result.success
    assert starved < 0.2, f"this test's publisher ran {starved:.2f} s late in three tries: a starved machine"
    assert not [m for k, m in said if k == "limit"], said
    assert np.max(np.abs(graph.q() - (q0 + steps * step))) < 0.01, (graph.q() - q0, said)
    # Back where it was: the tests after this one move joint 1 from there, within the TCP box.
    times, qs = ramp(graph.q(), q0 - graph.q(), 2.0)
    assert graph.wait(graph.send(times, qs).get_result_async(), 15.0).result.success


def _chunk_age(message: str) -> float | None:
    """The age the executor gave a refused chunk ("... chunk 0.62 s old) ..."), if it said one."""
    found = re.search(r"chunk (\d+\.\d+) s old", message)
    return float(found.group(1)) if found else None


def test_a_late_first_chunk_from_rest_runs_whole(graph: Graph) -> None:
    """A stream's first chunk that a busy machine delivers 0.6 s late (two busy cores delivered
    one 0.59 s late: a policy's first inference, a simulator's first steps), while the arm is
    still, is re-timed whole: dropping its overdue targets would leave its first kept one 0.057
    rad from rest, over the 0.05 allowed, and the stream refused. Older than the executor's
    1 s for a start (its sender's view too stale to act on whole), its overdue targets are
    dropped and the jump refused: the arm does not move."""
    from afford_ros.nodes.convert import trajectory_msg

    time.sleep(0.8)  # a refused chunk before this test blocks the stream until a pause
    at_rest_time(graph, time.monotonic())
    q0 = graph.q()
    # A cosine ramp of 0.33 rad over 2.2 s (at most 0.24 rad/s: under the speed this executor's
    # driver follows unslowed, dynamics_factor 0.15), its targets every 20 ms from 20 ms ahead.
    delta, duration = np.array([0.33, 0, 0, 0, 0, 0, 0]), 2.2
    t = np.arange(1, int(round(duration / 0.02)) + 1) * 0.02
    qs = q0 + (0.5 * (1.0 - np.cos(np.pi * t / duration)))[:, None] * delta[None, :]
    clock = graph.node.get_clock()

    def send_late(late: float) -> None:
        stamp = clock.now().nanoseconds * 1e-9 - late  # as if it was sent ``late`` s ago
        msg = trajectory_msg(t, qs)
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int((stamp % 1.0) * 1e9)
        graph.targets_pub.publish(msg)

    for _attempt in range(3):
        n_err = len(graph.errors_since(0))
        send_late(0.6)
        at_rest_time(graph, time.monotonic() + 0.5, timeout=8.0)
        # The stream's end (reported once), or its refusal, or franky's fault.
        said = [(e.kind, e.message) for e in graph.wait_errors(n_err, 1, timeout=10.0)]
        ages = [a for _, m in said if (a := _chunk_age(m)) is not None]
        # franky's planner now and then fails a small motion from rest (error -111); a chunk
        # this machine delivered more than 0.4 s later still (over the 1 s) tests nothing.
        if not any("-111" in m for _, m in said) and not any(a > 1.0 for a in ages):
            break
        time.sleep(0.8)  # a halted stream refuses chunks until a pause; trajectories run at once
        back_t, back_q = ramp(graph.q(), q0 - graph.q(), 1.0)
        assert graph.wait(graph.send(back_t, back_q).get_result_async(), 15.0).result.success
    assert not [m for k, m in said if k == "limit"], said
    assert [k for k, _ in said] == ["stopped"] and "no joint targets" in said[0][1], said
    assert np.max(np.abs(graph.q() - qs[-1])) < 0.01, (graph.q() - q0, said)  # it ran to the end

    # Back at rest at q0, the same chunk 1.6 s late: its first kept target 0.27 rad from rest.
    back_t, back_q = ramp(graph.q(), q0 - graph.q(), 2.0)
    assert graph.wait(graph.send(back_t, back_q).get_result_async(), 15.0).result.success
    time.sleep(0.6)  # > stream_timeout_s: a new stream
    at_rest_time(graph, time.monotonic())
    n_err = len(graph.errors_since(0))
    send_late(1.6)
    said = [(e.kind, e.message) for e in graph.wait_errors(n_err, 1, timeout=3.0)]
    # Refused as a jump, or (delivered 0.6 s later still: every target overdue) dropped unsaid.
    assert all(k == "limit" and "(start" in m for k, m in said), said
    assert np.max(np.abs(graph.q() - q0)) < 0.01, (graph.q() - q0, said)
    assert np.max(np.abs(graph.dq())) < 0.01


def test_a_stop_halts_a_stream_until_the_operator_rearms(graph: Graph) -> None:
    """The operator's stop halts a streaming policy, and the policy's next chunks do not start the
    arm again (refused, said once), pauses and all, until /executor/recover is called."""
    time.sleep(0.8)  # the previous test's refused chunk blocks the stream until a pause
    at_rest_time(graph, time.monotonic())
    q0 = graph.q()
    n_err = len(graph.errors_since(0))
    sent: list[float] = []
    sender = threading.Thread(
        target=lambda: sent.extend(
            stream_chunks(graph, q0, np.array([0.3, 0, 0, 0, 0, 0, 0]), 6.0, seconds=4.0)
        ),  # slow: a late stop still lands short
        daemon=True,
    )
    sender.start()
    graph.wait_moving(0.03)
    time.sleep(0.3)
    graph.stop_pub.publish(graph.Empty())
    at_rest_time(graph, time.monotonic())
    q_stopped = graph.q()
    sender.join()  # the policy kept sending for the rest of its 4 s
    assert np.max(np.abs(graph.q() - q_stopped)) < 0.005  # and the arm stayed where it stopped
    assert np.max(np.abs(q_stopped - q0)) < 0.29  # short of the stream's goal
    kinds = [(e.kind, e.message) for e in graph.wait_errors(n_err, 2, timeout=5.0)]
    # Reported as halted by the stop (or, when a stall here delayed the chunks past the
    # watchdog before the stop came, as ended), and the chunks after it refused, said once.
    assert ("stopped", "joint-target stream halted by the stop topic") in kinds or any(
        k == "stopped" and "no joint targets" in m for k, m in kinds
    ), kinds
    # Once per stream, not once per chunk (some 30 came after the stop): a stall of the sending
    # thread past stream_timeout_s starts a new stream, which hears it again.
    refusals = [m for k, m in kinds if k == "limit" and "stop topic" in m]
    assert 1 <= len(refusals) <= streams_in(sent), (kinds, streams_in(sent))
    # A new stream after a pause (the next policy run) stays refused, and hears it once too: its
    # sender watches from its own start and must not stream into silence.
    time.sleep(1.0)  # > stream_timeout_s
    n_err = len(graph.errors_since(0))
    streams = streams_in(stream_chunks(graph, q_stopped, np.array([0.3, 0, 0, 0, 0, 0, 0]), 6.0, seconds=1.0))
    assert np.max(np.abs(graph.q() - q_stopped)) < 0.005
    again = [(e.kind, e.message) for e in graph.wait_errors(n_err, 1, timeout=5.0)]
    assert 1 <= len([k for k, m in again if "stop topic" in m]) <= streams, (again, streams)
    time.sleep(0.5)
    after = [(e.kind, e.message) for e in graph.errors_since(n_err)]
    assert all(k == "limit" and "stop topic" in m for k, m in after) and len(after) <= streams, after

    # Re-armed by the operator, a new stream is taken: hold chunks at the arm's position, and
    # the stream then ends as streams do.
    assert graph.call(graph.recover, graph.Trigger.Request()).success
    n_err = len(graph.errors_since(0))
    stream_chunks(graph, q_stopped, np.zeros(7), 0.5)
    errors = graph.wait_errors(n_err, 1, timeout=5.0)
    assert [e.kind for e in errors] == ["stopped"] and "no joint targets" in errors[0].message


def test_injected_reflex_needs_recovery(graph: Graph, sim_server: subprocess.Popen[str]) -> None:
    """A reflex aborts the motion, is reported with needs_recovery, and every motion (arm and
    gripper) is refused until the operator calls /executor/recover; after that motion works."""
    q0 = graph.q()
    n_err = len(graph.errors_since(0))
    times, qs = ramp(q0, np.array([0.4, 0, 0, 0, 0, 0, 0]), 3.0)
    goal = graph.send(times, qs)
    graph.wait_moving(0.1)
    os.kill(sim_server.pid, signal.SIGUSR1)
    result = graph.wait(goal.get_result_async(), 10.0).result
    assert not result.success and result.error_kind == "reflex"
    assert "reflex" in result.message.lower()
    time.sleep(0.3)
    reflexes = [e for e in graph.errors_since(n_err) if e.kind == "reflex"]
    assert reflexes and all(e.needs_recovery for e in reflexes)

    at_rest_time(graph, time.monotonic())  # the aborted motion's momentum dies out first
    q_hold = graph.q()
    times, qs = ramp(q_hold, np.array([0.05, 0, 0, 0, 0, 0, 0]), 1.0)
    refused = graph.wait(graph.send(times, qs).get_result_async(), 10.0).result
    assert not refused.success and refused.error_kind == "reflex" and "recover" in refused.message
    grip = graph.call(graph.gripper, graph.Gripper.Request(command="open", width=0.08, force=0.0))
    assert not grip.success and "recover" in grip.message
    time.sleep(0.3)
    assert np.max(np.abs(graph.q() - q_hold)) < 2e-3

    recovered = graph.call(graph.recover, graph.Trigger.Request())
    assert recovered.success, recovered.message
    q1 = graph.q()
    times, qs = ramp(q1, np.array([0.05, 0, 0, 0, 0, 0, 0]), 1.0)
    after = graph.wait(graph.send(times, qs).get_result_async(), 15.0).result
    assert after.success, after.message


def test_link_lost_mid_motion_is_reported_reconnected_and_needs_recovery(
    graph: Graph, sim_server: subprocess.Popen[str]
) -> None:
    """A robot that stops answering mid-motion (the simulator's loop stalled past libfranka's
    1 s timeout) ends the motion as a 'communication' fault with needs_recovery; the executor
    makes a new connection by itself, so /joint_states comes back with the arm held where the
    fault left it; motions are refused until /executor/recover, and work after it."""
    at_rest_time(graph, time.monotonic())
    q0 = graph.q()
    n_err = len(graph.errors_since(0))
    times, qs = ramp(q0, np.array([0.3, 0, 0, 0, 0, 0, 0]), 3.0)
    goal = graph.send(times, qs)
    graph.wait_moving(0.1)
    os.kill(sim_server.pid, signal.SIGUSR2)
    result = graph.wait(goal.get_result_async(), 15.0).result
    assert not result.success and result.error_kind == "communication", result
    assert "timeout" in result.message.lower(), result.message
    lost = [e for e in graph.errors_since(n_err) if e.kind == "communication"]
    assert any(e.needs_recovery for e in lost), [(e.kind, e.message) for e in graph.errors_since(n_err)]

    # The state comes back without anyone's help, and the arm stays where the fault left it.
    at_rest_time(graph, time.monotonic(), timeout=20.0)
    q_held = graph.q()
    assert 0.0 < q_held[0] - q0[0] < 0.3, q_held - q0  # stopped short of the goal
    times, qs = ramp(q_held, np.array([0.05, 0, 0, 0, 0, 0, 0]), 1.0)
    refused = graph.wait(graph.send(times, qs).get_result_async(), 10.0).result
    assert not refused.success and refused.error_kind == "communication", refused
    assert "/executor/recover" in refused.message
    time.sleep(0.3)
    assert np.max(np.abs(graph.q() - q_held)) < 2e-3

    recovered = graph.call(graph.recover, graph.Trigger.Request())
    assert recovered.success, recovered.message
    q1 = graph.q()
    times, qs = ramp(q1, np.array([-0.05, 0, 0, 0, 0, 0, 0]), 1.0)
    after = graph.wait(graph.send(times, qs).get_result_async(), 15.0).result
    assert after.success, after.message


def test_link_lost_while_idle_comes_back_by_itself(graph: Graph, sim_server: subprocess.Popen[str]) -> None:
    """The robot silent past libfranka's timeout while nothing moves (a simulator rebuilding a
    scene on a busy machine): a 'communication' fault without needs_recovery, a new connection
    by itself, /joint_states back, and the next motion runs with no operator action."""
    at_rest_time(graph, time.monotonic())
    n_err = len(graph.errors_since(0))
    with graph.lock:
        graph.states.clear()
    os.kill(sim_server.pid, signal.SIGUSR2)
    end = time.monotonic() + 20.0
    while time.monotonic() < end and not any(e.kind == "communication" for e in graph.errors_since(n_err)):
        time.sleep(0.05)
    lost = [e for e in graph.errors_since(n_err) if e.kind == "communication"]
    assert lost and not any(e.needs_recovery for e in lost), [(e.kind, e.message) for e in lost]
    q1 = graph.q(timeout=20.0)  # fresh states again
    times, qs = ramp(q1, np.array([0.05, 0, 0, 0, 0, 0, 0]), 1.0)
    after = graph.wait(graph.send(times, qs).get_result_async(), 15.0).result
    assert after.success, after.message


def test_gripper_commands_checked_and_run(graph: Graph) -> None:
    """Open and grasp reach the hand; a grasp with no expected width that closes on nothing is
    a failure (a skill must not lift thin air); a force beyond the hand's 70 N is refused, never
    sent."""
    opened = graph.call(graph.gripper, graph.Gripper.Request(command="open", width=0.08, force=0.0))
    assert opened.success and opened.width > 0.07, opened
    empty = graph.call(graph.gripper, graph.Gripper.Request(command="grasp", width=0.0, force=20.0))
    assert not empty.success and empty.width < 0.01 and "nothing" in empty.message, empty
    graph.call(graph.gripper, graph.Gripper.Request(command="open", width=0.08, force=0.0))
    grasp = graph.call(graph.gripper, graph.Gripper.Request(command="grasp", width=0.002, force=20.0))
    assert grasp.success and grasp.width < 0.01, grasp
    n_err = len(graph.errors_since(0))
    too_hard = graph.call(graph.gripper, graph.Gripper.Request(command="grasp", width=0.0, force=100.0))
    assert not too_hard.success and "force" in too_hard.message
    time.sleep(0.3)
    assert [e.kind for e in graph.errors_since(n_err)] == ["limit"]


def test_sigint_mid_motion_exits_cleanly(graph: Graph, executor_proc: subprocess.Popen[str]) -> None:
    """Ctrl-C while the arm moves stops the robot and exits 0 with nothing left behind: a node
    that hangs or dies uncleanly in the lab leaves an arm under nobody's control."""
    q0 = graph.q()
    times, qs = ramp(q0, np.array([-0.5, 0, 0, 0, 0, 0, 0]), 3.0)
    graph.send(times, qs)
    graph.wait_moving(0.1)
    executor_proc.send_signal(signal.SIGINT)
    rc = executor_proc.wait(15)
    time.sleep(0.2)  # the drain thread takes the last lines
    assert rc == 0, "".join(executor_proc.log[-40:])  # type: ignore[attr-defined]
    children = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(executor_proc.pid)], capture_output=True, text=True, check=False
    ).stdout.split()
    assert children == []


ISAAC_DOMAIN_ID = str(100 + (os.getpid() + 50) % 100)


def test_joint_command_topic_backend_streams_checked_points() -> None:
    """The Isaac Sim backend: the same checks, then the trajectory's points streamed as JointState
    commands at their times; a refused trajectory sends nothing and a stop ends the stream. The
    world (Isaac Sim, unreachable here) is played by this test: it publishes /joint_states and
    follows the commands ideally."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from afford_ros.qos import qos_profile

    env = dict(os.environ, ROS_DOMAIN_ID=ISAAC_DOMAIN_ID)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "afford_ros.nodes.executor",
            "--ros-args",
            "-p",
            "backend:=joint_command_topic",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=int(ISAAC_DOMAIN_ID))
    node = rclpy.create_node("isaac_world", context=ctx)
    lock = threading.Lock()
    q_world = np.array([0.0, 0.0, 0.0, -1.57, 0.0, 1.57, 0.785])
    # (when the executor sent it, by its header stamp in system time; the joints). Send times,
    # not arrival times: this process's own executor can fall behind on a loaded machine, and
    # what is checked is when the executor node streamed each point.
    commands: list[tuple[float, np.ndarray]] = []

    def on_command(msg: JointState) -> None:
        nonlocal q_world
        if list(msg.name) == [f"fr3_joint{i}" for i in range(1, 8)]:
            sent_at = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            with lock:
                q_world = np.array(msg.position)
                commands.append((sent_at, q_world.copy()))

    def wait_for_command(q: np.ndarray, timeout: float = 5.0) -> None:
        """Until the last command received is ``q`` (the ones already sent may still be queued here)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with lock:
                if commands and np.allclose(commands[-1][1], q):
                    return
            time.sleep(0.01)

    commands_in = node.create_subscription(JointState, "/isaac/joint_command", on_command,
                                           qos_profile("reliable"))
    pub = node.create_publisher(JointState, "/joint_states", qos_profile("sensor"))

    def publish_world() -> None:
        with lock:
            q = q_world.copy()
        names = [*(f"fr3_joint{i}" for i in range(1, 8)), "fr3_finger_width"]
        pub.publish(JointState(name=names, position=[*(float(v) for v in q), 0.04]))

    # The world publishes from a thread of its own, not from this process's executor, which
    # also serves the action client's callbacks and can fall behind on a loaded machine: a world
    # that goes quiet for state_timeout_s is, correctly, a communication fault for the executor.
    world_on = threading.Event()
    world_on.set()

    def world_loop() -> None:
        while world_on.is_set():
            publish_world()
            time.sleep(0.01)

    threading.Thread(target=world_loop, daemon=True).start()
    # Made before the spin starts: rclpy's ActionClient registers itself with the node before it
    # is fully built, and a spin running meanwhile dies on the half-made client (the world then
    # stops publishing, which once looked like an executor fault).
    graph = _ActionSide(ctx, node)
    spin = SingleThreadedExecutor(context=ctx)
    spin.add_node(node)
    threading.Thread(target=spin.spin, daemon=True).start()
    output: list[str] = []
    try:
        _wait_line(proc, "executor ready", 60.0)
        threading.Thread(target=lambda: proc.stdout and output.extend(proc.stdout), daemon=True).start()
        graph.wait_for_server()
        # The action server can be discovered before the executor's /joint_states subscription
        # and its command publisher have matched this world's (on a loaded machine, seconds
        # apart): a goal sent in between meets an executor that has never seen the arm, or
        # streams commands nobody receives yet.
        _wait_matched(pub.get_subscription_count, "the executor's /joint_states subscription")
        _wait_matched(commands_in.get_publisher_count, "the executor's /isaac/joint_command publisher")
        time.sleep(0.5)  # a few world states delivered
        times, qs = ramp(q_world.copy(), np.array([0.2, 0, 0, 0.1, 0, 0, 0]), 1.0)
        result = graph.run(times, qs, 10.0)
        assert result.success, result.message
        wait_for_command(qs[-1])
        with lock:
            sent = list(commands)
        # A world that falls behind keeps only the newest commands (keep last 10), so points can
        # be missing here; each one that came must be a trajectory point, in order, not sent
        # before its time, and the stream must have taken the trajectory's time.
        point = {tuple(q): k for k, q in enumerate(qs)}
        ks = [point[tuple(q)] for _, q in sent]
        assert ks == sorted(ks) and ks[-1] == len(qs) - 1 and len(ks) >= 20, ks
        early = [round(times[k] - (t - sent[0][0]), 3) for (t, _), k in zip(sent, ks, strict=True)]
        assert max(early) < 0.02, early  # the backend waits for each point's time
        assert sent[-1][0] - sent[0][0] > 0.8  # paced over the trajectory's 1 s, not sent at once

        bad = qs[-1].copy()
        bad[3] = 0.0  # beyond joint 4's upper limit
        times, qs2 = ramp(qs[-1], bad - qs[-1], 6.0)
        with lock:
            n = len(commands)
        refused = graph.run(times, qs2, 10.0)
        assert not refused.success and refused.error_kind == "limit"
        time.sleep(0.3)
        with lock:
            assert len(commands) == n

        times, qs3 = ramp(qs[-1], np.array([-0.3, 0, 0, 0, 0, 0, 0]), 3.0)
        with lock:
            n = len(commands)
        future = graph.send(times, qs3)
        end = time.monotonic() + 10.0
        while time.monotonic() < end:  # streaming (a loaded machine can take a while to start)
            with lock:
                if len(commands) > n + 5:
                    break
            time.sleep(0.01)
        time.sleep(0.5)
        graph.stop()
        stopped = graph.wait(future, 10.0).result
        assert not stopped.success and stopped.error_kind == "stopped"
        time.sleep(0.5)
        with lock:
            streamed = commands[n:]
        # The hold repeats where the world is, a point already sent; after it, nothing may come
        # (a trajectory point after the hold would move the arm on). How soon the stop lands
        # depends on the machine (a loaded one stalls the node's process 0.1-0.4 s now and then);
        # bench/bench_stop.py measures it, the test asks only that the stream ends with the hold.
        point = {tuple(q): k for k, q in enumerate(qs3)}
        ks = [point.get(tuple(q), -1) for _, q in streamed]
        repeats = [i for i in range(1, len(ks)) if ks[i] <= max(ks[:i])]
        assert repeats == [len(ks) - 1], ks  # exactly one hold, and it is the last command
        assert np.max(np.abs(streamed[-1][1] - qs3[-1])) > 0.1  # nowhere near the goal: the stream ended
        time.sleep(0.5)
        with lock:
            assert len(commands) == n + len(streamed)  # and nothing came after the hold
    finally:
        world_on.clear()
        time.sleep(0.05)  # the world thread's last publish, before the node goes
        spin.shutdown()
        node.destroy_node()
        ctx.try_shutdown()
        _kill(proc)
    time.sleep(0.2)  # the reader thread takes the last lines
    assert proc.returncode == 0, "".join(output[-40:])


def _wait_matched(count: Any, what: str, timeout: float = 30.0) -> None:
    """Until ``count()`` (a publisher's or subscription's matched count) is at least 1: DDS
    discovery on a loaded machine can take seconds, and what is sent before it completes is lost."""
    end = time.monotonic() + timeout
    while count() < 1 and time.monotonic() < end:
        time.sleep(0.05)
    assert count() >= 1, f"{what} never matched within {timeout:.0f} s"


class _ActionSide:
    """A minimal action client and stop publisher; build it before the node spins."""

    def __init__(self, ctx: Any, node: Any) -> None:
        from std_msgs.msg import Empty

        from afford_interfaces.action import FollowTrajectory
        from afford_ros.action_client import GoalSafeActionClient
        from afford_ros.qos import qos_profile

        self.FollowTrajectory, self.Empty = FollowTrajectory, Empty
        self.action: Any = GoalSafeActionClient(node, FollowTrajectory, "/executor/follow_trajectory")
        self.stop_pub = node.create_publisher(Empty, "/afford/stop", qos_profile("reliable"))

    def wait_for_server(self) -> None:
        assert self.action.wait_for_server(timeout_sec=20.0)

    @staticmethod
    def wait(future: Any, timeout: float) -> Any:
        end = time.monotonic() + timeout
        while not future.done():
            assert time.monotonic() < end, "no answer in time"
            time.sleep(0.01)
        return future.result()

    def send(self, times: np.ndarray, qs: np.ndarray, stamp: Any = None) -> Any:
        from afford_ros.nodes.convert import trajectory_msg

        msg = trajectory_msg(times, qs, stamp)
        goal = self.wait(self.action.send_goal_async(self.FollowTrajectory.Goal(trajectory=msg)), 10.0)
        assert goal.accepted
        return goal.get_result_async()

    def run(self, times: np.ndarray, qs: np.ndarray, timeout: float) -> Any:
        return self.wait(self.send(times, qs), timeout).result

    def stop(self) -> None:
        self.stop_pub.publish(self.Empty())


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(sys.argv[2])
    else:
        sys.exit("usage: test_executor_node.py --serve HOSTNAME")


def test_topic_backend_waits_for_a_fresh_state_and_refuses_a_stale_one() -> None:
    """Isaac Sim publishes /joint_states in bursts when its machine is loaded: a goal must wait a
    bounded time for a fresh reading rather than fail on a momentary gap, and must never start
    from a reading that is seconds old (the arm may have moved since)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from afford_core.robots import get_robot
    from afford_ros.drivers import StaleState
    from afford_ros.drivers.topic_driver import TopicDriver
    from afford_ros.qos import qos_profile

    domain = int(ISAAC_DOMAIN_ID) + 1 if int(ISAAC_DOMAIN_ID) < 199 else 101
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("executor_backend_test", context=ctx)
    params = {"joint_command_topic": "/isaac_joint_commands", "state_timeout_s": 2.0}
    backend = TopicDriver(node, get_robot("fr3"), params, None)
    pub = node.create_publisher(JointState, "/joint_states", qos_profile("sensor"))
    spin = SingleThreadedExecutor(context=ctx)
    spin.add_node(node)
    threading.Thread(target=spin.spin, daemon=True).start()
    names = [f"fr3_joint{i}" for i in range(1, 8)]
    try:
        t0 = time.monotonic()
        with pytest.raises(StaleState, match="none yet"):
            backend.fresh_q(wait=0.3)
        assert time.monotonic() - t0 >= 0.3

        # A reading that arrives while the goal waits is taken.
        def publish_later() -> None:
            time.sleep(0.3)
            for _ in range(20):
                pub.publish(JointState(name=names, position=[0.1 * i for i in range(7)]))
                time.sleep(0.02)

        publisher = threading.Thread(target=publish_later, daemon=True)
        publisher.start()
        q = backend.fresh_q(wait=5.0)
        assert np.allclose(q, [0.1 * i for i in range(7)])

        # Once the stream stops, an old reading is refused after the wait.
        publisher.join()
        time.sleep(0.8)
        with pytest.raises(StaleState, match="old"):
            backend.fresh_q(max_age=0.5, wait=0.2)
    finally:
        spin.shutdown()
        node.destroy_node()
        ctx.try_shutdown()


def test_topic_driver_does_not_take_its_own_stall_for_a_silent_world() -> None:
    """A loaded machine can stall the executor's process for a second or more (CI once did, and a
    stop was reported as a communication fault): the world's states are then queued, not
    missing, and the thread asking for the motion's status may wake before the one that
    delivers them. The status waits a short grace for them; a world that is really silent is
    still a communication fault (next test)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from afford_core.robots import get_robot
    from afford_ros.drivers.topic_driver import TopicDriver
    from afford_ros.qos import qos_profile

    domain = int(ISAAC_DOMAIN_ID) + 3 if int(ISAAC_DOMAIN_ID) < 197 else 103
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("topic_driver_stall_test", context=ctx)
    world = rclpy.create_node("topic_driver_stall_world", context=ctx)  # never spun: publishes only
    driver = TopicDriver(node, get_robot("fr3"), {"joint_command_topic": "/isaac/joint_command",
                                                   "state_timeout_s": 0.5}, None)
    pub = world.create_publisher(JointState, "/joint_states", qos_profile("sensor"))
    names = [*(f"fr3_joint{i}" for i in range(1, 8)), "fr3_finger_width"]
    alive, delivering = threading.Event(), threading.Event()
    alive.set()
    delivering.set()

    def world_loop() -> None:
        while alive.is_set():
            pub.publish(JointState(name=names, position=[0.0] * 8))
            time.sleep(0.01)

    spin = SingleThreadedExecutor(context=ctx)
    spin.add_node(node)

    def deliver() -> None:  # the driver's process, whose delivery this test can stall
        while alive.is_set():
            if delivering.is_set():
                spin.spin_once(timeout_sec=0.01)
            else:
                time.sleep(0.01)

    threading.Thread(target=world_loop, daemon=True).start()
    threading.Thread(target=deliver, daemon=True).start()
    try:
        driver.fresh_q(wait=10.0)
        driver.start(np.arange(1, 501) * 0.02, np.zeros((500, 7)))  # a 10 s motion
        assert driver.status().running
        delivering.clear()  # the stall: states keep coming, none is delivered
        time.sleep(1.2)
        threading.Timer(0.1, delivering.set).start()  # the delivering thread wakes a little later
        state = driver.status()
        assert state.running and state.error_kind == "", state.message

        delivering.clear()  # a stall that outlasts the grace is reported, with the silence's length
        time.sleep(1.2)
        state = driver.status()
        assert not state.running and state.error_kind == "communication" and "joint_states" in state.message
    finally:
        alive.clear()
        driver.stop()
        time.sleep(0.05)
        spin.shutdown()
        world.destroy_node()
        node.destroy_node()
        ctx.try_shutdown()


def test_topic_driver_replaces_the_running_chunk_holds_on_stop_and_notices_a_silent_world() -> None:
    """Isaac Sim's driver, against a stand-in for Isaac's articulation (the boundary we cannot
    run here): a new chunk takes over from the one being sent (no command of the old one after
    the new one's first) and passes through every target at its time; a stop sends one hold and
    nothing after it; the gripper is judged by the width the world reports; a world that falls
    silent is a communication fault, not a motion still running."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from afford_core.robots import get_robot
    from afford_ros.drivers.topic_driver import TopicDriver
    from afford_ros.qos import qos_profile

    domain = int(ISAAC_DOMAIN_ID) + 2 if int(ISAAC_DOMAIN_ID) < 198 else 102
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("topic_driver_stream_test", context=ctx)
    params = {"joint_command_topic": "/isaac/joint_command", "state_timeout_s": 0.5}
    robot = get_robot("fr3")
    driver = TopicDriver(node, robot, params, None)
    got: list[tuple[float, np.ndarray]] = []
    lock = threading.Lock()
    world = {"width": 0.0, "object": 0.0, "alive": True}  # the stand-in's fingers; an object's width

    def on_command(msg: JointState) -> None:
        if list(msg.name) == list(robot.sim.finger_joints):  # fingers close onto the object, if any
            world["width"] = max(sum(msg.position), world["object"])
            return
        with lock:
            got.append((time.monotonic(), np.array(msg.position)))

    commands_in = node.create_subscription(JointState, "/isaac/joint_command", on_command,
                                           qos_profile("reliable"))
    pub = node.create_publisher(JointState, "/joint_states", qos_profile("sensor"))
    names = [*(f"fr3_joint{i}" for i in range(1, 8)), "fr3_finger_width"]

    def publish_state() -> None:
        if world["alive"]:
            pub.publish(JointState(name=names, position=[0.0] * 7 + [world["width"]]))

    node.create_timer(0.01, publish_state)
    spin = SingleThreadedExecutor(context=ctx)
    spin.add_node(node)
    threading.Thread(target=spin.spin, daemon=True).start()
    try:
        driver.fresh_q(wait=5.0)
        _wait_matched(commands_in.get_publisher_count, "the driver's command publisher")
        assert driver.status().running is False
        first = np.arange(1, 51)[:, None] * np.array([[0.001, 0, 0, 0, 0, 0, 0]])  # joint 1: 1, 2 .. 50 mrad
        second = np.arange(1, 21)[:, None] * np.array([[0, 0.001, 0, 0, 0, 0, 0]])  # joint 2
        driver.start(np.arange(1, 51) * 0.02, first)
        time.sleep(0.3)
        assert driver.status().running
        driver.start(np.arange(1, 21) * 0.02, second)
        time.sleep(0.8)
        state = driver.status()
        assert not state.running and state.error_kind == ""  # the second ran to its end
        with lock:
            sent = [q for _, q in got]
        from_first = [i for i, q in enumerate(sent) if q[0] > 0 and q[1] == 0]
        from_second = [i for i, q in enumerate(sent) if q[1] > 0]
        assert from_first and from_second and max(from_first) < min(from_second)  # taken over
        assert max(sent[i][0] for i in from_first) < 0.04  # the first did not run on to its end
        assert all(sent[i][0] < sent[from_first[-1]][0] + 1e-9 for i in from_second)  # joint 1 eased back
        joint2 = [sent[i][1] for i in from_second]
        assert all(b >= a - 1e-12 for a, b in zip(joint2, joint2[1:], strict=False))  # in order
        assert {round(v * 1000, 6) for v in joint2} >= {float(k) for k in range(1, 21)}  # every target
        n = len(sent)
        driver.start(np.arange(1, 51) * 0.02, first)
        time.sleep(0.2)
        driver.stop()
        driver.stop()  # a second stop sends nothing more
        time.sleep(0.5)
        assert driver.status().error_kind == "stopped"
        with lock:
            tail = [q for _, q in got[n:]]
        assert np.allclose(tail[-1], 0.0)  # the hold: where the world reports the arm
        assert sum(np.allclose(q, 0.0) for q in tail) == 1  # exactly one hold, the last command

        ok, width, _ = driver.gripper("open", 0.08, 0.0)
        assert ok and width == pytest.approx(0.08)
        ok, width, message = driver.gripper("grasp", 0.0, 20.0)  # nothing between the fingers
        assert not ok and "closed on nothing" in message
        driver.gripper("open", 0.08, 0.0)
        world["object"] = 0.03
        ok, width, _ = driver.gripper("grasp", 0.0, 20.0)
        assert ok and width == pytest.approx(0.03)

        driver.start(np.arange(1, 51) * 0.02, first)
        world["alive"] = False  # Isaac Sim closed mid-motion
        time.sleep(0.8)
        state = driver.status()
        assert not state.running and state.error_kind == "communication" and "joint_states" in state.message
    finally:
        driver.stop()
        spin.shutdown()
        node.destroy_node()
        ctx.try_shutdown()
