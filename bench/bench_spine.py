"""Time every stage of the spine over seeded scenes, and what the selection layer saves.

    python bench/bench_spine.py --scenes 20

For each scene (five registered tasks in turn, asked with their canonical instruction, seeds
0..N-1) the spine runs end to end
and every stage is timed. Then the same scene is planned again in the baseline mode that skips
the selection layer and plans every raw candidate (AffordSim's Stage 2 alone); the ratio of
planning times is what the gate and ranking save. Both modes run in this process, in the same
run, so the ratio is robust to the machine's load. "Sentence to chosen, planned grasp" is
parse + perceive + ground + sample + select + plan (the simulator's scene set-up excluded: a
real robot already has its world). Physics speed is simulated seconds over wall seconds of the
execute stage (no video rendering).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

#: One task per skill, by id from the task registry (``afford tasks``).
TASK_IDS = ("pick-scoop-v1", "place-banana-plate-v1", "hang-mug-v1", "pour-paper-cup-v1", "open-drawer-v1")
TO_GRASP = ("parse", "perceive", "ground", "sample", "select", "plan")


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", type=int, default=20)
    ap.add_argument("--grounding", default="oracle")
    args = ap.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from afford_core import config as cfg
    from afford_pipeline.spine import SpineConfig, run_task
    from afford_sim.tasks import TASKS

    print("# resolved configuration (each scene sets its seed):")
    for line in cfg.dump(SpineConfig(grounding=args.grounding)).splitlines():
        print(f"#   {line}")

    rows, raw_plan, sel_plan, rtf = [], [], [], []
    planned_sel, planned_raw = [], []
    for i in range(args.scenes):
        task_id = TASK_IDS[i % len(TASK_IDS)]
        sentence = TASKS.get(task_id).instructions[0]
        r = run_task(task_id, SpineConfig(seed=i, grounding=args.grounding))
        base = run_task(task_id, SpineConfig(seed=i, grounding=args.grounding, plan_all=True, execute=False))
        t = dict(r.timings_ms)
        t["to_grasp"] = sum(t.get(k, 0.0) for k in TO_GRASP)
        rows.append(t)
        sel_plan.append(t.get("plan", 0.0))
        raw_plan.append(base.timings_ms.get("plan", 0.0))
        planned_sel.append(min(r.eligible, SpineConfig().plan_top_k))
        planned_raw.append(base.candidates)
        if r.sim_seconds > 0 and t.get("execute", 0) > 0:
            rtf.append(r.sim_seconds / (t["execute"] / 1000))
        print(
            f"scene {i:>2} {sentence!r:<40} success {r.success!s:<5} to-grasp {t['to_grasp']:7.0f} ms  "
            f"plan {t.get('plan', 0):6.0f} ms vs all-candidates {base.timings_ms.get('plan', 0):6.0f} ms",
            flush=True,
        )

    keys = ["scene", *TO_GRASP, "to_grasp", "execute", "total"]
    print(f"\nCommand: python bench/bench_spine.py --scenes {args.scenes} --grounding {args.grounding}")
    print(f"Machine: {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}\n")
    print("| stage | median ms | p90 ms |\n|---|---|---|")
    for k in keys:
        vals = [row.get(k, 0.0) for row in rows]
        print(f"| {k} | {statistics.median(vals):.0f} | {_pct(vals, 0.9):.0f} |")
    ratio = statistics.median(raw_plan) / max(statistics.median(sel_plan), 1e-9)
    print(
        f"\nStage 2 planning, selection layer (top {SpineConfig().plan_top_k} eligible) vs every raw "
        f"candidate: median {statistics.median(sel_plan):.0f} ms vs {statistics.median(raw_plan):.0f} ms "
        f"(x{ratio:.2f}); candidates planned per scene: median {statistics.median(planned_sel):.0f} vs "
        f"{statistics.median(planned_raw):.0f}"
    )
    if rtf:
        print(
            f"Physics during execution: median {statistics.median(rtf):.1f}x real time "
            f"(min {min(rtf):.1f}x) without rendering"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
