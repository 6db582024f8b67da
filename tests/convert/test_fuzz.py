"""Broken input never raises: random and truncated attribute values, random bytes and
text, truncated or corrupted OTLP protobuf and JSON. Input that is not OTLP at all gives
an empty result that says why. Seeded, so a failure reproduces."""

from __future__ import annotations

import copy
import json
import random
import string
from collections.abc import Iterator
from typing import Any

import pytest

from tests.convert._helpers import INSTRUMENTATIONS, fixture
from tracejudge import semconv
from tracejudge.convert import SpanRecord, TraceList, traces_from_otlp, traces_from_spans
from tracejudge.convert._otlp import decode, decode_logs
from tracejudge.convert._records import EventRecord, attach_events

SEED = 20261130
NAMES = [i.name for i in INSTRUMENTATIONS] + [
    "openllmetry_responses",
    "openinference_responses",
    "openllmetry_legacy_responses",
]
INTERESTING_KEYS = [
    semconv.GEN_AI_INPUT_MESSAGES,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    semconv.GEN_AI_SYSTEM_INSTRUCTIONS,
    semconv.GEN_AI_TOOL_DEFINITIONS,
    semconv.GEN_AI_OPERATION_NAME,
    semconv.GEN_AI_AGENT_ID,
    semconv.GEN_AI_AGENT_NAME,
    semconv.GEN_AI_RESPONSE_FINISH_REASONS,
    semconv.GEN_AI_USAGE_INPUT_TOKENS,
    semconv.OPENINFERENCE_SPAN_KIND,
    semconv.INPUT_VALUE,
    semconv.LLM_INVOCATION_PARAMETERS,
    semconv.LLM_TOKEN_COUNT_TOTAL,
    semconv.LLM_REQUEST_TYPE,
    f"{semconv.LLM_INPUT_MESSAGES}.0.message.role",
    f"{semconv.LLM_INPUT_MESSAGES}.0.message.content",
    f"{semconv.LLM_INPUT_MESSAGES}.7.message.tool_calls.0.tool_call.function.arguments",
    f"{semconv.LLM_INPUT_MESSAGES}.x.message.role",
    f"{semconv.LLM_OUTPUT_MESSAGES}.0.message.contents.0.message_content.text",
    f"{semconv.LLM_OUTPUT_MESSAGES}.0.message",
    f"{semconv.LLM_TOOLS}.0.tool.json_schema",
    f"{semconv.GEN_AI_PROMPT}.0.content",
    f"{semconv.GEN_AI_PROMPT}.0.tool_calls.0.arguments",
    f"{semconv.GEN_AI_PROMPT}.0",
    f"{semconv.GEN_AI_COMPLETION}.99999999999999999999.role",
    f"{semconv.GEN_AI_COMPLETION}.0.function_call.name",
    f"{semconv.LLM_REQUEST_FUNCTIONS}.0.parameters",
]
EVENT_NAMES = [
    semconv.EVENT_INFERENCE_DETAILS,
    semconv.EVENT_USER_MESSAGE,
    semconv.EVENT_TOOL_MESSAGE,
    semconv.EVENT_CHOICE,
    semconv.EVENT_CONTENT_PROMPT,
    semconv.EVENT_CONTENT_COMPLETION,
    semconv.EXCEPTION_EVENT,
]
SHAPES = [
    '[{"role": 1, "parts": 5}]',
    '[{"role": "user", "parts": [{"type": "tool_call", "arguments": [1, {"a": null}]}]}]',
    '[{"role": "tool", "parts": [{"type": "tool_call_response", "response": {"x": 1}}]}]',
    '[{"role": "assistant", "parts": [{"type": "uri", "modality": 3}, null, 7, "text"]}]',
    '{"parts": {"type": "text", "content": {"deep": [1, 2]}}}',
    '[{"type": "function", "function": 5}, {"name": null, "parameters": "x"}]',
    '"just a string"',
    "[[[[[]]]]]",
    '{"input": [{"type": "function_call", "id": 1, "call_id": []}]}',
]


