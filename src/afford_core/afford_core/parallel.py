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
    want = more or (lambda _in_flight: True)
    queue: Iterator[J] = iter(jobs)
    if workers == 1:
        for job in queue:
            if not want(0):
                return
            store(job, fn(job))
        return
    pool = futures.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    pending: dict[futures.Future[R], J] = {}
    try:
        exhausted = False
        while True:
            while not exhausted and len(pending) < workers and want(len(pending)):
                nxt: J | object = next(queue, _END)
                if nxt is _END:
                    exhausted = True
                    break
                job = cast(J, nxt)
                pending[pool.submit(fn, job)] = job
            if not pending:
                break  # nothing left, or nothing more wanted
            done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
            for fut in done:
                store(pending.pop(fut), fut.result())
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
