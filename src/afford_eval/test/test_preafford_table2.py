"""PreAfford's Table II runner (issue 13): every method from the same seeded start, in MuJoCo,
resumable, and a report beside the seed's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from afford_eval import preafford_table2 as t2
from afford_eval.runs import sha256_file
from afford_perception.preafford.grasp_module import GraspCritic, GraspModuleConfig, save


@pytest.fixture(scope="module")
def critic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    small = GraspModuleConfig(points=256, sa1_centers=64, sa1_neighbors=8, sa2_centers=16, sa2_neighbors=8)
    return save(GraspCritic(small), tmp_path_factory.mktemp("m") / "critic.pt", {"note": "untrained"})


def test_a_run_holds_every_method_and_resumes(critic: Path, tmp_path: Path) -> None:
    config = t2.Table2Config(
        model=str(critic),
        model_sha256=sha256_file(critic),
        rollouts=1,
        scenes=("edge",),
        categories=("tablet", "phone"),
        proposals=6,
    )
    done = t2.run(tmp_path / "r", config)
    assert done.ran == 8 and done.kept == 0
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
    assert {r["split"] for r in records} == {"train", "test"}
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| seed: Ours | 81.4 |" in report and "| direct_ceiling |" in report
    again = t2.run(tmp_path / "r", config)
    assert again.ran == 0 and again.kept == 8
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
