"""Counterfactual execution of a scene: every candidate from one saved state, then every method.

``evaluate_scene`` builds the scene's candidate set, saves the world state, applies the
methods (they see the candidates' terms and the perception context, never an outcome), executes
every candidate from that identical state through the task's skill to the task's stage checks
(filming the ones some method selected, when asked), and re-executes a sample to measure
determinism. The scene record it returns is the contract with
the run directories and the report (see :func:`evaluate_scene` for its schema).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from afford_core.grasp import GraspCandidate
from afford_eval.candidate_sets import CandidateSetConfig, build_candidate_set, scene_seed
from afford_eval.methods import MethodContext, all_method_names, apply_methods, in_mask
from afford_eval.suites import sentence_for, task_for_scene
from afford_planner.selection import SelectionConfig

NO_PLAN = "no plan"


@dataclass(frozen=True)
class EvalConfig:
    """Options of a counterfactual evaluation, fixed before the run.

    Attributes:
        grounding: Grounding source of the regions (``oracle`` or ``geometric``).
        methods: Methods applied to every set; empty: all registered methods.
        determinism_samples: Planned candidates per scene executed a second time from the same
            state, to measure how often the simulator disagrees with itself.
        weights: Weighted-sum weight per rank term (unnamed terms weigh 1.0).
        candidate_set: How the candidate set is built (generic sampler, term parameters).
        video_dir: Where rollout videos go; None records none.
        video: ``(method, scene_index)`` pairs whose selected candidate's rollout is recorded
            (again, from the same saved state, with frames from the ``video`` camera).
        video_fps: Frames per second of the videos.
        film_selected: Film every rollout some method selected, *while it executes*: the
            rollout whose outcome the methods are scored on is the one on film. Each filmed
            candidate is then executed once more without the camera, and the record says
            whether that agrees with the filmed outcome (filming must not change what happens).
            Needs ``video_dir``.
        film_fps: Frames per second of those films.
        film_scale: Every ``film_scale``-th pixel of the video camera's rows and columns is
            kept (2: 320 x 240 from 640 x 480), so a run's films stay small enough to keep.
    """

    grounding: str = "oracle"
    methods: tuple[str, ...] = ()
    determinism_samples: int = 2
    weights: dict[str, float] = field(default_factory=dict)
    candidate_set: CandidateSetConfig = field(default_factory=CandidateSetConfig)
    video_dir: str | None = None
    video: tuple[tuple[str, int], ...] = ()
    video_fps: int = 20
    film_selected: bool = False
    film_fps: int = 10
    film_scale: int = 2

    def __post_init__(self) -> None:
        from afford_perception.grounding import available_sources

        if self.grounding not in available_sources():
            raise ValueError(f"unknown grounding {self.grounding!r}; known: {available_sources()}")
        unknown = [m for m in self.methods if m not in all_method_names()]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; known: {all_method_names()}")
        if self.determinism_samples < 0:
            raise ValueError(f"determinism_samples must be >= 0, got {self.determinism_samples}")
        if self.video and self.video_dir is None:
            raise ValueError("video rollouts were requested but video_dir is None")
        bad = [m for m, _ in self.video if m not in all_method_names()]
        if bad:
            raise ValueError(f"video names unknown methods {bad}")
        if self.video_fps < 1 or self.film_fps < 1 or self.film_scale < 1:
            raise ValueError(f"video_fps, film_fps and film_scale must be >= 1, got {self.video_fps}, "
                             f"{self.film_fps}, {self.film_scale}")
        if self.film_selected and self.video_dir is None:
            raise ValueError("film_selected needs video_dir")
        SelectionConfig(weights=dict(self.weights))  # the same checks as every ranking will make

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready resolved form, for a run's config file."""
        return {
            "grounding": self.grounding,
            "methods": self.method_names,
            "determinism_samples": self.determinism_samples,
            "weights": SelectionConfig(weights=dict(self.weights)).as_dict()["weights"],
            "candidate_set": self.candidate_set.as_dict(),
            "video_dir": self.video_dir,
            "video": [list(v) for v in self.video],
            "video_fps": self.video_fps,
            "film_selected": self.film_selected,
            "film_fps": self.film_fps,
            "film_scale": self.film_scale,
        }

    @property
    def method_names(self) -> list[str]:
        return list(self.methods) if self.methods else all_method_names()


