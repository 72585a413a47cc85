"""Skills: the motions that turn a chosen grasp into an interaction, stage by stage.

:mod:`~afford_planner.skills.motions` holds the robot's motions (approach, grasp, lift, place,
pour, hang, pull) and the executor protocol; :mod:`~afford_planner.skills.base` the skill
plug-in and its registry :data:`SKILLS`; :mod:`~afford_planner.skills.library` the registered
skills. docs/adding_a_skill.md walks through a new one.
"""

from afford_planner.skills import library as _library  # noqa: F401  (registers the skills)
from afford_planner.skills.base import SKILLS, Seen, Skill, SkillContext, Stage, skill_for_action
from afford_planner.skills.motions import (
    Executor,
    HeldObject,
    SkillConfig,
    SkillError,
    SkillRunner,
    StageReport,
    stage_iter,
)

__all__ = [
    "SKILLS",
    "Executor",
    "HeldObject",
    "Seen",
    "Skill",
    "SkillConfig",
    "SkillContext",
    "SkillError",
    "SkillRunner",
    "Stage",
    "StageReport",
    "skill_for_action",
    "stage_iter",
]
