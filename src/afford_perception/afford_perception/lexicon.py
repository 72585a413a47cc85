"""Words the task parser knows: verbs, object and part names, and the grammar's small words.

Object and part vocabulary is derived from the ontology, so a category added there is
parseable at once. Only verbs and function words (prepositions, determiners, fillers) are
listed by hand here. Everything is matched on lower-case word tokens; multi-word phrases
("pick up", "on top of", "drawer handle") are matched longest-first by :class:`PhraseIndex`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from afford_core.ontology import CATEGORIES, PART_SYNONYMS
from afford_core.types import NextAction

Tokens = tuple[str, ...]
T = TypeVar("T")


# --------------------------------------------------------------------------- tokenising

_CONTRACTIONS = (("can't", "can not"), ("won't", "will not"), ("n't", " not"))


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; sentence punctuation becomes a ``","`` clause break.

    Possessive ``'s`` stays a token of its own so "the kettle's spout" reads as object +
    part. Hyphens and underscores split words, so "paper_cup" and "frying-pan" match the
    ontology's spaced synonyms.
    """
    s = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    for old, new in _CONTRACTIONS:
        s = s.replace(old, new)
    s = re.sub(r"'s\b", " 's", s)
    s = re.sub(r"[-_/]", " ", s)
    s = re.sub(r"[.;:!?,]", " , ", s)
    s = re.sub(r"[^a-z0-9', ]", " ", s)
    return [t if t == "'s" else t.replace("'", "") for t in s.split() if t.replace("'", "")]


def words(phrase: str) -> Tokens:
    """A lexicon phrase as a token tuple (same normalisation as :func:`tokenize`)."""
    return tuple(tokenize(phrase))


# --------------------------------------------------------------------------- phrase index


class PhraseIndex(Generic[T]):
    """Longest-match lookup of multi-word phrases in a token list.

    Longest match first is what makes "drawer handle" win over "drawer" and "mug rack" over
    "mug", without any per-phrase rule.
    """

    def __init__(self, entries: Iterable[tuple[str, T]]) -> None:
        self._map: dict[Tokens, list[T]] = {}
        for phrase, value in entries:
            key = words(phrase)
            if not key:
                continue
            bucket = self._map.setdefault(key, [])
            if value not in bucket:
                bucket.append(value)
        self.max_len = max((len(k) for k in self._map), default=0)

    def match(self, tokens: Sequence[str], start: int) -> tuple[int, tuple[T, ...]] | None:
        """(length, values) of the longest phrase starting at ``tokens[start]``, or None."""
        for n in range(min(self.max_len, len(tokens) - start), 0, -1):
            hit = self._map.get(tuple(tokens[start : start + n]))
            if hit is not None:
                return n, tuple(hit)
        return None

    def match_end(self, tokens: Sequence[str]) -> tuple[int, tuple[T, ...]] | None:
        """(length, values) of the longest phrase that ends at the last token, or None."""
        for n in range(min(self.max_len, len(tokens)), 0, -1):
            hit = self._map.get(tuple(tokens[len(tokens) - n :]))
            if hit is not None:
                return n, tuple(hit)
        return None

    def items(self) -> list[tuple[str, tuple[T, ...]]]:
        """(phrase, values) pairs, phrases space-joined, in insertion order."""
        return [(" ".join(k), tuple(v)) for k, v in self._map.items()]


# --------------------------------------------------------------------------- verbs


@dataclass(frozen=True)
class VerbSense:
    """What a verb phrase asks for.

    Attributes:
        action: The next action the verb names.
        with_destination: Action the verb means when it also names a receiving object
            ("take the mug to the tray" is a place, "take the mug" a pick); None keeps
            ``action``.
        unless_it_pours: Action the verb means when its object is a thing that cannot pour
            ("dump the basket into the bowl" pours, "dump the cube into the box" puts it in);
            None keeps ``action``.
    """

    action: NextAction
    with_destination: NextAction | None = None
    unless_it_pours: NextAction | None = None


