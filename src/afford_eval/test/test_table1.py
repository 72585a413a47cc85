"""Table 1: the grasp sources on real scenes, and the resumable runner on both executors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from afford_eval import table1
from afford_eval.grasp_sources import GRASP_SOURCES, config_for, true_part_points
from afford_eval.table1 import Table1Config
from afford_pipeline.episode import Choice, Episode
from afford_pipeline.spine import SpineConfig, run_task

os.environ.setdefault("MUJOCO_GL", "egl")


def _choose(task: str, source: str, seed: int = 0) -> tuple[dict, list[Episode]]:
    """Run the source's choice (no execution) and keep the episode it chose in."""
    src = GRASP_SOURCES[source]
    seen: list[Episode] = []

    def spy(ep: Episode, cfg: SpineConfig) -> Choice:
        seen.append(ep)
        assert src.chooser is not None
        return src.chooser(ep, cfg)

    r = run_task(task, config_for(src, SpineConfig(seed=seed, execute=False)), chooser=spy)
    return r.as_dict(), seen


def test_manual_grasps_the_true_part_the_task_holds() -> None:
    """Manual reads the simulator: its grasp must sit on the scoop's handle, where the task holds
    it, and not on the bowl end (the rule is only as good as the part it is given)."""
    r, (ep,) = _choose("pick-scoop-v1", "manual")
    assert r["selected"] is not None, r["abstained"]
    tcp = np.array(r["selected"]["position"])
    handle = true_part_points(ep, "handle")
    bowl = true_part_points(ep, "bowl")
    assert np.linalg.norm(handle - tcp, axis=1).min() < 0.02
    assert np.linalg.norm(bowl - tcp, axis=1).min() > np.linalg.norm(handle - tcp, axis=1).min()
    with pytest.raises(ValueError, match="no spout"):
        true_part_points(ep, "spout")


def test_the_generic_detector_is_blind_to_grounding_and_the_mask_keeps_a_subset() -> None:
    """The AnyGrasp-like source must not see the affordance model: its candidates are the same
    whichever grounding perception ran; the filtered variant chooses from the same set and
    only a grasp whose TCP projects into the grounded region's mask."""
    plain, (ep_plain,) = _choose("pick-mug-v1", "antipodal_stability", seed=1)
    masked, (ep_masked,) = _choose("pick-mug-v1", "antipodal_stability_mask", seed=1)
    poses = [c.position.round(6).tolist() for c in ep_plain.candidates]
    assert poses and poses == [c.position.round(6).tolist() for c in ep_masked.candidates]
    assert plain["candidate_set"] == masked["candidate_set"]
    assert {c.source for c in ep_plain.candidates} <= {"generic"}
    from afford_eval.grasp_sources import _mask_context  # the context the source used
    from afford_eval.methods import in_mask

    assert masked["selected"] is not None, masked["abstained"]
    chosen = next(c for c in ep_masked.candidates if c.index == masked["selected"]["index"])
    assert in_mask([chosen], _mask_context(ep_masked)) == [True]
    assert not all(in_mask(ep_masked.candidates, _mask_context(ep_masked)))  # the mask did filter


def test_chance_is_a_seeded_draw() -> None:
    from afford_eval.grasp_sources import antipodal_random

    def choose(seed: int) -> int | None:
        r = run_task("place-banana-plate-v1", SpineConfig(seed=seed, grounding="learned", execute=False),
                     chooser=antipodal_random).as_dict()
        return None if r["selected"] is None else r["selected"]["index"]

    assert choose(2) == choose(2)


