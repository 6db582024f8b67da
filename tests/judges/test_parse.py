"""Reading replies without the network: extraction, validation and logprob weighting."""

from __future__ import annotations

import json
import math

import pytest

from tracejudge.judges import CriterionKind
from tracejudge.judges._parse import ReplyError, extract_object, validate_reply, weighted_score
from tracejudge.testing import token_logprobs


def test_the_last_object_with_the_expected_keys_wins() -> None:
    text = (
        'Example format: {"explanation": "...", "score": 5}\n'
        'Answer: {"explanation": "real", "applicable": true, "score": 8}'
    )
    assert extract_object(text, keys=("score",)).value["explanation"] == "real"


def test_braces_inside_strings_do_not_confuse_extraction() -> None:
    text = '{"explanation": "a } and a { and \\" quote", "applicable": true, "score": 3}'
    assert extract_object(text).value["score"] == 3


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("no json here", "no JSON object"),
        ('{"explanation": "cut', "unfinished"),
    ],
)
def test_unreadable_replies_say_why(text: str, problem: str) -> None:
    with pytest.raises(ReplyError, match=problem):
        extract_object(text)


def test_validation_accepts_reasonable_variants() -> None:
    value = {"explanation": "ok", "applicable": "true", "score": "7"}
    assert validate_reply(value, CriterionKind.REWARD, False).score == 7
    value = {"explanation": "ok", "score": 7.0}
    assert validate_reply(value, CriterionKind.PENALIZE, False).applicable is True
    value = {"explanation": "n/a", "applicable": False}
    assert validate_reply(value, CriterionKind.FAILS_IF, False).passed is None


@pytest.mark.parametrize(
    ("value", "kind", "problem"),
    [
        ({"applicable": True, "score": 5}, CriterionKind.REWARD, "explanation"),
        ({"explanation": "x", "score": 0}, CriterionKind.REWARD, "1 to 10"),
        ({"explanation": "x", "score": 7.5}, CriterionKind.REWARD, "integer"),
        ({"explanation": "x", "score": 5}, CriterionKind.PASSES_IF, "passed"),
        ({"explanation": "x", "passed": "maybe"}, CriterionKind.PASSES_IF, "true or false"),
    ],
)
def test_validation_rejects_contract_breaks(
    value: dict[str, object], kind: CriterionKind, problem: str
) -> None:
    with pytest.raises(ReplyError, match=problem):
        validate_reply(value, kind, False)


def test_cleaned_explanation_is_required_when_asked_for() -> None:
    with pytest.raises(ReplyError, match="cleaned_explanation"):
        validate_reply({"explanation": "x", "score": 5}, CriterionKind.REWARD, True)


def test_weighted_score_renormalises_over_grades_only() -> None:
    content = json.dumps({"explanation": "fine", "applicable": True, "score": 6})
    top = {"6": math.log(0.5), "7": math.log(0.3), "x": math.log(0.2)}
    value = weighted_score(token_logprobs(content, "6", top), 6)
    assert value == pytest.approx((6 * 0.5 + 7 * 0.3) / 0.8)


def test_weighted_score_merges_tokens_with_spaces() -> None:
    content = json.dumps({"explanation": "fine", "applicable": True, "score": 6})
    logprobs = token_logprobs(content, "6", {"6": math.log(0.5)})
    spot = next(e for e in logprobs if e["token"] == "6")
    spot["top_logprobs"] = [
        {"token": "6", "logprob": math.log(0.5)},
        {"token": " 6", "logprob": math.log(0.25)},
        {"token": "8", "logprob": math.log(0.25)},
    ]
    assert weighted_score(logprobs, 6) == pytest.approx(6.5)


def test_weighted_score_is_none_when_the_value_is_not_found() -> None:
    content = json.dumps({"explanation": "fine", "applicable": True, "score": 6})
    assert weighted_score(token_logprobs(content, "6", {"6": 0.0}), 7) is None
    assert weighted_score([], 6) is None
