"""Task sentence -> :class:`Intent`: which object, which part to hold, what happens next.

The grammar is small and deterministic (AffordSim's "verb chain plus per-object role"):

    sentence := clause (BREAK clause)*             BREAK: "," "and" "then" ...
    clause   := FILLER* (keep | action | restate | noun) FILLER*
    action   := VERB object (MARKER phrase)*       MARKER: by/with (grasp), on/in/to
                                                   (destination), from/off (source)
    keep     := "without touching" part | "keep" part "clear" | ...
    restate  := "leave it in there" | "keeping it upright" | ...   (dropped)

FILLER is politeness on either side of a clause ("could you", "would you mind" + gerund,
"..., please?", "for me"); a clause of nothing else is dropped.

At most two action clauses: a pick followed by what happens next ("pick up the kettle by
its handle and pour into the bowl"). The ontology then decides the rest: which part the next
action needs (a kettle's spout affords ``pour_out``, a mug's handle ``hang``), which part of
the destination receives (a bowl's rim affords ``pour_in``), and which graspable part is left
for the fingers. A part the next action needs is kept clear of the grasp, which is how
"hang the mug on the rack" becomes "grasp the body, keep the handle free".

Words the lexicon lacks are matched to known names by MiniLM sentence embeddings (see
:mod:`afford_perception.text_embedding`) only when no exact entry exists; below
``ParserConfig.similarity_threshold`` the parser refuses rather than guesses, because a
wrong object or part sends the arm to the wrong place on a real cell. A part phrase neither
places is read, word for word only, as one of the affordance model's training wordings ("the
bit you hold on to", "the loop") when just one of the object's parts offers that wording's
affordance; anything short of that is refused as before.

Decisions worth knowing (each is a rule, not a per-task special case):

- Hand-over keeps the target's ``grasp_handle`` part clear (``use_region``) so the person
  receives the handle; the robot holds another graspable part, or any other part when
  there is none (a hammer is held by its head).
- Pouring uses the part affording ``pour_out``; a container without one (pan, pot) pours
  over the part affording ``contain``. The receiver's part is ``pour_in``, else ``contain``.
- Place/stack prefer a ``support`` part ("on") or a ``contain`` part ("in"); an object with
  neither (a box, a cube) receives on its ``body``. The table and similar surfaces mean
  "no destination object" (the scene module owns the table).
- Open/close/pull of furniture grasp the part affording ``pull``; "the drawer" picks the
  ``drawer_*`` handle and becomes ``use_region`` (the part that moves).
- After a pick verb, "on/in X" says where the object is (dropped); "onto/into/to X" makes
  the task a place.
- A destination named by the head noun of its own name ("the base": the kettle base, and also
  its base part) is the whole object, and the affordances choose where it receives (the
  plate); "the hook" (the rack, and its hook) still names the hook.
- A word the ontology maps to a category absent from ``known_objects`` resolves to the one
  present category it is the head noun of ("cup" -> paper_cup when no mug is present).
- Words after the object's name must be fillers: "the banana upside down" is refused, not
  read as "the banana". "Upright" and "standing" are fillers: every place sets the object down
  upright.
- "Somewhere else", "elsewhere", "over a bit", and a spot ("another spot", "a new place") say
  where on the work surface: a place with no destination object, like "on the table". A spot
  of a named receiver ("a free spot on the tray") is that receiver.
- Phrases that locate a destination merge with it: "a hook on the rack" is the rack's hook,
  "the bowl on the table" the bowl. Two receivers ("on the plate in the bowl") are refused.
- A place onto a part that affords hang, or onto an object whose parts offer it ("on the
  rack"), by an object that can hang, is a hang. In the hang's own clause "by its handle", or
  "the mug's handle" as the object, names the part that hangs, not the grasp; a grasp named
  by a pick verb ("grab it by the handle and hang it") or "holding" is still the grasp.
- "Stick" and "pop" are everyday "put" (a place); "insert" stays an insert, which no
  benchmark task serves: the place skill aims at the receiver's containing part, an insert
  at its opening.
- Contents named by where they are ("what's in the mug", "the tea in the mug") make that
  container the pour's source.
- A clause that only restates the goal ("and leave it in there", "so it sits on the plate",
  "keeping it standing up") is dropped; "there" restates only a destination the sentence
  named ("pick up the cup and leave it there" is refused).
- Several things of one kind put on one receiver ("the three paper cups on the tray", "each of
  the cups", "every cup", a bare "the cups" in a scene of three) are one place each
  (:func:`parse_steps`); the count is said or the scene's, never guessed.
- A wish for a thing done is the request it is: "I'd like the cups put on the tray", "I need the
  box pushed onto the mat" (a known verb's past participle and where it goes).
- "Cover the pot with the lid" (or "with its lid", "... and close the pot with it") is the lid
  put on the pot, and a bare "cover the pot" is, when the scene holds one kind of thing that
  covers; a lid (a category that ``covers``) put on a container goes over the part that
  contains, its mouth, not on a part that supports (the pot's own lid, which an open pot has not).
- A verbless sentence is a place only with a motion preposition ("carrot into the bowl");
  when the object could also pour into the receiver ("kettle into the bowl") it is refused
  as ambiguous, and "the carrot in the bowl" (where it is) is no task.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

import numpy as np

from afford_core.ontology import CATEGORIES, Category
from afford_core.types import Intent, NextAction
from afford_perception import lexicon as lx
from afford_perception import text_embedding

__all__ = ["ParseErrorKind", "ParserConfig", "TaskParseError", "parse", "parse_steps"]


@dataclass(frozen=True)
class ParserConfig:
    """Tuning of the task parser.

    Attributes:
        similarity_threshold: Cosine similarity in (0, 1] an unknown phrase needs to its best
            known name before the embedding fallback accepts it. 0.65 accepts "teakettle" ->
            kettle (0.73) and "wardrobe" -> cabinet (0.71) but refuses "orange" -> banana's
            "fruit" (0.62) and "unicorn" (< 0.45).
        min_margin: In [0, 1): the best candidate (object, part or action) must beat the
            runner-up by this much; a near-tie ("tea set": teacup 0.75, kettle 0.74) is refused
            as ambiguous instead of picked by noise.
        use_embeddings: False disables the fallback: every word must be in the lexicon and
            the model is never loaded (for cells that must not import torch).
        max_unknown_words: Longest unknown phrase, in words, that is sent to the model;
            longer ones are reported as not understood (single-word paraphrases is what
            MiniLM matches reliably).
    """

    similarity_threshold: float = 0.65
    min_margin: float = 0.1
    use_embeddings: bool = True
    max_unknown_words: int = 3

    def __post_init__(self) -> None:
        if not 0.0 < self.similarity_threshold <= 1.0:
            raise ValueError(f"similarity_threshold must be in (0, 1], got {self.similarity_threshold}")
        if not 0.0 <= self.min_margin < 1.0:
            raise ValueError(f"min_margin must be in [0, 1), got {self.min_margin}")
        if not isinstance(self.use_embeddings, bool):
            raise ValueError(f"use_embeddings must be a bool, got {self.use_embeddings!r}")
        if isinstance(self.max_unknown_words, bool) or not isinstance(self.max_unknown_words, int) \
                or self.max_unknown_words < 1:
            raise ValueError(f"max_unknown_words must be an int >= 1, got {self.max_unknown_words!r}")


class ParseErrorKind(StrEnum):
    """Why a sentence was refused (for callers that react differently, e.g. re-ask vs. log)."""

    EMPTY = "empty"  # nothing to parse
    UNKNOWN_OBJECT = "unknown_object"  # no object of the ontology named
    NOT_IN_SCENE = "not_in_scene"  # a known category that known_objects does not list
    UNKNOWN_PART = "unknown_part"  # the object has no such part
    UNKNOWN_VERB = "unknown_verb"  # no known action
    CONTRADICTION = "contradiction"  # grasp region is a part that must stay clear
    AMBIGUOUS = "ambiguous"  # several readings and nothing to choose by
    INCOMPLETE = "incomplete"  # a required role (destination, pour source) is missing
    UNSUPPORTED = "unsupported"  # understood, but not expressible or not possible
    TOO_LONG = "too_long"  # longer than any task sentence (MAX_TEXT_CHARS); not parsed at all


#: The longest text the parser reads. A task sentence is a line; a megabyte pasted into the
#: operator's prompt is a mistake, refused before tokenizing (the parser's cost grows with it).
MAX_TEXT_CHARS = 300


class TaskParseError(ValueError):
    """A sentence the parser will not turn into an intent; the message is one line and
    says what is known or expected."""

    def __init__(self, message: str, kind: ParseErrorKind, text: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.text = text


# --------------------------------------------------------------------------- action rules

Receive = tuple[str, ...]


@dataclass(frozen=True)
class _Rule:
    """What an action asks of the target and the destination (affordances from the ontology).

    Attributes:
        use: Affordances of the target part the action works with, in preference order.
        use_required: The action is impossible without such a part (pour, hang).
        use_purpose: Why that part must stay free, for contradiction messages.
        destination: ``"required"``, ``"optional"`` or ``"none"``.
        surface_ok: The table (no receiving object) is an acceptable destination.
        receive: Destination affordances, preference order, for an "on"/"to" relation.
        receive_in: Same for an "in" relation (None: as ``receive``).
        body_fallback: A destination without a receiving part is received on its body (a
            cube stacked on a box sits on the box's body).
        grasp_any_part: When every graspable part is in use, grasp any other part (hand-over
            of a hammer grasps the head so the person gets the handle).
        articulated: The grasp is a part that pulls (drawer or door handles).
    """

    use: tuple[str, ...] = ()
    use_required: bool = False
    use_purpose: str = ""
    destination: Literal["required", "optional", "none"] = "none"
    surface_ok: bool = False
    receive: Receive = ()
    receive_in: Receive | None = None
    body_fallback: bool = False
    grasp_any_part: bool = False
    articulated: bool = False

    def receiving(self, relation: str) -> Receive:
        return self.receive_in if relation == "in" and self.receive_in is not None else self.receive


_SUPPORT = ("support", "contain")
_INSIDE = ("contain", "support")
_RULES: dict[NextAction, _Rule] = {
    NextAction.PICK: _Rule(),
    NextAction.PLACE: _Rule(destination="required", surface_ok=True, receive=_SUPPORT, receive_in=_INSIDE,
                            body_fallback=True),
    NextAction.INSERT: _Rule(destination="required", receive=("pour_in", "contain")),
    NextAction.POUR: _Rule(use=("pour_out", "contain"), use_required=True, use_purpose="to pour through",
                           destination="required", receive=("pour_in", "contain")),
    NextAction.STACK: _Rule(destination="required", receive=_SUPPORT, receive_in=_INSIDE, body_fallback=True),
    NextAction.HANG: _Rule(use=("hang",), use_required=True, use_purpose="to engage the hook",
                           destination="required", receive=("hang",)),
    NextAction.HAND_OVER: _Rule(use=("grasp_handle",), use_purpose="for the person to take",
                                grasp_any_part=True),
    NextAction.OPEN: _Rule(articulated=True),
    NextAction.CLOSE: _Rule(articulated=True),
    NextAction.PUSH: _Rule(destination="optional", surface_ok=True, receive=_SUPPORT, receive_in=_INSIDE,
                           body_fallback=True),
    NextAction.PULL: _Rule(destination="optional", surface_ok=True, receive=_SUPPORT, receive_in=_INSIDE,
                           body_fallback=True, articulated=True),
}
_GRASPABLE = ("grasp_handle", "grasp_body")
# Actions that carry the target away; furniture (``Category.fixed``) cannot do them.
_MOVES_TARGET = frozenset({NextAction.PICK, NextAction.PLACE, NextAction.INSERT, NextAction.POUR,
                           NextAction.STACK, NextAction.HANG, NextAction.HAND_OVER})


# --------------------------------------------------------------------------- parse state

NPKind = Literal["object", "pronoun", "person", "surface", "spot", "substance", "empty"]


@dataclass(frozen=True)
class _NounPhrase:
    """A resolved noun phrase; ``part`` is a part the phrase itself names ("the drawer",
    "the kettle's spout"), already checked against ``category``; ``implied`` when the object's
    own name is also that part's name ("the drawer", "the hook", "the board")."""

    words: str
    kind: NPKind
    category: str | None = None
    part: str | None = None
    implied: bool = False


@dataclass(frozen=True)
class _Destination:
    relation: str
    directional: bool
    tokens: list[str]


@dataclass
class _ActionClause:
    words: str
    verb: str
    sense: lx.VerbSense
    obj: list[str] = field(default_factory=list)
    grasp: list[list[str]] = field(default_factory=list)
    dest: list[_Destination] = field(default_factory=list)
    source: list[list[str]] = field(default_factory=list)
    resultative: NextAction | None = None
    down: bool = False
    # Grasp slots opened by "by": for a hang, "by its handle" names the part that hangs.
    by: list[list[str]] = field(default_factory=list)
    # "somewhere else", "over a bit": a place on the work surface, which need not be named.
    elsewhere: bool = False
    # No verb at all ("carrot into the bowl"), read as a place.
    verbless: bool = False


#: Verbs that open or close when a result word follows their object ("pop the microwave open",
#: "get the drawer shut"); without one they keep their own sense (a place, a pick).
_PUT_TO_STATE = frozenset({"pop", "get", "swing", "flip", "prop"})


#: Verbs of a clause that only says how to hold what the action before it named.
_HOLD_VERBS = frozenset({"hold", "grip", "grasp", "grab", "take"})

#: Words that make a sentence a request whatever its grammar.
_REQUEST_WORDS = frozenset({"please", "pls", "plz"})
#: A clause that starts so says what not to do ("do not" as two words, as tokenized).
_NEGATIONS = frozenset({"never", "dont", "not"})


def _commanded(clause: Sequence[str], asked: bool, question: bool) -> bool:
    """Whether a verbless clause is a command: asked for ("..., please"), or written as one is,
    without its article ("lid on the pot", "drawer open"), and not asked as a question."""
    telegraphic = clause[0] not in lx.DETERMINERS and clause[0] not in lx.PRONOUNS
    return asked or (telegraphic and not question)


def _join(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "none"


def _human(name: str) -> str:
    return name.replace("_", " ")


class _Parser:
    """One parse: holds the sentence, the scene scope and the config for error messages."""

    def __init__(self, text: str, scope: Sequence[str] | None, config: ParserConfig,
                 original: str | None = None) -> None:
        # Runs of whitespace (newlines, tabs, Unicode spaces) read as one space: the words are
        # the same, and every error message that quotes the sentence stays on one line.
        self.text = " ".join(text.split())
        # What the caller gave, kept on the intent and on the error (``text`` may be it reworded:
        # a receiver said first put after the request, an aside dropped).
        self.original = text if original is None else original
        self.scope = tuple(scope) if scope is not None else tuple(CATEGORIES)
        self.scoped = scope is not None
        self.cfg = config

    # ----------------------------------------------------------------- errors

    def fail(self, kind: ParseErrorKind, message: str) -> TaskParseError:
        return TaskParseError(message, kind, self.original)

    def _known_objects_note(self) -> str:
        label = "objects in the scene" if self.scoped else "known objects"
        return f"{label}: {_join(sorted(self.scope))}"

    # ----------------------------------------------------------------- top level

    def run(self) -> Intent:
        tokens = lx.tokenize(self.text)
        if not [t for t in tokens if t != ","]:
            raise self.fail(ParseErrorKind.EMPTY,
                            "empty task sentence: say what to do, e.g. 'pick up the mug'")
        actions: list[_ActionClause] = []
        keep: list[list[str]] = []
        previous = ""
        clauses = self._clauses(tokens)
        # "..., please" as a clause of its own asks for the sentence; inside another clause ("the
        # drawer open, please close it") only for that one. A question ("drawer open?") asks
        # whether, unless it says please.
        asked_all = any(any(t in _REQUEST_WORDS for t in c) and not self._strip_fillers(c) for c in clauses)
        question = self.text.rstrip().endswith("?")
        for clause in clauses:
            asked = asked_all or any(t in _REQUEST_WORDS for t in clause)
            clause = self._strip_fillers(clause)
            if not clause:
                continue
            negated = 2 if clause[:2] == ["do", "not"] else int(clause[0] in _NEGATIONS)
            if negated and lx.VERB_INDEX.match(clause, negated) is not None \
                    and lx.KEEP_CLEAR_INDEX.match(clause, 0) is None:
                # "don't put the cup on the plate": the robot acts on what to do, never on a
                # negated request read as the request ("not by the handle" and "do not hold it
                # by the spout" say how, and stay).
                raise self.fail(ParseErrorKind.UNSUPPORTED,
                                f"'{' '.join(clause)}' says what not to do in '{self.text}': say what to do")
            if previous == "action" and (self._restates(clause, actions[-1])
                                         or all(t in lx.TRAILING_OK for t in clause)):
                continue  # "..., keeping it upright", "... and leave it in there", "..., upright"
            if self._continued_push(clause):
                clause = clause[1:]  # "keep pushing the box till it sits on the mat": a push
            link = lx.RESULT_LINKS.match(clause, 0)
            if previous == "action" and link is not None \
                    and lx.MARKER_INDEX.match(clause, link[0]) is not None:
                # "move the bowl, so that it sits on the plate": the destination of that action.
                self._fill_slots(actions[-1], clause[link[0]:], continuing=True)
                continue
            if previous == "action" and len(clause) > 3 and clause[0] in _HOLD_VERBS \
                    and clause[1] in ("it", "them") and clause[2] in ("by", "at", "around"):
                # "put the mug on the tray, hold it by the handle": how to hold the thing just named.
                self._fill_slots(actions[-1], ["by", *clause[3:]], continuing=True)
                continue
            opener = lx.KEEP_CLEAR_INDEX.match(clause, 0)
            verb = lx.VERB_INDEX.match(clause, 0)
            if opener is not None and (verb is None or opener[0] >= verb[0]):
                keep += self._keep_clause(clause, opener[0], opener[1][0])
                previous = "keep"
            elif verb is not None:
                actions.append(self._action_clause(clause, verb[0], verb[1][0]))
                previous = "action"
            elif previous == "action" and lx.MARKER_INDEX.match(clause, 0) is not None:
                # "... by its handle and by its body": more slots for the same action.
                self._fill_slots(actions[-1], clause, continuing=True)
            elif self._starts_noun(clause):
                if previous == "keep":  # "without touching the spout and the lid"
                    keep += self._split_alternatives(clause)
                    continue
                words = " ".join(clause)
                if not actions and not keep:
                    state = self._verbless_state(clause, asked, question)
                    if state is not None:
                        actions.append(state)
                        previous = "action"
                        continue
                    verbless = self._verbless_place(clause, asked, question)
                    if verbless is not None:
                        actions.append(verbless)
                        previous = "action"
                        continue
                if actions:
                    raise self.fail(ParseErrorKind.UNSUPPORTED,
                                    f"'{words}' has no verb of its own in '{self.text}': give one object "
                                    "per task (one pick and at most one next action)")
                raise self.fail(ParseErrorKind.UNKNOWN_VERB,
                                f"no action verb in '{self.text}'; known actions: {self._actions_note()}")
            else:
                actions.append(self._unknown_verb_clause(clause))
                previous = "action"
        return self._intent(actions, keep)

    @staticmethod
    def _clauses(tokens: list[str]) -> list[list[str]]:
        clauses: list[list[str]] = [[]]
        i = 0
        while i < len(tokens):
            brk = lx.CLAUSE_BREAKS.match(tokens, i)
            if brk is not None:
                clauses.append([])
                i += brk[0]
                continue
            # "pick up the mug without touching the handle": the opener starts a clause.
            if clauses[-1] and lx.KEEP_CLEAR_INDEX.match(tokens, i) is not None \
                    and lx.VERB_INDEX.match(tokens, i) is None:
                clauses.append([])
            clauses[-1].append(tokens[i])
            i += 1
        return [c for c in clauses if c]

    @staticmethod
    def _strip_fillers(clause: list[str]) -> list[str]:
        """The clause without politeness around it; empty when it is nothing else ("please")."""
        i = 0
        while i < len(clause):
            hit = lx.LEADING_FILLERS.match(clause, i) or lx.TAIL_FILLERS.match(clause, i)
            if hit is None:
                break
            i += hit[0]
        end = len(clause)
        while end > i:
            tail = lx.TAIL_FILLERS.match_end(clause[i:end])
            if tail is None:
                break
            end -= tail[0]
        return clause[i:end]

    @staticmethod
    def _restates(clause: list[str], before: _ActionClause) -> bool:
        """Whether a clause after an action only restates it: its goal ("and leave it in
        there") or the place's own manner ("keeping it standing up", "sitting upright"). It
        names no object or part; a clause that says where must refer back ("it", "there") and
        restates only an action that named where (a destination or "elsewhere")."""
        hit = lx.RESTATE_OPENERS.match(clause, 0)
        if hit is None:
            return False
        rest = clause[hit[0]:]
        if not rest or any(t not in lx.RESTATE_WORDS for t in rest):
            return False
        says_where = any(t in lx.RESTATE_WHERE for t in rest)
        if not says_where:  # manner only: "standing upright", "keeping it steady"
            return True
        return any(t in lx.RESTATE_CORE for t in rest) and (bool(before.dest) or before.elsewhere)

    def _verbless_place(self, clause: list[str], asked: bool, question: bool) -> _ActionClause | None:
        """"carrot into the bowl": an object moved by a motion preposition ("into", "onto",
        "to") is a place. With a preposition of where ("in", "on"), "the carrot in the bowl"
        says where it is and stays no task at all, unless it is asked for ("..., please") or
        said as a command is written, without its article ("carrot on plate", "lid on the
        pot"), and not as a question ("banana on tray?")."""
        ac = _ActionClause(words=" ".join(clause), verb="", sense=lx.VERBS["put"], verbless=True)
        self._fill_slots(ac, clause)
        if not ac.obj or ac.grasp or ac.source or len(ac.dest) != 1:
            return None
        if not (ac.dest[0].directional or _commanded(clause, asked, question)):
            return None
        return ac

    def _verbless_state(self, clause: list[str], asked: bool, question: bool) -> _ActionClause | None:
        """"microwave door open please", "drawer shut": a thing and the state it should be in,
        said without a verb, is opening or closing it ("open the microwave door"), on
        :meth:`_verbless_place`'s terms ("the drawer open" alone describes it, "drawer open?"
        asks whether it is); "closed", a state as often reported as asked for, only when asked
        for ("drawer closed, please")."""
        action = lx.RESULTATIVES.get(clause[-1]) if len(clause) > 1 else None
        if action is None or not _commanded(clause, asked, question):
            return None
        if clause[-1] == "closed" and not asked:
            return None
        verb = "open" if action is NextAction.OPEN else "close"
        return self._action_clause([verb, *clause[:-1]], 1, lx.VERBS[verb])

    @staticmethod
    def _starts_noun(clause: list[str]) -> bool:
        first = clause[0]
        return (first in lx.DETERMINERS or first in lx.PRONOUNS or first in lx.SUBSTANCES
                or lx.NOUN_INDEX.match(clause, 0) is not None)

    @staticmethod
    def _actions_note() -> str:
        return ", ".join(_human(a.value) for a in NextAction)

    # ----------------------------------------------------------------- clauses

    def _keep_clause(self, clause: list[str], n: int, needs_clear_word: bool) -> list[list[str]]:
        rest = self._strip_trailing(clause[n:])
        if rest and rest[0] in lx.CLEAR_WORDS:  # "keep clear of the handle"
            rest = [t for t in rest[1:] if t != "of"] if len(rest) > 1 else []
        elif rest and rest[-1] in lx.CLEAR_WORDS:
            rest = rest[:-1]
        elif needs_clear_word:
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"did not understand '{' '.join(clause)}' in '{self.text}': "
                            "say 'keep the <part> clear' or 'without touching the <part>'")
        if not rest:
            raise self.fail(ParseErrorKind.INCOMPLETE,
                            f"'{' '.join(clause)}' names no part to keep clear in '{self.text}'")
        return self._split_alternatives(rest)

    @staticmethod
    def _split_alternatives(tokens: list[str]) -> list[list[str]]:
        groups: list[list[str]] = [[]]
        for t in tokens:
            if t in ("or", "nor", "and"):
                groups.append([])
            else:
                groups[-1].append(t)
        return [g for g in groups if g]

    def _action_clause(self, clause: list[str], n: int, sense: lx.VerbSense) -> _ActionClause:
        verb = " ".join(clause[:n])
        ac = _ActionClause(words=" ".join(clause), verb=verb, sense=sense, down="down" in clause[:n])
        self._fill_slots(ac, clause[n:])
        return ac

    def _unknown_verb_clause(self, clause: list[str]) -> _ActionClause:
        i = 0
        while i < len(clause) and not self._starts_noun(clause[i:]) \
                and lx.MARKER_INDEX.match(clause, i) is None and clause[i] not in lx.PERSONS:
            i += 1
        span = " ".join(clause[:i])
        if not span:
            raise self.fail(ParseErrorKind.UNKNOWN_VERB,
                            f"no action verb in '{self.text}'; known actions: {self._actions_note()}")
        options: dict[str, list[str]] = {}
        for phrase, senses in lx.VERB_INDEX.items():
            options.setdefault(senses[0].action.value, []).append(phrase)
        choice, note = self._nearest(span, options)
        if choice is None:
            raise self.fail(ParseErrorKind.UNKNOWN_VERB,
                            f"no known action in '{self.text}': '{span}' is not a verb I know ({note}); "
                            f"known actions: {self._actions_note()}")
        sense = next(s for s in lx.VERBS.values() if s.action.value == choice)
        ac = _ActionClause(words=" ".join(clause), verb=span, sense=sense)
        self._fill_slots(ac, clause[i:])
        return ac

    def _fill_slots(self, ac: _ActionClause, rest: list[str], continuing: bool = False) -> None:
        # A continuation clause has no object of its own; stray words before its first
        # marker cannot happen (it starts with one), so a throwaway list is safe.
        current: list[str] = [] if continuing else ac.obj
        i = 0
        while i < len(rest):
            # "somewhere else", "over a bit" before "over" is read as a destination.
            where = lx.ELSEWHERE.match(rest, i)
            if where is not None:
                ac.elsewhere = True
                i += where[0]
                if i < len(rest) - 1 and rest[i] == "along":
                    # "a little further along the table": where on that surface, not a path.
                    current = []
                    ac.dest.append(_Destination("on", True, current))
                    i += 1
                continue
            path = self._surface_path(rest, i)
            if path:  # "across the table": the way there, not the destination
                i += path
                continue
            usual = lx.USUAL_PLACE.match(rest, i)
            if usual is not None and ac.dest and current is ac.dest[-1].tokens \
                    and all(t in lx.TRAILING_OK for t in rest[i + usual[0]:]):
                i += usual[0]  # "onto the base it sits on": that receiver, said again
                continue
            link = lx.RESULT_LINKS.match(rest, i)
            if link is not None:  # "so it sits": the destination that follows is the action's
                i += link[0]
                continue
            manner = self._push_manner(ac, rest, i)
            if manner:  # "move the can by sliding it onto the mat": the move is a push
                i += manner
                continue
            hit = lx.MARKER_INDEX.match(rest, i)
            # A marker with nothing after it is a particle ("hand the hammer over"), and so is
            # one right before another ("move it over to the bowl", "put it back onto").
            if hit is not None and i + hit[0] < len(rest) and lx.MARKER_INDEX.match(rest, i + hit[0]) is None:
                n, (marker,) = hit[0], hit[1][:1]
                words = " ".join(rest[i : i + n])
                ahead = self._up_to_marker(rest, i + n)
                if ac.grasp and current is ac.grasp[-1] and current and words in ("on", "in", "at") \
                        and " ".join(self._strip_trailing(ahead)) in lx.PART_LOCATIVES:
                    # "by the loop on the side": where on the part just named, not another thing.
                    i += n + len(ahead)
                    continue
                action = ac.sense.action
                if ((words in ("around", "from") and action in (NextAction.PICK, NextAction.PLACE))
                        or (words == "in" and action is NextAction.PICK)) and self._names_parts(ahead):
                    # "lift the mug around its body", "take the bowl from the top edge", "grab the
                    # carrot in the middle": a part of the object to hold, not a relation to, or a
                    # place to take it from (a pick names no place to put it in).
                    marker = lx.MARKERS["by"]
                if marker.slot == "unsupported":
                    raise self.fail(ParseErrorKind.UNSUPPORTED,
                                    f"the relation '{words}' in '{self.text}' is not supported: say where "
                                    "the object goes with 'on', 'in' or 'into' a named object")
                current = []
                if marker.slot == "grasp" and words == "at" \
                        and self._is_spot(self._up_to_marker(rest, i + n)):
                    # "place it at a new spot": a location, not a part to hold.
                    ac.dest.append(_Destination("on", True, current))
                elif marker.slot == "grasp":
                    ac.grasp.append(current)
                    if words == "by":
                        ac.by.append(current)
                elif marker.slot == "source":
                    ac.source.append(current)
                else:
                    ac.dest.append(_Destination(marker.relation, marker.directional, current))
                i += n
                continue
            current.append(rest[i])
            i += 1
        # "move it over so it rests on the plate": "over" opened a slot the result link left
        # empty; the destination is the one that follows.
        if len(ac.dest) > 1:
            ac.dest[:] = [d for d in ac.dest if self._strip_trailing(d.tokens)] or ac.dest[-1:]
        if not continuing and (ac.sense.action in (NextAction.PUSH, NextAction.PULL)
                               or ac.verb in _PUT_TO_STATE):
            # "slide the drawer open for me": the result word may be followed by fillers.
            kept = self._strip_trailing(ac.obj)
            if kept and kept[-1] in lx.RESULTATIVES:
                ac.resultative = lx.RESULTATIVES[kept[-1]]
                del ac.obj[len(kept) - 1 :]
        ac.down = ac.down or "down" in rest

    @staticmethod
    def _continued_push(clause: list[str]) -> bool:
        """"keep pushing ...", "continue sliding ...": the first word only says to go on."""
        if len(clause) < 2 or clause[0] not in ("keep", "continue"):
            return False
        verb = lx.VERB_INDEX.match(clause, 1)
        return verb is not None and any(s.action in (NextAction.PUSH, NextAction.PULL) for s in verb[1])

    @staticmethod
    def _push_manner(ac: _ActionClause, tokens: list[str], i: int) -> int:
        """"by sliding it", "by pushing them" after a verb that only moves (move, put): the
        manner says the move is a push. Sets the clause's sense; returns the phrase's
        length, or 0 (then "by" opens a grasp slot as usual)."""
        if tokens[i] != "by" or ac.sense.action not in (NextAction.PLACE, NextAction.PICK):
            return 0
        verb = lx.VERB_INDEX.match(tokens, i + 1)
        if verb is None:
            return 0
        n, senses = verb
        # Push only: "by pulling it onto the mat" is not how a drawer or door is opened.
        sense = next((s for s in senses if s.action is NextAction.PUSH), None)
        end = i + 1 + n
        if sense is None or end >= len(tokens) or tokens[end] not in lx.PRONOUNS:
            return 0
        ac.sense = sense
        return end + 1 - i

    @staticmethod
    def _surface_path(tokens: list[str], i: int) -> int:
        """Length of a path over the work surface at ``tokens[i]`` ("across the table", "along
        the tabletop"), or 0. Only when a destination or a result ("so it sits on") follows right
        after it, so "put it over the table" still means the table, and so does "put it over the
        table by its handle"."""
        if tokens[i] not in lx.PATHS:
            return 0
        j = i + 1
        while j < len(tokens) and tokens[j] in lx.DETERMINERS:
            j += 1
        for n in (2, 1):
            if " ".join(tokens[j:j + n]) in lx.SURFACES:
                end = j + n
                hit = lx.MARKER_INDEX.match(tokens, end) if end < len(tokens) else None
                dest_next = hit is not None and hit[1][0].slot == "destination"
                if dest_next or (end < len(tokens) and lx.RESULT_LINKS.match(tokens, end) is not None):
                    return end - i
        return 0

    def _names_parts(self, tokens: list[str]) -> bool:
        """Whether a phrase names parts only: it has nouns, and each names a part and nothing
        else ("from the bowl" is a place for a scoop, "around the bowl" a relation to one)."""
        content = self._strip_trailing([t for t in tokens if t not in lx.DETERMINERS])
        spans = self._spans(content)
        return bool(spans) and all(all(x.kind == "part" for x in senses) for _, _, senses in spans)

    @staticmethod
    def _up_to_marker(tokens: list[str], start: int) -> list[str]:
        end = start
        while end < len(tokens) and lx.MARKER_INDEX.match(tokens, end) is None:
            end += 1
        return tokens[start:end]

    @classmethod
    def _is_spot(cls, tokens: list[str]) -> bool:
        """"a different spot", "another place": somewhere, not something."""
        content = [t for t in cls._strip_trailing(tokens) if t not in lx.DETERMINERS]
        return bool(content) and content[-1] in lx.SPOTS \
            and all(t in lx.SPOT_MODIFIERS or t in lx.MODIFIERS for t in content[:-1])

    # ----------------------------------------------------------------- noun phrases

    @staticmethod
    def _strip_trailing(tokens: list[str]) -> list[str]:
        out = list(tokens)
        while out and out[-1] in lx.TRAILING_OK and " ".join(out) not in lx.PERSONS:
            out.pop()
        return out

    @staticmethod
    def _spans(content: list[str]) -> list[tuple[int, int, tuple[lx.Sense, ...]]]:
        spans = []
        i = 0
        while i < len(content):
            hit = lx.NOUN_INDEX.match(content, i)
            if hit is None:
                i += 1
                continue
            spans.append((i, i + hit[0], hit[1]))
            i += hit[0]
        return spans

    def _check_trailing(self, content: list[str], unstripped: list[str], end: int, head: str) -> None:
        """Words after the head noun may only be fillers or contents ("cup of coffee"):
        "the banana upside down" must not silently become "the banana"."""
        if [t for t in content[end:] if t not in lx.SUBSTANCES]:
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"did not understand '{' '.join(unstripped[end:])}' after '{head}' in "
                            f"'{self.text}'")

    def _noun_phrase(self, tokens: list[str]) -> _NounPhrase:
        content = [t for t in tokens if t not in lx.DETERMINERS]
        whole = " ".join(content)
        if not content:
            return _NounPhrase("", "empty")
        if whole in lx.PRONOUNS:
            return _NounPhrase(whole, "pronoun")
        if whole in lx.PERSONS:
            return _NounPhrase(whole, "person")
        unstripped = content
        content = self._strip_trailing(content)
        whole = " ".join(content)
        if not content:
            return _NounPhrase("", "empty")
        if whole in lx.PRONOUNS:
            return _NounPhrase(whole, "pronoun")
        if self._is_spot(content):
            return _NounPhrase(whole, "spot")
        spans = self._spans(content)
        if not spans:
            head2 = " ".join(content[-2:])
            if content[-1] in lx.SURFACES or head2 in lx.SURFACES:
                return _NounPhrase(whole, "surface")
            if content[-1] in lx.SUBSTANCES:
                return _NounPhrase(whole, "substance")
            if content[-1] in lx.PERSONS or head2 in lx.PERSONS:
                return _NounPhrase(whole, "person")
            return self._unknown_object(content)

        objects = [s for s in spans if any(x.kind == "object" for x in s[2])]
        if len(objects) > 1:
            # "the rack hook", "the scoop bowl": a word that is both an object and a part
            # is the part when another word names the object.
            object_only = [s for s in objects if all(x.kind == "object" for x in s[2])]
            if len(object_only) == 1:
                objects = object_only
        categories = sorted({x.value for s in objects for x in s[2] if x.kind == "object"})
        if len(categories) > 1:
            raise self.fail(ParseErrorKind.AMBIGUOUS,
                            f"'{whole}' in '{self.text}' names several objects ({_join(categories)}); "
                            "name one object per role")
        part_spans = [s for s in spans if s not in objects]
        if len(categories) == 1 and categories[0] not in self.scope and not part_spans:
            # "the board" names a cutting board and also a shelf's boards: in a scene without a
            # cutting board but with an object that has boards, it is that object's part.
            a, b, senses = objects[0]
            as_part = tuple(x for x in senses if x.kind == "part")
            if as_part and any(self._owns(c, as_part, " ".join(content[a:b])) for c in self.scope):
                objects, categories, part_spans = [], [], [(a, b, as_part)]
        if len(part_spans) > 1:
            named = [" ".join(content[a:b]) for a, b, _ in part_spans]
            raise self.fail(ParseErrorKind.AMBIGUOUS,
                            f"'{whole}' in '{self.text}' names several parts ({_join(named)}); name one")
        self._check_trailing(content, unstripped, spans[-1][1], " ".join(content[spans[-1][0]:spans[-1][1]]))

        if categories:
            cat = self._in_scope(categories[0], " ".join(content[objects[0][0]:objects[0][1]]), whole)
            if part_spans:
                a, b, senses = part_spans[0]
                part = self._part_of(cat, senses, " ".join(content[a:b]), None)
                return _NounPhrase(whole, "object", cat, part)
            # "the drawer" names the cabinet and, with it, the part that moves.
            implied = [x.value for x in objects[0][2]
                       if x.kind == "part" and x.value in CATEGORIES[cat].parts]
            return _NounPhrase(whole, "object", cat, implied[0] if implied else None, implied=bool(implied))

        # Only a part is named ("open the door"): the object is the one in scope that has it.
        a, b, senses = part_spans[0]
        part_words = " ".join(content[a:b])
        owners = {}
        for cat in self.scope:
            try:
                owners[cat] = self._part_of(cat, senses, part_words, None)
            except TaskParseError:
                continue
        if len(owners) == 1:
            cat, part = next(iter(owners.items()))
            return _NounPhrase(whole, "object", cat, part)
        if not owners:
            raise self.fail(ParseErrorKind.UNKNOWN_OBJECT,
                            f"no object in '{self.text}' has a {part_words}; {self._known_objects_note()}")
        raise self.fail(ParseErrorKind.AMBIGUOUS,
                        f"'{part_words}' in '{self.text}' could belong to {_join(sorted(owners))}: "
                        "name the object")

    def _owns(self, cat: str, senses: Sequence[lx.Sense], words: str) -> bool:
        """Whether ``cat`` has the part that ``senses`` (read from ``words``) name."""
        try:
            self._part_of(cat, senses, words, None)
        except TaskParseError:
            return False
        return True

    def _in_scope(self, cat: str, name: str, words: str) -> str:
        """``cat`` if the scene has it; else the one scene object that ``name`` is the head
        noun of ("cup" is a mug in the ontology, but in a scene with a paper cup and no mug
        it can only mean the paper cup)."""
        if cat in self.scope:
            return cat
        kind = _head_kind(name.split()[-1], self.scope)
        if kind is not None:
            return kind
        raise self.fail(ParseErrorKind.NOT_IN_SCENE,
                        f"'{words}' ({_human(cat)}) in '{self.text}' is not in the scene; "
                        f"{self._known_objects_note()}")

    def _unknown_object(self, content: list[str]) -> _NounPhrase:
        query_words = [t for t in content if t not in lx.MODIFIERS] or content
        query = " ".join(query_words)
        all_phrases = lx.object_phrases()
        options = {c: all_phrases[c] for c in self.scope}
        choice, note = self._nearest(query, options)
        if choice is None:
            raise self.fail(ParseErrorKind.UNKNOWN_OBJECT,
                            f"no known object in '{self.text}' ('{query}': {note}); "
                            f"{self._known_objects_note()}")
        return _NounPhrase(" ".join(content), "object", choice)

    def _part_of(self, cat: str, senses: Sequence[lx.Sense], words: str, context: str | None) -> str:
        """The part of ``cat`` that a part phrase names; ``context`` is a part the object phrase
        named, so "the drawer ... by its handle" is the drawer's handle."""
        category = CATEGORIES[cat]
        hit = lx.part_index(cat).match(words.split(), 0)
        if hit is not None and hit[0] == len(words.split()):
            return hit[1][0]
        names = [s.value for s in senses if s.kind == "part" and s.category in (None, cat)]
        for name in names:
            if name in category.parts:
                return name
            # Handles of articulated furniture are named "<moving part>_handle".
            if context is not None and f"{context}_{name}" in category.parts:
                return f"{context}_{name}"
            suffixed = [p for p in category.parts if p.endswith(f"_{name}")]
            if len(suffixed) == 1:
                return suffixed[0]
            if suffixed:
                raise self.fail(ParseErrorKind.AMBIGUOUS,
                                f"which {words} of the {_human(cat)} in '{self.text}': {_join(suffixed)}?")
        for name in [*names, words]:
            other = next((p for p in lx.PART_ALTERNATES.get(name, ()) if p in category.parts), None)
            if other is not None:
                return other
        raise self.fail(ParseErrorKind.UNKNOWN_PART,
                        f"the {_human(cat)} has no {words} ('{self.text}'); {_human(cat)} parts: "
                        f"{_join(category.parts)}")

    def _part_phrase(self, tokens: list[str], cat: str, context: str | None, role: str) -> str:
        """Resolve a grasp or keep-clear phrase to a part of ``cat``."""
        content = self._strip_trailing([t for t in tokens if t not in lx.DETERMINERS])
        whole = " ".join(content)
        if not content:
            raise self.fail(ParseErrorKind.INCOMPLETE, f"the {role} in '{self.text}' names no part")
        by_use = self._part_by_use(cat, content)
        if by_use is not None:
            return by_use
        spans = self._spans(content)
        # In a part slot a word that is both ("bowl", "hook") means the part, unless another
        # word names the part ("by the bowl's rim").
        parts = [s for s in spans if any(x.kind == "part" for x in s[2])]
        if len(parts) > 1:
            parts = [s for s in parts if all(x.kind == "part" for x in s[2])] or parts
        objects = [s for s in spans if s not in parts]
        for _, _, senses in objects:
            other = senses[0].value
            if other != cat:
                raise self.fail(ParseErrorKind.CONTRADICTION,
                                f"the {role} in '{self.text}' names the {_human(other)}, but the task's "
                                f"object is the {_human(cat)}")
        if len(parts) > 1:
            raise self.fail(ParseErrorKind.AMBIGUOUS,
                            f"'{whole}' in '{self.text}' names several parts; name one")
        if parts:
            a, b, senses = parts[0]
            if content[b:] and all(t in lx.PART_HEADS for t in content[b:]):
                content = content[:b]  # "the handle end": the handle
            elif content[b:] and content[b] in lx.RELATIVE_WORDS:
                # "the edge you drink from": the part, if what the description says it is for
                # is something it offers; otherwise the words after it are not understood.
                part = self._part_of(cat, senses, " ".join(content[a:b]), context)
                offered = CATEGORIES[cat].affordances.get(part, ())
                if any(use in offered for t in content[b:] for use in lx.USE_VERBS.get(t, ())):
                    return part
            self._check_trailing(content, content, b, " ".join(content[a:b]))
            return self._part_of(cat, senses, " ".join(content[a:b]), context)
        if objects:
            raise self.fail(ParseErrorKind.INCOMPLETE,
                            f"the {role} '{whole}' in '{self.text}' names no part of the {_human(cat)}; "
                            f"{_human(cat)} parts: {_join(CATEGORIES[cat].parts)}")
        query = " ".join([t for t in content if t not in lx.MODIFIERS] or content)
        choice, note = self._nearest(query, lx.part_phrases(cat))
        if choice is None:
            choice = _part_by_wording(cat, " ".join(content))
        if choice is None:
            raise self.fail(ParseErrorKind.UNKNOWN_PART,
                            f"the {_human(cat)} has no part called '{query}' ({note}) in '{self.text}'; "
                            f"{_human(cat)} parts: {_join(CATEGORIES[cat].parts)}")
        return choice

    @staticmethod
    def _part_by_use(cat: str, content: list[str]) -> str | None:
        """The part a description by use names ("the bit you hold", "the end you hit nails
        with"): a placeholder noun, then a verb of what the part is for, which exactly one part of
        ``cat`` offers; None otherwise (several parts offer it: not guessed)."""
        heads = [t for t in content if t not in lx.MODIFIERS]
        if len(heads) < 2 or heads[0] not in lx.PART_PLACEHOLDERS:
            return None
        info = CATEGORIES[cat]
        for word in heads[1:]:
            for affordance in lx.USE_VERBS.get(word, ()):
                parts = info.parts_with(affordance)
                if parts:
                    return parts[0] if len(parts) == 1 else None
        return None

    # ----------------------------------------------------------------- embedding fallback

    def _nearest(self, query: str, options: Mapping[str, Sequence[str]]) -> tuple[str | None, str]:
        """Best option for an unknown phrase by embedding similarity, or (None, why not)."""
        if not query:
            return None, "nothing to match"
        if not self.cfg.use_embeddings:
            return None, "not in the lexicon and the embedding fallback is disabled"
        if len(query.split()) > self.cfg.max_unknown_words:
            return None, f"more than {self.cfg.max_unknown_words} unknown words"
        keys = [k for k, phrases in options.items() for _ in phrases]
        phrases = [p for ps in options.values() for p in ps]
        if not phrases:
            return None, "nothing in scope to match against"
        try:
            vectors = text_embedding.embed([query, *phrases])
        except text_embedding.EmbeddingUnavailable as exc:
            return None, f"not in the lexicon and {exc}"
        sims = vectors[1:] @ vectors[0]
        best: dict[str, float] = {}
        for key, sim in zip(keys, sims.tolist(), strict=True):
            best[key] = max(best.get(key, -1.0), sim)
        ranked = sorted(best.items(), key=lambda kv: -kv[1])
        (top, score), runner = ranked[0], (ranked[1] if len(ranked) > 1 else ("", -np.inf))
        if score < self.cfg.similarity_threshold:
            return None, (f"closest is {_human(top)} at similarity {score:.3f} "
                          f"< {self.cfg.similarity_threshold}")
        if score - runner[1] < self.cfg.min_margin:
            return None, (f"{_human(top)} ({score:.2f}) and {_human(runner[0])} ({runner[1]:.2f}) are too "
                          "close to tell apart")
        return top, f"{_human(top)} at similarity {score:.2f}"

    # ----------------------------------------------------------------- assembling the intent

    def _intent(self, actions: list[_ActionClause], keep: list[list[str]]) -> Intent:
        if not actions:
            raise self.fail(ParseErrorKind.UNKNOWN_VERB,
                            f"no action verb in '{self.text}'; known actions: {self._actions_note()}")
        if len(actions) > 2:
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"'{self.text}' chains {len(actions)} actions: give one grasp and at most one "
                            "next action per sentence")
        main = actions[-1]
        grasp_slots = [g for a in actions for g in a.grasp]
        sources = [s for a in actions for s in a.source]
        first_obj = self._noun_phrase(actions[0].obj)
        if len(actions) == 2:
            first = actions[0]
            if first.sense.action is not NextAction.PICK or first.dest:
                raise self.fail(ParseErrorKind.UNSUPPORTED,
                                f"'{first.words}' and '{main.words}' are two tasks: give one per sentence, "
                                "or one after the other (', then ...')")
        sense = main.sense
        action = sense.action
        if sense.unless_it_pours is not None and first_obj.kind == "object" and first_obj.part is None \
                and not CATEGORIES[first_obj.category or ""].parts_with("pour_out"):
            action = sense.unless_it_pours  # "dump the cube into the box": nothing to pour out of it
        # After a pick verb, "on the plate" says where the object is, "onto the plate" where it goes.
        dests = list(main.dest)
        if action is NextAction.PICK:
            sources += [d.tokens for d in dests if not d.directional]
            dests = [d for d in dests if d.directional]
        elif action is NextAction.POUR and any(d.directional for d in dests):
            # "pour the water in the kettle into the bowl": "in" before "into" says where the
            # water is, so it names the source.
            first_motion = next(k for k, d in enumerate(dests) if d.directional)
            sources += [d.tokens for d in dests[:first_motion] if d.relation == "in"]
            dests = [d for k, d in enumerate(dests) if k >= first_motion or d.relation != "in"]
        dest, dest_np = self._one_destination(dests)
        # "pull out the drawer on the cabinet": a part, and where on its object it is; not where
        # it goes ("stack the red cube on the blue cube" names two objects of one category).
        if dest is not None and dest_np is not None and not dest.directional and dest_np.kind == "object" \
                and dest_np.part is None:
            objs = [first_obj, *([self._noun_phrase(actions[1].obj)] if len(actions) == 2 else [])]
            if any(o.category == dest_np.category and o.part is not None for o in objs):
                dest, dest_np = None, None
        if dest_np is not None and dest_np.kind in ("pronoun", "empty", "substance"):
            raise self.fail(ParseErrorKind.INCOMPLETE,
                            f"the destination '{dest_np.words}' in '{self.text}' names no object")

        if dest_np is not None and dest_np.kind == "person":
            if action not in (NextAction.PICK, NextAction.PLACE, NextAction.HAND_OVER):
                raise self.fail(ParseErrorKind.UNSUPPORTED,
                                f"cannot {_human(action.value)} to a person ('{self.text}'); to give an "
                                "object say 'hand me the ...'")
            action = NextAction.HAND_OVER
        elif dest_np is not None and sense.with_destination is not None:
            action = sense.with_destination
        elif dest_np is not None and action is NextAction.HAND_OVER:
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"'{main.verb}' goes to a person, not to '{dest_np.words}' ('{self.text}'); "
                            f"say 'put ... on the {dest_np.words}' to place it")
        if main.resultative is not None:
            action = main.resultative

        target = self._target(action, actions, first_obj, sources)
        cat = CATEGORIES[target.category or ""]
        if action is NextAction.PLACE and self._hangs_on(cat, dest_np):
            action = NextAction.HANG  # "put the mug on one of the rack's hooks"
        if main.verbless and action is NextAction.PLACE and dest is not None and dest.relation == "in" \
                and cat.parts_with("pour_out") and dest_np is not None and dest_np.kind == "object" \
                and any(CATEGORIES[dest_np.category or ""].parts_with(a) for a in ("pour_in", "contain")):
            raise self.fail(ParseErrorKind.AMBIGUOUS,
                            f"'{self.text}' has no verb, and the {_human(cat.name)} could be put or poured "
                            f"into the {dest_np.words}: say 'put' or 'pour'")
        rule = _RULES[action]
        # "hang the mug by its handle", "hook the mug's handle on the rack": the part that hangs,
        # not where to hold it. Only in the hang's own clause: "pick up the mug by its handle
        # and hang it" does grasp the handle (and is refused).
        hang_part: str | None = None
        if action is NextAction.HANG:
            for slot in main.by:
                part = self._part_phrase(slot, cat.name, target.part, "grasp")
                if "hang" in cat.affordances.get(part, ()):
                    hang_part = part
                    grasp_slots = [g for g in grasp_slots if g is not slot]
            if target.part is not None and "hang" in cat.affordances.get(target.part, ()):
                hang_part = target.part
        explicit = self._explicit_grasp(grasp_slots, cat.name, target)
        keep_clear = {self._part_phrase(k, cat.name, target.part, "part to keep clear") for k in keep}

        if cat.fixed and action in _MOVES_TARGET:
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"the {_human(cat.name)} is fixed in the scene and cannot be moved "
                            f"('{self.text}'); movable objects: "
                            f"{_join(sorted(c for c in self.scope if not CATEGORIES[c].fixed))}")
        if rule.articulated and (action is not NextAction.PULL or cat.parts_with("pull")):
            grasp, use = self._articulated_grasp(action, cat, explicit, target.part)
            if grasp in keep_clear:
                raise self.fail(ParseErrorKind.CONTRADICTION,
                                f"contradictory task '{self.text}': to {action.value} the {_human(cat.name)} "
                                f"the gripper must hold its {_human(grasp)}, which the sentence keeps clear")
        else:
            # "pick up the kettle handle": a part named with the object is where to hold it. A
            # part only implied by the object's name is not, unless it can be grasped: "pick up
            # the board" names the cutting board, whose board is no place to hold it.
            named = target.part
            if target.implied and not any(p == named for a in _GRASPABLE for p in cat.parts_with(a)):
                named = None
            if named == hang_part:
                named = None
            if named is not None and explicit not in (None, named):
                raise self.fail(ParseErrorKind.CONTRADICTION,
                                f"contradictory task '{self.text}': names both the {_human(named)} and "
                                f"the {_human(explicit or '')} of the {_human(cat.name)} as the grasp")
            explicit = explicit or named
            use = self._use_part(action, rule, cat, explicit, hang_part)
            if use is not None and rule.use_purpose:
                keep_clear.add(use)
            grasp = self._grasp(rule, cat, explicit, keep_clear)
        destination, region = self._destination(action, rule, dest, dest_np, main, covers=cat.covers)
        return Intent(
            target=cat.name,
            grasp_region=grasp,
            next_action=action,
            keep_clear=tuple(p for p in cat.parts if p in keep_clear),
            destination=destination,
            destination_region=region,
            use_region=use,
            text=self.original,
        )

    def _one_destination(self, dests: list[_Destination]) -> tuple[_Destination | None, _NounPhrase | None]:
        """The destination, with phrases that locate it merged in: "a hook on the rack" (the
        rack's hook), "another spot on the table" (the table), "the bowl on the table" (the bowl)."""
        merged: list[tuple[_Destination, _NounPhrase]] = []
        for d in dests:
            here = (d, self._noun_phrase(d.tokens))
            if merged:
                joined = self._locate(merged[-1], here)
                if joined is not None:
                    merged[-1] = joined
                    continue
            merged.append(here)
        if len(merged) > 1:
            raise self.fail(ParseErrorKind.AMBIGUOUS,
                            f"'{self.text}' names {len(merged)} destinations; name one")
        return merged[0] if merged else (None, None)

    @staticmethod
    def _locate(a: tuple[_Destination, _NounPhrase],
                b: tuple[_Destination, _NounPhrase]) -> tuple[_Destination, _NounPhrase] | None:
        """``a`` followed by ``b`` as one destination, or None when they name two."""
        (da, na), (db, nb) = a, b
        if na.kind == "spot":  # "to another spot on the plate": the plate
            return _Destination(db.relation, da.directional or db.directional, db.tokens), nb
        if db.directional:  # "onto the plate onto the tray" names two
            return None
        if nb.kind in ("surface", "spot") and na.kind in ("object", "surface"):
            return a  # "the bowl on the table": the bowl
        same = na.kind == nb.kind == "object" and na.category == nb.category
        if same and (na.part is None) != (nb.part is None):
            # "a hook on the rack", "the rack, on its hook": one object, one part.
            return (da, na) if na.part is not None else (da, _NounPhrase(na.words, "object", nb.category,
                                                                         nb.part, nb.implied))
        if same and na.part == nb.part:
            return a
        return None

    @staticmethod
    def _hangs_on(cat: Category, dest_np: _NounPhrase | None) -> bool:
        """Whether a place of ``cat`` on ``dest_np`` is a hang: the object has a part that hangs
        and the receiver is a part that affords hang ("one of the hooks") or an object whose
        parts offer hang ("the mug rack"). A part that does not ("the rack's base") is a place."""
        if dest_np is None or dest_np.kind != "object" or not cat.parts_with("hang"):
            return False
        dcat = CATEGORIES[dest_np.category or ""]
        if dest_np.part is None or (dest_np.implied and dest_np.part == dcat.name.rsplit("_", 1)[-1]):
            return bool(dcat.parts_with("hang"))
        return "hang" in dcat.affordances.get(dest_np.part, ())

    def _target(self, action: NextAction, actions: list[_ActionClause], first_obj: _NounPhrase,
                sources: list[list[str]]) -> _NounPhrase:
        source_nps = [self._noun_phrase(s) for s in sources]
        for s in source_nps:
            if s.kind not in ("object", "surface"):
                raise self.fail(ParseErrorKind.INCOMPLETE,
                                f"'from {s.words}' in '{self.text}' names no object")
        target = first_obj
        if len(actions) == 2:
            second = self._noun_phrase(actions[1].obj)
            if first_obj.kind == "empty":  # "pick up and hang the mug"
                target = first_obj = second
            elif second.kind == "object" and second.category != first_obj.category:
                raise self.fail(ParseErrorKind.UNSUPPORTED,
                                f"'{actions[0].words}' and '{actions[1].words}' act on different objects: "
                                "give one task per sentence")
        if action is NextAction.POUR:
            containers = [s for s in source_nps if s.kind == "object"]
            if target.kind == "object":
                if containers and containers[0].category != target.category:
                    raise self.fail(ParseErrorKind.AMBIGUOUS,
                                    f"'{self.text}' pours from both the {target.words} and the "
                                    f"{containers[0].words}; name one source")
            elif target.kind in ("substance", "empty", "pronoun") and containers:
                target = containers[0]
            elif target.kind in ("substance", "empty"):
                raise self.fail(ParseErrorKind.INCOMPLETE,
                                f"'{self.text}' does not say what to pour from: e.g. 'pour water from the "
                                "kettle into the bowl'")
        if target.kind == "pronoun":
            raise self.fail(ParseErrorKind.INCOMPLETE,
                            f"'{target.words}' in '{self.text}' refers to nothing named before it")
        if target.kind == "empty":
            raise self.fail(ParseErrorKind.INCOMPLETE,
                            f"no object to {_human(action.value)} in '{self.text}'; "
                            f"{self._known_objects_note()}")
        if target.kind != "object":
            raise self.fail(ParseErrorKind.UNKNOWN_OBJECT,
                            f"'{target.words}' in '{self.text}' is not an object the robot can grasp; "
                            f"{self._known_objects_note()}")
        return target

    def _explicit_grasp(self, slots: list[list[str]], cat: str, target: _NounPhrase) -> str | None:
        named = {self._part_phrase(s, cat, target.part, "grasp") for s in slots}
        if len(named) > 1:
            raise self.fail(ParseErrorKind.CONTRADICTION,
                            f"contradictory task '{self.text}': grasp regions {_join(sorted(named))} "
                            "both named")
        return named.pop() if named else None

    def _use_part(self, action: NextAction, rule: _Rule, cat: Category, explicit: str | None,
                  prefer: str | None = None) -> str | None:
        # Affordances are a fallback chain: a pan has no pour_out part, so it pours over the
        # part that contains; a kettle pours through its spout only, never its body.
        candidates = next((list(cat.parts_with(a)) for a in rule.use if cat.parts_with(a)), [])
        if prefer in candidates:  # the sentence named which one ("hang it by its handle")
            candidates = [prefer, *(p for p in candidates if p != prefer)]
        if not candidates:
            if rule.use_required:
                raise self.fail(ParseErrorKind.UNSUPPORTED,
                                f"the {_human(cat.name)} cannot {_human(action.value)} ('{self.text}'): "
                                f"none of its parts ({_join(cat.parts)}) affords {' or '.join(rule.use)}")
            return None
        free = [p for p in candidates if p != explicit]
        if not free:
            raise self.fail(ParseErrorKind.CONTRADICTION,
                            f"contradictory task '{self.text}': {_human(action.value)} needs the "
                            f"{_human(cat.name)}'s {_human(candidates[0])} free {rule.use_purpose}, but the "
                            "sentence grasps it there")
        return free[0]

    def _grasp(self, rule: _Rule, cat: Category, explicit: str | None, keep_clear: set[str]) -> str:
        """The named grasp if consistent; else the default grasp, then the other graspable
        parts in label order, skipping every part that must stay clear."""
        if explicit is not None:
            if explicit in keep_clear:
                raise self.fail(ParseErrorKind.CONTRADICTION,
                                f"contradictory task '{self.text}': grasps the {_human(cat.name)} by its "
                                f"{_human(explicit)} and keeps that part clear")
            return explicit
        graspable = [p for aff in _GRASPABLE for p in cat.parts_with(aff)]
        order = [cat.default_grasp, *sorted(graspable, key=cat.parts.index)]
        if rule.grasp_any_part:
            order += list(cat.parts)
        for part in dict.fromkeys(order):
            if part not in keep_clear:
                return part
        raise self.fail(ParseErrorKind.CONTRADICTION,
                        f"contradictory task '{self.text}': every graspable part of the {_human(cat.name)} "
                        f"({_join(list(dict.fromkeys(order)))}) must stay clear")

    def _articulated_grasp(self, action: NextAction, cat: Category, explicit: str | None,
                           named: str | None) -> tuple[str, str | None]:
        pulls = cat.parts_with("pull")
        if not pulls:
            openable = sorted(c.name for c in CATEGORIES.values() if c.parts_with("pull"))
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"the {_human(cat.name)} has nothing to {action.value} ('{self.text}'): none of "
                            f"its parts affords pull; objects that do: {_join(openable)}")
        if explicit is not None and explicit not in pulls:
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"to {action.value} the {_human(cat.name)} hold a part that pulls "
                            f"({_join(pulls)}), not its {_human(explicit)} ('{self.text}')")
        if explicit is not None:
            grasp = explicit
        elif named is not None and named in pulls:
            grasp = named
        elif named is not None:
            own = [p for p in pulls if p.startswith(f"{named}_")]
            if len(own) != 1:
                raise self.fail(ParseErrorKind.UNSUPPORTED,
                                f"the {_human(cat.name)}'s {_human(named)} has no handle to {action.value} "
                                f"by ('{self.text}'); parts that pull: {_join(pulls)}")
            grasp = own[0]
        elif cat.default_grasp in pulls:
            grasp = cat.default_grasp
        elif len(pulls) == 1:
            grasp = pulls[0]
        else:
            raise self.fail(ParseErrorKind.AMBIGUOUS,
                            f"which part of the {_human(cat.name)} to {action.value} in '{self.text}': "
                            f"{_join(pulls)}?")
        # The part that moves: the one whose name prefixes the handle ("drawer" of "drawer_handle").
        movers = [p for p in cat.parts if grasp.startswith(f"{p}_")]
        use = named if named is not None and named not in pulls else max(movers, key=len, default=None)
        return grasp, use

    def _destination(self, action: NextAction, rule: _Rule, dest: _Destination | None,
                     dest_np: _NounPhrase | None, main: _ActionClause,
                     covers: bool = False) -> tuple[str | None, str | None]:
        if dest_np is None or dest_np.kind == "person":
            if rule.destination == "required" and not (rule.surface_ok and (main.down or main.elsewhere)):
                example = "into the bowl" if action is NextAction.POUR else "on the rack" \
                    if action is NextAction.HANG else "on the plate"
                raise self.fail(ParseErrorKind.INCOMPLETE,
                                f"'{self.text}' does not say where to {_human(action.value)} it: "
                                f"name the receiving object, e.g. '{example}'")
            return None, None
        if dest_np.kind in ("surface", "spot"):
            if rule.surface_ok:
                return None, None
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"cannot {_human(action.value)} onto the {dest_np.words} ('{self.text}'): "
                            "name the receiving object")
        if rule.destination == "none":
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"'{main.verb}' takes no destination, but '{self.text}' names the "
                            f"{dest_np.words}")
        assert dest is not None and dest_np.category is not None
        dcat = CATEGORIES[dest_np.category]
        wanted = rule.receiving(dest.relation)
        if covers and action is NextAction.PLACE:
            # A lid put on a pot closes its opening: it rests on the rim of the part that
            # contains, whatever on the pot would support a thing set on it.
            wanted = ("contain", *wanted)
        part = dest_np.part
        # The head noun of the object's own name names the whole object, not its part of that
        # name: "on the base" is on the kettle base, which receives on its plate.
        if dest_np.implied and part == dcat.name.rsplit("_", 1)[-1]:
            part = None
        if part is not None:
            affs = dcat.affordances.get(part, ())
            if any(a in affs for a in wanted) or (rule.body_fallback and part == "body"):
                return dcat.name, part
            raise self.fail(ParseErrorKind.UNSUPPORTED,
                            f"the {_human(dcat.name)}'s {_human(part)} cannot receive a "
                            f"{_human(action.value)} ('{self.text}'): it affords {_join(affs)}, "
                            f"not {' or '.join(wanted)}")
        for aff in wanted:
            parts = dcat.parts_with(aff)
            if parts:
                return dcat.name, parts[0]
        if rule.body_fallback and "body" in dcat.parts:
            return dcat.name, "body"
        raise self.fail(ParseErrorKind.UNSUPPORTED,
                        f"the {_human(dcat.name)} cannot receive a {_human(action.value)} ('{self.text}'): "
                        f"none of its parts ({_join(dcat.parts)}) affords {' or '.join(wanted)}")


