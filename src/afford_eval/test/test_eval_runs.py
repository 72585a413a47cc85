"""Evaluation run directories, their reports and the `afford eval` command, on synthetic records.

A claim about the selection layer is only as good as the evidence behind it: these tests check
that a run cannot be altered unnoticed, that a run killed halfway (a real robot cell loses
power, a cluster job is pre-empted) resumes to the same numbers, and that the report's numbers
are the ones a reviewer would compute by hand from the raw outcomes.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from afford_cli.cli import _eval_alias, main
from afford_eval import report, runs

METHODS = (
    "random",
    "stability",
    "afford_L4_none_weighted_sum",
    "afford_L4_feasibility_weighted_sum",
    "afford_L4_none_product",
    "afford_L4_feasibility_product",
)
ROT = [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]]


def _cand(index: int, success: bool, reach: float = 1.0) -> dict[str, Any]:
    terms = {"reach": reach, "approach": 0.9, "clearance": 1.0, "function": 0.5, "task": 0.5, "plan": 0.8}
    return {
        "index": index,
        "source": "affordance",
        "position": [0.4 + 0.01 * index, 0.0, 0.1],
        "rotation": ROT,
        "width": 0.06,
        "terms": terms,
        "planned": True,
        "outcome": {
            "success": success,
            "stages": {"approach": True, "grasp": success},
            "failed_stage": None if success else "grasp",
            "detail": "",
        },
    }


# Per scene of suite "hang": which candidate each method picks; candidate 0 succeeds, 1 fails,
# 2 succeeds. Hand-computed over the 4 scenes (None = abstained):
#   random            0,1,2,1  -> 2/4       stability         1,1,1,1 -> 0/4
#   L4 none ws        1,1,0,2  -> 2/4       L4 feasibility ws 0,0,0,2 -> 4/4
#   L4 none product   0,1,0,None -> 2/4     L4 feas. product  0,0,2,None -> 3/4
PICKS = {
    "random": (0, 1, 2, 1),
    "stability": (1, 1, 1, 1),
    "afford_L4_none_weighted_sum": (1, 1, 0, 2),
    "afford_L4_feasibility_weighted_sum": (0, 0, 0, 2),
    "afford_L4_none_product": (0, 1, 0, None),
    "afford_L4_feasibility_product": (0, 0, 2, None),
}
EXPECTED = {
    "random": 2,
    "stability": 0,
    "afford_L4_none_weighted_sum": 2,
    "afford_L4_feasibility_weighted_sum": 4,
    "afford_L4_none_product": 2,
    "afford_L4_feasibility_product": 3,
}


def synthetic_record(suite: str, scene: int) -> dict[str, Any]:
    """A scene record in the evaluation core's schema (see counterfactual.evaluate_scene)."""
    return {
        "suite": suite,
        "scene": scene,
        "seed": 1000 + scene,
        "sentence": "hang the mug on the rack",
        "grounding": "oracle",
        "candidate_set_hash": f"{scene:064x}",
        "candidates": [_cand(0, True), _cand(1, False, reach=0.1), _cand(2, True)],
        "methods": {m: PICKS[m][scene % 4] for m in METHODS},
        "determinism": [{"index": 0, "first": True, "second": scene != 3}],
        "timings_s": {"total": 1.0},
    }


def _config(scenes: int = 4, suites: tuple[str, ...] = ("hang",), **ev: Any) -> runs.RunConfig:
    return runs.RunConfig(suites, scenes, METHODS, "oracle", {"weights": {"reach": 1.0}, **ev})


