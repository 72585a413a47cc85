"""PreAfford's grasping module (issue 13, step 3): the critic's inputs, its checkpoint, and a
training run end to end on a collection made in MuJoCo."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from afford_perception.preafford.grasp_module import (
    GraspCritic,
    GraspModuleConfig,
    cloud_proposals,
    grasp_code,
    load,
    save,
    score_grasps,
)
from afford_perception.preafford.train_grasp import TrainConfig, load_states, measure, train

SMALL = GraspModuleConfig(points=256, sa1_centers=64, sa1_neighbors=8, sa2_centers=16, sa2_neighbors=8)


def _cloud(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    table = np.c_[rng.uniform(-0.3, 0.3, (400, 2)), np.zeros(400)]
    slab = np.c_[rng.uniform(-0.1, 0.1, (200, 2)), rng.uniform(0.0, 0.01, 200)]
    return np.vstack([table, slab]), np.r_[np.zeros(400, bool), np.ones(200, bool)]


def test_grasp_code_ignores_the_closing_axis_sign() -> None:
    rot = np.column_stack([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])
    flipped = rot @ np.diag([-1.0, -1.0, 1.0])  # the same grasp, fingers swapped
    a, b = grasp_code(np.zeros(3), rot, np.zeros(3)), grasp_code(np.zeros(3), flipped, np.zeros(3))
    assert np.allclose(a, b)


def test_scores_are_probabilities_and_a_checkpoint_reloads_the_same(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    cloud, mask = _cloud(rng)
    tcp, rot = cloud_proposals(cloud, mask, 10, rng, rim=0.5)
    assert np.allclose(np.einsum("nij,nkj->nik", rot, rot), np.eye(3), atol=1e-9)
    assert np.all(np.linalg.det(rot) > 0.999)
    # The rim half: pinches across the slab (closing near vertical) from its outline, inwards.
    assert np.all(np.abs(rot[5:, 2, 1]) > np.cos(np.radians(36.0)))
    assert np.all(np.abs(rot[5:, 2, 2]) < np.sin(np.radians(21.0)))
    assert np.all(np.abs(tcp[5:, :2]).max(axis=1) > 0.07)  # at the 10 cm slab's outline
    assert np.all(tcp[:, 2] > -0.031)  # from outside the slab: at most the 3 cm depth below a point
    torch.manual_seed(0)
    model = GraspCritic(SMALL).eval()
    p = score_grasps(model, cloud, mask, tcp, rot)
    assert p.shape == (10,) and np.all((p > 0) & (p < 1))
    back, meta = load(save(model, tmp_path / "c.pt", {"note": 1}))
    assert meta == {"note": 1} and np.allclose(score_grasps(back, cloud, mask, tcp, rot), p)


def test_an_object_barely_seen_gets_no_proposals() -> None:
    rng = np.random.default_rng(0)
    cloud, mask = _cloud(rng)
    mask[:] = False
    mask[:2] = True
    with pytest.raises(ValueError, match="seen by 2 points"):
        cloud_proposals(cloud, mask, 4, rng, rim=0.5)


def test_an_unknown_checkpoint_format_is_refused(tmp_path: Path) -> None:
    torch.save({"format": 99}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="format 99"):
        load(tmp_path / "x.pt")


def test_training_runs_on_a_collection_and_keeps_its_best(tmp_path: Path) -> None:
    from afford_data.preafford import CollectConfig, collect

    # Scissors in the slot (seeded): three of the 48 tries succeed, so there is something to learn.
    for name, cats in (("train", ("scissors",)), ("val", ("pliers",))):
        collect(
            tmp_path / name,
            CollectConfig(
                "grasp", episodes=2, scenes=("slot",), categories=cats, grasps=12, rim=0.5, points=256
            ),
        )
    states = load_states(tmp_path / "train")
    assert len(states) == 4 and all(len(s.success) == 12 for s in states)
    assert sum(int(s.success.sum()) for s in states) == 3
    result = train(
        [tmp_path / "train", tmp_path / "val"],  # several collections train together
        tmp_path / "val",
        tmp_path / "m.pt",
        TrainConfig(epochs=2, batch=2),
        SMALL,
        say=lambda _line: None,
    )
    assert len(result["history"]) == 2 and (tmp_path / "m.pt").exists()
    model, meta = load(tmp_path / "m.pt")
    assert meta["best"]["epoch"] in (0, 1) and meta["train"] == [
        str(tmp_path / "train"),
        str(tmp_path / "val"),
    ]
    report = measure(model, load_states(tmp_path / "val"))
    assert report["all"]["states"] == len(load_states(tmp_path / "val"))
    assert 0.0 <= report["all"]["chance"] <= report["all"]["ceiling"] <= 1.0


def test_a_collection_without_a_success_is_refused(tmp_path: Path) -> None:
    from afford_data.preafford import CollectConfig, collect

    collect(
        tmp_path / "t",
        CollectConfig("grasp", episodes=1, scenes=("edge",), categories=("switch",), grasps=4, points=256),
    )
    assert not any(s.success.any() for s in load_states(tmp_path / "t"))
    with pytest.raises(ValueError, match="no successful grasp"):
        train(tmp_path / "t", tmp_path / "t", tmp_path / "m.pt", TrainConfig(epochs=1), SMALL)


def test_the_shipped_critics_load_and_say_how_they_were_made() -> None:
    from afford_perception.preafford import push_module

    weights = Path(__file__).resolve().parents[1] / "afford_perception" / "preafford" / "weights"
    grasp, gmeta = load(weights / "grasp_critic.pt")
    push, pmeta = push_module.load(weights / "push_critic.pt")
    assert isinstance(grasp, GraspCritic) and isinstance(push, push_module.PushCritic)
    for meta in (gmeta, pmeta):
        assert any("afford preafford train-" in c for c in meta["commands"]) and "best" in meta
    rng = np.random.default_rng(0)
    cloud, mask = _cloud(rng)
    tcp, rot = cloud_proposals(cloud, mask, 8, rng, rim=0.5)
    p = score_grasps(grasp, cloud, mask, tcp, rot)
    assert np.all((p >= 0) & (p <= 1))


def test_a_state_without_tries_is_left_out(tmp_path: Path) -> None:
    """A grasp episode's state where the object was barely seen has no tries: nothing to learn."""
    import json

    (tmp_path / "episodes" / "edge" / "phone").mkdir(parents=True)
    (tmp_path / "config.json").write_text(json.dumps({"module": "grasp"}))
    rng = np.random.default_rng(0)
    cloud, mask = _cloud(rng)
    tcp, rot = cloud_proposals(cloud, mask, 3, rng)
    np.savez(
        tmp_path / "episodes" / "edge" / "phone" / "00000.npz",
        clouds=np.stack([cloud, cloud]).astype(np.float32),
        object_mask=np.stack([mask, mask]),
        grasps=np.c_[tcp, rot.reshape(3, 9)].astype(np.float32),
        state=np.zeros(3, np.int16),
        success=np.array([True, False, False]),
        blocked=np.zeros(3, bool),
    )
    (state,) = load_states(tmp_path)
    assert len(state.success) == 3 and state.success[0]