def _scope(known_objects: Sequence[str] | None) -> tuple[str, ...] | None:
    if known_objects is None:
        return None
    if isinstance(known_objects, str):
        raise TypeError("known_objects must be a sequence of category names, not a single string")
    unknown = sorted({o for o in known_objects if o not in CATEGORIES})
    if unknown:
        raise ValueError(
            f"known_objects lists unknown categories {unknown}; known: {_join(sorted(CATEGORIES))}"
        )
    return tuple(dict.fromkeys(known_objects))


def parse(
    text: str, known_objects: Sequence[str] | None = None, config: ParserConfig | None = None
) -> Intent:
    """Parse a task sentence into an :class:`Intent`.

    Args:
        text: The instruction, e.g. "hang the mug on the rack".
        known_objects: Categories present in the scene (ontology names, duplicates allowed);
            targets and destinations must be among them. None: any ontology category.
        config: Parser tuning; defaults to :class:`ParserConfig()`.

    Raises:
        TaskParseError: The sentence is empty or longer than ``MAX_TEXT_CHARS``, names no
            known object, verb or part, names an object not in the scene, or contradicts
            itself; ``error.kind`` says which.
        ValueError: ``known_objects`` lists a name that is not an ontology category.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise TaskParseError(
            f"a task sentence is at most {MAX_TEXT_CHARS} characters, this one has {len(text)}: "
            "say one task in one sentence", ParseErrorKind.TOO_LONG, text[:80])
    intent = _Parser(_reworded(text), _scope(known_objects), config or ParserConfig(), original=text).run()
    if intent.next_action is NextAction.POUR and intent.destination == intent.target:
        # "pour the mug into the mug": one vessel, or two of a kind the sentence does not tell apart.
        raise TaskParseError(f"'{text}' pours the {_human(intent.target)} into itself; name another receiver",
                             ParseErrorKind.UNSUPPORTED, text)
    return intent


#: Where a sentence that asks for several tasks in turn is cut: ", then", "and then", "; ",
#: "after that", ", next", "and finally" (a composite task: "put the banana on the plate, then
#: put the cube in the mug"); not "next to", which says where.
_STEP_BREAK = re.compile(r"\s*(?:[,;.]\s*|\s)(?:and\s+)?(?:then|after\s+that|afterwards"
                         r"|(?:once|when)\s+(?:that|this)(?:'s|\s+is)\s+done)\b[,\s]*"
                         # "next" and "finally" only after a comma or "and": "the next plate" is one.
                         r"|\s*(?:[,;.]\s*(?:and\s+)?|\s+and\s+)(?:next(?!\s+to\b)|finally|lastly)\b[,\s]*"
                         r"|\s*;\s*", re.IGNORECASE)
#: The verb a step without one takes from the step before ("put the banana on the plate, then
#: the cube in the mug"): the action's everyday verb.
_ELIDED_VERB = {NextAction.PLACE: "put", NextAction.STACK: "stack", NextAction.HANG: "hang",
                NextAction.POUR: "pour", NextAction.PICK: "pick up", NextAction.PUSH: "push",
                NextAction.INSERT: "insert", NextAction.OPEN: "open", NextAction.CLOSE: "close",
                NextAction.PULL: "pull", NextAction.HAND_OVER: "hand over"}
#: A step that ends on its preposition ("put the soup can in", "... in too", "on there as well").
_DANGLING = re.compile(r"\s+(in|into|inside|on|onto)(?:\s+(?:there|too|also|as\s+well))*\s*[.!?]?\s*$",
                       re.IGNORECASE)
_GOES = re.compile(r"^(.+?)\s+(?:goes|go|should\s+go)\s+((?:in|on|into|onto)\b.*)$", re.IGNORECASE)
_FIRST = re.compile(r"^\s*(?:first(?:ly)?|to\s+start)\b[,\s]*", re.IGNORECASE)


#: A verb's past participle as a wish says it ("I'd like the cups put on the tray", "I need the
#: box pushed onto the mat"): the irregular ones; a regular one is its verb with -ed.
_IRREGULAR_PARTICIPLES = {"put": "put", "set": "set", "hung": "hang", "slid": "slide", "stuck": "stick",
                          "laid": "lay", "thrown": "throw", "brought": "bring"}
_WISH = re.compile(r"^\s*(?:(?:i|we)(?:['’]?d|\s+would)?\s+(?:like|want|need)|please\s+(?:have|get))\s+"
                   r"(?P<what>.+?)$", re.IGNORECASE)
_DONE = re.compile(r"^(?P<obj>.+?)\s+(?P<pp>[a-z]+)\s+(?P<rest>(?:on|onto|in|into|to|over|inside)\b.*)$",
                   re.IGNORECASE)


def _verb_of(participle: str) -> str | None:
    """The everyday verb a past participle is of, when the lexicon knows it ("pushed": push)."""
    word = participle.lower()
    if word in _IRREGULAR_PARTICIPLES:
        return _IRREGULAR_PARTICIPLES[word]
    if word.endswith("ed"):
        for stem in (word[:-1], word[:-2], word[:-3]):  # placed, pushed, dropped
            if stem in lx.VERBS:
                return stem
    return None


def _done_as_asked(clause: str) -> str | None:
    """"the box pushed onto the mat" spelt as the request it is: "push the box onto the mat";
    None when the clause is no thing with a known verb's participle and where it goes."""
    m = _DONE.match(clause)
    if m is None:
        return None
    verb = _verb_of(m.group("pp"))
    if verb is None or not re.match(r"^(?:the|a|an|all|each|every|both|my|this|that|these|those|\d|"
                                    + _COUNT + r")\b", m.group("obj"), re.IGNORECASE):
        return None
    return f"{verb} {m.group('obj')} {m.group('rest')}"


