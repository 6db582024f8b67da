"""Microsoft Agent Framework's own spans, as recorded live (tests/fixtures/frameworks/
agent_framework*): a lead agent that calls a weather agent as a tool (`Agent.as_tool()`),
on the Responses API (`OpenAIChatClient`) and Chat Completions
(`OpenAIChatCompletionClient`), with sensitive data on and off; a sequential workflow
(`SequentialBuilder`) and a hand-off workflow (`HandoffBuilder`). What the generic
framework tests do not cover: the tools each agent offered, finish reasons, the workflow
root, the hand-off, and what a run without sensitive data says."""

from __future__ import annotations

import pytest

from tests.convert.test_frameworks import FIXTURES, converted
from tests.fixtures.frameworks.programs_agent_framework import MAF_NOTE
from tracejudge import checks
from tracejudge.convert import conventions
from tracejudge.convert._otlp import decode
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Kind
from tracejudge.models import LLMToolResponse, MultiAgentTrace

WITH_CONTENT = [
    "agent_framework",
    "agent_framework_composed",
    "agent_framework_chat",
    "agent_framework_chat_composed",
    "agent_framework_sequential",
    "agent_framework_sequential_composed",
    "agent_framework_handoff",
    "agent_framework_handoff_composed",
]
TOOLS = {"lead": "weather_agent", "weather_agent": "get_weather", "researcher": "get_weather"}
SETTING = "enable_instrumentation(enable_sensitive_data=True)"


def offered(trace: MultiAgentTrace) -> dict[str, list[list[str]]]:
    return {
        agent.name: [[t.name for t in i.tools_available or []] for i in agent.llm_interactions]
        for agent in trace.iter_agents()
        if agent.llm_interactions
    }


@pytest.mark.parametrize(
    "name", [n for n in [*WITH_CONTENT, "agent_framework_no_content"] if "handoff" not in n]
)
def test_the_tools_on_the_agent_span_are_offered_in_each_of_its_calls(name: str) -> None:
    for agent, calls in offered(converted(name)).items():
        tool = TOOLS.get(agent)
        assert calls == [[tool] if tool else [] for _ in calls], (name, agent)


@pytest.mark.parametrize("name", ["agent_framework_handoff", "agent_framework_handoff_composed"])
def test_a_handoff_workflow_hands_off_through_its_handoff_tool(name: str) -> None:
    """`HandoffBuilder` adds a `handoff_to_<agent>` tool to each agent and answers its calls
    in middleware (no tool span): the hand-off is known from the agent span's output."""
    trace = converted(name)
    (desk,) = [a for a in trace.iter_agents() if a.name == "weather_desk"]
    assert [trace.agent_instance_by_id[c].name for c in desk.child_ids] == [
        "triage",
        "weather_specialist",
    ]
    handoffs = {a.name: a.handoff for a in trace.iter_agents() if a.handoff is not None}
    assert handoffs == {"triage": "weather_specialist"}
    assert offered(trace) == {
        "triage": [["handoff_to_weather_specialist"]],
        "weather_specialist": [["get_weather", "handoff_to_triage"]] * 2,
    }
    (triage,) = [a for a in trace.iter_agents() if a.name == "triage"]
    score = checks.final_answer.evaluate(trace)[triage.id]
    assert score is not None and score.score is None
    assert "handed off to weather_specialist" in score.explanation


@pytest.mark.parametrize("name", ["agent_framework", "agent_framework_chat"])
def test_finish_reasons_written_as_json_text_are_read(name: str) -> None:
    for agent in converted(name).iter_agents():
        reasons = [i.finish_reason for i in agent.llm_interactions]
        assert reasons == ["tool_calls", "stop"], (name, agent.name)


def test_on_the_responses_api_a_follow_up_call_sends_only_the_new_tool_result() -> None:
    """`OpenAIChatClient` continues a run from the previous response
    (`previous_response_id`): what its chat span records is what was sent, the new tool
    result alone; Chat Completions sends the whole conversation again."""
    for name, before in (("agent_framework", []), ("agent_framework_chat", ["user", "assistant"])):
        trace = converted(name)
        (weather,) = [a for a in trace.iter_agents() if a.name == "weather_agent"]
        follow_up = weather.llm_interactions[1].input_messages
        assert [m.role for m in follow_up] == ["system", *before, "tool"], name
        assert isinstance(follow_up[-1].content, LLMToolResponse)
        assert follow_up[-1].content.id == "call_weather"


