"""The skills: pick, place, hang, pour, open (a drawer or door by its handle) and push.

Every skill that moves a free object starts the same way (:class:`GraspSkill`): the free-space
motion to the pre-grasp pose and the hand opening (``approach``), the straight approach and the
close (``grasp``), the lift with a second look at the held object (``lift``); then its own
stages.
"""

from __future__ import annotations

import numpy as np

from afford_core.geometry import cluster_nearest, perceived_center
from afford_core.ontology import CATEGORIES
from afford_core.types import NextAction
from afford_planner.push import PushConfig
from afford_planner.skills.base import SKILLS, Skill, SkillContext, Stage
from afford_planner.skills.motions import HeldObject, SkillError, occupied_on


def _approach_and_grasp(ctx: SkillContext) -> list[Stage]:
    runner, grasp = ctx.runner, ctx.grasp

    def do_grasp() -> None:
        runner.grasp(grasp, ctx.intent.target)
        ctx.release_target()
        ctx.held["obj"] = HeldObject.from_world(
            grasp.pose_matrix(), ctx.cloud_points, {k: v for k, v in ctx.parts.items() if len(v)}
        )

    return [("approach", lambda: runner.approach(grasp, ctx.approach_plan)), ("grasp", do_grasp)]


class GraspSkill(Skill):
    """Approach, grasp, lift; subclasses add what follows the lift (:meth:`after_lift`)."""

    def stages(self, ctx: SkillContext) -> list[Stage]:
        runner = ctx.runner

        def lift_and_look() -> None:
            runner.lift()
            # Objects shift in the fingers while they close; look at the held object once lifted
            # so that the carry, hang or pour aims with where it really is in the hand.
            seen_again = ctx.look_again()
            if seen_again is None:
                return  # hidden by the hand or no camera: keep the grasp-time estimate
            points, seen = seen_again
            if len(points) >= 50 and all(len(seen.get(k, ())) >= 10 for k in ctx.parts):
                ctx.held["obj"] = HeldObject.from_world(runner.current_pose(), points, seen)

        if ctx.set_down and not self.keeps_hold:
            raise ValueError(f"the {self.name} skill lets go of the object itself; nothing to set down")
        # Put back where it stood (that spot is free: the object left it), upright as it is held.
        def set_down() -> None:
            ctx.runner.place(ctx.held["obj"], table_spot(ctx.cloud_points, 0.0))

        return [*_approach_and_grasp(ctx), ("lift", lift_and_look), *self.after_lift(ctx),
                *([("set_down", set_down)] if ctx.set_down else [])]

    def after_lift(self, ctx: SkillContext) -> list[Stage]:
        return []


@SKILLS.register("pick")
class Pick(GraspSkill):
    """Pick an object up by its grasp region: approach, grasp, lift."""

    actions = (NextAction.PICK,)
    stage_names = ("approach", "grasp", "lift")
    keeps_hold = True


