"""Throughput of the Table 1 runner: rollouts per minute on one process, on the local cores, on Ray.

    python bench/bench_table1.py --rollouts 6 --out bench/results/bench_table1.txt

The same rollouts (one task, every grasp source, ``--rollouts`` seeds) run three times into
fresh run directories: ``--executor local --jobs 1`` (the baseline), ``--executor local --jobs
N`` and ``--executor ray --jobs N`` (a local Ray instance of N CPUs, started inside the timed
run as a user's would be). Reported: rollouts per minute, per core, and each speed-up over the
baseline in the same run. Each run also checks that the three produced the same outcomes.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="place-carrot-plate-v1")
    ap.add_argument("--rollouts", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")

    from afford_eval import table1

    config = table1.Table1Config(tasks=(args.task,), rollouts=args.rollouts)
    n = len(table1.jobs_of(config))
    runs = [("local", 1), ("local", args.jobs), ("ray", args.jobs)]
    rows, outcomes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for executor, jobs in runs:
            t0 = time.perf_counter()
            table1.run(Path(tmp) / f"{executor}{jobs}", config, jobs=jobs, executor=executor)  # type: ignore[arg-type]
            wall = time.perf_counter() - t0
            recs = table1.load_records(Path(tmp) / f"{executor}{jobs}")
            outcomes.append(sorted((r["source"], r["seed"], r["success"]) for r in recs))
            rows.append((executor, jobs, wall, 60 * n / wall))
    base = rows[0][3]
    given = argv if argv is not None else sys.argv[1:]
    lines = [
        f"Command: `{shlex.join(['python', 'bench/bench_table1.py', *given])}`",
        f"Task {args.task}, {n} rollouts ({args.rollouts} seeds x {len(config.sources)} grasp sources) per "
        f"executor, {os.cpu_count()} cores; model loading in each fresh worker included.",
        "",
        "| executor | jobs | wall (s) | rollouts / min | per core | speed-up over local x1 |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {e} | {j} | {w:.0f} | {r:.1f} | {r / j:.1f} | x{r / base:.2f} |" for e, j, w, r in rows]
    same = all(o == outcomes[0] for o in outcomes)
    lines += ["", f"Same outcomes on every executor: {same}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
