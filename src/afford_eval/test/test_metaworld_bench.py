"""The Meta-World MT50 adapter (``afford_eval.metaworld_bench``), run for real on a small slice.

metaworld lives in its own venv (``.venv-metaworld``, made by ``scripts/setup_metaworld.sh``) so
that its pinned mujoco never touches the main stack; this test drives it there by subprocess,
exactly as the benchmark is run, on 2 tasks x 1 episode x 4 candidates. What it guards: that
every candidate was really executed (a failure runs the whole 500-step horizon), that the
retargeting trick works both ways (the expert on its own point succeeds, the expert sent 0.3 m
above the object fails), that every method picks from the candidate set, that a second run
resumes instead of recomputing, and that the report (written here by the main venv, which has
no metaworld) carries the numbers and versions.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from afford_eval import metaworld_bench as mwb

ROOT = Path(__file__).resolve().parents[3]
VENV_PY = ROOT / ".venv-metaworld" / "bin" / "python"
SETUP_HINT = "run scripts/setup_metaworld.sh"
REQUIRE_ALL = os.environ.get("AFFORD_REQUIRE_ALL", "") not in ("", "0")
TASKS = ("pick-place-v3", "button-press-topdown-v3")  # one hard, one easy; the expert solves both
N_CANDIDATES = 4
ARGS = ["--tasks", *TASKS, "--episodes", "1", "--candidates", str(N_CANDIDATES), "--seed", "0"]


def _adapter(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m afford_eval.metaworld_bench ARGS`` in .venv-metaworld, with only the afford sources
    on the path (the main venv's site-packages must not leak into it)."""
    src = ROOT / "src"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    packages = ("afford_core", "afford_planner", "afford_eval")
    env["PYTHONPATH"] = os.pathsep.join(str(src / pkg) for pkg in packages)
    return subprocess.run(
        [str(VENV_PY), "-m", "afford_eval.metaworld_bench", *map(str, args)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


@pytest.fixture(scope="module")
def adapter_run(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The slice, run once for the module; None when .venv-metaworld is missing."""
    if not VENV_PY.exists():
        return None
    out = tmp_path_factory.mktemp("metaworld") / "run"
    proc = _adapter("run", "--out", out, *ARGS)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def _need(run: Path | None) -> Path:
    """The run directory; without .venv-metaworld a failure under AFFORD_REQUIRE_ALL=1 (set-up was
    meant to make it), else a skip, both naming the set-up script. Called in the test body, so the
    missing venv is a test failure, not a fixture error."""
    if run is None:
        if REQUIRE_ALL:
            pytest.fail(f".venv-metaworld is missing: {SETUP_HINT}")
        pytest.skip(SETUP_HINT)
    return run


def _records(out: Path) -> list[dict[str, Any]]:
    paths = sorted((out / "records").glob("*/ep*.json"))
    return [json.loads(p.read_text()) for p in paths]


@pytest.mark.slow
def test_every_candidate_is_executed_and_recorded(adapter_run: Path | None) -> None:
    run_dir = _need(adapter_run)
    records = _records(run_dir)
    assert sorted(r["task"] for r in records) == sorted(TASKS)
    outcomes = []
    for r in records:
        assert "error" not in r, r.get("error")
        assert r["episode"] == 0 and r["tier"] == mwb.TIER_OF[r["task"]]
        assert len(r["candidates"]) == N_CANDIDATES
        assert [c["index"] for c in r["candidates"]] == list(range(N_CANDIDATES))
        for c in r["candidates"]:
            out = c["outcome"]
            assert isinstance(out["success"], bool) and out["wall_s"] > 0
            # A real execution: a failure ran the whole horizon, a success stopped at it.
            assert 1 <= out["steps"] <= 500
            if not out["success"]:
                assert out["steps"] == 500
            t = c["terms"]
            assert all(0.0 <= v <= 1.0 for v in t.values())
            assert t["reach"] in (0.1, 1.0) and t["approach"] >= 0.3
            assert t["task"] == 1.0 and t["plan"] == 1.0
            assert t["feasibility"] == pytest.approx(t["reach"] * t["approach"] * t["clearance"], abs=1e-3)
            # The candidate lies on the manipulated body (the one nearest the expert's target).
            assert c["body"] == r["manipulated"]["body"]
            outcomes.append(out["success"])
        succ = [c["outcome"]["success"] for c in r["candidates"]]
        assert r["ceiling"] == any(succ)
        assert r["chance"] == pytest.approx(sum(succ) / len(succ))
    assert any(outcomes), "no candidate succeeded anywhere: the retargeting is broken"


@pytest.mark.slow
def test_expert_succeeds_and_a_far_point_fails(adapter_run: Path | None) -> None:
    run_dir = _need(adapter_run)
    for r in _records(run_dir):
        assert r["controls"]["expert"]["success"], f"{r['task']}: the unshifted expert failed"
        far = r["controls"]["far"]
        assert far["offset"] == list(mwb.FAR_CONTROL_OFFSET)
        assert not far["success"] and far["steps"] == 500, f"{r['task']}: 0.3 m above the object succeeded"


@pytest.mark.slow
def test_every_method_picks_one_of_the_candidates(adapter_run: Path | None) -> None:
    run_dir = _need(adapter_run)
    for r in _records(run_dir):
        assert set(r["methods"]) == set(mwb.METHOD_NAMES)
        indices = {c["index"] for c in r["candidates"]}
        for name, pick in r["methods"].items():
            if pick is None:  # only the feasibility gate may abstain
                assert "_feasibility_" in name and r["ties"][name] == 0
                assert all(c["terms"]["feasibility"] < 0.5 for c in r["candidates"])
            else:
                assert pick in indices and r["ties"][name] >= 1
        for name in mwb.METHOD_NAMES:
            if "_none_" in name or name == "random":
                assert r["methods"][name] is not None


@pytest.mark.slow
def test_rerun_resumes_and_report_has_the_numbers(adapter_run: Path | None) -> None:
    run_dir = _need(adapter_run)
    before = {p: p.read_bytes() for p in (run_dir / "records").glob("*/ep*.json")}
    proc = _adapter("run", "--out", run_dir, *ARGS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {p: p.read_bytes() for p in before} == before, "a resumed run rewrote existing records"
    assert "done 0" in proc.stdout and f"skipped {len(TASKS)}" in proc.stdout

    text = mwb.report(run_dir)  # the main venv: no metaworld needed to report
    assert (run_dir / "report.md").read_text() == text
    for needle in ("## Summary", "## Overall", "## Tier: easy", "## Tier: hard", "metaworld 3.1.1",
                   "mujoco 3.3.0", "afford_L2_feasibility_product - random", "expert reference",
                   "Command: `PYTHONPATH=", "Code: git "):
        assert needle in text, needle
    runs = [json.loads(x) for x in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 2 and all(len(r["code"]["git_commit"]) == 40 for r in runs)
    summary = json.loads((run_dir / "summary.json").read_text())["summary"]
    overall = summary["overall"]
    assert overall["episodes"] == len(TASKS) and overall["expert"]["k"] == len(TASKS)
    assert overall["far"]["k"] == 0
    assert overall["chance"]["n"] == len(TASKS) * N_CANDIDATES


def test_functional_part_table_covers_mt50() -> None:
    """Every MT50 task has a tier and a functional-part entry, and the tiers are the 50 names."""
    names = [t for tier in mwb.TIERS.values() for t in tier]
    assert len(names) == len(set(names)) == mwb.MT50_SIZE
    assert set(mwb.FUNCTIONAL_PARTS) == set(names)


def test_the_report_says_when_invocations_ran_different_code() -> None:
    """A resumed run whose code changed between invocations mixes two versions; the report says
    so rather than printing one commit."""
    one = {"code": {"git_commit": "a" * 40, "git_dirty": False, "source_sha256": "1" * 64}}
    other = {"code": {"git_commit": "b" * 40, "git_dirty": True, "source_sha256": "2" * 64}}
    assert mwb.code_line([one, one]) == "git aaaaaaa (source sha256 111111111111)"
    mixed = mwb.code_line([one, other])
    assert "different source code" in mixed and "uncommitted" in mixed and "bbbbbbb" in mixed
    assert "not recorded" in mwb.code_line([one, {}])
