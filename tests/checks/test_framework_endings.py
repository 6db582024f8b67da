"""The checks on traces of real agent-framework programs (tests/fixtures/frameworks): a
hand-off and a `final_answer` tool call are proper endings, a routing decision is not an
answer, and a program that did nothing wrong fails no check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracejudge import checks
from tracejudge.convert import traces_from_otlp
from tracejudge.models import MultiAgentTrace, is_routing_decision

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
RECORDINGS = sorted(path.name[: -len(".meta.json")] for path in FIXTURES.glob("*.meta.json"))
#: The instrumentation recorded no outputs (the converter warns; see test_frameworks).
INCOMPLETE = {"openai_agents_openllmetry_chat"}
#: OpenInference's smolagents instrumentation leaves managed agents out of the tools it
#: records, so a call to one reads as a call to a tool that was not offered.
KNOWN_TOOL_GAPS = {("smolagents_openinference", "tool_arguments", "manager")}


def trace_of(name: str) -> MultiAgentTrace:
    (trace,) = [t for t in traces_from_otlp(FIXTURES / f"{name}.pb") if t.has_llm_interactions]
    return trace


def final_answer_scores(trace: MultiAgentTrace) -> dict[str, list[float | None]]:
    scores: dict[str, list[float | None]] = {}
    for agent_id, score in checks.final_answer.evaluate(trace).items():
        name = trace.agent_instance_by_id[agent_id].name
        scores.setdefault(name, []).append(None if score is None else score.score)
    return scores


@pytest.mark.parametrize("name", [n for n in RECORDINGS if n not in INCOMPLETE])
def test_no_check_fails_a_program_that_did_nothing_wrong(name: str) -> None:
    trace = trace_of(name)
    for check in checks.ALL:
        for agent_id, score in check.evaluate(trace).items():
            agent = trace.agent_instance_by_id[agent_id].name
            if score is None or score.score is None or (name, check.name, agent) in KNOWN_TOOL_GAPS:
                continue
            assert score.score == 1.0, (name, check.name, agent, score.explanation)


@pytest.mark.parametrize("name", [n for n in RECORDINGS if n.startswith("openai_agents")])
def test_a_handoff_is_a_proper_ending(name: str) -> None:
    trace = trace_of(name)
    (triage,) = [a for a in trace.iter_agents() if a.name == "triage"]
    score = checks.final_answer.evaluate(trace)[triage.id]
    if name in INCOMPLETE:
        # No output was recorded: the empty answer fails, and the converter said why.
        assert score is not None and score.score == 0.0
        assert trace.warnings
        return
    assert score is not None and score.score is None
    assert "handed off to weather_specialist" in score.explanation
    assert final_answer_scores(trace)["weather_specialist"] == [1.0]


@pytest.mark.parametrize("name", [n for n in RECORDINGS if n.startswith("smolagents")])
def test_a_final_answer_tool_call_is_the_answer(name: str) -> None:
    trace = trace_of(name)
    result = checks.final_answer.evaluate(trace)
    for agent in trace.iter_agents():
        if agent.name in ("manager", "web_agent"):
            score = result[agent.id]
            assert score is not None and score.score == 1.0, score
            call = agent.llm_interactions[-1].tool_calls[0]
            assert call.name == "final_answer"
            assert json.loads(call.parameters)["answer"] in score.explanation


@pytest.mark.parametrize("name", [n for n in RECORDINGS if n.startswith("langgraph")])
def test_a_routing_decision_is_not_an_answer(name: str) -> None:
    trace = trace_of(name)
    scores = final_answer_scores(trace)
    assert scores["supervisor"] == [None, None, None]
    assert scores["writer"] == [1.0] and scores["researcher"] == [1.0]
    assert not is_routing_decision(trace.final_output)
    assert trace.final_output is not None and trace.final_output.startswith("Report:")


def test_routing_decisions() -> None:
    for text in ('{"next": "FINISH"}', '{"next": "writer"}', '{"goto": "a", "reason": "b"}'):
        assert is_routing_decision(text), text
    for text in (
        None,
        "",
        "FINISH",
        '{"answer": "Paris"}',
        '{"next": 3}',
        '["next"]',
        '{"next": "a", "b": 1, "c": 2, "d": 3}',
    ):
        assert not is_routing_decision(text), text
