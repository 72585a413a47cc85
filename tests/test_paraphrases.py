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


def _readout() -> ModuleType:
    path = ROOT / "bench" / "paraphrase_readout.py"
    spec = importlib.util.spec_from_file_location("paraphrase_readout", path)
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
    """Only its shape: 23 tasks, 5 sentences each, every id a registered task."""
    from afford_sim.tasks import TASKS

    rows = _readout().load(ROOT / "tests" / "data" / "benchmark_paraphrases_heldout.tsv")
    ids = [t for t, _ in rows]
    assert len(rows) == 115 and all(ids.count(t) == 5 for t in set(ids))
    assert all(t in TASKS for t in ids)