_PICK = VerbSense(NextAction.PICK, with_destination=NextAction.PLACE)
_PLACE = VerbSense(NextAction.PLACE)
_GIVE = VerbSense(NextAction.HAND_OVER)
_FETCH = VerbSense(NextAction.HAND_OVER, with_destination=NextAction.PLACE)

VERBS: dict[str, VerbSense] = {
    **dict.fromkeys(
        ("pick up", "pick", "lift", "lift up", "grab", "grab hold of", "grasp", "take", "take hold of",
         "hold", "raise", "get", "seize", "snatch", "collect", "pluck", "grip", "carry", "remove",
         "take out", "retrieve"), _PICK),
    # Everyday "put" verbs: "pop the cube in the mug" and "stick it in the bowl" put the object
    # down in the receiver; nothing is pushed into a tight opening (that is "insert").
    **dict.fromkeys(
        ("put", "place", "set", "move", "put down", "set down", "lay", "lay down", "drop", "drop off",
         "transfer", "relocate", "deposit", "put away", "return", "pop", "plop", "plonk", "stick", "shift",
         "park", "rest", "sit", "stand", "position", "reposition", "lower", "tuck", "load", "pack",
         "pack away", "put back",
         "set back", "place back",
         # "I'd like the banana on the plate": a wish for where a thing is, said to the robot.
         "id like", "i d like", "i would like", "i want"), _PLACE),
    **dict.fromkeys(("insert", "slot", "plug", "slide in"), VerbSense(NextAction.INSERT)),
    **dict.fromkeys(("pour", "pour out", "empty", "tip", "tilt", "decant"), VerbSense(NextAction.POUR)),
    **dict.fromkeys(("dump", "dump out", "tip out"),
                    VerbSense(NextAction.POUR, unless_it_pours=NextAction.PLACE)),
    **dict.fromkeys(("stack", "pile", "heap", "nest"), VerbSense(NextAction.STACK)),
    **dict.fromkeys(("hang", "hang up", "hook", "suspend"), VerbSense(NextAction.HANG)),
    **dict.fromkeys(
        ("hand", "hand me", "hand over", "give", "give me", "pass", "pass me", "deliver", "offer"), _GIVE),
    **dict.fromkeys(("bring", "bring me", "fetch", "fetch me"), _FETCH),
    **dict.fromkeys(("open", "pull open", "slide open", "swing open"), VerbSense(NextAction.OPEN)),
    **dict.fromkeys(("close", "shut", "push closed", "push shut", "slide shut", "slide closed"),
                    VerbSense(NextAction.CLOSE)),
    **dict.fromkeys(("push", "shove", "nudge", "press", "slide"), VerbSense(NextAction.PUSH)),
    **dict.fromkeys(("pull", "drag", "tug", "yank", "draw"), VerbSense(NextAction.PULL)),
}


def gerund(word: str) -> str:
    """The -ing form of a one-word verb: "pop" -> "popping", "place" -> "placing"."""
    vowels = "aeiou"
    if word.endswith("ie"):
        return word[:-2] + "ying"
    if word.endswith("e") and not word.endswith(("ee", "ye", "oe")) and len(word) > 2:
        return word[:-1] + "ing"
    # One syllable ending consonant-vowel-consonant doubles its last letter ("drop", "set").
    if (len(word) >= 3 and word[-1] not in vowels + "wxy" and word[-2] in vowels
            and word[-3] not in vowels and sum(c in vowels for c in word) == 1):
        return word + word[-1] + "ing"
    return word + "ing"


def _gerund_phrase(phrase: str) -> str:
    first, _, rest = phrase.partition(" ")
    return f"{gerund(first)} {rest}".strip()

# "Would you mind popping the cube in the mug": after such framing the verb comes as a gerund.
# A gerund that is also a grasp marker ("holding its body") or a keep-clear opener stays that.
_NOT_GERUND_VERBS = frozenset({"holding", "using", "keeping", "leaving"})
VERB_INDEX: PhraseIndex[VerbSense] = PhraseIndex(
    [*VERBS.items(),
     *((g, sense) for p, sense in VERBS.items()
       if (g := _gerund_phrase(p)).split()[0] not in _NOT_GERUND_VERBS)]
)

