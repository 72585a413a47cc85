"""Throughput of demonstration recording: episodes per minute on one process, on the local
cores, on Ray.

    python bench/bench_generate.py --episodes 6 --out bench/results/bench_generate.txt

The same dataset (one task, ``--episodes`` successful episodes, ``--image-size``) is made three
times into fresh directories: ``--executor local --jobs 1`` (the baseline), ``--executor local
--jobs N`` and ``--executor ray --jobs N`` (a local Ray instance of N CPUs, started inside the
timed run as a user's would be). Reported: episodes and frames per minute, per core, and each
speed-up over the baseline in the same run; each run also checks that the three datasets hold
the same episodes (seeds and frame counts). The time includes writing the dataset (video
encoding, LeRobot's finalize).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="place-banana-plate-v1")
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--image-size", type=int, nargs=2, default=[128, 128])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")

    from afford_data.demos import DemoConfig, generate

    config = DemoConfig(args.task, args.episodes, image_size=tuple(args.image_size))
    runs = [("local", 1), ("local", args.jobs), ("ray", args.jobs)]
    rows, made = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for executor, jobs in runs:
            out = Path(tmp) / f"{executor}{jobs}"
            t0 = time.perf_counter()
            report = generate(config, out, jobs=jobs, executor=executor)
            wall = time.perf_counter() - t0
            lines_ = (out / "meta" / "afford_episodes.jsonl").read_text().splitlines()
            meta = [json.loads(line) for line in lines_]
            made.append([(m["seed"], m["frames"]) for m in meta])
            rows.append((executor, jobs, wall, report.attempts, 60 * report.episodes / wall,
                         60 * report.frames / wall))
    base = rows[0][4]
    given = argv if argv is not None else sys.argv[1:]
    w, h = args.image_size
    lines = [
        f"Command: `{shlex.join(['python', 'bench/bench_generate.py', *given])}`",
        f"Task {args.task}, {args.episodes} episodes per executor, two {w}x{h} cameras at {config.fps} fps, "
        f"{os.cpu_count()} cores; worker start-up and writing the dataset included.",
        "",
        "| executor | jobs | wall (s) | attempts | episodes / min | frames / min | episodes / min per core "
        "| speed-up over local x1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {e} | {j} | {wall:.0f} | {a} | {ep:.1f} | {fr:.0f} | {ep / j:.1f} | x{ep / base:.2f} |"
              for e, j, wall, a, ep, fr in rows]
    same = all(m == made[0] for m in made)
    lines += ["", f"Same episodes (seeds and frame counts) on every executor: {same}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