def execute_candidate(
    ep: Any, state: Any, grasp: GraspCandidate, frames: list[np.ndarray] | None = None, fps: int = 20
) -> dict[str, Any]:
    """Execute ``grasp`` from ``state`` through every stage of the task's skill.

    Returns the outcome ``{"success", "stages": {name: bool}, "failed_stage", "detail"}``:
    stages run in order and stop at the first that fails its check or cannot run; stages not
    reached are recorded False. A candidate without a collision-free plan fails at stage
    ``"plan"`` with detail ``"no plan"``. When ``frames`` is a list, ``video`` camera frames are
    appended to it.
    """
    from afford_pipeline.execution import WorldExecutor
    from afford_planner.skills import stage_iter

    if grasp.index not in ep.plans:
        return {"success": False, "stages": {}, "failed_stage": "plan", "detail": NO_PLAN}
    ep.restart(state)
    ep.task.begin(ep.world)
    executor = WorldExecutor(ep.world, frames, fps, camera="video" if frames is not None else None)
    stages = ep.stages(grasp, executor)
    result: dict[str, bool] = {}
    failed, detail = None, ""
    try:
        executor.frame()
        for report in stage_iter(stages):
            if not report.executed:
                result[report.name], failed, detail = False, report.name, report.reason
                break
            check = ep.task.check(report.name, ep.world)
            ok = True if check is None else bool(check.ok)
            result[report.name] = ok
            if not ok:
                failed, detail = report.name, check.detail if check is not None else ""
                break
    except Exception as err:  # a crash in one rollout is that candidate's failure, not the scene's
        name = next((n for n, _ in stages if n not in result), "unknown")
        result[name], failed, detail = False, name, f"error: {type(err).__name__}: {err}"
    for name, _ in stages:
        result.setdefault(name, False)
    return {"success": failed is None, "stages": result, "failed_stage": failed, "detail": detail}


def _candidate_record(
    c: GraspCandidate, ep: Any, origin: str, outcome: dict[str, Any], masked: bool
) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if c.index in ep.plan_failures:
        extra["plan_failures"] = dict(ep.plan_failures[c.index])
    return {
        "index": int(c.index),
        "source": c.source,
        "origin": origin,
        "position": [float(v) for v in c.position],
        "rotation": [[float(v) for v in row] for row in c.rotation],
        "width": float(c.width),
        "terms": {k: float(v) for k, v in sorted(c.terms.items()) if math.isfinite(float(v))},
        # "planned": the default planner's plan, what L4's plan term and the @planned mask
        # know; "plan_source": which planner's plan was executed (None: not executed).
        "planned": ep.plan_source.get(c.index) == "default",
        "plan_source": ep.plan_source.get(c.index),
        **extra,
        "in_region_mask": masked,
        "outcome": outcome,
    }


def _context_record(context: MethodContext) -> dict[str, Any]:
    """What the methods knew besides the candidates, so a baseline can be recomputed from the
    record: the perceived centre, the view, and the grounded region as a count and a hash (each
    candidate's ``in_region_mask`` is the mask filter's verdict on it)."""
    import hashlib

    region = np.ascontiguousarray(np.round(np.asarray(context.region_points, dtype=np.float64), 6))
    return {
        "object_center": [round(float(v), 6) for v in context.object_center],
        "region_points": len(region),
        "region_sha256": hashlib.sha256(region.tobytes()).hexdigest(),
        "K": np.round(context.K, 6).tolist(),
        "world_T_camera": np.round(context.world_T_camera, 6).tolist(),
        "image_size": list(context.image_size),
        "tie_distance": context.tie_distance,
        "mask_dilation_px": context.mask_dilation_px,
    }