class Counter:
    """A scene function that counts what it was asked to evaluate."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def __call__(self, suite: str, scene: int) -> dict[str, Any]:
        self.calls.append((suite, scene))
        return synthetic_record(suite, scene)


def _run(path: Path, cfg: runs.RunConfig | None = None) -> Counter:
    fn = Counter()
    runs.execute(path, cfg or _config(), fn, command="afford eval --suite hang --scenes 4", progress=False)
    return fn


def _writable(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IWUSR)


# --------------------------------------------------------------------------- immutability


def test_a_finished_run_verifies_clean(tmp_path: Path) -> None:
    """The baseline: an untouched run passes, with every record and the provenance covered."""
    _run(tmp_path / "r")
    assert runs.verify(tmp_path / "r") == []
    manifest = json.loads((tmp_path / "r" / runs.MANIFEST).read_text())
    assert set(manifest["files"]) == {
        "config.json",
        "provenance.json",
        *(f"scenes/hang/{k:03d}.json" for k in range(4)),
    }


@pytest.mark.parametrize("change", ["alter", "add", "remove", "alter_config"])
def test_verification_fails_when_any_file_changes(tmp_path: Path, change: str) -> None:
    """A reported success rate must be traceable to the outcomes the simulator produced: a
    record edited, added or deleted afterwards (by hand, or by a buggy re-run) is detected."""
    run = tmp_path / "r"
    _run(run)
    rec = run / "scenes" / "hang" / "002.json"
    if change == "alter":
        _writable(rec)
        rec.write_text(rec.read_text().replace('"success": true', '"success": false', 1))
        expected = "altered: scenes/hang/002.json"
    elif change == "add":
        (run / "scenes" / "hang" / "notes.txt").write_text("x")
        expected = "added: scenes/hang/notes.txt"
    elif change == "remove":
        rec.unlink()
        expected = "removed: scenes/hang/002.json"
    else:
        cfg = run / runs.CONFIG
        _writable(cfg)
        cfg.write_text(cfg.read_text().replace('"scenes": 4', '"scenes": 3'))
        expected = "altered: config.json"
    assert expected in runs.verify(run)
    assert main(["eval", "verify", str(run)]) == 1


def test_the_report_is_outside_the_manifest(tmp_path: Path) -> None:
    """The report is derived and may be rebuilt (a plot fixed) without breaking the evidence."""
    run = tmp_path / "r"
    _run(run)
    report.build_report(run, report.ReportConfig(resamples=200, plots=False))
    (run / "report" / "report.md").write_text("edited")
    assert runs.verify(run) == []


def test_a_finished_run_is_never_rewritten(tmp_path: Path) -> None:
    """Re-running a finished experiment into its directory would mix two sets of outcomes."""
    run = tmp_path / "r"
    _run(run)
    before = {p: p.read_bytes() for p in run.rglob("*.json")}
    with pytest.raises(runs.RunError, match="finished run"):
        _run(run)
    with pytest.raises(runs.RunError, match="already finished"):
        runs.finish(run)
    assert {p: p.read_bytes() for p in run.rglob("*.json")} == before
    # The evidence is read-only on disk too, against editors and scripts.
    assert not os.access(run / "scenes" / "hang" / "000.json", os.W_OK) or os.geteuid() == 0


# --------------------------------------------------------------------------- resume


def test_a_killed_run_resumes_to_the_same_report(tmp_path: Path) -> None:
    """A run killed after some scenes must not redo them (hours of physics) and must end with
    exactly the numbers an uninterrupted run gives."""
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    _run(whole)
    _run(killed)
    # The kill: the last scene's record and the manifest never got written.
    for path in (killed / "scenes" / "hang" / "003.json", killed / runs.MANIFEST):
        path.unlink()
    assert not runs.is_finished(killed)
    (killed / "scenes" / "hang" / f".002.json{runs._TMP_MARK}99").write_text("{half a rec")
    resumed = _run(killed)
    assert resumed.calls == [("hang", 3)]
    assert runs.verify(killed) == []
    assert not list(killed.rglob(f"*{runs._TMP_MARK}*")), "temporary leftovers must not enter the manifest"
    cfg = report.ReportConfig(resamples=500, plots=False)
    md_whole, md_killed = report.build_report(whole, cfg), report.build_report(killed, cfg)
    summary = json.loads((whole / "report" / "summary.json").read_text())
    assert summary == json.loads((killed / "report" / "summary.json").read_text())
    # Same body; only the provenance differs (the resumed run had two sessions).
    body = [md.read_text().split("## Provenance")[0] for md in (md_whole, md_killed)]
    assert body[0] == body[1]
    assert len(runs.load_provenance(killed)["sessions"]) == 2


def test_a_corrupt_record_is_redone_on_resume(tmp_path: Path) -> None:
    """A record cut short by a full disk must be evaluated again, not trusted or crashed on."""
    run = tmp_path / "r"
    _run(run)
    (run / runs.MANIFEST).unlink()
    rec = run / "scenes" / "hang" / "001.json"
    _writable(rec)
    rec.write_text('{"suite": "hang"')
    assert _run(run).calls == [("hang", 1)]
    assert runs.verify(run) == []


def test_resuming_with_a_different_config_is_refused(tmp_path: Path) -> None:
    """Scenes evaluated under two weightings in one directory would be one meaningless table."""
    run = tmp_path / "r"
    _run(run)
    (run / runs.MANIFEST).unlink()
    with pytest.raises(runs.RunError, match="different config.*evaluation"):
        _run(run, _config(weights={"reach": 2.0}))
    with pytest.raises(runs.RunError, match="different config.*scenes"):
        _run(run, _config(scenes=5))


def test_a_resume_with_other_code_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Scenes evaluated before and after a code change are not one experiment: the resume warns
    and the report says so, even when the git tree was dirty both times."""
    run = tmp_path / "r"
    _run(run)
    (run / runs.MANIFEST).unlink()
    (run / "scenes" / "hang" / "003.json").unlink()
    monkeypatch.setattr(runs, "source_hash", lambda: "0" * 64)
    _run(run)
    assert "other source code" in capsys.readouterr().err
    md = report.build_report(run, report.ReportConfig(resamples=100, plots=False)).read_text()
    assert "ran different source code" in md


