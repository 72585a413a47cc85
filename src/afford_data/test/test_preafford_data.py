"""PreAfford's interaction data (issue 13, step 2): episodes collected in MuJoCo, one file each,
resumable, refused when the config differs, the same on a rerun of the same seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from afford_data.preafford import CollectConfig, collect, collect_episode, episodes_of, load, summary


def _small(module: str, **kw: object) -> CollectConfig:
    base: dict[str, object] = {
        "episodes": 1,
        "scenes": ("edge", "slot"),
        "categories": ("phone",),
        "grasps": 6,
        "pushes": 2,
        "points": 256,
        "score_tries": 4,
    }
    base.update(kw)
    return CollectConfig(module, **base)  # type: ignore[arg-type]


def test_config_is_checked() -> None:
    with pytest.raises(ValueError, match="module must be one of"):
        CollectConfig("poke", episodes=1)
    with pytest.raises(ValueError, match="unknown scenes or categories"):
        CollectConfig("grasp", episodes=1, categories=("teapot",))
    with pytest.raises(ValueError, match="episodes must be >= 1"):
        CollectConfig("grasp", episodes=0)
    with pytest.raises(ValueError, match="second_state must be"):
        CollectConfig("grasp", episodes=1, second_state="teleported")
    with pytest.raises(ValueError, match="proposer must be"):
        CollectConfig("grasp", episodes=1, proposer="oracle")


def test_cloud_proposals_are_tried_where_the_methods_draw_them(tmp_path: Path) -> None:
    config = _small("grasp", scenes=("edge",), proposer="cloud", second_state="feature", rim=0.5, points=1024)
    collect(tmp_path / "c", config)
    ((_, a),) = load(tmp_path / "c")[1]
    for s in range(len(a["clouds"])):
        tcp = a["grasps"][a["state"] == s][:, :3]
        seen = a["clouds"][s][a["object_mask"][s]]
        # Every TCP lies within the 3 cm depth (and 4 mm below the top) of a seen object point.
        d = np.linalg.norm(tcp[:, None, :] - seen[None, :, :], axis=-1).min(axis=1)
        assert np.all(d <= 0.031), d


def test_feature_pushed_second_states_are_more_often_graspable(tmp_path: Path) -> None:
    """The seed places objects on ledges for its grasp data; ours pushes them there: on the edge,
    the second state then offers lifting grasps where a sampled push's rarely does."""
    base = {
        "episodes": 2,
        "scenes": ("edge",),
        "categories": ("tablet", "keyboard"),
        "grasps": 16,
        "rim": 1.0,
        "points": 256,
    }
    wins = {}
    for how in ("sampled", "feature"):
        collect(tmp_path / how, CollectConfig("grasp", second_state=how, **base))  # type: ignore[arg-type]
        _, eps = load(tmp_path / how)
        wins[how] = sum(int(a["success"][a["state"] == 1].sum()) for _, a in eps)
    assert wins["feature"] > wins["sampled"], wins


def test_grasp_episodes_hold_two_states_and_their_tries(tmp_path: Path) -> None:
    config = _small("grasp")
    done = collect(tmp_path / "g", config)
    assert done.collected == 2 and done.kept == 0
    _, episodes = load(tmp_path / "g")
    for _ep, a in episodes:
        n_states = len(a["clouds"])
        assert n_states in (1, 2) and a["clouds"].shape[1:] == (256, 3)  # 1: the sampled push dropped it
        assert a["grasps"].shape == (6 * n_states, 12) and set(np.unique(a["state"])) == set(range(n_states))
        rot = a["grasps"][:, 3:].reshape(-1, 3, 3)
        assert np.allclose(rot @ rot.transpose(0, 2, 1), np.eye(3), atol=1e-5)
        assert not np.any(a["success"] & a["blocked"])
        assert np.all(a["success"] <= (a["rise"] >= 0.06))
        assert a["object_mask"].any()
    counts = summary(tmp_path / "g")["scenes"]
    assert set(counts) == {"edge", "slot"} and all(c["episodes"] == 1 for c in counts.values())


def test_push_episodes_hold_each_push_and_the_cloud_after(tmp_path: Path) -> None:
    collect(tmp_path / "p", _small("push"))
    _, episodes = load(tmp_path / "p")
    assert len(episodes) == 2
    for _, a in episodes:
        assert a["pushes"].shape == (2, 5) and a["clouds_after"].shape == (2, 256, 3)
        assert np.all(np.abs(a["pushes"][:, 3]) <= np.pi) and np.all(a["pushes"][:, 4] >= 0.02)
        assert a["cloud"].shape == (256, 3)
        # Measured grasp scores: a fraction of the 4 tries; a fallen object has none.
        assert a["score_after"].shape == (2,) and 0.0 <= float(a["score_before"]) <= 1.0
        assert np.all((a["score_after"] * 4) % 1 == 0) and np.all(a["score_after"][a["fell"]] == 0.0)


def test_a_collection_resumes_and_refuses_another_config(tmp_path: Path) -> None:
    root = tmp_path / "c"
    config = _small("push", scenes=("edge",))
    collect(root, config)
    (ep,) = episodes_of(config)
    first = dict(np.load(ep.path(root)))
    ep.path(root).unlink()
    again = collect(root, config)
    assert again.collected == 1 and again.kept == 0
    redone = dict(np.load(ep.path(root)))
    assert all(np.array_equal(first[k], redone[k]) for k in first)  # a seed is an experiment
    assert collect(root, config).collected == 0
    with pytest.raises(ValueError, match="holds another collection"):
        collect(root, _small("push", scenes=("edge",), pushes=3))


def test_an_episode_is_a_function_of_its_seed() -> None:
    (ep, _) = episodes_of(_small("grasp"))
    a, b = collect_episode(ep), collect_episode(ep)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_a_push_that_hides_the_object_is_unmeasured_not_a_crash(tmp_path: Path) -> None:
    """In the slot, one of this laptop's pushes leaves it out of the camera's sight (0 points): its
    grasp score cannot be measured (NaN, not 0: it may be graspable), the episode is kept, and
    the pushing critic's loader leaves that push out. It once aborted a whole collection."""
    from afford_perception.preafford.push_module import load_push_states

    scenes = ("edge", "wall", "slope", "slot", "multi")
    cfg = CollectConfig("push", episodes=1, scenes=scenes, first_seed=200000)  # the training categories
    (ep,) = [e for e in episodes_of(cfg) if (e.scene, e.category) == ("slot", "laptop")]
    arrays = collect_episode(ep)
    hidden = arrays["object_mask_after"].sum(axis=1) == 0
    assert hidden.any() and np.all(np.isnan(arrays["score_after"][hidden]))
    assert np.all(np.isfinite(arrays["score_after"][~hidden])) and np.isfinite(arrays["score_before"])
    np.savez(tmp_path / "ep.npz", **arrays)
    (tmp_path / "c" / "episodes" / "slot" / "laptop").mkdir(parents=True)
    (tmp_path / "ep.npz").rename(tmp_path / "c" / "episodes" / "slot" / "laptop" / "200000.npz")
    (tmp_path / "c" / "config.json").write_text(json.dumps(cfg.as_dict()))
    (state,) = load_push_states(tmp_path / "c")
    assert len(state.pushes) == int((~hidden).sum()) and np.all(np.isfinite(state.target))
