"""One model call recorded by several instrumentations is one interaction.

The fixtures under `tests/fixtures/replayed/` were recorded by `tests/replay/drive.py`:
real cassettes replayed through the real `openai` and `anthropic` clients, under
OpenLLMetry (whose `anthropic.chat` sits beside the anthropic SDK's own
`anthropic.messages.create`) and under OpenLLMetry and OpenInference composed (whose
spans nest or sit side by side). Variants edit those recorded spans.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.convert._helpers import FIXTURES
from tracejudge import semconv
from tracejudge.convert import SpanRecord, traces_from_otlp, traces_from_spans
from tracejudge.convert._merge import response_id
from tracejudge.convert._otlp import decode
from tracejudge.convert._tree import is_llm_span
from tracejudge.models import MultiAgentTrace

REPLAYED = FIXTURES / "replayed"
ANTHROPIC_SDK_SCOPE = "com.anthropic.sdk.python"


def _recorded(setup: str) -> dict[str, tuple[dict, list[SpanRecord]]]:
    """(cassette, exchange) -> (manifest entry, the trace's span records)."""
    manifest = json.loads((REPLAYED / f"{setup}.json").read_text())
    records, _, warnings = decode(
        (REPLAYED / f"{setup}.jsonl").read_bytes(), max_inflated_bytes=1 << 30
    )
    assert warnings == []
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in records:
        by_trace.setdefault(record.trace_id, []).append(record)
    return {
        f"{entry['cassette']}#{entry['index']}": (entry, by_trace[trace_id])
        for trace_id, entry in manifest.items()
    }


def _one(records: list[SpanRecord]) -> MultiAgentTrace:
    (trace,) = traces_from_spans(records)
    return trace


def _calls(trace: MultiAgentTrace) -> list:
    return [i for agent in trace.iter_agents() for i in agent.llm_interactions]


def _model_spans(records: list[SpanRecord]) -> list[SpanRecord]:
    return [r for r in records if is_llm_span(r)]


@pytest.mark.parametrize("setup", ["composed", "openllmetry"])
def test_every_replayed_call_is_one_interaction_without_warnings(setup: str) -> None:
    for key, (entry, records) in _recorded(setup).items():
        spans = _model_spans(records)
        assert len({s.scope for s in spans}) >= 2, key  # really recorded twice or more
        trace = _one(records)
        (call,) = _calls(trace)
        assert trace.warnings == [], key
        if "error" in entry:
            assert call.error and "404" in call.error, key
            continue
        assert call.output_messages, key
        assert call.usage is not None and call.model, key


def test_anthropic_sdk_span_beside_openllmetry_keeps_content_and_usage_once() -> None:
    entry, records = _recorded("openllmetry")["openllmetry-anthropic-create.yaml#0"]
    names = sorted(s.name for s in _model_spans(records))
    assert names == ["anthropic.chat", "anthropic.messages.create"]
    (call,) = _calls(_one(records))
    # The recorded response: 17 input and 220 output tokens.
    assert (call.usage.input_tokens, call.usage.output_tokens) == (17, 220)
    assert call.usage.total_tokens == 237
    assert call.output_text.startswith("Sure, here's a joke about OpenTelemetry")
    assert call.input_messages[0].content == "Tell me a joke about OpenTelemetry"


def test_streamed_tool_calls_of_two_records_stay_one_call() -> None:
    _, records = _recorded("openllmetry")["openllmetry-anthropic-tools-stream.yaml#0"]
    (call,) = _calls(_one(records))
    assert [c.name for c in call.tool_calls] == ["get_weather", "get_time"]
    assert all(c.id.startswith("toolu_") for c in call.tool_calls)


def test_composed_nesting_takes_what_each_record_has() -> None:
    _, records = _recorded("composed")["openllmetry-chat-tools.yaml#0"]
    expected = _calls(_one(records))[0]
    # Take the answer and usage away from the outer record: the inner one fills them.
    outer = next(r for r in records if r.name == "openai.chat")
    for key in list(outer.attributes):
        if key.startswith(("gen_ai.output", "gen_ai.usage", "gen_ai.response")):
            del outer.attributes[key]
    (call,) = _calls(_one(records))

    def calls(interaction: object) -> list:
        return [(c.id, c.name, c.arguments()) for c in interaction.tool_calls]

    assert calls(call) == calls(expected) and calls(call)
    assert call.usage == expected.usage
    assert call.input_messages == expected.input_messages


def test_openinference_response_id_is_read_from_the_raw_response() -> None:
    _, records = _recorded("composed")["openllmetry-chat-tools.yaml#0"]
    inner = next(r for r in records if r.name == "ChatCompletion")
    assert semconv.GEN_AI_RESPONSE_ID not in inner.attributes
    assert response_id(inner) == "chatcmpl-9Xtj3KivtcjzP9VpvgQkC1HznIlOj"


def _anthropic_siblings() -> list[SpanRecord]:
    _, records = _recorded("openllmetry")["openllmetry-anthropic-create.yaml#0"]
    records = copy.deepcopy(records)
    spans = _model_spans(records)
    assert spans[0].parent_id == spans[1].parent_id  # side by side, not nested
    return records


def _strip_ids(records: list[SpanRecord]) -> None:
    for record in records:
        record.attributes.pop(semconv.GEN_AI_RESPONSE_ID, None)


def test_without_response_ids_model_and_time_decide() -> None:
    records = _anthropic_siblings()
    _strip_ids(records)
    (call,) = _calls(_one(records))
    assert call.usage.total_tokens == 237


def test_different_models_are_different_calls() -> None:
    records = _anthropic_siblings()
    _strip_ids(records)
    sdk = next(r for r in records if r.scope == ANTHROPIC_SDK_SCOPE)
    for key in (semconv.GEN_AI_REQUEST_MODEL, semconv.GEN_AI_RESPONSE_MODEL):
        sdk.attributes[key] = "claude-3-haiku-20240307"
    assert len(_calls(_one(records))) == 2


def test_calls_apart_in_time_are_different_calls() -> None:
    records = _anthropic_siblings()
    _strip_ids(records)
    sdk = next(r for r in records if r.scope == ANTHROPIC_SDK_SCOPE)
    assert sdk.start_ns is not None and sdk.end_ns is not None
    shift = 10 * (sdk.end_ns - sdk.start_ns) + 1
    sdk.start_ns, sdk.end_ns = sdk.start_ns + shift, sdk.end_ns + shift
    assert len(_calls(_one(records))) == 2


def test_one_instrumentation_never_records_one_call_twice_side_by_side() -> None:
    records = _anthropic_siblings()
    _strip_ids(records)
    for record in records:
        record.scope = "one.scope"
    assert len(_calls(_one(records))) == 2


def test_different_response_ids_are_different_calls() -> None:
    records = _anthropic_siblings()
    sdk = next(r for r in records if r.scope == ANTHROPIC_SDK_SCOPE)
    sdk.attributes[semconv.GEN_AI_RESPONSE_ID] = "msg_other"
    assert len(_calls(_one(records))) == 2


def test_scopes_survive_otlp_json(tmp_path: Path) -> None:
    (trace,) = [
        t
        for t in traces_from_otlp(REPLAYED / "openllmetry.jsonl")
        if _calls(t)[0].output_text.startswith("Sure")
    ]
    assert len(_calls(trace)) == 1 and trace.warnings == []
