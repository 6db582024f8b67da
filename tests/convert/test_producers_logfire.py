"""logfire's LLM instrumentations and the OTel contrib google-genai one, as recorded.

The generic framework tests (test_frameworks.py) check every recording against its
program; these check what is particular to these producers: logfire's streamed
responses (a request span, then a separate log span with the answer) are one call; its
format version 1 (`request_data` / `response_data` / one JSON `events` list) is read as
content; its Agents SDK spans (`Agent run`, `Handoff`, a chat span without
`gen_ai.operation.name`); the Anthropic SDK's own spans inside logfire's count once; the
contrib google-genai instrumentation's streamed chunks are one answer, and with content
capture off the trace says so, naming the instrumentation and the setting.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.convert.test_frameworks import FIXTURES, converted, meta, sdk_spans
from tests.fixtures.frameworks.programs import AGENTS_ANSWER, CITY, WEATHER
from tests.fixtures.frameworks.programs_logfire import LONDON_NOTE, LOOP_ANSWER, PARIS_NOTE, SUMMARY
from tracejudge import semconv
from tracejudge.convert import SpanRecord, traces_from_spans
from tracejudge.convert._otlp import decode
from tracejudge.models import LLMToolResponse, MultiAgentTrace

STREAMED = [
    "logfire_openai_stream",
    "logfire_openai_stream_v1",
    "logfire_openai_responses_stream",
    "logfire_openai_responses_stream_v1",
    "logfire_anthropic_stream",
]
STREAMING_RESPONSE = "streaming response from {request_data[model]!r} took {duration:.2f}s"


def calls_of(trace: MultiAgentTrace) -> list:
    return [i for agent in trace.iter_agents() for i in agent.llm_interactions]


@pytest.mark.parametrize("name", STREAMED)
def test_a_streamed_response_and_its_request_span_are_one_call(name: str) -> None:
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    requests = [r for r in records if r.kind == "CLIENT" and r.scope.startswith("logfire.")]
    responses = [r for r in records if r.name == STREAMING_RESPONSE]
    assert len(requests) == len(responses) == meta(name)["model_calls"] == 2
    trace = converted(name)
    calls = calls_of(trace)
    assert len(calls) == 2  # not four, half of them unanswered
    assert all(call.output_messages for call in calls)
    assert [c.tool_calls[0].name for c in calls[:1]] == ["get_weather"]
    assert trace.final_output == LOOP_ANSWER
    # The call starts with its request span and ends with the log span of its answer.
    for call, request, response in zip(calls, requests, responses, strict=True):
        assert call.start_time == pytest.approx(request.start_ns / 1e9)
        assert call.end_time == pytest.approx(response.end_ns / 1e9)
    assert trace.warnings == []


def test_anthropic_streamed_usage_comes_from_the_response_log_span() -> None:
    calls = calls_of(converted("logfire_anthropic_stream"))
    assert [(c.usage.input_tokens, c.usage.output_tokens) for c in calls] == [(21, 5), (27, 14)]
    assert [c.finish_reason for c in calls] == ["tool_calls", "stop"]


@pytest.mark.parametrize(
    "name", ["logfire_openai_v1", "logfire_openai_responses_v1", "logfire_anthropic_v1"]
)
def test_format_version_1_is_read_as_content(name: str) -> None:
    """`request_data` / `response_data`, and the Responses API's `events` list: the
    content is there, so no 'content capture off' advice."""
    trace = converted(name)
    first, second = calls_of(trace)
    assert [m.role for m in first.input_messages] == ["system", "user"]
    (call,) = first.tool_calls
    # (Anthropic's arguments come wrapped, `{"input": {...}}`: unwrapped)
    assert (call.name, json.loads(call.parameters)) == ("get_weather", {"city": CITY})
    assert first.tools_available and first.tools_available[0].name == "get_weather"
    assert (first.finish_reason, second.finish_reason) == ("tool_calls", "stop")
    results = [m.content for m in second.input_messages if isinstance(m.content, LLMToolResponse)]
    assert [(r.id, r.response) for r in results] == [(call.id, WEATHER)]
    assert trace.final_output == LOOP_ANSWER
    assert trace.warnings == []


@pytest.mark.parametrize(
    "name",
    ["logfire_openai_agents", "logfire_openai_agents_chat", "logfire_openai_agents_stream"],
)
def test_agents_sdk_spans_under_logfire(name: str) -> None:
    """`OpenAI Agents trace` is the run (the root), `Agent run: 'x'` its agents,
    `Handoff: a → b` the hand-off; in Chat Completions mode the model calls are
    `Chat completion with ...` spans without `gen_ai.operation.name`."""
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    chats = [r for r in records if r.name.startswith("Chat completion with")]
    if name.endswith("_chat"):
        assert chats and all(semconv.GEN_AI_OPERATION_NAME not in r.attributes for r in chats)
    trace = converted(name)
    assert trace.root.name == "Agent workflow"
    handoffs = {a.name: a.handoff for a in trace.iter_agents() if a.handoff is not None}
    assert handoffs == {"triage": "weather_specialist"}
    assert trace.final_output == AGENTS_ANSWER
    assert trace.warnings == []


def test_a_pending_span_is_not_read_again() -> None:
    """logfire may send a running span's copy (`logfire.span_type = pending_span`) under
    another span id: it is not a second agent."""
    records, _, _ = decode((FIXTURES / "logfire_openai_agents.pb").read_bytes())
    runs = [r for r in records if r.name == "Agent run: {name!r}"]
    pending = [
        dataclasses.replace(
            run,
            span_id=f"{int(run.span_id, 16) ^ 1:016x}",
            parent_id=run.span_id,
            attributes={**run.attributes, semconv.LOGFIRE_SPAN_TYPE: "pending_span"},
        )
        for run in runs
    ]
    (trace,) = [t for t in traces_from_spans(sdk_spans(records + pending)) if t.root]
    assert sorted(a.name for a in trace.iter_agents()) == [
        "Agent workflow",
        "triage",
        "weather_specialist",
    ]


def test_the_anthropic_sdks_own_spans_inside_logfires_count_once() -> None:
    """With a global tracer provider (logfire sets one) the anthropic SDK records its own
    `anthropic.messages.create` span (no content) inside logfire's request span."""
    for name in ("logfire_anthropic_v1", "logfire_anthropic_stream"):
        records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
        own = [r for r in records if r.name == "anthropic.messages.create"]
        assert len(own) == 2
        assert len(calls_of(converted(name))) == 2


