"""GenAI semconv's usual-shape reading of message parts gives exactly what
`parts_message` gives, and its warnings still name the span and the key. Random inputs
are seeded, so a failure reproduces."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tracejudge import semconv
from tracejudge.convert import _common
from tracejudge.convert._records import SpanRecord
from tracejudge.convert.conventions.formats import genai_semconv

SEED = 20261201


def _span(attrs: dict[str, Any]) -> SpanRecord:
    return SpanRecord(trace_id="t", span_id="s", parent_id=None, name="chat", attributes=attrs)


PARTS: list[Any] = [
    {"type": "text", "content": "hi"},
    {"type": "text", "content": ""},
    {"type": "text", "text": "as text"},
    {"type": "text", "content": None, "text": "fallback"},
    {"type": "text", "content": ["a", {"text": "b"}]},
    {"type": "tool_call", "id": "call_1", "name": "search", "arguments": {"q": "x"}},
    {"type": "tool_call", "name": None, "arguments": '{"q": 1}'},
    {"type": "tool_call", "id": 5, "arguments": None},
    {"type": "tool_call_response", "id": "call_1", "response": {"ok": True}},
    {"type": "tool_call_response", "id": "call_2", "result": "sunny"},
    {"type": "tool_call_response", "response": [{"type": "text", "text": "block"}]},
    {"type": "tool_call_response", "response": [1, 2]},
    {"type": "reasoning", "content": "thinking"},
    {"type": "refusal", "content": "no"},
    {"type": "uri", "modality": "image"},
    {"type": "blob"},
    {"type": "Text", "content": "odd case"},
    {"content": "no type"},
    "a bare string",
    None,
    7,
]
ROLES: list[Any] = ["user", "assistant", "tool", "system", "USER", "", None, 3]


def test_usual_message_parts_read_as_parts_message_reads_them() -> None:
    rng = random.Random(SEED)
    usual = 0
    for _ in range(3000):
        message: dict[str, Any] = {"role": rng.choice(ROLES)}
        if rng.random() < 0.9:
            message["parts"] = rng.sample(PARTS, rng.randint(0, 3))
        if rng.random() < 0.2:
            message["tool_call_id"] = "call_9"
        parts = genai_semconv._usual_parts(message)
        if parts is not None:
            usual += 1
            assert parts == _common.parts_message(message, "span", []), message
    assert usual > 300


@pytest.mark.parametrize(
    ("role", "parts"),
    [
        ("user", [{"type": "text", "content": "hi"}]),
        ("assistant", [{"type": "tool_call", "id": "c", "name": "n", "arguments": {}}] * 2),
        ("tool", [{"type": "tool_call_response", "id": "c", "response": "r"}]),
        ("assistant", [{"type": "text", "content": "a"}, {"type": "tool_call", "id": "c"}]),
    ],
)
def test_the_messages_instrumentations_write_take_the_shortcut(role: str, parts: list[Any]) -> None:
    message = {"role": role, "parts": parts}
    assert genai_semconv._usual_parts(message) == _common.parts_message(message, "span", [])


def test_an_unreadable_message_list_warns_naming_the_span_and_key() -> None:
    attrs = {semconv.GEN_AI_INPUT_MESSAGES: '[{"role": "user"', semconv.GEN_AI_OUTPUT_MESSAGES: 5}
    extraction = genai_semconv.extract(_span(attrs))
    assert extraction.warnings == [
        f"span 'chat' (s) {semconv.GEN_AI_INPUT_MESSAGES}: not JSON "
        "(Expecting ',' delimiter at 16); skipped",
        f"span 'chat' (s) {semconv.GEN_AI_OUTPUT_MESSAGES}: expected a list of messages; skipped",
    ]


def test_a_message_list_written_as_text_is_its_messages() -> None:
    """Not JSON at all (no `[` or `{`): the input's `role: text` lines, the output's text
    as the answer, with no warning (OpenLIT's plain-text instrumentations write these)."""
    attrs = {
        semconv.GEN_AI_INPUT_MESSAGES: "system: Be brief.\nuser: Add 2 and 3.\nShow the sum.",
        semconv.GEN_AI_OUTPUT_MESSAGES: "5",
    }
    extraction = genai_semconv.extract(_span(attrs))
    assert extraction.warnings == []
    assert [(m.role, m.content) for m in extraction.inputs] == [
        ("system", "Be brief."),
        ("user", "Add 2 and 3.\nShow the sum."),
    ]
    assert [m.content for m in extraction.outputs] == ["5"]


def test_a_message_that_is_no_object_is_skipped_not_the_whole_call() -> None:
    """A number among the input messages: the call is still read (the other messages and
    the answer), the number skipped with a warning; it is not "unreadable" as a whole."""
    attrs = {
        semconv.GEN_AI_INPUT_MESSAGES: '[5, {"role": "user", "parts": '
        '[{"type": "text", "content": "Add 2 and 3."}]}]',
        semconv.GEN_AI_OUTPUT_MESSAGES: '[{"role": "assistant", "parts": '
        '[{"type": "text", "content": "5"}]}]',
    }
    extraction = genai_semconv.extract(_span(attrs))
    assert [(m.role, m.content) for m in extraction.inputs][-1] == ("user", "Add 2 and 3.")
    assert [m.content for m in extraction.outputs] == ["5"]
