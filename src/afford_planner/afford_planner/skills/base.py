"""Skills as plug-ins: a registered skill is a sequence of named stages.

A :class:`Skill` turns a chosen, planned grasp into its stages, each a named callable run in
order (``stage_iter``); the simulator's task has a check for every stage it judges
(``afford_sim.tasks``, ``check_<stage>``), and a test keeps the two in step. Stages plan from the
state the previous one left, through the :class:`~afford_planner.skills.motions.SkillRunner`'s
motions, and know the object only through what perception saw (:class:`SkillContext`).

    @SKILLS.register("pour")
    class Pour(GraspSkill):
        actions = (NextAction.POUR,)
        stage_names = ("approach", "grasp", "lift", "pour", "untilt")
        ...

A skill registered under a name is found by a task's ``skill`` (``afford tasks``), or, where no
task is known (the ROS graph on the real robot), by the parsed next action
(:func:`skill_for_action`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from afford_core.geometry import Hinge
from afford_core.grasp import GraspCandidate
from afford_core.registry import Registry
from afford_core.types import Intent, NextAction
from afford_planner.motion import PlanResult
from afford_planner.skills.motions import HeldObject, SkillRunner

Stage = tuple[str, Callable[[], None]]
"""A stage: its name and the callable that plans and executes it (raises ``SkillError``)."""
Seen = tuple[np.ndarray, dict[str, np.ndarray]]
"""The held target seen again: its points and its grounded parts (world frame)."""


@dataclass
class SkillContext:
    """What a skill's stages act on.

    Attributes:
        intent: The parsed task.
        grasp: The chosen candidate.
        runner: The robot's motions (plans each stage from the measured state).
        approach_plan: The free-space plan to the pre-grasp pose, made while ranking.
        cloud_points: The target's observed points (world).
        parts: The target's grounded parts (world points): the grasp region, the parts kept
            clear, the part used by the next action.
        dest_region: The destination's receiving part (place, hang, pour), if any.
        dest_support: The rest of the destination (a rack's pole), if any.
        pull_axis: The opening direction of a drawer or door (furniture), if any.
        hinge: A hinged door's hinge as perceived (open and close swing the handle about it),
            if the part that moves is hinged.
        push_goal: Where a pushed object's centre must end (world), if the task pushes.
        obstacles: Every seen point but the target's (the clearance term's cloud); a place finds
            in them what already lies on its receiver (:func:`~afford_planner.skills.motions.occupied_on`).
        release_target: Called once the grasp closed on a free object: the object moves with the
            hand from then on, so its old cloud is no longer an obstacle.
        release_moving: Called before a door swings: the door and its handle move with the
            hand from then on, so their points leave the planner's world (the body's stay).
        look_again: Observes the held target again (after the lift), or None.
        held: Filled by the grasp stage: the held object in the TCP frame, as the later stages
            see it.
        set_down: After its own stages, set the still-held object down where it stood (a
            composite's later step takes it again: the mug poured, then hung); only for a skill
            that :attr:`Skill.keeps_hold`.
    """

    intent: Intent
    grasp: GraspCandidate
    runner: SkillRunner
    approach_plan: PlanResult
    cloud_points: np.ndarray
    parts: Mapping[str, np.ndarray]
    dest_region: np.ndarray | None = None
    dest_support: np.ndarray | None = None
    pull_axis: np.ndarray | None = None
    hinge: Hinge | None = None
    push_goal: np.ndarray | None = None
    obstacles: np.ndarray | None = None
    release_target: Callable[[], None] = lambda: None
    release_moving: Callable[[], None] = lambda: None
    look_again: Callable[[], Seen | None] = lambda: None
    held: dict[str, HeldObject] = field(default_factory=dict)
    set_down: bool = False

    @property
    def region(self) -> np.ndarray:
        """The grounded grasp region."""
        return np.asarray(self.parts[self.intent.grasp_region])


class Skill:
    """Base class: a skill's name, the next actions it serves and its stages, in order."""

    name: ClassVar[str] = ""
    actions: ClassVar[tuple[NextAction, ...]] = ()
    stage_names: ClassVar[tuple[str, ...]] = ()
    keeps_hold: ClassVar[bool] = False
    """The object is still in the hand after the last stage (a pick, a pour): it can be set
    down again (:attr:`SkillContext.set_down`, the ``set_down`` stage)."""

    def stages(self, ctx: SkillContext) -> list[Stage]:
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is None:
            raise TypeError(f"skill {cls.__name__} needs a docstring: what it does, stage by stage")


def _stamp(name: str, cls: type[Skill]) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Skill)):
        raise TypeError(f"skill {name!r} must be a Skill subclass")
    if not cls.stage_names or not cls.actions:
        raise ValueError(f"skill {name!r} must declare its actions and stage names")
    cls.name = name


SKILLS: Registry[type[Skill]] = Registry("skill", on_load=_stamp)


def skill_for_action(action: NextAction) -> str:
    """The registered skill that serves ``action`` (the first, by name)."""
    for name, cls in SKILLS.items():
        if action in cls.actions:
            return name
    raise ValueError(f"no skill serves {action.value!r}; skills: {', '.join(SKILLS.names())}")
