"""PreAfford's Table II runner (issue 13): every method from the same seeded start, in MuJoCo,
resumable, and a report beside the seed's numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from afford_eval import preafford_table2 as t2
from afford_eval.runs import sha256_file
from afford_perception.preafford.grasp_module import GraspCritic, GraspModuleConfig, save
from afford_perception.preafford.push_module import PushCritic
from afford_perception.preafford.push_module import save as save_push

SMALL = GraspModuleConfig(points=256, sa1_centers=64, sa1_neighbors=8, sa2_centers=16, sa2_neighbors=8)


@pytest.fixture(scope="module")
def critic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    return save(GraspCritic(SMALL), tmp_path_factory.mktemp("m") / "critic.pt", {"note": "untrained"})


@pytest.fixture(scope="module")
def push_critic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(1)
    return save_push(PushCritic(SMALL), tmp_path_factory.mktemp("p") / "push.pt", {"note": "untrained"})


def _config(critic: Path, push_critic: Path, **kw: Any) -> t2.Table2Config:
    """One rollout per cell with the untrained critics."""
    return t2.Table2Config(
        model=str(critic),
        model_sha256=sha256_file(critic),
        push_model=str(push_critic),
        push_model_sha256=sha256_file(push_critic),
        rollouts=1,
        **kw,
    )


def test_a_run_holds_every_method_and_resumes(critic: Path, push_critic: Path, tmp_path: Path) -> None:
    config = _config(critic, push_critic, scenes=("edge",), categories=("tablet", "phone"), proposals=6)
    done = t2.run(tmp_path / "r", config)
    n = 2 * len(t2.METHODS)
    assert done.ran == n and done.kept == 0
    records = t2.load_records(tmp_path / "r")
    assert {(r["category"], r["method"]) for r in records} == {
        (c, m) for c in ("tablet", "phone") for m in t2.METHODS
    }
    assert not [r for r in records if r["error"]], [r["error"] for r in records]
    by = {(r["category"], r["method"]): r for r in records}
    for c in ("tablet", "phone"):
        # The ceiling tries every proposal the others choose among: none can beat it.
        assert by[(c, "direct_ceiling")]["success"] >= by[(c, "direct_critic")]["success"]
        assert by[(c, "direct_ceiling")]["success"] >= by[(c, "direct_random")]["success"]
        assert by[(c, "scripted_push_critic")]["pushes"][0]["feature"] == "edge"
        assert 0.0 <= by[(c, "direct_critic")]["c2"] <= 1.0
        for m in t2.PUSH_METHODS:
            r = by[(c, m)]
            # The necessity check: it pushed exactly when c_2 was under theta_g at the start.
            assert r["pushed"] == (r["c2"] < t2.THETA_G), r
            assert len(r["pushes"]) <= (t2.MAX_PUSHES if m == "preafford" else 1)
        assert all(
            p["distance"] in (0.06, 0.12, 0.2) or m == "push_random_direction"
            for m in t2.PUSH_METHODS
            for p in by[(c, m)]["pushes"]
        )
    assert {r["split"] for r in records} == {"train", "test"}
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| seed: Ours | 81.4 |" in report and "| direct_ceiling |" in report
    again = t2.run(tmp_path / "r", config)
    assert again.ran == 0 and again.kept == n
    other = t2.Table2Config(
        **{
            **config.as_dict(),
            "scenes": ("edge",),
            "categories": ("tablet",),
            "methods": tuple(t2.METHODS),
            "rollouts": 2,
        }
    )
    with pytest.raises(ValueError, match="holds another run"):
        t2.run(tmp_path / "r", other)
    assert json.loads((tmp_path / "r" / "config.json").read_text())["rollouts"] == 1


def test_a_pushing_method_without_a_push_model_is_refused_before_it_runs(critic: Path) -> None:
    with pytest.raises(ValueError, match="needs the pre-grasping module"):
        t2.Table2Config(model=str(critic), model_sha256="x", methods=("direct_critic", "preafford"))
    with pytest.raises(ValueError, match="unknown methods"):
        t2.Table2Config(model=str(critic), model_sha256="x", methods=("magic",))


def test_table3_counts_the_necessity_check_on_easy_and_hard_objects(
    critic: Path, push_critic: Path, tmp_path: Path
) -> None:
    """A run with easy categories adds Table III: in the multi scene, how often ``preafford``
    pushed on easy (G) and hard (U) objects, whether a push was needed (no direct proposal
    lifted it) and the success after, beside the seed's numbers. A can standing mid-table is
    lifted by a direct proposal where a tablet lying there is not."""
    from afford_sim.preafford import objects

    assert (t2.TRAIN, t2.TEST) == (objects.TRAIN_CATEGORIES, objects.TEST_CATEGORIES)
    assert (t2.EASY_TRAIN, t2.EASY_TEST) == (objects.EASY_TRAIN_CATEGORIES, objects.EASY_TEST_CATEGORIES)
    config = _config(
        critic,
        push_critic,
        scenes=(t2.TABLE3_SCENE,),
        categories=("tablet", "can"),
        methods=t2.TABLE3_METHODS,
        proposals=16,
        first_seed=500_001,
    )
    t2.run(tmp_path / "r3", config)
    records = t2.load_records(tmp_path / "r3")
    assert not [r for r in records if r["error"] or r.get("abstained")], records
    by = {(r["category"], r["method"]): r for r in records}
    assert by[("can", "direct_ceiling")]["success"] and not by[("tablet", "direct_ceiling")]["success"]
    assert by[("can", "preafford")]["split"] == "train"
    report = (tmp_path / "r3" / "report.md").read_text()
    assert "and Table III" in report.splitlines()[0]
    section = report[report.index("## Table III"):]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
             if line.startswith("| ")]
    rows = {c[0]: c[1:] for c in cells}
    # Train G is the can, train U the tablet; nothing ran on the test categories.
    needed = rows["a push needed (no direct proposal lifts it: 100 - ceiling)"]
    assert needed[0].startswith("0 [") and needed[1].startswith("100 [") and needed[2] == "-", needed
    pushed = rows["pre-grasping rate (pushed at least once)"]
    assert pushed[0] == ("100 [21, 100] (1/1)" if by[("can", "preafford")]["pushed"] else "0 [0, 79] (0/1)")
    matched = rows["the check's decision matched the need (chance 50)"]
    tablet_pushed = by[("tablet", "preafford")]["pushed"]
    assert matched[1] == ("100 [21, 100] (1/1)" if tablet_pushed else "0 [0, 79] (0/1)")
    assert rows["seed: pre-grasping rate"] == ["14.7", "84.1", "23.4", "77.5"]
    # A Table II run (no easy category) has no Table III.
    assert "Table III" not in t2.build_report(
        t2.Table2Config(**{**config.as_dict(), "categories": ("tablet",)}), records, [])


def test_a_calibrated_necessity_check_compares_the_calibrated_c2(
    critic: Path, push_critic: Path, tmp_path: Path
) -> None:
    """With a calibration the check compares the chance the object is graspable, mapped from
    the raw score by the run's curve, with theta_g; the record keeps both values. A calibration
    fitted for another critic is refused before the run directory holds anything."""
    from afford_perception.preafford.necessity import NecessityCheck

    path = NecessityCheck(a=12.0, b=-6.0, critic_sha256=sha256_file(critic)).save(tmp_path / "n.json")
    config = _config(
        critic, push_critic, scenes=("edge",), categories=("tablet", "can"), methods=("preafford",),
        proposals=6, necessity=str(path), necessity_sha256=sha256_file(path),
    )
    t2.run(tmp_path / "r", config)
    records = t2.load_records(tmp_path / "r")
    assert len(records) == 2 and not [r for r in records if r["error"]]
    for r in records:
        assert r["c2"] == pytest.approx(1 / (1 + np.exp(-(12.0 * r["c2_raw"] - 6.0))), abs=1e-3)
        assert r["pushed"] == (r["c2"] < t2.THETA_G), r
    assert "calibrated by `" in (tmp_path / "r" / "report.md").read_text()
    other = NecessityCheck(a=12.0, b=-6.0, critic_sha256="f" * 64).save(tmp_path / "other.json")
    with pytest.raises(ValueError, match="calibrated for the grasping critic ffff"):
        t2.run(tmp_path / "r2", t2.Table2Config(**{**config.as_dict(), "necessity": str(other)}))
    assert not (tmp_path / "r2").exists()


def test_calibration_states_are_the_ceilings_of_training_categories(critic: Path, tmp_path: Path) -> None:
    """``calibration_states`` reads a run's ``direct_ceiling`` records (raw c_2, graspable);
    the object unseen is left out and counted; a run on a test category is refused."""
    config = t2.Table2Config(model=str(critic), model_sha256="m" * 64, scenes=("edge",),
                             categories=("tablet", "can"), methods=("direct_ceiling",), rollouts=2)
    run = tmp_path / "val"
    t2.write_json(run / "config.json", config.as_dict())
    for k, (cat, c2, ok) in enumerate([("tablet", 0.2, False), ("can", 0.9, True), ("can", None, False)]):
        rec = {"method": "direct_ceiling", "scene": "edge", "category": cat, "seed": k, "success": ok,
               "c2": c2, "error": None}
        t2.write_json(run / "rollouts" / "edge" / cat / "direct_ceiling" / f"{k:06d}.json", rec)
    raw, graspable, info = t2.calibration_states(run)
    assert sorted(zip(raw.tolist(), graspable.tolist(), strict=True)) == [(0.2, False), (0.9, True)]
    assert info["abstained"] == 1 and info["model_sha256"] == "m" * 64 and info["seeds"] == [500_000, 500_001]
    t2.write_json(run / "config.json", {**config.as_dict(), "categories": ["tablet", "phone"]})
    with pytest.raises(ValueError, match=r"holds test categories \(phone\)"):
        t2.calibration_states(run)


def test_videos_film_the_methods_without_changing_what_they_do(
    critic: Path, push_critic: Path, tmp_path: Path
) -> None:
    """``videos=1``: the first seed of every (scene, category, method) but the ceiling is
    filmed; a filmed rollout's outcome is the unfilmed one's (rendering only reads the state);
    the video is a readable MP4 of the frames recorded; a deleted video is filmed again on resume."""
    import imageio.v3 as iio

    kw: dict[str, Any] = dict(scenes=("edge",), categories=("tablet",), proposals=6,
                              methods=("direct_critic", "direct_ceiling", "preafford"))
    plain = _config(critic, push_critic, **kw)
    filmed = t2.Table2Config.from_dict({**plain.as_dict(), "videos": 1})
    t2.run(tmp_path / "plain", plain)
    t2.run(tmp_path / "filmed", filmed)
    a = {r["method"]: r for r in t2.load_records(tmp_path / "plain")}
    b = {r["method"]: r for r in t2.load_records(tmp_path / "filmed")}
    skip = {"wall_s", "video", "video_path", "video_frames"}
    def outcome(r: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in r.items() if k not in skip}

    for m in a:
        assert outcome(a[m]) == outcome(b[m]), m
    assert "video_path" not in b["direct_ceiling"] and not list((tmp_path / "plain").glob("videos/**/*.mp4"))
    path = tmp_path / "filmed" / b["preafford"]["video_path"]
    frames = iio.imread(path, index=None)
    assert frames.shape[0] == b["preafford"]["video_frames"] > 10 and frames.shape[-1] == 3
    assert "Videos: 2 rollouts filmed" in (tmp_path / "filmed" / "report.md").read_text()
    path.unlink()
    again = t2.run(tmp_path / "filmed", filmed)
    assert again.ran == 1 and path.exists()
