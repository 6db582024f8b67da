"""checks.budgets: per-agent token and wall-time budgets from recorded usage and timings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from tests.checks import faults
from tracejudge import checks
from tracejudge.models import AgentInstance, MultiAgentTrace
from tracejudge.testing import Reply, ToolCall

Record = Callable[[faults.Scenario], MultiAgentTrace]


def _ids(trace: MultiAgentTrace) -> dict[str, str]:
    return {a.name: a.id for a in trace.iter_agents()}


def test_tokens_are_counted_per_agent_from_its_own_calls(record: Record) -> None:
    # Every scripted reply reports 40 + 10 tokens; each agent makes two calls.
    trace = record(faults.clean())
    ids = _ids(trace)
    within = checks.budgets(max_tokens=100).evaluate(trace)
    assert within[ids["orchestrator"]].score == 1.0
    assert "orchestrator used 100 tokens" in within[ids["orchestrator"]].explanation
    over = checks.budgets(max_tokens=80).evaluate(trace)
    assert over[ids["researcher"]].score == pytest.approx(0.8)
    assert "over its budget of 80" in over[ids["researcher"]].explanation
    # The researcher's tokens are not the orchestrator's: a child is checked on its own.
    assert over[ids["orchestrator"]].score == pytest.approx(0.8)


def test_wall_time_runs_from_first_start_to_last_end(record: Record) -> None:
    slow = Reply.tool_calls([ToolCall("get_weather", {"city": "Lima"}, id="c1")], delay=0.3)
    scenario = dataclasses.replace(
        faults.clean("Lima", 22, "cloudy"),
        researcher=(slow, Reply.text("Findings: it is 22°C and cloudy in Lima.")),
    )
    trace = record(scenario)
    ids = _ids(trace)
    results = checks.budgets(max_seconds=0.2).evaluate(trace)
    researcher = results[ids["researcher"]]
    assert researcher.score is not None and researcher.score < 1.0
    assert "researcher call 1" in researcher.explanation  # the slowest call
    # The orchestrator's window spans the researcher's run, which is not its own time.
    orchestrator = results[ids["orchestrator"]]
    assert orchestrator.score == 1.0
    assert "of it in child agents" in orchestrator.explanation
    assert checks.budgets(max_seconds=30).evaluate(trace)[ids["researcher"]].score == 1.0


def test_both_budgets_score_the_worse_of_the_two(record: Record) -> None:
    trace = record(faults.clean())
    result = checks.budgets(max_tokens=50, max_seconds=30).evaluate(trace)[trace.root.id]
    assert result.score == pytest.approx(0.5)
    assert checks.budgets(max_tokens=50, max_seconds=30).name == (
        "budgets(max_tokens=50, max_seconds=30)"
    )


def test_missing_usage_and_timings_mean_not_applicable() -> None:
    agent = AgentInstance.from_chat_session(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    trace = MultiAgentTrace.from_agent(agent)
    result = checks.budgets(max_tokens=10, max_seconds=1).evaluate(trace)[agent.id]
    assert result is not None and result.score is None
    assert "no token usage recorded" in result.explanation
    assert "no timings recorded" in result.explanation


def test_budgets_need_a_positive_limit() -> None:
    with pytest.raises(ValueError, match="max_tokens, max_seconds or both"):
        checks.budgets()
    with pytest.raises(ValueError, match="positive"):
        checks.budgets(max_tokens=0)
