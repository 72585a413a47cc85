"""The open-vocabulary affordance model: shapes and ranges, learning, checkpoints, inference.

These run on random or tiny synthetic data with a reduced config, so the suite stays fast on two
CPU cores; the trained model's accuracy is graded by the affordance benchmark, not here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from afford_perception.affordance.model import (
    AffordanceModel,
    AffordanceModelConfig,
    CheckpointMismatch,
    affordance_loss,
    ball_query,
    count_parameters,
    farthest_point_sample,
    load_model,
    nearest,
    predict,
    predict_many,
    save_model,
)

# Small enough that a few hundred training steps take seconds on two cores.
TINY = AffordanceModelConfig(
    num_points=512, feature_dim=32, sa1_centers=128, sa1_neighbors=16, sa1_mlp=(16, 32),
    sa2_centers=32, sa2_neighbors=16, sa2_mlp=(32, 64), fp_mlp=(64,), text_hidden=64,
)


def knob_and_body(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A sphere (body) with a rod sticking out of it (handle); returns points and handle mask."""
    n_rod = n // 3
    sphere = rng.normal(size=(n - n_rod, 3))
    sphere = 0.05 * sphere / np.linalg.norm(sphere, axis=1, keepdims=True)
    t = rng.uniform(0.05, 0.15, n_rod)
    angle = rng.uniform(0, 2 * np.pi, n_rod)
    rod = np.stack([t, 0.01 * np.cos(angle), 0.01 * np.sin(angle)], axis=1)
    points = np.concatenate([sphere, rod]).astype(np.float32)
    return points, np.arange(n) >= n - n_rod


