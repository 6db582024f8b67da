"""Each planted fault is flagged by exactly the right check, on exactly the right agent.

Traces come from running the scripted orchestrator/researcher pair through the real
openai client and tracer (see `faults.py`); "flagged" means a score below 1.0.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.checks import faults
from tracejudge import checks
from tracejudge.models import MultiAgentTrace
from tracejudge.testing import Reply, ToolCall

Record = Callable[[faults.Scenario], MultiAgentTrace]

ALL_CHECKS = [*checks.ALL, checks.budgets(max_tokens=faults.TOKEN_BUDGET, max_seconds=30)]


def _flagged(trace: MultiAgentTrace) -> set[tuple[str, str]]:
    found = set()
    for check in ALL_CHECKS:
        for agent_id, result in check.evaluate(trace).items():
            if result is not None and result.score is not None and result.score < 1.0:
                found.add((faults.base_name(check.name), trace.agent_instance_by_id[agent_id].name))
    return found


def _by_name(trace: MultiAgentTrace, name: str) -> str:
    return next(a.id for a in trace.iter_agents() if a.name == name)


@pytest.mark.parametrize("scenario", faults.clean_variants(), ids=lambda s: s.name)
def test_clean_traces_score_one_on_every_check(record: Record, scenario: faults.Scenario) -> None:
    trace = record(scenario)
    assert {a.name for a in trace.iter_agents()} == {faults.ORCHESTRATOR, faults.RESEARCHER}
    for check in ALL_CHECKS:
        results = check.evaluate(trace)
        scored = {k: v.score for k, v in results.items() if v is not None and v.score is not None}
        assert all(score == 1.0 for score in scored.values()), (check.name, results)
        assert scored, f"{check.name} scored no agent of a clean trace"


FAULTY = [make(v) for make in faults.FAULTS.values() for v in range(4)]


@pytest.mark.parametrize("scenario", FAULTY, ids=lambda s: s.name)
def test_planted_fault_is_flagged_by_exactly_the_right_check_and_agent(
    record: Record, scenario: faults.Scenario
) -> None:
    trace = record(scenario)
    assert _flagged(trace) == {scenario.fault}


@pytest.mark.parametrize(
    ("scenario", "needles"),
    [
        (faults.wrong_tool(0), ["get_forecast", "not available", "get_weather"]),
        (faults.bad_arguments(0), ["missing required property 'city'"]),
        (faults.bad_arguments(1), ["$.city: expected string, got integer"]),
        (faults.bad_arguments(2), ["'kelvin' is not one of 'C', 'F'"]),
        (faults.bad_arguments(3), ["unexpected property 'country'"]),
        (faults.bad_arguments(5), ["$.days: expected integer, got number"]),
        (faults.bad_arguments(6), ["not valid JSON"]),
    ],
    ids=lambda v: v.name if isinstance(v, faults.Scenario) else "",
)
def test_tool_argument_explanation_names_agent_interaction_and_call(
    record: Record, scenario: faults.Scenario, needles: list[str]
) -> None:
    trace = record(scenario)
    result = checks.tool_arguments.evaluate(trace)[_by_name(trace, faults.RESEARCHER)]
    assert result is not None and result.score == 0.0
    assert "researcher call 1, tool call call_bad" in result.explanation
    for needle in needles:
        assert needle in result.explanation


def test_error_result_explanation_names_call_and_where_the_result_came(record: Record) -> None:
    trace = record(faults.error_result(0))
    result = checks.tool_results.evaluate(trace)[_by_name(trace, faults.RESEARCHER)]
    assert result is not None and result.score == 0.0
    assert "researcher call 1, tool call call_err (get_weather)" in result.explanation
    assert "(in call 2)" in result.explanation
    assert "upstream timeout" in result.explanation


def test_loop_explanation_lists_the_interactions_and_call_ids(record: Record) -> None:
    trace = record(faults.repeated_call(1))  # three identical calls, keys in varying order
    result = checks.loops.evaluate(trace)[_by_name(trace, faults.RESEARCHER)]
    assert result is not None
    assert result.score == pytest.approx(1 - 2 / 4)  # 4 actions, 2 of them repeats
    assert "called get_weather" in result.explanation and "3 times" in result.explanation
    assert "it had already got a result" in result.explanation
    assert "calls 1, 2, 3" in result.explanation
    assert "call_r0, call_r1, call_r2" in result.explanation


def test_loops_with_polling_lets_repeats_below_the_threshold_pass(record: Record) -> None:
    trace = record(faults.repeated_call(1))  # three identical, successful calls
    researcher = _by_name(trace, faults.RESEARCHER)
    assert checks.loops_with(max_repeats=4, polling=True).evaluate(trace)[researcher].score == 1.0
    polling = checks.loops_with(max_repeats=3, polling=True)
    assert polling.name == "loops(polling=True)"
    assert polling.evaluate(trace)[researcher].score == pytest.approx(1 - 1 / 4)
    assert checks.loops_with(max_repeats=4).evaluate(trace)[researcher].score < 1.0


def test_the_same_successful_call_made_twice_is_a_loop(record: Record) -> None:
    trace = record(faults.repeated_call(0))  # twice, the first already answered
    result = checks.loops.evaluate(trace)[_by_name(trace, faults.RESEARCHER)]
    assert result.score == pytest.approx(1 - 1 / 3)  # 2 calls + the findings, 1 repeat
    assert "2 times; it had already got a result" in result.explanation
    assert "call_r0, call_r1" in result.explanation


def test_repeated_reply_is_a_loop(record: Record) -> None:
    trace = record(faults.repeated_reply(0))
    result = checks.loops.evaluate(trace)[_by_name(trace, faults.RESEARCHER)]
    assert result is not None and result.score == pytest.approx(1 / 3)
    assert "same reply 3 times" in result.explanation
    assert "calls 1, 2, 3" in result.explanation


@pytest.mark.parametrize(
    ("variant", "named"),
    [(0, "'25°C'"), (1, "'85%'"), (2, "'March 3, 2019'"), (3, "'12.5 km/h'")],
)
def test_ungrounded_number_is_named(record: Record, variant: int, named: str) -> None:
    trace = record(faults.ungrounded_number(variant))
    results = checks.grounded_numbers.evaluate(trace)
    researcher = results[_by_name(trace, faults.RESEARCHER)]
    assert researcher is not None and researcher.score is not None and researcher.score < 1.0
    assert "researcher call 2: " in researcher.explanation
    assert named in researcher.explanation
    # The orchestrator repeats it, but it was told so by the researcher: grounded.
    assert results[_by_name(trace, faults.ORCHESTRATOR)].score == 1.0


def test_empty_final_answer_is_flagged_with_its_interaction(record: Record) -> None:
    trace = record(faults.empty_answer(1))
    result = checks.final_answer.evaluate(trace)[_by_name(trace, faults.ORCHESTRATOR)]
    assert result is not None and result.score == 0.0
    assert "orchestrator call 2" in result.explanation
    assert "empty" in result.explanation


def test_tool_checks_do_not_apply_to_an_agent_without_tool_calls(record: Record) -> None:
    trace = record(faults.clean())
    orchestrator = _by_name(trace, faults.ORCHESTRATOR)
    assert checks.tool_arguments.evaluate(trace)[orchestrator] is None
    assert checks.tool_results.evaluate(trace)[orchestrator] is None


def test_refusal_after_successful_tools_is_flagged(record: Record) -> None:
    scenario = faults.Scenario(
        name="refusal",
        question="What is the weather in Oslo?",
        researcher=(
            Reply.tool_calls([ToolCall("get_weather", {"city": "Oslo"}, id="c1")]),
            Reply.text("I'm sorry, but I cannot help with that request."),
        ),
        final="The researcher could not say.",
        tools={"get_weather": faults.weather(4, "snowing", "Oslo")},
    )
    trace = record(scenario)
    result = checks.final_answer.evaluate(trace)[_by_name(trace, faults.RESEARCHER)]
    assert result is not None and result.score == 0.0
    assert "all 1 tool call succeeded" in result.explanation


def test_scores_are_fractions_of_calls(record: Record) -> None:
    scenario = faults.Scenario(
        name="half-bad",
        question="Weather in Paris and Lima?",
        researcher=(
            Reply.tool_calls(
                [
                    ToolCall("get_weather", {"city": "Paris"}, id="ok1"),
                    ToolCall("get_weather", {"city": "Lima", "unit": "K"}, id="bad1"),
                    ToolCall("get_weather", {"city": "Quito"}, id="ok2"),
                    ToolCall("get_weather", {"city": "Oslo"}, id="ok3"),
                ]
            ),
            Reply.text("Findings: mixed."),
        ),
        final="Mixed weather.",
        tools={
            "get_weather": lambda a: (
                '{"error": "down"}' if a.get("city") == "Oslo" else '{"temperature": 20}'
            )
        },
    )
    trace = record(scenario)
    researcher = _by_name(trace, faults.RESEARCHER)
    arguments = checks.tool_arguments.evaluate(trace)[researcher]
    results = checks.tool_results.evaluate(trace)[researcher]
    assert arguments.score == pytest.approx(3 / 4) and "bad1" in arguments.explanation
    # bad1 is tool_arguments' finding: tool_results judges the other three.
    assert results.score == pytest.approx(2 / 3) and "ok3" in results.explanation
    assert "not counted: 1 call (bad1): the call itself is invalid" in results.explanation
    assert "1 error, 0 without a result" in results.explanation