def test_a_record_that_does_not_fit_its_scene_is_refused(tmp_path: Path) -> None:
    """A scene function bug (wrong scene, a method missing) must stop the run, not be stored."""

    def wrong(suite: str, scene: int) -> dict[str, Any]:
        rec = synthetic_record(suite, scene)
        del rec["methods"]["stability"]
        return rec

    with pytest.raises(runs.RunError, match="no selection for methods"):
        runs.execute(tmp_path / "r", _config(), wrong, progress=False)
    assert not runs.is_finished(tmp_path / "r")


def test_a_foreign_directory_is_not_used(tmp_path: Path) -> None:
    """--out pointing at someone's folder must not sprinkle run files into it."""
    (tmp_path / "mine.txt").write_text("x")
    with pytest.raises(runs.RunError, match="not empty"):
        _run(tmp_path)


# --------------------------------------------------------------------------- report


def test_report_numbers_match_hand_computation(tmp_path: Path) -> None:
    """The report's rates, intervals, differences and determinism rate are the ones computed by
    hand and by an independent Wilson implementation (scipy's binomtest)."""
    run = tmp_path / "r"
    _run(run)
    md = report.build_report(run, report.ReportConfig(resamples=2000))
    summary = json.loads((run / "report" / "summary.json").read_text())
    hang = summary["suites"]["hang"]
    for m, k in EXPECTED.items():
        r = hang["rates"][m]
        ref = binomtest(k, 4).proportion_ci(0.95, method="wilson")
        assert (r["successes"], r["n"]) == (k, 4), m
        assert r["low"] == pytest.approx(ref.low, abs=1e-3) and r["high"] == pytest.approx(ref.high, abs=1e-3)
    assert hang["rates"]["afford_L4_feasibility_product"]["abstained"] == 1
    cmp = {c["label"]: c for c in hang["comparisons"]}
    ws = cmp["gate on - off, L4, weighted_sum"]
    assert ws["diff"] == pytest.approx(0.5)  # per scene: 1-0, 1-0, 1-1, 1-1
    assert ws["low"] >= 0.0 and ws["high"] <= 1.0 and ws["low"] <= 0.5 <= ws["high"]
    vs_stab = cmp["L4 product gated - stability"]
    # Every scene differs by 1 or 0 in the same direction: the interval cannot cross zero.
    assert vs_stab["diff"] == pytest.approx(0.75) and vs_stab["low"] > 0
    assert hang["determinism"] == {"disagreements": 1, "checked": 4, "rate": 0.25}
    assert hang["mean_candidate_success"] == pytest.approx(2 / 3)
    text = md.read_text()
    assert "| L4 | 0.50 [0.15, 0.85] | 1.00 [0.51, 1.00] | 0.50 [0.15, 0.85] | 0.75 [0.30, 0.95] |" in text
    assert "`afford eval --suite hang --scenes 4`" in text
    assert (run / "report" / "success_hang.png").read_bytes()[:4] == b"\x89PNG"


