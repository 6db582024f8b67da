"""Reading the judge's reply: tolerant JSON extraction, validation, logprob-weighted scores.

Pure functions over text and dicts, no I/O, so every quirk seen from real models (code
fences, `<think>` blocks, prose around the object, trailing commas) is unit-testable.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from array import array
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


_REASONING_TAG_RE = re.compile(r"<(/?)(think|thinking|reasoning)>", re.IGNORECASE)
# Inside an object: runs of one bracket kind (a run is handled in one step, so a reply of a
# million braces costs a few regex calls, not a million Python iterations), or a string.
_STRUCTURE_RE = re.compile(r'\{+|\}+|\[+|\]+|"')
# The rest of a JSON string after its opening quote. Possessive, so a long string is one
# C-level pass with no backtracking state, and an unterminated one fails in the same pass.
_STRING_TAIL_RE = re.compile(r'(?:[^"\\]++|\\.)*+"', re.DOTALL)
_TRAILING_COMMA_HINT_RE = re.compile(r",\s*+[}\]]")
_STRING_OR_TRAILING_COMMA_RE = re.compile(r'("(?:[^"\\]++|\\.)*+")|,(\s*+[}\]])', re.DOTALL)

#: Objects nested deeper than this are not handed to the JSON parser (a judgement is two or
#: three levels deep; a hostile reply a million deep would otherwise hit the recursion limit).
MAX_NESTING = 64
# Extraction may read parts of a reply more than once (an object that fails to parse is
# searched for objects inside it; a `{` that never closes is searched past). Two budgets keep
# any reply, however hostile, to linear work: characters read by regex searches, and
# characters handed to the (slower) JSON parser, at most these many times the reply's
# length (plus a floor, so short replies are never cut short)...
_SCANNED_FACTOR = 16
_PARSED_FACTOR = 2
_CHARACTER_FLOOR = 1 << 20
# ...and at most this many steps of Python code (one per bracket run, string or candidate
# object). A judgement takes a few dozen.
_STEP_LIMIT = 200_000


def _mask_reasoning(text: str) -> str:
    """The text with reasoning blocks blanked out (same length, so offsets still hold).

    A block runs from `<think>` (or `<thinking>`, `<reasoning>`) to the nearest closing tag
    of the same name. Some servers strip the opening `<think>` but leave the closing tag;
    everything up to the first closing tag left is reasoning too. Linear: the closing tags
    are listed once, and each opening tag looks forward from where the last one stopped.
    """
    if "<" not in text:
        return text
    # Per tag name, the (start, end) of its closing tags in order; opening tags are read in
    # a second pass so that a reply of a million unclosed `<think>` stores nothing for them.
    closers: dict[str, tuple[array[int], array[int]]] = {}
    for match in _REASONING_TAG_RE.finditer(text):
        if match.group(1):
            starts, ends = closers.setdefault(match.group(2).lower(), (array("q"), array("q")))
            starts.append(match.start())
            ends.append(match.end())
    if not closers:
        return text
    passed = dict.fromkeys(closers, 0)  # per name: closing tags before the current position
    blanks: list[tuple[int, int]] = []
    cursor = 0  # everything before it is blanked already
    for match in _REASONING_TAG_RE.finditer(text):
        name = match.group(2).lower()
        if match.group(1) or match.start() < cursor or name not in closers:
            continue
        starts, ends = closers[name]
        index = passed[name]
        while index < len(starts) and starts[index] < match.start():
            index += 1
        passed[name] = index
        if index < len(starts):
            cursor = ends[index]
            blanks.append((match.start(), cursor))
    # The first closing tag outside every block closes a block the server did not open.
    first_stray: int | None = None
    for starts, ends in closers.values():
        for start, end in zip(starts, ends, strict=True):
            inside = bisect.bisect_right(blanks, (start, len(text))) - 1
            if inside < 0 or blanks[inside][1] <= start:
                if first_stray is None or end < first_stray:
                    first_stray = end
                break
    if first_stray is not None:
        blanks = [(0, first_stray)] + [block for block in blanks if block[0] >= first_stray]
    pieces: list[str] = []
    last = 0
    for start, end in blanks:
        pieces.append(text[last:start])
        pieces.append(" " * (end - start))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _drop_trailing_commas(candidate: str) -> str:
    """`{"a": 1,}` -> `{"a": 1}`, leaving commas inside strings alone."""

    def keep(match: re.Match[str]) -> str:
        literal = match.group(1)
        return literal if literal is not None else match.group(2)

    return _STRING_OR_TRAILING_COMMA_RE.sub(keep, candidate)


class _Search:
    """One extraction: finds the JSON objects of a (masked) reply in bounded, linear work.

    The reply is read as prose with objects in it: outside an object quotes mean nothing;
    inside one, strings are skipped so their braces do not count. Each outermost balanced
    `{...}` is parsed; when it does not parse (or when a `{` never closes), the search goes
    on just after its `{`, as if it were prose; when it holds no string, only its inside
    needs that second look, since what is inside it also ends inside it.
    Found objects never overlap, so "the last" is the one that starts last. When a budget
    runs out the search gives up (ReplyError) rather than answer with an object that may
    not be the last.
    """

    def __init__(self, text: str, keys: tuple[str, ...]) -> None:
        self.text = text
        self.keys = keys
        self.scanned = _SCANNED_FACTOR * len(text) + _CHARACTER_FLOOR
        self.parsed = _PARSED_FACTOR * len(text) + _CHARACTER_FLOOR
        self.steps = _STEP_LIMIT
        self.last: Extracted | None = None
        self.last_with_keys: Extracted | None = None
        self.first_brace = text.find("{")
        self.unfinished = False  # whether the reply's first `{` never closes
        self.too_deep = False

    def run(self) -> Extracted:
        regions = [(0, len(self.text))]
        exhausted = False
        while regions and not exhausted:
            begin, end = regions.pop()
            self._scan(begin, end, regions)
            exhausted = min(self.scanned, self.parsed, self.steps) < 0
        found = self.last_with_keys or self.last
        if found is not None and not exhausted:
            return found
        if self.too_deep:
            raise ReplyError(
                f"the reply's JSON is nested more than {MAX_NESTING} levels deep; answer "
                "with one flat JSON object"
            )
        if exhausted:
            raise ReplyError(
                "the reply is too tangled to read (braces that do not pair up, or "
                "thousands of objects); answer with one JSON object"
            )
        if self.unfinished:
            raise ReplyError("the reply holds an unfinished JSON object (was it cut off?)")
        raise ReplyError("the reply holds no JSON object")

    def _scan(self, begin: int, end: int, regions: list[tuple[int, int]]) -> None:
        """Find the outermost objects in text[begin:end]; queue the regions to search again."""
        text = self.text
        position = text.find("{", begin, end)
        while position != -1 and self.steps >= 0:
            self.steps -= 1
            stop, nesting = self._close(position, end)
            if stop is None:
                self.unfinished = self.unfinished or position == self.first_brace
                self.scanned -= end - position
                regions.append((position + 1, end))
                return
            self.scanned -= stop - position
            if nesting > MAX_NESTING or not self._consider(position, stop):
                if text.find('"', position, stop) == -1:
                    # No string in it: the objects inside it end inside it too.
                    regions.append((position + 1, stop))
                else:
                    # A `{` inside one of its strings, read afresh, may pair with a brace
                    # after it: search on from just after this `{`, as if it were prose.
                    regions.append((position + 1, end))
                    return
            position = text.find("{", stop, end)

    def _close(self, start: int, end: int) -> tuple[int | None, int]:
        """Index just past the `}` closing the `{` at `start` (None if none does before
        `end`, or the step budget ran out), and the deepest nesting of braces and brackets
        on the way."""
        text = self.text
        braces = nesting = deepest = 0
        index = start
        while self.steps >= 0:
            self.steps -= 1
            match = _STRUCTURE_RE.search(text, index, end)
            if match is None:
                return None, deepest
            token = match.group()
            kind, count = token[0], len(token)
            if kind == '"':
                tail = _STRING_TAIL_RE.match(text, match.end(), end)
                if tail is None:
                    return None, deepest
                index = tail.end()
                continue
            index = match.end()
            if kind in "{[":
                braces += count if kind == "{" else 0
                nesting += count
                if nesting > deepest:
                    deepest = nesting
                    self.too_deep = self.too_deep or deepest > MAX_NESTING
            elif kind == "]":
                nesting = max(nesting - count, 0)
            elif count >= braces:
                return match.start() + braces, deepest
            else:
                braces -= count
                nesting = max(nesting - count, 0)
        return None, deepest

    def _consider(self, start: int, stop: int) -> bool:
        """Parse text[start:stop]; keep it when it is an object. Whether it was."""
        if self.parsed < 0:
            return True  # out of budget: the search stops without reading further
        candidate = self.text[start:stop]
        self.parsed -= len(candidate)
        value = _loads(candidate)
        if not isinstance(value, dict):
            return False
        found = Extracted(value, start, stop)
        if self.last is None or start > self.last.start:
            self.last = found
        if any(key in value for key in self.keys) and (
            self.last_with_keys is None or start > self.last_with_keys.start
        ):
            self.last_with_keys = found
        return True


def _loads(candidate: str) -> Any:
    """The JSON value of `candidate` (trailing commas forgiven), or None."""
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        pass
    # Only a candidate that has a trailing comma is worth a second, comma-free copy.
    if not _TRAILING_COMMA_HINT_RE.search(candidate):
        return None
    try:
        return json.loads(_drop_trailing_commas(candidate))
    except (ValueError, RecursionError):
        return None


def extract_object(text: str, keys: tuple[str, ...] = ("explanation",)) -> Extracted:
    """The judgement object in a reply: the last top-level `{...}` that parses as JSON and
    has one of `keys`, else the last one that parses at all. Reasoning blocks
    (`<think>...</think>`) are ignored, and trailing commas forgiven.

    Linear in the reply's length whatever it holds (work is capped at a small multiple of
    it). Raises ReplyError when the text holds no usable JSON object, including one nested
    more than MAX_NESTING levels deep.
    """
    if not text or not text.strip():
        raise ReplyError("the reply was empty")
    return _Search(_mask_reasoning(text), keys).run()


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
    found = [entry.get("token") if isinstance(entry, dict) else None for entry in logprobs]
    tokens = [token for token in found if isinstance(token, str)]
    if not tokens or len(tokens) != len(found):
        return None
    text = "".join(tokens)
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
        if offset <= digit_at < offset + len(token):
            index = i
            break
        offset += len(token)
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