# A push or pull that ends in one of these words opens or closes ("push the drawer shut").
RESULTATIVES: dict[str, NextAction] = {
    "open": NextAction.OPEN, "closed": NextAction.CLOSE, "shut": NextAction.CLOSE,
}


# --------------------------------------------------------------------------- grammar words

SlotKind = Literal["grasp", "destination", "source", "unsupported"]


@dataclass(frozen=True)
class Marker:
    """A preposition that opens a slot after the verb's object.

    Attributes:
        slot: Which slot the following noun phrase fills.
        relation: For destinations, ``"on"``, ``"in"`` or ``"to"``: whether a support surface
            or a container's inside is preferred on the receiving object.
        directional: True for motion prepositions ("onto", "into", "to"): only these turn a
            pick verb into a place ("lift the mug onto the plate"); "the mug on the plate"
            after a pick verb says where the mug is, not where it goes.
    """

    slot: SlotKind
    relation: str = ""
    directional: bool = False


_GRASP = Marker("grasp")
MARKERS: dict[str, Marker] = {
    **dict.fromkeys(("by", "at", "with", "using", "holding", "by means of"), _GRASP),
    # "holding it at the lip", "gripping them by the handles": the pronoun is the object again.
    **dict.fromkeys((f"{verb} {pronoun} {prep}" for verb in ("holding", "gripping", "grasping")
                     for pronoun in ("it", "them") for prep in ("by", "at", "from", "in", "around", "on")),
                    _GRASP),
    **dict.fromkeys(("on", "upon", "over", "atop"), Marker("destination", "on")),
    **dict.fromkeys(("onto", "on to", "on top of"), Marker("destination", "on", directional=True)),
    **dict.fromkeys(("in", "inside", "inside of", "within"), Marker("destination", "in")),
    **dict.fromkeys(("into", "in to"), Marker("destination", "in", directional=True)),
    **dict.fromkeys(("to", "toward", "towards", "back to", "back on", "back onto", "back in", "back into"),
                    Marker("destination", "to", directional=True)),
    **dict.fromkeys(("from", "out of", "off", "off of", "from inside"), Marker("source")),
    # "pour what's in the mug into the bowl": the contents, named by where they are, make the
    # container the source.
    **dict.fromkeys(
        # Never "everything in" alone: "put everything in the bowl" names the destination.
        (f"{what} {be} {where}"
         for what in ("what", "whatever", "all that", "everything that", "anything that")
         for be in ("is", "'s") for where in ("in", "inside", "inside of")),
        Marker("source")),
    **dict.fromkeys(("whats in", "whats inside", "whatevers in", "whatevers inside"), Marker("source")),
    # Relations the intent cannot express; refusing them beats dropping them silently.
    **dict.fromkeys(
        ("next to", "beside", "besides", "behind", "in front of", "near", "under", "underneath",
         "below", "above", "left of", "right of", "to the left of", "to the right of", "between",
         "around", "across", "along", "against", "away from", "close to", "on the left of",
         "on the right of", "in between"),
        Marker("unsupported")),
}
MARKER_INDEX: PhraseIndex[Marker] = PhraseIndex(MARKERS.items())

