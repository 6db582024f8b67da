"""OpenLIT: its `@openlit.trace` spans and its model calls, as recorded live
(tests/fixtures/frameworks/openlit*: programs_openlit.py under `openlit.init()`).

The generic checks are in test_frameworks (content off: its warning); here: which spans
are agents, the `role: text` prompts of its Together spans (in attributes, and in the
`gen_ai.content.*` span events older OpenLIT wrote them to), and its enum finish reasons.
"""

from __future__ import annotations

import dataclasses

from tests.convert.test_frameworks import FIXTURES, converted
from tracejudge import semconv
from tracejudge.convert import SpanRecord, traces_from_records
from tracejudge.convert._otlp import decode
from tracejudge.convert._records import EventRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Kind, classify
from tracejudge.convert.conventions.formats.genai_semconv import role_lines
from tracejudge.convert.conventions.openlit import OPENLIT


def _records(name: str) -> list[SpanRecord]:
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    return records


def test_traced_functions_are_the_agents_and_http_spans_are_nobody_s() -> None:
    claimed = {}
    for record in _records("openlit"):
        found = classify(SpanView(record))
        if found is not None:
            assert found[0] is OPENLIT, record.name
            claimed.setdefault(found[1], []).append(record.name)
        else:
            assert record.scope == "opentelemetry.instrumentation.httpx"  # openlit.init's too
    assert sorted(claimed[Kind.AGENT]) == ["lead", "weather_agent"]
    assert claimed[Kind.MODEL_CALL] == ["chat scripted-model"] * 4
    assert set(claimed) == {Kind.AGENT, Kind.MODEL_CALL}


def test_role_text_prompts_are_messages_and_enum_finish_reasons_openai_s() -> None:
    trace = converted("openlit_together")
    researcher = next(a for a in trace.iter_agents() if a.name == "researcher")
    (call,) = researcher.llm_interactions
    assert [(m.role, m.content) for m in call.input_messages] == [
        ("system", "You research facts."),
        ("user", "What is the weather in Paris?"),
    ]
    assert call.output_text == "Paris is sunny today."
    assert call.finish_reason == "stop"  # recorded as `FinishReason.StopSequence`
    assert call.usage is not None and (call.usage.input_tokens, call.usage.output_tokens) == (12, 6)


def test_the_prompt_and_completion_events_alone_are_read_the_same() -> None:
    """Older OpenLIT wrote the content only in span events, `gen_ai.content.prompt` /
    `gen_ai.content.completion` with `gen_ai.prompt` / `gen_ai.completion` attributes."""
    keys = {semconv.GEN_AI_INPUT_MESSAGES: semconv.GEN_AI_PROMPT}
    keys[semconv.GEN_AI_OUTPUT_MESSAGES] = semconv.GEN_AI_COMPLETION
    older = []
    for record in _records("openlit_together"):
        if not (record.scope or "").startswith("openlit.instrumentation."):
            older.append(record)  # (the traced functions keep their return value)
            continue
        attributes = {k: v for k, v in record.attributes.items() if k not in keys}
        events = [
            EventRecord(
                name=event.name,
                time=event.time,
                attributes={keys.get(k, k): v for k, v in event.attributes.items()},
            )
            for event in record.events
        ]
        older.append(dataclasses.replace(record, attributes=attributes, events=events))
    now = converted("openlit_together")
    (then,) = traces_from_records(older)
    assert then.to_wire() == now.to_wire()
    assert then.warnings == []


def test_role_lines_continue_a_message_over_several_lines() -> None:
    text = "system: Be brief.\nuser: Two lines:\nfirst\nsecond\nchatbot: ok"
    assert role_lines(text) == [
        ("system", "Be brief."),
        ("user", "Two lines:\nfirst\nsecond"),
        ("assistant", "ok"),
    ]
    assert role_lines("no role here") == [("user", "no role here")]


def test_a_first_tool_call_on_a_role_text_span_is_its_call() -> None:
    """OpenLIT's role-text spans name the model's first tool call in attributes."""
    span = SpanRecord(
        trace_id="t",
        span_id="s",
        parent_id=None,
        name="chat m",
        scope="openlit.instrumentation.together",
        attributes={
            semconv.GEN_AI_OPERATION_NAME: "chat",
            semconv.GEN_AI_REQUEST_MODEL: "m",
            semconv.GEN_AI_INPUT_MESSAGES: "user: weather in Paris?",
            semconv.GEN_AI_OUTPUT_MESSAGES: "",
            semconv.GEN_AI_TOOL_NAME: "get_weather",
            semconv.GEN_AI_TOOL_CALL_ID: "call_1",
            semconv.OPENLIT_TOOL_ARGS: '{"city": "Paris"}',
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("FinishReason.ToolCalls",),
            semconv.OPENLIT_USAGE_COST: 0.0,
        },
        start_ns=1,
        end_ns=2,
    )
    (trace,) = traces_from_records([span])
    (call,) = trace.root.llm_interactions
    (tool_call,) = call.tool_calls
    assert (tool_call.id, tool_call.name, tool_call.parameters) == (
        "call_1",
        "get_weather",
        '{"city": "Paris"}',
    )
    assert call.finish_reason == "tool_calls"
    assert trace.warnings == []


def test_content_off_keeps_agents_and_calls_and_names_the_switch() -> None:
    """`openlit.init(capture_message_content=False)`: agents, calls, usage and finish
    reasons stay; each call's warning names OpenLIT's scope and the switch."""
    trace = converted("openlit_no_content")
    rows = [(a.name, len(a.llm_interactions)) for a in trace.iter_agents()]
    assert rows == [("lead", 2), ("weather_agent", 2)]
    calls = [c for a in trace.iter_agents() for c in a.llm_interactions]
    assert all(not c.input_messages and not c.output_messages for c in calls)
    assert [c.finish_reason for c in calls] == ["tool_calls", "stop", "tool_calls", "stop"]
    assert len(trace.warnings) == 4
    for warning in trace.warnings:
        assert "no message content recorded by openlit.instrumentation.openai" in warning
        assert "capture_message_content=True" in warning


def test_a_traced_function_s_return_value_is_its_agent_s_answer() -> None:
    """`@openlit.trace` records what the function returned (plain text in
    `gen_ai.output.messages`): that is the agent's answer, even where it is not its
    model's last text."""
    records = _records("openlit")
    for record in records:
        if record.name == "lead" and record.scope == "openlit":
            record.attributes[semconv.GEN_AI_OUTPUT_MESSAGES] = "Forecast: sunny."
    (trace,) = [t for t in traces_from_records(records) if t.has_llm_interactions]
    assert trace.final_output == "Forecast: sunny."
    assert trace.root.llm_interactions[-1].output_text.startswith("The weather agent says")


def test_a_start_trace_span_is_an_agent_too() -> None:
    """`with openlit.start_trace("planner") as t: ...; t.set_result(text)`: a span of
    scope `openlit` without the function's arguments, its result in
    `gen_ai.output.messages` (plain text): the agent `planner`, not a model call."""
    records = _records("openlit")
    for record in records:
        if record.name == "lead" and record.scope == "openlit":
            record.name = "planner"
            for key in (semconv.OPENLIT_FUNCTION_ARGS, semconv.OPENLIT_FUNCTION_KWARGS):
                del record.attributes[key]
    (trace,) = [t for t in traces_from_records(records) if t.has_llm_interactions]
    assert [(a.name, len(a.llm_interactions)) for a in trace.iter_agents()] == [
        ("planner", 2),
        ("weather_agent", 2),
    ]
    assert trace.warnings == []
