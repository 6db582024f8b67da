"""The shared three-agent scenario, traced live and checked field by field.

orchestrator -> researcher (two tool-call rounds, the first with two parallel calls)
-> writer, then the orchestrator answers; real openai client, real OpenLLMetry spans.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.scenario import (
    FETCH_TOOL,
    FINAL,
    FINDINGS,
    PLAN,
    REPORT,
    SEARCH_TOOL,
    TOOL_RESULTS,
    run_scenario,
    scripted_replies,
)
from tracejudge.models import MultiAgentTrace
from tracejudge.testing import ScriptedLLMServer
from tracejudge.tracing import ComposoTracer

QUESTION = "What is the weather in San Francisco?"
ORCHESTRATOR_SYSTEM = "You coordinate a researcher and a writer."
RESEARCHER_SYSTEM = "You research with tools."


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "type": "text", "content": content}


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "parameters": arguments}


def assistant_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "type": "tool_call", "content": call(call_id, name, arguments)}


def output_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "content": call(call_id, name, arguments)}


def tool_result(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = TOOL_RESULTS[name](arguments)
    return {
        "role": "tool",
        "type": "tool_response",
        "content": {"id": call_id, "response": response, "name": name},
    }


def tool_definition(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool["function"]
    return {
        "name": function["name"],
        "description": function["description"],
        "parameters": function["parameters"],
    }


def parsed(wire: Any) -> Any:
    """The wire form with every JSON-string `parameters` parsed, so the comparison checks
    the arguments and schemas themselves, not how their JSON was spaced."""
    if isinstance(wire, dict):
        return {
            key: json.loads(value) if key == "parameters" else parsed(value)
            for key, value in wire.items()
        }
    if isinstance(wire, list):
        return [parsed(item) for item in wire]
    return wire


@pytest.fixture
def scenario_trace(llm_server: ScriptedLLMServer, client: openai.OpenAI) -> MultiAgentTrace:
    llm_server.add(*scripted_replies())
    orchestrator = run_scenario(client)
    assert llm_server.pending == 0
    processor = ComposoTracer.capture_processor()
    assert processor is not None and processor.span_count == 0
    return orchestrator.trace


def test_three_agent_scenario_trace_field_by_field(scenario_trace: MultiAgentTrace) -> None:
    trace = scenario_trace
    assert trace.warnings == []
    by_name = {agent.name: agent.id for agent in trace.agent_instance_by_id.values()}
    assert sorted(by_name) == ["orchestrator", "researcher", "writer"]
    orchestrator, researcher, writer = (
        by_name["orchestrator"],
        by_name["researcher"],
        by_name["writer"],
    )
    assert trace.root_agent_instance_id == orchestrator

    s1 = ("call_s1", "search", {"query": "sf weather"})
    s2 = ("call_s2", "search", {"query": "san francisco forecast"})
    f1 = ("call_f1", "fetch_page", {"url": "https://example.org/sf"})
    research_tools = [tool_definition(SEARCH_TOOL), tool_definition(FETCH_TOOL)]
    research_start = [text("system", RESEARCHER_SYSTEM), text("user", QUESTION)]
    after_first_round = [
        *research_start,
        assistant_call(*s1),
        assistant_call(*s2),
        tool_result(*s1),
        tool_result(*s2),
    ]

    expected = {
        "root_agent_instance_id": orchestrator,
        "agent_instance_by_id": {
            orchestrator: {
                "id": orchestrator,
                "name": "orchestrator",
                "interactions": [
                    {
                        "input_messages": [
                            text("system", ORCHESTRATOR_SYSTEM),
                            text("user", QUESTION),
                        ],
                        "output_messages": [{"type": "text", "content": PLAN}],
                    },
                    researcher,  # the child agents, where they started among the calls
                    writer,
                    {
                        "input_messages": [
                            text("system", ORCHESTRATOR_SYSTEM),
                            text("user", QUESTION),
                            text("assistant", PLAN),
                            text("user", f"Writer said: {REPORT}"),
                        ],
                        "output_messages": [{"type": "text", "content": FINAL}],
                    },
                ],
            },
            researcher: {
                "id": researcher,
                "name": "researcher",
                "interactions": [
                    {
                        "input_messages": research_start,
                        # both parallel calls, in the model's order
                        "output_messages": [output_call(*s1), output_call(*s2)],
                        "tools_available": research_tools,
                    },
                    {
                        "input_messages": after_first_round,
                        "output_messages": [output_call(*f1)],
                        "tools_available": research_tools,
                    },
                    {
                        "input_messages": [
                            *after_first_round,
                            assistant_call(*f1),
                            tool_result(*f1),
                        ],
                        "output_messages": [{"type": "text", "content": FINDINGS}],
                        "tools_available": research_tools,
                    },
                ],
            },
            writer: {
                "id": writer,
                "name": "writer",
                "interactions": [
                    {
                        "input_messages": [text("user", f"Summarise: {FINDINGS}")],
                        "output_messages": [{"type": "text", "content": REPORT}],
                    }
                ],
            },
        },
    }
    # The exact wire shape: optional fields that are None (no tools offered) are left out.
    assert parsed(trace.to_wire(compat=True)) == expected
    assert parsed(trace.model_dump(mode="json")) == expected


def test_scenario_tool_results_match_their_calls(scenario_trace: MultiAgentTrace) -> None:
    researcher = next(a for a in scenario_trace.iter_agents() if a.name == "researcher")
    last = researcher.llm_interactions[-1]
    calls = {
        m.content.id: m.content
        for m in last.input_messages
        if m.role == "assistant" and not isinstance(m.content, str)
    }
    results = [m.content for m in last.input_messages if m.role == "tool"]
    assert [r.id for r in results] == ["call_s1", "call_s2", "call_f1"]  # type: ignore[union-attr]
    for result in results:
        made = calls[result.id]  # type: ignore[union-attr]
        assert result.name == made.name  # type: ignore[union-attr]
        assert result.response == TOOL_RESULTS[made.name](made.arguments())  # type: ignore[union-attr]


def test_scenario_interactions_carry_model_usage_and_time_in_order(
    scenario_trace: MultiAgentTrace,
) -> None:
    interactions = [
        interaction
        for agent in scenario_trace.iter_agents()
        for interaction in agent.llm_interactions
    ]
    assert len(interactions) == 6
    for interaction in interactions:
        assert interaction.model == "scripted-model"
        assert interaction.usage is not None and interaction.usage.total_tokens > 0
        assert interaction.error is None
        assert interaction.start_time is not None and interaction.end_time is not None
        assert interaction.start_time <= interaction.end_time
    for agent in scenario_trace.iter_agents():
        starts = [i.start_time or 0.0 for i in agent.llm_interactions]
        assert starts == sorted(starts)
