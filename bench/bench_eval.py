"""Cost of the counterfactual evaluation: candidates executed per minute, and a scene's cost
against a single execution.

    python bench/bench_eval.py --scenes 1            # one scene of every suite
    python bench/bench_eval.py --suite hang --scenes 3

For each scene the evaluation core builds the candidate set (perceive, ground, sample, score,
plan every candidate), executes every planned candidate from the same saved state, re-executes
a sample for determinism and applies every method (``evaluate_scene``). The same scene (same
sentence, same seed) is then run once through the spine, which plans its top candidates and
executes only the one it selects: that is the cost of a single execution. Both run in this
process, one after the other, so their ratio is robust to the machine's load.

"Candidates executed per minute" counts candidates that had a plan and were run through the
skill in the batch world (physics, no rendering), over the wall time of those executions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", action="append", default=None, help="suite (repeatable; default: all)")
    ap.add_argument("--scenes", type=int, default=1, help="scenes per suite (default 1)")
    ap.add_argument("--grounding", default="oracle")
    args = ap.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from afford_eval.counterfactual import EvalConfig, evaluate_scene
    from afford_eval.suites import SUITES
    from afford_pipeline.spine import SpineConfig, run_sentence

    suites = args.suite or list(SUITES)
    config = EvalConfig(grounding=args.grounding)
    per_min, ratios, scene_s, single_s, executed_n, cands_n = [], [], [], [], [], []
    print("| suite | scene | candidates | executed | build s | execute s | scene s | single s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for suite in suites:
        for k in range(args.scenes):
            t0 = time.perf_counter()
            rec = evaluate_scene(suite, k, config)
            total = time.perf_counter() - t0
            t = rec["timings_s"]
            executed = sum(1 for c in rec["candidates"] if c["planned"])
            t1 = time.perf_counter()
            run_sentence(rec["sentence"], SpineConfig(seed=rec["seed"], grounding=args.grounding))
            single = time.perf_counter() - t1
            if executed and t["execute"] > 0:
                per_min.append(60.0 * executed / t["execute"])
            ratios.append(total / single)
            scene_s.append(total)
            single_s.append(single)
            executed_n.append(executed)
            cands_n.append(len(rec["candidates"]))
            print(
                f"| {suite} | {k} | {len(rec['candidates'])} | {executed} | {t['build']:.1f} | "
                f"{t['execute']:.1f} | {total:.1f} | {single:.1f} | x{total / single:.1f} |",
                flush=True,
            )
    cmd = ["python bench/bench_eval.py", f"--scenes {args.scenes}", f"--grounding {args.grounding}"]
    cmd += [f"--suite {s}" for s in args.suite or []]
    print(f"\nCommand: {' '.join(cmd)}")
    print(f"Machine: {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}")
    med = statistics.median
    if per_min:
        print(
            f"Candidates executed per minute (batch world, no rendering): median {med(per_min):.0f} "
            f"(min {min(per_min):.0f}, max {max(per_min):.0f})"
        )
    print(
        f"Counterfactual scene: median {med(scene_s):.1f} s for {med(cands_n):.0f} candidates "
        f"({med(executed_n):.0f} executed); single execution: median {med(single_s):.1f} s; "
        f"ratio median x{med(ratios):.1f} (min x{min(ratios):.1f}, max x{max(ratios):.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
