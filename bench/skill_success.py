"""Success rate of every skill over seeded scenes, per grounding source.

    python bench/skill_success.py --seeds 20 --grounding oracle geometric --jobs 2 \
        --out bench/results/skill_success.md

Each (skill, grounding, seed) is one ``afford run --task ID`` episode in a fresh scene, asked
with the task's canonical instruction; the seed fixes the object shapes and poses, so every
grounding source faces the same 20 scenes. Rates come
with 95% Wilson intervals. A crash counts as a failure and its message is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

#: The README's table: a row per skill, each a registered task (afford_sim.tasks).
SKILLS: dict[str, str] = {
    "pick (tool by handle)": "pick-scoop-v1",
    "pick-and-place": "place-banana-plate-v1",
    "hang": "hang-mug-v1",
    "pour (paper cup)": "pour-paper-cup-v1",
    "pour (kettle)": "pour-kettle-v1",
    "open drawer": "open-drawer-v1",
    "push": "push-coffee-can-v1",
}


def _episode(args: tuple[str, str, str, int, str]) -> dict[str, object]:
    skill, task_id, grounding, seed, robot = args
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from afford_pipeline.spine import SpineConfig, run_task

    t0 = time.perf_counter()
    sentence = task_id
    try:
        config = SpineConfig(grounding=grounding, seed=seed, robot=robot, allow_unvalidated_robot=True)
        r = run_task(task_id, config)
        sentence = r.task
        out = {
            "success": r.success,
            "stages": r.stages,
            "abstained": r.abstained,
            "failed_stage": next((k for k, v in r.stages.items() if not v), None),
            "detail": r.details,
            "timings_ms": r.timings_ms,
            "randomization": r.randomization,
            "config": r.config,  # the resolved SpineConfig this episode ran with
        }
    except Exception as err:  # noqa: BLE001 - a crash is a failed episode, recorded with its reason
        out = {"success": False, "error": f"{type(err).__name__}: {err}"}
    out.update(
        skill=skill,
        task_id=task_id,
        robot=robot,
        sentence=sentence,
        grounding=grounding,
        seed=seed,
        wall_s=round(time.perf_counter() - t0, 2),
    )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--grounding", nargs="+", default=["oracle", "geometric"])
    ap.add_argument("--skills", nargs="+", default=list(SKILLS), help="skill names (keys of SKILLS)")
    ap.add_argument("--robot", default="fr3", help="the arm (afford robots); a task it is not validated "
                    "on is run anyway: measuring it is how a task gets validated")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the Markdown report here (and .json beside it)")
    args = ap.parse_args(argv)
    unknown = set(args.skills) - set(SKILLS)
    if unknown:
        ap.error(f"unknown skills {sorted(unknown)}; known: {list(SKILLS)}")

    from afford_eval.stats import wilson
    from afford_sim.tasks import get_task

    jobs = [
        (s, SKILLS[s], g, seed, args.robot)
        for s in args.skills
        for g in args.grounding
        for seed in range(args.seeds)
    ]
    results: list[dict[str, object]] = []
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, res in enumerate(pool.map(_episode, jobs), 1):
            results.append(res)
            print(
                f"[{i}/{len(jobs)}] {res['skill']:<22} {res['grounding']:<10} seed {res['seed']:>2}: "
                f"{'ok' if res['success'] else 'FAIL'}  ({res['wall_s']} s)",
                flush=True,
            )

    ratio_to = [g for g in args.grounding if g != "oracle"] if "oracle" in args.grounding else []
    lines = [
        f"Command: `python bench/skill_success.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        f"Robot: {args.robot}. Episodes: {len(results)}, wall time {time.perf_counter() - t0:.0f} s.",
        "",
        "| skill | task (instruction) | "
        + " | ".join(f"{g} success (95% CI)" for g in args.grounding)
        + "".join(f" | {g} / oracle" for g in ratio_to)
        + " |",
        "|---|---|" + "---|" * (len(args.grounding) + len(ratio_to)),
    ]
    for s in args.skills:
        cells, rate = [], {}
        for g in args.grounding:
            rs = [r for r in results if r["skill"] == s and r["grounding"] == g]
            k = sum(bool(r["success"]) for r in rs)
            lo, hi = wilson(k, len(rs))
            rate[g] = k / max(len(rs), 1)
            cells.append(f"{k}/{len(rs)} = {rate[g]:.2f} [{lo:.2f}, {hi:.2f}]")
        # A source's success as a share of the oracle's on the same scenes (AffordSim's measure
        # of how much of the oracle's performance a real affordance model keeps).
        cells += [f"{rate[g] / rate['oracle']:.2f}" if rate["oracle"] > 0 else "n/a" for g in ratio_to]
        asked = get_task(SKILLS[s]).instruction
        lines.append(f'| {s} | {SKILLS[s]} ("{asked}") | ' + " | ".join(cells) + " |")
    lines += ["", "Where the failures happened (first failed stage, or abstention / error):", ""]
    for s in args.skills:
        for g in args.grounding:
            rs = [r for r in results if r["skill"] == s and r["grounding"] == g and not r["success"]]
            where = Counter(
                str(r.get("failed_stage") or ("abstained" if r.get("abstained") else "error")) for r in rs
            )
            if where:
                lines.append(f"- {s}, {g}: " + ", ".join(f"{k} {v}" for k, v in where.most_common()))
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report + "\n")
        with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
