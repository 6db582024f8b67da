"""The trace viewer's data (`trace_entry`): the verdict with the steps findings point to,
the timeline's times, tokens and costs, "not evaluated" as its own status, and bounds that
hold on huge traces. Traces come from running real code: the demo program, and the
checks' scripted agents on the real openai client."""

from __future__ import annotations

import json
from pathlib import Path

from tests.checks import faults
from tracejudge import checks
from tracejudge._sync import run
from tracejudge.evaluation.attribution import from_answers
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import (
    AgentInstance,
    AgentTraceResult,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    PriceTable,
    ScoreResponse,
    TraceVerdict,
)
from tracejudge.report import result_lines, trace_entry
from tracejudge.report.trace_view import MAX_CAUSES, MAX_TEXT


def _scored(trace: MultiAgentTrace, criteria: list[object] | None = None) -> dict[str, object]:
    responses = run(EvaluationService().score_trace(trace, criteria or list(checks.ALL)))
    return trace_entry("t", trace, result_lines("t", trace, responses))


def _agent(entry: dict, name: str) -> int:
    return next(k for k, a in enumerate(entry["agents"]) if a["name"] == name)


def test_findings_point_at_the_steps_of_the_demo_s_planted_faults(demo_trace: Path) -> None:
    trace = MultiAgentTrace.from_json(demo_trace.read_text())
    entry = _scored(trace)
    researcher, writer = _agent(entry, "researcher"), _agent(entry, "writer")
    assert entry["status"] == "failed" and entry["failing"] is True
    failures = entry["verdict"]["failures"]
    assert [(f["criterion"], f["agent"]) for f in failures] == [
        ("tool_arguments", researcher),
        ("grounded_numbers", writer),
    ]
    # the malformed hotel search is the researcher's first call; the invented "15%" the
    # writer's only one
    assert failures[0]["steps"] == [[researcher, 0, "call_h1", "search_hotels"]]
    assert failures[1]["steps"] == [[writer, 0, None, None]]
    assert all(f["bar"] == 1.0 and f["score"] < 1.0 for f in failures)
    assert "max_price" in failures[0]["explanation"]


def test_the_verdict_read_back_from_result_lines_is_the_responses_verdict(
    bad_arguments_trace: MultiAgentTrace,
) -> None:
    trace = bad_arguments_trace
    responses = run(EvaluationService().score_trace(trace, list(checks.ALL)))
    lines = result_lines("t", trace, responses)
    verdict = TraceVerdict.of(responses)
    from_lines = trace_entry("t", trace, json.loads(json.dumps(lines)))  # as --resume reads
    assert from_lines == trace_entry("t", trace, lines, verdict=verdict)
    assert from_lines["worst"] == verdict.worst_score
    researcher = _agent(from_lines, "researcher")
    (failure,) = [
        f for f in from_lines["verdict"]["failures"] if f["criterion"] == "tool_arguments"
    ]
    assert failure["steps"] == [[researcher, 0, "call_bad", "get_weather"]]


def test_the_timeline_times_agents_calls_and_tool_runs_from_what_was_recorded(
    demo_trace: Path,
) -> None:
    trace = MultiAgentTrace.from_json(demo_trace.read_text())
    entry = _scored(trace)
    origin = min(c.start_time for a in trace.iter_agents() for c in a.llm_interactions)
    assert entry["start"] == origin
    for node, agent in zip(entry["agents"], trace.iter_agents(), strict=True):
        calls = agent.llm_interactions
        assert len(node["steps"]) == len(calls) == node["n"]
        for step, call in zip(node["steps"], calls, strict=True):
            assert step["t0"] == round((call.start_time - origin) * 1000, 3)
            assert abs(step["t1"] - step["t0"] - call.duration_seconds * 1000) < 0.01
            assert step["tokens"] == [call.usage.input_tokens, call.usage.output_tokens]
        # an agent spans its calls and its children's
        starts = [s["t0"] for s in node["steps"]] + [
            entry["agents"][c]["t0"] for _, c in node["children"]
        ]
        assert node["t0"] == min(starts)
    researcher = entry["agents"][_agent(entry, "researcher")]
    first, second = researcher["steps"][0], researcher["steps"][1]
    # both tools of the first turn ran between the end of call 1 and the start of call 2
    assert [t[:3] for t in first["tools"]] == [
        ["get_weather", "call_weather", 1],
        ["search_hotels", "call_h1", 1],
    ]
    assert all(t[3] == first["t1"] and t[4] == second["t0"] for t in first["tools"])
    # the demo's models have no price: tokens only, the calls counted as unpriced
    assert "cost" not in first and entry["totals"]["unpriced"] == entry["totals"]["calls"]


def test_costs_come_from_the_price_table(demo_trace: Path) -> None:
    trace = MultiAgentTrace.from_json(demo_trace.read_text())
    prices = PriceTable({"scripted-model": {"input": 1.0, "output": 3.0}})
    entry = trace_entry("t", trace, result_lines("t", trace, []), prices=prices)
    steps = [s for a in entry["agents"] for s in a["steps"]]
    for step in steps:
        assert step["cost"] == (step["tokens"][0] * 1.0 + step["tokens"][1] * 3.0) / 1e6
    assert entry["totals"]["unpriced"] == 0
    assert abs(entry["totals"]["cost"] - sum(s["cost"] for s in steps)) < 1e-12


def test_without_recorded_times_nothing_is_timed(bad_arguments_trace: MultiAgentTrace) -> None:
    untimed = MultiAgentTrace.from_json(bad_arguments_trace.to_json(compat=True))
    entry = trace_entry("t", untimed, result_lines("t", untimed, []))
    assert entry["start"] is None and "ms" not in entry["totals"]
    for node in entry["agents"]:
        assert "t0" not in node and "t1" not in node
        for step in node["steps"]:
            assert "t0" not in step and "tokens" not in step
            assert all(t[3] is None and t[4] is None for t in step["tools"])