def test_the_runner_resumes_refuses_another_run_and_reports_ceiling_and_chance(tmp_path: Path) -> None:
    config = Table1Config(tasks=("pour-paper-cup-v1",), sources=("manual", "antipodal_random"), rollouts=1)
    out = tmp_path / "run"
    first = table1.run(out, config, command="test")
    assert (first.ran, first.kept) == (2, 0)
    records = table1.load_records(out)
    assert {r["source"] for r in records} == {"manual", "antipodal_random"}
    for r in records:
        assert r["error"] is None, r["error"]
        assert list(r["stages"])[:3] == ["approach", "grasp", "lift"]  # the skill's order, kept
        assert r["randomization"]["paper_cup"]["asset_seed"] >= 0
    report = first.report.read_text()
    for needed in ("ceiling", "chance", "Wilson", "pour-paper-cup-v1 (pour_papercup)", "Command: `test`"):
        assert needed in report

    # A damaged record is redone, the others are kept.
    damaged = next(out.glob("rollouts/*/manual/*.json"))
    damaged.write_text("{")
    again = table1.run(out, config, command="test again")
    assert (again.ran, again.kept) == (1, 1)
    assert json.loads(damaged.read_text())["source"] == "manual"
    assert len(json.loads((out / "provenance.json").read_text())) == 2
    # A crash (an exception in our code) is a failure in the report, and run again on resume.
    crashed = json.loads(damaged.read_text())
    damaged.write_text(json.dumps({**crashed, "success": False, "error": "MemoryError: "}))
    assert "crashed (counted as failures, run again on resume): 1" in table1.write_report(out).read_text()
    third = table1.run(out, config, command="test a third time")
    assert (third.ran, third.kept) == (1, 1) and json.loads(damaged.read_text())["error"] is None

    with pytest.raises(ValueError, match="holds another run"):
        table1.run(out, Table1Config(tasks=("pour-paper-cup-v1",), sources=("manual",), rollouts=1))
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty"):
        table1.run(stray, config)


def test_a_randomized_run_shows_every_source_the_same_draw(tmp_path: Path) -> None:
    config = Table1Config(tasks=("pour-paper-cup-v1",), sources=("manual", "antipodal_random"), rollouts=1,
                          randomize="table1")
    out = tmp_path / "run"
    table1.run(out, config, command="test")
    records = table1.load_records(out)
    draws = [r["randomization"]["domain"] for r in records]
    assert len(draws) == 2 and draws[0] == draws[1] and draws[0]["axes"].startswith("pose,texture")
    assert records[0]["randomization"]["paper_cup"] == records[1]["randomization"]["paper_cup"]
    assert "Domain randomization `table1`" in (out / "report.md").read_text()
    # The stored config reads back; a run of another randomization is another run.
    assert Table1Config.from_dict(json.loads((out / "config.json").read_text())) == config
    with pytest.raises(ValueError, match="holds another run"):
        table1.run(out, Table1Config(tasks=config.tasks, sources=config.sources, rollouts=1))


def test_records_from_before_randomization_count_as_unrandomized(tmp_path: Path) -> None:
    old = {"task_id": "pour-paper-cup-v1", "source": "manual", "seed": 0, "robot": "fr3", "success": True,
           "error": None}
    path = tmp_path / "0000.json"
    path.write_text(json.dumps(old))
    assert table1._valid(path, table1.Job("pour-paper-cup-v1", "manual", 0, "fr3"))
    assert not table1._valid(path, table1.Job("pour-paper-cup-v1", "manual", 0, "fr3", "visual"))
    stored = {"tasks": ["pour-paper-cup-v1"], "sources": ["manual"], "rollouts": 1, "robot": "fr3",
              "first_seed": 0}
    assert Table1Config.from_dict(stored).randomize == "none"
    with pytest.raises(KeyError, match="table1"):
        Table1Config(tasks=("pour-paper-cup-v1",), randomize="sunny")


def test_a_crashing_rollout_is_a_recorded_failure(tmp_path: Path) -> None:
    rec = table1.rollout(table1.Job("pour-paper-cup-v1", "manual", 0, "no-such-arm"))
    assert rec["success"] is False and "no-such-arm" in rec["error"]


def test_bad_configs_are_refused() -> None:
    assert table1.SOURCES == tuple(GRASP_SOURCES)  # the CLI's choices are every source
    with pytest.raises(ValueError, match="rollouts"):
        Table1Config(tasks=("pour-paper-cup-v1",), rollouts=0)
    with pytest.raises(ValueError, match="unknown grasp sources"):
        Table1Config(tasks=("pour-paper-cup-v1",), sources=("anygrasp",))
    with pytest.raises(ValueError, match="executor"):
        table1.run("/nonexistent", Table1Config(tasks=("pour-paper-cup-v1",)), executor="slurm")  # type: ignore[arg-type]


