"""Strands Agents' own spans, as recorded live (tests/fixtures/frameworks/strands*): a lead
agent that calls a weather agent as a tool (`Agent.as_tool()`), under Strands' default
events (Bedrock content blocks) and `OTEL_SEMCONV_STABILITY_OPT_IN=
gen_ai_latest_experimental,gen_ai_tool_definitions`, alone and composed with tracejudge's
tracer; and a swarm (`strands.multiagent.Swarm`) whose researcher hands off to a writer.
What the generic framework tests do not cover: both conventions give the same calls, tool
results are text, the tools each agent offered, the spans' kinds, the swarm's hand-off."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.convert.test_frameworks import FIXTURES, converted
from tests.fixtures.frameworks.programs_strands import STRANDS_NOTE
from tracejudge import checks
from tracejudge.convert import conventions
from tracejudge.convert._otlp import decode
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Kind
from tracejudge.models import LLMToolResponse, MultiAgentTrace

RECORDINGS = ["strands", "strands_latest", "strands_composed", "strands_latest_composed"]
SWARM = ["strands_swarm", "strands_swarm_composed"]


def calls_by_agent(trace: MultiAgentTrace) -> dict[str, list[dict[str, Any]]]:
    """What each agent's calls hold, tools offered apart."""
    found: dict[str, list[dict[str, Any]]] = {}
    for agent in trace.iter_agents():
        for interaction in agent.llm_interactions:
            found.setdefault(agent.name, []).append(
                {
                    "inputs": [
                        (m.role, m.type, repr(m.content)) for m in interaction.input_messages
                    ],
                    "outputs": [repr(o) for o in interaction.output_messages],
                    "finish": interaction.finish_reason,
                    "usage": interaction.usage,
                    "model": interaction.model,
                }
            )
    return found


def test_the_default_events_and_the_latest_conventions_give_the_same_calls() -> None:
    default, latest = converted("strands"), converted("strands_latest")
    assert calls_by_agent(default) == calls_by_agent(latest)
    finishes = {a: [c["finish"] for c in calls] for a, calls in calls_by_agent(default).items()}
    assert finishes == {"lead": ["tool_calls", "stop"], "weather_agent": ["tool_calls", "stop"]}


@pytest.mark.parametrize("name", RECORDINGS)
def test_tool_results_are_the_text_of_strands_content_blocks(name: str) -> None:
    trace = converted(name)
    results = {
        message.content.id: message.content.response
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for message in interaction.input_messages
        if isinstance(message.content, LLMToolResponse)
    }
    # The agent tool's result is `str(AgentResult)`: the answer's text and a newline.
    assert results == {"call_ask": STRANDS_NOTE + "\n", "call_weather": "Sunny, 22 C in Paris"}


def test_the_tools_an_agent_offers_are_on_each_of_its_calls() -> None:
    # By default the agent span names its tools (`gen_ai.agent.tools`): names, no schema.
    for agent in converted("strands").iter_agents():
        expected = {"lead": "weather_agent", "weather_agent": "get_weather"}[agent.name]
        for interaction in agent.llm_interactions:
            offered = [(t.name, t.parameters) for t in interaction.tools_available or []]
            assert offered == [(expected, "{}")]
    # With `gen_ai_tool_definitions`, Bedrock tool specs: the schema is `inputSchema.json`.
    schemas = {
        agent.name: [
            (tool.name, json.loads(tool.parameters)["required"])
            for interaction in agent.llm_interactions
            for tool in interaction.tools_available or []
        ]
        for agent in converted("strands_latest").iter_agents()
    }
    assert schemas == {
        "lead": [("weather_agent", ["input"])] * 2,
        "weather_agent": [("get_weather", ["city"])] * 2,
    }


def test_strands_spans_are_read_by_the_strands_convention() -> None:
    for name in ("strands", "strands_latest"):
        records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
        kinds: dict[str, set[str]] = {}
        for record in records:
            found = conventions.classify(SpanView(record))
            assert found is not None and found[0] is conventions.STRANDS, record.name
            kinds.setdefault(record.name.split(" ")[0], set()).add(found[1])
        assert kinds == {
            "invoke_agent": {Kind.AGENT},
            "chat": {Kind.MODEL_CALL},
            "execute_tool": {Kind.TOOL_RUN},
            "execute_event_loop_cycle": {Kind.STEP},
        }


@pytest.mark.parametrize("name", SWARM)
def test_a_swarm_is_the_root_agent_and_handoff_to_agent_a_hand_off(name: str) -> None:
    trace = converted(name)
    (swarm,) = [a for a in trace.iter_agents() if a.name == "swarm"]
    assert [trace.agent_instance_by_id[c].name for c in swarm.child_ids] == ["researcher", "writer"]
    handoffs = {a.name: a.handoff for a in trace.iter_agents() if a.handoff is not None}
    assert handoffs == {"researcher": "writer"}
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    kinds = {
        record.name: conventions.classify(SpanView(record))
        for record in records
        if record.name in ("invoke_swarm", "execute_tool handoff_to_agent")
    }
    assert kinds == {
        "invoke_swarm": (conventions.STRANDS, Kind.WORKFLOW),
        "execute_tool handoff_to_agent": (conventions.STRANDS, Kind.HANDOFF),
    }


def test_redacted_messages_are_not_recorded_and_the_trace_says_so() -> None:
    """`gen_ai_unredacted_attributes=` (Strands' redaction, nothing left unredacted) writes
    `[REDACTED]` for every message: no call has content, each says so naming the setting,
    and the tool calls are known (by id and name) from their tool spans."""
    trace = converted("strands_redacted")
    calls = [i for a in trace.iter_agents() for i in a.llm_interactions]
    assert len(calls) == 4 and not any(i.input_messages for i in calls)
    assert len(trace.warnings) == 4
    for warning in trace.warnings:
        assert "no message content recorded by strands.telemetry.tracer" in warning
        assert "gen_ai_unredacted_attributes" in warning
    made = [(c.id, c.name, c.parameters) for i in calls for c in i.tool_calls]
    assert made == [("call_ask", "weather_agent", "{}"), ("call_weather", "get_weather", "{}")]
    # Composed, the openai client's spans hold what Strands redacted.
    composed = converted("strands_redacted_composed")
    assert composed.warnings == []
    assert calls_by_agent(composed) == calls_by_agent(converted("strands_composed"))


@pytest.mark.parametrize(
    "name", [*RECORDINGS, *SWARM, "strands_redacted", "strands_redacted_composed"]
)
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
