"""Skills and grasp samplers as plug-ins, and the tasks that name them kept in step."""

from __future__ import annotations

import numpy as np
import pytest

from afford_core.types import NextAction
from afford_planner.samplers import DEFAULT_SAMPLERS, SAMPLERS, GraspSampler, SamplerContext
from afford_planner.skills import SKILLS, Skill, skill_for_action
from afford_sim.tasks import TASKS, CompositeTask


@pytest.mark.parametrize("task_id", TASKS.names())
def test_every_task_judges_every_stage_of_its_skill(task_id: str) -> None:
    """A stage without a check would count as passed: each is checked or declared unjudged."""
    cls = TASKS.get(task_id)
    if issubclass(cls, CompositeTask):  # its steps are tasks of their own, judged by their checks
        assert len(cls.steps) >= 2
        assert all(not issubclass(TASKS.get(s), CompositeTask) for s in cls.steps), cls.steps
        return
    skill = SKILLS.get(cls.skill)
    served = any(a in skill.actions for a in cls.actions)
    assert served, f"{task_id}: {cls.skill} serves none of {cls.actions}"
    for stage in skill.stage_names:
        judged = hasattr(cls, f"check_{stage}")
        assert judged != (stage in cls.unchecked_stages), f"{task_id}: stage {stage!r}"
    # A composite sets down what this skill still holds (afford_sim.tasks.sets_down) by the
    # task's word: it must be the skill's.
    assert cls.keeps_hold == skill.keeps_hold, f"{task_id}: keeps_hold differs from the {cls.skill} skill's"


def test_skills_are_found_by_name_and_by_action() -> None:
    assert {"pick", "place", "hang", "pour", "open", "push"} <= set(SKILLS.names())
    assert skill_for_action(NextAction.POUR) == "pour"
    assert skill_for_action(NextAction.CLOSE) == "open"
    assert skill_for_action(NextAction.PUSH) == "push"
    with pytest.raises(ValueError, match="no skill serves 'hand_over'"):
        skill_for_action(NextAction.HAND_OVER)


def test_a_skill_must_declare_itself() -> None:
    with pytest.raises(TypeError, match="needs a docstring"):

        class Mute(Skill):  # noqa: F841 - defining it is the test
            pass

    class Blank(Skill):
        """Declares nothing."""

    with pytest.raises(ValueError, match="actions and stage names"):
        SKILLS.register("blank", Blank)
    assert "blank" not in SKILLS


def test_samplers_are_registered_and_the_defaults_exist() -> None:
    assert set(DEFAULT_SAMPLERS) <= set(SAMPLERS.names()) and "antipodal" in SAMPLERS
    for name, cls in SAMPLERS.items():
        assert issubclass(cls, GraspSampler) and cls.name == name


def test_samplers_stay_out_of_situations_that_are_not_theirs() -> None:
    """The enclosing sampler only for a body to hold, the axis sampler only for an object
    without functional parts: each proposes nothing elsewhere."""
    from afford_core.robots import get_robot
    from afford_core.types import Intent, ObjectCloud

    rng = np.random.default_rng(0)
    handle = rng.normal([0.5, 0.0, 0.05], [0.04, 0.005, 0.005], size=(300, 3))
    cloud = ObjectCloud(handle, "hammer", part_labels=np.zeros(300, dtype=int), part_names=("handle", "head"))
    intent = Intent(target="hammer", grasp_region="handle", next_action=NextAction.PICK)
    ctx = SamplerContext(intent=intent, region=handle, cloud=cloud, gripper=get_robot("fr3").gripper)
    assert not ctx.round_body
    assert SAMPLERS.get("enclosing")().sample(ctx) == []
    assert SAMPLERS.get("axis")().sample(ctx) == []
    assert len(SAMPLERS.get("affordance")().sample(ctx)) > 0
