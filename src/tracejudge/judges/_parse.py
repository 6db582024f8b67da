"""Reading the judge's reply: tolerant JSON extraction, validation, logprob-weighted scores.

Pure functions over text and dicts, no I/O, so every quirk seen from real models (code
fences, `<think>` blocks, prose around the object, trailing commas) is unit-testable.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from tracejudge.judges._types import CriterionKind

__all__ = [
    "ReplyError",
    "Extracted",
    "Judgement",
    "extract_object",
    "validate_reply",
    "weighted_score",
]


class ReplyError(ValueError):
    """The reply text is not a usable judgement; the message says why (sent in a re-ask)."""


@dataclass(frozen=True)
class Extracted:
    """A JSON object found in a reply, and where it lies in the text it was found in."""

    value: dict[str, Any]
    start: int
    end: int


@dataclass(frozen=True)
class Judgement:
    """A validated reply. `score` is the reported 1..10 grade (None for pass/fail kinds)."""

    explanation: str
    applicable: bool
    score: int | None
    passed: bool | None
    cleaned_explanation: str | None


_THINK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_UNOPENED_THINK_END_RE = re.compile(r"^.*?</(think|thinking|reasoning)>", re.IGNORECASE | re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")


def _mask_reasoning(text: str) -> str:
    """The text with reasoning blocks blanked out (same length, so offsets still hold).

    Some servers strip the opening `<think>` but leave the closing tag; everything up to
    it is reasoning too.
    """

    def blank(match: re.Match[str]) -> str:
        return " " * len(match.group(0))

    text = _THINK_RE.sub(blank, text)
    return _UNOPENED_THINK_END_RE.sub(blank, text)


def _matching_brace(text: str, start: int) -> int | None:
    """Index just past the `}` closing the `{` at `start`, skipping braces inside strings."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _drop_trailing_commas(candidate: str) -> str:
    """`{"a": 1,}` -> `{"a": 1}`, leaving commas inside strings alone."""
    out: list[str] = []
    pieces = re.split(r'("(?:[^"\\]|\\.)*")', candidate)
    for index, piece in enumerate(pieces):
        # Odd pieces are string literals, captured by the split.
        out.append(piece if index % 2 else _TRAILING_COMMA_RE.sub(r"\1", piece))
    return "".join(out)


def _loads_object(candidate: str) -> dict[str, Any] | None:
    for attempt in (candidate, _drop_trailing_commas(candidate)):
        try:
            value = json.loads(attempt)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def extract_object(text: str, keys: tuple[str, ...] = ("explanation",)) -> Extracted:
    """The judgement object in a reply: the last top-level `{...}` that parses as JSON and
    has one of `keys`, else the last one that parses at all.

    Raises ReplyError when the text holds no JSON object.
    """
    if not text or not text.strip():
        raise ReplyError("the reply was empty")
    masked = _mask_reasoning(text)
    found: list[Extracted] = []
    position = masked.find("{")
    while position != -1:
        end = _matching_brace(masked, position)
        if end is None:
            # A stray "{" in prose never closes; an object may still start later.
            position = masked.find("{", position + 1)
            continue
        value = _loads_object(masked[position:end])
        if value is not None:
            found.append(Extracted(value, position, end))
            position = masked.find("{", end)
        else:
            position = masked.find("{", position + 1)
    if not found:
        if "{" in masked and _matching_brace(masked, masked.find("{")) is None:
            raise ReplyError("the reply holds an unfinished JSON object (was it cut off?)")
        raise ReplyError("the reply holds no JSON object")
    with_keys = [item for item in found if any(key in item.value for key in keys)]
    return (with_keys or found)[-1]


def _as_bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ReplyError(f'"{key}" must be true or false, got {json.dumps(value)}')


def _as_score(value: Any) -> int:
    number: float | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or not number.is_integer():
        raise ReplyError(f'"score" must be an integer from 1 to 10, got {json.dumps(value)}')
    if not 1 <= number <= 10:
        raise ReplyError(f'"score" must be an integer from 1 to 10, got {json.dumps(value)}')
    return int(number)