def test_report_gives_ceiling_chance_ties_and_the_planned_view(tmp_path: Path) -> None:
    """Ceiling (a scene with any successful candidate), chance over all and over planned
    candidates, ties per method, the planned-only headline, and no interval by sentence where
    there are too few sentences to resample (one here: it would be a point, not an interval)."""
    planned = ("stability@planned", "afford_L4_feasibility_product@planned")

    def scene(suite: str, k: int) -> dict[str, Any]:
        rec = synthetic_record(suite, k)
        rec["candidates"][2]["planned"] = False  # candidate 2 succeeded in the record but...
        rec["candidates"][2]["outcome"] = {"success": False, "stages": {}, "failed_stage": "plan",
                                           "detail": "no plan"}  # ...unplanned, it cannot
        why = "to the pre-grasp: goal pose refused: IK did not converge in 61 attempts"
        rec["candidates"][2].update(plan_source=None, plan_failures={"default": why, "reference": why})
        rec["candidates"][1]["plan_source"] = "reference" if k == 0 else "default"
        rec["films"] = [{"index": 0, "path": f"hang_{k:04d}_c000.mp4", "frames": 40, "success": True,
                         "methods": ["random"], "unfilmed_success": k != 1, "agrees": k != 1}]
        if k == 3:
            for c in rec["candidates"]:
                c["outcome"]["success"] = False
        rec["methods"] = {**rec["methods"], **dict.fromkeys(planned, 0)}
        rec["ties"] = {m: (3 if m == "stability" and k < 2 else 1) for m in rec["methods"]}
        return rec

    cfg = runs.RunConfig(("hang",), 4, (*METHODS, *planned), "oracle", {"weights": {"reach": 1.0}})
    run = tmp_path / "r"
    runs.execute(run, cfg, scene, progress=False)
    md = report.build_report(run, report.ReportConfig(resamples=300, plots=False)).read_text()
    hang = json.loads((run / "report" / "summary.json").read_text())["suites"]["hang"]
    assert hang["ceiling"]["successes"] == 3  # scene 3 has no successful candidate
    assert hang["expected_random"]["all"] == pytest.approx(3 / 12)  # one of three, in three scenes
    assert hang["expected_random"]["planned"] == pytest.approx(3 / 8)  # one of two planned
    assert hang["rates"]["stability"]["tie_scenes"] == 2 and hang["rates"]["stability"]["mean_tie"] == 3
    cmp = {c["label"]: c for c in hang["comparisons"]}
    assert "L4 product gated@planned - stability@planned" in cmp
    assert "sentence_low" not in cmp["L4 product gated@planned - stability@planned"]
    assert "n/a (1 sentences)" in md and "| ceiling (any candidate succeeded) | 0.75" in md
    assert "| random, expected (chance) | 0.38 | 0.25 |" in md
    assert ("Executed: 8 of 12 candidates, 1 of them planned only by the reference planner (tried on "
            "every candidate the default planner could not plan); 4 unexecuted (no IK solution at the "
            "pre-grasp (joint limits or reach) 4).") in md
    assert ("Films: every executed rollout some method selected was filmed while it ran (4 rollouts in 4 "
            "scenes, `videos/`); 1 disagree with the same candidate executed again without the camera.") in md


def test_report_pools_suites_and_rebuilds_identically(tmp_path: Path) -> None:
    """A rebuilt report must be byte-identical: a reviewer re-running `afford eval report` on a
    checked-in run must get the checked-in numbers (the bootstrap is seeded)."""
    run = tmp_path / "r"
    runs.execute(run, _config(suites=("hang", "pour")), Counter(), progress=False)
    cfg = report.ReportConfig(resamples=300, plots=False)
    first = report.build_report(run, cfg).read_text()
    assert report.build_report(run, cfg).read_text() == first
    pooled = json.loads((run / "report" / "summary.json").read_text())["suites"][report.ALL_SUITES]
    assert pooled["scenes"] == 8 and pooled["rates"]["stability"]["successes"] == 0


