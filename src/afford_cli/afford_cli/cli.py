"""The afford command: run task sentences on the simulated FR3, evaluate the selection layer,
inspect the assets.

    afford run "hang the mug on the rack" --seed 2 --grounding geometric --video out.mp4
    afford run "pick up the scoop" --json
    afford run --task hang-mug-v1 --seed 2
    afford tasks --tier easy
    afford tasks --benchmark
    afford bench table1 --tier easy --rollouts 20 --jobs 2 --out runs/table1-easy
    afford robots
    afford objects
    afford show mug --seed 2 -o mug.png
    afford show mug --query "where you hold it" -o mug_heat.png
    afford affordance data --out data/affordance
    afford affordance train --data data/affordance --minutes 60
    afford affordance eval --data data/affordance --json
    afford eval run --suite hang --suite pour --scenes 20 --out runs/hp20   (or: afford eval --suite ...)
    afford eval report runs/hp20
    afford eval verify runs/hp20
    afford eval replay runs/hp20 --suite hang --scene 3 -o hang3.html
    afford policy eval --replay datasets/banana-plate --task place-banana-plate-v1 --episodes 20
    afford policy eval --policy outputs/act/checkpoints/last/pretrained_model --task pick-mug-v1 --episodes 50

Errors print one line on stderr and exit non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _setup_env() -> None:
    # Offline model loading and headless rendering, also when scripts/env.sh was not sourced.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


_RANDOMIZE_HELP = ("domain randomization: none (default), visual (texture, lighting, background, camera, "
                   "noise), table1 (visual + AffordSim's 30 cm / 60 deg pose window), table2 (15 cm / "
                   "30 deg pose only), one axis, or a comma list (docs/benchmark.md#domain-randomization)")


def _cmd_run(args: argparse.Namespace) -> int:
    from afford_pipeline.spine import SpineConfig, run_sentence, run_task

    if not args.sentence and not args.task and not args.print_config:
        raise ValueError('empty task: give a sentence or --task ID, e.g. afford run "pick up the scoop"')
    from afford_core import config as cfg

    # Defaults, then the --config file, then the flags given, then --set: the later wins.
    config = cfg.load(SpineConfig, args.config) if args.config else SpineConfig()
    flags = {"grounding": args.grounding, "seed": args.seed, "video_path": args.video, "robot": args.robot,
             "allow_unvalidated_robot": args.allow_unvalidated_robot or None, "randomize": args.randomize}
    given = {k: v for k, v in flags.items() if v is not None}
    config = cfg.from_dict(SpineConfig, {**cfg.to_dict(config), **given})
    config = cfg.apply_overrides(config, args.set)
    if args.print_config:
        print(cfg.dump(config), end="")
        return 0
    progress = None if args.json else (lambda line: print(line, flush=True))
    if args.task:
        result = run_task(args.task, config, progress=progress, sentence=args.sentence or None)
    else:
        result = run_sentence(args.sentence, config, progress=progress)
    if config.video_path:
        # The film's settings beside it: what ran, defaults included, loadable with --config.
        cfg.write_resolved(config, Path(config.video_path).with_suffix(".config.yaml"))
    if args.json:
        print(json.dumps(result.as_dict()))
    else:
        print(result.summary())
    return 0 if result.success else 3


def _cmd_tasks(args: argparse.Namespace) -> int:
    from afford_sim.tasks import TASKS, task_ids

    if args.benchmark:
        return _benchmark_coverage(args)
    ids = task_ids(tier=args.tier, robot=args.robot)
    rows = [TASKS.get(i) for i in ids]
    if args.json:
        print(json.dumps([
            {"id": c.task_id, "tier": c.tier, "skill": c.skill, "robots": list(c.robots),
             "objects": [o for o in (c.target, c.destination) if o], "instructions": list(c.instructions)}
            for c in rows
        ]))
        return 0
    if not rows:
        print("no task matches")
        return 0
    width = max(len(c.task_id) for c in rows)
    print(f"{'id':<{width}}  {'tier':<6}  {'skill':<6}  {'robots':<10}  instruction")
    for c in rows:
        robots = ",".join(c.robots)
        print(f"{c.task_id:<{width}}  {c.tier:<6}  {c.skill:<6}  {robots:<10}  {c.instructions[0]}")
    print(f"{len(rows)} tasks (`afford run --task ID`; `--json` lists every phrasing)")
    return 0


def _benchmark_coverage(args: argparse.Namespace) -> int:
    from afford_sim.benchmark import BENCHMARK, check_catalogue, coverage

    check_catalogue()
    rows = [b for b in BENCHMARK if args.tier is None or b.tier == args.tier]
    if args.json:
        print(json.dumps([{"seed_id": b.seed_id, "tier": b.tier, "skill_type": b.skill_type,
                           "task_id": b.task_id} for b in rows]))
        return 0
    width = max(len(b.seed_id) for b in rows)
    print(f"{'AffordSim task':<{width}}  {'tier':<6}  {'skill':<10}  task here")
    for b in rows:
        print(f"{b.seed_id:<{width}}  {b.tier:<6}  {b.skill_type:<10}  {b.task_id or '-- not built yet'}")
    cov = coverage()
    print("built: " + ", ".join(f"{t} {k}/{n}" for t, (k, n) in cov.items())
          + f"; all {sum(k for k, _ in cov.values())}/{len(BENCHMARK)}")
    return 0


def _cmd_table1(args: argparse.Namespace) -> int:
    from afford_eval import table1
    from afford_sim.benchmark import built

    if args.report:
        print(table1.write_report(args.report).read_text())
        return 0
    if args.out is None:
        raise ValueError("--out DIR is needed (or --report DIR to rebuild a report)")
    tasks = args.tasks or [b.task_id for b in built() if b.task_id and args.tier in ("all", b.tier)]
    config = table1.Table1Config(tasks=tuple(tasks), sources=tuple(args.sources), rollouts=args.rollouts,
                                 robot=args.robot, first_seed=args.first_seed, randomize=args.randomize)
    for t in config.tasks:  # an unknown id fails now, not in every worker
        from afford_sim.benchmark import by_task_id

        by_task_id(t)

    def progress(done: int, total: int, rec: dict[str, Any]) -> None:
        reason = rec.get("failed_stage") or rec.get("abstained") or rec.get("error")
        why = "" if rec["success"] else f" ({reason})"
        print(f"[{done}/{total}] {rec['task_id']} {rec['source']} seed {rec['seed']}: "
              f"{'ok' if rec['success'] else 'FAIL'}{why} {rec['wall_s']} s", flush=True)

    summary = table1.run(args.out, config, jobs=args.jobs, executor=args.executor,
                         ray_address=args.ray_address,
                         command=args.command_line, progress=None if args.quiet else progress)
    print(f"{summary.ran} rollouts run, {summary.kept} kept from before, {summary.wall_s:.0f} s; "
          f"report: {summary.report}")
    return 0


def _cmd_preafford_collect(args: argparse.Namespace) -> int:
    from afford_data.preafford import CollectConfig, Episode, collect, summary

    config = CollectConfig(module=args.module, episodes=args.episodes, scenes=tuple(args.scenes),
                           categories=tuple(args.categories), first_seed=args.first_seed,
                           second_state=args.second_state, proposer=args.proposer)

    def progress(done: int, total: int, ep: Episode) -> None:
        print(f"[{done}/{total}] {ep.scene} {ep.category} seed {ep.seed}", flush=True)

    from afford_eval.runs import provenance

    done = collect(args.out, config, jobs=args.jobs, executor=args.executor, ray_address=args.ray_address,
                   session=provenance(args.command_line, args.out), progress=None if args.quiet else progress)
    print(f"{done.collected} episodes collected, {done.kept} kept from before, {done.wall_s:.0f} s")
    print(json.dumps(summary(args.out), indent=1))
    return 0


def _cmd_preafford_train_grasp(args: argparse.Namespace) -> int:
    from afford_perception.preafford.train_grasp import TrainConfig, train

    torch_threads(args.threads)
    config = TrainConfig(epochs=args.epochs, batch=args.batch, seed=args.seed,
                         blocked_weight=args.blocked_weight)
    result = train(args.data, args.val, args.out, config, say=lambda line: print(line, flush=True))
    print(json.dumps({"checkpoint": args.out, "best": result["best"]}, indent=1))
    return 0


def _cmd_preafford_eval_grasp(args: argparse.Namespace) -> int:
    from afford_perception.preafford.grasp_module import load
    from afford_perception.preafford.train_grasp import load_states, measure

    torch_threads(args.threads)
    model, _ = load(args.model)
    print(json.dumps(measure(model, load_states(args.data)), indent=1))
    return 0


def _cmd_preafford_train_push(args: argparse.Namespace) -> int:
    from afford_perception.preafford.push_module import train_push

    torch_threads(args.threads)
    result = train_push(args.data, args.val, args.out, epochs=args.epochs, batch=args.batch, seed=args.seed,
                        say=lambda line: print(line, flush=True))
    print(json.dumps({"checkpoint": args.out, "best": result["best"]}, indent=1))
    return 0


def torch_threads(n: int | None) -> None:
    if n:
        import torch

        torch.set_num_threads(n)


def _cmd_preafford_calibrate(args: argparse.Namespace) -> int:
    from afford_eval.preafford_table2 import calibration_states
    from afford_perception.preafford.necessity import fit

    raw, graspable, info = calibration_states(args.run)
    check = fit(raw, graspable, info.pop("model_sha256"), fitted_on={**info, "command": args.command_line})
    check.save(args.out)
    pushed = raw < check.raw_threshold
    print(f"{args.out}: p = sigmoid({check.a:.3f} c2 + {check.b:.3f}); pushes below a raw score of "
          f"{check.raw_threshold:.3f} (theta_g {check.theta_g}). On the {len(raw)} validation states it "
          f"pushes {int(pushed[graspable].sum())} of {int(graspable.sum())} graspable and "
          f"{int(pushed[~graspable].sum())} of {int((~graspable).sum())} ungraspable ones.")
    return 0


def _cmd_preafford_run(args: argparse.Namespace) -> int:
    """One scene, one method, every decision said: what the check estimated, each push chosen
    (with the critic's value and the c_2 it was chosen at) and what it did, the grasp; the film
    when asked."""
    from afford_eval import preafford_table2 as t2
    from afford_perception.preafford import weights_dir

    model = args.model or str(weights_dir() / "grasp_critic.pt")
    pushing = args.method in t2.PUSH_METHODS
    push = (args.push_model or str(weights_dir() / "push_critic.pt")) if pushing else ""
    necessity = _necessity_choice(args.necessity, pushing, str(weights_dir() / "necessity.json"))
    if necessity:
        from afford_eval.runs import sha256_file

        t2.check_calibration(necessity, sha256_file(Path(model)))
    job = t2.Job(args.scene, args.category, args.method, args.seed, model, args.proposals,
                 t2.Table2Config.rim, push, necessity, video=bool(args.video))  # the runner's outline share
    record = t2.rollout(job)
    video = record.pop(t2.VIDEO_KEY, None)
    if video is not None:
        from afford_core.files import write_atomic

        write_atomic(Path(args.video), video)
        record["video_path"] = args.video
    if args.json:
        print(json.dumps(record))
    else:
        print(t2.describe(record))
    if record.get("error"):
        raise RuntimeError(f"the rollout crashed: {record['error']}")
    return 0 if record["success"] else 3


def _necessity_choice(given: str | None, pushing: bool, shipped: str) -> str:
    """The calibration a command's necessity check uses: none when no method pushes (only the
    pushing methods read it) or ``raw`` was asked for (the critic's score against theta_g),
    else the one given, else the shipped one."""
    if given == "raw" or not pushing:
        return ""
    return given or shipped


def _cmd_preafford_summary(args: argparse.Namespace) -> int:
    from afford_data.preafford import summary

    print(json.dumps(summary(args.dir), indent=1))
    return 0


def _cmd_bench_preafford(args: argparse.Namespace) -> int:
    from afford_eval import preafford_table2 as t2
    from afford_eval.runs import sha256_file

    if args.report:
        print(t2.write_report(args.report).read_text())
        return 0
    if args.out is None:
        raise ValueError("--out DIR is needed (or --report DIR to rebuild a report)")
    from afford_perception.preafford import weights_dir

    def shipped(name: str) -> str:
        # Relative to the working directory when inside it: the run's config (which a resumed
        # run must match) then names the same file in any clone, run from its root.
        path = weights_dir() / name
        rel = os.path.relpath(path)
        return str(path) if rel.startswith("..") else rel

    table3 = args.table == 3
    args.scenes = args.scenes or ([t2.TABLE3_SCENE] if table3 else list(t2.SCENES))
    args.categories = args.categories or list(
        t2.TRAIN + t2.TEST + (t2.EASY_TRAIN + t2.EASY_TEST if table3 else ()))
    args.methods = args.methods or list(t2.TABLE3_METHODS if table3 else t2.METHODS)
    args.model = args.model or shipped("grasp_critic.pt")
    if args.push_model is None and any(m in t2.PUSH_METHODS for m in args.methods):
        args.push_model = shipped("push_critic.pt")
    push = args.push_model or ""
    necessity = _necessity_choice(args.necessity, bool(push), shipped("necessity.json"))
    config = t2.Table2Config(
        model=args.model, model_sha256=sha256_file(Path(args.model)), rollouts=args.rollouts,
        push_model=push, push_model_sha256=sha256_file(Path(push)) if push else "",
        scenes=tuple(args.scenes), categories=tuple(args.categories), methods=tuple(args.methods),
        proposals=args.proposals, first_seed=args.first_seed, necessity=necessity,
        necessity_sha256=sha256_file(Path(necessity)) if necessity else "", videos=args.videos,
    )

    def progress(done: int, total: int, rec: dict[str, Any]) -> None:
        why = f" ({rec['error']})" if rec.get("error") else ""
        print(f"[{done}/{total}] {rec['scene']} {rec['category']} {rec['method']} seed {rec['seed']}: "
              f"{'ok' if rec['success'] else 'FAIL'}{why} {rec['wall_s']} s", flush=True)

    summary = t2.run(args.out, config, jobs=args.jobs, executor=args.executor, ray_address=args.ray_address,
                     command=args.command_line, progress=None if args.quiet else progress)
    print(f"{summary.ran} rollouts run, {summary.kept} kept from before, {summary.wall_s:.0f} s; "
          f"report: {summary.report}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from afford_data.demos import DemoConfig, generate

    config = DemoConfig(task_id=args.task, episodes=args.episodes, robot=args.robot,
                        first_seed=args.first_seed, max_attempts=args.max_attempts, fps=args.fps,
                        image_size=tuple(args.image_size), grounding=args.grounding,
                        use_videos=not args.images, randomize=args.randomize)

    def say(line: str) -> None:
        print(line, flush=True)

    report = generate(config, args.out, progress=None if args.quiet else say, repo_id=args.repo_id,
                      jobs=args.jobs, executor=args.executor, ray_address=args.ray_address)
    print(f"{report.out}: {report.episodes} episodes, {report.frames} frames; {report.failures} failed "
          f"attempts not kept {report.failure_stages or ''}; {report.kept_from_before} attempts kept "
          f"from before; {report.wall_s:.0f} s")
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from afford_data.merge import merge

    print(merge(args.datasets, args.out, repo_id=args.repo_id).line())
    return 0


def _cmd_robots(args: argparse.Namespace) -> int:
    from afford_core.robots import DEFAULT_ROBOT, ROBOTS
    from afford_sim.tasks import task_ids

    rows: list[dict[str, Any]] = []
    for name, robot in ROBOTS.items():
        g = robot.gripper
        rows.append({
            "name": name, "title": robot.title, "dof": robot.dof, "drive": robot.drive,
            "gripper": g.name, "stroke_m": g.max_width, "max_force_n": g.max_force,
            "tasks": len(task_ids(robot=name)), "default": name == DEFAULT_ROBOT,
        })
    if args.json:
        print(json.dumps(rows))
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        stroke_mm = r["stroke_m"] * 1000
        mark = " (default)" if r["default"] else ""
        print(f"{r['name']:<{width}} {r['title']}{mark}")
        hand = f"{r['gripper']} ({stroke_mm:.0f} mm, {r['max_force_n']:.0f} N)"
        print(f"{'':<{width}}  {r['dof']} joints, {hand}, driven by {r['drive']}, "
              f"validated on {r['tasks']} tasks")
    return 0


def _cmd_objects(args: argparse.Namespace) -> int:
    from afford_core.ontology import CATEGORIES
    from afford_sim import assets

    rows = []
    for name in assets.categories():
        cat = CATEGORIES[name]
        meta = assets.metadata(assets.make(name, 0))
        affs = "; ".join(f"{p}: {', '.join(a)}" for p, a in cat.affordances.items())
        rows.append(
            (
                name,
                ", ".join(cat.parts),
                "fixed" if cat.fixed else "free",
                "articulated" if cat.articulated else "",
                affs,
                meta,
            )
        )
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "category": r[0],
                        "parts": r[1].split(", "),
                        "base": r[2],
                        "articulated": bool(r[3]),
                        "affordances": CATEGORIES[r[0]].affordances,
                    }
                    for r in rows
                ]
            )
        )
        return 0
    width = max(len(r[0]) for r in rows)
    for name, parts, base, art, affs, _ in rows:
        print(f"{name:<{width}}  parts: {parts:<45} {base:<5} {art}")
        print(f"{'':<{width}}  affords: {affs}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from afford_sim import assets

    if args.weights is not None and args.query is None:
        raise ValueError("--weights only applies with --query (the learned model's heat map)")
    asset = assets.make(args.object, args.seed)
    if args.query is not None:
        return _show_query(args, asset)
    assets.render_labelled_cloud(asset, args.output)
    print(f"wrote {args.output} ({asset.name}: parts {', '.join(asset.info.parts)})")
    return 0


SHOW_POINTS = 4096


def _show_query(args: argparse.Namespace, asset: object) -> int:
    from afford_perception.affordance.source import LearnedSource
    from afford_sim import assets

    if not args.query.strip():
        raise ValueError("--query is empty; ask for a region, e.g. --query \"where you hold it\"")
    source = LearnedSource(weights=args.weights)
    # The same samples render_labelled_cloud draws (same n, default seed), so scores line up.
    points = asset.surface_cloud(SHOW_POINTS)[0]  # type: ignore[attr-defined]
    scores = source.query(points, args.query, category=args.object)
    assets.render_labelled_cloud(asset, args.output, scores=scores, n=SHOW_POINTS)  # type: ignore[arg-type]
    share = float((scores >= 0.5).mean())
    print(f"wrote {args.output} ({asset.name}: {args.query!r}, {share:.0%} of points >= 0.5, "  # type: ignore[attr-defined]
          f"weights {source.weights})")
    return 0


# --------------------------------------------------------------------------- afford affordance

AFFORDANCE_DATA = "data/affordance"


def _affordance_data(args: argparse.Namespace) -> int:
    from afford_data.affordance import AffordanceDataConfig, generate

    # --small: a data set for a quick look in minutes (a few shapes per category), not for the
    # weights that ship.
    # --categories: the seen categories (default every ontology category but the unseen ones), so
    # the data set a checkpoint was trained on can be built again from the list it records.
    seen: tuple[str, ...] = tuple(dict.fromkeys(args.categories or ()))  # empty: every category
    config = (AffordanceDataConfig(categories=seen, train_seeds=6, heldout_seeds=2, unseen_category_seeds=4,
                                   views_per_shape=2)
              if args.small else AffordanceDataConfig(categories=seen))
    report = generate(config, args.out, progress=not args.no_progress)
    counts = ", ".join(f"{s} {report.clouds[s]} clouds / {report.queries[s]} queries" for s in report.clouds)
    print(f"wrote {report.out_dir} in {report.seconds:.0f} s: {counts}")
    return 0


def _affordance_train(args: argparse.Namespace) -> int:
    from afford_perception.affordance.augment import YAW_AND_SCALE, AugmentConfig
    from afford_perception.affordance.model import AffordanceModelConfig, load_model
    from afford_perception.affordance.source import DEFAULT_WEIGHTS
    from afford_perception.affordance.train import TrainConfig, train

    steps = args.steps if args.steps is not None or args.minutes is not None else TrainConfig.steps
    # --init: the architecture is the checkpoint's (its weights must fit it).
    init = None if args.init is None else Path(args.init)
    model = AffordanceModelConfig() if init is None else load_model(init).config
    config = TrainConfig(data_dir=Path(args.data), out=Path(args.out or DEFAULT_WEIGHTS), steps=steps,
                         init=init, model=model,
                         minutes=args.minutes, seed=args.seed, threads=args.threads,
                         resample_phrasings=not args.stored_phrasings, command=args.command_line,
                         augment=args.augment != "none",
                         augmentation=YAW_AND_SCALE if args.augment == "yaw-scale" else AugmentConfig(),
                         **({} if args.category_dropout is None else
                            {"category_dropout": args.category_dropout}),
                         **({} if args.val_every is None else {"val_every": args.val_every}),
                         **({} if args.lr is None else {"lr": args.lr}))
    report = train(config, progress=not args.no_progress, log=lambda line: print(line, flush=True))
    print(f"wrote {report.out}: step {report.best_step} of {report.steps}, val_unseen_shapes mIoU "
          f"{report.best_val_miou:.3f}, {report.seconds / 60:.1f} min")
    return 0


def _affordance_independent(args: argparse.Namespace) -> int:
    from afford_data.independent_split import IndependentConfig, generate_independent

    entries = generate_independent(args.data, IndependentConfig(instances=args.instances, views=args.views,
                                                                seed=args.seed))
    for entry in entries.values():
        print(f"wrote {Path(args.data) / entry['file']}: {entry['clouds']} clouds, "
              f"{entry['queries']} queries, "
              f"categories {', '.join(entry['categories'])}; {entry['independent']['seconds']:.0f} s")
    return 0


def _affordance_eval(args: argparse.Namespace) -> int:
    from afford_perception.affordance.evaluate import HELDOUT_SPLITS, evaluate_sources

    splits = tuple(dict.fromkeys(args.split)) if args.split else HELDOUT_SPLITS
    results = evaluate_sources(args.data, sources=tuple(dict.fromkeys(args.sources)), splits=splits,
                               weights=args.weights, tell_category=not args.without_category)
    if args.json:
        print(json.dumps(results))
        return 0
    for split, by_source in results.items():
        affs = sorted({a for r in by_source.values() for a in r["per_affordance"]})
        print(f"{split}  (mIoU, threshold 0.5)")
        print(f"  {'source':<10} {'overall':>8} " + " ".join(f"{a:>12}" for a in affs))
        for name, r in by_source.items():
            cells = " ".join(f"{r['per_affordance'].get(a, float('nan')):>12.3f}" for a in affs)
            print(f"  {name:<10} {r['overall']:>8.3f} {cells}")
        for name, r in by_source.items():
            views = ", ".join(f"{k} {v:.3f}" for k, v in r.get("by_view", {}).items())
            print(f"  {name:<10} overall by kind of view: {views}")
        for name, r in by_source.items():
            cats = ", ".join(f"{k} {v:.3f}" for k, v in r.get("by_category", {}).items())
            print(f"  {name:<10} overall by category: {cats}")
    return 0


def _add_affordance(sub: argparse._SubParsersAction) -> None:
    from afford_perception.affordance.dataset import INDEPENDENT_QUERIES_SPLIT, INDEPENDENT_SPLIT, SPLITS

    aff = sub.add_parser("affordance", help="the learned affordance model: data, train, eval")
    asub = aff.add_subparsers(dest="affordance_command", required=True)
    data = asub.add_parser("data", help="generate the training and held-out splits")
    data.add_argument("--out", default=AFFORDANCE_DATA, help=f"output folder (default {AFFORDANCE_DATA})")
    data.add_argument("--small", action="store_true", help="a few shapes per category (quick look)")
    data.add_argument("--categories", nargs="+", default=None, metavar="CATEGORY",
                      help="seen categories to generate (default: every ontology category but the unseen "
                           "pot and scoop); a checkpoint lists the ones it was trained on")
    data.add_argument("--no-progress", action="store_true", help="no progress bar")
    data.set_defaults(func=_affordance_data)
    tr = asub.add_parser("train", help="train the model; the best checkpoint by validation mIoU is kept")
    tr.add_argument("--data", default=AFFORDANCE_DATA, help=f"data set folder (default {AFFORDANCE_DATA})")
    tr.add_argument("--minutes", type=float, default=None, help="wall-clock budget in minutes")
    tr.add_argument("--steps", type=int, default=None, help="step budget (default 4000 without --minutes)")
    tr.add_argument("--out", default=None, help="checkpoint path (default: the shipped weights path)")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    tr.add_argument("--stored-phrasings", action="store_true",
                    help="ask each query with the wording the data set stored, instead of one drawn "
                         "each step from the affordance's whole training pool")
    tr.add_argument("--category-dropout", type=float, default=None,
                    help="share of clouds shown as of an unknown category, so the model also answers "
                         "without one (default: TrainConfig.category_dropout, 0.2)")
    tr.add_argument("--val-every", type=int, default=None,
                    help="steps between validations (default: TrainConfig.val_every, 250)")
    tr.add_argument("--augment", choices=("wide", "yaw-scale", "none"), default="wide",
                    help="how each training cloud is changed at every step: wide (shape changes and "
                         "depth-camera faults, the default), yaw-scale (the first models' yaw and 5%% "
                         "scale), none")
    tr.add_argument("--lr", type=float, default=None,
                    help="peak learning rate, cosine-decayed over the budget (default: TrainConfig.lr, 2e-3)")
    tr.add_argument("--init", default=None, metavar="CHECKPOINT",
                    help="start from this checkpoint's weights (same architecture) instead of random ones, "
                         "e.g. the shipped model taught the categories it lacks")
    tr.add_argument("--no-progress", action="store_true", help="no progress lines")
    tr.set_defaults(func=_affordance_train)
    ev = asub.add_parser("eval", help="mIoU per affordance of each source on the held-out splits")
    ev.add_argument("--data", default=AFFORDANCE_DATA, help=f"data set folder (default {AFFORDANCE_DATA})")
    ev.add_argument("--split", action="append",
                    choices=(*SPLITS, INDEPENDENT_SPLIT, INDEPENDENT_QUERIES_SPLIT),
                    help=f"split, repeatable (default: the held-out splits; {INDEPENDENT_SPLIT}: objects "
                         f"made by another author, {INDEPENDENT_QUERIES_SPLIT}: the same asked in another "
                         "author's free text, both written by `afford affordance independent`)")
    ev.add_argument("--sources", nargs="+", default=["learned", "geometric", "oracle", "chance"],
                    choices=[*_grounding_sources(),
                             *(f"{s}_text" for s in _grounding_sources()), "chance"],
                    help="sources to score (default: learned geometric oracle chance; chance is the "
                         "floor: a uniform guess among the object's parts and 'nothing here'; a part "
                         "source + _text, e.g. geometric_text, grounds the affordance read from each "
                         "query's words instead of the one it is labelled with; learned_text: the model "
                         "as a part source, as the graph uses it)")
    ev.add_argument("--weights", default=None,
                    help="learned model checkpoint (default: $AFFORD_AFFORDANCE_WEIGHTS or the shipped file)")
    ev.add_argument("--without-category", action="store_true",
                    help="do not tell the learned model what each object is (the part sources always "
                         "know it): its score on bare clouds")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.set_defaults(func=_affordance_eval)
    ind = asub.add_parser("independent", help=f"write the {INDEPENDENT_SPLIT} split (objects made by another "
                                              "author, single noisy views, never trained on) and "
                                              f"{INDEPENDENT_QUERIES_SPLIT} (the same asked in free text)")
    ind.add_argument("--data", default=AFFORDANCE_DATA,
                     help=f"folder to add it to (a data set's, or a new one; default {AFFORDANCE_DATA})")
    ind.add_argument("--instances", type=int, default=8, help="objects per category (default 8)")
    ind.add_argument("--views", type=int, default=3, help="partial views per object (default 3)")
    ind.add_argument("--seed", type=int, default=0)
    ind.set_defaults(func=_affordance_independent)


# --------------------------------------------------------------------------- afford eval

VIDEO_METHOD = "afford_L4_feasibility_product"


def _eval_run(args: argparse.Namespace) -> int:
    import dataclasses
    import functools

    from afford_eval import runs
    from afford_eval.candidate_sets import REFERENCE_PLANNER, CandidateSetConfig
    from afford_eval.counterfactual import EvalConfig, evaluate_scene
    from afford_eval.methods import all_method_names
    from afford_eval.report import build_report
    from afford_eval.suites import STANDARD_SUITES, SUITES
    from afford_planner.selection import RANK_TERMS
    from afford_planner.terms import TermsConfig

    suites = list(STANDARD_SUITES) if "all" in args.suite else list(dict.fromkeys(args.suite))
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite {unknown[0]!r}; suites: {', '.join(SUITES)} (or all)")
    methods = list(dict.fromkeys(args.methods)) if args.methods else all_method_names()
    bad = [m for m in methods if m not in all_method_names()]
    if bad:
        raise ValueError(f"unknown method {bad[0]!r}; methods: {', '.join(all_method_names())}")
    out = Path(args.out or f"runs/eval-{'+'.join(suites)}-n{args.scenes}-{args.grounding}")
    videos = tuple((VIDEO_METHOD, k) for k in range(min(args.videos, args.scenes)) if VIDEO_METHOD in methods)
    # Resolved before the run: every threshold and weight explicit, none left to a default that
    # a later code change could move under a stored result.
    ev = EvalConfig(
        grounding=args.grounding,
        methods=tuple(methods),
        weights={k: 1.0 for k in RANK_TERMS},
        candidate_set=CandidateSetConfig(
            terms=TermsConfig(), reference=None if args.no_reference_planner else REFERENCE_PLANNER),
        video_dir=str((out / "videos").resolve()) if videos or args.film_selected else None,
        video=videos,
        film_selected=args.film_selected,
    )
    # The stored config names the video folder relative to the run, so a moved run still matches.
    stored = {**dataclasses.asdict(ev), "video_dir": "videos" if ev.video_dir else None}
    config = runs.RunConfig(tuple(suites), args.scenes, tuple(methods), args.grounding, stored)
    summary = runs.execute(
        out,
        config,
        functools.partial(evaluate_scene, config=ev),
        command=args.command_line,
        jobs=args.jobs,
        progress=not args.no_progress,
    )
    for line in summary.redone:
        print(f"redone: {line}", file=sys.stderr)
    report = build_report(out)
    print(
        f"run {out}: {summary.evaluated} scenes evaluated, {summary.skipped} kept from before, "
        f"{summary.seconds:.0f} s; report {report}"
    )
    return 0


def _eval_report(args: argparse.Namespace) -> int:
    from afford_eval.report import build_report
    from afford_eval.runs import RunError, is_finished

    if not Path(args.run_dir).is_dir():
        raise RunError(f"{args.run_dir} does not exist")
    path = build_report(args.run_dir)
    note = "" if is_finished(args.run_dir) else " (run not finished: partial report)"
    print(f"wrote {path}{note}")
    return 0


def _eval_verify(args: argparse.Namespace) -> int:
    from afford_eval.runs import verify

    problems = verify(args.run_dir)
    for p in problems:
        print(f"afford: verify: {p}", file=sys.stderr)
    if problems:
        msg = f"{args.run_dir} failed verification ({len(problems)} problems)"
        print(f"afford: error: {msg}", file=sys.stderr)
        return 1
    print(f"{args.run_dir}: intact (every file matches its manifest hash)")
    return 0


def _eval_replay(args: argparse.Namespace) -> int:
    from afford_eval.replay import write_replay

    path = write_replay(args.run_dir, args.suite, args.scene, args.output)
    print(f"wrote {path}")
    return 0


def _add_eval(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser(
        "eval",
        help="counterfactual evaluation runs: run, report, verify, replay",
        description="`afford eval --suite X ...` is short for `afford eval run --suite X ...`.",
    )
    esub = ev.add_subparsers(dest="eval_command", required=True)
    run = esub.add_parser("run", help="run (or resume) an evaluation into a run directory, then report")
    run.add_argument("--suite", action="append", required=True,
                     help="suite, repeatable; 'all': the five standard suites (not gate_edge, gate_clutter)")
    run.add_argument("--scenes", type=int, default=20, help="scenes per suite (default 20)")
    run.add_argument("--methods", nargs="+", default=None, help="methods to compare (default: all)")
    run.add_argument("--grounding", default="oracle", choices=_grounding_sources())
    run.add_argument(
        "--out", default=None, help="run directory (default runs/eval-<suites>-n<N>-<grounding>)"
    )
    run.add_argument("--jobs", type=int, default=1, help="scenes evaluated in parallel (processes)")
    run.add_argument("--videos", type=int, default=2, help="scenes per suite whose L4 rollout is filmed")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--film-selected", action="store_true",
                     help="film every rollout some method selected while it executes (videos/, 320x240, "
                          "10 fps), and check each against the same candidate executed without the camera")
    run.add_argument("--no-reference-planner", action="store_true",
                     help="do not retry the candidates the default planner could not plan with the reference "
                          "planner (BKPIECE1, 5 s, more IK restarts); faster, but a candidate then counts as "
                          "unexecutable on the project's planner alone")
    run.set_defaults(func=_eval_run)
    rep = esub.add_parser("report", help="rebuild a run's report from its raw scene records")
    rep.add_argument("run_dir")
    rep.set_defaults(func=_eval_report)
    ver = esub.add_parser("verify", help="check every file of a finished run against its manifest")
    ver.add_argument("run_dir")
    ver.set_defaults(func=_eval_verify)
    rpl = esub.add_parser("replay", help="write a static HTML page replaying one scene")
    rpl.add_argument("run_dir")
    rpl.add_argument("--suite", required=True)
    rpl.add_argument("--scene", type=int, required=True)
    rpl.add_argument("-o", "--output", default="replay.html")
    rpl.set_defaults(func=_eval_replay)


# --------------------------------------------------------------------------- afford policy


def _policy_eval(args: argparse.Namespace) -> int:
    from afford_policy.rollout import evaluate, load_records, prepare

    plan, make_policy, reference = prepare(
        args.task, args.episodes, policy_dir=args.policy, replay_dir=args.replay, first_seed=args.first_seed,
        max_seconds=args.max_seconds, videos=args.videos, gripper=args.gripper,
        interpolation=args.interpolation, randomize=args.randomize, tokenizer=args.tokenizer)
    parts = Path(args.policy or ".").resolve().parts
    # lerobot-train's OUTPUT/checkpoints/STEP/pretrained_model -> OUTPUT-STEP
    trained = len(parts) >= 4 and parts[-1] == "pretrained_model" and parts[-3] == "checkpoints"
    kind = "replay" if args.replay else f"{parts[-4]}-{parts[-2]}" if trained else parts[-1]
    out = Path(args.out or f"runs/policy-{args.task}-{kind}-s{args.first_seed}-n{args.episodes}")

    def say(line: str) -> None:
        print(line, flush=True)

    report = evaluate(out, plan, make_policy, progress=None if args.quiet else say, reference=reference)
    rows = [r for r in load_records(out) if int(r["seed"]) in set(plan.seeds)]
    print(f"{out}: {sum(1 for r in rows if r['success'])}/{len(rows)} episodes succeeded; report {report}")
    return 0


def _policy_train(args: argparse.Namespace) -> int:
    import shlex
    import subprocess

    from afford_policy.training import lerobot_train_command, pretrained_dir

    cmd = lerobot_train_command(args.data, args.out, policy=args.policy, steps=args.steps,
                                batch_size=args.batch_size, workers=args.workers, save_every=args.save_every,
                                log_every=args.log_every, extra=args.extra)
    print("$ " + shlex.join(cmd), flush=True)
    code = subprocess.call(cmd)
    if code == 0:
        print(f"policy: {pretrained_dir(args.out)} (afford policy eval|afford task --policy)")
    return code


def _add_policy(sub: argparse._SubParsersAction) -> None:
    pol = sub.add_parser("policy", help="visuomotor policies: training with LeRobot, closed-loop evaluation "
                         "in the batch world (docs/demonstrations.md)")
    psub = pol.add_subparsers(dest="policy_command", required=True)
    ev = psub.add_parser("eval", help="run a LeRobot policy (or replay a dataset) in closed loop on a task's "
                         "scenes; resumable; writes one JSON record per episode and report.md")
    src = ev.add_mutually_exclusive_group(required=True)
    src.add_argument("--policy", metavar="DIR", default=None,
                     help="a LeRobot pretrained policy directory (ACT, Diffusion Policy, Pi 0.5), e.g. "
                          "OUTPUT/checkpoints/last/pretrained_model")
    src.add_argument("--replay", metavar="DATASET_DIR", default=None,
                     help="replay an `afford generate` dataset's episodes on their own seeds (the "
                          "harness's control)")
    ev.add_argument("--task", required=True, help="task id, see `afford tasks`")
    ev.add_argument("--tokenizer", metavar="DIR", default=None,
                    help="Pi 0.5: the local directory of its PaliGemma tokenizer (default: DIR/tokenizer "
                         "inside the policy, else $AFFORD_PI05_TOKENIZER)")
    ev.add_argument("--episodes", type=int, required=True, help="episodes to run")
    ev.add_argument("--first-seed", type=int, default=0,
                    help="first scene seed (--policy: seeds S..S+N-1; --replay: the dataset's episodes "
                         "from S)")
    ev.add_argument("--out", default=None, help="run directory; the same command resumes it "
                    "(default runs/policy-<task>-<replay|policy>-s<S>-n<N>)")
    ev.add_argument("--videos", type=int, default=0, help="film the first K episodes (front camera)")
    ev.add_argument("--max-seconds", type=float, default=None,
                    help="control time per episode, simulated s (default: 2x the dataset's longest episode)")
    ev.add_argument("--gripper", choices=("blocking", "async"), default="blocking",
                    help="a gripper command waits for the fingers (default, as the scripted skill) or not")
    ev.add_argument("--interpolation", choices=("linear", "hold"), default="linear",
                    help="joint setpoint over a control period: linear from the last target (default) "
                         "or held")
    ev.add_argument("--randomize", default="none", metavar="AXES", help=_RANDOMIZE_HELP)
    ev.add_argument("--quiet", action="store_true", help="no line per episode")
    ev.set_defaults(func=_policy_eval)
    tr = psub.add_parser("train", help="train ACT or Diffusion Policy on an `afford generate` dataset with "
                         "LeRobot's lerobot-train, offline on the CPU (prints the command it runs)")
    tr.add_argument("--data", required=True, help="the dataset directory")
    tr.add_argument("--out", required=True, help="the run directory (must not exist)")
    tr.add_argument("--policy", choices=("act", "diffusion"), default="act")
    tr.add_argument("--steps", type=int, default=1000)
    tr.add_argument("--batch-size", type=int, default=8)
    tr.add_argument("--workers", type=int, default=2, help="data-loader processes (default 2)")
    tr.add_argument("--save-every", type=int, default=None,
                    help="checkpoint every N steps (default: at the end)")
    tr.add_argument("--log-every", type=int, default=50)
    tr.add_argument("extra", nargs="*", help="more lerobot-train flags after --, e.g. --policy.chunk_size=20")
    tr.set_defaults(func=_policy_train)


def _eval_alias(argv: list[str]) -> list[str]:
    """`afford eval --suite ...` -> `afford eval run --suite ...` (help flags excepted)."""
    if len(argv) >= 2 and argv[0] == "eval" and argv[1].startswith("-") and argv[1] not in ("-h", "--help"):
        return ["eval", "run", *argv[1:]]
    return argv


def _grounding_sources() -> list[str]:
    from afford_perception.grounding import available_sources

    return available_sources()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="afford", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a task (sentence or id) through the spine in the batch world")
    run.add_argument("sentence", nargs="?", default="", help='e.g. "hang the mug on the rack"')
    run.add_argument("--task", default=None, help="task id (`afford tasks`); alone, its instruction is used")
    run.add_argument("--seed", type=int, default=None, help="scene and object seed (default 0)")
    run.add_argument(
        "--grounding",
        default=None,
        choices=_grounding_sources(),
        help="where the grasp region comes from (default: oracle)",
    )
    run.add_argument("--video", default=None,
                     help="write an MP4 of the execution here, its settings beside it (.config.yaml)")
    run.add_argument("--robot", default=None, help="the arm (see `afford robots`; default fr3)")
    run.add_argument("--allow-unvalidated-robot", action="store_true",
                     help="run a task on a robot it is not validated on (`afford tasks` lists them)")
    run.add_argument("--randomize", default=None, metavar="AXES", help=_RANDOMIZE_HELP)
    run.add_argument("--json", action="store_true", help="print one JSON object instead of a report")
    run.add_argument("--config", default=None, help="a YAML file of settings (SpineConfig's fields)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="one setting, dotted, e.g. --set selection.combination=weighted_sum (repeatable)")
    run.add_argument("--print-config", action="store_true", help="print the resolved settings; run nothing")
    run.set_defaults(func=_cmd_run)

    tasks = sub.add_parser("tasks", help="list the registered tasks: id, tier, skill, robots, instruction")
    tasks.add_argument("--tier", choices=["easy", "medium", "hard"], default=None)
    tasks.add_argument("--robot", default=None, help="only tasks validated on this robot")
    tasks.add_argument("--json", action="store_true")
    tasks.add_argument("--benchmark", action="store_true",
                       help="AffordSim's 50 benchmark tasks and which task runs each here")
    tasks.set_defaults(func=_cmd_tasks)

    bench = sub.add_parser("bench", help="benchmark protocols (AffordSim's Table 1)")
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    t1 = bsub.add_parser("table1", help="every benchmark task, the same scenes, five grasp sources; "
                         "resumable (docs/benchmark.md)")
    t1.add_argument("--tier", choices=["easy", "medium", "hard", "all"], default="all")
    t1.add_argument("--tasks", nargs="+", default=None, help="task ids instead of a tier's built tasks")
    from afford_eval.table1 import SOURCES

    t1.add_argument("--sources", nargs="+", default=list(SOURCES), choices=list(SOURCES))
    t1.add_argument("--rollouts", type=int, default=20, help="scenes per task (default 20)")
    t1.add_argument("--first-seed", type=int, default=0)
    t1.add_argument("--robot", default="fr3")
    t1.add_argument("--randomize", default="none", metavar="AXES", help=_RANDOMIZE_HELP)
    t1.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="rollouts in parallel (default: the cores)")
    t1.add_argument("--executor", choices=["local", "ray"], default="local",
                    help="local processes, or Ray (a local instance of --jobs CPUs, or --ray-address)")
    t1.add_argument("--ray-address", default=None, help="a running Ray cluster, e.g. ray://head:10001")
    t1.add_argument("--out", default=None, help="run directory; an existing one of the same run is resumed")
    t1.add_argument("--report", default=None, metavar="DIR", help="rebuild DIR's report from its records")
    t1.add_argument("--quiet", action="store_true", help="no line per rollout")
    t1.set_defaults(func=_cmd_table1)
    from afford_eval import preafford_table2 as t2

    pb = bsub.add_parser("preafford", help="PreAfford's Tables II and III: pre-grasp scenes, methods, grasp "
                         "success, the necessity check; "
                         "resumable (docs/preafford.md)")
    pb.add_argument("--model", default=None, help="the grasping module's checkpoint (preafford train-grasp; "
                    "default: the shipped one)")
    pb.add_argument("--push-model", default=None, help="the pre-grasping module's checkpoint (preafford "
                    "train-push; default: the shipped one)")
    pb.add_argument("--rollouts", type=int, default=10, help="scenes per (scene kind, category)")
    pb.add_argument("--table", type=int, choices=[2, 3], default=2,
                    help="2: every scene, the hard categories, every method (default); 3: the necessity "
                    "check on easy and hard categories in the multi scene (the seed's Table III), with the "
                    "direct grasp's chance and ceiling; --scenes, --categories, --methods override either")
    pb.add_argument("--scenes", nargs="+", default=None, choices=list(t2.SCENES))
    every = list(t2.TRAIN + t2.TEST + t2.EASY_TRAIN + t2.EASY_TEST)
    pb.add_argument("--categories", nargs="+", default=None, choices=every,
                    help="default: the hard ones (table 2), all (table 3)")
    pb.add_argument("--methods", nargs="+", default=None, choices=list(t2.METHODS))
    pb.add_argument("--proposals", type=int, default=64)
    pb.add_argument("--necessity", default=None, metavar="FILE|raw",
                    help="the necessity check's calibration (preafford calibrate; default: the shipped one, "
                    "fitted for the shipped critic); raw: compare the critic's score itself with theta_g")
    pb.add_argument("--first-seed", type=int, default=500_000)
    pb.add_argument("--videos", type=int, default=0, metavar="K",
                    help="film the first K seeds of every (scene, category, method) but direct_ceiling: "
                    "videos/<scene>/<category>/<method>/<seed>.mp4 in the run directory")
    pb.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    pb.add_argument("--executor", choices=["local", "ray"], default="local")
    pb.add_argument("--ray-address", default=None)
    pb.add_argument("--out", default=None, help="run directory; an existing one of the same run is resumed")
    pb.add_argument("--report", default=None, metavar="DIR", help="rebuild DIR's report from its records")
    pb.add_argument("--quiet", action="store_true")
    pb.set_defaults(func=_cmd_bench_preafford)

    pa = sub.add_parser("preafford", help="pre-grasp pushing (PreAfford): interaction data "
                        "(docs/preafford.md)")
    pasub = pa.add_subparsers(dest="preafford_command", required=True)
    from afford_data.preafford import MODULES, TRAIN_SCENES
    from afford_sim.preafford.objects import GENERATORS, TRAIN_CATEGORIES
    from afford_sim.preafford.scenes import SCENES

    col = pasub.add_parser("collect", help="collect grasp or push interactions in the pre-grasp scenes; "
                           "resumable")
    col.add_argument("--module", choices=list(MODULES), required=True)
    col.add_argument("--episodes", type=int, required=True, help="scenes per (scene kind, category)")
    col.add_argument("--scenes", nargs="+", default=list(TRAIN_SCENES), choices=list(SCENES))
    col.add_argument("--categories", nargs="+", default=list(TRAIN_CATEGORIES), choices=sorted(GENERATORS))
    col.add_argument("--first-seed", type=int, default=0)
    col.add_argument("--second-state", choices=["sampled", "feature"], default="sampled",
                     help="grasp episodes: the second state after a sampled push, or after a scripted "
                     "push towards a feature (graspable states, as the seed places objects on ledges)")
    col.add_argument("--proposer", choices=["privileged", "cloud"], default="privileged",
                     help="grasp episodes: tries drawn on the exact surface with the simulator's pose, or on "
                     "the observed cloud as the methods draw them")
    col.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="episodes in parallel")
    col.add_argument("--executor", choices=["local", "ray"], default="local")
    col.add_argument("--ray-address", default=None, help="a running Ray cluster, e.g. ray://head:10001")
    col.add_argument("--out", required=True, help="collection directory; an existing one of the same "
                     "config resumes")
    col.add_argument("--quiet", action="store_true", help="no line per episode")
    col.set_defaults(func=_cmd_preafford_collect)
    ptg = pasub.add_parser("train-grasp", help="train the grasping module's critic on a grasp collection, "
                           "keeping the best checkpoint on a validation collection")
    ptg.add_argument("--data", required=True, nargs="+", help="training collections (collect --module grasp)")
    ptg.add_argument("--val", required=True, help="validation collection (other categories)")
    ptg.add_argument("--out", required=True, help="checkpoint file to write")
    ptg.add_argument("--epochs", type=int, default=20)
    ptg.add_argument("--batch", type=int, default=16, help="states per step")
    ptg.add_argument("--seed", type=int, default=0)
    ptg.add_argument("--blocked-weight", type=float, default=1.0,
                     help="relative weight of drawing a blocked try into a batch (default 1: as collected)")
    ptg.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ptg.set_defaults(func=_cmd_preafford_train_grasp)
    peg = pasub.add_parser("eval-grasp", help="the critic's AUC, average precision and top-ranked grasp's "
                           "success (beside chance and ceiling) on a grasp collection")
    peg.add_argument("--model", required=True)
    peg.add_argument("--data", required=True)
    peg.add_argument("--threads", type=int, default=None)
    peg.set_defaults(func=_cmd_preafford_eval_grasp)
    ptp = pasub.add_parser("train-push", help="train the pre-grasping module's critic on a push collection "
                           "(measured grasp scores), keeping the best checkpoint on a validation collection")
    ptp.add_argument("--data", required=True)
    ptp.add_argument("--val", required=True)
    ptp.add_argument("--out", required=True)
    ptp.add_argument("--epochs", type=int, default=30)
    ptp.add_argument("--batch", type=int, default=16)
    ptp.add_argument("--seed", type=int, default=0)
    ptp.add_argument("--threads", type=int, default=None)
    ptp.set_defaults(func=_cmd_preafford_train_push)
    pcal = pasub.add_parser("calibrate", help="fit the necessity check's calibration (c_2 to the chance the "
                            "object is graspable where it lies) on a bench preafford run of direct_ceiling "
                            "on the training categories")
    pcal.add_argument("--run", required=True, help="an `afford bench preafford` run directory holding "
                      "direct_ceiling rollouts of training categories only")
    pcal.add_argument("--out", required=True, help="calibration file to write (JSON)")
    pcal.set_defaults(func=_cmd_preafford_calibrate)
    prun = pasub.add_parser("run", help="one seeded pre-grasp scene and one method, every decision "
                            "printed (the check's c_2, each push chosen and what it did, the grasp); exit 0 "
                            "lifted, 3 not")
    from afford_eval import preafford_table2 as t2

    prun.add_argument("--category", required=True, choices=sorted(GENERATORS))
    prun.add_argument("--scene", default="multi", choices=list(SCENES))
    prun.add_argument("--seed", type=int, default=0)
    prun.add_argument("--method", default="preafford", choices=list(t2.METHODS))
    prun.add_argument("--model", default=None, help="grasping critic (default: the shipped one)")
    prun.add_argument("--push-model", default=None, help="pre-grasping critic (default: the shipped one)")
    prun.add_argument("--necessity", default=None, metavar="FILE|raw",
                      help="the necessity check's calibration (default: the shipped one)")
    prun.add_argument("--proposals", type=int, default=64)
    prun.add_argument("--video", default=None, metavar="FILE.mp4", help="film the rollout to this file")
    prun.add_argument("--json", action="store_true", help="the rollout's record as JSON")
    prun.set_defaults(func=_cmd_preafford_run)
    pst = pasub.add_parser("summary", help="counts per scene of a collection")
    pst.add_argument("dir")
    pst.set_defaults(func=_cmd_preafford_summary)

    gen = sub.add_parser("generate", help="record the scripted pipeline's successful rollouts of a task as a "
                         "LeRobot dataset (docs/demonstrations.md)")
    gen.add_argument("--task", required=True, help="task id, see `afford tasks`")
    gen.add_argument("--episodes", type=int, required=True, help="successful episodes to keep")
    gen.add_argument("--out", required=True, help="dataset directory (must not exist; a killed run resumes "
                     "from OUT.staging)")
    gen.add_argument("--robot", default="fr3")
    gen.add_argument("--first-seed", type=int, default=0)
    gen.add_argument("--max-attempts", type=int, default=None, help="default: 3 per episode")
    gen.add_argument("--fps", type=int, default=10)
    gen.add_argument("--image-size", type=int, nargs=2, default=[128, 128], metavar=("W", "H"))
    gen.add_argument("--grounding", default="oracle", help="grounding of the scripted pipeline")
    gen.add_argument("--images", action="store_true", help="store PNG frames instead of h264 video")
    gen.add_argument("--randomize", default="none", metavar="AXES", help=_RANDOMIZE_HELP)
    gen.add_argument("--repo-id", default=None, help="the dataset's repo id (default afford/<task>)")
    gen.add_argument("--jobs", type=int, default=1, help="attempts in parallel (default 1)")
    gen.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="local processes, or Ray (a local instance of --jobs CPUs, or --ray-address)")
    gen.add_argument("--ray-address", default=None, help="a running Ray cluster, e.g. ray://head:10001")
    gen.add_argument("--quiet", action="store_true", help="no line per episode")
    gen.set_defaults(func=_cmd_generate)
    mrg = sub.add_parser("merge", help="merge `afford generate` datasets of one task made apart (other "
                         "machines, other --first-seed ranges) into one LeRobot dataset "
                         "(docs/demonstrations.md)")
    mrg.add_argument("datasets", nargs="+", metavar="DATASET",
                     help="two or more dataset directories, in order")
    mrg.add_argument("--out", required=True, help="the merged dataset's directory (must not exist)")
    mrg.add_argument("--repo-id", default=None, help="its repo id (default afford/<task>)")
    mrg.set_defaults(func=_cmd_merge)

    robots = sub.add_parser("robots", help="list the registered robots (arms and grippers)")
    robots.add_argument("--json", action="store_true")
    robots.set_defaults(func=_cmd_robots)

    objs = sub.add_parser("objects", help="list the procedural asset library")
    objs.add_argument("--json", action="store_true")
    objs.set_defaults(func=_cmd_objects)

    show = sub.add_parser("show", help="draw an object's labelled surface cloud to a PNG")
    show.add_argument("object", help="category name, see `afford objects`")
    show.add_argument("--seed", type=int, default=0)
    show.add_argument("-o", "--output", default="object.png")
    show.add_argument("--query", default=None,
                      help='draw the learned model\'s heat for a phrase instead, e.g. "the spout"')
    show.add_argument("--weights", default=None, help="learned model checkpoint for --query")
    show.set_defaults(func=_cmd_show)

    _add_eval(sub)
    _add_affordance(sub)
    _add_policy(sub)
    from afford_bringup.launcher import register_cli as add_bringup
    from afford_ros import graph_cli

    add_bringup(sub)
    graph_cli.add_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    _setup_env()
    argv = _eval_alias(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    args.command_line = shlex.join(["afford", *argv])
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("afford: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `afford tasks | head`: the reader has gone, nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, KeyError, RuntimeError, FileNotFoundError, FileExistsError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"afford: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
