"""Model-call spans that hold only text (issue #30, pattern 4), read with no row for the
producer.

AG2 1.0's `TelemetryMiddleware` (recorded live against a ScriptedLLMServer: programs_ag2.py)
records a `chat` span per model call whose input is only the turn's user text and whose
output is recorded only when the model wrote text: a call that answered with tool calls
only records no output at all. Each call the model made is on the `execute_tool` span of
its run (`gen_ai.tool.call.id`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`),
a sibling of the model call under the agent's `invoke_agent` span. The walk joins each run
that no recorded call claims to the agent's model call that made it (the last one started
before the run), under the run's own call id (`convert/_infer_unrecorded_calls.py`).

AG2's classic API (`autogen.opentelemetry`, AG2 0.14: programs_ag2.py's `ag2_classic`)
records the request and the reply on the span of each agent turn (`invoke_agent`,
`gen_ai.input.messages` / `gen_ai.output.messages`, tool calls included) and no message on
its `chat` span by default: the turn's messages are its one model call's
(`convert/_infer_turn_content.py`).

No row of the conventions table is AG2's: its spans are read by the GenAI row. The
composed twins record the same programs' calls on the wire too (OpenLLMetry's openai
spans), which is what the joined calls must equal.
"""

from __future__ import annotations

import json

from tests.convert.test_frameworks import FIXTURES, converted
from tests.fixtures.frameworks.programs import SEARCH_RESULT
from tests.fixtures.frameworks.programs_ag2 import ANSWER, NOTE
from tracejudge import semconv
from tracejudge.convert import conventions
from tracejudge.convert._otlp import decode
from tracejudge.convert._view import SpanView
from tracejudge.models import LLMInteraction, MultiAgentTrace

AG2_SCOPE = "opentelemetry.instrumentation.ag2"


def _calls(trace: MultiAgentTrace) -> list[tuple[str, int, str, str, dict[str, object]]]:
    """(agent, index of the model call, call id, tool, arguments) of every tool call."""
    return [
        (agent.name, index, call.id, call.name, json.loads(call.parameters))
        for agent in trace.iter_agents()
        for index, interaction in enumerate(agent.llm_interactions)
        for call in interaction.tool_calls
    ]


def test_no_row_of_the_table_is_ag2_s() -> None:
    for row in conventions.TABLE:
        assert AG2_SCOPE not in row.marker_scopes and "ag2" not in row.name, row


def test_the_recording_shows_calls_only_on_the_tool_spans() -> None:
    """What makes it pattern 4: the calls that answered with tool calls recorded no output,
    and every run records its call id, arguments and result."""
    records, _, _ = decode((FIXTURES / "ag2_telemetry.pb").read_bytes())
    chats = [r for r in records if r.attributes.get(semconv.GEN_AI_OPERATION_NAME) == "chat"]
    runs = [r for r in records if r.attributes.get(semconv.GEN_AI_OPERATION_NAME) == "execute_tool"]
    silent = [r for r in chats if semconv.GEN_AI_OUTPUT_MESSAGES not in r.attributes]
    assert len(chats) == 4 and len(silent) == 2
    assert len(runs) == 2
    for run in runs:
        for key in (
            semconv.GEN_AI_TOOL_CALL_ID,
            semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
            semconv.GEN_AI_TOOL_CALL_RESULT,
        ):
            assert key in run.attributes, (run.name, key)


def test_the_genai_row_reads_the_tool_spans_with_their_call_ids() -> None:
    """`gen_ai.tool.type` ("function") is the GenAI conventions' own key: it does not make a
    tool span ADK's (whose reading drops the call id of a span that records content)."""
    records, _, _ = decode((FIXTURES / "ag2_telemetry.pb").read_bytes())
    runs = [r for r in records if r.attributes.get(semconv.GEN_AI_OPERATION_NAME) == "execute_tool"]
    for record in runs:
        found = conventions.classify(SpanView(record))
        assert found is not None
        convention, kind = found
        assert (convention.name, kind) == ("genai", conventions.Kind.TOOL_RUN), record.name
        run = convention.tool_run(SpanView(record))
        assert run is not None
        assert run.call_id == record.attributes[semconv.GEN_AI_TOOL_CALL_ID]