def test_report_puts_the_arms_reach_beside_the_box(tmp_path: Path) -> None:
    """The _armreach cells get a factorial table of their own (not merged into, or overwriting,
    the box's cells), their own gate on - off rows, and the arm - box comparison."""
    arm = ("afford_L4_feasibility_product_armreach", "afford_L4_none_product_armreach")

    def scene(suite: str, k: int) -> dict[str, Any]:
        rec = synthetic_record(suite, k)
        # The arm's gate keeps candidate 2 (a success) where the box's abstained (scene 3).
        rec["methods"] = {**rec["methods"], arm[0]: 2 if k == 3 else rec["methods"][METHODS[5]],
                          arm[1]: rec["methods"]["afford_L4_none_product"]}
        return rec

    cfg = runs.RunConfig(("hang",), 4, (*METHODS, *arm), "oracle", {"weights": {"reach": 1.0}})
    run = tmp_path / "r"
    runs.execute(run, cfg, scene, progress=False)
    md = report.build_report(run, report.ReportConfig(resamples=300, plots=False)).read_text()
    hang = json.loads((run / "report" / "summary.json").read_text())["suites"]["hang"]
    cmp = {c["label"]: c for c in hang["comparisons"]}
    assert cmp["reach from the arm - from the box, L4 gated product"]["diff"] == pytest.approx(0.25)
    assert cmp["gate on - off, L4, product_armreach"]["a"] == arm[0]
    assert cmp["gate on - off, L4, product"]["a"] == "afford_L4_feasibility_product"
    assert "### AFFORD-X factorial, all candidates, reach from the arm's IK" in md
    box_table = md.split("### AFFORD-X factorial, all candidates\n")[1].split("###")[0]
    arm_table = md.split("reach from the arm's IK\n")[1].split("###")[0]
    row = "| L4 | 0.50 [0.15, 0.85] | 1.00 [0.51, 1.00] | 0.50 [0.15, 0.85] | 0.75 [0.30, 0.95] |"
    assert row in box_table
    assert "| L4 | - | - | 0.50 [0.15, 0.85] | 1.00 [0.51, 1.00] |" in arm_table


def test_factorial_names_are_parsed() -> None:
    """The factorial table places each method by its name; a misparse would swap cells."""
    assert report.factorial_cell("afford_L3_none_weighted_sum") == ("L3", "none", "weighted_sum")
    assert report.factorial_cell("afford_L1_feasibility_product") == ("L1", "feasibility", "product")
    assert report.factorial_cell("stability_filter") is None


# --------------------------------------------------------------------------- CLI


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("afford: error:")
    return lines[0]


def test_cli_report_and_verify_of_a_missing_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An operator's typo gets one line naming the problem and a non-zero exit, no traceback."""
    assert main(["eval", "report", str(tmp_path / "nope")]) == 2
    assert "does not exist" in _one_error_line(capsys)
    assert main(["eval", "verify", str(tmp_path)]) == 1
    assert "not a run directory" in capsys.readouterr().err


def test_cli_rejects_unknown_suite_and_method(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bad arguments stop before any scene is built or any directory is created."""
    assert main(["eval", "--suite", "juggling", "--out", str(tmp_path / "x")]) == 2
    assert "juggling" in _one_error_line(capsys)
    assert main(["eval", "run", "--suite", "hang", "--methods", "psychic", "--out", str(tmp_path / "x")]) == 2
    assert "psychic" in _one_error_line(capsys)
    assert not (tmp_path / "x").exists()


def test_cli_refuses_a_finished_run_and_rebuilds_its_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`afford eval` on a finished directory must refuse, while `eval report` still works."""
    run = tmp_path / "r"
    _run(run)
    assert main(["eval", "--suite", "hang", "--scenes", "4", "--out", str(run)]) == 2
    assert "finished" in _one_error_line(capsys)
    assert main(["eval", "report", str(run)]) == 0
    assert (run / "report" / "report.md").is_file()
    assert main(["eval", "verify", str(run)]) == 0


def test_eval_alias() -> None:
    """`afford eval --suite X` is the issue's spelling; it must mean `afford eval run`."""
    assert _eval_alias(["eval", "--suite", "hang"]) == ["eval", "run", "--suite", "hang"]
    assert _eval_alias(["eval", "report", "d"]) == ["eval", "report", "d"]
    assert _eval_alias(["eval", "--help"]) == ["eval", "--help"]


@pytest.mark.slow
def test_a_tiny_real_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One real scene through `afford eval`: the evaluation core's record fits the run
    directory, verifies, reports, and the replay page's rule (checked against the engine in
    test_replay_page) reproduces every factorial selection the run recorded."""
    from afford_eval import replay

    run = tmp_path / "real"
    argv = ["eval", "--suite", "hang", "--scenes", "1", "--videos", "0", "--no-progress", "--out", str(run)]
    assert main(argv) == 0, capsys.readouterr().err
    assert runs.verify(run) == []
    assert "## hang" in (run / "report" / "report.md").read_text()
    record = json.loads((run / "scenes" / "hang" / "000.json").read_text())
    weights = runs.load_config(run).evaluation["weights"]
    data = replay.page_data(record, {"points": [], "region": []}, weights)
    cells = [(lv, g, cb) for lv in report.LEVELS for g in report.GATES for cb in report.COMBINATIONS]
    # The run drew among ties; each pick is one of the engine's tied candidates, and the tie's
    # size is what the run recorded.
    ties = replay.ties_for(data, cells)
    for m, tied in ties.items():
        assert (record["methods"][m] in tied) if tied else record["methods"][m] is None, m
        assert record["ties"][m] == len(tied), m


def test_a_run_replacing_its_own_checked_in_files_is_not_dirty_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regenerating a checked-in run rewrites tracked files in its own directory; that is the
    result, not a change of code, so git status leaves the run directory out (and only it)."""
    calls: list[tuple[str, ...]] = []

    def fake_git(*args: str, cwd: Path) -> str | None:
        calls.append(args)
        if args[:2] == ("rev-parse", "--show-toplevel"):
            return str(tmp_path)
        if args[0] == "status":
            left_out = any(a.startswith(":(exclude)bench/results/r") for a in args)
            return "" if left_out else " D bench/results/r/x"
        return "abc"

    monkeypatch.setattr(runs, "_git", fake_git)
    assert runs.provenance("c", tmp_path / "bench/results/r")["git_dirty"] is False
    assert runs.provenance("c")["git_dirty"] is True
    assert runs.provenance("c", "/elsewhere/r")["git_dirty"] is True  # outside the repo: nothing left out


