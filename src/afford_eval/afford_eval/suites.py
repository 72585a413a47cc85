"""Evaluation suites: named lists of task ids (``afford_sim.tasks``), cycled over a suite's scenes.

A scene of a suite runs its task asked with the task's canonical instruction, so the sentence
every record stores is the one a person would give; :func:`check_suites` verifies that each
task exists and that its instruction parses back to it, so that a suite cannot silently evaluate
fewer tasks than it names.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from afford_perception.parser import parse
from afford_sim.scene import ObjectSpec, Relative, SceneSpec, Window
from afford_sim.tasks import TASKS, find_task, get_task

SUITES: dict[str, tuple[str, ...]] = {
    "pick_and_place": ("place-banana-plate-v1", "place-cube-bowl-v2"),
    "hang": ("hang-mug-v1",),
    "pour": ("pour-paper-cup-v1", "pour-kettle-v1"),
    "tool_by_handle": ("pick-scoop-v1", "pick-hammer-v1", "pick-pan-v1"),
    "drawer": ("open-drawer-v1",),
    "gate_edge": ("pick-hammer-v1", "pick-scoop-v1", "pick-pan-v1"),
    "gate_clutter": ("pick-hammer-v1", "pick-scoop-v1", "pick-pan-v1"),
}


def _at_the_reach_edge(spec: SceneSpec, seed: int) -> SceneSpec:
    """The target (the scene's first object) in a 12 x 24 cm window centred 2 cm short of the
    reach box's far face (x = 0.75 m, ``TermsConfig.workspace_max``), at any yaw, so a long
    tool lies partly inside and partly outside the box and its candidates' reach differs; a
    block 2-4 cm to its right, so their clearance differs too. This is where the feasibility
    gate can matter at all: in the other suites every candidate is inside the box."""
    target = spec.objects[0]
    moved = dataclasses.replace(target, placement=Window(center=(0.73, 0.0), size=(0.12, 0.24),
                                                         yaw=(-math.pi, math.pi)))
    block = ObjectSpec("clutter", "cube", seed % 10_000,
                       Relative("right_of", target.name, distance=0.03, jitter=0.01))
    return dataclasses.replace(spec, objects=(moved, *spec.objects[1:], block))


#: Blocks crowded round the target in the clutter suite; the free gap each is placed at from
#: the target's footprint along its direction, and the random shift on both axes (m).
CLUTTER_BLOCKS = 4
CLUTTER_GAP = 0.005
CLUTTER_JITTER = 0.01


def _in_clutter(spec: SceneSpec, seed: int) -> SceneSpec:
    """The target where its task puts it, with four blocks about 1-5 cm from its footprint in
    random directions (each a seeded ``near`` placement, overlaps redrawn), so the gripper's
    clearance differs from one candidate to the next and for many falls below the 5 cm margin:
    the other half of what the gate reads (reach varies in ``gate_edge``)."""
    target = spec.objects[0]
    near = Relative("near", target.name, distance=CLUTTER_GAP, jitter=CLUTTER_JITTER)
    blocks = tuple(ObjectSpec(f"clutter_{i}", "cube", (seed + 7919 * i) % 10_000, near)
                   for i in range(CLUTTER_BLOCKS))
    return dataclasses.replace(spec, objects=(*spec.objects, *blocks))


#: What ``--suite all`` runs: the suites whose scenes are their tasks' own.
STANDARD_SUITES: tuple[str, ...] = ("pick_and_place", "hang", "pour", "tool_by_handle", "drawer")

#: Suites whose scenes are their tasks' scenes changed for what the suite measures.
SCENE_VARIANTS: dict[str, Callable[[SceneSpec, int], SceneSpec]] = {
    "gate_edge": _at_the_reach_edge, "gate_clutter": _in_clutter}


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


def scene_for(suite: str, scene_index: int, seed: int) -> SceneSpec:
    """The scene of ``scene_index`` of ``suite``: its task's scene for ``seed``, changed by the
    suite's variant if it has one (:data:`SCENE_VARIANTS`)."""
    spec = get_task(task_for_scene(suite, scene_index)).scene(seed)
    variant = SCENE_VARIANTS.get(suite)
    return variant(spec, seed) if variant is not None else spec


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
