"""Everyday phrasings of the benchmark's tasks: the classes of wording that people who have
not read the lexicon use (politeness anywhere, colloquial verbs, "somewhere else on the
table", contents named by a relative clause, restated goals, hanging "by the handle", terse
verbless commands), each with sentences of our own, plus the refusals each class must keep.

All cases run without the embedding fallback: every class is grammar and vocabulary, and
must not depend on MiniLM happening to match a word.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from afford_core.types import Intent, NextAction
from afford_perception.lexicon import gerund
from afford_perception.parser import ParseErrorKind, ParserConfig, TaskParseError, parse

A = NextAction
NO_EMBEDDINGS = ParserConfig(use_embeddings=False)
HANG_ON_RACK = Intent("mug", "body", A.HANG, ("handle",), "rack", "hook", "handle").as_dict()


def _intent(target: str, grasp: str, action: NextAction, keep: tuple[str, ...] = (), dest: str | None = None,
            region: str | None = None, use: str | None = None) -> dict[str, object]:
    return Intent(target, grasp, action, keep, dest, region, use).as_dict()


def _place(target: str, dest: str | None = None, region: str | None = None,
           grasp: str = "body") -> dict[str, object]:
    return _intent(target, grasp, A.PLACE, dest=dest, region=region)


Case = tuple[str, dict[str, object]]

POLITENESS: list[Case] = [
    ("Could you grab the hammer by its handle for me, please?", _intent("hammer", "handle", A.PICK)),
    ("would you mind putting the cube on the tray, thanks", _place("cube", "tray", "base")),
    ("ok so now lift the scoop, if you can", _intent("scoop", "handle", A.PICK)),
    ("Open the drawer please, thank you.", _intent("cabinet", "drawer_handle", A.OPEN, use="drawer")),
    ("would you mind hanging the mug on the rack", HANG_ON_RACK),
]

PLACE_VERBS: list[Case] = [
    ("plonk the banana onto the tray", _place("banana", "tray", "base")),
    ("pop the cube into the box", _place("cube", "box", "body")),
    ("stick the carrot on the plate", _place("carrot", "plate", "body")),
    ("shift the box onto the tray", _place("box", "tray", "base")),
    ("take the banana over to the plate", _place("banana", "plate", "body")),
]

ON_THE_SURFACE: list[Case] = [
    ("put the soup can down somewhere on the counter", _place("soup_can")),
    ("shift the bottle to a free spot on the desk, keeping it vertical", _place("bottle")),
    ("set the bottle back down in a new location, upright", _place("bottle")),
    ("lift the soup can and place it elsewhere", _place("soup_can")),
    ("put the soup can down over a bit", _place("soup_can")),
    ("place the bottle standing up on the table", _place("bottle")),
    # A spot of a receiver is the receiver.
    ("move the cube to a different spot on the plate", _place("cube", "plate", "body")),
]

POUR_CONTENTS: list[Case] = [
    ("pour whatever is inside the kettle into the bowl",
     _intent("kettle", "handle", A.POUR, ("spout",), "bowl", "rim", "spout")),
    ("tip what's in the pan out into the pot",
     _intent("pan", "handle", A.POUR, ("body",), "pot", "body", "body")),
    ("pour the tea in the mug into the bowl",
     _intent("mug", "handle", A.POUR, ("rim",), "bowl", "rim", "rim")),
]

RESTATED_GOAL: list[Case] = [
    ("move the carrot over so that it rests on the plate", _place("carrot", "plate", "body")),
    ("shift the cube so it ends up in the bowl", _place("cube", "bowl", "body")),
    ("put the banana on the plate and leave it there", _place("banana", "plate", "body")),
    ("put the cube on the tray, so it stays upright", _place("cube", "tray", "base")),
    ("tug out the drawer on the cupboard", _intent("cabinet", "drawer_handle", A.PULL, use="drawer")),
    ("drag the drawer open for me", _intent("cabinet", "drawer_handle", A.OPEN, use="drawer")),
]

HANG_BY_PART: list[Case] = [
    ("hang the mug up by its handle on the mug tree", HANG_ON_RACK),
    ("hook the cup's handle over the peg", HANG_ON_RACK),
    ("set the mug on a hook of the stand", HANG_ON_RACK),
    ("hang the mug by the handle on one hook of the rack", HANG_ON_RACK),
    ("put the mug on the rack", HANG_ON_RACK),
    ("hang the mug by its body on the rack", HANG_ON_RACK),  # "by" a part that cannot hang: the grasp
]

#: A receiver said first, and a relative clause that only says the thing stands on the table.
FRONTED: list[Case] = [
    ("On the plate, put the banana", _place("banana", "plate", "body")),
    ("Onto the tray, please put the cube that is sitting on the table.", _place("cube", "tray", "base")),
    ("put the mug that is on the table on the shelf", _place("mug", "shelf", "board", grasp="handle")),
]

VERBLESS: list[Case] = [
    ("banana onto the tray", _place("banana", "tray", "base")),
    ("cube into the bowl please", _place("cube", "bowl", "body")),
    ("mug onto plate", _place("mug", "plate", "body", grasp="handle")),
    # Said where it should be, as a command is written (no article) or asked for ("please").
    ("banana on tray", _place("banana", "tray", "base")),
    ("cube in bowl", _place("cube", "bowl", "body")),
    ("the cube in the bowl, please", _place("cube", "bowl", "body")),
    # A thing and the state it should be in: opened or closed.
    ("drawer open please", _intent("cabinet", "drawer_handle", A.OPEN, use="drawer")),
    ("drawer shut", _intent("cabinet", "drawer_handle", A.CLOSE, use="drawer")),
    ("drawer closed, please", _intent("cabinet", "drawer_handle", A.CLOSE, use="drawer")),
    # A politeness that keeps "not" is still politeness, and a "do not hold it by" says where.
    ("open the drawer if you do not mind", _intent("cabinet", "drawer_handle", A.OPEN, use="drawer")),
    ("pick up the mug and don't grab the handle", _intent("mug", "body", A.PICK, keep=("handle",))),
]

CASES = (POLITENESS + PLACE_VERBS + ON_THE_SURFACE + POUR_CONTENTS + RESTATED_GOAL + HANG_BY_PART + FRONTED
         + VERBLESS)


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_everyday_phrasing_reaches_the_intent(text: str, expected: dict[str, object]) -> None:
    """Politeness and restatements ask for nothing and are dropped; the words that carry the
    task (object, part, destination) resolve exactly as in the plain sentence."""
    intent = parse(text, config=NO_EMBEDDINGS)
    assert intent.as_dict() == expected
    assert intent.text == text


REFUSALS: list[tuple[str, Sequence[str] | None, ParseErrorKind, str]] = [
    # Only politeness: nothing asked.
    ("please", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    ("thanks, please", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    # A clause that says "there" after a bare pick restates nothing: still refused.
    ("pick up the cup and leave it there", None, ParseErrorKind.UNSUPPORTED, "leave it there"),
    # Two receivers are still two destinations.
    ("put the cube on the plate in the bowl", None, ParseErrorKind.AMBIGUOUS, "names 2 destinations"),
    ("put the cube onto the plate onto the tray", None, ParseErrorKind.AMBIGUOUS, "names 2 destinations"),
    # Hanging by the handle is fine; holding it there is not.
    ("grab the mug by the handle and hook it on the rack", None, ParseErrorKind.CONTRADICTION,
     "handle free"),
    # A place onto a hook by something that cannot hang keeps the old refusal.
    ("put the banana on the hook", None, ParseErrorKind.UNSUPPORTED, "affords hang"),
    # Verbless: where the object is, not where it goes, is no task (with its article and
    # nothing that asks for it: a description).
    ("the banana on the tray", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    ("it on the tray", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    ("the drawer open", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    ("mug open please", None, ParseErrorKind.UNSUPPORTED, "nothing to open"),
    # Asked as a question, or "closed" (as often reported as asked for) without a please.
    ("drawer open?", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    ("banana on tray?", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    ("drawer closed", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    # A please in another clause asks for that clause, not for the description before it.
    ("the drawer open, please close it", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    # A fronted phrase that names no thing is no receiver ("In the meantime, ...").
    ("In the meantime, put the cube in the bowl", None, ParseErrorKind.UNKNOWN_VERB, "no action verb"),
    # What not to do is never read as what to do.
    ("don't put the cup on the plate", None, ParseErrorKind.UNSUPPORTED, "says what not to do"),
    ("please do not open the drawer", None, ParseErrorKind.UNSUPPORTED, "says what not to do"),
    ("never open the drawer", None, ParseErrorKind.UNSUPPORTED, "says what not to do"),
    ("kettle in the bowl", None, ParseErrorKind.AMBIGUOUS, "say 'put' or 'pour'"),
    # Verbless and the object could pour into the receiver: put or pour? Ask.
    ("kettle into the bowl", None, ParseErrorKind.AMBIGUOUS, "say 'put' or 'pour'"),
    ("paper cup into bowl", None, ParseErrorKind.AMBIGUOUS, "say 'put' or 'pour'"),
    # Manner words other than the place's own (upright) are still not dropped.
    ("put the banana upside down somewhere on the table", None, ParseErrorKind.UNSUPPORTED, "'upside down"),
]


@pytest.mark.parametrize(("text", "known", "kind", "fragment"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_survive_the_everyday_grammar(text: str, known: Sequence[str] | None, kind: ParseErrorKind,
                                               fragment: str) -> None:
    """Each new reading is narrow: it must not turn an ambiguous, contradictory or empty
    sentence into a task."""
    with pytest.raises(TaskParseError) as err:
        parse(text, known_objects=known, config=NO_EMBEDDINGS)
    assert err.value.kind is kind, str(err.value)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_insert_is_not_a_place() -> None:
    """"Insert" pushes into an opening (the receiver's rim); "stick" and "pop" are everyday
    "put". The place skill centres the object over the receiver's containing part, so an
    insert is not silently run as a place."""
    assert parse("insert the cube into the mug", config=NO_EMBEDDINGS).next_action is A.INSERT
    assert parse("stick the cube in the mug", config=NO_EMBEDDINGS).next_action is A.PLACE


def test_elsewhere_is_a_place_on_the_surface() -> None:
    """"Somewhere else" needs no receiver: the object goes elsewhere on the work surface."""
    intent = parse("move the soup can somewhere else", known_objects=("soup_can", "bowl"),
                   config=NO_EMBEDDINGS)
    assert (intent.next_action, intent.destination) == (A.PLACE, None)
    # "further along the table" is where on the surface, not a path ("along" alone is refused).
    intent = parse("put the paper cup down a little further along the table", config=NO_EMBEDDINGS)
    assert (intent.next_action, intent.target, intent.destination) == (A.PLACE, "paper_cup", None)
    with pytest.raises(TaskParseError, match="'along'"):
        parse("put the paper cup along the table", config=NO_EMBEDDINGS)


@pytest.mark.parametrize(("verb", "ing"), [("pop", "popping"), ("place", "placing"), ("hang", "hanging"),
                                           ("open", "opening"), ("empty", "emptying"), ("set", "setting"),
                                           ("hook", "hooking"), ("draw", "drawing"), ("insert", "inserting")])
def test_gerund(verb: str, ing: str) -> None:
    """After "would you mind" the verb is a gerund; every lexicon verb gets its -ing form."""
    assert gerund(verb) == ing
