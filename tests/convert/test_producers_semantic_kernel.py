"""Semantic Kernel: its spans and the log records that hold its messages, as recorded live
(tests/fixtures/frameworks/semantic_kernel*: programs_sk.py with its diagnostics on).

The generic checks are in test_frameworks (with the log records; content off: its
warning); here: the tools its agent spans offer, its finish reasons, what a trace says
when only the spans are given, and the message as JSON text in span events (.NET).
"""

from __future__ import annotations

import dataclasses
import json

from tests.convert.test_frameworks import FIXTURES, converted
from tracejudge import semconv
from tracejudge.convert import SpanRecord, traces_from_otlp, traces_from_records
from tracejudge.convert._otlp import decode, decode_logs
from tracejudge.convert._records import EventRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Kind, classify
from tracejudge.convert.conventions.semantic_kernel import SEMANTIC_KERNEL
from tracejudge.models import MultiAgentTrace

SENSITIVE = "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true"


def test_its_spans_are_its_own_and_its_agents_offer_their_plugins() -> None:
    records, _, _ = decode((FIXTURES / "semantic_kernel.pb").read_bytes())
    kinds: dict[str, list[str]] = {}
    for record in records:
        found = classify(SpanView(record))
        assert found is not None and found[0] is SEMANTIC_KERNEL, record.name
        kinds.setdefault(found[1], []).append(record.name)
    assert sorted(kinds[Kind.AGENT]) == ["invoke_agent lead", "invoke_agent weather_agent"]
    assert kinds[Kind.STEP] == ["AutoFunctionInvocationLoop"] * 2
    assert len(kinds[Kind.MODEL_CALL]) == 4 and len(kinds[Kind.TOOL_RUN]) == 2

    trace = converted("semantic_kernel")
    offered = {
        agent.name: {
            tool.name for call in agent.llm_interactions for tool in call.tools_available or []
        }
        for agent in trace.iter_agents()
    }
    assert offered == {
        "lead": {"weather_agent-weather_agent"},
        "weather_agent": {"WeatherPlugin-get_weather"},
    }
    reasons = [
        call.finish_reason for agent in trace.iter_agents() for call in agent.llm_interactions
    ]
    assert reasons == ["tool_calls", "stop", "tool_calls", "stop"]


def test_without_its_log_records_each_call_says_where_the_messages_are() -> None:
    """With content on, the messages are log records only: given the spans alone, the
    trace keeps the calls (usage, finish reasons from the span) and says what to give."""
    (trace,) = [
        t for t in traces_from_otlp(FIXTURES / "semantic_kernel.pb") if t.has_llm_interactions
    ]
    calls = [call for agent in trace.iter_agents() for call in agent.llm_interactions]
    assert len(calls) == 4 and all(not call.input_messages for call in calls)
    assert [call.finish_reason for call in calls] == ["tool_calls", "stop", "tool_calls", "stop"]
    assert len(trace.warnings) == 4
    for warning in trace.warnings:
        assert "semantic_kernel.utils.telemetry.model_diagnostics" in warning
        assert SENSITIVE in warning and "logs=" in warning and "LoggingHandler" in warning
    # Its agents' answers are on their spans all the same.
    assert trace.final_output == "The weather agent says: sunny and 22 C in Paris."


def _as_dotnet_span_events(name: str) -> list[SpanRecord]:
    """The recording as Semantic Kernel .NET writes the same run: each message a span
    event of the model-call span, its body JSON text in `gen_ai.event.content`
    (ModelDiagnostics.cs `AttachSensitiveDataAsEvent`: events cannot hold maps), and the
    finish reasons as `["ToolCalls"]`."""
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    placed, _ = decode_logs((FIXTURES / f"{name}.logs.pb").read_bytes())
    events: dict[str, list[EventRecord]] = {}
    for _, span_id, event in placed:
        if event.name.startswith("gen_ai."):
            attributes = {semconv.GEN_AI_EVENT_CONTENT: event.body, semconv.GEN_AI_SYSTEM: "openai"}
            events.setdefault(span_id, []).append(EventRecord(event.name, event.time, attributes))
    dotnet = {"FinishReason.TOOL_CALLS": '["ToolCalls"]', "FinishReason.STOP": '["Stop"]'}
    spans = []
    for record in records:
        attributes = dict(record.attributes)
        reason = attributes.get(semconv.SEMANTIC_KERNEL_FINISH_REASON)
        if reason is not None:
            attributes[semconv.SEMANTIC_KERNEL_FINISH_REASON] = dotnet[reason]
        spans.append(
            dataclasses.replace(
                record, attributes=attributes, events=events.get(record.span_id, [])
            )
        )
    return spans


