"""Evaluation suites: named lists of task ids (``afford_sim.tasks``), cycled over a suite's scenes.

A scene of a suite runs its task asked with the task's canonical instruction, so the sentence
every record stores is the one a person would give; :func:`check_suites` verifies that each
task exists and that its instruction parses back to it, so that a suite cannot silently evaluate
fewer tasks than it names.
"""

from __future__ import annotations

from afford_perception.parser import parse
from afford_sim.tasks import TASKS, find_task, get_task

SUITES: dict[str, tuple[str, ...]] = {
    "pick_and_place": ("place-banana-plate-v1", "place-cube-bowl-v2"),
    "hang": ("hang-mug-v1",),
    "pour": ("pour-paper-cup-v1", "pour-kettle-v1"),
    "tool_by_handle": ("pick-scoop-v1", "pick-hammer-v1", "pick-pan-v1"),
    "drawer": ("open-drawer-v1",),
}


def suite_names() -> list[str]:
    """Names of the suites, in definition order."""
    return list(SUITES)


def suite_tasks(suite: str) -> tuple[str, ...]:
    """The task ids of ``suite``; a clear error naming the known suites otherwise."""
    if suite not in SUITES:
        raise KeyError(f"unknown suite {suite!r}; suites: {suite_names()}")
    return SUITES[suite]


def task_for_scene(suite: str, scene_index: int) -> str:
    """The task id of scene ``scene_index`` of ``suite``: the suite's tasks in turn."""
    if scene_index < 0:
        raise ValueError(f"scene_index must be >= 0, got {scene_index}")
    tasks = suite_tasks(suite)
    return tasks[scene_index % len(tasks)]


def sentence_for(suite: str, scene_index: int) -> str:
    """The sentence of scene ``scene_index`` of ``suite``: its task's canonical instruction."""
    return get_task(task_for_scene(suite, scene_index)).instruction


def check_suites() -> None:
    """Every suite task exists and its instruction asks for it; raise naming the first that fails."""
    for suite, tasks in SUITES.items():
        for task_id in tasks:
            if task_id not in TASKS:
                raise ValueError(f"suite {suite!r}: no task {task_id!r}")
            sentence = get_task(task_id).instruction
            try:
                found = find_task(parse(sentence))
            except Exception as err:  # parse and task errors alike: name the suite and sentence
                raise ValueError(f"suite {suite!r}: {task_id}'s {sentence!r} cannot run: {err}") from err
            if found != task_id:
                raise ValueError(f"suite {suite!r}: {task_id}'s {sentence!r} asks for {found}")
