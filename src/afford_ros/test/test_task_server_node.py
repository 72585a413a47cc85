"""The task server node in this process: approval, the operator's token, peers that go away.

`afford task "..."` asks for automatic approval unless `--operator` is given (the simulated
graph grants it); on the real robot the same command must wait for `afford trial approve`, not
abort and not move, and only the operator's tool may answer (it carries the token the task
server wrote to a file private to its account). The real node runs in this process on a domain
of its own; the operator answers through the real `/task_server/approve` service with `afford
trial`'s own function. The only stand-in is the goal handle, the action server's object for one
goal. A perception node that is killed or restarted while it works on a trial is a real process
serving the real service type.
"""

from __future__ import annotations

import itertools
import os
import select
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

rclpy = pytest.importorskip("rclpy")

# 60-89: apart from the 100-199 the other node tests draw from (test_executor_node's two
# domains together cover all of 100-199); each test takes the next one, so nothing the test
# before left in discovery (a destroyed task server's /task_server/approve) is found.
_DOMAINS = itertools.count(os.getpid())


def _next_domain() -> int:
    return 60 + next(_DOMAINS) % 30


class _Goal:
    """What ``_approve`` uses of an action goal handle: the request, cancel flag, feedback."""

    def __init__(self, auto_approve: bool) -> None:
        self.request = SimpleNamespace(auto_approve=auto_approve)
        self.is_cancel_requested = False
        self.feedback: list[str] = []

    def publish_feedback(self, msg: Any) -> None:
        self.feedback.append(f"{msg.stage}: {msg.detail}")


@pytest.fixture
def real_task_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.parameter import Parameter

    from afford_ros.nodes.task_server import TaskServerNode

    domain = _next_domain()
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))  # also for the CLI functions' own contexts
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = TaskServerNode(context=context, parameter_overrides=[
        Parameter("mode", value="real"), Parameter("approval_timeout_s", value=30.0)])
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(node)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        yield node
    finally:
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()
        spin.join(timeout=5)


@pytest.mark.parametrize("asks_for_auto", [True, False])
def test_a_real_trial_waits_for_the_operator_whatever_the_goal_asks(real_task_server: Any,
                                                                   asks_for_auto: bool) -> None:
    from afford_ros.graph_cli import approve_trial

    node = real_task_server
    assert node.mode == "real" and not node.auto_approve
    goal = _Goal(auto_approve=asks_for_auto)
    thread, box = _waiting(node, goal)
    assert goal.feedback[0].startswith("approve: waiting for the operator"), goal.feedback
    assert ("automatic approval does not apply to the real robot" in goal.feedback[0]) == asks_for_auto
    time.sleep(0.5)
    assert thread.is_alive() and not box  # waiting means waiting
    accepted, message = approve_trial(True, "looked at the grasp", timeout=10.0)
    assert accepted, message
    thread.join(timeout=10)
    assert box == {"approved": True}


def test_a_real_trial_the_operator_aborts_ends_with_the_reason(real_task_server: Any) -> None:
    from afford_ros.graph_cli import approve_trial
    from afford_ros.nodes.task_server import TrialAborted

    node = real_task_server
    goal = _Goal(auto_approve=True)
    box: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: box.setdefault("error", pytest.raises(TrialAborted, node._approve, goal, "x")),
        daemon=True,
    )
    thread.start()
    end = time.monotonic() + 10
    while not goal.feedback and time.monotonic() < end:
        time.sleep(0.02)
    accepted, message = approve_trial(False, "wrong mug", timeout=10.0)
    assert accepted, message
    thread.join(timeout=10)
    assert "the operator aborted the trial: wrong mug" in str(box["error"].value)


def test_afford_task_on_the_real_graph_is_not_refused_for_asking_automatic_approval(
    real_task_server: Any,
) -> None:
    """The goal `afford task "..."` sends (it asks for automatic approval) on the real graph goes
    on to perceive, where it would then wait for the operator, instead of aborting at once. Here
    no perception node runs, so the trial ends there, with that reason. The trial is entered as
    the action server enters it; the goal is not sent over DDS, where a client and a server both
    just started lose the goal's reply now and then (see the issue note)."""
    from afford_interfaces.action import RunTask
    from afford_ros.nodes.task_server import TrialAborted

    node = real_task_server
    goal = _Goal(auto_approve=True)
    goal.request = RunTask.Goal(sentence="pick up the mug", auto_approve=True)
    with pytest.raises(TrialAborted) as err:
        node._trial(goal, RunTask.Result())
    reason = str(err.value)
    assert "refused in real mode" not in reason
    assert "perception is not available" in reason, (reason, goal.feedback)
    assert "perceive: pick up the mug" in goal.feedback


