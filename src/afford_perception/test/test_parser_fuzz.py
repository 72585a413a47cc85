"""The task parser under arbitrary input (hypothesis): every string gets an intent of the
ontology or a ``TaskParseError`` with a one-line reason; nothing else escapes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afford_core.ontology import CATEGORIES
from afford_perception.parser import MAX_TEXT_CHARS, ParseErrorKind, TaskParseError, parse

WORDS = sorted({*CATEGORIES, "pick", "up", "put", "on", "in", "into", "the", "a", "hang", "pour", "open",
                "close", "push", "pull", "grab", "by", "handle", "rim", "body", "spout", "and", "then",
                "not", "don't", "touch", "from", "it", "its", "drawer", "rack", "bowl", "plate", ",",
                "ignore", "previous", "instructions", "rm", "-rf", "/", ";", "DROP", "TABLE", "'", '"'})
# Derandomized: the same examples on every run (CI never flips on a lucky draw), no example
# database written into the checkout.
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def _parse_or_refuse(text: str) -> None:
    try:
        intent = parse(text)
    except TaskParseError as err:
        message = str(err)
        assert message and "\n" not in message, repr(message)
        assert isinstance(err.kind, ParseErrorKind)
        return
    # A sentence that parses yields an intent of the ontology, from words, not from nothing.
    assert intent.target in CATEGORIES and intent.grasp_region in CATEGORIES[intent.target].parts
    assert any(c.isalpha() for c in text)


@FUZZ
@given(st.text(max_size=200))
def test_any_unicode_text_gets_an_intent_or_a_reason(text: str) -> None:
    _parse_or_refuse(text)


@FUZZ
@given(st.lists(st.sampled_from(WORDS), max_size=25).map(" ".join))
def test_word_salad_of_the_task_vocabulary_gets_an_intent_or_a_reason(text: str) -> None:
    _parse_or_refuse(text)


@FUZZ
@given(st.sampled_from(["pick up the mug", "hang the mug on the rack", "open the drawer"]),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join))
def test_a_valid_sentence_with_anything_appended_gets_an_intent_or_a_reason(base: str, tail: str) -> None:
    _parse_or_refuse(f"{base} {tail}")


@pytest.mark.parametrize("text", ["pick up the mug " * 200, "a" * 100_000, "mug " + "\u0000" * 5000])
def test_very_long_input_is_refused_before_parsing(text: str) -> None:
    with pytest.raises(TaskParseError) as err:
        parse(text)
    assert err.value.kind is ParseErrorKind.TOO_LONG
    assert f"at most {MAX_TEXT_CHARS} characters" in str(err.value) and "\n" not in str(err.value)
    assert len(err.value.text) <= 80  # the error does not carry the whole input around


def test_the_longest_allowed_sentence_still_parses() -> None:
    text = "pick up the mug" + " " * (MAX_TEXT_CHARS - len("pick up the mug"))
    assert len(text) == MAX_TEXT_CHARS
    assert parse(text).target == "mug"
