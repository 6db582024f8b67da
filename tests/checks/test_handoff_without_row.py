"""A hand-off is a proper ending whatever the producer calls it, even where no row of the
conventions table says it was one (a framework nobody added: its recording converted with
its producer's row taken out, as the leave-one-out benchmark does)."""

from __future__ import annotations

import pytest

from tests.fixtures.frameworks import expectations
from tracejudge import checks
from tracejudge.convert import conventions
from tracejudge.models import MultiAgentTrace


def without(name: str, row: conventions.Convention) -> MultiAgentTrace:
    with conventions.rows_removed(row):
        traces = expectations.convert(name)
    return max(traces, key=lambda t: sum(len(a.llm_interactions) for a in t.iter_agents()))


@pytest.mark.parametrize(
    ("name", "row", "agent", "target", "tool"),
    [
        # Agent Framework's `handoff_to_<agent>`: the target in the tool's name.
        (
            "agent_framework_handoff",
            conventions.AGENT_FRAMEWORK,
            "triage",
            "weather_specialist",
            "handoff_to_weather_specialist",
        ),
        # Google ADK's `transfer_to_agent`: its arguments (not read without the row) name
        # the target; the agent that ran next took the work on.
        ("adk_transfer_v1", conventions.ADK, "coordinator", "weather_agent", "transfer_to_agent"),
    ],
)
def test_a_handoff_with_no_row_is_not_an_unanswered_run(
    name: str, row: conventions.Convention, agent: str, target: str, tool: str
) -> None:
    trace = without(name, row)
    (handing,) = [a for a in trace.iter_agents() if a.name == agent]
    assert handing.handoff is None  # nothing but the tool call says it handed off
    assert [c.name for c in handing.llm_interactions[-1].tool_calls] == [tool]
    score = checks.final_answer.evaluate(trace)[handing.id]
    assert score is not None and score.score is None, score
    assert f"handed off to {target}" in score.explanation


def test_a_transfer_tool_with_no_agent_after_it_is_still_a_dangling_call() -> None:
    trace = without("agent_framework_handoff", conventions.AGENT_FRAMEWORK)
    (triage,) = [a for a in trace.iter_agents() if a.name == "triage"]
    for agent in list(trace.iter_agents()):
        if agent is not triage:
            agent.name = "someone_else"
            agent.interactions = []
    score = checks.final_answer.evaluate(trace)[triage.id]
    assert score is not None and score.score == 0.0
    assert "never saw the result of" in score.explanation