def test_a_policy_trial_without_a_policy_node_ends_before_the_operator_is_asked(
    real_task_server: Any,
) -> None:
    """A goal naming a policy skips perception and planning and goes to the policy node; with
    none on the graph it ends at once with how to get one, before an operator is asked to
    approve a run that cannot start."""
    from afford_interfaces.action import RunTask
    from afford_ros.nodes.task_server import TrialAborted

    node = real_task_server
    goal = _Goal(auto_approve=False)
    goal.request = RunTask.Goal(sentence="put the banana on the plate", policy="/lab/policies/act")
    with pytest.raises(TrialAborted, match="no policy node serves /policy/run.*fr3_sim_policy"):
        node._trial(goal, RunTask.Result())
    assert not any(f.startswith(("perceive", "approve")) for f in goal.feedback), goal.feedback


def _waiting(node: Any, goal: _Goal) -> tuple[threading.Thread, dict[str, Any]]:
    """Start ``node._approve`` for ``goal`` in a thread; returns once it waits for the operator."""
    box: dict[str, Any] = {}

    def wait() -> None:
        try:
            node._approve(goal, "pick up the mug: candidate #3")
            box["approved"] = True
        except Exception as err:  # noqa: BLE001 - the test reads it
            box["error"] = err

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    end = time.monotonic() + 10
    while not goal.feedback and time.monotonic() < end:
        time.sleep(0.02)
    assert goal.feedback, "the trial never started waiting"
    return thread, box


def _raw_approve(token: str) -> Any:
    """An approval from any program that can reach the graph: the service called directly."""
    from afford_interfaces.srv import ApproveTrial
    from afford_ros.graph_cli import _call

    return _call(
        "intruder", ApproveTrial, "/task_server/approve",
        ApproveTrial.Request(approve=True, reason="not the operator", token=token), "task server", 10.0,
    )


def test_an_approval_without_the_operators_token_is_refused_and_the_trial_keeps_waiting(
    real_task_server: Any,
) -> None:
    """Reaching the graph is not enough to move the real arm: an approval without the token,
    or with a guessed one, is refused with the reason, and the trial goes on waiting for the
    operator, whose `afford trial approve` (which reads the token file) is taken."""
    from afford_ros.graph_cli import approve_trial

    node = real_task_server
    goal = _Goal(auto_approve=False)
    thread, box = _waiting(node, goal)
    for token in ("", "0" * 32, node._token[:-1]):
        res = _raw_approve(token)
        assert not isinstance(res, str), res
        assert not res.accepted and "operator's token" in res.message, res.message
        assert str(node.token_file) in res.message
    time.sleep(0.3)
    assert thread.is_alive() and not box, "a refused approval ended the wait"
    accepted, message = approve_trial(True, "looked at the grasp", timeout=10.0)
    assert accepted, message
    thread.join(timeout=10)
    assert box == {"approved": True}


def test_the_operator_token_is_private_to_the_account_and_gone_with_the_node(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rclpy.parameter import Parameter

    from afford_ros import operator_token
    from afford_ros.nodes.task_server import TaskServerNode

    monkeypatch.setenv(operator_token.ENV_FILE, str(tmp_path / "private" / "token"))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=_next_domain())
    node = TaskServerNode(context=context, parameter_overrides=[Parameter("mode", value="real")])
    try:
        path = node.token_file
        assert path == tmp_path / "private" / "token"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert operator_token.read_token() == node._token and len(node._token) == 32
        path.chmod(0o644)  # someone opened it up: it proves nothing any more
        with pytest.raises(operator_token.OperatorTokenError, match="may be read by other accounts"):
            operator_token.read_token()
        path.chmod(0o600)
    finally:
        node.destroy_node()
        context.try_shutdown()
    assert not path.exists(), "the node left its token behind"
    with pytest.raises(operator_token.OperatorTokenError, match="no operator token"):
        operator_token.read_token()