def test_a_result_that_could_not_be_evaluated_is_its_own_status() -> None:
    agent = faults.long_agent(2)
    trace = MultiAgentTrace.from_agent(agent)
    response = MultiAgentTraceResponse(
        request_id="r",
        criterion="Reward careful answers",
        fail_under=0.5,
        results_by_agent_name={
            agent.name: AgentTraceResult(
                agent_name=agent.name,
                results_by_agent_instance_id={
                    agent.id: ScoreResponse(
                        explanation="", not_evaluated="the judge budget ran out"
                    )
                },
            )
        },
    )
    entry = trace_entry("t", trace, result_lines("t", trace, [response]))
    assert entry["status"] == "unscored" and entry["worst"] is None
    assert entry["verdict"]["not_evaluated"] == [
        {"criterion": "Reward careful answers", "agent": 0, "reason": "the judge budget ran out"}
    ]
    (row,) = entry["results"][0]["agents"]
    assert row["score"] is None and row["not_evaluated"] == "the judge budget ran out"


def test_a_huge_trace_stays_bounded() -> None:
    # 3,001 calls, each resending the whole conversation: 9M input messages in all
    agent = faults.long_agent(3000)
    trace = MultiAgentTrace.from_agent(agent)
    entry = trace_entry("t", trace, result_lines("t", trace, []))
    (node,) = entry["agents"]
    assert len(node["steps"]) == 3001
    # each call keeps only what it added to the conversation
    assert all(c["skip"] == 2 * i for i, c in enumerate(node["calls"]) if i > 0)
    assert all(len(c["in"]) <= 2 for c in node["calls"][1:])
    assert len(json.dumps(entry)) < 2_000_000
    small = trace_entry(
        "t", trace, result_lines("t", trace, []), max_steps=100, max_call_text=10_000
    )
    (node,) = small["agents"]
    assert len(node["steps"]) == 100 and small["steps_left_out"] == 2901
    kept = [c for c in node["calls"] if c is not None]
    assert 0 < len(kept) < 3001 and node["calls"][-1] is None
    assert len(json.dumps(small)) < 200_000


def test_an_agent_that_rewrites_its_history_shows_every_message() -> None:
    first = AgentInstance.from_chat_session(
        [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "b"},
        ]
    )
    summarised = first.llm_interactions[1].model_copy(deep=True)
    summarised.input_messages[0].content = "summary of one"
    agent = AgentInstance(id="a", name="a", interactions=[first.llm_interactions[0], summarised])
    entry = trace_entry("t", MultiAgentTrace.from_agent(agent), [])
    second = entry["agents"][0]["calls"][1]
    assert "skip" not in second and second["in"][0][2] == "summary of one"


def test_a_failed_trace_carries_its_ranked_causes(demo_trace: Path) -> None:
    trace = MultiAgentTrace.from_json(demo_trace.read_text())
    responses = run(EvaluationService().score_trace(trace, list(checks.ALL)))
    attribution = from_answers(trace, responses)
    lines = result_lines("t", trace, responses)
    entry = trace_entry("t", trace, lines, attribution=attribution)
    shown = entry["attribution"]
    assert shown["methods"] == ["checks"] and "usage" not in shown
    researcher, writer = _agent(entry, "researcher"), _agent(entry, "writer")
    # the malformed hotel search comes first, then the writer's invented number
    causes = shown["causes"]
    assert [(c["rank"], c["agent"], c["step"]) for c in causes] == [
        (1, researcher, [researcher, 0, "call_h1", "search_hotels"]),
        (2, writer, [writer, 0, None, None]),
    ]
    for cause, given in zip(causes, attribution.causes, strict=True):
        assert cause["index"] == given.index and cause["method"] == "checks"
        assert cause["criteria"] == given.criteria and cause["confidence"] == given.confidence
        assert cause["evidence"] == given.evidence
    assert causes[0]["criteria"] == ["tool_arguments"]
    # the causes' steps are the verdict's findings' steps: one page, one way to point
    assert [f["steps"][0] for f in entry["verdict"]["failures"]] == [c["step"] for c in causes]
    said = attribution.model_copy(update={"outcome": "the hotel was over budget"})
    assert trace_entry("t", trace, lines, attribution=said)["attribution"]["outcome"] == (
        "the hotel was over budget"
    )
    assert "outcome" not in shown
    # no attribution given, or nothing failed: no section
    assert "attribution" not in trace_entry("t", trace, lines)
    assert "attribution" not in trace_entry(
        "t", trace, lines, attribution=attribution.model_copy(update={"failed": False})
    )


def test_an_attribution_of_many_causes_stays_bounded(demo_trace: Path) -> None:
    trace = MultiAgentTrace.from_json(demo_trace.read_text())
    responses = run(EvaluationService().score_trace(trace, list(checks.ALL)))
    attribution = from_answers(trace, responses)
    (first, *_) = attribution.causes
    many = [first.model_copy(update={"rank": n + 1, "evidence": "x" * 10_000}) for n in range(50)]
    lost = first.model_copy(update={"rank": 51, "agent_instance_id": "not-in-this-trace"})
    big = attribution.model_copy(update={"causes": [*many, lost]})
    shown = trace_entry("t", trace, result_lines("t", trace, responses), attribution=big)[
        "attribution"
    ]
    assert len(shown["causes"]) == MAX_CAUSES and shown["left_out"] == 50 - MAX_CAUSES
    assert all(len(c["evidence"]) < MAX_TEXT + 50 for c in shown["causes"])
    assert [c["rank"] for c in shown["causes"]] == list(range(1, MAX_CAUSES + 1))
