"""One task in one scene: perceive, ground, propose, rank, plan, and execute a chosen grasp.

An :class:`Episode` holds what the pipeline learned about a scene so that its steps can be
run, timed and reused one by one: the spine runs them in order; an evaluation can prepare a
scene once, save the world's state, and execute several candidates from that same state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from afford_core.geometry import (
    Hinge,
    door_hinge,
    front_normal,
    perceived_center,
    spout_direction,
    voxel_down,
)
from afford_core.grasp import GraspCandidate
from afford_core.ontology import category
from afford_core.robots import DEFAULT_ROBOT, RobotDescription, get_robot
from afford_core.types import Intent, NextAction, ObjectCloud, region_names
from afford_perception.grounding import GroundingSource
from afford_planner.collision import CollisionWorld
from afford_planner.ik import arm_reach
from afford_planner.motion import MotionPlanner, PlannerConfig, PlanResult
from afford_planner.push import push_goal
from afford_planner.robot_model import RobotModel
from afford_planner.samplers import DEFAULT_SAMPLERS, SamplerContext, propose
from afford_planner.selection import Selection, SelectionConfig, select
from afford_planner.skills import (
    SKILLS,
    Executor,
    Seen,
    SkillConfig,
    SkillContext,
    SkillRunner,
    Stage,
    skill_for_action,
)
from afford_planner.task_constraints import TaskContext, compile_constraints, fill_task_terms, load_axis
from afford_planner.terms import TermsConfig, fill_terms, gripper_geometry
from afford_sim.tasks import Task
from afford_sim.world import BatchWorld

FURNITURE_ACTIONS = (NextAction.OPEN, NextAction.PULL, NextAction.CLOSE)


def _observed(world: BatchWorld, obs: Any, name: str, seed: int) -> ObjectCloud:
    raw = world.observed_cloud(obs, name, seed=seed)
    # The simulator knows the true centre; the robot only knows what it saw.
    return ObjectCloud(
        raw.points,
        raw.category,
        part_labels=raw.part_labels,
        part_names=raw.part_names,
        object_center=perceived_center(raw.points),
    )


@dataclass(frozen=True)
class Choice:
    """What :meth:`Episode.choose` decided.

    Attributes:
        grasp: The chosen candidate, or None when the episode abstains.
        reason: Why it abstains; empty when a grasp was chosen.
        eligible: Candidates that passed the feasibility gate.
        planned: Candidates with a collision-free plan.
        considered: Candidates the motion planner was asked for.
    """

    grasp: GraspCandidate | None
    reason: str
    eligible: int
    planned: int
    considered: int


@dataclass(frozen=True)
class TableBox:
    """The support surface as the planner models it: a box of ``size`` (x, y, thickness)
    centred at ``pose`` (``TableSpec.pose()``: the slab's centre, half a thickness below the top)."""

    size: tuple[float, float, float]
    pose: np.ndarray

    def __post_init__(self) -> None:
        if len(self.size) != 3 or min(self.size) <= 0:
            raise ValueError(f"table size must be three positive lengths, got {self.size}")
        if np.shape(self.pose) != (4, 4) or not np.all(np.isfinite(self.pose)):
            raise ValueError("table pose must be a finite 4x4 matrix")


@dataclass
class Episode:
    """The pipeline's state for one task in one scene.

    Two ways to feed it: with a ``world`` (the batch world: :meth:`perceive` renders and
    back-projects, :meth:`ground` calls the source), or, as the ROS graph's planner does, with
    ``table`` and ``arm_q`` and what perception already grounded (:meth:`observe`).

    Attributes:
        intent: The parsed task.
        task: The simulator task (scene and stage checks); None outside the batch world.
        world: The batch world the scene lives in; None when perception happens elsewhere.
        source: The grounding source; None when regions arrive grounded (:meth:`observe`).
        seed: Seed for the camera noise and the samplers.
        cloud: The target's observed cloud.
        parts: Grounded points per part of the target (grasp region, parts kept clear, the
            part used by the next action).
        dest_region / dest_support: The destination's receiving part and the rest of it.
        obstacles: Scene points that are neither the target nor the table (clearance term).
        pull_axis: Opening direction of a drawer or door (furniture tasks only).
        hinge: The hinge of a door that swings (the ontology's ``hinged`` parts), as perceived
            from the door, its handle and the body (:func:`~afford_core.geometry.door_hinge`).
        push_goal: Where a pushed object's centre must end (push tasks only): the middle of the
            destination's grounded receiving part.
        tilt_axis: The horizontal axis the held object's weight would turn it about in the
            fingers: a pour from a spout tips about it (pour tasks whose pouring part was seen
            off to one side); a thing carried by a handle off to one side (a kettle to its
            base) hangs about it (up x the way from the handle to the centre). Grasps
            approaching along it, either way, score as top-down ones on the approach term
            (``HoldsTilt``, ``HoldsLoad``), and the ``tilt`` sampler proposes them.
        candidates: The candidate set, with their terms once ranked.
        plans: Per candidate index, the free-space plan to the pre-grasp and the approach line.
        plan_source: Per planned-for candidate, "default", "reference" (:meth:`plan`) or None.
        plan_failures: Per candidate the default planner failed on, why, by planner.
        table: The support surface, when there is no ``world`` to read it from.
        arm_q: The robot's current joint values, when there is no ``world``.
        look: Observes the held target again after the lift (its cloud and grounded parts), or
            None to keep the grasp-time estimate; replaces the batch world's re-render.
        robot: The robot (a registry name or description); the batch world's when there is a
            world, else the reference arm.
        samplers: The grasp samplers :meth:`propose` runs, in order (``afford_planner.samplers``).
    """

    intent: Intent
    task: Task | None
    world: BatchWorld | None
    source: GroundingSource | None
    seed: int = 0
    cloud: ObjectCloud | None = None
    parts: dict[str, np.ndarray] = field(default_factory=dict)
    dest_region: np.ndarray | None = None
    dest_support: np.ndarray | None = None
    obstacles: np.ndarray = field(default_factory=lambda: np.empty((0, 3)))
    pull_axis: np.ndarray | None = None
    hinge: Hinge | None = None
    push_goal: np.ndarray | None = None
    tilt_axis: np.ndarray | None = None
    candidates: list[GraspCandidate] = field(default_factory=list)
    plans: dict[int, tuple[PlanResult, PlanResult]] = field(default_factory=dict)
    plan_source: dict[int, str | None] = field(default_factory=dict)
    plan_failures: dict[int, dict[str, str]] = field(default_factory=dict)
    skill_config: SkillConfig = field(default_factory=SkillConfig)
    table: TableBox | None = None
    arm_q: Callable[[], np.ndarray] | None = None
    look: Callable[[], tuple[ObjectCloud, dict[str, np.ndarray]] | None] | None = None
    robot: RobotDescription | str | None = None
    samplers: tuple[str, ...] = DEFAULT_SAMPLERS

    def __post_init__(self) -> None:
        if self.world is not None:
            if self.robot is not None and get_robot(self.robot) is not self.world.robot:
                raise ValueError(
                    f"the world holds the {self.world.robot.name}, not the {get_robot(self.robot).name}"
                )
            self.robot = self.world.robot
        robot = get_robot(self.robot or DEFAULT_ROBOT)
        self.robot = robot
        self.gripper = robot.gripper
        self.model = RobotModel(robot)
        self.cworld = CollisionWorld(self.model)
        if self.world is not None:
            spec = self.world.placed.spec.table
            self.table = TableBox((*spec.size, spec.thickness), spec.pose())
            self.arm_q = self.world.arm_q
        if self.table is None or self.arm_q is None:
            raise ValueError("an Episode needs a world, or both a table and an arm_q source")
        self.cworld.add_box("table", np.array(self.table.size), self.table.pose)
        self.planner = MotionPlanner(self.model, self.cworld)

    @property
    def target_name(self) -> str:
        """The target's name in the batch world's scene: the task's (a tower's ``cube_3``), else
        the parsed category (an object of its kind alone in the scene is named by it)."""
        return self.task.target_name if self.task is not None else self.intent.target

    @property
    def region(self) -> np.ndarray:
        """Grounded points of the grasp region."""
        return self.parts[self.intent.grasp_region]

    def unseen_parts(self) -> list[str]:
        """The task's parts besides the grasp region (a spout to pour from, a rim to keep clear)
        that grounding found no point of: the grasps cannot be ranked without them."""
        return [p for p, pts in self.parts.items() if p != self.intent.grasp_region and not len(pts)]

    def unseen_reason(self) -> str | None:
        """Why the episode must abstain for :meth:`unseen_parts`, or for a hinged door whose hinge
        perception did not find (:func:`~afford_core.geometry.door_hinge`: the arc the handle
        must follow is unknown); None when every part was seen."""
        unseen = self.unseen_parts()
        intent = self.intent
        if (not unseen and self.hinge is None and intent.next_action in FURNITURE_ACTIONS
                and intent.use_region in category(intent.target).hinged and len(self.region)):
            return (f"the {intent.target}'s {intent.use_region} swings on a hinge, and perception did not "
                    f"find where from its {intent.grasp_region} and the view (the arc to follow is unknown)")
        if not unseen:
            return None
        return (f"grounding found no {self.intent.target} {' or '.join(unseen)} in the view, which the task "
                "needs to choose a grasp")

    # Perception -------------------------------------------------------------------------------

    def perceive(self) -> None:
        """Render the camera; back-project the target, the destination and the obstacles."""
        assert self.world is not None, "perceive() renders the batch world; use observe() without one"
        obs = self.world.render()
        self.cloud = _observed(self.world, obs, self.target_name, self.seed)
        if self.intent.destination:
            # The task names the receiver in the scene: a second block to stack on is "cube_2".
            dest = (self.task.destination_name if self.task is not None else None) or self.intent.destination
            self._dest_cloud = _observed(self.world, obs, dest, self.seed + 1)
        # Obstacles for the clearance term: everything seen but the target and the support.
        scene = self.world.scene_cloud(obs, exclude=[self.target_name, "table", "floor"])
        self.obstacles = voxel_down(scene, 0.005)
        if len(self.obstacles):
            self.cworld.add_point_cloud("scene", self.obstacles, resolution=0.006)
        self.cworld.add_point_cloud("target", self.cloud.points, resolution=0.01)

    def observe(
        self,
        cloud: ObjectCloud,
        parts: dict[str, np.ndarray],
        obstacles: np.ndarray,
        dest_region: np.ndarray | None = None,
        dest_support: np.ndarray | None = None,
    ) -> None:
        """Take perception's output as it is (the ROS graph: perception grounded the regions)."""
        missing = [p for p in self.region_names() if p not in parts]
        if missing:
            raise ValueError(f"perception did not ground {missing} of the {self.intent.target}")
        self.cloud, self.parts = cloud, dict(parts)
        self.obstacles = np.asarray(obstacles, dtype=float).reshape(-1, 3)
        self.dest_region, self.dest_support = dest_region, dest_support
        if len(self.obstacles):
            self.cworld.add_point_cloud("scene", self.obstacles, resolution=0.006)
        self.cworld.add_point_cloud("target", cloud.points, resolution=0.01)
        self._derive_axes()

    def region_names(self) -> list[str]:
        """The target's parts the task needs grounded (:func:`region_names`)."""
        return region_names(self.intent)

    def _ground(self, cloud: ObjectCloud, part: str) -> np.ndarray:
        assert self.source is not None, "no grounding source: regions arrive through observe()"
        return cloud.points[self.source.ground(cloud, part) >= 0.5]

    def ground(self) -> None:
        """Ground every region the task needs with the configured source."""
        intent, cloud = self.intent, self.cloud
        assert cloud is not None, "perceive() first"
        self.parts = {p: self._ground(cloud, p) for p in self.region_names()}
        dest = getattr(self, "_dest_cloud", None)
        if dest is not None and intent.destination_region:
            self.dest_region = self._ground(dest, intent.destination_region)
            others = [p for p in dest.part_names if p != intent.destination_region]
            if others:
                self.dest_support = np.vstack([self._ground(dest, p) for p in others])
        self._derive_axes()

    def _derive_axes(self) -> None:
        intent, cloud = self.intent, self.cloud
        assert cloud is not None
        if intent.next_action in FURNITURE_ACTIONS:
            face = self.parts.get(intent.use_region or "", np.empty((0, 3)))
            self.pull_axis = front_normal(self.region, face, cloud.points)
            if intent.use_region in category(intent.target).hinged:
                # A door's face and hinge from the handle and the whole cloud's geometry; its
                # face's normal is where the handle is met from.
                self.hinge = door_hinge(self.region, cloud.points)
                if self.hinge is not None:
                    self.pull_axis = self.hinge.normal
        if intent.next_action is NextAction.PUSH and self.dest_region is not None and len(self.dest_region):
            self.push_goal = push_goal(self.dest_region)
        if intent.next_action is NextAction.POUR and category(intent.target).is_spout(intent.use_region):
            spout = spout_direction(self.parts.get(intent.use_region or "", np.empty((0, 3))), cloud.center)
            if spout is not None:
                self.tilt_axis = np.cross([0.0, 0.0, 1.0], spout)
        if self.tilt_axis is None:
            self.tilt_axis = load_axis(intent, self.region, cloud.center)

    # Candidates and ranking -------------------------------------------------------------------

    def propose(self) -> list[GraspCandidate]:
        """Run the configured grasp samplers (``afford_planner.samplers``) on the region and the
        cloud; their candidates are numbered as one set. A push onto a goal runs the push
        sampler alone, whatever ``samplers`` says: a grasp is not a way to push. A push with no
        goal seen has no candidates (the episode abstains rather than push somewhere)."""
        assert self.cloud is not None
        if self.intent.next_action is NextAction.PUSH and self.push_goal is None:
            self.candidates = []
            return self.candidates
        ctx = SamplerContext(intent=self.intent, region=self.region, cloud=self.cloud, gripper=self.gripper,
                             pull_axis=self.pull_axis, push_goal=self.push_goal, tilt_axis=self.tilt_axis,
                             seed=self.seed)
        self.candidates = propose(ctx, ("push",) if self.push_goal is not None else self.samplers)
        return self.candidates

    def score(self, terms: TermsConfig | None, selection: SelectionConfig,
              with_arm_reach: bool = False) -> Selection:
        """Fill the feasibility, function and task terms and rank (levels up to L3).

        The arm's own reach test (IK at each grasp pose) runs when the terms take reach from
        the arm, or when ``with_arm_reach`` asks for the ``reach_arm`` reading anyway (the
        evaluation compares both readings on the same candidates)."""
        cfg = terms or TermsConfig(gripper=gripper_geometry(self.gripper))
        if self.pull_axis is not None:  # the executor meets a handle on a front frontally
            cfg = dataclasses.replace(cfg, preferred_approach=tuple(-self.pull_axis))
        elif self.tilt_axis is not None:  # a spout's pour is held from the side too (``HoldsTilt``)
            tx, ty, tz = (float(v) for v in self.tilt_axis)
            cfg = dataclasses.replace(cfg, other_approaches=((tx, ty, tz), (-tx, -ty, -tz)))
        reach = None
        if cfg.reach_source == "arm" or with_arm_reach:
            assert self.arm_q is not None
            reach = arm_reach(self.model, self.arm_q())
        fill_terms(self.candidates, self.region, self.obstacles, cfg, arm_reach=reach)
        assert self.cloud is not None
        pull = None if self.pull_axis is None else (float(self.pull_axis[0]), float(self.pull_axis[1]), 0.0)
        cx, cy, cz = (float(v) for v in self.cloud.center)
        ctx = TaskContext(object_center=(cx, cy, cz), pull_axis=pull)
        fill_task_terms(self.candidates, compile_constraints(self.intent, self.parts, ctx))
        return select(self.candidates, dataclasses.replace(selection, level="L3"))

    # Stage 2 ------------------------------------------------------------------------------------

    def plan(self, cands: list[GraspCandidate], reference: PlannerConfig | None = None) -> None:
        """Plan each candidate (free space to the pre-grasp, then the straight approach) and
        set its ``plan`` term to 1/L normalised by the best; 0 without a collision-free plan.
        Eligible candidates that were not planned get 0 too, so L4 ranks a consistent set.

        With a ``reference`` planner, a candidate the default planner found no plan for is
        tried again with it (another OMPL planner, a longer budget, more IK restarts) before it
        counts as infeasible: the evaluation executes what any planner can reach, so that a
        method is not scored on the project's planner. A reference plan is executable
        (``plans``) but gives no ``plan`` term: the term is what the robot's own planner knows.
        ``plan_source`` says which planner planned each candidate (None: neither), and
        ``plan_failures`` why each failed planner failed."""
        assert self.arm_q is not None
        q0 = self.arm_q()
        raw: dict[int, float] = {}
        retry: list[GraspCandidate] = []
        for c in cands:
            found, why = self._plan_one(self.planner, q0, c)
            if found is not None:
                self.plans[c.index] = found
                self.plan_source[c.index] = "default"
                raw[c.index] = 1.0 / max(found[0].path_length + found[1].path_length, 1e-6)
            else:
                self.plan_failures[c.index] = {"default": why}
                self.plan_source[c.index] = None
                raw[c.index] = 0.0
                retry.append(c)
        if reference is not None and retry:
            planner = MotionPlanner(self.model, self.cworld, reference)
            for c in retry:
                found, why = self._plan_one(planner, q0, c)
                if found is not None:
                    self.plans[c.index] = found
                    self.plan_source[c.index] = "reference"
                else:
                    self.plan_failures[c.index]["reference"] = why
        best = max(raw.values(), default=0.0)
        for c in self.candidates:
            if c.index in raw:
                c.terms["plan"] = raw[c.index] / best if best > 0 else 0.0
            elif c.terms.get("eligible", 0) > 0:
                c.terms["plan"] = 0.0

    def _plan_one(self, planner: MotionPlanner, q0: np.ndarray,
                  c: GraspCandidate) -> tuple[tuple[PlanResult, PlanResult] | None, str]:
        """Free space to the pre-grasp, then the straight approach; the two plans, or why not."""
        pre = c.pose_matrix()
        pre[:3, 3] -= c.approach * self.skill_config.pregrasp_offset
        free = planner.plan_to_pose(q0, pre)
        if not free.success:
            return None, f"to the pre-grasp: {free.reason}"
        self.cworld.allow("target", self.cworld.hand_links)
        try:
            line = planner.cartesian_path(free.waypoints[-1], c.pose_matrix())
        finally:
            self.cworld.disallow("target")
        if not line.success:
            return None, f"the approach line: {line.reason}"
        return (free, line), ""

    def choose(
        self,
        terms: TermsConfig | None,
        selection: SelectionConfig,
        plan_top_k: int,
        plan_all: bool = False,
        l3: Selection | None = None,
    ) -> Choice:
        """Rank (L3, unless ``l3`` is :meth:`score`'s result already), plan the best
        ``plan_top_k`` eligible candidates and pick by L4, or, as AffordSim's Stage 2 alone
        (``plan_all``), plan every raw candidate and take the shortest collision-free path. Call
        after :meth:`propose`."""
        cands = self.candidates
        l3 = l3 if l3 is not None else self.score(terms, selection)
        if l3.chosen is None and not plan_all:
            return Choice(None, l3.reason, len(l3.eligible), 0, 0)
        by_index = {c.index: c for c in cands}
        eligible = set(l3.eligible)
        ranked = list(cands) if plan_all else [by_index[i] for i in l3.ranking if i in eligible][:plan_top_k]
        self.plan(ranked)
        if plan_all:
            best = max(cands, key=lambda c: (c.terms.get("plan", 0.0), -c.index))
            grasp, reason = (best, "") if best.terms.get("plan", 0.0) > 0 else (None, "")
        else:
            l4 = select(
                [c for c in cands if "plan" in c.terms] or cands, dataclasses.replace(selection, level="L4")
            )
            grasp, reason = l4.chosen, l4.reason
        if grasp is None or grasp.index not in self.plans:
            grasp, reason = None, reason or "no candidate has a collision-free plan"
        return Choice(grasp, reason, len(l3.eligible), len(self.plans), len(ranked))

    # Execution ----------------------------------------------------------------------------------

    def restart(self, state: Any) -> None:
        """Return to a saved world state (``BatchWorld.save_state``) with the planner's world as
        perception left it, so another candidate can be executed from the identical start."""
        assert self.world is not None
        self.world.restore_state(state)
        assert self.cloud is not None
        if "target" not in self.cworld.obstacle_names:
            self.cworld.add_point_cloud("target", self.cloud.points, resolution=0.01)
        self.cworld.disallow("target")

    def _look_again(self) -> tuple[ObjectCloud, dict[str, np.ndarray]] | None:
        """The held target seen again (batch world: render; graph: the ``look`` callable)."""
        if self.look is not None:
            return self.look()
        if self.world is None:
            return None
        try:
            now = _observed(self.world, self.world.render(), self.target_name, self.seed + 2)
        except ValueError:
            return None  # hidden by the hand
        return now, {k: self._ground(now, k) for k in self.parts}

    def skill_name(self) -> str:
        """The skill that runs this episode: the task's, or the one serving the parsed action."""
        return self.task.skill if self.task is not None else skill_for_action(self.intent.next_action)

    def stages(self, grasp: GraspCandidate, executor: Executor, set_down: bool = False) -> list[Stage]:
        """The skill's stages for ``grasp``, as named callables run in order; with ``set_down``,
        and a stage that sets the still-held object down where it stood after them."""
        assert self.cloud is not None and self.arm_q is not None

        def allow(_name: str, allowed: bool) -> None:
            # The planner knows the target by its cloud's name, whatever the object is called.
            if allowed:
                self.cworld.allow("target", self.cworld.hand_links)
            else:
                self.cworld.disallow("target")

        def release_target() -> None:
            if not category(self.intent.target).fixed and "target" in self.cworld.obstacle_names:
                # The object now moves with the hand: its old cloud is no longer an obstacle.
                self.cworld.remove("target")

        def release_moving() -> None:
            # The door and its handle turn with the hand: only the body's points stay obstacles.
            turning = (self.intent.grasp_region, self.intent.use_region)
            moving = [p for k, p in self.parts.items() if k in turning]
            if "target" not in self.cworld.obstacle_names or not moving:
                return
            from scipy.spatial import cKDTree

            pts = self.cloud.points if self.cloud is not None else np.empty((0, 3))
            near = cKDTree(np.vstack(moving)).query(pts, distance_upper_bound=0.015)[0]
            body = pts[~np.isfinite(near)]
            self.cworld.remove("target")
            if len(body):
                self.cworld.add_point_cloud("target", body, resolution=0.01)
                self.cworld.allow("target", self.cworld.hand_links)

        def look_again() -> Seen | None:
            seen = self._look_again()
            return None if seen is None else (seen[0].points, seen[1])

        runner = SkillRunner(executor=executor, planner=self.planner, config=self.skill_config,
                             allow_contact=allow)
        ctx = SkillContext(
            intent=self.intent,
            grasp=grasp,
            runner=runner,
            approach_plan=self.plans[grasp.index][0],
            cloud_points=self.cloud.points,
            parts=self.parts,
            dest_region=self.dest_region,
            dest_support=self.dest_support,
            pull_axis=self.pull_axis,
            hinge=self.hinge,
            push_goal=self.push_goal,
            obstacles=self.obstacles,
            release_target=release_target,
            release_moving=release_moving,
            look_again=look_again,
            set_down=set_down,
        )
        return SKILLS.get(self.skill_name())().stages(ctx)
