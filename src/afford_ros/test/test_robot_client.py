"""The franky client's waypoint plan: what the arm is really sent for a checked trajectory."""

from __future__ import annotations

import numpy as np

from afford_ros.robot_client import plan_waypoints

V = np.full(7, 1.0)  # rad/s
A = np.full(7, 4.0)  # rad/s^2


def _ramp(duration: float, delta: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(0.0, duration, n)
    s = 0.5 * (1.0 - np.cos(np.pi * t / duration))
    q = np.zeros((n, 7))
    q[:, 0] = delta * s
    return t, q


def test_a_trajectory_within_the_limits_keeps_its_times_and_ends_at_rest() -> None:
    t, q = _ramp(2.0, 0.5, 201)
    plan = plan_waypoints(t, q, V, A, waypoint_period=0.05)
    assert plan.scale == 1.0 and plan.duration == 2.0
    assert plan.times[-1] == 2.0 and np.allclose(plan.positions[-1], q[-1])
    assert np.all(np.diff(plan.times) > 0) and np.all(plan.velocities[-1] == 0.0)


def test_a_trajectory_too_fast_for_the_limits_is_slowed_uniformly() -> None:
    t, q = _ramp(0.5, 1.0, 51)  # peaks at pi rad/s, over the 1 rad/s limit
    plan = plan_waypoints(t, q, V, A, waypoint_period=0.05)
    assert plan.scale > 3.0
    assert np.max(np.abs(plan.velocities)) <= 1.0 + 1e-9
    assert plan.duration == np.float64(0.5) * plan.scale


def test_a_hold_is_one_waypoint_reached_at_rest_and_keeps_its_duration() -> None:
    """A policy holding still sends chunks of one repeated target; franky's planner failed on
    runs of identical waypoints now and then (error -111), so a run is one waypoint, at zero
    velocity; the plan still lasts as long as the chunk (the stream's watchdog times it)."""
    t = np.arange(1, 26) * 0.02
    q = np.tile(np.linspace(0.0, 0.6, 7), (25, 1))
    plan = plan_waypoints(t, q, V, A, waypoint_period=0.02)
    assert len(plan.times) == 1 and np.all(plan.velocities == 0.0)
    assert plan.duration == t[-1]

    # A move, a pause, a move: the pause's repeats go; the arm is at rest where it pauses.
    t2, q2 = _ramp(1.0, 0.3, 51)
    pause = np.tile(q2[-1], (10, 1))
    t3, q3 = _ramp(1.0, 0.3, 51)
    times = np.r_[t2, t2[-1] + 0.02 * np.arange(1, 11), t2[-1] + 0.2 + t3[1:]]
    positions = np.vstack([q2, pause, q3[1:] + q2[-1]])
    plan = plan_waypoints(times, positions, V, A, waypoint_period=0.02)
    at_pause = [k for k, p in enumerate(plan.positions) if np.allclose(p, q2[-1])]
    assert len(at_pause) == 1 and np.all(plan.velocities[at_pause[0]] == 0.0)
    assert np.all(np.diff(plan.times) > 0) and plan.duration == times[-1]


def test_a_chunk_due_at_once_gets_its_first_waypoint_a_period_in() -> None:
    """A streamed chunk's first target is 20 ms ahead; franky's planner failed (-111) on a
    segment that short from a moving arm, so the first waypoint is a waypoint period in."""
    t = np.arange(1, 151) * 0.02
    q = np.zeros((150, 7))
    q[:, 0] = 0.1 * t
    plan = plan_waypoints(t, q, V, A, waypoint_period=0.1)
    assert plan.times[0] >= 0.1 - 1e-9 and plan.times[-1] == t[-1]
