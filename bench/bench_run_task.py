"""RunTask end to end through the sim graph, against the batch spine on the same tasks.

    python bench/bench_run_task.py --seeds 0 1 2 3 4 --out bench/results/bench_run_task.md

Brings up ``fr3_sim`` (franky-sim in real time, every node a process, DDS between them) on a
loopback address and domain of its own, sends each (sentence, seed) as a RunTask goal, and
records the wall time from goal to result, the time spent in each stage (from the feedback's
arrival times) and the outcome (the simulator's check). The baseline, in the same run, is the
batch spine (``afford run``: one process, physics faster than real time) on the same sentence
and seed, so the ratio shows what real-time execution and the process graph cost.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

SENTENCES = ("put the banana on the plate", "hang the mug on the rack")


class Clock:
    """A file-like sink for ``run_task``'s feedback lines that timestamps each stage."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, str]] = []

    def write(self, text: str) -> None:
        if text.startswith("["):
            self.marks.append((time.perf_counter(), text[1:].split("]")[0]))

    def flush(self) -> None:
        pass


def provenance() -> str:
    """The checkout's commit, with "(uncommitted changes)" when tracked files differ from it.
    Taken when a bench starts: what runs is what was checked out then, whatever is edited or
    committed while it runs."""
    git = ["git", "-C", str(Path(__file__).resolve().parents[1])]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    return commit.strip() + (" (uncommitted changes)" if dirty else "")


def start_graph(host: str, log: Any) -> subprocess.Popen[bytes]:
    """``afford bringup fr3_sim`` with franky-sim on ``host``, in a session of its own (stop it
    with ``os.killpg``), its output (stdout and stderr) to ``log``."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "afford_bringup.launcher",
            "fr3_sim",
            "--set",
            f"sim_world.hostname={host}",
            "--set",
            f"executor.robot_ip={host}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--sentences", nargs="+", default=list(SENTENCES))
    ap.add_argument("--out", default=None, help="write the Markdown table here too")
    args = ap.parse_args(argv)

    os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 60))
    host = f"127.0.{os.getpid() % 200 + 30}.7"
    graph = start_graph(host, subprocess.DEVNULL)
    from afford_pipeline.spine import SpineConfig, run_sentence
    from afford_ros.graph_cli import run_task

    rows = []
    try:
        for sentence in args.sentences:
            for seed in args.seeds:
                clock = Clock()
                t0 = time.perf_counter()
                _, result = run_task(sentence, seed=seed, out=clock, wait=180.0)
                wall = time.perf_counter() - t0
                stages: dict[str, float] = defaultdict(float)
                for (t, name), (t_next, _) in zip(
                    clock.marks, [*clock.marks[1:], (t0 + wall, "")], strict=True
                ):
                    stages[name.split(":")[0]] += t_next - t
                t1 = time.perf_counter()
                batch = run_sentence(sentence, SpineConfig(grounding="geometric", seed=seed))
                batch_wall = time.perf_counter() - t1
                rows.append(
                    (sentence, seed, bool(result.success), wall, dict(stages), batch.success, batch_wall)
                )
                print(
                    f"{sentence!r} seed {seed}: graph {'ok' if result.success else 'FAIL'} {wall:.1f} s "
                    f"({result.abstain_reason or 'success'}); batch {'ok' if batch.success else 'FAIL'} "
                    f"{batch_wall:.1f} s",
                    flush=True,
                )
    finally:
        graph.send_signal(signal.SIGINT)
        try:
            graph.wait(timeout=40)
        except subprocess.TimeoutExpired:
            graph.kill()

    lines = [
        f"Command: `python bench/bench_run_task.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        f"Machine: {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}.",
        "",
        "| sentence | graph success | graph RunTask s (p50 / max) | batch spine s (p50) "
        "| graph / batch (p50) | perceive s | plan s | execute s | evaluate s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for sentence in args.sentences:
        rs = [r for r in rows if r[0] == sentence]
        walls = [r[3] for r in rs]
        batch = [r[6] for r in rs]
        per = {
            k: statistics.median([r[4].get(k, 0.0) for r in rs])
            for k in ("perceive", "plan", "execute", "evaluate")
        }
        lines.append(
            f'| "{sentence}" | {sum(r[2] for r in rs)}/{len(rs)} '
            f"| {statistics.median(walls):.1f} / {max(walls):.1f} "
            f"| {statistics.median(batch):.1f} | {statistics.median(walls) / statistics.median(batch):.1f} "
            f"| {per['perceive']:.1f} | {per['plan']:.1f} | {per['execute']:.1f} | {per['evaluate']:.1f} |"
        )
    lines += [
        "",
        "Batch spine success on the same seeds: "
        + ", ".join(
            f'"{s}" {sum(r[5] for r in rows if r[0] == s)}/{len(args.seeds)}' for s in args.sentences
        ),
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
