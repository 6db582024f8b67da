"""LlamaIndex agents 0.14 as their recordings show them (tests/fixtures/frameworks/
llamaindex_*): what the generic framework tests (test_frameworks.py) do not check."""

from __future__ import annotations

import pytest

from tests.convert.test_frameworks import FIXTURES, converted, meta
from tracejudge.convert._otlp import decode

OPENINFERENCE = "openinference.instrumentation.llama_index"
OPENLLMETRY = "opentelemetry.instrumentation.llamaindex"
NAMES = [
    f"{program}_{instrumentation}{composed}"
    for program in ("llamaindex_agent", "llamaindex_workflow")
    for instrumentation in ("openinference", "openllmetry")
    for composed in ("", "_composed")
]


def calls_of(name: str) -> int:
    return sum(len(agent.llm_interactions) for agent in converted(name).iter_agents())


@pytest.mark.parametrize("name", NAMES)
def test_each_call_counts_once(name: str) -> None:
    """OpenInference records `OpenAI._prepare_chat_with_tools` (it builds the request and
    sends nothing) and `astream_chat` twice (the LLM class's and its `OpenAI` base's), all
    as LLM spans; composed, the openai client's span of a streamed call starts after
    OpenInference's spans of it end. Each call the server answered is one interaction."""
    assert calls_of(name) == meta(name)["model_calls"]


def test_the_recorded_llm_spans_outnumber_the_calls() -> None:
    records, _, _ = decode((FIXTURES / "llamaindex_workflow_openinference.pb").read_bytes())
    llm = [r for r in records if r.attributes.get("openinference.span.kind") == "LLM"]
    assert len(llm) == 9  # 3 calls: prepare, astream_chat, astream_chat each
    assert sum(r.name.endswith("._prepare_chat_with_tools") for r in llm) == 3


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_agent_turns_and_the_hand_off(instrumentation: str) -> None:
    """No span is an agent's: the workflow's events name the current agent. The triage
    agent hands off with AgentWorkflow's `handoff` tool."""
    trace = converted(f"llamaindex_workflow_{instrumentation}")
    agents = {agent.name: agent for agent in trace.iter_agents()}
    assert agents["triage"].handoff == "weather_agent"
    assert agents["triage"].final_output is None
    assert agents["weather_agent"].handoff is None
    (handoff,) = agents["triage"].llm_interactions[0].tool_calls
    assert (handoff.id, handoff.name) == ("call_handoff", "handoff")


@pytest.mark.parametrize("name", NAMES)
def test_the_tools_offered_are_read(name: str) -> None:
    trace = converted(name)
    for agent in trace.iter_agents():
        for interaction in agent.llm_interactions:
            offered = sorted(tool.name for tool in interaction.tools_available or [])
            expected = {"weather_agent": ["get_weather"], "triage": ["handoff"]}[agent.name]
            if "workflow" in name and agent.name == "weather_agent":
                expected = ["get_weather", "handoff"]  # AgentWorkflow adds its hand-off tool
            assert offered == expected, (name, agent.name)


def test_openllmetry_drops_tool_calls_that_its_tool_steps_restore() -> None:
    """OpenLLMetry's LlamaIndex chat spans write each tool call as an empty part (`"parts":
    []`), in the answer and in later inputs. The input is read from the request it records
    (`traceloop.entity.input`), the answer's tool calls from the tool steps that ran next."""
    records, _, _ = decode((FIXTURES / "llamaindex_agent_openllmetry.pb").read_bytes())
    chat = [r for r in records if r.attributes.get("gen_ai.operation.name") == "chat"]
    assert '"parts": []' in chat[0].attributes["gen_ai.output.messages"]
    trace = converted("llamaindex_agent_openllmetry")
    first, second = trace.root.llm_interactions
    (call,) = first.tool_calls
    assert (call.id, call.name, call.parameters) == (
        "call_weather",
        "get_weather",
        '{"city": "Paris"}',
    )
    assert [m.role for m in second.input_messages] == ["system", "user", "assistant", "tool"]
    assert trace.warnings == []


@pytest.mark.parametrize("composed", ["", "_composed"])
def test_content_capture_off_says_what_is_missing_and_how_to_get_it(composed: str) -> None:
    """OpenLLMetry records no content by default: no messages, and so no workflow event
    names an agent. The trace says both, naming the instrumentation and its setting."""
    trace = converted(f"llamaindex_agent_openllmetry_nocontent{composed}")
    calls = [i for a in trace.iter_agents() for i in a.llm_interactions]
    assert len(calls) == 2 and all(not i.input_messages for i in calls)
    assert [a.name for a in trace.iter_agents()] == ["app" if composed else "root"]
    first, *rest = trace.warnings
    assert first.startswith(f"{OPENLLMETRY} recorded no agent identity")
    assert "TRACELOOP_TRACE_CONTENT=true" in first
    assert len(rest) == 2
    for warning in rest:
        assert f"no message content recorded by {OPENLLMETRY}" in warning
        assert "TRACELOOP_TRACE_CONTENT=true" in warning
