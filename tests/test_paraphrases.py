"""Sentences by an independent author reach the benchmark task they ask for.

``tests/data/benchmark_paraphrases.tsv`` was written by someone who had not read the parser,
the lexicon, the ontology or the tasks (the development set: the parser was improved on it).
Every sentence in it must keep reaching its task. ``benchmark_paraphrases_heldout.tsv`` is a
second set by another author, kept for measurement only (``bench/paraphrase_readout.py``): no
test reads its sentences, so that tuning to it stays visible as a jump in the bench alone.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _readout(name: str = "paraphrase_readout") -> ModuleType:
    path = ROOT / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Development sentences refused on purpose, with what the refusal must say: "on the plate next
#: to the carrot" places relative to a second object, which no skill takes as a target (the
#: place skill finds a free spot by itself); guessing the relation away would be a guess.
REFUSED_BY_DESIGN = {
    ("place-carrot-plate-then-cube-plate-v1",
     "Please put the carrot on the plate first, and then drop the cube on the plate next to the carrot."):
        "'next to'",
}


#: Development sentences the parser does not read yet, with what its refusal says today. Not a
#: design decision: a gap, kept visible here and in the readout, to be closed (issue 11). The
#: pour is split over two clauses whose second names a part of the first clause's object ("tilt
#: the spout") and ends in a purpose ("to pour") that the parser reads as a destination.
NOT_READ_YET = {
    ("pour-kettle-v1", "Hold the kettle by its handle and tilt the spout over the bowl to pour."):
        "no known object",
}


def test_every_development_sentence_reaches_its_task() -> None:
    ro = _readout()
    rows = ro.load()
    assert len(rows) == 157 and len({t for t, _ in rows}) == 23
    missed = {(t, s): why for t, s, got, why in ro.read(rows) if got != t}
    known = {**REFUSED_BY_DESIGN, **NOT_READ_YET}
    unexpected = {k: why for k, why in missed.items() if k not in known or known[k] not in why}
    assert not unexpected, "\n".join(f"{t}: {s!r} -> {why}" for (t, s), why in unexpected.items())
    assert set(missed) == set(known), "a listed sentence now parses: update the list"


def test_the_held_out_set_is_well_formed() -> None:
    """Only its shape: 27 tasks, 5 sentences each, every id a registered task."""
    from afford_sim.tasks import TASKS

    rows = _readout().load(ROOT / "tests" / "data" / "benchmark_paraphrases_heldout.tsv")
    ids = [t for t, _ in rows]
    assert len(rows) == 135 and len(set(ids)) == 27 and all(ids.count(t) == 5 for t in set(ids))
    assert all(t in TASKS for t in ids)


#: The sentences for the eight tasks added at once (a third author, told only what each task
#: does; the parser was then improved on them: a later step's elided receiver or object, and an
#: "it" that can be one thing only) that it does not read yet: gaps, kept visible, to be closed.
#: Among them: "load the box:" and "fill" (the receiver as the object), a verbless step
#: ("kettle into bowl"), and an "it" that could be the kettle or the bowl. Read since: purpose
#: clauses and asides that ask nothing of the task ("so the table is clear", "so it can dry",
#: ", it's been left open"), "dump" (a pour when the thing pours, a put otherwise), "pop the
#: microwave open", two cups stacked or nested with no receiver named ("stack the cups", "nest
#: the paper cups", "one inside the other"), "next ... finally" as sequence words, "pack"
#: with a receiver said once at the end for every step, a verbless "Lid on the pot, please"
#: (where it should be, asked for or said without its article), "microwave door open please" (the
#: state it should be in), a later step's bare "put the soup can in" (the receiver before) and
#: "Onto the tray, please put the three cups that are standing on the table" (a receiver said
#: first; a relative clause that only says they stand on the table).
NEW_TASKS_NOT_READ_YET = {
    ("place-bell-pepper-soup-can-cube-paper-box-v1",
     "Could you load the box: bell pepper first, soup can second, cube last?"),
    ("pour-kettle-bowl-then-mug-v1", "kettle into bowl, then kettle into mug"),
    # A seventh author's, for the lid on the pot: three actions chained with a purpose clause,
    # and "the pot lid" (the pot's own lid part) for the lid beside it.
    ("place-lid-pot-v1", "Take hold of the knob on the lid, lift it up, and set it down on the pot so it "
                         "covers the opening completely."),
    ("place-lid-pot-v1", "Pick up the pot lid by the handle and close the pot with it."),
}


def test_the_new_tasks_sentences_keep_reaching_their_tasks() -> None:
    """tests/data/benchmark_paraphrases_new_tasks.tsv: 6 sentences for each of 8 tasks, 8 for
    the four-block tower (a fourth author), 8 each for the three cups onto the tray and the
    push then place (a fifth), and 8 for the lid on the pot (a seventh); the ones not listed
    above reach their task, and must keep reaching it; the listed ones do not yet."""
    _keeps_reaching("benchmark_paraphrases_new_tasks.tsv", 80, 12, NEW_TASKS_NOT_READ_YET)


def _keeps_reaching(name: str, sentences: int, tasks: int, not_read: set[tuple[str, str]]) -> None:
    """Every sentence of a development file reaches its task but the listed ones, which do not."""
    ro = _readout()
    rows = ro.load(ROOT / "tests" / "data" / name)
    assert len(rows) == sentences and len({t for t, _ in rows}) == tasks
    missed = {(t, s) for t, s, got, _ in ro.read(rows) if got != t}
    assert not missed - not_read, missed - not_read
    assert missed == not_read, "a listed sentence now parses: update the list"


#: The eighth author's sentences (three for each of the 39 benchmark tasks, in every style they
#: could think of; they read no code) that the parser does not read yet: a reason given as a
#: statement first ("Somebody left the microwave open; ..."), a wish ("I need the bowl sitting on
#: the plate"), verbs it does not know ("toss", "let it fall", "add ... to", "tip ... out"), a
#: manner said by what not to do ("by lifting it, not sliding it"), a part said by its position
#: ("the drawer at the bottom of the dresser") and a grasp part on a hang ("using its handle").
ALL_TASKS_NOT_READ_YET = {
    # Read by a first version, refused since a review: a reason with a verb of ours in it
    # ("packing") may ask something itself, and "no picking it up" is dropped silently on a
    # task that must lift as well as on a push.
    ('place-bell-pepper-soup-can-cube-paper-box-v1',
     "I'm packing up, so please put the green pepper in the box first, next the can of soup, and finally the "
     'cube.'),
    ('push-coffee-can-v1',
     'Could you push the coffee tin to the target mat, no picking it up?'),
    ('close-microwave-v1',
     'Somebody left the microwave open; could you close its door?'),
    ('hang-teacup-v1',
     'Please hook the tea cup onto the cup stand using its handle.'),
    ('hang-teacup-v1',
     'teacup on rack, hang by handle'),
    ('open-chest-bottom-drawer-v1',
     'Could you pull the drawer at the bottom of the dresser open for me?'),
    ('place-bell-pepper-soup-can-cube-paper-box-v1',
     'First the pepper, then the soup tin, then the block: put each one into the cardboard box.'),
    ('place-bowl-plate-v1',
     "I need the bowl sitting on the plate, if you don't mind."),
    ('place-carrot-bowl-v2',
     'Toss the carrot into the bowl for me.'),
    ('place-carrot-plate-then-cube-plate-v1',
     'First place the carrot onto the plate and after that please add the block to the same plate.'),
    ('place-carrot-plate-v1',
     'Please can you lay the carrot onto the plate, I want to serve it.'),
    ('place-chocolate-box-sugar-box-v1',
     'Would you kindly place the box of chocolate onto the box of sugar lying there?'),
    ('place-cube-mug-v2',
     'Pick up the cube and then let it fall into the mug.'),
    ('place-paper-cup-table-v1',
     "I'd like the paper cup picked up and set back down in another place on the table."),
    ('place-paper-cup-table-v1',
     'Move the paper cup to a different spot on the table by lifting it, not sliding it.'),
    ('place-paper-cups-tray-v1',
     'paper cups onto tray, all three'),
    ('place-scrub-bottle-shelf-v1',
     "Please place the bottle of scrubbing cleanser up on the shelf, it doesn't belong on the table."),
    ('pour-basket-v1',
     'Grab the small basket and then tip everything in it out into the bowl.'),
    ('pour-kettle-v1',
     'I need water in the bowl; would you fill it from the kettle?'),
    ('push-cheese-box-v1',
     'Please nudge the box of cheese crackers across the table until it sits on the mat; keep it on the '
     'table the whole time.'),
}


def test_the_eighth_authors_sentences_keep_reaching_their_tasks() -> None:
    """tests/data/benchmark_paraphrases_all_tasks.tsv, a development set: 3 sentences for each of
    the 39 benchmark tasks; the ones not listed above reach their task and must keep reaching it."""
    _keeps_reaching("benchmark_paraphrases_all_tasks.tsv", 117, 39, ALL_TASKS_NOT_READ_YET)


def test_the_held_out_part_phrases_are_well_formed() -> None:
    """Only the shape of the held-out part sentences (``bench/part_phrase_readout.py`` reads
    them; no test does, so the parser is never tuned to them): 80 sentences over nine objects of
    the ontology, every part of each named at least twice, and the labels the ontology lacks
    (a bottle's neck, a pot's rim) are the only ones outside it."""
    from afford_core.ontology import category

    rows = _readout("part_phrase_readout").load()
    assert len(rows) == 80 and len({s for _, _, s in rows}) == 80
    objects = {o for o, _, _ in rows}
    assert len(objects) == 9
    outside = {(o, p) for o, p, _ in rows if p not in category(o).parts}
    assert outside == {("bottle", "neck"), ("pot", "rim")}
    for obj in objects:
        named = [p for o, p, _ in rows if o == obj]
        assert all(named.count(p) >= 2 for p in set(named))