#: A receiver said first, before the request: "Onto the tray, please put the three cups".
_FRONTED = re.compile(r"^\s*(?P<prep>onto|into|on|in|inside)\s+(?P<dest>(?:the|a|an)\s+[^,;.!?]+?)\s*,\s*"
                      r"(?P<rest>[^;]+?)(?P<end>[.!?]*)\s*$", re.IGNORECASE)
#: A relative clause that says the things stand on the work surface, where everything stands:
#: "the three cups that are standing on the table".
_ON_THE_SURFACE = re.compile(
    r"\s+(?:that|which)\s+(?:is|are|['’]s|['’]re)\s+(?:(?:standing|sitting|lying|resting|placed)\s+)?"
    r"(?:on|upon)\s+the\s+(?:table|counter|desk|worktop|work\s+surface)\b", re.IGNORECASE)


def _fronted(text: str) -> str:
    """A receiver said before the request, "Onto the tray, please put the cups", put after it
    ("please put the cups onto the tray"): a place preposition and a thing we know fronted so;
    any other sentence as it is."""
    m = _FRONTED.match(text)
    if m is None:
        return text
    dest = lx.tokenize(m.group("dest"))
    if not any(lx.NOUN_INDEX.match(dest, i) is not None for i in range(len(dest))):
        return text  # "In the meantime, put ...": no thing named, no receiver
    return f"{m.group('rest')} {m.group('prep')} {m.group('dest')}{m.group('end')}"