def test_each_run_is_a_call_of_the_model_call_that_made_it() -> None:
    trace = converted("ag2_telemetry")
    assert trace.warnings == []  # ("finished for tool calls, but no tool call was recorded")
    assert _calls(trace) == [
        ("planner", 0, "call_research", "research", {"topic": "Paris weather today"}),
        ("researcher", 0, "call_search", "web_search", {"query": "Paris weather"}),
    ]
    results = {
        (agent.name, index): [(r.id, r.name, r.response) for r in interaction.tool_results or []]
        for agent in trace.iter_agents()
        for index, interaction in enumerate(agent.llm_interactions)
    }
    assert results == {
        ("planner", 0): [("call_research", "research", NOTE)],
        ("planner", 1): [],
        ("researcher", 0): [("call_search", "web_search", SEARCH_RESULT)],
        ("researcher", 1): [],
    }


def test_the_joined_calls_are_the_calls_the_wire_carried() -> None:
    """Composed with tracejudge's tracer, OpenLLMetry records each request and response of
    the same program: the calls joined from the tool spans are those the model made."""
    alone = converted("ag2_telemetry")
    composed = converted("ag2_telemetry_composed")
    assert _calls(alone) == _calls(composed)


# --------------------------------------------------------------------------- AG2 classic


def _in_order(trace: MultiAgentTrace) -> list[LLMInteraction]:
    calls = [i for agent in trace.iter_agents() for i in agent.llm_interactions]
    return sorted(calls, key=lambda i: i.start_time or 0.0)


def _messages(interaction: LLMInteraction) -> tuple[list[object], list[object]]:
    """The call's input (its system prompt left out) and output, in wire form."""
    wire = interaction.model_dump(mode="json")
    inputs = [m for m in wire["input_messages"] if m["role"] != "system"]
    return inputs, wire["output_messages"]


def test_the_classic_recording_holds_messages_only_on_the_turn_spans() -> None:
    records, _, _ = decode((FIXTURES / "ag2_classic.pb").read_bytes())
    chats = [r for r in records if r.attributes.get(semconv.GEN_AI_OPERATION_NAME) == "chat"]
    turns = [
        r for r in records if r.attributes.get(semconv.GEN_AI_OPERATION_NAME) == "invoke_agent"
    ]
    assert len(chats) == 2 and len(turns) == 3
    for chat in chats:
        assert semconv.GEN_AI_INPUT_MESSAGES not in chat.attributes
        assert semconv.GEN_AI_OUTPUT_MESSAGES not in chat.attributes
        assert chat.parent_id in {turn.span_id for turn in turns}
    for turn in turns:
        assert semconv.GEN_AI_OUTPUT_MESSAGES in turn.attributes


def test_a_call_without_messages_has_its_turn_s() -> None:
    trace = converted("ag2_classic")
    assert trace.warnings == []  # ("no message content recorded")
    first, second = _in_order(trace)
    assert [(m.role, m.content) for m in first.input_messages] == [
        ("user", "What is the weather in Paris?")
    ]
    (call,) = first.tool_calls
    assert (call.id, call.name, json.loads(call.parameters)) == (
        "call_weather",
        "get_weather",
        {"city": "Paris"},
    )
    results = [m.content for m in second.input_messages if m.role == "tool"]
    assert [(r.id, r.response) for r in results] == [("call_weather", "Sunny, 22 C in Paris")]
    assert second.output_text == ANSWER
    # What the call's own span records stays: its finish reason, its model.
    assert (first.finish_reason, second.finish_reason) == ("tool_calls", "stop")


def test_the_turn_s_messages_are_those_the_wire_carried() -> None:
    """Composed, OpenLLMetry records each request and response: the same messages, but
    for the system prompt, which AG2's turn span leaves out."""
    alone = [_messages(i) for i in _in_order(converted("ag2_classic"))]
    composed = [_messages(i) for i in _in_order(converted("ag2_classic_composed"))]
    assert alone == composed