# A perception node that takes every request and never answers (as one busy, then killed, is).
_SLOW_PERCEPTION = """
import sys, time, rclpy
from afford_interfaces.srv import Perceive
rclpy.init()
node = rclpy.create_node("perception")
node.create_service(Perceive, "/perception/perceive",
                    lambda req, res: (print("GOT", flush=True), time.sleep(600), res)[2])
print("READY", flush=True)
rclpy.spin(node)
"""


# A perception that lets the first requests it gets (argv[1], default 1) go unanswered and
# answers every later one, saying which: the new instance of a restarted node that DDS had not
# yet matched to the first request.
_SECOND_ASKING = """
import sys, time, rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from afford_interfaces.srv import Perceive
IGNORE = int(sys.argv[1]) if len(sys.argv) > 1 else 1
rclpy.init()
node = rclpy.create_node("perception")
seen = []
def handle(req, res):
    seen.append(req)
    asking = len(seen)
    if asking <= IGNORE:
        time.sleep(600)
    res.success, res.reason = False, f"asking {asking} answered"
    return res
node.create_service(Perceive, "/perception/perceive", handle, callback_group=ReentrantCallbackGroup())
print("READY", flush=True)
executor = MultiThreadedExecutor(num_threads=4)
executor.add_node(node)
executor.spin()
"""


def _stand_in(script: str, *args: str) -> subprocess.Popen[str]:
    """A stand-in node run from ``script`` (with ``args``), once it says READY (its services are up)."""
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    return proc


def _slow_perception() -> subprocess.Popen[str]:
    return _stand_in(_SLOW_PERCEPTION)