def _reworded(text: str) -> str:
    """``text`` as the parser reads it: a relative clause that only places things on the table
    dropped, a receiver said first put after the request, a fill said as the pour it is, asides
    dropped."""
    text = _reason_first(_please_to(_where_they_stand(text)))
    return _purpose_dropped(_filled(_fronted(_topic_first(text))))


#: A reason said before the request and joined to it by "so": "I need to heat something up, so
#: please open the microwave door", "I'm about to cook, so could you ...".
_REASON_FIRST = re.compile(
    r"^\s*(?:i|we|i['’]m|im|we['’]re|i['’]ve|we['’]ve|i\s+am|we\s+are)\b[^;.!?]*?,?\s+so\s+"
    r"(?P<rest>(?:please|could|can|would|will|kindly)\b.*)$", re.IGNORECASE)


#: Words by which a reason said first asks or forbids something itself.
_ASKS_OR_FORBIDS = frozenset({"you", "not", "no", "never", "dont", "nothing", "without"})


def _please_to(text: str) -> str:
    """A non-native "Please to put the bowl on the plate" as "Please put ..."; only at the start
    ("push the box, please to the mat" keeps its "to")."""
    return re.sub(r"^(\s*please)\s+to\b", r"\1", text, count=1, flags=re.IGNORECASE)


