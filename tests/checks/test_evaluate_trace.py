"""Checks in Composo().evaluate_trace(criteria=[...]) need no judge."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.checks import faults
from tracejudge import Composo, checks
from tracejudge.models import MultiAgentTrace
from tracejudge.rewards import osmosis_reward

Record = Callable[[faults.Scenario], MultiAgentTrace]


@osmosis_reward
def answers(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
    return 1.0 if solution_str.strip() else 0.0


@pytest.fixture
def no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TRACEJUDGE_JUDGE", "COMPOSO_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_checks_evaluate_a_trace_with_no_judge_configured(no_judge: None, record: Record) -> None:
    trace = record(faults.bad_arguments(2))
    with Composo() as client:
        assert client.judge is None
        results = client.evaluate_trace(
            trace, criteria=[checks.tool_arguments, checks.loops, answers]
        )
    arguments, loops, reward = results
    ids = {a.name: a.id for a in trace.iter_agents()}
    assert arguments.agent_scores == {ids["orchestrator"]: None, ids["researcher"]: 0.0}
    assert arguments.overall_score == 0.0
    assert (
        "call_bad"
        in arguments.results_by_agent_name["researcher"]
        .results_by_agent_instance_id[ids["researcher"]]
        .explanation
    )
    assert loops.overall_score == 1.0
    assert reward.overall_score == 1.0


def test_a_single_check_gives_a_single_response(no_judge: None, record: Record) -> None:
    trace = record(faults.clean())
    with Composo() as client:
        result = client.evaluate_trace(trace, criteria=checks.final_answer)
    assert result.overall_score == 1.0
