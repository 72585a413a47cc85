"""The executor node when its own process stalls between a chunk's checks and its start.

A busy machine deschedules the node for tens of milliseconds now and then (CI: a replayed
demonstration's first chunk after a gripper command was dropped three times over, and the next
one, continuing it, refused as a 0.058 rad jump from the arm). Here the stall is made where it
happens: the node's real limit checks run, then sleep past the 20 ms lead before the start. The
node is the real one, built in this process with its plug-in driver registry holding a driver
that records what it is asked to start (the robot is the boundary: the franky path is covered by
``test_executor_node.py`` against franky-sim). Chunks are handed to the node's subscription
callback directly, as the stream's callback group would. The same harness times a chunk's
arrival against the running one's end (a late continuation).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from afford_ros.drivers import DRIVERS, Driver, MotionState

Q_REST = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.785])


class RecordingDriver(Driver):
    """An arm that holds at ``Q_REST`` and records each start (monotonic time, times, targets)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.starts: list[tuple[float, np.ndarray, np.ndarray]] = []

    def current_q(self) -> np.ndarray:
        return Q_REST.copy()

    def start(self, times: np.ndarray, positions: np.ndarray, velocities: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        self.starts.append((time.monotonic(), np.array(times), np.array(positions)))
        return np.array(times), np.array(positions)

    def status(self) -> MotionState:
        return MotionState(running=bool(self.starts))

    def stop(self) -> None:
        pass

    def gripper(self, command: str, width: float, force: float) -> tuple[bool, float, str]:
        return True, width, "ok"


@pytest.fixture()
def node() -> Iterator[Any]:
    import rclpy

    from afford_ros.nodes.executor import ExecutorNode

    if "recording_test" not in DRIVERS:
        DRIVERS.register("recording_test", RecordingDriver)
    rclpy.init(args=["--ros-args", "-p", "backend:=recording_test"], domain_id=150 + os.getpid() % 80)
    made = ExecutorNode()
    try:
        yield made
    finally:
        made.destroy_node()
        rclpy.try_shutdown()


def _chunk(node: Any, offsets: list[np.ndarray], period: float = 0.1, lead: float = 0.2) -> Any:
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    msg = JointTrajectory(joint_names=list(node._arm_joints))
    msg.header.stamp = node.get_clock().now().to_msg()
    for k, dq in enumerate(offsets):
        t = lead + k * period
        msg.points.append(JointTrajectoryPoint(
            positions=[float(v) for v in Q_REST + dq],
            time_from_start=Duration(sec=int(t), nanosec=int(round((t % 1) * 1e9)))))
    return msg


class Stall:
    """The node's limit checks, each followed by a sleep of ``seconds`` while ``left`` > 0 (a
    process descheduled between a chunk's checks and its start)."""

    def __init__(self, node: Any, seconds: float, left: int, meanwhile: Any = None) -> None:
        self.seconds, self.left, self.count = seconds, left, 0
        real = node.safety.check_trajectory

        def check(*args: Any, **kwargs: Any) -> Any:
            verdict = real(*args, **kwargs)
            if self.left > 0:
                self.left -= 1
                self.count += 1
                time.sleep(self.seconds)
                if meanwhile is not None:
                    meanwhile()
            return verdict

        node.safety.check_trajectory = check


def test_a_stall_from_rest_delays_the_chunk_whole(node: Any) -> None:
    """From an arm that holds still, a 60 ms stall after the checks starts the chunk 60 ms later
    (its targets unchanged); the next chunk of the stream runs that much behind as well. Before
    the fix the chunk was checked again and again, stalled each time, and dropped, and the next
    was refused."""
    from afford_ros.nodes import executor

    step = np.zeros(7)
    step[1] = 0.03
    # Every look stalls, as on CI's loaded machine; one look is enough now.
    stall = Stall(node, 0.06, left=executor._STALL_TRIES)
    node._on_targets(_chunk(node, [step * 0.5, step]))
    driver: RecordingDriver = node.driver
    assert len(driver.starts) == 1, "the stalled chunk was not started"
    assert stall.count == 1, f"checked {stall.count} times: the stall was not absorbed"
    started, times, qs = driver.starts[0]
    np.testing.assert_allclose(qs[0], Q_REST + step * 0.5)
    assert node._stream_delay >= 0.06  # the stream runs the stall behind its stamps
    assert node._stream is not None
    np.testing.assert_allclose(node._stream[1][0], Q_REST)  # checked from the measured arm
    # The stream's schedule is the driver's: its first target where the driver was told, from
    # when it was started (not from before the stall).
    assert abs(node._stream[0][1] - (started + times[0])) < 0.01

    # The next chunk continues it, delayed by as much: its first target lands where the first
    # chunk's last one is due, not 60 ms earlier, so it is no jump from the running motion.
    stall.left = 0
    node._on_targets(_chunk(node, [step, step * 1.5]))
    assert len(driver.starts) == 2, "the chunk after the re-timed one was not taken"
    _, times2, _ = driver.starts[1]
    assert times2[0] >= 0.2 + 0.05, times2  # its lead of 0.2 s, plus the stream's delay


@pytest.mark.parametrize("meanwhile", ["a trajectory ran", "the stream was halted"])
def test_a_stall_from_rest_is_not_absorbed_when_the_arm_moved_meanwhile(node: Any, meanwhile: str) -> None:
    """A stall from rest is delayed whole only if the arm still holds where the chunk was
    checked: a trajectory goal admitted meanwhile (it may have run and ended) or a stream halted
    meanwhile sends the chunk back to be checked afresh, never started from the old reference."""
    step = np.zeros(7)
    step[1] = 0.03

    def trajectory() -> None:
        with node._lock:  # what _execute does when it admits a goal
            node._trajectories += 1

    def halt() -> None:
        node._halt_stream("a test halts the stream")

    stall = Stall(node, 0.06, left=1, meanwhile=trajectory if meanwhile == "a trajectory ran" else halt)
    node._on_targets(_chunk(node, [step * 0.5, step]))
    driver: RecordingDriver = node.driver
    if meanwhile == "a trajectory ran":
        # Checked again (the arm is read afresh) and started then, without a stall.
        assert len(driver.starts) == 1 and node._stream_delay < 0.06
    else:
        # Checked again: the halted stream's block refuses it.
        assert driver.starts == []
    assert stall.count == 1


def test_a_stall_against_a_running_chunk_keeps_the_schedule_it_was_checked_on(node: Any) -> None:
    """While a chunk moves the arm, a stall is no delay to absorb (the running chunk goes on),
    but the checks hold on the schedule they were made for: the chunk starts on it, the stall
    taken out of its lead. Before, it was checked afresh and stalled again on every look (as on
    CI's loaded machine, three in a row), then dropped, and the policy's next chunk, continuing
    the dropped one, was refused as a 0.216 rad jump from the running motion."""
    from afford_ros.nodes import executor

    step = np.zeros(7)
    step[0] = 0.02
    node._on_targets(_chunk(node, [step * k for k in range(1, 12)], period=0.1))  # 1.2 s of motion
    driver: RecordingDriver = node.driver
    assert len(driver.starts) == 1
    delay_before = node._stream_delay
    stall = Stall(node, 0.06, left=executor._STALL_TRIES)  # every look stalls
    # Its first target 0.5 s ahead: where the running chunk is then.
    chunk = _chunk(node, [step * 4, step * 5], lead=0.5)
    stamp = chunk.header.stamp.sec + 1e-9 * chunk.header.stamp.nanosec
    node._on_targets(chunk)
    assert stall.count == 1 and len(driver.starts) == 2, "the stalled chunk was not started on its first look"
    started, times, _ = driver.starts[1]
    # The first target is due when it was checked to be (0.5 s after the stamp), not the stall later.
    ros_minus_mono = node.get_clock().now().nanoseconds * 1e-9 - time.monotonic()
    due = started + times[0] + ros_minus_mono - stamp
    assert abs(due - 0.5) < 0.015, due
    stream_times = node._stream[0]
    assert abs(stream_times[1] - (started + times[0])) < 0.005  # the stream's record says the same
    assert node._stream_delay == delay_before  # not re-timed


def test_a_stall_that_eats_the_lead_against_a_running_chunk_is_checked_afresh(node: Any) -> None:
    """A stall that leaves the chunk's first target under the 20 ms lead cannot keep its
    schedule: the chunk is checked again from a new now and started then."""
    from afford_ros.nodes import executor

    step = np.zeros(7)
    step[0] = 0.02
    node._on_targets(_chunk(node, [step * k for k in range(1, 12)], period=0.1))
    driver: RecordingDriver = node.driver
    stall = Stall(node, 0.06, left=1)
    node._on_targets(_chunk(node, [step * 0.5, step * 1.0], lead=0.07))
    assert stall.count == 1 and len(driver.starts) == 2  # taken on the second look
    assert driver.starts[1][1][0] >= executor._STREAM_LEAD - 1e-6


def test_a_stall_past_the_start_delay_is_not_absorbed(node: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The re-timing from rest is bounded (_MAX_START_DELAY in all): a chunk that stalls past
    it on every look is dropped with the reason, and nothing starts."""
    from afford_ros.nodes import executor

    step = np.zeros(7)
    step[1] = 0.03
    stall = Stall(node, 0.06, left=executor._STALL_TRIES)
    monkeypatch.setattr(executor, "_MAX_START_DELAY", 0.03)  # smaller than the stall
    node._on_targets(_chunk(node, [step * 0.5, step]))
    assert stall.count == executor._STALL_TRIES
    assert node.driver.starts == []
    assert node._stream is None


def test_a_late_chunk_that_starts_after_the_running_one_ends_is_retimed_as_from_rest(
    node: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy's chunks run end to end (each sends the arm one period on from where the one
    before leaves it). A chunk that comes late in the last moments of the running one, behind a
    stream already re-timed from rest past _MAX_STREAM_DELAY, starts where that one leaves the
    arm: it is re-timed whole, as from rest. Before, its first target was dropped and its second
    refused as a jump of the whole step from the held arm. The lead is widened to 0.2 s here so
    the window (the lead's length, before the running chunk's end) does not hang on this
    machine's scheduling."""
    from afford_ros.nodes import executor

    monkeypatch.setattr(executor, "_STREAM_LEAD", 0.2)
    step = np.zeros(7)
    step[0] = 0.08  # one period's step, over the 0.05 rad a first target may lie off
    first = _chunk(node, [step * 0, step], lead=0.2)  # from rest, as the policy sends it
    _age(first, 0.5)  # delivered 0.5 s late: re-timed from rest, the stream 0.5 s behind
    node._on_targets(first)
    driver: RecordingDriver = node.driver
    assert len(driver.starts) == 1 and node._stream_delay > executor._MAX_STREAM_DELAY
    end = node._stream[0][-1]
    # Now 0.1 s before the running chunk ends, its continuation comes 0.1 s later than the
    # stream's delay covers: its first target would be due 0.1 s from now, under the lead.
    time.sleep(max(0.0, end - 0.1 - time.monotonic()))
    second = _chunk(node, [step, step * 2], lead=0.2, period=0.3)  # its second target past the lead
    _age(second, 0.2 - 0.1 + node._stream_delay)
    errors: list[str] = []
    node._report = lambda kind, message: errors.append(f"{kind}: {message}")
    node._on_targets(second)
    assert not errors, errors
    assert len(driver.starts) == 2, "the continuation was not started"
    _, times, qs = driver.starts[1]
    np.testing.assert_allclose(qs[0], Q_REST + step)  # whole: its first target kept
    assert times[0] >= executor._STREAM_LEAD - 1e-6


def _age(msg: Any, seconds: float) -> None:
    """Stamp ``msg`` as sent ``seconds`` ago."""
    ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec - int(seconds * 1e9)
    msg.header.stamp.sec, msg.header.stamp.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
