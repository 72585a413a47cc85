"""The spine: from a task sentence to an executed, checked interaction in the batch world.

parse -> build the scene -> perceive (render, back-project) -> ground the regions ->
sample candidates (Stage 1) -> feasibility / function / task terms and the gate ->
Stage 2 motion planning (1/L) -> execute the skill -> check every stage.

Everything here is ROS-free; the ROS 2 graph wraps the same calls in nodes.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from afford_planner.skills import SkillError

Progress = Callable[[str], None] | None


@dataclass
class SpineConfig:
    """Options of one spine run.

    Attributes:
        grounding: Grounding source name (``oracle`` or ``geometric``).
        seed: Seed of the scene (object shapes, poses) and of every sampler.
        video_path: Write an MP4 of the execution here (None: no rendering during execution).
        video_fps: Frames per second of the video.
        plan_top_k: How many of the best-ranked eligible candidates Stage 2 plans for.
        combination: ``product`` or ``weighted_sum`` (AFFORD-X combination rule).
        gate: ``feasibility`` or ``none``.
        plan_all: Baseline mode: skip the selection layer, plan every raw candidate and take
            the shortest path (AffordSim's Stage 2 alone). For measuring what the gate saves.
        execute: Run the skill; False stops once a grasp is chosen and planned.
        terms: Feasibility and function parameters (the robot's workspace box among them);
            None: the AFFORD-X defaults.
    """

    grounding: str = "oracle"
    seed: int = 0
    video_path: str | None = None
    video_fps: int = 20
    plan_top_k: int = 6
    combination: str = "product"
    gate: str = "feasibility"
    plan_all: bool = False
    execute: bool = True
    terms: Any = None

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ValueError("seed must be >= 0")
        if self.plan_top_k < 1:
            raise ValueError("plan_top_k must be >= 1")
        if self.video_fps < 1:
            raise ValueError("video_fps must be >= 1")


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
    task_name: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    candidate_set: str | None = None
    sim_seconds: float = 0.0

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
            "scene_task": self.task_name,
            "checks": self.details,
            "candidate_set": self.candidate_set,
            "sim_seconds": round(self.sim_seconds, 3),
        }

    def summary(self) -> str:
        lines = [f"task: {self.task!r}"]
        if self.intent:
            i = self.intent
            lines.append(
                f"intent: grasp the {i['target']}'s {i['grasp_region']}"
                + (f", keep {', '.join(i['keep_clear'])} clear" if i["keep_clear"] else "")
                + f", then {i['next_action']}"
                + (f" -> {i['destination']} ({i['destination_region']})" if i["destination"] else "")
            )
        lines.append(f"candidates: {self.candidates} sampled, {self.eligible} pass the feasibility gate")
        if self.selected is None:
            lines.append(f"selected: none (abstained: {self.abstained})")
        else:
            t = self.selected["terms"]
            lines.append(
                "selected: #{} score {:.3f}  ({})".format(
                    self.selected["index"],
                    self.selected["score"],
                    ", ".join(f"{k} {v:.2f}" for k, v in t.items()),
                )
            )
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


class WorldExecutor:
    """Adapts the batch world to the skills' :class:`~afford_planner.skills.Executor`.

    When ``frames`` is a list, a camera frame is appended every ``1 / fps`` simulated seconds.
    """

    def __init__(
        self, world: Any, frames: list[np.ndarray] | None = None, fps: int = 20, camera: str | None = None
    ) -> None:
        self.world = world
        self.frames = frames
        self.period = 1.0 / fps
        self.camera = camera
        self._next_frame = 0.0

    def _frame(self) -> None:
        if self.frames is not None and self.world.time >= self._next_frame:
            self.frames.append(self.world.render(self.camera, depth=False, segmentation=False).rgb)
            self._next_frame = self.world.time + self.period

    def arm_q(self) -> np.ndarray:
        return self.world.arm_q()

    def follow(self, times: np.ndarray, qs: np.ndarray) -> None:
        on_step = self._frame if self.frames is not None else None
        # A contact (a hook, a drawer's friction) can leave the arm off the plan's start; join
        # it back gently instead of asking the servos for a jump.
        gap = float(np.max(np.abs(self.world.arm_q() - qs[0])))
        if gap > 0.01:
            self.world.move_arm(qs[:1], [max(0.05, gap / 0.5)], interpolation="pchip", settle=0.1, on_step=on_step)
            off = np.abs(self.world.arm_q() - qs[0])
            if off.max() > 0.03:
                # The arm is held back (a load beyond a joint's torque, a collision): stop, as
                # the real controller would, rather than command a jump.
                raise SkillError(f"the arm cannot follow: joint {int(off.argmax()) + 1} stays "
                                 f"{off.max():.2f} rad from its setpoint")
        keep = times > 1e-9  # move_arm starts from the measured state at t = 0
        times, qs = times[keep], qs[keep]
        if len(times) == 0:
            return
        self.world.move_arm(qs, times, settle=0.0, on_step=on_step)
        self.wait(0.15)

    def open_gripper(self) -> None:
        self.world.open_gripper()
        self._frame()

    def close_gripper(self) -> None:
        self.world.close_gripper()
        self._frame()

    def wait(self, seconds: float) -> None:
        end = self.world.time + seconds
        while self.world.time < end - 1e-9:
            self.world.advance(min(self.period, end - self.world.time))
            self._frame()


def _perceived_center(points: np.ndarray) -> np.ndarray:
    """Centre of an observed object: middle of its bounding box (the camera sees one side,
    so the centroid would sit on the near surface)."""
    return 0.5 * (points.min(axis=0) + points.max(axis=0))


def _front_normal(handle: np.ndarray, face: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """Horizontal outward normal of the front a handle stands on: the plane of the face's
    points (a drawer front) turned towards the handle; from the object's centre through the
    handle when the face was not seen."""
    if len(face) >= 30:
        centred = face - face.mean(0)
        n = np.linalg.svd(centred, full_matrices=False)[2][-1]
        if np.dot(n, handle.mean(0) - face.mean(0)) < 0:
            n = -n
    else:
        n = handle.mean(0) - _perceived_center(whole)
    n = np.array([n[0], n[1], 0.0])
    return n / (np.linalg.norm(n) + 1e-9)


def _voxel_down(points: np.ndarray, voxel: float) -> np.ndarray:
    """One point per occupied voxel (the first seen): thins a dense depth cloud evenly."""
    if len(points) == 0:
        return points
    keys = np.floor(points / voxel).astype(np.int64)
    _, first = np.unique(keys, axis=0, return_index=True)
    return points[np.sort(first)]


def _cluster_nearest(points: np.ndarray, to: np.ndarray, radius: float = 0.015) -> np.ndarray:
    """The connected cluster of ``points`` (single linkage at ``radius``) nearest ``to``."""
    from scipy.cluster.hierarchy import fcluster, linkage

    if len(points) < 3:
        return points
    sub = points if len(points) <= 3000 else points[np.linspace(0, len(points) - 1, 3000).astype(int)]
    labels = fcluster(linkage(sub, "single"), radius, criterion="distance")
    best = min(set(labels), key=lambda k: float(np.min(np.linalg.norm(sub[labels == k] - to, axis=1))))
    return sub[labels == best]


def run_sentence(sentence: str, config: SpineConfig | None = None, progress: Progress = None) -> SpineResult:
    """Run ``sentence`` end to end in a freshly sampled scene; see the module docstring.

    Raises:
        afford_perception.parser.TaskParseError: the sentence cannot be understood.
        ValueError: no skill covers the intent, or the scene cannot be built.
    """
    from afford_perception.grounding import make_source
    from afford_perception.ontology import category
    from afford_perception.parser import parse
    from afford_perception.types import NextAction, ObjectCloud
    from afford_planner.candidates import (
        AxisGraspConfig,
        EnclosingGraspConfig,
        Stage1Config,
        index_candidates,
        sample_affordance_grasps,
        sample_axis_grasps,
        sample_enclosing_grasps,
    )
    from afford_planner.collision import HAND_LINKS, CollisionWorld
    from afford_planner.motion import MotionPlanner
    from afford_planner.robot_model import FR3Model
    from afford_planner.selection import SelectionConfig, candidate_set_hash, select
    from afford_planner.skills import HeldObject, SkillConfig, SkillRunner, stage_iter
    from afford_planner.task_constraints import TaskContext, compile_constraints, fill_task_terms
    from afford_planner.terms import TermsConfig, fill_terms
    from afford_sim.scene import sample_scene
    from afford_sim.tasks import task_for
    from afford_sim.world import BatchWorld

    cfg = config or SpineConfig()
    timer = _Timer()
    result = SpineResult(task=sentence)
    t_start = time.perf_counter()

    with timer("parse"):
        intent = parse(sentence)
    result.intent = intent.as_dict()
    task = task_for(intent)
    result.task_name = task.name
    _say(
        progress,
        f"[parse] {intent.target}: grasp {intent.grasp_region}, then {intent.next_action.value}"
        + (f" -> {intent.destination}/{intent.destination_region}" if intent.destination else ""),
    )

    # Perceive: build the scene, render the front camera, back-project object clouds.
    with timer("scene"):  # the simulator's set-up; a real robot has its world already
        placed = sample_scene(task.scene(cfg.seed), seed=cfg.seed)
        world = BatchWorld(placed)
    with timer("perceive"):
        obs = world.render()
        raw = world.observed_cloud(obs, intent.target, seed=cfg.seed)
        cloud = ObjectCloud(
            raw.points,
            raw.category,
            part_labels=raw.part_labels,
            part_names=raw.part_names,
            object_center=_perceived_center(raw.points),
        )
        dest_cloud = None
        if intent.destination:
            rd = world.observed_cloud(obs, intent.destination, seed=cfg.seed + 1)
            dest_cloud = ObjectCloud(
                rd.points,
                rd.category,
                part_labels=rd.part_labels,
                part_names=rd.part_names,
                object_center=_perceived_center(rd.points),
            )
        # Obstacles for the clearance term: everything seen but the target and the support.
        obstacles = _voxel_down(world.scene_cloud(obs, exclude=[intent.target, "table", "floor"]), 0.005)
    _say(progress, f"[perceive] {len(cloud)} target points, {len(obstacles)} obstacle points")

    # Ground every region the task needs with the configured source.
    source = make_source(cfg.grounding)
    with timer("ground"):
        region = cloud.points[source.ground(cloud, intent.grasp_region) >= 0.5]
        parts = {intent.grasp_region: region}
        for part in (*intent.keep_clear, *([intent.use_region] if intent.use_region else [])):
            parts[part] = cloud.points[source.ground(cloud, part) >= 0.5]
        dest_region = None
        dest_support = None
        if dest_cloud is not None and intent.destination_region:
            dest_region = dest_cloud.points[source.ground(dest_cloud, intent.destination_region) >= 0.5]
            others = [p for p in dest_cloud.part_names if p != intent.destination_region]
            if others:
                dest_support = np.vstack(
                    [dest_cloud.points[source.ground(dest_cloud, p) >= 0.5] for p in others]
                )
    _say(
        progress,
        f"[ground] {cfg.grounding}: {len(region)} {intent.grasp_region} points"
        + "".join(f", {len(v)} {k}" for k, v in parts.items() if k != intent.grasp_region),
    )
    if len(region) < 5:
        result.abstained = f"grounding found no {intent.target} {intent.grasp_region} in the view"
        result.timings_ms = {**timer.ms, "total": 1000 * (time.perf_counter() - t_start)}
        return result

    pull_axis = None
    if intent.next_action in (NextAction.OPEN, NextAction.PULL, NextAction.CLOSE):
        pull_axis = _front_normal(region, parts.get(intent.use_region or "", np.empty((0, 3))), cloud.points)

    # Stage 1: candidates on the region, plus axis grasps for objects without functional parts.
    with timer("sample"):
        # A round body that fits the hand is held around its axis; its top-down grasp is that
        # one, not a pinch of one wall (whose inner finger would land on the rim).
        enclosing = []
        if "grasp_body" in category(intent.target).affordances.get(intent.grasp_region, ()):
            enclosing = sample_enclosing_grasps(region, EnclosingGraspConfig())
        # One mean-shift mode per part: a 14 cm drawer pull must not split into its standoffs.
        extent = float(np.max(np.ptp(region, axis=0)))
        stage1 = Stage1Config(
            include_topdown=not enclosing,
            num_topdown_yaws=1,
            include_normal=True,
            center_on_part=True,
            bandwidth=float(np.clip(0.3 * extent, 0.02, 0.06)),
        )
        groups = [sample_affordance_grasps(region, cloud, stage1, normal=pull_axis), enclosing]
        if len(cloud.part_names) == 1:
            groups.append(sample_axis_grasps(cloud, AxisGraspConfig()))
        cands = index_candidates(*groups)
    result.candidates = len(cands)
    result.candidate_set = candidate_set_hash(
        cands, {"task": sentence, "seed": cfg.seed, "grounding": cfg.grounding}
    )

    # Feasibility, function and task terms, then the gate and the ranking (up to L3).
    with timer("select"):
        terms_cfg = cfg.terms or TermsConfig()
        if pull_axis is not None:
            # The executor meets a handle on a front frontally.
            terms_cfg = dataclasses.replace(terms_cfg, preferred_approach=tuple(-pull_axis))
        fill_terms(cands, region, obstacles, terms_cfg)
        constraints = compile_constraints(
            intent, parts, TaskContext(object_center=cloud.center, pull_axis=pull_axis)
        )
        fill_task_terms(cands, constraints)
        l3 = select(cands, SelectionConfig(combination=cfg.combination, gate=cfg.gate, level="L3"))
    result.eligible = int(sum(c.terms.get("eligible", 0) for c in cands))
    _say(progress, f"[select] {len(cands)} candidates, {result.eligible} pass the gate")
    if l3.chosen is None and not cfg.plan_all:
        result.abstained = l3.reason
        result.timings_ms = {**timer.ms, "total": 1000 * (time.perf_counter() - t_start)}
        return result

    # Stage 2: plan for the best eligible candidates; s = 1/L of the collision-free path.
    with timer("plan"):
        model = FR3Model()
        cworld = CollisionWorld(model)
        table = placed.spec.table
        cworld.add_box("table", np.array([*table.size, table.thickness]), table.pose())
        if len(obstacles):
            cworld.add_point_cloud("scene", obstacles, resolution=0.006)
        cworld.add_point_cloud("target", cloud.points, resolution=0.01)
        planner = MotionPlanner(model, cworld)
        q0 = world.arm_q()
        plans: dict[int, tuple[Any, Any]] = {}
        by_index = {c.index: c for c in cands}
        if cfg.plan_all:
            ranked = list(cands)
        else:
            ranked = [by_index[i] for i in l3.ranking if i in set(l3.eligible)][: cfg.plan_top_k]
        runner_cfg = SkillConfig()
        for c in ranked:
            pre = c.pose_matrix()
            pre[:3, 3] -= c.approach * runner_cfg.pregrasp_offset
            free = planner.plan_to_pose(q0, pre)
            if not free.success:
                c.terms["plan"] = 0.0
                continue
            cworld.allow("target", HAND_LINKS)
            line = planner.cartesian_path(free.waypoints[-1], c.pose_matrix())
            cworld.disallow("target")
            if not line.success:
                c.terms["plan"] = 0.0
                continue
            plans[c.index] = (free, line)
            c.terms["plan"] = 1.0 / max(free.path_length + line.path_length, 1e-6)
        best = max((c.terms["plan"] for c in ranked), default=0.0)
        for c in cands:
            if "plan" in c.terms and best > 0:
                c.terms["plan"] = c.terms["plan"] / best
            elif c.terms.get("eligible", 0) > 0:
                c.terms["plan"] = 0.0
        if cfg.plan_all:
            # AffordSim's Stage 2 alone: the shortest collision-free path wins.
            best_c = max(cands, key=lambda c: (c.terms.get("plan", 0.0), -c.index))
            picked = best_c if best_c.terms.get("plan", 0.0) > 0 else None
            reason = "" if picked else "no candidate has a collision-free plan"
        else:
            chosen = select(
                [c for c in cands if "plan" in c.terms] or cands,
                SelectionConfig(combination=cfg.combination, gate=cfg.gate, level="L4"),
            )
            picked, reason = chosen.chosen, chosen.reason
    if picked is None or picked.index not in plans:
        result.abstained = reason or "no candidate has a collision-free plan"
        result.timings_ms = {**timer.ms, "total": 1000 * (time.perf_counter() - t_start)}
        return result
    grasp = picked
    result.selected = grasp.as_dict()
    _say(
        progress, f"[plan] {len(plans)}/{len(ranked)} planned; chose #{grasp.index} (score {grasp.score:.3f})"
    )

    if not cfg.execute:
        result.timings_ms = {**timer.ms, "total": 1000 * (time.perf_counter() - t_start)}
        world.close()
        return result

    # Execute the skill stage by stage and check each stage against the simulator's truth.
    frames: list[np.ndarray] | None = [] if cfg.video_path else None
    executor = WorldExecutor(world, frames, cfg.video_fps, camera="video")

    def allow(name: str, allowed: bool) -> None:
        # The planner knows the target by its cloud's name, whatever the object is called.
        if allowed:
            cworld.allow("target", HAND_LINKS)
        else:
            cworld.disallow("target")

    runner = SkillRunner(executor=executor, planner=planner, allow_contact=allow, tcp_pose=model.fk)
    free_plan, _ = plans[grasp.index]
    held: dict[str, HeldObject] = {}

    def do_grasp() -> None:
        runner.grasp(grasp, intent.target)
        if not category(intent.target).fixed:
            # The object now moves with the hand: its old cloud is no longer an obstacle.
            cworld.remove("target")
        held["obj"] = HeldObject.from_world(
            grasp.pose_matrix(), cloud.points, {k: v for k, v in parts.items() if len(v)}
        )

    def look_again() -> None:
        # Objects shift in the fingers while they close; look at the held object once lifted so
        # that the carry, hang or pour aims with where it really is in the hand.
        view = world.render()
        try:
            seen = world.observed_cloud(view, intent.target, seed=cfg.seed + 2)
        except ValueError:
            return  # hidden by the hand: keep the grasp-time estimate
        now = ObjectCloud(
            seen.points,
            seen.category,
            part_labels=seen.part_labels,
            part_names=seen.part_names,
            object_center=_perceived_center(seen.points),
        )
        if len(now) < 50:
            return
        seen_parts = {k: now.points[source.ground(now, k) >= 0.5] for k in parts}
        if any(len(seen_parts[k]) < 10 for k in parts):
            return
        held["obj"] = HeldObject.from_world(model.fk(world.arm_q()), now.points, seen_parts)

    def lift_and_look() -> None:
        runner.lift()
        look_again()

    stages: list[tuple[str, Callable[[], None]]] = [
        ("approach", lambda: runner.approach(grasp, free_plan)),
        ("grasp", do_grasp),
    ]
    action = intent.next_action
    if action in (NextAction.OPEN, NextAction.PULL):
        assert pull_axis is not None
        stages.append(
            ("pull", lambda: runner.pull(-pull_axis if np.dot(pull_axis, grasp.approach) > 0 else pull_axis))
        )
    else:
        stages.append(("lift", lift_and_look))
        if action in (NextAction.PLACE, NextAction.STACK):
            assert dest_region is not None
            stages.append(("place", lambda: runner.place(held["obj"], dest_region)))
        elif action is NextAction.HANG:
            assert dest_region is not None and dest_support is not None
            ring = next(p for p in intent.keep_clear) if intent.keep_clear else "handle"

            def do_hang() -> None:
                # Hooks meet at the pole: drop what is near the pole's axis so that each hook
                # is its own cluster, then take the one nearest the mug.
                pole_xy = np.median(dest_support[:, :2], axis=0)
                outer = dest_region[np.linalg.norm(dest_region[:, :2] - pole_xy, axis=1) > 0.03]
                hook = _cluster_nearest(outer if len(outer) >= 10 else dest_region, region.mean(0))
                runner.hang(held["obj"], ring, hook, dest_support)

            stages.append(("hang", do_hang))
        elif action is NextAction.POUR:
            assert dest_region is not None
            use = intent.use_region or intent.grasp_region
            stages.append(("pour", lambda: runner.pour(held["obj"], use, dest_region)))
            stages.append(("untilt", runner.untilt))

    task.begin(world)
    sim_t0 = world.time
    ok_so_far = True
    with timer("execute"):
        executor._frame()
        for report in stage_iter(stages):
            if not report.executed:
                result.stages[report.name] = False
                result.details[report.name] = report.reason
                _say(progress, f"[execute] {report.name}: could not run ({report.reason})")
                ok_so_far = False
                break
            check = task.check(report.name, world)
            passed = True if check is None else check.ok
            result.stages[report.name] = passed
            if check is not None:
                result.details[report.name] = check.detail
            _say(
                progress,
                f"[execute] {report.name}: {'ok' if passed else 'FAILED'}"
                + (f" ({check.detail})" if check is not None else ""),
            )
            if not passed:
                ok_so_far = False
                break
    for name, _ in stages:
        result.stages.setdefault(name, False)
    result.success = ok_so_far and all(result.stages.values())
    result.sim_seconds = world.time - sim_t0
    result.timings_ms = {**timer.ms, "total": 1000 * (time.perf_counter() - t_start)}
    if frames:
        import imageio.v2 as imageio

        imageio.mimwrite(cfg.video_path, frames, fps=cfg.video_fps, macro_block_size=1)
        _say(progress, f"[video] {len(frames)} frames -> {cfg.video_path}")
    world.close()
    return result