def test_a_request_a_restarted_server_leaves_unanswered_is_sent_again_on_a_fresh_client(
    real_task_server: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Perception restarted between trials: the old instance is still listed (its lease) when
    the next trial asks. CI saw the new one never get that request, nor the one sent again when
    the old one left the graph, and the trial wait out its 60 s. Now the request goes again on a
    fresh client when the old instance leaves, and again after RESEND_AFTER_RESTART_S while
    unanswered; the stand-in here leaves the first two unanswered and answers the third."""
    from afford_interfaces.srv import Perceive
    from afford_ros.nodes import task_server
    from afford_ros.nodes.task_server import service_servers

    monkeypatch.setattr(task_server, "RESEND_AFTER_RESTART_S", 3.0)
    node = real_task_server
    node.service_timeout = 120.0
    old = _slow_perception()
    procs = [old]
    try:
        assert node.perceive_client.wait_for_service(timeout_sec=60.0)
        old.kill()
        old.wait(timeout=10)
        procs.append(_stand_in(_SECOND_ASKING, "2"))
        end = time.monotonic() + 15.0  # both listed: the killed one until its lease runs out (~20 s)
        while time.monotonic() < end and len(service_servers(node, "/perception/perceive")) < 2:
            time.sleep(0.1)
        assert len(service_servers(node, "/perception/perceive")) == 2, "the dead instance left too soon"
        first = node.perceive_client
        answer = node._call(first, Perceive.Request(sentence="pick up the mug"), "perception")
        assert answer.reason == "asking 3 answered", answer.reason
        assert node.perceive_client is not first  # the trial's later calls use the fresh client
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)


@pytest.mark.parametrize("restarted", [True, False], ids=["restarted", "gone"])
def test_a_peer_killed_while_it_works_on_the_trial_ends_it_with_that_reason(
    real_task_server: Any, restarted: bool,
) -> None:
    """Perception killed mid-request: restarted by the launcher (a new instance appears), the
    trial ends as soon as that is seen; gone for good, when DDS notices the process is gone
    (its lease, about 20 s). Either way the reason names perception, not a timeout."""
    from afford_interfaces.srv import Perceive
    from afford_ros.nodes.task_server import TrialAborted

    node = real_task_server
    node.service_timeout = 120.0
    procs = [_slow_perception()]
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            node._call(node.perceive_client, Perceive.Request(sentence="pick up the mug"), "perception")
        except TrialAborted as err:
            box["reason"] = str(err)

    try:
        # The stand-in is discovered before the call (whose own wait is 5 s: on a busy machine
        # discovery took longer, and the trial ended as "perception is not available").
        assert node.perceive_client.wait_for_service(timeout_sec=60.0)
        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        stdout = procs[0].stdout
        assert stdout is not None and select.select([stdout], [], [], 60.0)[0], "the request never arrived"
        assert stdout.readline().strip() == "GOT"  # the request is with the node
        assert thread.is_alive()
        procs[0].kill()
        if restarted:
            procs.append(_slow_perception())
        thread.join(timeout=60)
        assert "reason" in box, "the trial went on waiting for a dead node"
        reason = box["reason"]
        if restarted:
            assert reason.startswith("perception was restarted while it worked on this trial"), reason
        else:
            assert reason == (
                "perception went away while it worked on this trial: nothing serves "
                "/perception/perceive any more"
            ), reason
        assert "no answer within" not in reason
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)


def test_only_falling_behind_that_bears_on_the_motion_is_put_before_a_failure(real_task_server: Any) -> None:
    """A slow second before the arm moved (a scene reset, a node starting) did not change what
    the arm did and is not blamed; during the motion it is, and a stall long enough to lose the
    robot's link is, whenever it came."""
    from afford_ros.nodes.task_server import LIBFRANKA_TIMEOUT_S
    from afford_sim.franky_world import LIBFRANKA_UDP_TIMEOUT

    assert LIBFRANKA_TIMEOUT_S == LIBFRANKA_UDP_TIMEOUT
    node = real_task_server
    node._sim_behind = [(10.0, 0.05, "slow during the reset")]
    assert node.behind_since(5.0, moving_since=20.0) == ""
    assert node.behind_since(5.0, moving_since=None) == ""
    node._sim_behind.append((25.0, 0.1, "slow while moving"))
    assert node.behind_since(5.0, moving_since=20.0) == "slow while moving"
    node._sim_behind.append((12.0, 1.5, "stalled 1.5 s before the motion"))
    assert node.behind_since(5.0, moving_since=20.0) == "stalled 1.5 s before the motion"
    assert node.behind_since(13.0, moving_since=None) == ""


# A planner that takes an execute_skill goal and never answers it (its answer lost, as when the
# planner dies right after starting the arm): the goal callback blocks.
_MUTE_PLANNER = """
import time, rclpy
from rclpy.action import ActionServer
from afford_interfaces.action import ExecuteSkill
rclpy.init()
node = rclpy.create_node("planner")
def never(_goal):
    time.sleep(600)
server = ActionServer(node, ExecuteSkill, "/planner/execute_skill", execute_callback=lambda h: None,
                      goal_callback=never)
print("READY", flush=True)
rclpy.spin(node)
"""


def _mute_planner() -> subprocess.Popen[str]:
    return _stand_in(_MUTE_PLANNER)


@pytest.mark.parametrize("fate", ["restarted", "gone", "alive"])
def test_an_execute_goal_never_answered_stops_the_arm_and_names_the_planner(
    real_task_server: Any, monkeypatch: pytest.MonkeyPatch, fate: str,
) -> None:
    """The planner takes the skill's goal (the arm may already move) but its answer never comes.
    Killed and restarted, or gone: the trial ends naming the planner and stops the arm. Alive but
    mute: after GOAL_ANSWER_S the arm is stopped and the trial ends saying the goal went
    unanswered. Never "internal error", never an arm left moving unwatched."""
    from afford_ros.nodes import task_server
    from afford_ros.nodes.task_server import PeerLost, TrialAborted

    monkeypatch.setattr(task_server, "GOAL_ANSWER_S", 4.0)
    monkeypatch.setattr(task_server, "PEER_LEASE_S", 3.0)
    node = real_task_server
    node._last_frame = time.monotonic() + 3600.0  # no camera here: count it as live
    stops: list[float] = []
    monkeypatch.setattr(node, "pub_stop", SimpleNamespace(publish=lambda _m: stops.append(time.monotonic())))
    procs = [_mute_planner()]
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["why"] = node._execute(_Goal(auto_approve=True), "plan0", SimpleNamespace())
        except TrialAborted as err:
            box["error"] = err

    try:
        assert node.skill_client.wait_for_server(timeout_sec=20.0)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        time.sleep(1.0)  # the goal is with the planner
        assert thread.is_alive()
        if fate != "alive":
            procs[0].kill()
            if fate == "restarted":
                procs.append(_mute_planner())
        thread.join(timeout=60)
        assert not thread.is_alive(), "the trial went on waiting for the planner"
        assert "error" in box, box
        err, reason = box["error"], str(box["error"])
        assert stops, "the arm was not stopped"
        assert reason.endswith("; arm stopped"), reason
        if fate == "restarted":
            assert isinstance(err, PeerLost) and reason.startswith(
                "the planner (which runs the skill) was restarted while it worked"), reason
        elif fate == "gone":
            # The lease ends after the unanswered goal stopped the arm (Fast DDS: ~20 s).
            assert reason.startswith("the planner (which runs the skill) "), reason
        else:
            assert not isinstance(err, PeerLost)
            assert reason == (
                "the planner (which runs the skill) did not answer the goal within 4 s; arm stopped"
            )
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)


