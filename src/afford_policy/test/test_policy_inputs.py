"""The policy node's inputs over DDS: a run waits a bounded time for fresh ones, never acts on stale.

A real ``PolicyNode`` on a domain of its own; a second node publishes the policy cameras and
/joint_states as sim_world and the executor do. After a scene reset the cameras are silent
for seconds on a loaded machine (CI saw 4.5 s), and mid-run a camera starved of CPU skips a
second (seen beside a training job): a run must wait for the next images while the arm holds,
not end with "silent"; inputs that stay silent past ``input_wait_s`` end it with that reason,
and a cancel ends the wait. Nothing stale is ever handed to the policy.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

_DOMAIN = 90 + os.getpid() % 10  # 90-99: apart from the other node tests' domains


@contextmanager
def _spinning(context: Any, node: Any, world: Any, feed: Callable[[], None] = lambda: None) -> Iterator[None]:
    """Spin the policy node and the world node until the policy node has heard the inputs
    (``feed`` publishes them where the world node does not by itself); then the test; then
    both are torn down with their context."""
    from rclpy.executors import MultiThreadedExecutor

    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(node)
    executor.add_node(world)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        end = time.monotonic() + 10.0
        while time.monotonic() < end:  # until discovery is done and the node has heard them
            feed()
            try:
                node._inputs()
                break
            except Exception:  # noqa: BLE001 - not heard yet
                time.sleep(0.05)
        else:
            raise AssertionError("the policy node never heard the inputs")
        yield
    finally:
        executor.shutdown()
        node.destroy_node()
        world.destroy_node()
        context.try_shutdown()
        spin.join(timeout=5)


@pytest.fixture
def policy_side() -> Iterator[tuple[Any, Any]]:
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import Image, JointState
    from std_msgs.msg import Empty

    from afford_policy.nodes.policy import T_FRONT, T_WRIST, PolicyNode
    from afford_ros import contract
    from afford_ros.nodes.convert import image_to_msg, stamp_from_ns
    from afford_ros.qos import qos_profile

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=_DOMAIN)
    node = PolicyNode(context=context, parameter_overrides=[
        Parameter("max_input_age_s", value=0.5), Parameter("input_wait_s", value=2.0)])
    world = rclpy.create_node("world", context=context)
    qos = {t: qos_profile(contract.topic(t).qos) for t in (T_FRONT, T_WRIST, "/joint_states")}
    cams = {t: world.create_publisher(Image, t, qos[t]) for t in (T_FRONT, T_WRIST)}
    joints = world.create_publisher(JointState, "/joint_states", qos["/joint_states"])
    names = [*contract.arm_joints("fr3"), contract.finger_width_joint("fr3")]

    def publish(value: int, encoding: str = "rgb8") -> None:
        image = np.full((8, 8, 3), value, dtype=np.uint8)
        for topic, pub in cams.items():
            pub.publish(image_to_msg(image, encoding, topic, stamp_from_ns(time.time_ns())))
        joints.publish(JointState(name=names, position=[0.0] * 7 + [0.08]))

    with _spinning(context, node, world, lambda: publish(1)):
        stop = world.create_publisher(Empty, "/afford/stop", qos_profile(contract.topic("/afford/stop").qos))
        time.sleep(0.5)  # the stop's subscription matched before a test publishes on it
        yield node, publish, stop


def test_a_run_waits_for_inputs_that_went_silent_and_takes_the_new_ones(policy_side: tuple) -> None:
    from afford_policy.nodes.policy import RunEnded

    node, publish, _ = policy_side
    time.sleep(1.5)  # three times max_input_age_s: silent, as the cameras are through a scene reset
    threading.Timer(0.5, publish, args=(7,)).start()
    try:
        (front, wrist, _q, width), waited = node._fresh_inputs(
            SimpleNamespace(is_cancel_requested=False), "before the first step", time.monotonic())
    except RunEnded as err:
        raise AssertionError(f"a 2 s gap before the first step ended the run: {err}") from None
    assert int(front[0, 0, 0]) == 7 and int(wrist[0, 0, 0]) == 7, "stale images were handed on"
    assert width == pytest.approx(0.08)
    assert waited, "says it did not wait: the run would go on as if nothing had lapsed"
    publish(8)
    (front, _, _, _), waited = node._fresh_inputs(
        SimpleNamespace(is_cancel_requested=False), "at step 3", time.monotonic())
    assert not waited and int(front[0, 0, 0]) in (7, 8), "fresh inputs taken as a wait"


def test_inputs_silent_past_the_wait_end_the_run_with_the_reason(policy_side: tuple) -> None:
    from afford_policy.nodes.policy import RunEnded

    node, _, _ = policy_side
    time.sleep(1.0)  # past max_input_age_s, and nothing comes
    t0 = time.monotonic()
    with pytest.raises(RunEnded, match=r"silent for .* \(waited 2 s at step 7\)"):
        node._fresh_inputs(SimpleNamespace(is_cancel_requested=False), "at step 7", t0)
    assert time.monotonic() - t0 >= 1.9, "gave up before input_wait_s"


def test_a_cancel_ends_the_wait(policy_side: tuple) -> None:
    from afford_policy.nodes.policy import RunEnded

    node, _, _ = policy_side
    time.sleep(1.0)
    t0 = time.monotonic()
    with pytest.raises(RunEnded, match="cancelled"):
        node._fresh_inputs(SimpleNamespace(is_cancel_requested=True), "before the first step", t0)
    assert time.monotonic() - t0 < 1.0


def test_the_operators_stop_ends_a_run_that_waits_for_inputs(policy_side: tuple) -> None:
    """The executor reports a stop only while a stream runs, and a waiting run streams nothing:
    the node hears /afford/stop itself, and the run ends instead of streaming after it."""
    from std_msgs.msg import Empty

    from afford_policy.nodes.policy import RunEnded

    node, _, stop = policy_side
    time.sleep(1.0)
    t0 = time.monotonic()
    threading.Timer(0.3, lambda: stop.publish(Empty())).start()
    with pytest.raises(RunEnded, match=r"halted by the operator's stop \(/afford/stop\) \(while it waited"):
        node._fresh_inputs(SimpleNamespace(is_cancel_requested=False), "at step 4", t0)
    assert time.monotonic() - t0 < 1.9, "waited on after the stop"


def test_an_unusable_image_ends_the_run_at_once(policy_side: tuple) -> None:
    """Only a missing or stale input is worth waiting for; a wrong encoding will not mend."""
    from afford_policy.nodes.policy import RunEnded

    node, publish, _ = policy_side
    publish(3, encoding="bgr8")
    end = time.monotonic() + 5.0
    while time.monotonic() < end:  # until the node has the bgr8 frames
        try:
            node._inputs()
        except RunEnded as err:
            if "unusable" in str(err):
                break
        time.sleep(0.02)
    t0 = time.monotonic()
    with pytest.raises(RunEnded, match="unusable image"):
        node._fresh_inputs(SimpleNamespace(is_cancel_requested=False), "at step 2", t0)
    assert time.monotonic() - t0 < 0.5, "waited for an image that will not mend"


#: The test arm's speed (rad/s): slower than the policy's rate limit (0.4 x 2.62 rad/s on joint
#: 1), so it trails its targets as franky-sim does in a simulator slower than real time.
_SLOW_ARM = 0.3
_HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


@pytest.fixture
def slow_arm(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """A real PolicyNode beside a world node that takes its chunks and moves an arm toward the
    newest one's last target at :data:`_SLOW_ARM`, publishing the cameras and /joint_states;
    the policy is a script (``load_policy`` gives it): joint 1 to +0.6 rad, held, then +0.9."""
    from sensor_msgs.msg import Image, JointState
    from trajectory_msgs.msg import JointTrajectory

    from afford_policy.nodes import policy as policy_node
    from afford_policy.serving import LoadedPolicy
    from afford_ros import contract
    from afford_ros.nodes.convert import image_to_msg, stamp_from_ns
    from afford_ros.qos import qos_profile

    class Script:
        def __init__(self) -> None:
            self.k = 0

        def reset(self) -> None:
            self.k = 0

        def act(self, _obs: Any) -> np.ndarray:
            # Steps 0-11: joint 1 to +0.6 (reached in 6 steps; then holds, and 0.3 s past the
            # last chunk's end the next chunk starts from the arm); from step 12 on to +0.9.
            self.k += 1
            if self.k == 8:  # a slow answer, begun before the pause and ending past RESYNC_S
                time.sleep(0.5)
            q = _HOME.copy()
            q[0] += 0.6 if self.k <= 12 else 0.9
            return np.append(q, 0.0)

    monkeypatch.setattr(policy_node, "load_policy",
                        lambda _spec, _seed: LoadedPolicy(Script(), "script", 10, (8, 8), 10.0))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=_DOMAIN)
    node = policy_node.PolicyNode(context=context)
    world = rclpy.create_node("world", context=context)
    topics = (policy_node.T_FRONT, policy_node.T_WRIST, "/joint_states", "/executor/joint_targets")
    qos = {t: qos_profile(contract.topic(t).qos) for t in topics}
    cams = {t: world.create_publisher(Image, t, qos[t]) for t in topics[:2]}
    joints = world.create_publisher(JointState, "/joint_states", qos["/joint_states"])
    names = [*contract.arm_joints("fr3"), contract.finger_width_joint("fr3")]
    lock = threading.Lock()
    arm = {"q": _HOME.copy(), "goal": _HOME.copy(), "t": time.monotonic()}
    chunks: list[dict[str, Any]] = []

    def advance() -> None:  # call with the lock held
        now = time.monotonic()
        step = _SLOW_ARM * (now - arm["t"])
        arm["q"] = arm["q"] + np.clip(arm["goal"] - arm["q"], -step, step)
        arm["t"] = now

    def on_chunk(msg: JointTrajectory) -> None:
        points = np.array([p.positions[:7] for p in msg.points])
        times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
        with lock:
            advance()
            chunks.append({"stamp": msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec,
                           "times": times, "points": points, "q": arm["q"].copy(),
                           "moving": bool(np.max(np.abs(arm["goal"] - arm["q"])) > 1e-6)})
            arm["goal"] = points[-1].copy()

    world.create_subscription(JointTrajectory, "/executor/joint_targets", on_chunk,
                              qos["/executor/joint_targets"])

    def publish() -> None:
        with lock:
            advance()
            q = arm["q"].copy()
        image = np.full((8, 8, 3), 5, dtype=np.uint8)
        for topic, pub in cams.items():
            pub.publish(image_to_msg(image, "rgb8", topic, stamp_from_ns(time.time_ns())))
        joints.publish(JointState(name=names, position=[*q, 0.08]))

    world.create_timer(0.01, publish)
    with _spinning(context, node, world):
        yield node, chunks


def test_a_chunk_from_the_measured_arm_waits_until_the_arm_rests(slow_arm: tuple) -> None:
    """After a pause (here holds) the next chunk starts from the arm as measured. An arm that
    trails its targets is still moving then, and moves on between that reading and the
    executor's check of the chunk: CI's loaded machine refused one so, 0.353 rad from where the
    running chunk sent the arm. Each chunk either continues the one before (its first point is
    within the executor's start limit of where that one sends the arm by then) or starts where
    the arm rests; so does one whose answer took the pause past ``RESYNC_S`` (the script's
    eighth, 0.5 s)."""
    from afford_interfaces.action import RunPolicy
    from afford_planner.safety import SafetyConfig
    from afford_policy.nodes.policy import SETTLED_RAD

    node, chunks = slow_arm
    goal = SimpleNamespace(
        request=SimpleNamespace(policy="script", seed=0, max_seconds=5.0, instruction="sweep"),
        is_cancel_requested=False, publish_feedback=lambda _fb: None)
    result = RunPolicy.Result(success=False, steps=0)
    node._run(goal, result)
    assert result.success, result.message
    assert len(chunks) >= 8, f"{len(chunks)} chunks: the script moves the arm twice"
    for before, chunk in zip(chunks, chunks[1:], strict=False):
        at = chunk["stamp"] + chunk["times"][0]
        sent = np.array([np.interp(at, before["stamp"] + before["times"], before["points"][:, j])
                         for j in range(7)])
        # Within the executor's start limit: a continuation (its stamp and the node's clock
        # differ by the time between two reads of them, ms on a busy machine).
        if np.max(np.abs(chunk["points"][0] - sent)) <= SafetyConfig().max_start_deviation:
            continue
        assert not chunk["moving"], (
            f"a chunk started from a reading of a moving arm: {chunk['points'][0][0] - _HOME[0]:.3f} rad on "
            f"joint 1, where the arm was sent {sent[0] - _HOME[0]:.3f}")
        assert np.max(np.abs(chunk["points"][0] - chunk["q"])) < 1e-3
    final = chunks[-1]["points"][-1]
    assert final[0] == pytest.approx(_HOME[0] + 0.9, abs=1e-6), "the second move never ran"
    # The second move came after the pause, so it started from the arm at rest where the first
    # one had sent it (0.6 rad), not from a reading of the arm still on its way there.
    second = next(c for c in chunks if c["points"][-1][0] > _HOME[0] + 0.6 + 1e-3)
    assert not second["moving"], "the move after the pause went out while the arm still moved"
    assert second["points"][0][0] == pytest.approx(_HOME[0] + 0.6, abs=SETTLED_RAD)