def test_provenance_names_every_tracked_package_installed_here() -> None:
    """open3d is installed as the open3d-cpu distribution; provenance must still find it."""
    import importlib.util

    pk = runs.provenance("test")["packages"]
    assert set(pk) == set(runs.TRACKED_PACKAGES)
    for name in runs.TRACKED_PACKAGES:
        if importlib.util.find_spec(name) is not None:
            assert pk[name], name


def test_provenance_names_the_affordance_weights_the_run_used(tmp_path, monkeypatch) -> None:
    """A run with $AFFORD_AFFORDANCE_WEIGHTS set grounds with another model than the shipped
    one: its provenance must say which (path and sha256), or the records cannot be told apart."""
    import hashlib

    from afford_perception.affordance.source import DEFAULT_WEIGHTS, WEIGHTS_ENV

    monkeypatch.delenv(WEIGHTS_ENV, raising=False)
    shipped = runs.provenance("c")["affordance_weights"]
    assert shipped["path"] == str(DEFAULT_WEIGHTS) and not shipped["from_environment"]
    other = tmp_path / "other.pt"
    other.write_bytes(b"another model")
    monkeypatch.setenv(WEIGHTS_ENV, str(other))
    used = runs.provenance("c")["affordance_weights"]
    assert used == {"path": str(other), "sha256": hashlib.sha256(b"another model").hexdigest(),
                    "from_environment": True}
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "absent.pt"))
    assert "absent.pt" in runs.provenance("c")["affordance_weights"]["error"]
    # The Meta-World environment has afford_eval but no perception package: still a provenance.
    monkeypatch.setitem(sys.modules, "afford_perception.affordance.source", None)
    assert "no learned grounding" in runs.provenance("c")["affordance_weights"]["error"]


def test_the_source_hash_covers_our_code_and_changes_with_it(tmp_path) -> None:
    """The hash that tells a resumed run it mixes two versions of the code: over every package
    we import (it once globbed a folder too high and hashed nothing, so every run matched)."""
    import hashlib

    assert {d.name for d in runs._package_dirs()} >= {"afford_core", "afford_eval", "afford_planner"}
    assert runs.source_hash() != hashlib.sha256().hexdigest()
    pkg = tmp_path / "afford_x"
    pkg.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    first = runs.source_hash([pkg])
    assert runs.source_hash([pkg]) == first
    (pkg / "a.py").write_text("x = 2\n")
    assert runs.source_hash([pkg]) != first
    (pkg / "a.py").unlink()
    with pytest.raises(FileNotFoundError, match="no Python sources"):
        runs.source_hash([pkg])
