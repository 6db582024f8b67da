"""Verdicts per agent: one failed agent among ten is a failure wherever the trace is read.

The mean over agents (`overall_score`, the seed SDK's) stays as it is; the worst agent,
the failing count and the trace's failing pairs say what the mean hides.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tracejudge import checks
from tracejudge.evaluation.evaluator import summarize_trace_response
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import (
    CHECK_BAR,
    JUDGED_BAR,
    AgentInstance,
    AgentTraceResult,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    ScoreResponse,
    TraceVerdict,
)
from tracejudge.report import ScoreSummary, format_summary, result_lines


def _answer(text: str, finish_reason: str = "stop") -> LLMInteraction:
    return LLMInteraction(
        input_messages=[LLMInput(role="user", content="Write the summary.")],
        output_messages=[LLMOutput(content=text)],
        finish_reason=finish_reason,
    )


def ten_agents(cut_off: str = "writer") -> MultiAgentTrace:
    """An orchestrator over nine workers; the one named `cut_off` stops at the token limit."""
    names = ["writer", *(f"worker{i}" for i in range(1, 9))]
    agents = {
        name: AgentInstance(
            id=f"id-{name}",
            name=name,
            interactions=[
                _answer("The report is done", "length")
                if name == cut_off
                else _answer(f"{name} finished its part.")
            ],
        )
        for name in names
    }
    root = AgentInstance(
        id="id-root",
        name="orchestrator",
        interactions=[_answer("Delegating."), *(f"id-{n}" for n in names)],
    )
    return MultiAgentTrace(
        root_agent_instance_id=root.id,
        agent_instance_by_id={root.id: root, **{a.id: a for a in agents.values()}},
    )


def _score(trace: MultiAgentTrace, *criteria, fail_under: float | None = None):
    service = EvaluationService(fail_under=fail_under)
    return asyncio.run(service.score_trace(trace, list(criteria)))


def test_one_failed_agent_among_ten_is_the_worst_agent_and_fails_the_trace() -> None:
    (response,) = _score(ten_agents(), checks.final_answer)
    # The seed's mean stays a mean ...
    assert response.overall_score == pytest.approx(0.9)
    # ... and the verdict fields say what it hides.
    assert response.fail_under == CHECK_BAR
    assert response.worst_agent is not None
    assert response.worst_agent.agent_name == "writer"
    assert response.worst_agent.agent_instance_id == "id-writer"
    assert response.worst_agent.score == 0.0
    assert response.failing_agents == 1
    assert "1 of 10 below 1: writer 0.00." in response.explanation

    verdict = TraceVerdict.of([response])
    assert verdict.status == "failed" and verdict.failed
    assert verdict.worst_score == 0.0 and verdict.worst_criterion == "final_answer"
    assert verdict.failing_agents == 1 and verdict.scored == 10
    (failure,) = verdict.failures
    assert (failure.agent_name, failure.criterion, failure.score) == ("writer", "final_answer", 0)
    assert "token limit" in failure.explanation or "length" in failure.explanation
    # The finding points at the writer's cut-off model call.
    assert [s.interaction for s in failure.steps] == [0]


def test_a_clean_trace_passes_and_the_worst_agent_is_still_named() -> None:
    (response,) = _score(ten_agents(cut_off="nobody"), checks.final_answer)
    assert response.failing_agents == 0 and response.overall_score == 1.0
    assert response.worst_agent is not None and response.worst_agent.score == 1.0
    verdict = TraceVerdict.of([response])
    assert verdict.status == "passed" and verdict.failures == []


def test_fail_under_sets_one_bar_for_every_criterion() -> None:
    trace = ten_agents(cut_off="nobody")
    (strict,) = _score(trace, checks.final_answer, fail_under=1.0)
    (lenient,) = _score(ten_agents(), checks.final_answer, fail_under=0.0)
    assert strict.fail_under == 1.0 and strict.failing_agents == 0
    assert lenient.fail_under == 0.0 and lenient.failing_agents == 0  # 0.0 is not below 0.0
    assert TraceVerdict.of([lenient]).status == "passed"
    # The verdict can hold answers to another bar than their own.
    (own,) = _score(ten_agents(), checks.final_answer)
    assert TraceVerdict.of([own], fail_under=0.0).status == "passed"
    with pytest.raises(ValueError, match="fail_under"):
        EvaluationService(fail_under=1.5)


def _remote(scores: dict[str, float | None], **fields) -> MultiAgentTraceResponse:
    """An answer as a remote server sends it: the wire fields only."""
    return MultiAgentTraceResponse(
        request_id="r",
        criterion="Reward agents that stay on task",
        results_by_agent_name={
            name: AgentTraceResult(
                agent_name=name,
                results_by_agent_instance_id={
                    f"id-{name}": None
                    if score is None
                    else ScoreResponse(score=score, explanation=f"{name} said so")
                },
            )
            for name, score in scores.items()
        },
        **fields,
    )


def test_a_remote_answer_gets_the_judged_bar_and_its_worst_agent() -> None:
    filled = summarize_trace_response(_remote({"planner": 1.0, "writer": 0.2, "critic": None}))
    assert filled.fail_under == JUDGED_BAR
    assert filled.worst_agent is not None and filled.worst_agent.agent_name == "writer"
    assert filled.failing_agents == 1
    assert filled.overall_score == pytest.approx(0.6)
    # An answer that names its bar keeps it.
    own = summarize_trace_response(_remote({"writer": 0.6}, fail_under=0.8))
    assert own.fail_under == 0.8 and own.failing_agents == 1
    # An explicit default applies only where the answer names none.
    assert summarize_trace_response(_remote({"writer": 0.6}), fail_under=0.7).failing_agents == 1


def test_not_applicable_and_not_evaluated_neither_pass_nor_fail() -> None:
    response = summarize_trace_response(_remote({"writer": 0.0, "critic": None}))
    skipped = response.results_by_agent_name["writer"].results_by_agent_instance_id
    skipped["id-writer"] = ScoreResponse(
        explanation="The trace is over the judge's budget.", not_evaluated="budget"
    )
    assert skipped["id-writer"].status == "not_evaluated"
    verdict = TraceVerdict.of([response])
    assert verdict.status == "unscored" and verdict.not_evaluated == 1
    assert verdict.not_applicable == 1 and verdict.worst_score is None
    with pytest.raises(ValueError, match="not evaluated"):
        ScoreResponse(score=0.5, explanation="x", not_evaluated="budget")


def test_the_summary_counts_failing_agents_and_means_beside_the_median() -> None:
    summary = ScoreSummary()
    for number in range(10):
        trace = ten_agents(cut_off="writer" if number < 3 else "nobody")
        summary.add(result_lines(f"t{number}", trace, _score(trace, checks.final_answer)))
    assert summary.failing_traces == {"t0", "t1", "t2"}
    stats = summary.stats("writer", "final_answer")
    assert stats is not None
    assert (stats.scored, stats.failing) == (10, 3)
    assert stats.mean == pytest.approx(0.7) and stats.median == 1.0 and stats.min == 0.0
    text = format_summary(summary)
    assert "failing" in text and "mean" in text
    writer_row = next(line for line in text.splitlines() if line.startswith("writer"))
    assert "3/10" in writer_row and "0.70" in writer_row
    assert text.splitlines()[-1] == "10 traces, 3 failing (an agent below 1)"
    assert [f.agent for f in summary.findings] == ["writer", "writer", "writer"]


def test_score_exits_1_when_one_agent_of_ten_is_below_fail_under(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "trace.json"
    path.write_text(ten_agents().to_json())
    command = [sys.executable, "-m", "tracejudge", "score", str(path), "--check", "final_answer"]
    failing = subprocess.run(
        [*command, "--fail-under", "0.5", "--json"], capture_output=True, text=True
    )
    # The mean is 0.9: only the writer's own score can fail the run.
    assert failing.returncode == 1, failing.stderr
    summary = json.loads(failing.stdout)["summary"]
    assert summary["failing_traces"] == 1
    assert summary["worst_findings"][0]["agent"] == "writer"
    assert summary["worst_findings"][0]["steps"] == [{"interaction": 0}]
    passing = subprocess.run([*command, "--fail-under", "0.0"], capture_output=True, text=True)
    assert passing.returncode == 0, passing.stderr


def test_scores_by_agent_name_prints_names_and_the_worst_instance() -> None:
    (result,) = _score(ten_agents(), checks.final_answer)
    by_name = result.scores_by_agent_name()
    assert list(by_name)[:2] == ["orchestrator", "writer"]
    assert by_name["writer"] == 0.0 and by_name["worker3"] == 1.0
    assert set(result.agent_scores) == {
        "id-root",
        "id-writer",
        *(f"id-worker{i}" for i in range(1, 9)),
    }
    # Two instances of one name: the worst one's score; a name never scored: None.
    two = MultiAgentTraceResponse(
        request_id="r",
        results_by_agent_name={
            "writer": AgentTraceResult(
                agent_name="writer",
                results_by_agent_instance_id={
                    "w1": ScoreResponse(score=0.9, explanation=""),
                    "w2": ScoreResponse(score=0.4, explanation=""),
                    "w3": None,
                },
            ),
            "critic": AgentTraceResult(
                agent_name="critic", results_by_agent_instance_id={"c": None}
            ),
        },
    )
    assert two.scores_by_agent_name() == {"writer": 0.4, "critic": None}