def test_the_ray_executor_runs_the_same_rollouts(tmp_path: Path) -> None:
    """A real local Ray instance of 2 CPUs (ray has no local mode any more) runs the same
    function, and its records equal the local executor's on the same scene."""
    pytest.importorskip("ray")
    config = Table1Config(tasks=("pour-paper-cup-v1",), sources=("manual",), rollouts=1)
    local = table1.run(tmp_path / "local", config)
    remote = table1.run(tmp_path / "ray", config, jobs=2, executor="ray")
    assert (remote.ran, local.ran) == (1, 1)
    a, b = table1.load_records(tmp_path / "local")[0], table1.load_records(tmp_path / "ray")[0]
    for key in ("success", "stages", "selected", "randomization", "candidates"):
        assert a[key] == b[key], key


def test_a_run_is_extended_by_new_tasks_or_sources_and_nothing_else(tmp_path: Path) -> None:
    """The benchmark grows task by task: `--tier all` on a stored run then names more tasks, and
    runs only theirs; a run of some sources is completed by the others. Dropping a task or a
    source, or any other change, is another run."""
    from afford_eval.table1 import _open, extends

    base = Table1Config(tasks=("pour-paper-cup-v1", "pick-cube-v1"), sources=("manual",), rollouts=2)
    more = Table1Config(tasks=("pour-paper-cup-v1", "stack-cube-v1", "pick-cube-v1"), sources=("manual",),
                        rollouts=2)
    assert extends(base, more) and not extends(more, base) and not extends(base, base)
    assert not extends(base, Table1Config(tasks=more.tasks, sources=("manual",), rollouts=3))
    assert not extends(base, Table1Config(tasks=more.tasks, sources=("manual",), rollouts=2, robot="ur5e"))
    assert not extends(base, Table1Config(tasks=("pour-paper-cup-v1", "stack-cube-v1"), sources=("manual",),
                                          rollouts=2))  # pick-cube-v1 dropped
    out = tmp_path / "run"
    _open(out, base)
    _open(out, more)
    assert Table1Config.from_dict(json.loads((out / "config.json").read_text())) == more
    with pytest.raises(ValueError, match="extended by new tasks or sources only"):
        _open(out, base)
    # Sources: added (with or without tasks) extends; dropped, or swapped for another, does not.
    both = Table1Config(tasks=more.tasks, sources=("manual", "affordance_learned"), rollouts=2)
    assert extends(more, both) and extends(base, both) and not extends(both, more)
    assert not extends(more, Table1Config(tasks=more.tasks, sources=("affordance_learned",), rollouts=2))
    _open(out, both)
    assert Table1Config.from_dict(json.loads((out / "config.json").read_text())) == both
    with pytest.raises(ValueError, match="extended by new tasks or sources only"):
        _open(out, more)


def test_a_run_resumed_with_other_affordance_weights_is_refused(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session records the affordance model it loads; resuming a run with other weights
    ($AFFORD_AFFORDANCE_WEIGHTS set, or unset after a run made with it) would put two models'
    rollouts in one column, so it is refused before any rollout, naming the variable."""
    from afford_perception.affordance.source import WEIGHTS_ENV

    monkeypatch.delenv(WEIGHTS_ENV, raising=False)
    table1._record_session(tmp_path, "first")
    table1._record_session(tmp_path, "same weights again")
    other = tmp_path / "other.pt"
    other.write_bytes(b"another model")
    monkeypatch.setenv(WEIGHTS_ENV, str(other))
    with pytest.raises(ValueError, match=f"was run with the affordance weights .*{WEIGHTS_ENV}"):
        table1._record_session(tmp_path, "other weights")
    assert len(json.loads((tmp_path / "provenance.json").read_text())) == 2