@SKILLS.register("place")
class Place(GraspSkill):
    """Pick, then put the object down centred over the destination's receiving part."""

    actions = (NextAction.PLACE, NextAction.STACK)
    stage_names = ("approach", "grasp", "lift", "place")

    def after_lift(self, ctx: SkillContext) -> list[Stage]:
        dest = ctx.dest_region
        if dest is None and ctx.intent.destination is None:
            # "put the soup can on the table": the work surface itself, beside where it stood.
            dest = table_spot(ctx.cloud_points, ctx.runner.config.table_place_offset)
        if dest is None:
            raise ValueError("place needs the destination's receiving part")
        # What already lies on the receiver (a second thing onto one plate) moves the spot aside.
        receiver = [p for p in (ctx.dest_region, ctx.dest_support) if p is not None and len(p)]
        inside = _goes_inside(ctx)
        occupied = (occupied_on(np.vstack(receiver), ctx.obstacles, inside=inside)
                    if receiver and ctx.obstacles is not None and len(ctx.obstacles) else None)
        # A vessel into one of its kind (a paper cup into a paper cup) has millimetres to spare:
        # centre it by the axis of its base, not by the median of the side the camera saw.
        nest = ctx.intent.target == ctx.intent.destination and inside
        # Held by a handle with a spout opposite it (a kettle onto its base): the two pull the
        # median of the seen points 3-6 cm off the body's axis, and a kettle let go that far
        # off its base's centre tipped over it. The round base's axis goes over the centre
        # instead (base_axis_xy: the median still, when the lowest band is not round). A mug by
        # its handle onto a shelf is aimed as before (aimed by its base, it came 1-2 cm beyond
        # the Kinova's reach, and fell off the UR5e's shelf in 3 of 20 scenes).
        target_cat = CATEGORIES.get(ctx.intent.target)
        by_handle = target_cat is not None and "grasp_handle" in target_cat.affordances.get(
            ctx.intent.grasp_region, ()) and any(target_cat.is_spout(p) for p in target_cat.parts)
        # One thing onto another of its kind (a block on a block, a tower): both centred by
        # their footprints, which one view gets right where its median does not.
        boxes = ctx.intent.target == ctx.intent.destination and not nest
        # A lid onto a pot: over the mouth, its rim on the pot's (see SkillRunner.place).
        cover = target_cat is not None and target_cat.covers and inside
        # A surface things rest on (not one things go into, nor a lid's pot) is found whole
        # where the grounding leaked off it.
        around = None if inside else ctx.dest_support
        return [("place", lambda: ctx.runner.place(ctx.held["obj"], dest, None if cover else occupied,
                                                   round_base=nest or (by_handle and not boxes),
                                                   boxes=boxes, cover=cover, around=around))]


def _goes_inside(ctx: SkillContext) -> bool:
    """Whether the place puts the object inside its receiver: the receiving part affords
    ``contain`` and not ``support`` (a box's inside, a mug's; not a plate or a pan)."""
    cat = CATEGORIES.get(ctx.intent.destination or "")
    return cat is not None and cat.holds_inside(ctx.intent.destination_region)


def table_spot(cloud_points: np.ndarray, offset: float) -> np.ndarray:
    """A 4 x 4 cm patch of the support, ``offset`` (m) sideways from where the object stood,
    towards the robot's centreline (where the arm reaches best): points a place aims at."""
    pts = np.asarray(cloud_points, dtype=float)
    x, y = np.median(pts[:, :2], axis=0)
    z = float(pts[:, 2].min())  # the object stood on the support
    y += offset if y <= 0 else -offset
    gx, gy = np.meshgrid(np.linspace(-0.02, 0.02, 5), np.linspace(-0.02, 0.02, 5))
    return np.column_stack([x + gx.ravel(), y + gy.ravel(), np.full(gx.size, z)])


@SKILLS.register("hang")
class Hang(GraspSkill):
    """Pick (by the body), then thread the object's ring (a mug's handle) onto the nearest hook,
    lower it and let go."""

    actions = (NextAction.HANG,)
    stage_names = ("approach", "grasp", "lift", "hang")

    def after_lift(self, ctx: SkillContext) -> list[Stage]:
        dest, support = ctx.dest_region, ctx.dest_support
        if dest is None or support is None:
            raise ValueError("hang needs the destination's hooks and the pole they stand out of")
        ring = ctx.intent.keep_clear[0] if ctx.intent.keep_clear else "handle"

        def do_hang() -> None:
            # Hooks meet at the pole: drop what is near the pole's axis so that each hook is its
            # own cluster, then take the one nearest the object.
            pole_xy = np.median(support[:, :2], axis=0)
            outer = dest[np.linalg.norm(dest[:, :2] - pole_xy, axis=1) > 0.03]
            hook = cluster_nearest(outer if len(outer) >= 10 else dest, ctx.region.mean(0))
            ctx.runner.hang(ctx.held["obj"], ring, hook, support)

        return [("hang", do_hang)]


@SKILLS.register("pour")
class Pour(GraspSkill):
    """Pick, then tilt the container's pouring part over the destination's opening, and back."""

    actions = (NextAction.POUR,)
    stage_names = ("approach", "grasp", "lift", "pour", "untilt")
    keeps_hold = True

    def after_lift(self, ctx: SkillContext) -> list[Stage]:
        dest = ctx.dest_region
        if dest is None:
            raise ValueError("pour needs the destination's opening")
        use = ctx.intent.use_region or ctx.intent.grasp_region
        cat = CATEGORIES.get(ctx.intent.target)
        spout = cat is not None and cat.is_spout(use)
        return [("pour", lambda: ctx.runner.pour(ctx.held["obj"], use, dest, spout=spout)),
                ("untilt", ctx.runner.untilt)]