#: Where on a part a person says to hold it, after the part ("the loop on the side", "the knob
#: in the middle", "the handle on top"): said of the part already named, not of another thing.
PART_LOCATIVES: frozenset[str] = frozenset(
    {"top", "the top", "the side", "the sides", "either side", "each side", "both sides", "its side",
     "its sides", "the middle", "the end", "the front", "the back", "one side", "the outside"}
)
#: What a person calls a part the object has under another name: a bottle's "lid" or "top" is its
#: cap, a coffee can's "cap" its lid, a leek's "stem" its stalk. Tried in order, only when the
#: object has no part of the name said.
PART_ALTERNATES: dict[str, tuple[str, ...]] = {
    "lid": ("cap",), "cap": ("lid",), "top": ("cap",), "stem": ("stalk",), "stalk": ("stem",),
}
#: Nouns that stand for a part a description then says the use of ("the bit you hold", "the end
#: you hit nails with", "the part the water pours out of").
PART_PLACEHOLDERS: frozenset[str] = frozenset(
    {"bit", "part", "end", "piece", "thing", "side", "area", "section", "spot"}
)
#: Words that start such a description after a part's name ("the edge you drink from").
RELATIVE_WORDS: frozenset[str] = frozenset({"you", "that", "which", "where", "we", "people", "one"})
#: What a part is for, said by a verb of its description: the affordances it offers, in order of
#: preference (a thing you hold has a handle for it, or else a body).
USE_VERBS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("hold", "holds", "held", "grip", "grips", "carry", "carries"),
                    ("grasp_handle", "grasp_body")),
    **dict.fromkeys(("pour", "pours", "poured", "comes", "drink", "drinks", "sip"), ("pour_out",)),
    **dict.fromkeys(("fill", "fills"), ("pour_in",)),
    **dict.fromkeys(("hit", "hits", "strike", "strikes", "bang", "bangs", "pound", "pounds", "knock"),
                    ("press",)),
    **dict.fromkeys(("scoop", "scoops"), ("contain",)),
    **dict.fromkeys(("hook", "hooks", "hang", "hangs", "loop"), ("hang",)),
}
#: Words after a part that name the part again ("the handle end", "the lid part").
PART_HEADS: frozenset[str] = frozenset({"end", "part", "bit", "area", "section", "portion", "region"})

# Words that split a sentence into clauses.
CLAUSE_BREAKS: PhraseIndex[str] = PhraseIndex(
    (p, p) for p in (",", "and", "then", "and then", "after that", "afterwards", "finally", "but",
                     "while", "and finally")
)

# Clause openers that name parts to keep clear rather than an action; the bool says
# whether the clause must end in a CLEAR_WORDS word ("keep the handle clear").
KEEP_CLEAR_OPENERS: dict[str, bool] = {
    **dict.fromkeys(
        ("without touching", "without grabbing", "without grasping", "without holding", "without",
         "avoid", "avoiding", "avoid touching", "avoiding touching", "do not touch", "do not grab",
         "do not grasp", "do not hold", "not touching", "never touch", "stay away from",
         "staying away from", "not by", "but not by", "not at"), False),
    # "lift the basket from the sides, not the handle": a part named after a bare "not".
    **dict.fromkeys((f"{no} {the}" for no in ("not", "but not", "and not")
                     for the in ("the", "its", "their")), False),
    **dict.fromkeys(("keep", "keeping", "leave", "leaving"), True),
}
KEEP_CLEAR_INDEX: PhraseIndex[bool] = PhraseIndex(KEEP_CLEAR_OPENERS.items())
CLEAR_WORDS: frozenset[str] = frozenset(
    {"clear", "free", "untouched", "alone", "accessible", "exposed", "available", "unobstructed"}
)

# Politeness and framing before the verb.
LEADING_FILLERS: PhraseIndex[str] = PhraseIndex(
    (p, p) for p in ("please", "can you", "could you", "would you", "will you", "robot", "hey robot",
                     "i want you to", "i need you to", "i would like you to", "now", "go ahead and",
                     "go and", "try to", "kindly", "just", "also", "first", "carefully", "gently",
                     "slowly", "quickly", "then", "would you mind", "do you mind", "would you please",
                     "could you please", "can you please", "will you please", "would you kindly",
                     "ok", "okay", "ok so", "okay so", "alright", "all right", "hey", "um", "uh",
                     "well", "id like you to", "i d like you to", "lets", "let us", "you can", "we need to",
                     "next", "right now", "please could you", "please can you", "please would you",
                     "would you be able to", "could you be able to", "are you able to", "can i ask you to",
                     "i would like you to please", "could you go ahead and", "real quick",
                     # a non-native speaker's "please you put ...", "could you please to put ..."
                     "please you", "could you please to", "can you please to",
                     "would you please to", "would you be so kind as to", "be so kind as to",
                     "would you be so kind and",
                     # the verb follows as a gerund ("start by sliding the box onto the mat")
                     "start by", "begin by", "start off by", "first of all")
)
# Politeness after the request, at the end of a clause or as a clause of its own
# ("..., please?", "... for me", "..., would you?"): they ask for nothing.
TAIL_FILLERS: PhraseIndex[str] = PhraseIndex(
    (p, p) for p in ("please", "thanks", "thank you", "thanks a lot", "thank you very much", "cheers",
                     "for me", "for me please", "if you can", "if you could", "if you would", "if possible",
                     "if you do not mind", "if you dont mind", "when you can", "would you", "could you",
                     "can you", "will you", "ok", "okay", "now", "right now", "real quick", "quickly",
                     "carefully", "gently", "slowly", "please and thank you", "thx", "ty", "pls", "plz",
                     "right away", "straight away", "as well",
                     # how a push is done, asking nothing more of it: a push never lifts
                     "without lifting it", "without lifting it up", "without picking it up",
                     "without lifting them", "without picking them up", "without lifting")
)

