"""Checks in Composo / AsyncComposo `evaluate_trace(criteria=[...])` need no judge, and sit
next to natural-language criteria when there is one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator

import pytest

from tests.checks import faults
from tracejudge import AsyncComposo, Composo, checks
from tracejudge.errors import ConfigurationError
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.rewards import osmosis_reward
from tracejudge.testing import Reply, ScriptedLLMServer

Record = Callable[[faults.Scenario], MultiAgentTrace]
ENVIRONMENT = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TRACEJUDGE_JUDGE",
    "TRACEJUDGE_JUDGE_MODEL",
    "COMPOSO_API_KEY",
    "ANTHROPIC_API_KEY",
)


@osmosis_reward
def answers(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
    return 1.0 if solution_str.strip() else 0.0


@pytest.fixture(autouse=True)
def no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def _ids(trace: MultiAgentTrace) -> dict[str, str]:
    return {a.name: a.id for a in trace.iter_agents()}


def _assert_bad_arguments_found(trace: MultiAgentTrace, result: MultiAgentTraceResponse) -> None:
    ids = _ids(trace)
    assert result.criterion == "tool_arguments"
    assert result.agent_scores == {ids["orchestrator"]: None, ids["researcher"]: 0.0}
    assert result.overall_score == 0.0
    by_id = result.results_by_agent_name["researcher"].results_by_agent_instance_id
    assert "call_bad" in by_id[ids["researcher"]].explanation
    assert result.results_by_agent_name["orchestrator"].results_by_agent_instance_id == {
        ids["orchestrator"]: None
    }


def test_checks_evaluate_a_trace_with_no_judge_configured(record: Record) -> None:
    trace = record(faults.bad_arguments(2))
    with Composo() as client:
        assert client.judge is None
        results = client.evaluate_trace(
            trace, criteria=[checks.tool_arguments, checks.loops, answers]
        )
    arguments, loops, reward = results
    _assert_bad_arguments_found(trace, arguments)
    assert loops.overall_score == 1.0
    assert reward.overall_score == 1.0 and reward.criterion == "answers"


def test_every_check_runs_with_no_judge_and_answers_in_the_wire_shape(record: Record) -> None:
    trace = record(faults.clean())
    criteria = [*checks.ALL, checks.budgets(max_tokens=10_000, max_seconds=60)]
    with Composo() as client:
        results = client.evaluate_trace(trace, criteria=criteria)
    assert [r.criterion for r in results] == [c.name for c in criteria]
    for result in results:
        data = json.loads(result.model_dump_json())
        assert {"request_id", "results_by_agent_name", "agent_scores", "overall_score"} <= set(data)
        for name, by_name in data["results_by_agent_name"].items():
            assert by_name["agent_name"] == name
            assert set(by_name["summary_statistics"]) == {"median", "min", "max", "std"}
            for score in by_name["results_by_agent_instance_id"].values():
                assert score is None or {"score", "explanation"} <= set(score)
        assert result.overall_score == 1.0, (result.criterion, result.explanation)


def test_async_composo_runs_checks_with_no_judge(record: Record) -> None:
    trace = record(faults.bad_arguments(2))

    async def main() -> list[MultiAgentTraceResponse]:
        async with AsyncComposo() as client:
            return await client.evaluate_trace(
                trace, criteria=[checks.tool_arguments, checks.final_answer]
            )

    arguments, final = asyncio.run(main())
    _assert_bad_arguments_found(trace, arguments)
    assert final.criterion == "final_answer" and final.overall_score == 1.0


def test_a_single_check_gives_a_single_response(record: Record) -> None:
    trace = record(faults.clean())
    with Composo() as client:
        result = client.evaluate_trace(trace, criteria=checks.final_answer)
    assert result.overall_score == 1.0


def test_a_check_scores_a_conversation_too() -> None:
    messages = [
        {"role": "user", "content": "What is 6 x 7?"},
        {"role": "assistant", "content": "It is 42, or 48 on a Tuesday."},
    ]
    with Composo() as client:
        grounded, final = client.evaluate(
            messages=messages, criteria=[checks.grounded_numbers, checks.final_answer]
        )
    assert final.score == 1.0
    # 42 is 6 x 7, derived from the input; 48 is made up.
    assert grounded.score == 0.5 and "'48' appears in no input" in grounded.explanation
    assert "'42' is derived from the inputs: 6 × 7" in grounded.explanation


def test_a_text_criterion_next_to_checks_needs_a_judge(record: Record) -> None:
    trace = record(faults.clean())
    with Composo() as client, pytest.raises(ConfigurationError):
        client.evaluate_trace(trace, criteria=[checks.loops, "Reward agents that answer"])


@pytest.fixture
def judge_server() -> Iterator[ScriptedLLMServer]:
    verdict = {"explanation": "Fine.", "applicable": True, "score": 8}
    with ScriptedLLMServer(default=Reply.text(json.dumps(verdict))) as server:
        yield server


def test_checks_and_text_criteria_are_scored_together(
    record: Record, judge_server: ScriptedLLMServer
) -> None:
    trace = record(faults.bad_arguments(2))
    judge = OpenAICompatibleJudge(
        "scripted", base_url=judge_server.base_url, api_key="k", cache=False
    )
    with Composo(judge=judge) as client:
        arguments, judged = client.evaluate_trace(
            trace, criteria=[checks.tool_arguments, "Reward agents that answer the question"]
        )
    _assert_bad_arguments_found(trace, arguments)
    assert judged.criterion == "Reward agents that answer the question"
    scores = list(judged.agent_scores.values())
    assert len(scores) == 2 and scores[0] == scores[1] and 0.5 < scores[0] < 1.0
    # One judge call per agent for the text criterion; none for the check.
    assert len(judge_server.requests) == len(trace.agent_instance_by_id)