def test_dotnet_s_messages_as_json_text_in_span_events_are_read() -> None:
    spans = _as_dotnet_span_events("semantic_kernel")
    (trace,) = [t for t in traces_from_records(spans) if t.has_llm_interactions]
    expected: MultiAgentTrace = converted("semantic_kernel")
    assert trace.warnings == []
    assert trace.to_wire() == expected.to_wire()
    # Without the messages, the finish reasons come from the span.
    for span in spans:
        span.events.clear()
    (bare,) = [t for t in traces_from_records(spans) if t.has_llm_interactions]
    reasons = [
        call.finish_reason for agent in bare.iter_agents() for call in agent.llm_interactions
    ]
    assert reasons == ["tool_calls", "stop", "tool_calls", "stop"]


def test_a_choice_whose_message_is_json_text_is_its_answer() -> None:
    """A `gen_ai.choice` span event with the message as JSON text in a `message`
    attribute (a map cannot be an attribute) gives the answer, not nothing."""
    message = json.dumps({"role": "assistant", "content": "Sunny."})
    span = SpanRecord(
        trace_id="t",
        span_id="s",
        parent_id=None,
        name="chat m",
        attributes={semconv.GEN_AI_OPERATION_NAME: "chat", semconv.GEN_AI_REQUEST_MODEL: "m"},
        events=[
            EventRecord("gen_ai.user.message", 1.0, {"content": "Weather?"}),
            EventRecord(
                "gen_ai.choice", 2.0, {"index": 0, "message": message, "finish_reason": "stop"}
            ),
        ],
        start_ns=1,
        end_ns=2,
    )
    (trace,) = traces_from_records([span])
    (call,) = trace.root.llm_interactions
    assert call.output_text == "Sunny." and call.finish_reason == "stop"
    assert trace.warnings == []


def test_content_off_keeps_agents_calls_and_tools_and_names_the_switch() -> None:
    """Diagnostics without `_SENSITIVE`: agents, calls, the tools offered and the tool
    calls (from their execute_tool spans, without arguments) stay; each call's warning
    names Semantic Kernel's scope and the switch."""
    trace = converted("semantic_kernel_no_content")
    rows = [(a.name, len(a.llm_interactions)) for a in trace.iter_agents()]
    assert rows == [("lead", 2), ("weather_agent", 2)]
    calls = [c for a in trace.iter_agents() for c in a.llm_interactions]
    assert all(not c.input_messages for c in calls)
    assert [c.tool_calls[0].name for c in calls if c.tool_calls] == [
        "weather_agent-weather_agent",
        "WeatherPlugin-get_weather",
    ]
    assert all(c.tools_available for c in calls)
    assert len(trace.warnings) == 4
    for warning in trace.warnings:
        assert "no message content recorded by semantic_kernel.utils.telemetry" in warning
        assert SENSITIVE in warning


def test_a_streamed_answer_is_one_answer() -> None:
    """`invoke_stream`: Semantic Kernel joins a choice's chunks before it logs the
    `gen_ai.choice` record, so each streamed call holds one whole answer."""
    trace = converted("semantic_kernel_stream")
    lead = next(a for a in trace.iter_agents() if a.name == "lead")
    first, last = lead.llm_interactions
    assert [o.type for o in first.output_messages] == ["tool_call"]
    assert [o.content for o in last.output_messages] == [trace.final_output]
    assert last.usage is not None and last.usage.total_tokens == 45
