"""What a framework's steps say, read with its producer's row taken out of the table:
agents named only in the events their steps return (convert/_infer_turns.py), model-call
spans that record nothing beside the call that does (_infer_wrappers.py), tool runs and
hand-offs on steps (_infer_tool_runs.py), and an OpenLLMetry task that is a GenAI chat.

LlamaIndex's recordings (tests/fixtures/frameworks, live runs of programs_llamaindex.py
under OpenInference and OpenLLMetry) are the frameworks that need them; the facts
checked are the program's (`expectations`), never the converter's output.
"""

from __future__ import annotations

import pytest

from tests.convert.test_named_agents import lost, without
from tracejudge import semconv
from tracejudge.convert import conventions
from tracejudge.convert._common import Extraction, message_inputs
from tracejudge.convert._infer_tool_runs import handoff_target, read_tool_run
from tracejudge.convert._infer_turns import turn_agent
from tracejudge.convert._infer_wrappers import empty_steps
from tracejudge.convert._records import STATUS_ERROR, SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions.llamaindex_openinference import OPENINFERENCE_LLAMAINDEX
from tracejudge.convert.conventions.llamaindex_openllmetry import OPENLLMETRY_LLAMAINDEX

# --------------------------------------------------------------------------- recordings


@pytest.mark.parametrize(
    ("row", "name"),
    [
        (OPENINFERENCE_LLAMAINDEX, "llamaindex_agent_openinference"),
        (OPENINFERENCE_LLAMAINDEX, "llamaindex_workflow_openinference"),
        (OPENLLMETRY_LLAMAINDEX, "llamaindex_agent_openllmetry"),
        (OPENLLMETRY_LLAMAINDEX, "llamaindex_agent_openllmetry_nocontent"),
        (OPENLLMETRY_LLAMAINDEX, "llamaindex_workflow_openllmetry"),
    ],
)
def test_llamaindex_without_its_row_holds_every_fact(
    row: conventions.Convention, name: str
) -> None:
    """Without its row, OpenInference's format row reads LlamaIndex's request builder and
    outer `astream_chat` as calls (3 calls were 9), OpenLLMetry's Traceloop row its chat
    spans as steps (no call), and no span names an agent: the agents are named in the
    events the workflow's steps return, the tool runs and the hand-off are on steps."""
    assert lost(row, name) == []


def test_the_hand_off_without_its_row_is_the_tool_that_names_the_next_agent() -> None:
    trace = without(OPENINFERENCE_LLAMAINDEX, "llamaindex_workflow_openinference")
    by_name = {agent.name: agent for agent in trace.iter_agents()}
    assert by_name["triage"].handoff == "weather_agent"
    assert by_name["triage"].final_output is None  # it handed off: no answer of its own
    assert by_name["weather_agent"].handoff is None
    assert not trace.warnings


# --------------------------------------------------------------------------- turns


@pytest.mark.parametrize(
    ("attributes", "name"),
    [
        # OpenInference: the event's Python repr
        (
            {
                "output.value": "AgentInput(input=[ChatMessage(role=<MessageRole.USER: "
                "'user'>, blocks=[TextBlock(text='Hi')])], current_agent_name='triage')"
            },
            "triage",
        ),
        # OpenLLMetry: the event as JSON
        ({"traceloop.entity.output": '{"input": [], "current_agent_name": "triage"}'}, "triage"),
        ({"output": '{"agentName": "writer"}'}, "writer"),
        # an input names the agent the step was given, not the turn it starts
        ({"input.value": '{"current_agent_name": "triage"}'}, None),
        # a field nested deeper is an answer's, not the step's event
        ({"output": '{"result": {"current_agent_name": "triage"}}'}, None),
        # two agents named: no one turn
        ({"output.value": "Ev(agent_name='a', next_agent_name='b')"}, None),
        # a repr cut short names no agent; a generated id is no name
        ({"output.value": "AgentSetup(input=[ChatMessage(role=..."}, None),
        ({"output": '{"agent_id": "3f2a9c1e-77aa-4c1e-9a1b-2f0c4d5e6f70"}'}, None),
        ({"output": '{"user_agent": "curl"}'}, None),
    ],
)
def test_the_agent_a_steps_output_names(attributes: dict[str, object], name: str | None) -> None:
    assert turn_agent(attributes) == name


# --------------------------------------------------------------------------- empty calls