def _reason_first(text: str) -> str:
    """``text`` without a reason said before its request ("I need something from the cabinet,
    so please slide its drawer open"): the request after "so" stands alone. A reason with a verb
    of ours, a "you" or a "not" in it asks or forbids something itself, and is kept (the sentence
    is then refused as two tasks). A request that points back into the reason ("..., so please put it
    there") is refused, its "it" naming nothing."""
    m = _REASON_FIRST.match(text)
    if m is None:
        return text
    reason = lx.tokenize(text[:m.start("rest")])
    if (_ASKS_OR_FORBIDS & set(reason)
            or any(lx.VERB_INDEX.match(reason, i) is not None for i in range(len(reason)))):
        # "I need you to put the cube in the box, so ...", "I don't want the mug moved, so ...":
        # the reason asks or forbids something itself; dropping it would drop that.
        return text
    return m.group("rest")


#: A thing named first and then what to do with it: "kettle, pour into bowl", "mug: pour into
#: bowl, then hang on rack", "top drawer, open".
_TOPIC_FIRST = re.compile(r"^\s*(?P<topic>[\w\s'-]{2,40}?)\s*[,:]\s*(?P<rest>\w.*)$", re.IGNORECASE)
#: What may follow the verb of a request whose thing was named first: nothing, or where.
_PREPOSITIONS = frozenset({"in", "into", "on", "onto", "inside", "over", "to", "by", "from", "up", "out"})
_NO_OBJECT = _PREPOSITIONS | {"it", "them", "please", "now"}


