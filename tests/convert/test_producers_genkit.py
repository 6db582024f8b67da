"""Genkit (JavaScript): what its `genkit:*` spans say, as recorded live
(tests/fixtures/frameworks/genkit.*: js/genkit/main.mjs run by node, exported over OTLP).

The generic checks (agents, calls, tool calls, results, answers, three input forms) are
in test_frameworks; here: what each Genkit span is, the tools each call offered, usage,
ids, and Genkit's other response shape (`candidates`, before Genkit 1.0).
"""

from __future__ import annotations

import json

from tests.convert.test_frameworks import FIXTURES, converted, meta
from tracejudge import semconv
from tracejudge.convert import SpanRecord, traces_from_records
from tracejudge.convert._otlp import decode
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Kind, classify
from tracejudge.convert.conventions.genkit import GENKIT


def _records() -> list[SpanRecord]:
    records, _, _ = decode((FIXTURES / "genkit.pb").read_bytes())
    return records


def test_each_genkit_span_is_read_as_what_its_type_says() -> None:
    kinds = {}
    for record in _records():
        found = classify(SpanView(record))
        assert found is not None and found[0] is GENKIT, record.name
        kinds.setdefault(found[1], []).append(record.name)
    assert sorted(kinds[Kind.AGENT]) == ["lead", "weather_agent"]  # the flow, the prompt run
    assert kinds[Kind.MODEL_CALL] == ["scripted/scripted-model"] * 4
    assert sorted(kinds[Kind.TOOL_RUN]) == ["ask_weather_agent", "get_weather"]
    assert sorted(set(kinds[Kind.STEP])) == ["generate", "render"]  # the loop, the template
    assert meta("genkit")["versions"]["genkit"] == "1.42.0"


def test_calls_offer_their_tools_with_ids_usage_and_roles() -> None:
    trace = converted("genkit")
    by_name = {agent.name: agent for agent in trace.iter_agents()}
    lead, weather = by_name["lead"], by_name["weather_agent"]
    assert by_name["weather_agent"].id in lead.child_ids
    for agent, tool, schema_key in (
        (lead, "ask_weather_agent", "question"),
        (weather, "get_weather", "city"),
    ):
        for call in agent.llm_interactions:
            (offered,) = call.tools_available or []
            assert offered.name == tool
            assert schema_key in json.loads(offered.parameters)["properties"]
            assert call.model == "scripted/scripted-model"
            assert call.usage is not None and call.usage.total_tokens > 0
    first, second = weather.llm_interactions
    (request,) = first.tool_calls
    assert (request.id, request.name, json.loads(request.parameters)) == (
        "call_weather",
        "get_weather",
        {"city": "Paris"},
    )
    # Genkit's `model` role is the assistant; its `tool` message the call's result.
    assert [m.role for m in second.input_messages] == ["system", "user", "assistant", "tool"]
    assert second.input_messages[-1].content.response == "Sunny, 22 C in Paris"
    assert (first.usage.input_tokens, first.usage.output_tokens) == (15, 5)  # type: ignore[union-attr]


def test_the_candidates_of_an_older_genkit_response_are_its_choices() -> None:
    """Before Genkit 1.0 a GenerateResponse held `candidates` (each a message with its own
    finishReason), not `message`; a second candidate is an alternative."""
    request = {"messages": [{"role": "user", "content": [{"text": "Hi"}]}]}
    response = {
        "candidates": [
            {
                "index": 0,
                "message": {"role": "model", "content": [{"text": "Hello"}]},
                "finishReason": "stop",
            },
            {
                "index": 1,
                "message": {"role": "model", "content": [{"text": "Hey"}]},
                "finishReason": "length",
            },
        ],
        "usage": {"inputTokens": 3, "outputTokens": 2},
    }
    span = SpanRecord(
        trace_id="t",
        span_id="s",
        parent_id=None,
        name="googleai/gemini-1.5-flash",
        attributes={
            semconv.GENKIT_TYPE: semconv.GENKIT_TYPE_ACTION,
            semconv.GENKIT_SUBTYPE: semconv.GENKIT_SUBTYPE_MODEL,
            semconv.GENKIT_NAME: "googleai/gemini-1.5-flash",
            semconv.GENKIT_INPUT: json.dumps(request),
            semconv.GENKIT_OUTPUT: json.dumps(response),
        },
        start_ns=1,
        end_ns=2,
    )
    (trace,) = traces_from_records([span])
    (call,) = trace.root.llm_interactions
    assert call.output_text == "Hello"
    assert [[o.content for o in choice] for choice in call.alternatives or []] == [["Hey"]]
    assert call.finish_reason == "stop"
    assert call.usage is not None and call.usage.total_tokens == 5
    assert trace.warnings == []


def test_a_flow_s_recorded_output_is_its_answer() -> None:
    """A flow's `genkit:output` (JSON text of what it returned) is its agent's answer,
    even where the flow made it from its model's text."""
    records = _records()
    for record in records:
        if record.attributes.get(semconv.GENKIT_SUBTYPE) == semconv.GENKIT_SUBTYPE_FLOW:
            record.attributes[semconv.GENKIT_OUTPUT] = json.dumps("Forecast: sunny.")
    (trace,) = [t for t in traces_from_records(records) if t.has_llm_interactions]
    assert trace.final_output == "Forecast: sunny."
    weather = next(a for a in trace.iter_agents() if a.name == "weather_agent")
    assert weather.final_output == "It is sunny and 22 C in Paris."  # its model's answer


def test_a_streamed_generate_is_recorded_whole() -> None:
    """`ai.generateStream` (compat-oai streams the request): the model span records the
    whole response (`finalChatCompletion`), so each call holds one answer."""
    trace = converted("genkit_stream")
    lead = next(a for a in trace.iter_agents() if a.name == "lead")
    first, last = lead.llm_interactions
    assert [o.type for o in first.output_messages] == ["tool_call"]
    assert [o.content for o in last.output_messages] == [trace.final_output]
    assert meta("genkit_stream")["options"]["stream"] is True