# Where on the work surface, without naming a receiver: "somewhere else on the table", "shift
# it over a bit". The place task moves the object to a free spot of the surface anyway.
ELSEWHERE: PhraseIndex[str] = PhraseIndex(
    (p, p) for p in ("elsewhere", "somewhere else", "somewhere", "anywhere else", "anywhere", "over a bit",
                     "over a little", "over a little bit", "a bit", "a little", "a little bit", "slightly",
                     "a bit further", "a little further", "further", "aside")
)
# A relative clause after a receiver that only says it is the object's usual place: "lower it
# onto the round base it sits on", "the shelf that it goes on". It names nothing new.
USUAL_PLACE: PhraseIndex[str] = PhraseIndex([
    *((f"{rel}{it} {verb} {prep}", "usual")
      for rel in ("", "that ", "which ")
      for it in ("it", "they")
      for verb in ("sits", "sit", "stands", "stand", "rests", "rest", "goes", "go", "belongs", "belong",
                   "lives", "live", "usually sits", "usually goes", "normally sits", "came", "was", "were")
      for prep in ("on", "in", "from")),
    # "onto the mat next to it": where the receiver is, relative to the object; nothing new.
    *((f"{prep} {it}", "usual") for prep in ("next to", "beside", "near", "by") for it in ("it", "them")),
])
# A spot of a surface or object, not a thing: "to a different spot on the table".
SPOTS: frozenset[str] = frozenset({"spot", "place", "position", "location", "area", "space", "point", "bit",
                                   "patch", "part"})
SPOT_MODIFIERS: frozenset[str] = frozenset(
    {"different", "new", "other", "another", "free", "empty", "clear", "open", "fresh", "nearby", "better",
     "else", "some", "separate", "vacant", "available", "spare", "same", "good", "nice", "random"}
)
# A purpose or result linking the object to its destination: "move the bowl so it sits on the
# plate" says "on the plate" again; the link is skipped and the destination kept.
RESULT_LINKS: PhraseIndex[str] = PhraseIndex([
    *((f"{so} {it} {verb}", "result")
      for so in ("so", "so that", "such that", "until", "till")
      for it in ("it", "they", "its")
      for verb in ("sits", "rests", "is", "s", "'s", "ends up", "lies", "stands", "goes", "winds up", "lands",
                   "will sit", "will be", "will rest", "is sitting", "is resting", "is standing", "is lying",
                   "'s sitting", "s sitting", "'s resting", "s resting", "'s lying", "s lying",
                   "sit", "rest", "stays", "remains", "can sit", "can rest")),
    # A pour's result is said of what is in the container: "tip the kettle so the water goes
    # into the bowl".
    *((f"{so} {what} {verb}", "result")
      for so in ("so", "so that", "until", "till")
      for what in ("water", "the water", "liquid", "the liquid", "contents", "the contents", "its contents",
                   "everything")
      for verb in ("goes", "runs", "flows", "pours", "drains", "ends up", "is")),
])
# The way a pushed object travels, not where it goes: "slide the box across the table onto the
# mat". Skipped before a destination; the surface it names is the one it already stands on.
PATHS: frozenset[str] = frozenset({"across", "along", "over"})
# A clause that only restates the goal or the place's default manner ("and leave it in there",
# "keeping it standing up", "make sure it stays upright"): the pronoun's object, no new object
# or part. Openers start such a clause; every word after it must be a RESTATE_WORDS word.
RESTATE_OPENERS: PhraseIndex[str] = PhraseIndex(
    (p, p) for p in ("leave", "leaving", "let", "keep", "keeping", "make sure", "making sure", "ensure",
                     "ensuring", "so", "so that", "stand", "standing", "sitting", "resting", "with")
)
RESTATE_WORDS: frozenset[str] = frozenset(
    {"it", "them", "there", "in", "inside", "on", "top", "of", "here", "place", "stays", "stay", "remains",
     "remain", "is", "s", "'s", "sits", "sit", "sitting", "rests", "rest", "resting", "stands", "stand",
     "standing", "up", "upright", "vertical", "vertically", "straight", "level", "flat", "steady", "stable",
     "securely", "safely", "where", "belongs", "does", "not", "fall", "falls", "over", "tip", "topple",
     "that", "right", "side", "way", "the", "properly", "nicely", "be", "go", "down"}
)
# A restating clause that says where refers back with one of these.
RESTATE_CORE: frozenset[str] = frozenset({"it", "them", "there"})
# Words that say where ("leave it in there"): such a clause restates only a destination the
# sentence named before it, never a bare pick ("pick up the cup and leave it there" is refused).
RESTATE_WHERE: frozenset[str] = frozenset({"in", "inside", "on", "top", "there", "here", "place", "where",
                                           "belongs"})