def _call(
    span_id: str,
    parent: str,
    start: int,
    *,
    content: bool,
    scope: str = "acme",
    status: str = "UNSET",
) -> tuple[SpanRecord, Extraction]:
    record = SpanRecord("t", span_id, parent, span_id, start_ns=start, end_ns=start + 5)
    record.scope, record.status = scope, status
    extraction = Extraction()
    if content:
        extraction.inputs = message_inputs("user", ["Weather?"], [], [])
        extraction.has_content = True
        extraction.add_choice(["Sunny."], [])
    return record, extraction


def _step(span_id: str, parent: str | None, start: int) -> SpanRecord:
    return SpanRecord("t", span_id, parent, span_id, start_ns=start, end_ns=start + 50)


def test_a_call_span_recording_nothing_before_or_around_the_call_is_a_step() -> None:
    builder = _call("prepare", "step", 1, content=False)
    outer = _call("outer", "step", 2, content=False)
    inner = _call("inner", "outer", 3, content=True)
    spans = [_step("step", None, 0), builder[0], outer[0], inner[0]]
    assert empty_steps([builder, outer, inner], spans) == {"prepare", "outer"}


@pytest.mark.parametrize(
    "first",
    [
        _call("first", "agent", 1, content=False, status=STATUS_ERROR),  # a failed call
        _call("first", "agent", 1, content=False, scope="other"),  # another instrumentation
    ],
)
def test_a_failed_call_or_another_instrumentations_is_a_call(
    first: tuple[SpanRecord, Extraction],
) -> None:
    second = _call("second", "agent", 10, content=True)
    spans = [_step("agent", None, 0), first[0], second[0]]
    assert empty_steps([first, second], spans) == set()


def test_a_call_without_content_before_a_tool_run_is_a_call() -> None:
    """Content capture off on one call, then a tool ran, then a call with content: the
    first call is not the next one's request builder (the tool run lies between)."""
    first = _call("first", "agent", 1, content=False)
    second = _call("second", "agent", 20, content=True)
    tool = _step("tool", "agent", 10)
    spans = [_step("agent", None, 0), first[0], tool, second[0]]
    assert empty_steps([first, second], spans) == set()


def test_with_no_call_recording_content_every_call_stays() -> None:
    first, second = _call("a", "p", 1, content=False), _call("b", "p", 2, content=False)
    assert empty_steps([first, second], [_step("p", None, 0), first[0], second[0]]) == set()


# --------------------------------------------------------------------------- rows


def test_an_openllmetry_task_that_is_a_genai_chat_is_read_as_the_call() -> None:
    task = {semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_TASK}
    chat = SpanRecord("t", "c", None, "OpenAILike.task", attributes={**task})
    chat.attributes[semconv.GEN_AI_OPERATION_NAME] = semconv.OPERATION_CHAT
    step = SpanRecord("t", "s", None, "Agent.task", attributes={**task})
    assert conventions.classify(SpanView(chat)) == (conventions.GENAI, conventions.Kind.MODEL_CALL)
    assert conventions.classify(SpanView(step)) == (
        conventions.TRACELOOP,
        conventions.Kind.STEP,
    )


# --------------------------------------------------------------------------- tool runs


def test_a_step_carrying_a_tool_name_is_read_as_its_run() -> None:
    attributes = {
        "tool.name": "get_weather",
        "tool.arguments": '{"city": "Paris"}',
        "traceloop.entity.output": '{"tool_name": "get_weather", "tool_id": "call_1", '
        '"tool_output": {"blocks": [], "raw_output": "Sunny, 22 C"}, "return_direct": false}',
    }
    run = read_tool_run(attributes, 7)
    assert run is not None
    assert (run.name, run.call_id, run.result, run.arguments, run.start_ns) == (
        "get_weather",
        "call_1",
        "Sunny, 22 C",
        '{"city": "Paris"}',
        7,
    )
    assert run.handoff_to is None
    assert read_tool_run({"tool.description": "x", "name": "get_weather"}, 0) is None


@pytest.mark.parametrize(
    ("arguments", "target"),
    [
        ('{"to_agent": "weather_agent", "reason": "weather"}', "weather_agent"),
        ('{"agent_name": "writer"}', "writer"),
        ('{"city": "Paris"}', None),
        ('{"to_agent": "a", "from_agent": "b"}', None),  # two agents: not one target
        ("not json", None),
        (None, None),
    ],
)
def test_the_agent_a_tools_arguments_pass_the_run_to(
    arguments: str | None, target: str | None
) -> None:
    assert handoff_target(arguments) == target