def test_google_genai_streamed_chunks_are_one_answer() -> None:
    records, _, _ = decode((FIXTURES / "google_genai_otel_stream.pb").read_bytes())
    last = max(records, key=lambda r: r.start_ns if r.name.startswith("generate_content") else 0)
    assert len(json.loads(last.attributes[semconv.GEN_AI_OUTPUT_MESSAGES])) > 1  # chunks
    trace = converted("google_genai_otel_stream")
    answer = calls_of(trace)[-1].output_messages
    assert [o.content for o in answer] == [LOOP_ANSWER]
    assert trace.final_output == LOOP_ANSWER


@pytest.mark.parametrize(
    "name", ["google_genai_otel_nocontent", "google_genai_otel_nocontent_composed"]
)
def test_google_genai_without_content_says_so_and_how_to_turn_it_on(name: str) -> None:
    trace = converted(name)
    calls = calls_of(trace)
    assert len(calls) == 2 and all(not c.input_messages and not c.output_messages for c in calls)
    assert all(c.usage is not None for c in calls)  # usage is recorded all the same
    assert len(trace.warnings) == len(calls)
    for warning in trace.warnings:
        assert "no message content recorded" in warning
        assert "opentelemetry.util.genai" in warning
        assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in warning


def test_google_genai_function_calls_without_ids_join_their_results() -> None:
    """The Gemini API sends no function-call ids: the instrumentation names the call and
    its response alike (`get_weather_0`), so the result joins its call."""
    for name in ("google_genai_otel", "logfire_google_genai"):
        first, second = calls_of(converted(name))
        (call,) = first.tool_calls
        results = [
            m.content for m in second.input_messages if isinstance(m.content, LLMToolResponse)
        ]
        assert [r.id for r in results] == [call.id]
        assert WEATHER in results[0].response


def test_an_events_attribute_with_choice_events_is_read() -> None:
    """The `events` shape of logfire's Agents SDK integration before 3.x and of
    pydantic-ai's `event_mode="attributes"` under logfire (pydantic-ai's
    tests/models/test_fallback.py snapshot): the answer is the `gen_ai.choice` events."""
    events = [
        {"content": "hello", "role": "user", "event.name": "gen_ai.user.message"},
        {
            "event.name": "gen_ai.assistant.message",
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {}}}
            ],
        },
        {"event.name": "gen_ai.tool.message", "role": "tool", "id": "c1", "content": "42"},
        {
            "index": 0,
            "message": {"role": "assistant", "content": "success"},
            "event.name": "gen_ai.choice",
        },
    ]
    span = SpanRecord(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        parent_id=None,
        name="chat function:success_response:",
        attributes={
            semconv.GEN_AI_OPERATION_NAME: "chat",
            semconv.LOGFIRE_SPAN_TYPE: "span",
            semconv.GEN_AI_USAGE_INPUT_TOKENS: 51,
            semconv.GEN_AI_USAGE_OUTPUT_TOKENS: 1,
            semconv.LOGFIRE_EVENTS: json.dumps(events),
        },
        start_ns=1,
        end_ns=2,
    )
    (trace,) = traces_from_spans(sdk_spans([span]))
    (call,) = calls_of(trace)
    assert [m.role for m in call.input_messages] == ["user", "assistant", "tool"]
    assert [o.content for o in call.output_messages] == ["success"]
    assert trace.final_output == "success"
    assert trace.warnings == []


@pytest.mark.parametrize(
    "name", ["logfire_openai_parallel_streams", "logfire_openai_parallel_streams_composed"]
)
def test_streams_read_at_once_each_join_their_own_request(name: str) -> None:
    """Two streams open at once: the first response log span comes after both request
    spans started, and joins the request it answers (by its input), not the latest."""
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    requests = sorted(
        (r for r in records if r.name.startswith("Chat Completion")), key=lambda r: r.start_ns
    )
    first_response = min(
        (r for r in records if r.name == STREAMING_RESPONSE), key=lambda r: r.start_ns
    )
    assert requests[1].start_ns < first_response.start_ns  # the streams overlapped
    calls = calls_of(converted(name))
    assert [(c.input_messages[-1].content, c.output_messages[0].content) for c in calls] == [
        ("What is the weather in Paris?", PARIS_NOTE),
        ("What is the weather in London?", LONDON_NOTE),
        (f"Summarise: {PARIS_NOTE} {LONDON_NOTE}", SUMMARY),
    ]
