"""The batch world's executor joins a path that starts a little off the arm, at a speed it can.

A skill computes some paths ahead (a pour's tilt from where the lift was to end); the arm then
stands up to a centimetre-radian off their first point, and a first step of a few milliseconds
would ask a joint for more than its limit (the Kinova's joint 1 at 2.99 rad/s against 1.40 in
a table run: the world refused the segment and the rollout crashed).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from afford_pipeline.execution import WorldExecutor
from afford_sim.scene import ObjectSpec, SceneSpec, Window, sample_scene
from afford_sim.world import BatchWorld


@pytest.fixture(scope="module")
def world() -> Iterator[BatchWorld]:
    cube = ObjectSpec("cube", "cube", 0, Window(center=(0.5, 0.3), size=(0, 0), yaw=(0, 0)))
    w = BatchWorld(sample_scene(SceneSpec(objects=(cube,), cameras=()), seed=0))
    yield w
    w.close()


def test_a_path_a_small_step_off_the_arm_is_joined_within_the_speed_limits(world: BatchWorld) -> None:
    ex = WorldExecutor(world)
    q0 = world.arm_q()
    start = q0 + np.r_[0.008, np.zeros(len(q0) - 1)]  # under the 1 cm join threshold
    times = np.array([0.0, 0.003, 0.5])
    qs = np.vstack([start, start, start + np.r_[0.05, np.zeros(len(q0) - 1)]])
    # Straight on, the first 3 ms would need joint 1 at 0.008 / 0.003 = 2.7 rad/s.
    assert 0.008 / 0.003 > world.velocity_limits[0]
    ex.follow(times, qs)
    assert np.max(np.abs(world.arm_q() - qs[-1])) < 0.01


def test_a_path_that_starts_on_the_arm_is_followed_without_a_join(world: BatchWorld) -> None:
    """Nothing changes for a path whose first step the joints can take: no extra motion."""
    ex = WorldExecutor(world)
    q0 = world.arm_q()
    qs = np.vstack([q0, q0 + np.r_[0.05, np.zeros(len(q0) - 1)]])
    t0 = world.time
    ex.follow(np.array([0.0, 0.5]), qs)
    # The motion (0.5 s) and the executor's 0.15 s wait, and no join's 0.15 s and more.
    assert world.time - t0 == pytest.approx(0.65, abs=0.02)
