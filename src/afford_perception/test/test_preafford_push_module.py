"""PreAfford's pre-grasping module (issue 13): the critic's target (the seed's Eq. 6 with
measured gains), its pushes, its checkpoint, and a training run on a collection made in MuJoCo."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from afford_perception.preafford.grasp_module import GraspModuleConfig
from afford_perception.preafford.push_module import (
    DIRECTIONS,
    DISTANCES,
    PushCritic,
    load,
    load_push_states,
    measure_push,
    push_grid,
    save,
    score_pushes,
    target,
    train_push,
)


def test_the_target_is_the_gain_times_the_penalties() -> None:
    gain = np.array([0.5, 0.5, 0.5, 0.5, -0.25])
    dist = np.array([0.0, 0.3, 0.0, 0.1, 0.0])
    turn = np.array([0.0, 0.0, 90.0, 0.0, 0.0])
    fell = np.array([False, False, False, True, False])
    hit = np.zeros(5, bool)
    t = target(gain, dist, turn, fell, hit)
    assert (
        t[0] == pytest.approx(0.5) and t[1] == pytest.approx(0.5 / np.e) and t[2] == pytest.approx(0.5 / np.e)
    )
    assert t[3] == 0.0 and t[4] == pytest.approx(-0.25)  # a fall earns nothing; a loss stays a loss
    assert target(gain[:1], dist[:1], turn[:1], np.zeros(1, bool), np.ones(1, bool))[0] == 0.0


def test_pushes_are_a_grid_on_the_seen_object_and_scores_are_bounded(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    table = np.c_[rng.uniform(-0.3, 0.3, (400, 2)), np.zeros(400)]
    slab = np.c_[rng.uniform(-0.1, 0.1, (200, 2)), rng.uniform(0.0, 0.01, 200)]
    cloud, mask = np.vstack([table, slab]), np.r_[np.zeros(400, bool), np.ones(200, bool)]
    grid = push_grid(cloud, mask, 5, rng)
    assert grid.shape == (5 * DIRECTIONS * len(DISTANCES), 5)
    assert np.all(np.abs(grid[:, :2]) <= 0.1) and np.allclose(np.unique(grid[:, 4]), DISTANCES)
    # Contact-major, then direction, then distance: the order the critic's runs index into.
    row = 2 * DIRECTIONS * len(DISTANCES) + 3 * len(DISTANCES) + 1
    assert np.allclose(grid[row, :3], grid[2 * DIRECTIONS * len(DISTANCES), :3])
    assert grid[row, 3] == np.float32(np.linspace(-np.pi, np.pi, DIRECTIONS, endpoint=False)[3])
    assert grid[row, 4] == np.float32(DISTANCES[1])
    torch.manual_seed(0)
    small = GraspModuleConfig(points=256, sa1_centers=64, sa1_neighbors=8, sa2_centers=16, sa2_neighbors=8)
    model = PushCritic(small).eval()
    v = score_pushes(model, cloud, mask, grid)
    assert v.shape == (len(grid),) and np.all(np.abs(v) < 1.0)
    back, meta = load(save(model, tmp_path / "p.pt", {"n": 1}))
    assert meta == {"n": 1} and np.allclose(score_pushes(back, cloud, mask, grid), v)
    torch.save({"format": 2, "kind": "grasp"}, tmp_path / "g.pt")
    with pytest.raises(ValueError, match="not a push module checkpoint"):
        load(tmp_path / "g.pt")


def test_training_on_a_push_collection(tmp_path: Path) -> None:
    from afford_data.preafford import CollectConfig, collect

    config = CollectConfig(
        "push",
        episodes=1,
        scenes=("edge", "slot"),
        categories=("phone",),
        pushes=3,
        points=512,
        score_tries=4,
    )
    collect(tmp_path / "d", config)
    states = load_push_states(tmp_path / "d")
    assert len(states) == 2 and all(s.pushes.shape == (3, 5) and s.target.shape == (3,) for s in states)
    assert all(np.all(np.abs(s.target) <= 1.0) for s in states)
    result = train_push(
        tmp_path / "d", tmp_path / "d", tmp_path / "m.pt", epochs=1, batch=2, say=lambda _l: None
    )
    assert result["best"]["epoch"] == 0 and (tmp_path / "m.pt").exists()
    report = measure_push(load(tmp_path / "m.pt")[0], states)
    assert report["chance"] <= report["ceiling"] and report["episodes"] == 2
    grasp_only = CollectConfig(
        "grasp", episodes=1, scenes=("edge",), categories=("phone",), grasps=2, points=256
    )
    collect(tmp_path / "g", grasp_only)
    with pytest.raises(ValueError, match="not a push collection"):
        load_push_states(tmp_path / "g")
