"""Evaluation suites: named lists of task sentences, cycled over a suite's scenes.

Every sentence must parse (``afford_perception.parser.parse``) and have a simulator task
(``afford_sim.tasks.task_for``); :func:`check_suites` verifies both, so that a suite cannot
silently evaluate fewer tasks than it names.
"""

from __future__ import annotations

SUITES: dict[str, tuple[str, ...]] = {
    "pick_and_place": ("put the banana on the plate", "place the cube in the bowl"),
    "hang": ("hang the mug on the rack",),
    "pour": ("pour the paper cup into the bowl", "pour water from the kettle into the bowl"),
    "tool_by_handle": (
        "pick up the scoop",
        "pick up the hammer by the handle",
        "pick up the pan by the handle",
    ),
    "drawer": ("open the drawer",),
}


def suite_names() -> list[str]:
    """Names of the suites, in definition order."""
    return list(SUITES)


def suite_sentences(suite: str) -> tuple[str, ...]:
    """The sentences of ``suite``; a clear error naming the known suites otherwise."""
    if suite not in SUITES:
        raise KeyError(f"unknown suite {suite!r}; suites: {suite_names()}")
    return SUITES[suite]


def sentence_for(suite: str, scene_index: int) -> str:
    """The sentence of scene ``scene_index`` of ``suite``: the suite's sentences in turn."""
    if scene_index < 0:
        raise ValueError(f"scene_index must be >= 0, got {scene_index}")
    sentences = suite_sentences(suite)
    return sentences[scene_index % len(sentences)]


def check_suites() -> None:
    """Parse every suite sentence and find its task; raise naming the first that fails."""
    from afford_perception.parser import parse
    from afford_sim.tasks import task_for

    for suite, sentences in SUITES.items():
        for sentence in sentences:
            try:
                task_for(parse(sentence))
            except Exception as err:  # parse and task errors alike: name the suite and sentence
                raise ValueError(f"suite {suite!r}: sentence {sentence!r} cannot run: {err}") from err