def test_a_request_is_asked_again_when_one_of_its_servers_vanishes(real_task_server: Any) -> None:
    """Two instances serve perception when the request goes out (a killed one still listed
    until its DDS lease ends, and its restarted successor); the request reaches only the dead
    one. When the dead one leaves the graph, the request is sent again, and the live one
    answers: the trial does not wait out its service timeout."""
    from afford_interfaces.srv import Perceive

    node = real_task_server
    node.service_timeout = 120.0
    dead = _slow_perception()
    live = _stand_in(_SECOND_ASKING)
    try:
        from afford_ros.nodes.task_server import service_servers

        end = time.monotonic() + 30
        while len(service_servers(node, "/perception/perceive")) < 2 and time.monotonic() < end:
            time.sleep(0.2)
        assert len(service_servers(node, "/perception/perceive")) == 2
        box: dict[str, Any] = {}
        thread = threading.Thread(
            target=lambda: box.setdefault("answer", node._call(
                node.perceive_client, Perceive.Request(sentence="pick up the mug"), "perception")),
            daemon=True,
        )
        started = time.monotonic()
        thread.start()
        time.sleep(1.0)
        dead.kill()
        thread.join(timeout=90)
        assert "answer" in box, "the request was not asked again"
        assert box["answer"].reason == "asking 2 answered"
        assert time.monotonic() - started < 60, "it waited for a timeout, not for the dead server"
    finally:
        for p in (dead, live):
            p.kill()
            p.wait(timeout=10)


def test_the_graph_refuses_a_composite_with_what_to_do() -> None:
    from afford_ros.nodes.task_server import TrialAborted, resolve_task

    for sentence, task_id in (("", "place-banana-plate-then-cube-mug-v1"),
                              ("put the banana on the plate, then put the cube in the mug", "")):
        with pytest.raises(TrialAborted, match="send them as goals one after the other"):
            resolve_task(sentence, task_id, need_task=True)


def test_the_camera_watch_does_not_take_its_own_stall_for_a_dead_camera() -> None:
    """A loop turn that comes late (the process was descheduled) is followed by a grace for the
    frames queued meanwhile; a real silence is judged, a late turn or not, and one far past the
    limit is judged even on a loop that is late on every turn."""
    import numpy as np

    from afford_ros.nodes.task_server import SilenceWatch

    watch = SilenceWatch(limit=1.0)
    assert watch.silent(10.00, 9.99) is None
    assert watch.silent(10.02, 10.01) is None
    # Stalled 1.5 s: the last frame looks 1.5 s old, but frames are queued, not missing.
    assert watch.silent(11.52, 10.01) is None
    assert watch.silent(11.54, 10.01) is None  # within the grace: their callback runs first
    assert watch.silent(11.56, 11.55) is None  # delivered
    # The camera really died: judged once the grace is over.
    for t in np.arange(11.58, 12.5, 0.02):
        assert watch.silent(float(t), 11.55) is None
    assert watch.silent(12.58, 11.55) == pytest.approx(1.03)
    # A loop late on every turn still stops the arm once the silence is three times the limit.
    late = SilenceWatch(limit=1.0)
    got = [late.silent(float(t), 0.0) for t in np.arange(0.0, 3.5, 0.25)]
    assert all(g is None for g in got[:12]) and got[-1] == pytest.approx(3.25)
