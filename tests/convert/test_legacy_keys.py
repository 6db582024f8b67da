"""Legacy OpenLLMetry's shortcuts give exactly what the generic readings give: the
one-pass reading of the indexed keys (`_legacy_keys.read`) versus the nested-dict index,
and the key-shape answer of `is_legacy` versus `has_indexed`. Random inputs are seeded,
so a failure reproduces."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tracejudge import semconv
from tracejudge.convert import _common
from tracejudge.convert._memo import ConversionMemo
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions.formats import _legacy_keys, openllmetry

SEED = 20261201
PROMPT, COMPLETION, FUNCTIONS = (
    semconv.GEN_AI_PROMPT,
    semconv.GEN_AI_COMPLETION,
    semconv.LLM_REQUEST_FUNCTIONS,
)

# What OpenLLMetry 0.54 writes, and shapes only the generic reading gets right.
REGULAR_KEYS = [
    f"{PROMPT}.0.role",
    f"{PROMPT}.0.content",
    f"{PROMPT}.1.role",
    f"{PROMPT}.1.content",
    f"{PROMPT}.2.role",
    f"{PROMPT}.2.tool_calls.0.id",
    f"{PROMPT}.2.tool_calls.0.name",
    f"{PROMPT}.2.tool_calls.0.arguments",
    f"{PROMPT}.2.tool_calls.1.id",
    f"{PROMPT}.2.tool_calls.1.name",
    f"{PROMPT}.3.role",
    f"{PROMPT}.3.content",
    f"{PROMPT}.3.tool_call_id",
    f"{PROMPT}.3.name",
    f"{PROMPT}.11.role",
    f"{PROMPT}.11.function_call",
    f"{COMPLETION}.0.role",
    f"{COMPLETION}.0.content",
    f"{COMPLETION}.0.finish_reason",
    f"{COMPLETION}.0.refusal",
    f"{COMPLETION}.0.tool_calls.0.id",
    f"{COMPLETION}.0.tool_calls.0.arguments",
    f"{COMPLETION}.1.content",
    f"{COMPLETION}.99999999999999999999.role",
    f"{FUNCTIONS}.0.name",
    f"{FUNCTIONS}.0.description",
    f"{FUNCTIONS}.0.parameters",
    f"{FUNCTIONS}.2.name",
]
IRREGULAR_KEYS = [
    f"{PROMPT}.0",
    f"{PROMPT}.01.role",
    f"{PROMPT}.1a.role",
    f"{PROMPT}.0.tool_calls",
    f"{PROMPT}.0.tool_calls.0",
    f"{PROMPT}.0.tool_calls.x.name",
    f"{PROMPT}.0.tool_calls.0.function.name",
    f"{PROMPT}.2.content.0",
    f"{PROMPT}.\u0662.role",  # an Arabic-Indic digit: isdigit, not an index
    f"{COMPLETION}.0.function_call.name",
    f"{FUNCTIONS}.0.tool_calls.0.name",
    f"{FUNCTIONS}.0",
]
OTHER_KEYS = [
    f"{PROMPT}.x.role",
    f"{PROMPT}..role",
    PROMPT,
    "gen_ai.prompts.0.role",
    semconv.GEN_AI_REQUEST_MODEL,
    semconv.LLM_REQUEST_TYPE,
    f"{semconv.LLM_INPUT_MESSAGES}.0.message.role",
]
VALUES: list[Any] = [
    "user",
    "assistant",
    "tool",
    "function",
    "",
    None,
    7,
    2.5,
    True,
    ["a", "b"],
    {"name": "kv", "arguments": {"x": 1}},
    "hello",
    '[{"type": "text", "text": "parts"}]',
    '[{"type": "text"',
    '{"type": "object", "properties": {}}',
    "not json",
    "call_1",
    "stop",
    "tool_calls",
]


def _span(attrs: dict[str, Any]) -> SpanRecord:
    return SpanRecord(trace_id="t", span_id="s", parent_id=None, name="chat", attributes=attrs)


def _random_attrs(rng: random.Random, *, irregular: bool) -> dict[str, Any]:
    keys = rng.sample(REGULAR_KEYS, rng.randint(0, len(REGULAR_KEYS)))
    keys += rng.sample(OTHER_KEYS, rng.randint(0, 2))
    if irregular:
        keys += rng.sample(IRREGULAR_KEYS, rng.randint(1, 2))
    rng.shuffle(keys)
    return {key: rng.choice(VALUES) for key in keys}


def _generic(span: SpanRecord, monkeypatch: pytest.MonkeyPatch) -> _common.Extraction:
    with monkeypatch.context() as patch:
        patch.setattr(_legacy_keys, "read", lambda attrs, memo: None)
        return openllmetry.extract_legacy(span)


@pytest.mark.parametrize("irregular", [False, True])
def test_the_one_pass_reading_of_legacy_keys_gives_what_the_index_gives(
    irregular: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(SEED + irregular)
    shortcuts = 0
    for _ in range(400):
        span = _span(_random_attrs(rng, irregular=irregular))
        shortcuts += _legacy_keys.read(span.attributes, ConversionMemo()) is not None
        fast = openllmetry.extract_legacy(span)
        assert fast == _generic(span, monkeypatch), span.attributes
    # Regular keys alone are read in one pass; any irregular one sends the span the
    # generic way.
    assert shortcuts == (0 if irregular else 400)


def test_legacy_tool_calls_and_gaps_are_read_in_index_order() -> None:
    attrs = {
        f"{PROMPT}.10.role": "user",
        f"{PROMPT}.10.content": "last",
        f"{PROMPT}.2.role": "assistant",
        f"{PROMPT}.2.tool_calls.1.id": "call_b",
        f"{PROMPT}.2.tool_calls.1.name": "b",
        f"{PROMPT}.2.tool_calls.0.id": "call_a",
        f"{PROMPT}.2.tool_calls.0.name": "a",
        f"{PROMPT}.0.role": "user",
        f"{PROMPT}.0.content": "first",
    }
    extraction = openllmetry.extract_legacy(_span(attrs))
    assert [
        (i.type, i.content if i.type == "text" else i.content.id) for i in extraction.inputs
    ] == [
        ("text", "first"),
        ("tool_call", "call_a"),
        ("tool_call", "call_b"),
        ("text", "last"),
    ]


def test_is_legacy_answers_what_has_indexed_answers() -> None:
    rng = random.Random(SEED)
    keys = REGULAR_KEYS + IRREGULAR_KEYS + OTHER_KEYS
    memo = ConversionMemo()
    for round_ in range(600):
        if round_ % 150 == 0:
            memo = ConversionMemo()  # as when the remembered shapes are full
        chosen = rng.sample(keys, rng.randint(0, 4))
        chosen += [f"new.key.{rng.randint(0, 50)}"]
        attrs = dict.fromkeys(chosen, "x")
        view = SpanView(_span(attrs))
        expected = any(view.has_indexed(p) for p in (PROMPT, COMPLETION, FUNCTIONS))
        assert openllmetry.is_legacy(SpanView(_span(attrs), memo)) is expected, chosen