def validate_reply(
    value: dict[str, Any], kind: CriterionKind, clean_explanation: bool
) -> Judgement:
    """Check a parsed reply against the contract for `kind`; ReplyError says what is wrong."""
    explanation = value.get("explanation")
    if not isinstance(explanation, str) or not explanation.strip():
        raise ReplyError('the JSON object needs a non-empty string "explanation"')
    # A missing "applicable" is read as true: the common case, and omitting it is harmless.
    applicable = _as_bool(value.get("applicable", True), "applicable")
    score: int | None = None
    passed: bool | None = None
    if kind.is_binary:
        if "passed" not in value or value["passed"] is None:
            if applicable:
                raise ReplyError('the JSON object needs "passed": true or false')
        else:
            passed = _as_bool(value["passed"], "passed")
    else:
        if "score" not in value or value["score"] is None:
            if applicable:
                raise ReplyError('the JSON object needs "score": an integer from 1 to 10')
        else:
            score = _as_score(value["score"])
    cleaned: str | None = None
    if clean_explanation:
        cleaned = value.get("cleaned_explanation")
        if not isinstance(cleaned, str) or not cleaned.strip():
            raise ReplyError('the JSON object needs a non-empty string "cleaned_explanation"')
    return Judgement(explanation, applicable, score, passed, cleaned)


# --------------------------------------------------------------------------- logprobs

_SCORE_VALUE_RE = re.compile(r'(?<!\\)"score"\s*:\s*"?(\d+)')
# A token that is one number with at most JSON punctuation or spaces around it, as
# tokenisers produce: "8", " 8", ":8", "8,", "8}".
_NUMBER_TOKEN_RE = re.compile(r'^[\s:"]*(\d+)[\s,}"]*$')
# Mass on an ambiguous "1" (one, or the first half of "10") above which the weighting
# would be guesswork.
_AMBIGUOUS_ONE_LIMIT = 0.05


def _number(token: Any) -> int | None:
    if not isinstance(token, str):
        return None
    match = _NUMBER_TOKEN_RE.match(token)
    return int(match.group(1)) if match else None


def weighted_score(logprobs: list[dict[str, Any]], score: int) -> float | None:
    """The probability-weighted mean of the 1..10 grades at the score token, or None.

    `logprobs` is the chat-completions `choices[0].logprobs.content` list. The score token
    is the one carrying the value after the `"score"` key of the reply object (a digit in
    the explanation never counts). None when the token cannot be found, when the value is
    split across tokens ("1", "0" for 10), or when no alternative is a grade.
    """
    tokens = [entry.get("token") if isinstance(entry, dict) else None for entry in logprobs]
    if not tokens or not all(isinstance(token, str) for token in tokens):
        return None
    text = "".join(tokens)  # type: ignore[arg-type]
    try:
        span = extract_object(text, keys=("score",))
    except ReplyError:
        return None
    masked = _mask_reasoning(text)
    matches = [
        m
        for m in _SCORE_VALUE_RE.finditer(masked, span.start, span.end)
        if int(m.group(1)) == score
    ]
    if not matches:
        return None
    digit_at = matches[-1].start(1)
    offset = 0
    index = None
    for i, token in enumerate(tokens):
        if offset <= digit_at < offset + len(token):  # type: ignore[arg-type]
            index = i
            break
        offset += len(token)  # type: ignore[arg-type]
    if index is None or _number(tokens[index]) != score:
        # The value is split over several tokens (a tokeniser with one token per digit
        # writing 10): the alternatives at the first digit do not say 1..10.
        return None
    top = logprobs[index].get("top_logprobs")
    if not isinstance(top, list) or not top:
        return None
    mass: dict[int, float] = {}
    for alternative in top:
        if not isinstance(alternative, dict):
            continue
        grade = _number(alternative.get("token"))
        logprob = alternative.get("logprob")
        if grade is None or not 1 <= grade <= 10 or not isinstance(logprob, (int, float)):
            continue
        if not math.isfinite(logprob):
            continue
        mass[grade] = mass.get(grade, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    if 1 in mass and _splits_digits(tokens) and mass[1] / total > _AMBIGUOUS_ONE_LIMIT:
        # With one token per digit a "1" may be the start of "10": the weighting cannot
        # tell them apart, so the reported value is the honest answer.
        return None
    return sum(grade * weight for grade, weight in mass.items()) / total


def _splits_digits(tokens: list[Any]) -> bool:
    """Whether the tokeniser writes numbers one digit per token (seen in this reply)."""
    return any(
        isinstance(a, str) and isinstance(b, str) and a.isdigit() and b.isdigit()
        for a, b in zip(tokens, tokens[1:], strict=False)
    )