def _write_video(path: Path, frames: list[np.ndarray], fps: int, scale: int = 1) -> None:
    import imageio.v2 as imageio

    path.parent.mkdir(parents=True, exist_ok=True)
    if frames:
        kept = [np.ascontiguousarray(f[::scale, ::scale]) for f in frames]
        imageio.mimwrite(str(path), cast(list[Any], kept), fps=fps, macro_block_size=1)


def _record_video(ep: Any, state: Any, grasp: GraspCandidate, path: Path, fps: int) -> dict[str, Any]:
    frames: list[np.ndarray] = []
    outcome = execute_candidate(ep, state, grasp, frames=frames, fps=fps)
    _write_video(path, frames, fps)
    return outcome


def evaluate_scene(suite: str, scene_index: int, config: EvalConfig | None = None) -> dict[str, Any]:
    """Evaluate scene ``scene_index`` of ``suite`` counterfactually; returns the scene record.

    Record (JSON-serialisable)::

        {"suite", "scene", "seed", "sentence", "grounding", "candidate_set_hash",
         "candidates": [{"index", "source", "origin" ("propose" | "antipodal"), "position",
                         "rotation", "width", "terms": {...}, "planned": bool (the default
                         planner planned it), "plan_source": "default" | "reference" | None
                         (whose plan was executed), "plan_failures": {planner: why} (when the
                         default failed), "in_region_mask": bool,
                         "outcome": {"success", "stages": {name: bool},
                                     "failed_stage": str | None, "detail": str}}],
         "methods": {name: selected index | None},
         "ties": {name: candidates tied for the method's top rank (the pick was a seeded draw)},
         "context": {"object_center", "region_points" (count), "region_sha256", "K",
                     "world_T_camera", "image_size", "tie_distance", "mask_dilation_px"},
         "determinism": [{"index", "first": bool, "second": bool}],
         "videos": [{"method", "index", "path", "success", "agrees": bool}],
         "films": [{"index", "path", "frames", "success", "methods": [names that selected it],
                    "unfilmed_success", "agrees": bool}]  (with ``film_selected``),
         "timings_s": {"build", "execute", "determinism", "methods", "videos", "total",
                       "per_candidate"}}

    A method's success in the scene is ``candidates[methods[name]].outcome.success``
    (a failure when it abstained, ``None``). A scene whose target region cannot be grounded
    has no candidates, every method abstains, and ``"unevaluable"`` holds the reason.
    """
    cfg = config or EvalConfig()
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    try:
        built = build_candidate_set(suite, scene_index, cfg.grounding, cfg.candidate_set)
    except ValueError as err:
        # The target or its region was not seen: no candidate set exists, so every method
        # abstains and the scene counts as a failure for all of them alike.
        return {
            "suite": suite,
            "scene": scene_index,
            "seed": scene_seed(suite, scene_index),
            "task_id": task_for_scene(suite, scene_index),
            "sentence": sentence_for(suite, scene_index),
            "grounding": cfg.grounding,
            "candidate_set_hash": None,
            "candidates": [],
            "methods": {name: None for name in cfg.method_names},
            "ties": {name: 0 for name in cfg.method_names},
            "determinism": [],
            "videos": [],
            "films": [],
            "unevaluable": str(err),
            "timings_s": {"total": time.perf_counter() - t0},
        }
    ep, cands = built.episode, built.candidates
    try:
        timings["build"] = time.perf_counter() - t0
        state = ep.world.save_state()

        # The plan mask the methods get is the default planner's: what L4's plan term knows.
        planned = [c for c in cands if ep.plan_source.get(c.index) == "default"]
        seed = scene_seed(suite, scene_index)
        # The methods choose before anything is executed: they see the candidates and the
        # context, never an outcome, so what they pick can be filmed as it runs.
        t = time.perf_counter()
        context = MethodContext(
            seed=seed,
            object_center=built.object_center,
            region_points=built.region_points,
            K=built.K,
            world_T_camera=built.world_T_camera,
            image_size=built.image_size,
            weights=dict(cfg.weights),
            planned=frozenset(int(c.index) for c in planned),
        )
        choices = apply_methods(cands, context, cfg.method_names)
        methods = {name: ch.index for name, ch in choices.items()}
        masked = dict(zip((c.index for c in cands), in_mask(cands, context), strict=True))
        timings["methods"] = time.perf_counter() - t

        t = time.perf_counter()
        selected = {i for i in methods.values() if i is not None and i in ep.plans}
        film = sorted(selected) if cfg.film_selected else []
        outcomes: dict[int, dict[str, Any]] = {}
        films = []
        for c in cands:
            if c.index not in film:
                outcomes[c.index] = execute_candidate(ep, state, c)
                continue
            assert cfg.video_dir is not None
            frames: list[np.ndarray] = []
            outcomes[c.index] = execute_candidate(ep, state, c, frames=frames, fps=cfg.film_fps)
            path = Path(cfg.video_dir) / f"{suite}_{scene_index:04d}_c{c.index:03d}.mp4"
            _write_video(path, frames, cfg.film_fps, cfg.film_scale)
            films.append({"index": int(c.index), "path": path.name, "frames": len(frames),
                          "success": outcomes[c.index]["success"],
                          "methods": sorted(m for m, i in methods.items() if i == c.index)})
        timings["execute"] = time.perf_counter() - t
        executed = [c for c in cands if c.index in ep.plans]
        timings["per_candidate"] = timings["execute"] / len(executed) if executed else 0.0

        # Each film checked against an execution without the camera: the outcome on film is
        # the outcome a method is scored on, and filming must not have changed it.
        t = time.perf_counter()
        by_index = {c.index: c for c in cands}
        for f in films:
            again = execute_candidate(ep, state, by_index[f["index"]])
            f["unfilmed_success"] = again["success"]
            f["agrees"] = again["success"] == f["success"]
        timings["films"] = time.perf_counter() - t

        t = time.perf_counter()
        rng = np.random.default_rng(seed)
        sample = rng.choice(len(executed), size=min(cfg.determinism_samples, len(executed)), replace=False)
        determinism = []
        for k in sorted(int(i) for i in sample):
            c = executed[k]
            again = execute_candidate(ep, state, c)
            determinism.append(
                {"index": int(c.index), "first": outcomes[c.index]["success"], "second": again["success"]}
            )
        timings["determinism"] = time.perf_counter() - t

        t = time.perf_counter()
        videos = []
        for method, scene in cfg.video:
            idx = methods.get(method)
            if scene != scene_index or idx is None or idx not in ep.plans:
                continue
            assert cfg.video_dir is not None
            path = Path(cfg.video_dir) / f"{suite}_{scene_index:04d}_{method}.mp4"
            out = _record_video(ep, state, by_index[idx], path, cfg.video_fps)
            videos.append(
                {
                    "method": method,
                    "index": idx,
                    "path": path.name,  # relative to the video directory, so a run can move
                    "success": out["success"],
                    "agrees": out["success"] == outcomes[idx]["success"],
                }
            )
        timings["videos"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t0
        return {
            "suite": suite,
            "scene": scene_index,
            "seed": seed,
            "task_id": task_for_scene(suite, scene_index),
            "sentence": sentence_for(suite, scene_index),
            "grounding": cfg.grounding,
            "candidate_set_hash": built.set_hash,
            "candidates": [
                _candidate_record(c, ep, built.origins[c.index], outcomes[c.index], masked[c.index])
                for c in cands
            ],
            "methods": methods,
            "ties": {name: ch.tied for name, ch in choices.items()},
            "context": _context_record(context),
            "determinism": determinism,
            "videos": videos,
            "films": films,
            "timings_s": {k: round(v, 3) for k, v in timings.items()},
        }
    finally:
        ep.world.close()


def method_success(record: dict[str, Any], method: str) -> bool:
    """Whether ``method`` succeeded in the scene of ``record`` (False when it abstained)."""
    idx = record["methods"][method]
    if idx is None:
        return False
    by_index = {c["index"]: c for c in record["candidates"]}
    return bool(by_index[idx]["outcome"]["success"])


def determinism_disagreements(records: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(re-executions whose outcome differed from the first, re-executions) over ``records``."""
    pairs = [d for r in records for d in r["determinism"]]
    return sum(1 for d in pairs if d["first"] != d["second"]), len(pairs)
