"""Finer rules of the built-in checks: what is a repeat, where a result is looked for,
whose findings ground an answer, how explanations point at interactions."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.checks import faults
from tracejudge import checks
from tracejudge.models import AgentInstance, MultiAgentTrace, ScoreResponse

Record = Callable[[faults.Scenario], MultiAgentTrace]


def _score(check: Any, messages: list[dict[str, Any]]) -> ScoreResponse | None:
    agent = AgentInstance.from_chat_session(messages, name="agent")
    return check.evaluate(MultiAgentTrace.from_agent(agent))[agent.id]


def _round(call_id: str, result: str, arguments: Any = None) -> list[dict[str, Any]]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "search", "arguments": json.dumps(arguments or {"q": "oslo"})},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


USER = {"role": "user", "content": "Weather in Oslo?"}
DONE = {"role": "assistant", "content": "Oslo is snowing."}


def test_a_retry_after_an_error_is_not_a_loop() -> None:
    messages = [USER, *_round("c1", '{"error": "timeout"}'), *_round("c2", "snowing"), DONE]
    assert _score(checks.loops, messages).score == 1.0


def test_retrying_a_failing_call_again_and_again_is_a_loop() -> None:
    rounds = [m for i in range(3) for m in _round(f"c{i}", "Error: timeout")]
    result = _score(checks.loops, [USER, *rounds, DONE])
    assert result.score == pytest.approx(1 - 1 / 4)  # the third try repeats
    assert "3 times" in result.explanation and "already got a result" not in result.explanation


def test_identical_parallel_calls_are_a_loop() -> None:
    call = {"type": "function", "function": {"name": "search", "arguments": '{"q": "oslo"}'}}
    messages = [
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "p1", **call}, {"id": "p2", **call}],
        },
        {"role": "tool", "tool_call_id": "p1", "content": "snowing"},
        {"role": "tool", "tool_call_id": "p2", "content": "snowing"},
        DONE,
    ]
    result = _score(checks.loops, messages)
    assert result.score < 1.0 and "tool calls p1, p2" in result.explanation


def test_a_reply_repeated_right_away_is_a_loop_but_not_one_said_again_later() -> None:
    again = {"role": "user", "content": "Go on."}
    same = {"role": "assistant", "content": "Let me check."}
    repeated = _score(checks.loops, [USER, same, again, {**same, "content": "LET ME  check."}])
    assert repeated.score == 0.5 and "same reply 2 times" in repeated.explanation
    other = {"role": "assistant", "content": "Oslo is snowing."}
    later = _score(checks.loops, [USER, same, again, other, again, same])
    assert later.score == 1.0


def test_a_call_the_agent_went_on_without_has_no_result() -> None:
    call = {"id": "lost", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    messages = [USER, {"role": "assistant", "content": None, "tool_calls": [call]}, USER, DONE]
    result = _score(checks.tool_results, messages)
    assert result.score == 0.0
    assert "tool call lost (search): no result (the agent went on without it)" in (
        result.explanation
    )


def test_an_orchestrator_that_makes_up_a_number_is_flagged_alone(record: Record) -> None:
    scenario = dataclasses.replace(
        faults.clean("Oslo", 4, "snowing"), final="It is 9 °C and snowing in Oslo.", relay=False
    )
    trace = record(scenario)
    results = checks.grounded_numbers.evaluate(trace)
    by_name = {trace.agent_instance_by_id[k].name: v for k, v in results.items()}
    assert by_name["researcher"].score == 1.0
    assert by_name["orchestrator"].score == 0.0
    assert "'9 °C' appears in no input or tool result" in by_name["orchestrator"].explanation


def test_explanations_give_the_wire_position_where_child_agents_shift_it(record: Record) -> None:
    trace = record(faults.empty_answer(1))  # the orchestrator's last answer is empty
    result = checks.final_answer.evaluate(trace)[trace.root_agent_instance_id]
    # interactions: [its plan, the researcher's id, its answer]
    assert "orchestrator call 2" in result.explanation


def test_budgets_reject_limits_that_are_not_positive_numbers() -> None:
    for bad in ({"max_tokens": -1}, {"max_seconds": 0}, {"max_tokens": True}, {"max_tokens": "9"}):
        with pytest.raises(ValueError, match="positive number"):
            checks.budgets(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("final", "score"),
    [
        ("I'm sorry, but I can't help with that.", 0.0),
        ("Thanks for asking. Unfortunately, I am unable to provide that.", 0.0),
        ("Oslo is snowing at -3 °C. I could not check tomorrow, though.", 1.0),
    ],
)
def test_a_refusal_after_tools_that_worked_fails_but_not_a_caveat(final: str, score: float) -> None:
    messages = [
        USER,
        *_round("c1", '{"city": "Oslo", "temp": -3}'),
        {"role": "assistant", "content": final},
    ]
    assert _score(checks.final_answer, messages).score == score
