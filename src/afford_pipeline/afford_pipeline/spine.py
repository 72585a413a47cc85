"""The spine: from a task sentence to an executed, checked interaction in the batch world.

parse -> build the scene -> perceive (render, back-project) -> ground the regions ->
sample candidates (Stage 1) -> feasibility / function / task terms and the gate ->
Stage 2 motion planning (1/L) -> execute the skill -> check every stage.

Everything here is ROS-free; the ROS 2 graph wraps the same calls in nodes.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from afford_core.config import to_dict
from afford_core.robots import DEFAULT_ROBOT, get_robot
from afford_planner.samplers import DEFAULT_SAMPLERS, SAMPLERS
from afford_planner.selection import SelectionConfig
from afford_planner.skills import SkillConfig
from afford_planner.terms import TermsConfig

if TYPE_CHECKING:
    from afford_pipeline.episode import Choice, Episode
    from afford_pipeline.execution import WorldExecutor
    from afford_sim.scene import CameraSpec
    from afford_sim.tasks import CompositeTask, Task
    from afford_sim.world import BatchWorld

Progress = Callable[[str], None] | None
Chooser = Callable[["Episode", "SpineConfig"], "Choice"]
"""Replaces Stage 1 and 2 for one episode: proposes candidates into ``episode.candidates``,
plans them (``episode.plan``) and returns the one to execute. The evaluation's grasp sources
(``afford_eval.grasp_sources``) are choosers; without one the spine runs its own (Stage 1 on
the grounded region, the AFFORD-X terms and gate, Stage 2 on the best ``plan_top_k``, L4)."""


@dataclass
class SpineConfig:
    """Options of one spine run (``afford run --config run.yaml --set key=value``; every run's
    JSON result carries the resolved configuration).

    Attributes:
        grounding: Grounding source name (``oracle``, ``geometric``, ``learned``).
        seed: Seed of the scene (object shapes, poses) and of every sampler.
        robot: The robot the scene is built with (``afford robots``).
        allow_unvalidated_robot: Run a task on a robot it does not list as validated
            (``Task.robots``); otherwise that is refused.
        video_path: Write an MP4 of the execution here (None: no rendering during execution).
        video_fps: Frames per second of the video.
        plan_top_k: How many of the best-ranked eligible candidates Stage 2 plans for.
        selection: The ranking rule (AFFORD-X combination and gate); its ``level`` is the
            spine's to set (L3 to choose what to plan, L4 to pick among the plans).
        samplers: The grasp samplers that propose candidates, in order
            (``afford_planner.samplers``).
        skill: Distances, speeds and waits of the skill's motions.
        plan_all: Baseline mode: skip the selection layer, plan every raw candidate and take
            the shortest path (AffordSim's Stage 2 alone). For measuring what the gate saves.
        execute: Run the skill; False stops once a grasp is chosen and planned.
        terms: Feasibility and function parameters (the robot's workspace box among them);
            None: the AFFORD-X defaults.
        randomize: Domain randomization, a preset of ``afford_sim.randomization.DOMAINS``
            (``none``, ``visual``, ``table1``, ``table2``, one axis) or a comma list of them;
            what was drawn is recorded in the result's ``randomization["domain"]``.
    """

    grounding: str = "oracle"
    seed: int = 0
    robot: str = DEFAULT_ROBOT
    allow_unvalidated_robot: bool = False
    video_path: str | None = None
    video_fps: int = 20
    plan_top_k: int = 6
    selection: SelectionConfig = field(default_factory=SelectionConfig)
    samplers: tuple[str, ...] = DEFAULT_SAMPLERS
    skill: SkillConfig = field(default_factory=SkillConfig)
    plan_all: bool = False
    execute: bool = True
    terms: TermsConfig | None = None
    randomize: str = "none"

    def __post_init__(self) -> None:
        from afford_sim.randomization import domain_randomization

        domain_randomization(self.randomize)  # KeyError listing the known presets
        if self.seed < 0:
            raise ValueError("seed must be >= 0")
        if self.plan_top_k < 1:
            raise ValueError("plan_top_k must be >= 1")
        if self.video_fps < 1:
            raise ValueError("video_fps must be >= 1")
        get_robot(self.robot)  # KeyError listing the known robots
        for name in self.samplers:
            SAMPLERS.get(name)  # KeyError listing the known samplers


@dataclass
class SpineResult:
    """Everything a run produced; ``as_dict`` is the CLI's ``--json`` schema."""

    task: str
    intent: dict[str, Any] | None = None
    candidates: int = 0
    eligible: int = 0
    selected: dict[str, Any] | None = None
    stages: dict[str, bool] = field(default_factory=dict)
    success: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)
    abstained: str | None = None
    task_id: str | None = None
    robot: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    randomization: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    candidate_set: str | None = None
    sim_seconds: float = 0.0
    steps: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "intent": self.intent,
            "candidates": self.candidates,
            "eligible": self.eligible,
            "selected": self.selected,
            "stages": self.stages,
            "success": self.success,
            "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
            "abstained": self.abstained,
            "task_id": self.task_id,
            "robot": self.robot,
            "randomization": self.randomization,
            "checks": self.details,
            "candidate_set": self.candidate_set,
            "sim_seconds": round(self.sim_seconds, 3),
            "steps": self.steps,
            "config": self.config,
        }

    def summary(self) -> str:
        lines = [f"task: {self.task!r}" + (f" ({self.task_id})" if self.task_id else "")]
        domain = self.randomization.get("domain")
        if domain:
            lines.append(f"randomized: {domain['axes']} (the draw: --json, randomization.domain)")
        # A composite's top-level intent is its first step's and its candidates its last step's;
        # each step's own line says what it asked for and chose instead.
        composite = len(self.steps) > 1
        if self.intent and not composite:
            i = self.intent
            lines.append(
                f"intent: grasp the {i['target']}'s {i['grasp_region']}"
                + (f", keep {', '.join(i['keep_clear'])} clear" if i["keep_clear"] else "")
                + f", then {i['next_action']}"
                + (f" -> {i['destination']} ({i['destination_region']})" if i["destination"] else "")
            )
        if not composite:
            lines.append(f"candidates: {self.candidates} sampled, {self.eligible} pass the feasibility gate")
            if self.selected is None:
                lines.append(f"selected: none (abstained: {self.abstained})")
            else:
                sel = self.selected
                terms = ", ".join(f"{k} {v:.2f}" for k, v in sel["terms"].items())
                lines.append(f"selected: #{sel['index']} score {sel['score']:.3f}  ({terms})")
        if composite or (self.abstained and self.selected is not None):
            for k, step in enumerate(self.steps, 1):
                chose = "none" if step["selected"] is None else f"#{step['selected']}"
                asked = f" {step['sentence']!r}" if composite and step.get("sentence") else ""
                lines.append(f"  step {k} {step['task_id']}{asked}: {step['candidates']} candidates, "
                             f"{step['eligible']} pass the gate, chose {chose}")
            if self.abstained:
                lines.append(f"abstained: {self.abstained}")
        for name, ok in self.stages.items():
            lines.append(f"  stage {name:<10} {'ok' if ok else 'FAILED'}")
        lines.append("timings (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in self.timings_ms.items()))
        lines.append(f"result: {'SUCCESS' if self.success else 'FAILURE'}")
        return "\n".join(lines)


class _Timer:
    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    def __call__(self, name: str) -> _Timer:
        self._name = name
        return self

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.ms[self._name] = self.ms.get(self._name, 0.0) + 1000 * (time.perf_counter() - self._t0)


def _say(progress: Progress, msg: str) -> None:
    if progress is not None:
        progress(msg)


def _finish(result: SpineResult, timer: _Timer, t_start: float, abstained: str | None = None) -> SpineResult:
    if abstained is not None:
        result.abstained = abstained
    result.timings_ms = {**timer.ms, "total": 1000 * (time.perf_counter() - t_start)}
    return result


def _fail_rest(result: SpineResult, steps: Sequence[Task], k: int, current: bool) -> None:
    """Mark as not done the stages a composite never reached: step ``k``'s own (``current``:
    it ended before executing) and every later step's. A single task has none to mark."""
    if len(steps) < 2:
        return
    from afford_sim.tasks import sets_down

    for j in range(k if current else k + 1, len(steps)):
        for name in [*_stage_names(steps[j]), *(["set_down"] if sets_down(steps, j) else [])]:
            result.stages.setdefault(f"{j + 1}.{name}", False)
    result.stages.setdefault("kept", False)


def _stage_names(task: Task) -> list[str]:
    """The stages of ``task``'s skill that run (before a grasp exists, by name)."""
    from afford_planner.skills import SKILLS

    return list(SKILLS.get(task.skill).stage_names)


def task_world(task_id: str, seed: int, robot: str = DEFAULT_ROBOT,
               cameras: Sequence[CameraSpec] = (), randomize: str = "none") -> BatchWorld:
    """The batch world of task ``task_id``'s scene for ``seed`` on ``robot``, with ``cameras``
    added to the task's own: the scene every run of that task and seed starts from (the spine's,
    a recorded demonstration's, a policy's closed-loop rollout). The caller closes it.

    ``randomize``: domain randomization (``afford_sim.randomization.DOMAINS``: a preset, or a
    comma list of them); its draw is ``world.domain``. The visual axes never move objects."""
    from afford_sim.randomization import domain_randomization, place_randomized
    from afford_sim.tasks import get_task, manipulated_objects
    from afford_sim.world import BatchWorld

    dr = domain_randomization(randomize)
    task = get_task(task_id)
    spec = dataclasses.replace(task.scene(seed), robot=robot, robot_q=())
    if cameras:
        spec = dataclasses.replace(spec, cameras=(*spec.cameras, *cameras))
    placed, draw = place_randomized(spec, seed, dr, manipulated_objects(task))
    return BatchWorld(placed, domain=draw)


def run_sentence(sentence: str, config: SpineConfig | None = None, progress: Progress = None) -> SpineResult:
    """Run ``sentence`` end to end: the task it asks for, in a freshly sampled scene.

    Raises:
        afford_perception.parser.TaskParseError: the sentence cannot be understood.
        ValueError: no task covers the intent, or the scene cannot be built.
    """
    from afford_perception.parser import parse_steps
    from afford_sim.tasks import find_steps

    return run_task(find_steps(parse_steps(sentence)), config, progress, sentence=sentence)


def run_task(
    task_id: str,
    config: SpineConfig | None = None,
    progress: Progress = None,
    sentence: str | None = None,
    chooser: Chooser | None = None,
    cameras: Sequence[CameraSpec] = (),
    executor: Callable[[BatchWorld], WorldExecutor] | None = None,
) -> SpineResult:
    """Run task ``task_id`` end to end in a freshly sampled scene; see the module docstring.

    Args:
        task_id: A registered task (``afford tasks``).
        config: Options; the seed picks the scene.
        progress: Called with one line per step.
        sentence: How the task is asked for; default its canonical instruction. It must ask
            for this task.
        chooser: How the grasp is chosen (:data:`Chooser`); default the spine's own.
            Everything else (perception, grounding for the later stages, the skill, the
            checks) is the same whichever chooser runs, so sources compare on the grasp alone.
        cameras: Cameras added to the task's scene (a wrist camera for recording); the
            pipeline perceives with the task's own.
        executor: Makes the executor the skill runs through (a recorder of demonstrations);
            default the batch world's, filming the ``video`` camera when ``video_path`` is set.

    Raises:
        KeyError: an unknown task id.
        afford_perception.parser.TaskParseError: the sentence cannot be understood.
        ValueError: the sentence asks for another task, or the scene cannot be built.
    """
    from afford_perception.grounding import make_source
    from afford_perception.parser import parse_steps
    from afford_pipeline.episode import Episode
    from afford_pipeline.execution import WorldExecutor
    from afford_planner.selection import candidate_set_hash
    from afford_planner.skills import stage_iter
    from afford_sim.randomization import RECORD_KEY
    from afford_sim.tasks import CompositeTask, find_steps, get_task, sets_down
    from afford_sim.world import NotVisible

    cfg = config or SpineConfig()
    timer = _Timer()
    task = get_task(task_id)
    sentence = task.instruction if sentence is None else sentence
    result = SpineResult(task=sentence, task_id=task_id, robot=cfg.robot, config=to_dict(cfg))
    if cfg.robot not in task.robots and not cfg.allow_unvalidated_robot:
        raise ValueError(
            f"{task_id} is validated on {', '.join(task.robots)}, not the {cfg.robot} "
            "(allow_unvalidated_robot, or --allow-unvalidated-robot, runs it anyway)"
        )
    t_start = time.perf_counter()

    with timer("parse"):
        intents = parse_steps(sentence)
    composite = isinstance(task, CompositeTask)
    asked = find_steps(intents)
    if asked != task_id:
        raise ValueError(f"the sentence {sentence!r} asks for task {asked}, not {task_id}")
    result.intent = intents[0].as_dict()
    source = make_source(cfg.grounding)

    with timer("scene"):  # the simulator's set-up; a real robot has its world already
        world = task_world(task_id, cfg.seed, cfg.robot, cameras, cfg.randomize)
    result.randomization = task.drawn(world.placed)
    if world.domain is not None:
        result.randomization[RECORD_KEY] = world.domain.as_dict()
    try:
        frames: list[np.ndarray] | None = [] if cfg.video_path else None
        runner: WorldExecutor | None = None
        steps = cast("CompositeTask", task).subtasks() if composite else [task]
        judged: list[tuple[Task, str]] = []
        sim_t0 = world.time
        for k, (intent, step_task) in enumerate(zip(intents, steps, strict=True)):
            prefix = f"{k + 1}." if composite else ""
            if composite:
                _say(progress, f"[step {k + 1}/{len(steps)}] {step_task.task_id}: {intent.text}")
            _say(
                progress,
                f"[parse] {intent.target}: grasp {intent.grasp_region}, then {intent.next_action.value}"
                + (f" -> {intent.destination}/{intent.destination_region}" if intent.destination else ""),
            )
            ep = Episode(intent, step_task, world, source, seed=cfg.seed + k, skill_config=cfg.skill,
                         samplers=cfg.samplers)
            with timer("perceive"):
                try:
                    ep.perceive()
                except NotVisible as exc:  # hidden (a composite's earlier step moved things): no guess
                    _fail_rest(result, steps, k, current=True)
                    return _finish(result, timer, t_start, f"{prefix and f'step {k + 1}: '}{exc}")
            assert ep.cloud is not None
            _say(progress, f"[perceive] {len(ep.cloud)} target points, {len(ep.obstacles)} obstacle points")

            with timer("ground"):
                ep.ground()
            grounded = ", ".join(f"{len(v)} {part}" for part, v in ep.parts.items())
            _say(progress, f"[ground] {cfg.grounding}: {grounded}")
            # A chooser brings its own candidates (a model-free detector needs no grounded region).
            if chooser is None and len(ep.region) < 5:
                _fail_rest(result, steps, k, current=True)
                return _finish(result, timer, t_start,
                               f"{prefix and f'step {k + 1}: '}grounding found no {intent.target} "
                               f"{intent.grasp_region} in the view")
            # The task's other parts (a spout to pour from, a rim to keep clear) rank the grasps;
            # without one of them the choice would be a guess.
            unseen = ep.unseen_reason()
            if chooser is None and unseen:
                _fail_rest(result, steps, k, current=True)
                return _finish(result, timer, t_start, f"{prefix and f'step {k + 1}: '}{unseen}")

            if chooser is None:  # the spine's own choice, timed step by step (bench/bench_spine.py)
                with timer("sample"):
                    ep.propose()
                with timer("select"):
                    l3 = ep.score(cfg.terms, cfg.selection)
                with timer("plan"):
                    choice = ep.choose(cfg.terms, cfg.selection, cfg.plan_top_k, plan_all=cfg.plan_all, l3=l3)
            else:
                with timer("choose"):
                    choice = chooser(ep, cfg)
            cands = ep.candidates
            result.candidates = len(cands)
            result.candidate_set = candidate_set_hash(
                cands, {"task": intent.text if composite else sentence, "seed": cfg.seed + k,
                        "grounding": cfg.grounding}
            )
            result.eligible = choice.eligible
            _say(progress, f"[select] {len(cands)} candidates, {result.eligible} pass the gate")
            grasp = choice.grasp
            step_record: dict[str, Any] = {"task_id": step_task.task_id, "sentence": intent.text,
                                           "candidates": len(cands), "eligible": choice.eligible,
                                           "selected": None if grasp is None else grasp.index}
            result.steps.append(step_record)
            if grasp is None:
                _fail_rest(result, steps, k, current=True)
                return _finish(result, timer, t_start,
                               f"{prefix and f'step {k + 1}: '}{choice.reason}")
            result.selected = grasp.as_dict()
            _say(
                progress,
                f"[plan] {choice.planned}/{choice.considered} planned; "
                f"chose #{grasp.index} (score {grasp.score:.3f})",
            )
            if not cfg.execute:
                return _finish(result, timer, t_start)

            # Execute the skill stage by stage; check each stage against the simulator's truth.
            if runner is None:
                runner = (WorldExecutor(world, frames, cfg.video_fps, camera="video") if executor is None
                          else executor(world))
            # A later step takes this step's object again (the mug poured, then hung): set it down.
            setting_down = composite and sets_down(steps, k)
            stages = ep.stages(grasp, runner, set_down=setting_down)
            step_task.begin(world)
            last_checked = ""
            with timer("execute"):
                runner.frame()
                for report in stage_iter(stages):
                    name = prefix + report.name
                    if not report.executed:
                        result.stages[name] = False
                        result.details[name] = report.reason
                        _say(progress, f"[execute] {name}: could not run ({report.reason})")
                        break
                    check = step_task.check(report.name, world)
                    result.stages[name] = True if check is None else check.ok
                    if check is not None:
                        result.details[name] = check.detail
                        last_checked = report.name
                    _say(
                        progress,
                        f"[execute] {name}: {'ok' if result.stages[name] else 'FAILED'}"
                        + (f" ({check.detail})" if check is not None else ""),
                    )
                    if not result.stages[name]:
                        break
            for name, _ in stages:
                result.stages.setdefault(prefix + name, False)
            if not all(result.stages.values()):
                _fail_rest(result, steps, k, current=False)
                break
            if last_checked and not setting_down:  # a set-down object's result is the later step's
                judged.append((step_task, last_checked))
        else:
            if composite:
                kept = CompositeTask.check_kept(world, judged[:-1])
                result.stages["kept"] = kept.ok
                result.details["kept"] = kept.detail
                _say(progress, f"[execute] kept: {'ok' if kept.ok else 'FAILED'} ({kept.detail})")
        result.success = bool(result.stages) and all(result.stages.values())
        result.sim_seconds = world.time - sim_t0
        if frames:
            import imageio.v2 as imageio

            assert cfg.video_path is not None
            imageio.mimwrite(cfg.video_path, cast(Any, frames), fps=cfg.video_fps, macro_block_size=1)
            _say(progress, f"[video] {len(frames)} frames -> {cfg.video_path}")
        return _finish(result, timer, t_start)
    finally:
        world.close()
