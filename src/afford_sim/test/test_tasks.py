"""Tasks: which scene a sentence gets, and that an unsupported intent is refused clearly."""

from __future__ import annotations

import pytest

from afford_perception.parser import parse
from afford_sim.scene import sample_scene
from afford_sim.tasks import TASKS, task_for


@pytest.mark.parametrize(
    ("sentence", "task", "objects"),
    [
        ("pick up the scoop", "pick", {"scoop"}),
        ("put the banana on the plate", "place", {"banana", "plate"}),
        ("hang the mug on the rack", "hang", {"mug", "rack"}),
        ("pour the paper cup into the bowl", "pour", {"paper_cup", "bowl"}),
        ("open the drawer", "open_drawer", {"cabinet"}),
    ],
)
def test_sentence_gets_its_task_and_a_placeable_scene(sentence: str, task: str, objects: set[str]) -> None:
    """The scene must hold exactly the objects the sentence names, placed without overlap, for
    any seed a benchmark draws."""
    t = task_for(parse(sentence))
    assert t.name == task
    for seed in range(3):
        placed = sample_scene(t.scene(seed), seed=seed)
        assert set(placed.names) == objects


def test_every_task_documents_its_randomization_and_success() -> None:
    for cls in TASKS.values():
        doc = cls.__doc__ or ""
        assert "Randomized:" in doc and "Success:" in doc, cls.name


def test_an_intent_without_a_skill_is_refused_with_what_is_supported() -> None:
    """A parsed but unsupported task must stop before a scene is built, naming what can run."""
    with pytest.raises(ValueError, match="no skill yet for push box.*supported: pick"):
        task_for(parse("push the box"))
