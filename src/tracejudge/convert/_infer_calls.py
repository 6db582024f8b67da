"""Model calls recognised by their shape, on spans no row of the table claims.

A producer nobody added records its model calls under keys of its own (Genkit's
`genkit:input` / `genkit:output`, with no model or token key the catch-all row knows).
This phase, for every producer, takes a span that no row claims for a model call when:

- its attributes hold the call's messages and its answer, by their shape (a JSON array
  or `messages` object of chat messages on an input key, an answer on an output key, or
  the same written as Python literals, `_python_literals`:
  read as `_infer_content` reads a call's content, whatever the keys' prefixes);
- something says a model answered: a token count (an integer attribute whose key's last
  word is `tokens`, a `usage` object in a JSON value holding one, or the value of a key
  whose last segment is `usage`), or a child span of an HTTP client request (the call to
  the model's API);
- no span below it is a model call (the table's, or one of these): a framework's step
  around the call (Genkit's `generate`) records the same messages and answer.

Such a span is read as a model call (`SHAPED`): its content by its shape, its model from
any attribute whose last segment is `model`, `model_name` or `model_id` (or a JSON value's
`model`), its usage from the token counts found.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracejudge.convert import _json
from tracejudge.convert._common import Extraction, as_str
from tracejudge.convert._construct import build
from tracejudge.convert._infer_content import SIZE_CAP, read_shape
from tracejudge.convert._memo import ConversionMemo
from tracejudge.convert._python_literals import python_literal
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Convention, Kind
from tracejudge.models import TokenUsage

__all__ = ["SHAPED", "add_shaped_calls"]

_SEGMENTS = re.compile(r"[.:/]")
_MODEL_SEGMENTS = frozenset({"model", "model_name", "model_id", "modelname", "modelid"})
_INPUT_TOKENS = ("input_tokens", "inputtokens", "prompt_tokens", "prompttokens")
_OUTPUT_TOKENS = ("output_tokens", "outputtokens", "completion_tokens", "completiontokens")


class ShapedCall(Convention):
    """The reader of a span this phase found to be a model call. Not a row of the table:
    the walk asks the table first, and only the spans it leaves are looked at."""

    name = "model call by its shape"

    def model_call(self, span: SpanView) -> Extraction:
        extraction = Extraction()
        extraction.model = _model(span.attributes)
        extraction.usage = _usage(span.attributes)
        return extraction  # (the content: `infer_content`, as for every call read without)


SHAPED = ShapedCall()


def add_shaped_calls(
    spans: list[SpanRecord],
    readings: dict[str, tuple[SpanView, Convention, str]],
    memo: ConversionMemo,
) -> None:
    """Add a MODEL_CALL reading (`SHAPED`) for each span of `spans` (one trace's) that no
    row claims and that is shaped like a model call (see the module's docstring)."""
    candidates = [
        span for span in spans if span.span_id not in readings and _holds_a_call(span.attributes)
    ]
    if not candidates:
        return
    children: dict[str, list[SpanRecord]] = {}
    for span in spans:
        if span.parent_id is not None:
            children.setdefault(span.parent_id, []).append(span)
    answered = [
        span
        for span in candidates
        if _counts_tokens(span.attributes)
        or any(_is_http_client(child) for child in children.get(span.span_id, ()))
    ]
    calls = {s for s, r in readings.items() if r[2] is Kind.MODEL_CALL}
    calls.update(span.span_id for span in answered)
    by_id = {span.span_id: span for span in spans}
    around_calls: set[str] = set()  # the spans with a model call below them
    for span_id in calls:
        parent_id = by_id[span_id].parent_id if span_id in by_id else None
        while parent_id and parent_id not in around_calls and parent_id in by_id:
            around_calls.add(parent_id)
            parent_id = by_id[parent_id].parent_id
    for span in answered:
        if span.span_id not in around_calls:
            readings[span.span_id] = (SpanView(span, memo), SHAPED, Kind.MODEL_CALL)


def _holds_a_call(attributes: Mapping[str, Any]) -> bool:
    """Whether the span's attributes hold chat messages and an answer."""
    inputs, answer = read_shape(attributes)
    return bool(inputs) and answer is not None and bool(answer[0] or answer[1])


def _counts_tokens(attributes: Mapping[str, Any]) -> bool:
    for key, value in attributes.items():
        if isinstance(value, int) and not isinstance(value, bool):
            if _SEGMENTS.split(key)[-1].lower().endswith("tokens"):
                return True
        elif isinstance(value, str) and len(value) <= SIZE_CAP:
            if _usage_of(key, value) is not None:
                return True
    return False


def _usage_of(key: str, value: str) -> Mapping[str, Any] | None:
    """The token counts a text value holds: a JSON value's `usage` object, or the value of
    a key whose last segment is `usage` (LiteLLM's `llm.openai.usage`, a Python literal)."""
    if '"usage"' in value:
        return _usage_object(value)
    # (cheap tests first: this runs for every text attribute of a span no row claims)
    if (
        value[:1] == "{"
        and key[-5:].lower() == "usage"
        and _SEGMENTS.split(key)[-1].lower() == "usage"
    ):
        found = _json_or_literal(value)
        return found if _counts(found) else None
    return None


def _json_or_literal(raw: str) -> Any:
    try:
        return _json.loads(raw)
    except (ValueError, RecursionError):
        return python_literal(raw)


def _counts(found: Any) -> bool:
    return isinstance(found, Mapping) and any(
        isinstance(v, int) and not isinstance(v, bool) and str(k).lower().endswith("tokens")
        for k, v in found.items()
    )


def _usage_object(raw: str) -> Mapping[str, Any] | None:
    """The `usage` object of a JSON value that counts tokens, or None."""
    try:
        value = _json.loads(raw)
    except (ValueError, RecursionError):
        return None
    found = value.get("usage") if isinstance(value, Mapping) else None
    return found if _counts(found) else None


def _is_http_client(span: SpanRecord) -> bool:
    return span.kind == "CLIENT" and any(
        key.startswith(("http.", "url.")) for key in span.attributes
    )


def _model(attributes: Mapping[str, Any]) -> str | None:
    for key, value in attributes.items():
        if _SEGMENTS.split(key)[-1].lower() in _MODEL_SEGMENTS:
            text = as_str(value)
            if text and len(text) <= 200 and "\n" not in text:
                return text
    return None


def _usage(attributes: Mapping[str, Any]) -> TokenUsage | None:
    counts: dict[str, int] = {}
    for key, value in attributes.items():
        if isinstance(value, int) and not isinstance(value, bool):
            counts.setdefault(_SEGMENTS.split(key)[-1].lower().replace(".", "_"), value)
        elif isinstance(value, str) and len(value) <= SIZE_CAP:
            found = _usage_of(key, value)
            if found is not None:
                for k, v in found.items():
                    if isinstance(v, int):
                        counts.setdefault(k.lower(), v)
    input_tokens = next((counts[k] for k in _INPUT_TOKENS if k in counts), None)
    output_tokens = next((counts[k] for k in _OUTPUT_TOKENS if k in counts), None)
    if input_tokens is None and output_tokens is None:
        return None
    total = next((counts[k] for k in ("total_tokens", "totaltokens") if k in counts), None)
    input_tokens, output_tokens = input_tokens or 0, output_tokens or 0
    return build(
        TokenUsage,
        {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": total if total is not None else input_tokens + output_tokens,
        },
    )