DETERMINERS: frozenset[str] = frozenset(
    {"the", "a", "an", "its", "their", "his", "her", "my", "your", "our", "this", "that", "these",
     "those", "some", "one", "each", "another", "other", "'s", "of"}
)
# Describing words dropped before an unknown phrase is embedded ("the red teakettle"), so
# the similarity compares the noun, not its colour.
MODIFIERS: frozenset[str] = frozenset(
    {"red", "blue", "green", "white", "black", "yellow", "grey", "gray", "brown", "pink", "purple",
     "silver", "golden", "big", "small", "large", "little", "tall", "short", "tiny", "huge", "empty",
     "full", "clean", "dirty", "wooden", "metal", "plastic", "ceramic", "steel", "left", "right",
     "nearest", "closest", "near", "far", "first", "second", "third", "last", "new", "old", "hot", "cold",
     "round", "circular", "square", "flat", "taped"}
)
# Words that may follow an object's name without changing what is meant.
TRAILING_OK: frozenset[str] = frozenset(
    {"please", "carefully", "gently", "slowly", "quickly", "now", "again", "too", "also", "up", "down",
     "over", "back", "here", "there", "for", "me", "thanks", "thank", "you", "firmly", "safely",
     "instead", "away", "out", "properly", "upright", "standing", "vertically", "straight", "flat",
     "securely", "first",
     "steady", "level", "softly", "neatly", "nicely", "pls", "plz"}
)
PARTICLES: frozenset[str] = frozenset({"up", "down", "over", "back", "away", "out"})

PRONOUNS: frozenset[str] = frozenset({"it", "them", "this", "that", "itself", "this one", "that one"})
PERSONS: frozenset[str] = frozenset(
    {"me", "us", "him", "her", "them", "person", "human", "operator", "user", "someone", "somebody",
     "my hand", "hand", "you", "everyone"}
)
# Work surfaces: placing there needs no receiving object (the scene decides where the
# surface is), so they resolve to "no destination".
SURFACES: frozenset[str] = frozenset(
    {"table", "tabletop", "table top", "desk", "counter", "countertop", "workbench", "bench",
     "surface", "work surface", "floor", "ground"}
)
# What pours; a pour's object may name the contents rather than the source container.
SUBSTANCES: frozenset[str] = frozenset(
    {"water", "tea", "coffee", "milk", "juice", "soup", "liquid", "contents", "content", "beans",
     "rice", "cereal", "sugar", "salt", "sand", "grains", "grain", "everything", "rest", "drink",
     "wine", "beer", "oil", "broth"}
)


