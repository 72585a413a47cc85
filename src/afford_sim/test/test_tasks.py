"""Tasks by id: the registry, each task's scene, instructions and documentation."""

from __future__ import annotations

import pytest

from afford_perception.parser import parse, parse_steps
from afford_sim.scene import sample_scene
from afford_sim.tasks import TASKS, TIERS, PickTask, find_steps, find_task, get_task, register_task, task_ids


@pytest.mark.parametrize(
    ("task_id", "objects"),
    [
        ("pick-scoop-v1", {"scoop"}),
        ("place-banana-plate-v1", {"banana", "plate"}),
        ("hang-mug-v1", {"mug", "rack"}),
        ("pour-paper-cup-v1", {"paper_cup", "bowl"}),
        ("open-drawer-v1", {"cabinet"}),
        ("stack-cube-v1", {"cube", "cube_2"}),
        ("place-mug-shelf-v1", {"mug", "shelf"}),
        ("place-paper-cup-shelf-v1", {"paper_cup", "shelf"}),
        ("stack-paper-cup-v1", {"paper_cup", "paper_cup_2"}),
    ],
)
def test_task_builds_a_placeable_scene_of_its_objects(task_id: str, objects: set[str]) -> None:
    """The scene must hold exactly the task's objects, placed without overlap, for any seed a
    benchmark draws."""
    task = get_task(task_id)
    for seed in range(3):
        placed = sample_scene(task.scene(seed), seed=seed)
        assert set(placed.names) == objects


@pytest.mark.parametrize("task_id", task_ids())
def test_every_instruction_asks_for_its_task(task_id: str) -> None:
    """The CLI and the task server find a task from a sentence: each phrasing a task lists must
    lead back to it, or `afford run "<instruction>"` would run another task."""
    cls = TASKS.get(task_id)
    assert len(cls.instructions) >= 2
    for sentence in cls.instructions:
        assert find_steps(parse_steps(sentence)) == task_id, sentence


def test_every_task_documents_itself_and_declares_what_it_needs() -> None:
    for task_id, cls in TASKS.items():
        doc = cls.__doc__ or ""
        assert doc.startswith(f"{task_id}: {cls.instructions[0]}."), task_id
        assert "Randomized:" in doc and "Success:" in doc, task_id
        assert cls.tier in TIERS and cls.skill and cls.target and cls.robots, task_id
        assert get_task(task_id).randomization(), task_id


def test_drawn_randomization_is_recorded_and_seeded() -> None:
    task = get_task("place-banana-plate-v1")
    a = task.drawn(sample_scene(task.scene(4), seed=4))
    assert set(a) == {"banana", "plate"} and {"asset_seed", "xyz", "yaw_deg"} <= set(a["banana"])
    assert task.drawn(sample_scene(task.scene(4), seed=4)) == a
    assert task.drawn(sample_scene(task.scene(5), seed=5)) != a


def test_tiers_follow_affordsim() -> None:
    assert TASKS.get("pick-banana-v1").tier == "easy"  # a generic grasp
    assert TASKS.get("pick-scoop-v1").tier == "medium"  # by its handle
    assert TASKS.get("hang-mug-v1").tier == "hard"  # AffordSim's hang_mugcup
    by_tier = set(task_ids(tier="easy")) | set(task_ids(tier="medium")) | set(task_ids(tier="hard"))
    assert by_tier == set(TASKS.names())


def test_an_intent_without_a_task_is_refused_with_what_is_supported() -> None:
    """A parsed but unsupported task must stop before a scene is built, naming what can run."""
    with pytest.raises(ValueError, match="no task yet for push box.*supported: pick the"):
        find_task(parse("push the box"))


def test_unknown_ids_and_bad_registrations_are_refused() -> None:
    with pytest.raises(KeyError, match="unknown task 'juggle-v1'; known: .*hang-mug-v1"):
        get_task("juggle-v1")
    with pytest.raises(ValueError, match="already registered"):
        register_task(PickTask, "pick-cube-v1", target="mug", tier="easy", instructions=("pick up the mug",))
    with pytest.raises(ValueError, match="must end in a version"):
        register_task(PickTask, "pick-mug", target="mug", tier="easy", instructions=("pick up the mug",))
    with pytest.raises(ValueError, match="tier"):
        register_task(PickTask, "pick-mug-v9", target="mug", tier="trivial", instructions=("x",))  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="unicorn"):
        register_task(PickTask, "pick-unicorn-v1", target="unicorn", tier="easy", instructions=("x",))
    with pytest.raises(TypeError, match="task family"):
        PickTask()


def test_a_check_is_a_python_bool() -> None:
    """A numpy.bool_ from a check broke `afford run --json` (issue 16): Check coerces."""
    import json

    import numpy as np

    from afford_sim.tasks import Check

    check = Check(np.float64(3.0) > 2.0, "numpy comparison")
    assert type(check.ok) is bool
    json.dumps({"ok": check.ok})


def test_pinned_shapes_name_real_parameters_within_their_generators_limits() -> None:
    """A task's pinned shape range must name a parameter of the object's generator and lie
    within the values the generator accepts by hand, or every scene of the task would fail."""
    from afford_sim.assets.library import GENERATORS

    pinned = {t: get_task(t).shapes for t in TASKS.names() if get_task(t).shapes}
    assert {"place-cube-mug-v2", "place-banana-bowl-v2", "place-carrot-bowl-v2"} <= set(pinned)
    for task_id, shapes in pinned.items():
        task = get_task(task_id)
        for obj, ranges in shapes.items():
            limits = GENERATORS[obj].params.limits()
            for name, (lo, hi) in ranges.items():
                assert name in limits, (task_id, obj, name)
                assert limits[name][0] <= lo <= hi <= limits[name][1], (task_id, obj, name)
        assert any("drawn in" in v["shape"] for v in task.randomization().values()), task_id


def test_a_chest_task_is_found_by_the_drawer_the_sentence_names() -> None:
    """The chest's drawers look alike: the sentence says which, and only that drawer's task
    runs it; a drawer no task opens is refused with the ones that are."""
    assert find_steps(parse_steps("open the lowest drawer", ["chest"])) == "open-chest-bottom-drawer-v1"
    assert find_steps(parse_steps("pull the upper drawer open", ["chest"])) == "open-chest-top-drawer-v1"
    with pytest.raises(ValueError, match="middle drawer; tasks work its bottom drawer, top drawer"):
        find_steps(parse_steps("open the middle drawer", ["chest"]))