def _topic_first(text: str) -> str:
    """A request whose thing is named first ("kettle, pour into bowl", "top drawer, open it") as
    the request with the thing after its verb ("pour the kettle into bowl", "open the top drawer");
    only when the whole topic names a thing or a part we know and the verb after it takes no
    object of its own (in "plate, put the banana on it" the plate is no topic)."""
    m = _TOPIC_FIRST.match(text)
    if m is None:
        return text
    topic = lx.tokenize(m.group("topic"))
    if topic and topic[0] in ("the", "a", "an", "this", "that"):
        topic = topic[1:]
    hit = lx.NOUN_INDEX.match(topic, 0) if topic else None
    if hit is None or hit[0] != len(topic):
        return text
    rest = m.group("rest")
    words = lx.tokenize(rest)
    verb = lx.VERB_INDEX.match(words, 0)
    if verb is None:
        return text
    after = words[verb[0]] if len(words) > verb[0] else None
    if after is not None and after not in _NO_OBJECT:
        return text
    if (after in _PREPOSITIONS and len(words) > verb[0] + 1
            and not any(v.action in (NextAction.POUR, NextAction.HANG) for v in verb[1])):
        # "pot, put on the lid", "bowl, put in the banana": "put on" / "put in" take the lid and
        # the banana as their object; the topic is the receiver, not the thing moved.
        return text
    verb_words = rest.split()[:verb[0]]
    tail = " ".join(rest.split()[verb[0]:])
    tail = re.sub(r"^(?:it|them)\b\s*", "", tail, flags=re.IGNORECASE)
    return f"{' '.join(verb_words)} the {' '.join(topic)} {tail}".strip()


_DETERMINERS = ("the", "a", "an", "this", "that", "your", "my")
_NP = (rf"(?:{'|'.join(_DETERMINERS)})\s+[\w-]+"
       r"(?:\s+(?!(?:on|in|into|onto|and|then|from|with|using|to|at|by|of|for|please|first|up)\b)[\w-]+)?")
#: A pour said by the vessel it fills: "use the kettle to fill the bowl", "fill the bowl with the
#: kettle" (or "from" / "using" it).
_FILL = (
    re.compile(rf"\buse\s+(?P<src>{_NP})\s+to\s+fill(?:\s+up)?\s+(?P<dest>{_NP})", re.IGNORECASE),
    re.compile(rf"\bfill(?:\s+up)?\s+(?P<dest>{_NP})(?:\s+up)?\s+(?:with|from|using)\s+(?P<src>{_NP})",
               re.IGNORECASE),
)


def _one_thing(phrase: str) -> str | None:
    """The category a noun phrase names as one whole thing ("the kettle", "the paper cup"), or
    None: a plural ("the mugs": things put in), a thing and a part ("the mug handle"), or no
    known thing ("water")."""
    tokens = lx.tokenize(phrase)
    if tokens and tokens[0] in _DETERMINERS:
        tokens = tokens[1:]
    hit = lx.NOUN_INDEX.match(tokens, 0) if tokens else None
    if hit is None or hit[0] != len(tokens) or " ".join(tokens) in lx.singulars():
        return None
    return next((str(sense.value) for sense in hit[1] if sense.kind == "object"), None)


def _receives_pour(name: str) -> bool:
    """Whether a category has a part that takes a pour in (a bowl's rim, a mug's)."""
    cat = CATEGORIES.get(name)
    return cat is not None and any("pour_in" in cat.affordances.get(p, ()) for p in cat.parts)


def _pour_pair(src: str, dest: str) -> bool:
    """Whether "fill ``dest`` from ``src``" is a pour: one thing that pours out into another
    thing, of another kind, that takes a pour in."""
    poured, filled = _one_thing(src), _one_thing(dest)
    return (poured is not None and filled is not None and poured != filled
            and _can(NextAction.POUR, poured) and _receives_pour(filled))


def _filled(text: str) -> str:
    """A fill said with the vessel it is poured from ("use the kettle to fill the bowl", "fill
    the bowl from the kettle") as that pour ("pour the kettle into the bowl"); a fill with what
    is put in ("fill the box with the cubes", "fill the bowl with the mugs"), into what takes no
    pour ("fill the drawer with the mug"), into its own kind, or with no source stays as it is."""
    for pattern in _FILL:
        m = pattern.search(text)
        if m is not None and _pour_pair(m.group("src"), m.group("dest")):
            return f"{text[:m.start()]}pour {m.group('src')} into {m.group('dest')}{text[m.end():]}"
    return text


def _where_they_stand(text: str) -> str:
    """``text`` without a relative clause that places its things on the work surface ("the cups
    that are standing on the table"): it names nothing to do."""
    return _ON_THE_SURFACE.sub("", text)


def _wished(text: str) -> str:
    """A wish for a thing done ("I'd like all of the paper cups put on the tray", "I need the box
    pushed onto the mat first, and then ...") as the request it is ("put all of the paper cups on
    the tray"); any other sentence as it is."""
    m = _WISH.match(text)
    return (_done_as_asked(m.group("what")) or text) if m else text


#: A purpose or an aside after a task, saying why it is asked or how things stand, not what to do:
#: "put the cup on the shelf so the table is clear", "hang the mug on the rack so it can dry",
#: "push the microwave door closed, it's been left open". It runs to the next comma or stop.
_PURPOSE = re.compile(
    r"(?:\s*,\s*|\s+)so(?:\s+that)?\s+(?=(?:i|we|you|it|they|everything|nothing|something|there|the|my|your|our)\b)"
    r"(?P<clause>[^,;.!?]+)"
    r"|\s*,\s*(?P<aside>(?:it|this|that)(?:['’]s|\s+is|\s+was|\s+has)\b[^,;.!?]*)(?=\s*[.!?]*\s*$)",
    re.IGNORECASE)
#: A purpose that says how the thing must end up is a constraint, never dropped: "so the handle
#: faces left" (no skill takes an orientation, so the parser refuses it as before); "so they
#: form a tower" is read by the tower's own rule.
_ORIENTING = frozenset({"face", "faces", "facing", "upright", "upside", "sideways", "left", "right", "front",
                        "back", "toward", "towards", "point", "points", "pointing", "turned", "rotated",
                        "tilted", "angled", "straight", "level", "flat", "vertical", "horizontal"})
_SUBJECTS = frozenset({"i", "we", "you", "it", "they"})
_BE = frozenset({"been", "is", "was", "be", "are", "were", "got", "get", "'s", "’s"})


def _says_nothing_to_do(clause: str) -> bool:
    """Whether a purpose clause names no object, no part and no orientation: nothing the task
    would have to honour. ("I can": a modal, not the soup can.)"""
    tokens = [t for t in lx.tokenize(clause) if t != ","]
    tokens = [t for k, t in enumerate(tokens) if not (t == "can" and k and tokens[k - 1] in _SUBJECTS)]
    # "it's been left open": the verb "leave", not a side.
    tokens = [t for k, t in enumerate(tokens) if not (t == "left" and k and tokens[k - 1] in _BE)]
    if any(t in _ORIENTING for t in tokens) or _TOWER_CUE.search(" ".join(tokens)):
        return False  # "so they form a tower": how many go where, read by _tower
    return not any(lx.NOUN_INDEX.match(tokens, k) is not None for k in range(len(tokens)))


def _purpose_dropped(text: str) -> str:
    """``text`` without its purpose clauses and asides (:data:`_PURPOSE`) that ask nothing of the
    task (:func:`_says_nothing_to_do`); a clause that does is kept, for the parser to read or
    refuse ("move the bowl so that it sits on the plate" is a destination)."""

    def drop(m: re.Match[str]) -> str:
        clause = m.group("clause") or m.group("aside") or ""
        return "" if _says_nothing_to_do(clause) else m.group(0)

    return _PURPOSE.sub(drop, text)


#: "cover the pot with the lid", "... and close the pot with it": a place of the thing named after
#: "with" on the thing covered ("close" only with a "with" and a lid or "it" after it).
_COVER = re.compile(r"\b(?P<verb>cover|close)\s+(?P<dest>[^,.;!]+?)\s+(?:up\s+)?with\s+"
                    r"(?P<what>it|(?:the|its|a|an|that|this)\s+[^,.;!]+?)(?=\s*(?:[,.;!]|$|\bplease\b))",
                    re.IGNORECASE)
#: "cover the pot", said with nothing after it: with the one thing in the scene that covers.
_COVER_BARE = re.compile(r"^(?P<pre>\s*(?:please\s+)?)cover\s+(?P<dest>(?:the|that|this|my)\s+[^,.;!]+?)"
                         r"(?P<rest>\s*(?:,\s*please)?[.!]?\s*)$", re.IGNORECASE)