def test_a_run_without_sensitive_data_says_so_and_keeps_its_shape() -> None:
    trace = converted("agent_framework_no_content")
    calls = [i for a in trace.iter_agents() for i in a.llm_interactions]
    assert len(calls) == 4 and all(not i.input_messages for i in calls)
    assert len(trace.warnings) == len(calls)
    for warning in trace.warnings:
        assert "no message content recorded by agent_framework" in warning
        assert SETTING in warning and "ENABLE_SENSITIVE_DATA=true" in warning
    # The tool calls are known from the tool spans (by id and name), not their arguments.
    made = [
        (a.name, c.id, c.name)
        for a in trace.iter_agents()
        for i in a.llm_interactions
        for c in i.tool_calls
    ]
    assert made == [
        ("lead", "call_ask", "weather_agent"),
        ("weather_agent", "call_weather", "get_weather"),
    ]


def test_composed_the_openai_client_spans_give_the_messages_of_the_calls_they_record() -> None:
    """The lead's calls get an openai-client span; the weather agent, run by `as_tool()`,
    streams, and OpenLLMetry records no streamed Responses API call: only those two calls
    lack content, and the trace says so."""
    trace = converted("agent_framework_no_content_composed")
    (lead,) = [a for a in trace.iter_agents() if a.name == "lead"]
    (weather,) = [a for a in trace.iter_agents() if a.name == "weather_agent"]
    assert all(i.input_messages for i in lead.llm_interactions)
    assert lead.final_output and "sunny" in lead.final_output
    assert all(not i.input_messages for i in weather.llm_interactions)
    spans = {i.span_id for i in weather.llm_interactions}
    assert len(trace.warnings) == 2
    assert all(any(s in w for s in spans) and SETTING in w for w in trace.warnings)


def test_a_sequential_workflow_is_the_root_agent_and_its_executors_are_steps() -> None:
    records, _, _ = decode((FIXTURES / "agent_framework_sequential.pb").read_bytes())
    kinds: dict[str, set[str]] = {}
    for record in records:
        found = conventions.classify(SpanView(record))
        assert found is not None and found[0] is conventions.AGENT_FRAMEWORK, record.name
        kinds.setdefault(record.name.split(" ")[0], set()).add(found[1])
    assert kinds == {
        "workflow.build": {Kind.STEP},
        "workflow.run": {Kind.WORKFLOW},
        "edge_group.process": {Kind.STEP},
        "executor.process": {Kind.STEP},
        "message.send": {Kind.STEP},
        "invoke_agent": {Kind.AGENT},
        "chat": {Kind.MODEL_CALL},
        "execute_tool": {Kind.TOOL_RUN},
    }
    trace = converted("agent_framework_sequential")
    assert trace.root.name == "weather_report"
    assert [trace.agent_instance_by_id[c].name for c in trace.root.child_ids] == [
        "researcher",
        "writer",
    ]


@pytest.mark.parametrize("name", WITH_CONTENT)
def test_the_checks_raise_no_false_alarm(name: str) -> None:
    trace = converted(name)
    for check in (
        checks.tool_arguments,
        checks.tool_results,
        checks.loops,
        checks.grounded_numbers,
        checks.final_answer,
    ):
        for agent_id, score in check.evaluate(trace).items():
            agent = trace.agent_instance_by_id[agent_id].name
            assert score is None or score.score in (None, 1), (check.name, agent, score)


@pytest.mark.parametrize(
    "name", ["agent_framework_no_content", "agent_framework_no_content_composed"]
)
def test_the_checks_raise_no_false_alarm_without_sensitive_data(name: str) -> None:
    """A tool call known only from its execute_tool span, which recorded no arguments, is
    joined with `{}`: its arguments are unknown, not missing the required `city`."""
    test_the_checks_raise_no_false_alarm(name)


def test_the_weather_agent_answers_through_its_tool() -> None:
    trace = converted("agent_framework")
    (tool_result,) = [
        m.content.response
        for a in trace.iter_agents()
        if a.name == "lead"
        for i in a.llm_interactions
        for m in i.input_messages
        if isinstance(m.content, LLMToolResponse)
    ]
    assert tool_result == MAF_NOTE
