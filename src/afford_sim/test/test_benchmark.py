"""AffordSim's benchmark catalogue: the seed's 50 tasks, tiers and skills, and what runs here."""

from __future__ import annotations

from collections import Counter

import pytest

from afford_sim import benchmark
from afford_sim.benchmark import BENCHMARK, BenchmarkTask, by_task_id, check_catalogue, coverage
from afford_sim.tasks import TASKS


def test_the_catalogue_is_the_seeds_fifty_tasks_in_its_tiers_and_skills() -> None:
    """Counts as the seed states them (section 3.4 and the appendix lists): a missing or
    misfiled task would make every tier average in a report mean something else."""
    assert len(BENCHMARK) == 50
    assert len({b.seed_id for b in BENCHMARK}) == 50
    assert Counter(b.tier for b in BENCHMARK) == {"easy": 10, "medium": 30, "hard": 10}
    assert Counter(b.skill_type for b in BENCHMARK) == {
        "pick_place": 20, "open_close": 2, "pull_push": 5, "hang": 2, "pour": 7, "stack": 4, "composite": 10,
    }
    assert set(benchmark.SEED_TIER_AVERAGES) == {"easy", "medium", "hard"}
    assert set(benchmark.SEED_TABLE1) <= {b.seed_id for b in BENCHMARK}


def test_every_built_entry_is_a_registered_task_of_the_same_tier() -> None:
    check_catalogue()
    for b in BENCHMARK:
        if b.built:
            assert b.task_id in TASKS
            assert TASKS.get(b.task_id).tier == b.tier, b.seed_id
            assert by_task_id(b.task_id) is b
    built, total = zip(*coverage().values(), strict=True)
    assert sum(total) == 50 and 0 < sum(built) <= 50


def test_a_catalogue_that_claims_a_missing_or_misfiled_task_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong_tier = (*BENCHMARK, BenchmarkTask("pick_x", "hard", "pick_place", "pick-cube-v1"))
    monkeypatch.setattr(benchmark, "BENCHMARK", wrong_tier)
    with pytest.raises(ValueError, match="registered as easy"):
        check_catalogue()
    missing = BenchmarkTask("pick_y", "easy", "pick_place", "nope-v1")
    monkeypatch.setattr(benchmark, "BENCHMARK", (*BENCHMARK, missing))
    with pytest.raises(ValueError, match="no registered task"):
        check_catalogue()
    twice = next(b for b in BENCHMARK if b.built)
    monkeypatch.setattr(benchmark, "BENCHMARK", (*BENCHMARK, BenchmarkTask("again", twice.tier, "pick_place",
                                                                           twice.task_id)))
    with pytest.raises(ValueError, match="stands for two"):
        check_catalogue()


def test_a_task_outside_the_benchmark_says_so() -> None:
    with pytest.raises(KeyError, match="no AffordSim benchmark task"):
        by_task_id("pick-scoop-v1")
