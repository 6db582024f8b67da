"""Property-based tests of the reply parser: any string gives an object or a ReplyError,
never another exception; a judgement embedded in prose is always found."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracejudge.judges import CriterionKind
from tracejudge.judges._parse import (
    ReplyError,
    _mask_reasoning,
    extract_object,
    validate_reply,
)

# The example count comes from the Hypothesis profile (tests/speed.py).
PROPERTIES = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Pieces a hostile or broken reply is made of: structure, quotes, escapes, reasoning tags.
_PIECES = st.sampled_from(
    [
        "{", "}", "[", "]", '"', "\\", ",", ":", " ", "\n", "a", "1", "true", "null",
        "<think>", "</think>", "<THINKING>", "</thinking>", "</reasoning>",
        '"explanation"', '"score"', '"passed"',
        '{"explanation": "x", "score": 5}', '{"a": [1,],}', '{"explanation": "{",}',
    ]
)  # fmt: skip
_HOSTILE = st.lists(_PIECES, max_size=60).map("".join)
_PROSE = st.text(
    alphabet=st.characters(blacklist_characters="{}<", blacklist_categories=("Cs",)),
    max_size=80,
)


def _judgement_objects() -> st.SearchStrategy[dict[str, object]]:
    scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 50), st.text(max_size=30))
    return st.fixed_dictionaries(
        {"explanation": st.text(min_size=1, max_size=60), "score": st.integers(1, 10)},
        optional={"applicable": st.booleans(), "extra": st.recursive(
            scalar, lambda inner: st.lists(inner, max_size=3)
            | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8
        )},
    )  # fmt: skip


@PROPERTIES
@given(st.one_of(st.text(max_size=200), _HOSTILE))
def test_any_text_gives_an_object_or_a_reply_error(text: str) -> None:
    try:
        found = extract_object(text, keys=("score", "explanation"))
    except ReplyError as problem:
        assert str(problem)  # a reason the re-ask can quote
        return
    assert isinstance(found.value, dict)
    assert 0 <= found.start < found.end <= len(text)
    assert text[found.start] == "{" and text[found.end - 1] == "}"


@PROPERTIES
@given(_PROSE, _judgement_objects(), _PROSE, st.sampled_from(["", "```json\n", "<think>{</think>"]))
def test_a_judgement_in_prose_is_always_found(
    before: str, value: dict[str, object], after: str, wrapper: str
) -> None:
    text = f"{before}{wrapper}{json.dumps(value)}{after}"
    assert extract_object(text, keys=("score",)).value == value


@PROPERTIES
@given(_HOSTILE, _judgement_objects())
def test_the_last_judgement_wins_over_earlier_junk(junk: str, value: dict[str, object]) -> None:
    # Whatever broken structure comes first (unclosed braces, stray quotes, closed or open
    # reasoning blocks, other objects), a complete judgement after it is the one read.
    text = f"{junk}\n{json.dumps(value)}"
    assert extract_object(text, keys=("score",)).value == value


def test_a_judgement_after_an_unclosed_quote_in_a_brace_is_found() -> None:
    # Found by the property above: the stray `{"` makes one object of everything.
    text = '{"\n{"explanation": "\\"", "score": 1}'
    assert extract_object(text, keys=("score",)).value == {"explanation": '"', "score": 1}


@PROPERTIES
@given(st.text(max_size=300))
def test_masking_reasoning_keeps_every_offset(text: str) -> None:
    masked = _mask_reasoning(text)
    assert len(masked) == len(text)
    assert all(a == b or b == " " for a, b in zip(text, masked, strict=True))


@PROPERTIES
@given(
    st.dictionaries(
        st.sampled_from(["explanation", "score", "passed", "applicable", "cleaned_explanation"]),
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10)),
    ),
    st.sampled_from(list(CriterionKind)),
    st.booleans(),
)
def test_validation_accepts_or_says_why(
    value: dict[str, object], kind: CriterionKind, clean: bool
) -> None:
    try:
        judgement = validate_reply(value, kind, clean)
    except ReplyError as problem:
        assert str(problem)
        return
    assert judgement.explanation.strip()
    if judgement.score is not None:
        assert 1 <= judgement.score <= 10