def _covered(text: str, known_objects: Sequence[str] | None = None) -> str:
    """"cover the pot with its lid" as the place it asks for, "put the lid on the pot" (the
    thing covered is where the other goes; "close the pot with it" likewise); a bare "cover the
    pot" with the one kind of thing in the scene that covers (a lid); any other sentence as it is."""
    m = _COVER.search(text)
    # "close the microwave with its handle" is a close by the handle: "close ... with" is a lid
    # put on only with the lid or "it" (a thing picked up before) after "with".
    if m is not None and m.group("verb").lower() == "close" \
            and not re.fullmatch(r"it|.*\b(?:lid|cover)", m.group("what"), re.IGNORECASE):
        m = None
    if m is not None:
        what = re.sub(r"^its\b", "the", m.group("what"), flags=re.IGNORECASE)
        return f"{text[:m.start()]}put {what} on {m.group('dest')}{text[m.end():]}"
    m = _COVER_BARE.match(text)
    covers = sorted({c for c in known_objects or () if c in CATEGORIES and CATEGORIES[c].covers})
    if m is None or len(covers) != 1:
        return text
    return f"{m.group('pre')}put the {_human(covers[0])} on {m.group('dest')}{m.group('rest')}"


#: What says the things go into one tower: "a tower", "on top of each other", "one on another",
#: "one stack" / "a single pile" (a bare "stack the cubes" is two cups or blocks, one on the other).
_TOWER_CUE = re.compile(r"\b(?:tower|on\s+top\s+of\s+(?:each\s+other|one\s+another)"
                        r"|one\s+on\s+(?:top\s+of\s+)?(?:another|the\s+other)"
                        r"|(?:one|a\s+single|a)\s+(?:tall\s+|high\s+)?(?:stack|pile)"
                        r"|as\s+the\s+base)\b")
