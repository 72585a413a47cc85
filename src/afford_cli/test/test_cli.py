"""The ``afford`` command as a user meets it: exit codes, one-line errors, the JSON schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from afford_cli.cli import main

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}


def _afford(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afford_cli.cli", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=240,
    )


def test_objects_lists_every_category_with_its_parts(capsys: pytest.CaptureFixture[str]) -> None:
    """An operator choosing a task sentence needs to see which objects and parts exist."""
    from afford_core.ontology import CATEGORIES

    assert main(["objects", "--json"]) == 0
    listed = {row["category"]: row["parts"] for row in json.loads(capsys.readouterr().out)}
    assert listed == {name: list(cat.parts) for name, cat in CATEGORIES.items()}


def test_show_writes_a_png(tmp_path: Path) -> None:
    """`afford show` is how a user checks that an object's part labels are where they expect."""
    out = tmp_path / "mug.png"
    assert main(["show", "mug", "--seed", "2", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("sentence", "fragment"),
    [
        ("", "empty"),
        ("pick up the unicorn", "known objects"),
        ("pick up the cube by its handle", "cube"),
        ("hang the cube on the rack", "cube"),
    ],
)
def test_bad_sentences_exit_non_zero_with_one_line_and_never_move(sentence: str, fragment: str) -> None:
    """A malformed task must stop before any scene or motion exists: the arm never moves on a
    guess. The error is one line naming what is known."""
    proc = _afford("run", sentence, "--json")
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("afford: error:")
    assert fragment in lines[0].lower()
    assert proc.stdout == ""


def test_unknown_grounding_source_is_refused_before_anything_runs() -> None:
    proc = _afford("run", "pick up the scoop", "--grounding", "magic")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "oracle" in proc.stderr


def test_run_json_has_the_documented_schema() -> None:
    """Scripts and the ROS task server read these fields; renaming one breaks them."""
    proc = _afford("run", "pick up the scoop", "--seed", "0", "--json")
    assert proc.returncode in (0, 3), proc.stderr
    out = json.loads(proc.stdout)
    assert {"task", "intent", "candidates", "eligible", "selected", "stages", "success", "timings_ms"} <= set(
        out
    )
    assert set(out["intent"]) >= {"target", "grasp_region", "keep_clear", "next_action", "destination"}
    assert set(out["timings_ms"]) >= {
        "parse",
        "perceive",
        "ground",
        "sample",
        "select",
        "plan",
        "execute",
        "total",
    }
    assert out["intent"]["target"] == "scoop" and out["intent"]["grasp_region"] == "handle"
    assert out["candidates"] >= out["eligible"] >= 1
    assert (proc.returncode == 0) == out["success"]
    if out["selected"] is not None:
        assert set(out["selected"]) >= {"position", "rotation", "terms", "score"}


def test_tasks_lists_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    """`afford tasks` is the one list of tasks a user sees: every registered task with its tier,
    skill, robots and phrasings, filterable by robot."""
    from afford_sim.tasks import TASKS, task_ids

    assert main(["tasks", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == task_ids()
    for r in rows:
        spec = TASKS.get(r["id"])
        assert (r["tier"], r["skill"], r["robots"], r["instructions"]) == (
            spec.tier, spec.skill, list(spec.robots), list(spec.instructions)
        )
    assert main(["tasks", "--robot", "ur5e", "--json"]) == 0
    on_ur5e = {r["id"] for r in json.loads(capsys.readouterr().out)}
    assert on_ur5e == {"pick-scoop-v1", "place-banana-plate-v1"}


def test_robots_lists_the_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["robots", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["fr3"]["default"] and rows["fr3"]["dof"] == 7 and rows["fr3"]["drive"] == "franky"
    assert rows["ur5e"]["dof"] == 6 and rows["ur5e"]["gripper"] == "robotiq_2f85"
    assert rows["ur5e"]["tasks"] == 2


def test_settings_from_a_file_flags_and_set_resolve_in_that_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defaults, then --config, then the flags given, then --set; --print-config shows the result
    in the form --config reads back."""
    from afford_core import config as cfg
    from afford_pipeline.spine import SpineConfig

    base = tmp_path / "base.yaml"
    base.write_text("seed: 7\ngrounding: geometric\nselection:\n  combination: weighted_sum\n")
    argv = ["run", "--config", str(base), "--grounding", "learned", "--set", "selection.level=L2"]
    argv.append("--print-config")
    assert main(argv) == 0
    printed = tmp_path / "printed.yaml"
    printed.write_text(capsys.readouterr().out)
    got = cfg.load(SpineConfig, printed)
    assert (got.seed, got.grounding) == (7, "learned")  # the file's seed, the flag's grounding
    assert (got.selection.combination, got.selection.level) == ("weighted_sum", "L2")
    assert got == cfg.apply_overrides(
        cfg.from_dict(SpineConfig, {"seed": 7, "grounding": "learned"}),
        ["selection.combination=weighted_sum", "selection.level=L2"],
    )


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--set", "selection.levle=2"], "levle"),
        (["--set", "seed=seven"], "seed"),
        (["--task", "hang-mug-v1", "--robot", "ur5e"], "validated on fr3, not the ur5e"),
        (["--task", "hang-mug-v2"], "unknown task"),
        (["--robot", "r2d2"], "unknown robot"),
    ],
)
def test_bad_settings_exit_2_with_one_line_naming_them(argv: list[str], fragment: str) -> None:
    """A typo in a setting, a task on an arm it was never validated on, an unknown id: refused
    before any scene exists, with one line that names the culprit."""
    proc = _afford("run", "pick up the scoop", *argv, "--json")
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("afford: error:"), proc.stderr
    assert fragment in lines[0].lower()
    assert proc.stdout == ""


def test_pick_and_place_on_the_ur5e_writes_its_settings_beside_the_video(tmp_path: Path) -> None:
    """Another maker's arm through the same spine (seed 0 succeeds in the checked-in UR5e run,
    bench/results/skill_success_ur5e.json); the film's resolved settings sit beside it and load
    back as the run's configuration."""
    from afford_core import config as cfg
    from afford_pipeline.spine import SpineConfig

    video = tmp_path / "banana.mp4"
    proc = _afford("run", "put the banana on the plate", "--robot", "ur5e", "--seed", "0", "--json",
                   "--video", str(video))
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["success"] and out["robot"] == "ur5e" and out["task_id"] == "place-banana-plate-v1"
    assert out["stages"] == {"approach": True, "grasp": True, "lift": True, "place": True}
    assert video.stat().st_size > 0
    settings = cfg.load(SpineConfig, video.with_suffix(".config.yaml"))
    assert settings == cfg.from_dict(SpineConfig, out["config"])
    assert (settings.robot, settings.seed, settings.video_path) == ("ur5e", 0, str(video))


# One task of every skill; a pour once crashed --json only (a numpy.bool_ in the stages).
ONE_PER_SKILL = ["pick-scoop-v1", "place-cube-bowl-v2", "hang-mug-v1", "pour-mug-v1", "open-drawer-v1"]


@pytest.mark.slow
@pytest.mark.parametrize("task_id", ONE_PER_SKILL)
def test_every_output_mode_works_for_every_skill(task_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The report and the JSON object, for a task of each skill; the exit code says the outcome."""
    code = main(["run", "--task", task_id, "--seed", "0"])
    report = capsys.readouterr()
    assert code in (0, 3), report.err
    assert ("result: SUCCESS" in report.out) == (code == 0), report.out
    code_json = main(["run", "--task", task_id, "--seed", "0", "--json"])
    out = capsys.readouterr()
    assert code_json == code, out.err  # the same seeded episode either way
    record = json.loads(out.out)
    assert record["task_id"] == task_id and record["success"] == (code == 0)
    assert record["stages"] and all(type(v) is bool for v in record["stages"].values())


def test_bench_preafford_table3_defaults_to_the_multi_scene_and_both_kinds(tmp_path: Path) -> None:
    """``afford bench preafford --table 3`` runs the necessity check's measurement: the multi
    scene, the easy categories beside the hard ones, the direct grasp's chance and ceiling and
    ``preafford``; flags given override its defaults."""
    out = tmp_path / "t3"
    code = main(["bench", "preafford", "--table", "3", "--rollouts", "1", "--categories", "block",
                 "--proposals", "8", "--jobs", "1", "--quiet", "--out", str(out)])
    assert code == 0
    config = json.loads((out / "config.json").read_text())
    assert config["scenes"] == ["multi"] and config["categories"] == ["block"]
    assert config["methods"] == ["direct_critic", "direct_random", "direct_ceiling", "preafford"]
    assert config["push_model"].endswith("push_critic.pt")
    assert config["necessity"].endswith("necessity.json")  # the shipped calibration, by default
    assert "## Table III" in (out / "report.md").read_text()


def test_preafford_calibrate_fits_the_check_on_a_validation_run(tmp_path: Path) -> None:
    """``afford preafford calibrate --run DIR`` fits the necessity check on a run's
    ``direct_ceiling`` records and writes a calibration that ``bench preafford --necessity``
    reads; the run's critic is the one it is for."""
    from afford_eval import preafford_table2 as t2
    from afford_perception.preafford.necessity import load

    config = t2.Table2Config(model="c.pt", model_sha256="d" * 64, scenes=("edge",),
                             categories=("tablet", "can"), methods=("direct_ceiling",), rollouts=40)
    run = tmp_path / "val"
    t2.write_json(run / "config.json", config.as_dict())
    rng = np.random.default_rng(0)
    for k in range(40):
        for cat, c2 in (("tablet", rng.uniform(0.1, 0.6)), ("can", rng.uniform(0.4, 0.95))):
            rec = {"method": "direct_ceiling", "scene": "edge", "category": cat, "seed": k,
                   "success": bool(rng.uniform() < c2), "c2": round(c2, 4), "error": None}
            t2.write_json(run / "rollouts" / "edge" / cat / "direct_ceiling" / f"{k:06d}.json", rec)
    code = main(["preafford", "calibrate", "--run", str(run), "--out", str(tmp_path / "n.json")])
    assert code == 0
    check = load(tmp_path / "n.json")
    assert check.critic_sha256 == "d" * 64 and check.fitted_on["states"] == 80
    assert check.fitted_on["command"].startswith("afford preafford calibrate")
    assert 0.0 < check.a and check.push_needed(0.1)


def test_preafford_run_says_every_decision_and_films_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``afford preafford run`` runs one seeded scene with the shipped modules and the shipped
    calibration: the check's c_2, each push chosen, the grasp, the outcome as the exit code (0
    lifted, 3 not), the film when asked; ``--json`` is the runner's record."""
    video = tmp_path / "r.mp4"
    argv = ["preafford", "run", "--category", "tablet", "--scene", "edge", "--seed", "3", "--proposals", "16"]
    code = main([*argv, "--video", str(video)])
    out = capsys.readouterr().out
    assert code in (0, 3) and video.stat().st_size > 1000
    assert "preafford on a tablet (train), edge scene, seed 3" in out and "c_2 at the start" in out
    assert ("grasp: LIFTED" in out) == (code == 0), out
    assert main([*argv, "--json"]) == code  # the same seeded rollout, filmed or not
    record = json.loads(capsys.readouterr().out)
    assert record["necessity"].endswith("necessity.json") and record["pushed"] == (record["c2"] < 0.8)
    assert len(record["pushes"]) == sum(f"push {k}:" in out for k in range(1, 4))


def test_affordance_eval_takes_every_text_reading_source(tmp_path: Path) -> None:
    """Each part source reading the words, the learned model too, is a valid --sources choice:
    the missing data set is what is refused, naming the command that writes it."""
    proc = _afford("affordance", "eval", "--data", str(tmp_path), "--sources", "learned_text",
                   "geometric_text", "oracle_text")
    assert proc.returncode != 0 and "invalid choice" not in proc.stderr, proc.stderr
    assert "afford affordance data" in proc.stderr, proc.stderr
