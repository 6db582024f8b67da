"""Responses API spans: a researcher agent with two tool rounds (two parallel calls first)."""

from __future__ import annotations

import json

import pytest

from tests import scenario
from tests.convert._helpers import canonical, fixture
from tests.fixtures.record import QUESTION, RESEARCHER_INSTRUCTIONS
from tracejudge.convert import traces_from_otlp
from tracejudge.models import LLMToolCall, LLMToolResponse, MultiAgentTrace


def _trace(name: str, suffix: str = ".jsonl") -> MultiAgentTrace:
    (trace,) = traces_from_otlp(fixture(f"{name}_responses", suffix))
    return trace


@pytest.mark.parametrize("name", ["openllmetry", "openinference"])
def test_responses_api_spans_convert_with_matched_tool_ids(name: str) -> None:
    trace = _trace(name)
    assert trace.warnings == []
    assert trace.root.name == "researcher"
    first, second, third = trace.root.llm_interactions
    # `instructions` is the leading system message.
    assert [(m.role, m.content) for m in first.input_messages] == [
        ("system", RESEARCHER_INSTRUCTIONS),
        ("user", QUESTION),
    ]
    assert [c.id for c in first.tool_calls] == ["call_s1", "call_s2"]
    assert [json.loads(c.parameters) for c in first.tool_calls] == [
        {"query": "sf weather"},
        {"query": "san francisco forecast"},
    ]
    assert [c.id for c in second.tool_calls] == ["call_f1"]
    assert third.output_text == scenario.FINDINGS
    assert {d.name for d in third.tools_available or []} == {"search", "fetch_page"}
    # Every result in the last request answers a call made before it, by id.
    calls = {m.content.id: m.content for m in third.input_messages if isinstance(m.content, LLMToolCall)}
    results = [m.content for m in third.input_messages if isinstance(m.content, LLMToolResponse)]
    assert [r.id for r in results] == ["call_s1", "call_s2", "call_f1"]
    assert all(r.id in calls and r.name == calls[r.id].name for r in results)


def test_openllmetry_item_ids_are_joined_to_call_ids() -> None:
    raw = fixture("openllmetry_responses", ".jsonl").read_text()
    # OpenLLMetry records the item ids of the calls; the results carry the call ids.
    assert '\\"id\\": \\"fc_1\\"' in raw and '\\"id\\": \\"call_s1\\"' in raw
    converted = _trace("openllmetry").to_json()
    assert "fc_" not in converted


def test_responses_api_recordings_agree() -> None:
    assert canonical(_trace("openllmetry")) == canonical(_trace("openinference"))
    assert _trace("openllmetry", ".pb").to_wire() == _trace("openllmetry").to_wire()


def test_legacy_openllmetry_responses_api_loses_tool_items() -> None:
    """OpenLLMetry 0.54 drops function_call / function_call_output input items of the
    Responses API, so tool rounds cannot be rebuilt; the item ids stay unjoined."""
    trace = _trace("openllmetry_legacy")
    for interaction in trace.root.llm_interactions:
        assert [m.role for m in interaction.input_messages] == ["system", "user"]
    first = trace.root.llm_interactions[0]
    assert [c.id for c in first.tool_calls] == ["fc_1", "fc_2"]
    assert trace.root.llm_interactions[-1].output_text == scenario.FINDINGS