# --------------------------------------------------------------------------- objects and parts


@dataclass(frozen=True)
class Sense:
    """One meaning of an object or part phrase.

    Attributes:
        kind: ``"object"`` (value is a category) or ``"part"`` (value is a part name).
        value: Category or part name from the ontology.
        category: For a part synonym that only one category uses, that category; None for
            the shared ``PART_SYNONYMS``.
    """

    kind: Literal["object", "part"]
    value: str
    category: str | None = None


def _plural(phrase: str) -> str:
    if " of " in phrase:  # "box of chocolates": the head noun takes the plural
        head, _, tail = phrase.partition(" of ")
        return f"{_plural(head)} of {tail}"
    head, _, last = phrase.rpartition(" ")
    if last.endswith(("s", "x", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and last[-2:-1] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}".strip()


@functools.cache
def object_phrases() -> dict[str, list[str]]:
    """Every phrase naming each category: synonyms, the spaced canonical name and plurals.
    Cached: treat the result as read-only."""
    out: dict[str, list[str]] = {}
    for cat in CATEGORIES.values():
        base = [cat.name.replace("_", " "), *cat.synonyms]
        out[cat.name] = list(dict.fromkeys([*base, *(_plural(p) for p in base)]))
    return out


@functools.cache
def plural_phrases() -> dict[str, list[str]]:
    """The plural of every phrase naming each category ("cubes", "blocks"). Cached: read-only."""
    return {cat.name: list(dict.fromkeys(_plural(p) for p in (cat.name.replace("_", " "), *cat.synonyms)))
            for cat in CATEGORIES.values()}


@functools.cache
def singulars() -> dict[str, tuple[str, str]]:
    """Each plural phrase's category and singular ("paper cups": paper_cup, "paper cup"); where
    two categories share a plural, the first category's. Cached: read-only."""
    out: dict[str, tuple[str, str]] = {}
    for cat in CATEGORIES.values():
        for p in (cat.name.replace("_", " "), *cat.synonyms):
            out.setdefault(_plural(p), (cat.name, p))
    return out


@functools.cache
def part_phrases(category: str | None = None) -> dict[str, list[str]]:
    """Phrases naming each part: shared synonyms, the spaced part name, and (for a given
    category) that category's own part synonyms. With a category, only its parts."""
    parts: Iterable[str]
    if category is None:
        parts = {p for c in CATEGORIES.values() for p in c.parts} | set(PART_SYNONYMS)
    else:
        parts = CATEGORIES[category].parts
    out: dict[str, list[str]] = {}
    for part in sorted(parts):
        base = [part.replace("_", " "), *PART_SYNONYMS.get(part, ())]
        if category is not None:
            base += CATEGORIES[category].part_synonyms.get(part, ())
        out[part] = list(dict.fromkeys([*base, *(_plural(p) for p in base)]))
    return out


def _noun_key(phrase: str) -> str:
    """A noun phrase as the parser meets it: determiners are dropped before nouns are looked up,
    so "box of chocolates" is indexed as "box chocolates"."""
    return " ".join(t for t in words(phrase) if t not in DETERMINERS)


def _noun_entries() -> list[tuple[str, Sense]]:
    entries: list[tuple[str, Sense]] = []
    for cat, phrases in object_phrases().items():
        entries += [(_noun_key(p), Sense("object", cat)) for p in phrases]
    for part, phrases in part_phrases().items():
        entries += [(p, Sense("part", part)) for p in phrases]
    for category in CATEGORIES.values():
        for part, syns in category.part_synonyms.items():
            entries += [(p, Sense("part", part, category.name)) for p in syns]
    return entries


NOUN_INDEX: PhraseIndex[Sense] = PhraseIndex(_noun_entries())


def part_index(category: str) -> PhraseIndex[str]:
    """Phrase index over one category's part names (used for "by its ..." slots)."""
    return _PART_INDEXES[category]


_PART_INDEXES: Mapping[str, PhraseIndex[str]] = {
    c: PhraseIndex((p, part) for part, ps in part_phrases(c).items() for p in ps) for c in CATEGORIES
}