@SKILLS.register("open")
class Open(Skill):
    """Grasp a drawer's or door's handle and pull it out along the front's normal (or, to
    close, push it back in): approach, grasp, pull. A hinged door (``ctx.hinge``) is swung
    instead, its handle on the arc about the hinge: open to ``swing_open_deg`` (or the largest
    angle down to ``swing_min_deg`` the arm can follow), or, to close, back by the angle it stands
    open."""

    actions = (NextAction.OPEN, NextAction.PULL, NextAction.CLOSE)
    stage_names = ("approach", "grasp", "pull")

    def stages(self, ctx: SkillContext) -> list[Stage]:
        if ctx.pull_axis is None:
            raise ValueError("open needs the front's outward normal (pull_axis)")
        hinge = ctx.hinge
        cat = CATEGORIES.get(ctx.intent.target)
        if hinge is None and cat is not None and ctx.intent.use_region in cat.hinged:
            # A straight pull would wrench a hinged door: the stage fails instead (the spine's
            # own choice abstains before this, Episode.unseen_reason).
            def no_arc() -> None:
                raise SkillError(f"pull: the {ctx.intent.target}'s {ctx.intent.use_region} swings on a "
                                 "hinge, and perception did not find where")

            return [*_approach_and_grasp(ctx), ("pull", no_arc)]
        if hinge is not None:
            cfg = ctx.runner.config
            if ctx.intent.next_action is NextAction.CLOSE:
                angles = [-float(np.degrees(hinge.opened))]
            else:
                opened = float(np.degrees(hinge.opened))
                goals = np.arange(cfg.swing_open_deg, cfg.swing_min_deg - 1e-9, -5.0)
                angles = [float(a) - opened for a in goals if a > opened]

            def do_swing() -> None:
                ctx.release_moving()
                ctx.runner.swing(hinge.point, hinge.axis, angles)

            runner = ctx.runner

            def do_approach() -> None:
                # The arm goes to the handle on a branch that can follow the whole arc after.
                plan = ctx.approach_plan
                if angles and plan.success and len(plan.waypoints):
                    q_pre = np.asarray(plan.waypoints)[-1]
                    start = runner.arc_start(ctx.grasp, q_pre, hinge.point, hinge.axis, angles[-1])
                    if start is not None:
                        other = runner.planner.plan(runner.executor.arm_q(), start)
                        plan = other if other.success else plan
                runner.approach(ctx.grasp, plan)

            grasp_stage = _approach_and_grasp(ctx)[1]
            return [("approach", do_approach), grasp_stage, ("pull", do_swing)]
        out = ctx.pull_axis if ctx.intent.next_action is not NextAction.CLOSE else -ctx.pull_axis
        return [*_approach_and_grasp(ctx), ("pull", lambda: ctx.runner.pull(out))]


@SKILLS.register("push")
class Push(Skill):
    """Slide an object onto a goal without grasping it: move the open hand to its contact pose
    behind the object (approach), then straight on until the object's centre, carried along,
    reaches the goal, and lift the hand away (push)."""

    actions = (NextAction.PUSH,)
    stage_names = ("approach", "push")

    def stages(self, ctx: SkillContext) -> list[Stage]:
        if ctx.push_goal is None:
            raise ValueError("push needs a goal: the destination's receiving part")
        centre = perceived_center(np.asarray(ctx.cloud_points))
        travel = np.zeros(3)
        travel[:2] = np.asarray(ctx.push_goal)[:2] - centre[:2]
        # The contact pose stands PushConfig.gap behind the object: the hand covers that first.
        length = float(np.linalg.norm(travel))
        if length > 1e-9:
            travel *= (length + PushConfig().gap) / length

        def do_push() -> None:
            ctx.release_target()  # it moves ahead of the hand from here on
            ctx.runner.push(ctx.grasp, travel)

        return [("approach", lambda: ctx.runner.approach(ctx.grasp, ctx.approach_plan)), ("push", do_push)]
