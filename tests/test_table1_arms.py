"""bench/table1_arms.py: each arm beside the FR3 on the same tasks and seeds, from records."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("table1_arms", ROOT / "bench" / "table1_arms.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(path: Path, robot: str, tasks: list[str], outcomes: dict[tuple[str, int], bool], n: int) -> None:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"first_seed": 0, "rollouts": n, "robot": robot,
                                                  "tasks": tasks, "sources": ["affordance_learned"]}))
    for (task, seed), ok in outcomes.items():
        rec = path / "rollouts" / task / "affordance_learned" / f"{seed:04d}.json"
        rec.parent.mkdir(parents=True, exist_ok=True)
        rec.write_text(json.dumps({"task_id": task, "source": "affordance_learned", "seed": seed,
                                   "success": ok}))


def test_the_ratio_is_the_arms_successes_over_the_fr3s_on_the_same_seeds(tmp_path: Path) -> None:
    tasks = ["place-banana-bowl-v2", "hang-mug-v1"]  # one Easy, one Hard
    fr3 = {(t, s): True for t in tasks for s in range(4)}  # the FR3 ran seeds 0-3
    arm = {(t, s): not (t == "hang-mug-v1" and s < 2) for t in tasks for s in range(2)}
    _run(tmp_path / "fr3", "fr3", tasks, fr3, 4)
    _run(tmp_path / "arms" / "panda", "panda", tasks, arm, 2)
    m = _script()
    records = m._records(tmp_path / "fr3", "affordance_learned")
    row = m.row("panda", tmp_path / "arms" / "panda", records, "affordance_learned")
    assert (row["k"], row["total"], row["fr3"]) == (2, 4, 4)  # seeds 0-1 only, on both sides
    assert row["ratio"] == pytest.approx(0.5)
    assert row["tiers"] == {"easy": 100.0, "hard": 0.0}
    assert "| panda | 2 | 2 | 100 | - | 0 |" in m.report([row], "cmd")


def test_an_arm_with_rollouts_missing_is_refused(tmp_path: Path) -> None:
    tasks = ["place-banana-bowl-v2"]
    _run(tmp_path / "fr3", "fr3", tasks, {(tasks[0], s): True for s in range(2)}, 2)
    _run(tmp_path / "arms" / "panda", "panda", tasks, {(tasks[0], 0): True}, 2)
    m = _script()
    with pytest.raises(SystemExit, match="no record"):
        m.row("panda", tmp_path / "arms" / "panda", m._records(tmp_path / "fr3", "affordance_learned"),
              "affordance_learned")
