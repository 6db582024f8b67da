"""The conventions table: every span of every recording is claimed by the row that reads
its producer, and the rules the table adds hold (workflows are root agents, chat roles are
normalised, a model call in no convention the table reads is kept and said so, a call
without content names the setting that turns it on).

Spans of producers tracejudge does not read are made here with the real OpenTelemetry
SDK, as an unknown instrumentation would write them: they stand for no real producer.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.convert._helpers import FIXTURES
from tracejudge import semconv
from tracejudge.convert import traces_from_otlp, traces_from_spans
from tracejudge.convert._otlp import decode
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import (
    GENAI,
    LANGGRAPH,
    LEGACY_OPENLLMETRY,
    TABLE,
    UNRECOGNISED,
    Kind,
    classify,
)
from tracejudge.convert.conventions.openinference import OPENINFERENCE
from tracejudge.convert.conventions.openllmetry import TRACELOOP

_RECORDINGS = sorted(
    [*FIXTURES.glob("*.pb"), *(FIXTURES / "frameworks").glob("*.pb")],
)


def _claims(path: Path) -> Counter[tuple[str, str]]:
    records, _, _ = decode(path.read_bytes())
    found: Counter[tuple[str, str]] = Counter()
    for record in records:
        claimed = classify(SpanView(record))
        if claimed is not None:
            found[(claimed[0].name, claimed[1])] += 1
    return found


def _summaries(path: Path) -> tuple[int, int]:
    """(the recording's spans the catch-all row claims, those of them the walk finds to be
    run summaries, not calls: `_infer_summaries`)."""
    from tracejudge.convert._infer_summaries import drop_run_summaries
    from tracejudge.convert._tree import classify as readings_of

    records, _, _ = decode(path.read_bytes())
    readings = readings_of(records)
    guessed = sum(1 for _, row, _ in readings.values() if row is UNRECOGNISED)
    return guessed, len(drop_run_summaries(records, readings))


def test_every_row_of_the_table_reads_some_recorded_producer() -> None:
    claimed: Counter[tuple[str, str]] = Counter()
    for path in _RECORDINGS:
        if not path.name.endswith(".logs.pb"):
            claimed += _claims(path)
    rows = {name for name, _ in claimed}
    assert rows - {UNRECOGNISED.name} == {c.name for c in TABLE} - {UNRECOGNISED.name}
    # No recorded model call is unknown: the catch-all claims only agents' runs that name
    # their model and total their calls' tokens (OpenLLMetry's Agno `<agent>.agent`), which
    # the walk does not read as calls.
    for path in _RECORDINGS:
        if not path.name.endswith(".logs.pb"):
            guessed, summaries = _summaries(path)
            assert guessed == summaries, path.name
    assert claimed[(LANGGRAPH.name, Kind.AGENT)] > 0
    assert claimed[(OPENINFERENCE.name, Kind.MODEL_CALL)] > 0
    assert claimed[(OPENINFERENCE.name, Kind.HANDOFF)] > 0
    assert claimed[(TRACELOOP.name, Kind.WORKFLOW)] > 0
    assert claimed[(GENAI.name, Kind.TOOL_RUN)] > 0
    assert claimed[(LEGACY_OPENLLMETRY.name, Kind.MODEL_CALL)] > 0


def test_a_span_is_asked_of_the_rows_in_order_and_the_first_answer_wins() -> None:
    # An OpenInference LLM span that carries GenAI messages but none of its own is left to
    # the GenAI row; with its own messages, OpenInference reads it.
    from tracejudge.convert._records import SpanRecord

    both = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_LLM,
        semconv.GEN_AI_INPUT_MESSAGES: '[{"role": "user", "parts": []}]',
    }
    span = SpanRecord("t", "s", None, "ChatCompletion", attributes=both)
    assert classify(SpanView(span)) == (GENAI, Kind.MODEL_CALL)
    own = {**both, f"{semconv.LLM_INPUT_MESSAGES}.0.message.role": "user"}
    span = SpanRecord("t", "s", None, "ChatCompletion", attributes=own)
    assert classify(SpanView(span)) == (OPENINFERENCE, Kind.MODEL_CALL)


# --------------------------------------------------------------------------- made-up producers


@contextmanager
def _tracing() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield provider, exporter
    finally:
        provider.shutdown()


def _agent(provider: TracerProvider, name: str):  # type: ignore[no-untyped-def]
    tracer = provider.get_tracer("acme.agents")
    return tracer.start_as_current_span(
        f"invoke_agent {name}",
        attributes={
            semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT,
            semconv.GEN_AI_AGENT_NAME: name,
        },
    )


def test_a_model_call_in_no_known_convention_is_kept_and_named_once_per_producer() -> None:
    with _tracing() as (provider, exporter):
        llm = provider.get_tracer("acme.llm", "2.1.0")
        with _agent(provider, "planner"):
            for tokens in (11, 13):
                with llm.start_as_current_span(
                    "acme.generate",
                    attributes={
                        semconv.GEN_AI_REQUEST_MODEL: "acme-large",
                        semconv.GEN_AI_USAGE_INPUT_TOKENS: tokens,
                        semconv.GEN_AI_USAGE_OUTPUT_TOKENS: 5,
                        # (JSON of no message shape: nothing the shapes read)
                        "acme.prompt_json": '{"template_id": 7}',
                    },
                ):
                    pass
            # A model name without token counts is no call (a run summary, a config).
            with llm.start_as_current_span(
                "acme.config", attributes={semconv.GEN_AI_REQUEST_MODEL: "acme-large"}
            ):
                pass
        trace = traces_from_spans(exporter.get_finished_spans())[0]
    (planner,) = trace.iter_agents()
    calls = planner.llm_interactions
    assert [(c.model, c.usage.input_tokens, c.usage.output_tokens) for c in calls] == [
        ("acme-large", 11, 5),
        ("acme-large", 13, 5),
    ]
    assert all(not c.input_messages and not c.output_messages for c in calls)
    (warning,) = trace.warnings  # one for the producer, not one per span
    assert warning.startswith("acme.llm: model calls in a span convention tracejudge does not")
    assert "acme.prompt_json" in warning and "tracejudge inspect" in warning
    assert "content capture" not in warning  # the content is there: nothing to turn on


def test_a_call_in_no_known_convention_is_read_by_the_shape_of_its_content() -> None:
    with _tracing() as (provider, exporter):
        llm = provider.get_tracer("acme.llm", "2.1.0")
        with _agent(provider, "planner"):
            with llm.start_as_current_span(
                "acme.generate",
                attributes={
                    semconv.GEN_AI_REQUEST_MODEL: "acme-large",
                    semconv.GEN_AI_USAGE_INPUT_TOKENS: 11,
                    "acme.prompt_json": json.dumps(
                        [
                            {"role": "system", "content": "Be brief."},
                            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                        ]
                    ),
                    "acme.response": json.dumps(
                        {
                            "role": "assistant",
                            "content": [
                                {
                                    "type": "tool_use",
                                    "id": "t1",
                                    "name": "get_weather",
                                    "input": {"city": "Paris"},
                                },
                            ],
                        }
                    ),
                },
            ):
                pass
        trace = traces_from_spans(exporter.get_finished_spans())[0]
    (call,) = trace.root.llm_interactions
    assert [(m.role, m.content) for m in call.input_messages] == [
        ("system", "Be brief."),
        ("user", "Weather?"),
    ]
    (answer,) = call.output_messages
    assert answer.type == "tool_call"
    assert (answer.content.id, answer.content.name) == ("t1", "get_weather")
    assert json.loads(answer.content.parameters) == {"city": "Paris"}
    assert trace.warnings == []  # read: nothing left unread to name


def test_a_call_without_content_names_the_setting_of_its_producer() -> None:
    # The events-mode recordings without their log records: the spans hold no messages.
    trace = traces_from_otlp(FIXTURES / "genai_semconv_events.pb")[0]
    assert trace.warnings
    for warning in trace.warnings:
        assert "no message content recorded by opentelemetry.util.genai" in warning
        assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in warning
        assert "TRACELOOP" not in warning
    trace = traces_from_otlp(FIXTURES / "openllmetry_events.pb")[0]
    assert all("TRACELOOP_TRACE_CONTENT=true" in w for w in trace.warnings)
    # With the log records the content is read, and nothing is said.
    logs = FIXTURES / "openllmetry_events.logs.pb"
    assert traces_from_otlp(FIXTURES / "openllmetry_events.pb", logs=logs)[0].warnings == []


def test_a_workflow_span_is_the_root_agent() -> None:
    with _tracing() as (provider, exporter):
        tracer = provider.get_tracer("acme.workflows")
        with tracer.start_as_current_span(
            "invoke_workflow trip_planner",
            attributes={
                semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_WORKFLOW,
                semconv.GEN_AI_WORKFLOW_NAME: "trip_planner",
            },
        ):
            for name in ("flights", "hotels"):
                with _agent(provider, name), _chat(provider, f"{name} done"):
                    pass
        trace = traces_from_spans(exporter.get_finished_spans())[0]
    assert trace.root.name == "trip_planner"
    assert [trace.agent_instance_by_id[c].name for c in trace.root.child_ids] == [
        "flights",
        "hotels",
    ]
    assert trace.warnings == []


def _chat(provider: TracerProvider, answer: str, roles: tuple[str, ...] = ("user",)):  # type: ignore[no-untyped-def]
    tracer = provider.get_tracer("acme.genai")
    inputs = [{"role": role, "parts": [{"type": "text", "content": role}]} for role in roles]
    outputs = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
    return tracer.start_as_current_span(
        "chat acme",
        attributes={
            semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_CHAT,
            semconv.GEN_AI_REQUEST_MODEL: "acme",
            semconv.GEN_AI_INPUT_MESSAGES: json.dumps(inputs),
            semconv.GEN_AI_OUTPUT_MESSAGES: json.dumps(outputs),
        },
    )


@pytest.mark.parametrize(
    ("recorded", "read"),
    [("developer", "system"), ("model", "assistant"), ("user", "user"), ("system", "system")],
)
def test_chat_roles_of_every_producer_read_as_the_four_chat_roles(recorded: str, read: str) -> None:
    with _tracing() as (provider, exporter):
        with _agent(provider, "a"), _chat(provider, "ok", roles=(recorded, "user")):
            pass
        trace = traces_from_spans(exporter.get_finished_spans())[0]
    (call,) = trace.root.llm_interactions
    assert [m.role for m in call.input_messages] == [read, "user"]
    assert trace.warnings == []


def test_tools_an_agent_span_lists_are_offered_in_its_calls_that_record_none() -> None:
    definitions = [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    ]
    with _tracing() as (provider, exporter):
        tracer = provider.get_tracer("acme.agents")
        with tracer.start_as_current_span(
            "invoke_agent forecaster",
            attributes={
                semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT,
                semconv.GEN_AI_AGENT_NAME: "forecaster",
                semconv.GEN_AI_TOOL_DEFINITIONS: json.dumps(definitions),
            },
        ):
            with _chat(provider, "first"):
                pass
            with _agent(provider, "helper"), _chat(provider, "the helper's"):
                pass
        trace = traces_from_spans(exporter.get_finished_spans())[0]
    (call,) = trace.root.llm_interactions
    assert [t.name for t in call.tools_available or []] == ["get_weather"]
    assert json.loads(call.tools_available[0].parameters)["properties"] == {
        "city": {"type": "string"}
    }
    (helper,) = [a for a in trace.iter_agents() if a.name == "helper"]
    assert helper.llm_interactions[0].tools_available is None  # not the forecaster's call


def test_a_tool_call_seen_only_on_its_tool_span_joins_the_call_that_made_it() -> None:
    with _tracing() as (provider, exporter):
        tracer = provider.get_tracer("acme.genai")
        with _agent(provider, "forecaster"):
            with tracer.start_as_current_span(  # content capture off: no messages
                "chat acme",
                attributes={
                    semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_CHAT,
                    semconv.GEN_AI_REQUEST_MODEL: "acme",
                },
            ):
                pass
            with tracer.start_as_current_span(
                "execute_tool get_weather",
                attributes={
                    semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_EXECUTE_TOOL,
                    semconv.GEN_AI_TOOL_NAME: "get_weather",
                    semconv.GEN_AI_TOOL_CALL_ID: "call_1",
                    semconv.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city": "Paris"}',
                    semconv.GEN_AI_TOOL_CALL_RESULT: "sunny",
                },
            ):
                pass
            with _chat(provider, "It is sunny."):
                pass
        trace = traces_from_spans(exporter.get_finished_spans())[0]
    first, second = trace.root.llm_interactions
    (call,) = first.tool_calls
    assert (call.id, call.name, json.loads(call.parameters)) == (
        "call_1",
        "get_weather",
        {"city": "Paris"},
    )
    assert [(r.id, r.response) for r in first.tool_results or []] == [("call_1", "sunny")]
    assert not second.tool_calls  # the call joined the interaction that made it, only


def test_a_whole_conversation_or_its_events_give_an_unknown_call_its_answer() -> None:
    conversation = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Sunny."},
    ]
    with _tracing() as (provider, exporter):
        llm = provider.get_tracer("acme.llm", "2.1.0")
        with _agent(provider, "planner"):
            usage = {
                semconv.GEN_AI_REQUEST_MODEL: "acme-large",
                semconv.GEN_AI_USAGE_INPUT_TOKENS: 11,
            }
            attributes = {**usage, "acme.events": json.dumps(conversation)}
            with llm.start_as_current_span("acme.generate", attributes=attributes):
                pass
            with llm.start_as_current_span("acme.generate", attributes=usage) as span:
                span.add_event("acme.user.message", {"content": "Weather?"})
                span.add_event("acme.choice", {"message": "Sunny."})
        trace = traces_from_spans(exporter.get_finished_spans())[0]
    for call in trace.root.llm_interactions:
        assert [(m.role, m.content) for m in call.input_messages] == [("user", "Weather?")]
        assert [m.content for m in call.output_messages] == ["Sunny."]
    assert len(trace.root.llm_interactions) == 2
    assert trace.warnings == []
