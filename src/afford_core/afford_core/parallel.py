"""Independent jobs on the local cores: one function, spawned worker processes, results handed
back in the calling process as each finishes.

The benchmark's rollouts, the evaluation's scenes and the demonstrations' episodes are all
independent runs of a picklable function; this is the one place that runs them side by side.
Workers are spawned, not forked: the simulator and torch hold threads and GL contexts a fork
would copy half-initialised. A failure (an exception from a job or from the caller's ``store``,
or Ctrl-C) cancels what has not started and is raised; what was stored stays stored, which is
what makes every caller resumable.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from typing import TypeVar, cast

J = TypeVar("J")
R = TypeVar("R")
_END = object()


def _drive(
    submit: Callable[[J], object],
    wait_one: Callable[[list[object]], list[tuple[object, R]]],
    jobs: Iterable[J],
    in_flight: int,
    store: Callable[[J, R], None],
    more: Callable[[int], bool] | None,
) -> None:
    """Keep up to ``in_flight`` jobs submitted, taking the next only while ``more`` wants it,
    and store each result as it arrives."""
    want = more or (lambda _n: True)
    queue: Iterator[J] = iter(jobs)
    pending: dict[object, J] = {}
    exhausted = False
    while True:
        while not exhausted and len(pending) < in_flight and want(len(pending)):
            nxt: J | object = next(queue, _END)
            if nxt is _END:
                exhausted = True
                break
            job = cast(J, nxt)
            pending[submit(job)] = job
        if not pending:
            return  # nothing left, or nothing more wanted
        for handle, result in wait_one(list(pending)):
            store(pending.pop(handle), result)


def run_jobs(
    fn: Callable[[J], R],
    jobs: Iterable[J],
    workers: int,
    store: Callable[[J, R], None],
    more: Callable[[int], bool] | None = None,
) -> None:
    """Run ``fn`` on each job, ``workers`` at a time, and ``store(job, result)`` each result in
    the calling process, in the order they finish.

    Args:
        fn: A picklable function (module level) of one job.
        jobs: The jobs, consumed lazily: the next is taken only when a worker is free.
        workers: Processes; 1 runs everything in this process, in order.
        store: Called with each job and its result, in this process.
        more: Asked, with the number of jobs in flight, before the next job is taken; ``False``
            stops taking jobs (those in flight still finish and are stored). Default: always.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1:
        want = more or (lambda _n: True)
        for job in jobs:
            if not want(0):
                return
            store(job, fn(job))
        return
    pool = futures.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

    def wait_one(handles: list[object]) -> list[tuple[object, R]]:
        done, _ = futures.wait(cast(list[futures.Future[R]], handles), return_when=futures.FIRST_COMPLETED)
        return [(f, f.result()) for f in done]

    try:
        _drive(lambda job: pool.submit(fn, job), wait_one, jobs, workers, store, more)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def run_jobs_ray(
    fn: Callable[[J], R],
    jobs: Iterable[J],
    in_flight: int,
    store: Callable[[J, R], None],
    more: Callable[[int], bool] | None = None,
    *,
    cpus: int = 2,
    address: str | None = None,
) -> None:
    """:func:`run_jobs` on Ray: a local instance of ``cpus`` CPUs, or the cluster at
    ``address`` (every node needs this repository's environment). ``in_flight`` caps the jobs
    submitted at once (a cluster runs as many as it has CPUs for). A failed task is raised, not
    retried: a job is a seeded experiment, and the caller's resume runs it again."""
    if in_flight < 1:
        raise ValueError(f"in_flight must be >= 1, got {in_flight}")
    try:
        import ray
    except ImportError as err:
        raise RuntimeError("the ray executor needs the ray package (pip install 'ray==2.60.0')") from err
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, num_cpus=None if address else cpus, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(fn)

        def wait_one(handles: list[object]) -> list[tuple[object, R]]:
            done, _ = ray.wait(handles, num_returns=1)
            return [(ref, ray.get(ref)) for ref in done]

        _drive(lambda job: remote.remote(job), wait_one, jobs, in_flight, store, more)
    finally:
        if started:
            ray.shutdown()
