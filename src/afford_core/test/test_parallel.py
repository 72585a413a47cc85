"""The one pool every independent-job runner uses (benchmark rollouts, evaluation scenes,
demonstration episodes): results come back to the caller, jobs are taken only while wanted,
and a failure stops the rest."""

from __future__ import annotations

import json

import pytest

from afford_core.parallel import run_jobs


def square(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative job {x}")
    return x * x


@pytest.mark.parametrize("workers", [1, 2])
def test_every_job_is_run_once_and_stored_in_the_caller(workers: int) -> None:
    got: dict[int, int] = {}
    run_jobs(square, range(7), workers, got.__setitem__)
    assert got == {k: k * k for k in range(7)}


@pytest.mark.parametrize("workers", [1, 2])
def test_jobs_are_taken_only_while_wanted(workers: int) -> None:
    """A runner that needs three results takes no fourth job once three are stored or in
    flight; a result it rejects (here: odd squares) makes it take more."""
    stored: list[int] = []

    def store(job: int, result: int) -> None:
        stored.append(job)

    def more(in_flight: int) -> bool:
        return sum(1 for j in stored if j % 2 == 0) + in_flight < 3

    run_jobs(square, iter(range(100)), workers, store, more)
    evens = sorted(j for j in stored if j % 2 == 0)
    assert evens[:3] == [0, 2, 4] and max(stored) <= 4 + workers


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_job_stops_the_run_with_its_error(workers: int) -> None:
    with pytest.raises(ValueError, match="negative job -1"):
        run_jobs(square, [1, -1, 2, 3, 4, 5], workers, lambda j, r: None)
    with pytest.raises(ValueError, match="workers"):
        run_jobs(square, [1], 0, lambda j, r: None)


def test_ray_runs_the_same_jobs_and_stops_when_enough() -> None:
    """A real local Ray instance of 2 CPUs: the same results as processes, and no job taken
    once enough results are stored or in flight."""
    pytest.importorskip("ray")
    from afford_core.parallel import run_jobs_ray

    stored: dict[int, str] = {}

    def more(in_flight: int) -> bool:
        return len(stored) + in_flight < 4

    # A Python function Ray's workers can import (this test module is not on their path).
    run_jobs_ray(json.dumps, iter(range(100)), 2, stored.__setitem__, more, cpus=2)
    assert len(stored) == 4 and all(v == str(k) for k, v in stored.items()) and max(stored) <= 5
    with pytest.raises(ValueError, match="in_flight"):
        run_jobs_ray(json.dumps, [1], 0, lambda j, r: None)