_COUNT_WORDS = {"two": 2, "both": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_COUNT = rf"(?:{'|'.join(_COUNT_WORDS)}|[2-6])"
#: Things of one kind stacked or nested with no receiver named: each goes on (or into) the one
#: before ("stack the two cups together", "nest the paper cups", "put them inside each other").
_TOGETHER_CUE = re.compile(r"\b(?:together|(?:in|into|inside)\s+(?:each\s+other|one\s+another)"
                           r"|one\s+(?:inside|in|into)\s+(?:another|the\s+other))\b"
                           r"|^(?:(?:please|could|can|would|you)\s+)*(?:stack|nest)\b")
#: Words that say where (a receiver, a place, a source): with one of them left once the cues
#: above are read, the sentence is not about the things alone ("put the cubes together in the
#: bowl", "take the banana off one plate and put it on the other").
_WHERE = re.compile(r"\b(?:on|onto|in|into|inside|over|atop|beside|next|near|by|at|under|behind|off|from"
                    r"|to\s+the)\b")
#: One of two things of one kind into (or onto) "the other": "put one paper cup inside the
#: other", "pick up one of the cups and put it into the other one".
_THE_OTHER = re.compile(r"\b(?:in|into|inside|on|onto|on\s+top\s+of)\s+the\s+other(?:\s+one)?\s*,?$")


def _head_kind(head: str, scope: Iterable[str]) -> str | None:
    """The one category in ``scope`` that ``head`` is the head noun of (the last word of one of
    its names: "cup" of a paper cup, "cups" of paper cups), or None when none or several are."""
    phrases = lx.object_phrases()
    kinds = [c for c in dict.fromkeys(scope) if any(p.split()[-1] == head for p in phrases[c])]
    return kinds[0] if len(kinds) == 1 else None


def _outermost(found: Sequence[tuple[int, int, int, str]]) -> list[str]:
    """The kinds of ``found`` (start, end, name length, kind) whose span no longer-named span
    holds: a name within a longer one is not another thing ("cups" in "paper cups")."""
    return [c for a, b, n, c in found if not any(x <= a and b <= y and k > n for x, y, k, _ in found)]


def _kinds_named(low: str) -> set[str]:
    """The object kinds a (lower-case, tokenized) sentence names, a name within a longer one
    left out."""
    return set(_outermost([(m.start(), m.end(), len(phrase), cat)
                           for cat, phrases in lx.object_phrases().items() for phrase in phrases
                           for m in re.finditer(rf"\b{re.escape(phrase)}\b", low)]))


def _step_pieces(text: str) -> list[str]:
    """``text`` cut at its sequence words (a leading "first" dropped), the empty pieces left out."""
    pieces = [p.strip(" ,.;") for p in _STEP_BREAK.split(_FIRST.sub("", text))]
    return [p for p in pieces if p]


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _COUNT_WORDS[word]


def _tower(text: str, known_objects: Sequence[str] | None,
           config: ParserConfig | None) -> list[Intent] | None:
    """A tower of several things of one kind, built one on top of the last, as that many
    stacks: "stack the four cubes into a tower" is three intents, a cube on a cube each (the
    composite that runs them names the blocks; the sentence does not). So are things of one
    kind stacked or nested with no receiver named ("stack the two cups together", "nest the
    paper cups", "put one paper cup inside the other"): two of them are one stack. None when the
    sentence is no tower of one kind (the ordinary readings decide then).

    The count is said ("the four cubes", "all 4 blocks", "the other three" on one, one into
    "the other" for two) or, for "all the cubes" / "every block" / a bare plural, the scene's
    (``known_objects`` lists each object once). A name the scene lacks is the one scene object
    it is the head noun of ("cups" in a scene of paper cups and no mug).

    Raises:
        TaskParseError: a tower of things that cannot be stacked, of one thing, or of things
            neither counted nor in a known scene.
    """
    low = " ".join(lx.tokenize(text)).replace(" ,", ",")
    pair = _THE_OTHER.search(low)
    tower_cue = _TOWER_CUE.search(low)
    if not (tower_cue or _TOGETHER_CUE.search(low) or pair) or len(_step_pieces(text)) > 1:
        return None  # no tower, or several tasks in turn: each piece is read alone
    if not tower_cue and _WHERE.search(_THE_OTHER.sub(" ", _TOGETHER_CUE.sub(" ", low))):
        return None  # "together" or "the other" with a receiver or a place of its own
    # Each kind named, with the length of the name it was found by.
    named: dict[str, tuple[re.Match[str], int]] = {}
    singular = lx.object_phrases()
    for cat, phrases in lx.plural_phrases().items():
        # The plural, counted or not ("the four cubes", "the blocks"), or "every"/"each" block.
        ways = [(rf"\b(?:(?P<n>{_COUNT})\s+(?:\w+\s+)?)?{re.escape(p)}\b", p) for p in phrases]
        ways += [(rf"\b(?:every|each)\s+(?:\w+\s+)?{re.escape(p)}\b", p)
                 for p in singular[cat] if p not in phrases]
        for way, phrase in sorted(ways, key=lambda w: len(w[0]), reverse=True):
            m = re.search(way, low)
            if m:
                named[cat] = (m, len(phrase))
                break
    others = re.search(rf"\bthe\s+other\s+(?P<n>{_COUNT})\b", low)
    if not named and (others or pair):
        # "take one cube as the base and stack the other three on it"; "put one paper cup
        # inside the other" (two in all).
        for cat, phrases in singular.items():
            for phrase in sorted(phrases, key=len, reverse=True):
                if (m := re.search(rf"\bone\s+(?:of\s+the\s+)?(?:\w+\s+)?{re.escape(phrase)}\b", low)):
                    named[cat] = (m, len(phrase))
                    break
    kinds = _outermost([(m.start(), m.end(), n, c) for c, (m, n) in named.items()])
    if len(kinds) != 1:
        return None
    cat, m = kinds[0], named[kinds[0]][0]
    if not tower_cue and _kinds_named(low) != {cat}:
        return None  # "put the cube in one bowl and the banana in the other": not a stack
    if known_objects is not None and cat not in known_objects:
        # "cup" is a mug, but in a scene of paper cups and no mug it can only mean those.
        cat = _head_kind(m.group(0).split()[-1], known_objects) or cat
    say = cat.replace("_", " ")
    if known_objects is not None and cat not in known_objects:
        raise TaskParseError(f"there is no {say} in the scene to stack ('{text}'); objects in the scene: "
                             f"{_join(sorted(set(known_objects)))}", ParseErrorKind.NOT_IN_SCENE, text)
    if CATEGORIES[cat].fixed:
        raise TaskParseError(f"{_human(cat)}s stand where they are: they cannot be stacked into a tower",
                             ParseErrorKind.UNSUPPORTED, text)
    every = re.search(rf"\ball\s+(?P<n>{_COUNT})\b", low)
    said = m.groupdict().get("n") or (every.group("n") if every else None)
    if said:
        n = _count(said)
    elif others:  # one as the base and "the other three" on it
        n = _count(others.group("n")) + 1
    elif pair:  # one into "the other"
        n = 2
    elif known_objects is not None:
        n = list(known_objects).count(cat)
    else:
        raise TaskParseError(f"how many {say}s go into the tower? Say it ('stack the four {say}s into a "
                             "tower'): the scene is not known when the sentence is read",
                             ParseErrorKind.INCOMPLETE, text)
    if n < 2:
        raise TaskParseError(f"a tower needs at least two {say}s, '{text}' has {n}",
                             ParseErrorKind.INCOMPLETE, text)
    step = parse(f"stack the {say} on the other {say}", None if known_objects is None else [cat], config)
    return [dataclasses.replace(step, text=f"{step.text} ({k} of {n - 1}: {text})") for k in range(1, n)]


#: Words that may stand before a plural naming several things to move, as one phrase with it:
#: "all three of the", "each of the", "both", "these".
_QUANTIFIERS = frozenset({"all", "each", "every", "both", "of", "the", "these", "those", "one"})
_EVERY = frozenset({"all", "each", "every", "both"})


#: Things of different kinds listed for one put: "put the bell pepper, the soup can, and the cube
#: into the cardboard box, in that order".
_LISTED = re.compile(
    rf"^(?P<pre>.*?\b)(?P<verb>(?:put|place|move|drop|set|pack|load)(?:\s+down)?)\s+"
    rf"(?P<items>{_NP}(?:\s*,\s*{_NP})*\s*,?\s+and\s+(?:then\s+)?{_NP})"
    rf"\s+(?P<prep>in|into|on|onto|inside)\s+(?P<dest>{_NP})"
    r"(?:\s*,?\s*(?:in\s+that\s+order|one\s+after\s+the\s+other|one\s+by\s+one))?\s*[.!?]*\s*$",
    re.IGNORECASE)


def _listed(text: str) -> str:
    """A put of things of different kinds listed ("put the bell pepper, the soup can, and the
    cube into the box", "... in that order") as the sequence it is, one put each in the order
    said ("put the bell pepper into the box, then put the soup can into the box, then ...");
    every item must name one thing we know, each of its own kind (several of one kind are
    :func:`_several`'s), none the receiver; any other sentence as it is."""
    m = _LISTED.match(text)
    if m is None:
        return text
    items = [i.strip() for i in re.split(r"\s*,\s*(?:and\s+(?:then\s+)?)?|\s+and\s+(?:then\s+)?",
                                         m.group("items")) if i.strip()]
    kinds = [_one_thing(item) for item in items]
    receiver = _one_thing(m.group("dest"))
    # Each one thing (no plural, no part), each of its own kind (two that read as one kind, "the
    # mug, the cup", would move one of them twice), none the receiver itself.
    if (len(items) < 2 or receiver is None or any(k is None for k in kinds)
            or len(set(kinds)) < len(kinds) or receiver in kinds):
        return text
    verb = m.group("verb").lower()
    where = f"{m.group('prep')} {m.group('dest')}"
    return m.group("pre") + ", then ".join(f"{verb} {item} {where}" for item in items)


def _several(text: str, known_objects: Sequence[str] | None,
             config: ParserConfig | None) -> list[Intent] | None:
    """Several things of one kind put on one receiver, as one place each: "put the three paper
    cups on the tray" is three intents, a paper cup onto the tray each (the composite that runs
    them names the cups; the sentence does not). None when the sentence moves no several things
    of one kind by a place (the ordinary readings decide then).

    The things are a plural counted ("the three cups", "all 3 cups", "both cups"), quantified
    ("all (of) the cups", "each of the cups", "every cup") or bare ("the cups"); the count is the
    said one, else the scene's (``known_objects`` lists each object once). A bare plural with
    the scene not known, or with one such thing in it, is read as today (one place).

    Raises:
        TaskParseError: a count the scene does not hold, or "all the cups" with the scene not
            known (how many is not said).
    """
    low = " ".join(lx.tokenize(text)).replace(" ,", ",")
    if _TOWER_CUE.search(low) or len(_step_pieces(text)) > 1:
        return None
    words = low.split(" ")
    plurals = lx.singulars()
    singular = {p for phrases in lx.object_phrases().values() for p in phrases if p not in plurals}
    # The first noun phrase naming several things: a plural, or "every"/"each" and a singular.
    for i in range(len(words)):
        hit = None
        for size in (3, 2, 1):
            phrase = " ".join(words[i:i + size])
            if len(words[i:i + size]) == size and (phrase in plurals or phrase in singular):
                hit = (size, phrase)
                break
        if hit is None:
            continue
        size, phrase = hit
        j = i
        # One describing word between the quantifier and the noun ("the three disposable cups").
        if j >= 2 and words[j - 1] not in _QUANTIFIERS and not re.fullmatch(_COUNT, words[j - 1]) and (
                words[j - 2] in _QUANTIFIERS or re.fullmatch(_COUNT, words[j - 2])):
            j -= 1
        adjective = words[j:i]
        while j > 0 and (words[j - 1] in _QUANTIFIERS or re.fullmatch(_COUNT, words[j - 1])):
            j -= 1
        before = words[j:i - len(adjective)] if adjective else words[j:i]
        counted = [_count(w) for w in before if re.fullmatch(_COUNT, w)]
        quantified = bool(_EVERY & set(before)) or bool(counted)
        if phrase in singular and not (set(before) & {"each", "every"}):
            continue  # one thing named: the next noun may be the several
        break
    else:
        return None
    if "one" in before and not _EVERY & set(before):
        return None  # "one of the cups": one thing ("each one of the cups" is every one)
    if "both" in before and not counted:
        counted = [2]
    one = plurals[phrase][1] if phrase in plurals else phrase
    rest = [("it" if w == "them" else w) for w in words[i + size:]]
    reading = " ".join([*words[:j], "the", *adjective, one, *rest])
    try:
        step = parse(reading, known_objects, config)
    except TaskParseError:
        return None  # the singular reading refused: the sentence's own reading decides
    if step.next_action is not NextAction.PLACE or step.destination == step.target:
        return None
    try:  # the several things are the ones moved ("put the cube on the two plates" is no such)
        if parse(f"pick up the {one}", known_objects, config).target != step.target:
            return None
    except TaskParseError:
        return None
    say = step.target.replace("_", " ")
    in_scene = None if known_objects is None else list(known_objects).count(step.target)
    if counted:
        n = counted[0]
        if in_scene is not None and in_scene < n:
            raise TaskParseError(f"the sentence moves {n} {say}s, the scene has {in_scene} ('{text}')",
                                 ParseErrorKind.NOT_IN_SCENE, text)
    elif in_scene is not None:
        n = in_scene
    elif quantified:
        raise TaskParseError(f"how many {say}s? Say it ('put the three {say}s on the {step.destination}'): "
                             "the scene is not known when the sentence is read",
                             ParseErrorKind.INCOMPLETE, text)
    else:
        return None
    if n < 2:
        return None
    return [dataclasses.replace(step, text=f"{step.text} ({k} of {n}: {text})") for k in range(1, n + 1)]


def parse_steps(
    text: str, known_objects: Sequence[str] | None = None, config: ParserConfig | None = None
) -> list[Intent]:
    """Parse a sentence that asks for one task, or for several in turn, into their intents.

    One task is :func:`parse`'s reading (one intent; "pick up the kettle by its handle and then pour
    into the bowl" is one task: a grasp and its next action). Only a sentence :func:`parse` refuses
    is cut at its sequence words (", then", "and then", "after that", "once that's done", ", next",
    "and finally", ";"; a leading "first" is dropped) and each piece parsed alone; a later piece
    without a verb takes the everyday verb of the step before ("..., then the cube in the mug":
    put). A tower of several things of one kind ("stack the four cubes into a tower") is that many
    stacks, one intent each (:func:`_tower`). When the first piece is a task of its own the sentence
    is a sequence, and every later piece must be one too ("then put it in the mug": "it" names
    nothing, refused with the piece); otherwise the whole sentence's refusal stands.

    Raises:
        TaskParseError: as :func:`parse`; for a sequence, the first piece that does not parse
            (its message names the piece), or the whole sentence's error when it has no
            sequence words.
    """
    if isinstance(text, str) and len(text) <= MAX_TEXT_CHARS:
        text = _covered(_wished(_reworded(text)), _scope(known_objects))
        text = _listed(text)
        tower = _tower(text, known_objects, config)
        if tower is not None:
            return tower
        several = _several(text, known_objects, config)
        if several is not None:
            return several
    try:
        return [parse(text, known_objects, config)]
    except TaskParseError as err:
        if err.kind in (ParseErrorKind.EMPTY, ParseErrorKind.TOO_LONG):
            raise
        pieces = _step_pieces(text)
        if len(pieces) < 2:
            raise
        intents: list[Intent] = []
        # "pack the pepper, then the soup can, then the cube into the box": a receiver said once,
        # at the end, is every step's; the first step takes it when it names none (the later
        # ones then take the step before's).
        shared = _SHARED_RECEIVER.search(pieces[-1])
        if shared is not None and not all(_verbless(p) for p in pieces[1:]):
            shared = None  # a later step with a verb of its own says its own receiver
        for k, piece in enumerate(pieces, 1):
            tower = _tower(piece, known_objects, config) or _several(piece, known_objects, config)
            if tower is not None:
                intents.extend(tower)
                continue
            try:
                intents.append(parse(piece, known_objects, config))
            except TaskParseError as step_err:
                if k == 1 and shared is not None and not _SHARED_RECEIVER.search(piece):
                    try:
                        intents.append(parse(f"{piece} {shared.group(1)}", known_objects, config))
                        continue
                    except TaskParseError:
                        pass
                if k == 1:  # not a sequence of tasks: the sentence's own refusal says why
                    raise err from None
                dangling = _dangling_reading(piece, intents[-1])
                if dangling is not None:
                    try:
                        got = parse(dangling, known_objects, config)
                    except TaskParseError:
                        got = None
                    if got is not None and got.target != intents[-1].destination:
                        intents.append(dataclasses.replace(got, destination=intents[-1].destination,
                                                           destination_region=intents[-1].destination_region))
                        continue
                for reading in _elided_readings(piece, str(step_err), intents[-1]):
                    try:
                        intents.append(parse(reading, known_objects, config))
                        break
                    except TaskParseError:
                        continue
                else:
                    referent = _referent(piece, str(step_err), intents[-1], known_objects, config)
                    if referent is not None:
                        intents.append(referent)
                        continue
                    raise TaskParseError(f"step {k} of {len(pieces)} ('{piece}'): {step_err}", step_err.kind,
                                         text) from None
        return intents


#: What says a step does again what the step before did: "pour it into the mug as well".
_AGAIN = re.compile(r"\b(?:as\s+well|too|also)\b", re.IGNORECASE)
_IT = re.compile(r"\b(?:it|that)\b(?!\s*(?:'s|is)\b)", re.IGNORECASE)
def _verbless(piece: str) -> bool:
    """Whether a step says no action of its own: it starts with the thing ("the soup can", "the
    cube into the box"), not a verb ("put the cube in the mug")."""
    return re.match(r"^(?:the|a|an|this|that|these|those|both|all|each|every|one)\b", piece.strip(),
                    re.IGNORECASE) is not None


#: A step's receiver said at its end: "into the cardboard box".
_SHARED_RECEIVER = re.compile(
    r"\s((?:in|into|inside|on|onto)\s+(?:the|a|an|that|this)\s+[\w\s-]+?)\s*[.!?]?$", re.IGNORECASE)


def _elided_readings(piece: str, error: str, before: Intent) -> list[str]:
    """What a later step without a verb leaves to the step before it, spelt out, in the order
    tried: it does what the step before did ("..., then the cube in the mug"; "... and then the
    cube goes in the mug"); without its receiver too, into the same receiver ("put the pepper in
    the box, then the soup can"); without its object, with the same object ("pour from the kettle
    into the bowl, then into the mug")."""
    verb = _ELIDED_VERB[before.next_action]
    thing = f"the {before.target.replace('_', ' ')}"
    out: list[str] = []
    if error.startswith("no action verb"):
        done = _done_as_asked(piece)  # "..., and then the paper cup put on the shelf"
        if done is not None:
            out.append(done)
        elided = _GOES.sub(r"\1 \2", piece)
        out.append(f"{verb} {elided}")
        if before.destination and before.next_action is not NextAction.POUR:
            # Not after a pour: "use the kettle to fill the mug, then the bowl" names the next
            # vessel to fill, and "pour the bowl into the mug" would be a guess the other way.
            # The receiving part says the preposition: into what contains, onto what supports.
            dest = CATEGORIES.get(before.destination)
            does = dest.affordances.get(before.destination_region or "", ()) if dest is not None else ()
            contains = "contain" in does
            receiver = before.destination.replace("_", " ")
            out.append(f"{verb} {elided} {'in' if contains else 'on'} the {receiver}")
        if re.match(r"^(?:in|into|on|onto|inside|over)\b", elided, re.IGNORECASE):
            out.append(f"{verb} {thing} {elided}")
    if error.startswith("no object to") or "does not say what to pour from" in error:
        # "mug: pour into bowl, then hang on rack", "pour the kettle into the bowl, then pour
        # into the mug": a pour (after a pour) or a hang with no object of its own acts on the
        # thing the step before held. Not a put: "..., then put on the lid" takes the lid as its
        # object, and "..., then put in the mug" could move the thing or its receiver.
        words = piece.split()
        said = lx.VERB_INDEX.match(lx.tokenize(piece), 0)
        acts = {v.action for v in said[1]} if said is not None else set()
        fits = (NextAction.HANG in acts
                or (NextAction.POUR in acts and before.next_action is NextAction.POUR))
        if said is not None and fits and len(words) > said[0] and words[said[0]].lower() in (
                "in", "into", "on", "onto", "inside", "over", "to"):
            out.append(f"{' '.join(words[:said[0]])} {thing} {' '.join(words[said[0]:])}")
    if "does not say what to pour from" in error and before.next_action is NextAction.POUR:
        # "..., and after that pour some into the mug as well": poured from what poured before.
        some = re.sub(r"^(\s*(?:and\s+)?(?:then\s+)?pour)\s+"
                      r"(?:some|a\s+little|a\s+bit|more|the\s+rest|water)\b(?!\s+of\b)",
                      rf"\1 from {thing}", piece, count=1, flags=re.IGNORECASE)
        if some != piece:
            out.append(some)
    if before.next_action is NextAction.POUR:
        # "use the kettle to fill the bowl, then fill the mug": the same source, the new vessel.
        m = re.match(rf"^(?:and\s+)?(?:then\s+)?fill(?:\s+up)?\s+(?P<dest>{_NP})(?:\s+up)?\s*(?P<rest>.*)$",
                     piece.strip(), re.IGNORECASE)
        if m is not None and _pour_pair(thing, m.group("dest")):
            out.append(f"pour {thing} into {m.group('dest')} {m.group('rest')}".strip())
    return out


def _dangling_reading(piece: str, before: Intent) -> str | None:
    """A later step that ends on its preposition, put in(to) the step before's receiver: "...,
    after that put the soup can in". Only a step that puts something somewhere (not "push the
    drawer in"), and only where the preposition fits the receiver (in what contains, on what
    supports); the caller keeps the receiver's part and refuses the thing into itself."""
    hit = _DANGLING.search(piece)
    if hit is None or not before.destination:
        return None
    verb = lx.VERB_INDEX.match(_Parser._strip_fillers(lx.tokenize(piece)), 0)
    if verb is None or verb[1][0].action not in (NextAction.PLACE, NextAction.STACK, NextAction.INSERT):
        return None
    dest = CATEGORIES.get(before.destination)
    does = dest.affordances.get(before.destination_region or "", ()) if dest is not None else ()
    prep = hit.group(1).lower()
    if prep in ("in", "into", "inside"):
        if "support" in does and "contain" not in does:
            return None  # in a plate
    elif dest is not None and dest.holds_inside(before.destination_region):
        return None  # on a box's inside
    return f"{piece[:hit.start()]} {prep} the {before.destination.replace('_', ' ')}"


def _can(action: NextAction, name: str) -> bool:
    """Whether an object of category ``name`` can be what ``action`` acts on: hung by a part that
    affords hanging, poured from a part that pours out, anything else moved when it is free."""
    cat = CATEGORIES.get(name)
    if cat is None:
        return False
    does = {a for p in cat.parts for a in cat.affordances.get(p, ())}
    if action is NextAction.HANG:
        return "hang" in does
    if action is NextAction.POUR:
        return "pour_out" in does
    return not cat.fixed


def _referent(piece: str, error: str, before: Intent, known_objects: Sequence[str] | None,
              config: ParserConfig | None) -> Intent | None:
    """A later step's "it", read as the one thing of the step before it can be: "empty the mug
    into the bowl, then hang it on the rack" (a bowl has nothing to hang it by: the mug). When
    both the step's object and its receiver could be meant ("put the banana on the plate, then
    put it in the mug"), or neither, None: the step is refused, never guessed."""
    if "refers to nothing named before it" not in error or not _IT.search(piece):
        return None
    if _AGAIN.search(piece) and before.next_action is NextAction.POUR:
        # "..., then pour it into the mug as well": the same pour again, into a new vessel. Not
        # for a put: "put the cube in the bowl, then also put it in the box" may move the bowl.
        try:
            same = _IT.sub(f"the {before.target.replace('_', ' ')}", piece, count=1)
            again = parse(same, known_objects, config)
        except TaskParseError:
            again = None
        if again is not None and again.next_action is before.next_action and again.target == before.target:
            return again
    readings = []
    for name in (before.target, before.destination):
        if not name:
            continue
        try:
            intent = parse(_IT.sub(f"the {name.replace('_', ' ')}", piece, count=1), known_objects, config)
        except TaskParseError:
            continue
        if intent.target == name and _can(intent.next_action, name):
            readings.append(intent)
    return readings[0] if len(readings) == 1 else None


@functools.cache
def _wording_parts(cat: str) -> dict[str, str]:
    """The affordance model's training wordings (``affordance.vocabulary.training_pool``) that
    name exactly one part of ``cat``: a wording of an affordance only that part offers ("the
    loop" for a mug: ``hang``, its handle's alone), keyed as the parser meets the phrase
    (determiners dropped). A wording that could mean two parts of the object is left out."""
    from afford_perception.affordance.vocabulary import training_pool

    info = CATEGORIES[cat]
    out: dict[str, str | None] = {}
    for affordance, wordings in training_pool().items():
        parts = info.parts_with(affordance)
        if len(parts) != 1:
            continue
        for wording in wordings:
            key = " ".join(t for t in lx.words(wording) if t not in lx.DETERMINERS)
            out[key] = parts[0] if out.get(key, parts[0]) == parts[0] else None
    return {k: v for k, v in out.items() if v is not None}


def _part_by_wording(cat: str, phrase: str) -> str | None:
    """The part of ``cat`` a part phrase names word for word as one of the affordance model's
    training wordings (:func:`_wording_parts`), or None. Exact only: it reads "by the bit you
    hold on to" as the handle, and guesses nothing the lexicon and the embedding fallback
    could not place."""
    return _wording_parts(cat).get(phrase)
