"""Responses API spans: a lead agent with two researchers, each with two tool rounds (two
parallel calls first). One researcher feeds the output items back as input; the other
chains with `previous_response_id` and sends only the tool outputs."""

from __future__ import annotations

import json

import pytest

from tests import scenario
from tests.convert._helpers import canonical, fixture
from tests.fixtures.record import QUESTION, RESEARCHER_INSTRUCTIONS
from tracejudge.convert import traces_from_otlp
from tracejudge.models import AgentInstance, LLMToolCall, LLMToolResponse, MultiAgentTrace

SEARCHES = [{"query": "sf weather"}, {"query": "san francisco forecast"}]


def _trace(name: str, suffix: str = ".jsonl") -> MultiAgentTrace:
    (trace,) = traces_from_otlp(fixture(f"{name}_responses", suffix))
    return trace


def _agents(trace: MultiAgentTrace) -> dict[str, AgentInstance]:
    return {agent.name: agent for agent in trace.iter_agents()}


def _results(interaction: object) -> list[LLMToolResponse]:
    messages = interaction.input_messages  # type: ignore[attr-defined]
    return [m.content for m in messages if isinstance(m.content, LLMToolResponse)]


@pytest.mark.parametrize("name", ["openllmetry", "openinference"])
def test_responses_api_spans_convert_with_matched_tool_ids(name: str) -> None:
    trace = _trace(name)
    assert trace.warnings == []
    assert trace.root.name == "lead"
    assert [trace.agent_instance_by_id[c].name for c in trace.root.child_ids] == [
        "researcher",
        "chained_researcher",
    ]
    for agent in _agents(trace).values():
        if agent.name == "lead":
            continue
        first, second, third = agent.llm_interactions
        # `instructions` is the leading system message.
        assert [(m.role, m.content) for m in first.input_messages] == [
            ("system", RESEARCHER_INSTRUCTIONS),
            ("user", QUESTION),
        ]
        assert [c.id for c in first.tool_calls] == ["call_s1", "call_s2"]
        assert [json.loads(c.parameters) for c in first.tool_calls] == SEARCHES
        assert [c.id for c in second.tool_calls] == ["call_f1"]
        assert [(r.id, r.name) for r in _results(second)] == [
            ("call_s1", "search"),
            ("call_s2", "search"),
        ]
        assert [(r.id, r.name) for r in _results(third)][-1] == ("call_f1", "fetch_page")
        assert third.output_text == scenario.FINDINGS
        assert {d.name for d in third.tools_available or []} == {"search", "fetch_page"}


def test_fed_back_items_answer_calls_made_in_the_same_request() -> None:
    researcher = _agents(_trace("openllmetry"))["researcher"]
    last = researcher.llm_interactions[-1]
    calls = {
        m.content.id: m.content for m in last.input_messages if isinstance(m.content, LLMToolCall)
    }
    assert list(calls) == ["call_s1", "call_s2", "call_f1"]
    assert all(r.id in calls and r.name == calls[r.id].name for r in _results(last))


def test_openllmetry_item_ids_are_joined_to_call_ids() -> None:
    raw = fixture("openllmetry_responses", ".jsonl").read_text()
    # OpenLLMetry records the item ids of the calls; the results carry the call ids.
    assert '\\"id\\": \\"fc_1\\"' in raw and '\\"id\\": \\"call_s1\\"' in raw
    assert "fc_" not in _trace("openllmetry").to_json()


def test_responses_api_recordings_agree() -> None:
    assert canonical(_trace("openllmetry")) == canonical(_trace("openinference"))
    assert _trace("openllmetry", ".pb").to_wire() == _trace("openllmetry").to_wire()
    assert _trace("openinference", ".pb").to_wire() == _trace("openinference").to_wire()


def test_legacy_openllmetry_responses_api_loses_tool_items() -> None:
    """OpenLLMetry 0.54 drops the function_call / function_call_output input items of the
    Responses API, so tool rounds cannot be rebuilt, and the item ids stay unjoined."""
    agents = _agents(_trace("openllmetry_legacy"))
    researcher, chained = agents["researcher"], agents["chained_researcher"]
    for interaction in researcher.llm_interactions:
        assert [m.role for m in interaction.input_messages] == ["system", "user"]
    for interaction in chained.llm_interactions[1:]:
        assert [m.role for m in interaction.input_messages] == ["system"]
    assert [c.id for c in researcher.llm_interactions[0].tool_calls] == ["fc_1", "fc_2"]
    assert researcher.llm_interactions[-1].output_text == scenario.FINDINGS