def unit_rows(count: int, dim: int, seed: int) -> np.ndarray:
    """Random unit vectors standing in for MiniLM embeddings (the model only sees vectors)."""
    v = np.random.default_rng(seed).normal(size=(count, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def stub_embedder(texts: list[str]) -> np.ndarray:
    """Deterministic per-text vectors, so predict() runs without loading MiniLM (7 s)."""
    return np.stack([unit_rows(1, 384, sum(map(ord, t)))[0] for t in texts])


def test_default_model_is_small_and_scores_lie_in_unit_interval() -> None:
    """Shipped weights must stay small (committed to git, loaded on the robot PC), and every
    score is a probability the planner thresholds at 0.5."""
    torch.manual_seed(0)
    model = AffordanceModel().eval()
    assert count_parameters(model) < 2_000_000
    with torch.no_grad():
        scores = model(torch.randn(2, 2048, 3), torch.randn(2, 384))
    assert scores.shape == (2, 2048)
    assert torch.all((scores >= 0) & (scores <= 1))


def test_scores_ignore_position_and_scale_of_the_cloud() -> None:
    """The same object seen 1 m away or scaled in the camera frame must get the same scores;
    otherwise a shift in the segmentation's centring changes which points are the handle."""
    torch.manual_seed(0)
    model = AffordanceModel(TINY).eval()
    points = torch.randn(1, 512, 3)
    text = torch.randn(1, 384)
    with torch.no_grad():
        a = model(points, text)
        b = model(points * 3.0 + torch.tensor([1.0, -2.0, 0.5]), text)
    # 1e-3, not exact: float32 rounding of a cloud moved 2 m away shifts the normalised
    # coordinates by ~1e-7, which the network carries to ~2e-4 on a score (measured).
    torch.testing.assert_close(a, b, atol=1e-3, rtol=0)


def test_sampling_ops_pick_spread_centres_and_stay_inside_the_ball() -> None:
    """Centres must cover the object (a thin handle gets its own) and groups must be local,
    or part boundaries blur."""
    xyz = torch.rand(1, 1000, 3)
    idx = farthest_point_sample(xyz, 64)
    assert idx.unique().numel() == 64
    centres = xyz[0, idx[0]]
    spacing = torch.cdist(centres, centres).fill_diagonal_(np.inf).amin()
    assert spacing > 0.1  # random picks of 64 in a unit cube come far closer than this
    group = ball_query(xyz, centres.unsqueeze(0), radius=0.15, count=8)
    dist = (xyz[0, group[0]] - centres.unsqueeze(1)).norm(dim=-1)
    assert torch.all(dist <= 0.15 + 1e-6)
    # The k-d tree finds exactly the neighbours a brute-force search does, nearest first.
    dist, idx = nearest(centres.unsqueeze(0), xyz, 8)
    brute = (centres[:, None] - xyz[0][None]).norm(dim=-1).unsqueeze(0).topk(8, dim=-1, largest=False)
    torch.testing.assert_close(dist, brute.values)
    assert torch.equal(idx, brute.indices)


def test_model_overfits_two_parts_with_two_queries() -> None:
    """The encoder and text head must be able to separate a handle from a body and answer two
    queries differently on the same cloud; if it cannot fit this, it cannot learn real parts."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    clouds, handles = zip(*(knob_and_body(TINY.num_points, rng) for _ in range(2)), strict=True)
    points = torch.from_numpy(np.stack(clouds)).repeat(2, 1, 1)  # every cloud with both queries
    handle = torch.from_numpy(np.stack(handles))
    target = torch.cat([handle, ~handle])  # query 0: the handle, query 1: the body
    queries = torch.from_numpy(unit_rows(2, 384, seed=1)).repeat_interleave(2, dim=0)

    model = AffordanceModel(TINY)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(150):
        loss = affordance_loss(model.logits(points, queries), target, TINY.dice_weight)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = model(points, queries) >= 0.5
    iou = ((pred & target).sum(1) / (pred | target).sum(1)).min().item()
    assert np.mean(losses[-10:]) < 0.25 * np.mean(losses[:10])
    assert iou > 0.9, f"worst IoU {iou:.3f}"


def test_the_category_decides_whether_a_part_is_there() -> None:
    """The same rod on the same ball is a handle on one object and nothing to grasp on another
    (a banana has no handle). Told the category, the model must answer both; without it, a
    robot asked for a handle the object lacks would grasp whatever looks most like one."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    clouds, handles = zip(*(knob_and_body(TINY.num_points, rng) for _ in range(2)), strict=True)
    points = torch.from_numpy(np.stack(clouds)).repeat(2, 1, 1)
    handle = torch.from_numpy(np.stack(handles))
    target = torch.cat([handle, torch.zeros_like(handle)])  # category 0: a handle; category 1: none
    categories = torch.from_numpy(unit_rows(2, 384, seed=2)).repeat_interleave(2, dim=0)
    query = torch.from_numpy(unit_rows(1, 384, seed=1)).expand(4, -1)

    model = AffordanceModel(TINY)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = affordance_loss(model.logits(points, query, categories), target, TINY.dice_weight)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    with torch.no_grad():
        pred = model(points, query, categories) >= 0.5
    iou = ((pred[:2] & target[:2]).sum(1) / (pred[:2] | target[:2]).sum(1)).min().item()
    assert iou > 0.9, f"worst IoU where the handle exists {iou:.3f}"
    assert pred[2:].sum().item() < 0.01 * pred[2:].numel(), "a handle was found where none exists"


def test_an_unknown_category_is_the_zero_row_and_a_model_without_categories_ignores_them() -> None:
    """A bare cloud (no task named the object) must still be scored, the same way every time;
    a model built without category input must not change its answer when given one."""
    torch.manual_seed(0)
    model = AffordanceModel(TINY).eval()
    points, text = torch.randn(2, 512, 3), torch.randn(2, 384)
    category = torch.from_numpy(unit_rows(2, 384, seed=3))
    with torch.no_grad():
        unknown = model(points, text)
        torch.testing.assert_close(unknown, model(points, text, torch.zeros(2, 384)))
        assert not torch.allclose(unknown, model(points, text, category))
        with pytest.raises(ValueError, match="category_emb must have shape"):
            model(points, text, category[:1])
        blind = AffordanceModel(AffordanceModelConfig(**{**TINY.to_dict(), "category_dim": 0})).eval()
        assert blind.category_proj is None
        torch.testing.assert_close(blind(points, text), blind(points, text, category))
    cloud = np.random.default_rng(0).normal(size=(600, 3))
    with pytest.raises(ValueError, match="category_emb must be a \\(384,\\) row"):
        predict(model, cloud, "the handle", embedder=stub_embedder, category_emb=np.zeros((2, 192)))
    with pytest.raises(ValueError, match="NaN"):
        predict(model, cloud, "the handle", embedder=stub_embedder, category_emb=np.full(384, np.nan))
    scores = predict(model, cloud, "the handle", embedder=stub_embedder, category_emb=category[0].numpy())
    assert scores.shape == (600,) and not np.allclose(scores, predict(model, cloud, "the handle",
                                                                       embedder=stub_embedder))


def test_save_and_load_round_trip_gives_identical_scores(tmp_path) -> None:
    """Shipped weights must reproduce the scores they were evaluated with, bit for bit."""
    torch.manual_seed(0)
    model = AffordanceModel(TINY).eval()
    path = save_model(model, tmp_path / "model.pt", meta={"command": "afford affordance train"})
    loaded = load_model(path, expected=TINY)
    points, text = torch.randn(2, 512, 3), torch.randn(2, 384)
    with torch.no_grad():
        assert torch.equal(model(points, text), loaded(points, text))
    assert loaded.config == TINY and not loaded.training


def test_load_refuses_a_checkpoint_of_another_config(tmp_path) -> None:
    """Weights trained for one architecture must never be half-loaded into another: the robot
    would act on meaningless scores. The error names the differing field."""
    path = save_model(AffordanceModel(TINY), tmp_path / "model.pt")
    with pytest.raises(CheckpointMismatch, match="feature_dim: stored 32, expected 128"):
        load_model(path, expected=AffordanceModelConfig())


def test_load_refuses_tampered_config_and_foreign_files(tmp_path) -> None:
    """A checkpoint whose config no longer matches this code, or a file of another kind, is
    refused with a message instead of a shape error deep in torch."""
    path = save_model(AffordanceModel(TINY), tmp_path / "model.pt")
    payload = torch.load(path, weights_only=True)
    payload["config"]["sa1_mlp"] = (16, 48)
    torch.save(payload, tmp_path / "edited.pt")
    with pytest.raises(CheckpointMismatch, match="weights do not fit"):
        load_model(tmp_path / "edited.pt")
    payload["config"]["dropout"] = 0.1
    torch.save(payload, tmp_path / "unknown.pt")
    with pytest.raises(CheckpointMismatch, match="unknown \\['dropout'\\]"):
        load_model(tmp_path / "unknown.pt")
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(CheckpointMismatch, match="not an affordance checkpoint"):
        load_model(tmp_path / "other.pt")
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.pt")


@pytest.mark.parametrize("count", [100, 512, 3000])
def test_predict_maps_scores_back_to_every_observed_point(count: int) -> None:
    """A camera gives any number of points; every one of them needs a score for the grasp
    sampler, and repeated calls on one cloud must agree."""
    torch.manual_seed(0)
    model = AffordanceModel(TINY)
    points = np.random.default_rng(count).normal(size=(count, 3))
    scores = predict(model, points, "the handle", embedder=stub_embedder)
    assert scores.shape == (count,)
    assert np.all((scores >= 0) & (scores <= 1))
    np.testing.assert_array_equal(scores, predict(model, points, "the handle", embedder=stub_embedder))
    both = predict_many(model, points, ["the handle", "the body"], embedder=stub_embedder)
    np.testing.assert_allclose(both[0], scores, atol=1e-6)


def test_predict_rejects_bad_clouds() -> None:
    """An empty or NaN cloud from a failed segmentation must fail loudly, not score garbage."""
    model = AffordanceModel(TINY)
    with pytest.raises(ValueError, match="non-empty"):
        predict(model, np.zeros((0, 3)), "handle", embedder=stub_embedder)
    with pytest.raises(ValueError, match="NaN"):
        predict(model, np.full((10, 3), np.nan), "handle", embedder=stub_embedder)


def test_config_rejects_inconsistent_architecture() -> None:
    """A config that cannot run is refused at construction, naming what is wrong."""
    with pytest.raises(ValueError, match="sa2_centers < sa1_centers"):
        AffordanceModelConfig(sa1_centers=64, sa2_centers=64)
    with pytest.raises(ValueError, match="sa1_radius < sa2_radius"):
        AffordanceModelConfig(sa1_radius=0.5, sa2_radius=0.4)
    with pytest.raises(ValueError, match="fp_mlp"):
        AffordanceModelConfig(fp_mlp=())
    with pytest.raises(ValueError, match="category_dim"):
        AffordanceModelConfig(category_dim=-1)


def test_samplings_and_neighbours_kept_for_the_same_cloud_are_copies_of_the_same_result() -> None:
    """Two encoders of one cloud share its farthest-point sampling and neighbour searches (kept
    by exact contents): a repeated call returns what a fresh computation returns, as a copy the
    caller may change, and a cloud differing in one coordinate is computed anew."""
    from afford_perception.affordance import model as m

    rng = np.random.default_rng(0)
    xyz = torch.from_numpy(rng.normal(size=(1, 300, 3)).astype(np.float32))
    m.forget_recent()
    first = farthest_point_sample(xyz, 32)
    first[0, 0] = -1  # the caller's copy
    again = farthest_point_sample(xyz, 32)
    m.forget_recent()
    assert torch.equal(again, farthest_point_sample(xyz, 32)) and int(again[0, 0]) != -1
    d1, i1 = nearest(xyz[:, :10], xyz, 5)
    d2, i2 = nearest(xyz[:, :10], xyz, 5)
    assert torch.equal(d1, d2) and torch.equal(i1, i2) and d1.data_ptr() != d2.data_ptr()
    moved = xyz.clone()
    moved[0, int(again[0, 1]), 0] += 10.0  # a centre moved far out: the sampling changes
    assert not torch.equal(farthest_point_sample(moved, 32), again)
    assert len(m._FPS_RECENT.entries) <= m._FPS_RECENT.size  # a few kept, never more