@pytest.fixture(autouse=True)
def _no_trace_dropped(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """The converter's last-resort safety net logs a trace it had to drop: that is a bug."""
    caplog.set_level("ERROR", logger="tracejudge.convert")
    yield
    dropped = [r for r in caplog.records if r.name == "tracejudge.convert"]
    assert not dropped, dropped[0].exc_text


def _random_text(rng: random.Random, limit: int = 40) -> str:
    alphabet = string.printable + "\u00e9\u4e2d\U0001f600\x00"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(limit)))


def _random_value(rng: random.Random, original: Any, depth: int = 0) -> Any:
    choice = rng.randrange(13)
    if choice == 0:
        return None
    if choice == 1:
        return _random_text(rng)
    if choice == 2 and isinstance(original, str) and original:
        return original[: rng.randrange(len(original))]
    if choice == 3:
        return rng.randint(-(2**70), 2**70)
    if choice == 4:
        return rng.choice([rng.random() * 1e308, float("nan"), float("inf"), -0.0])
    if choice == 5:
        return rng.random() < 0.5
    if choice == 6 and depth < 3:
        return [_random_value(rng, None, depth + 1) for _ in range(rng.randrange(4))]
    if choice == 7 and depth < 3:
        keys = ["role", "content", "parts", "type", "id", "name", "tool_calls", "message"]
        return {
            rng.choice(keys): _random_value(rng, None, depth + 1) for _ in range(rng.randrange(4))
        }
    if choice == 8:
        return rng.randbytes(rng.randrange(10))
    if choice == 9:
        return rng.choice(SHAPES)
    if choice == 10 and isinstance(original, str) and original:
        chars = list(original)
        for _ in range(rng.randrange(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice('{}[]",:\\x0')
        return "".join(chars)
    return original


def _mutate(rng: random.Random, span: SpanRecord, others: list[SpanRecord]) -> SpanRecord:
    span = copy.copy(span)
    span.attributes = dict(span.attributes)
    span.events = list(span.events)
    for _ in range(rng.randrange(1, 5)):
        if span.attributes and rng.random() < 0.6:
            key = rng.choice(list(span.attributes))
        else:
            key = rng.choice(INTERESTING_KEYS)
        if rng.random() < 0.1:
            span.attributes.pop(key, None)
        else:
            span.attributes[key] = _random_value(rng, span.attributes.get(key))
    roll = rng.random()
    if roll < 0.15:
        attributes = {rng.choice(INTERESTING_KEYS): _random_value(rng, None) for _ in range(3)}
        body = _random_value(rng, None)
        span.events.append(EventRecord(rng.choice(EVENT_NAMES), None, attributes, body))
    elif roll < 0.25:
        span.parent_id = rng.choice([s.span_id for s in others] + [span.span_id, None, "zz"])
    elif roll < 0.3:
        span.start_ns = rng.choice([None, 1, rng.randrange(2**63)])
        span.end_ns = rng.choice([None, span.end_ns])
    elif roll < 0.35:
        span.status = rng.choice(["ERROR", "OK", "bogus"])
        span.status_message = _random_value(rng, None)
    elif roll < 0.38:
        span.trace_id = rng.choice([s.trace_id for s in others] + ["other"])
    elif roll < 0.4:
        span.name = _random_text(rng)
    return span


def _records(name: str) -> list[SpanRecord]:
    spans, events, _ = decode(fixture(name, ".pb").read_bytes())
    if fixture(name, ".logs.pb").exists():
        events = decode_logs(fixture(name, ".logs.pb").read_bytes())[0]
    attach_events(spans, events)
    return spans


def _check(traces: list[Any]) -> None:
    assert isinstance(traces, TraceList)
    if not traces.has_llm_interactions:
        assert traces.warnings  # an empty outcome always says why
    for trace in traces:
        trace.to_json()  # the result must serialise, too
        assert trace.root_agent_instance_id in trace.agent_instance_by_id


def _never_raises(source: bytes | str) -> None:
    _check(traces_from_otlp(source))


def test_random_attribute_values_never_raise() -> None:
    rng = random.Random(SEED)
    corpora = {name: _records(name) for name in NAMES}
    for _ in range(1000):
        spans = list(corpora[rng.choice(NAMES)])
        for _ in range(rng.randrange(1, 4)):
            index = rng.randrange(len(spans))
            spans[index] = _mutate(rng, spans[index], spans)
        if rng.random() < 0.1:
            rng.shuffle(spans)
            spans = spans[: rng.randrange(1, len(spans) + 1)]
        _check(traces_from_spans(spans))


def test_parent_cycles_do_not_lose_agents() -> None:
    spans = [copy.copy(s) for s in _records("openllmetry")]
    agents = [s for s in spans if s.attributes.get(semconv.GEN_AI_OPERATION_NAME) == "invoke_agent"]
    by_name = {s.attributes[semconv.GEN_AI_AGENT_NAME]: s for s in agents}
    by_name["orchestrator"].parent_id = by_name["researcher"].span_id
    (trace,) = traces_from_spans(spans)
    assert {a.name for a in trace.iter_agents()} == {"orchestrator", "researcher", "writer"}
    assert sum(len(a.llm_interactions) for a in trace.iter_agents()) == 6
    assert any("cycle" in w for w in trace.warnings)


@pytest.mark.parametrize("suffix", [".pb", ".jsonl"])
def test_truncated_and_corrupted_otlp_never_raises(suffix: str) -> None:
    rng = random.Random(f"{SEED}{suffix}")
    blobs = [fixture(name, suffix).read_bytes() for name in NAMES]
    for _ in range(400):
        data = bytearray(rng.choice(blobs))
        roll = rng.random()
        if roll < 0.5:
            data = data[: rng.randrange(len(data))]
        elif roll < 0.8:
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            start = rng.randrange(len(data))
            del data[start : start + rng.randrange(1, 200)]
        source: bytes | str = bytes(data)
        if suffix == ".jsonl" and rng.random() < 0.5:
            source = bytes(data).decode("utf-8", errors="replace")
        _never_raises(source)


def test_json_tree_mutations_never_raise() -> None:
    rng = random.Random(SEED + 1)
    documents = [
        [json.loads(line) for line in fixture(name, ".jsonl").read_text().splitlines()]
        for name in NAMES
    ]

    def mutate(node: Any) -> Any:
        if rng.random() < 0.04:
            return _random_value(rng, node)
        if isinstance(node, dict):
            return {k: mutate(v) for k, v in node.items()}
        if isinstance(node, list):
            return [mutate(v) for v in node]
        return node

    for _ in range(300):
        requests = [mutate(request) for request in rng.choice(documents)]
        text = "\n".join(json.dumps(r, default=lambda b: b.hex()) for r in requests)
        _never_raises(text)


def test_random_bytes_and_text_never_raise() -> None:
    rng = random.Random(SEED + 2)
    for _ in range(600):
        roll = rng.random()
        if roll < 0.5:
            source: bytes | str = rng.randbytes(rng.randrange(300))
        elif roll < 0.7:
            source = b"\n" + rng.randbytes(rng.randrange(300))  # the OTLP field 1 tag
        elif roll < 0.9:
            source = "{" + _random_text(rng, 200)
        else:
            source = _random_text(rng, 100)
        _never_raises(source)


def test_deeply_nested_values_never_raise() -> None:
    deep_json = "[" * 100_000 + "]" * 100_000
    spans = [copy.copy(s) for s in _records("openllmetry")]
    for span in spans:
        span.attributes = dict(span.attributes)
        if semconv.GEN_AI_INPUT_MESSAGES in span.attributes:
            span.attributes[semconv.GEN_AI_INPUT_MESSAGES] = deep_json
    (trace,) = traces_from_spans(spans)
    assert any("not readable JSON" in w for w in trace.warnings)

    depth = 3000  # deeper than Python recurses
    value = '{"kvlistValue":{"values":[{"key":"k","value":' * depth
    value += '{"stringValue":"leaf"}' + "}]}}" * depth
    line = fixture("openllmetry", ".jsonl").read_text().splitlines()[0]
    marker = '"attributes":['
    text = line.replace(marker, marker + '{"key":"deep","value":' + value + "},", 1)
    assert text != line
    (trace,) = traces_from_otlp(text)
    assert trace.has_llm_interactions and trace.warnings
    _never_raises(deep_json)
