"""Refusals written as text: `declines` flags answers that ARE refusals and nothing else,
and `final_answer` fails them when the agent called no tool (or when its tools all
succeeded), leaves them to a judge after a tool that failed or found nothing, and has a
switch each way (`allow_refusal=True`, `plain_text_refusals=False`).

The answers are in tests/checks/refusal_answers.py (also measured by
benchmarks/checks_precision.py).
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.checks import refusal_answers
from tracejudge import AgentTracer, Composo, checks
from tracejudge.evaluation._checks.text import declines
from tracejudge.models import AgentInstance, MultiAgentTrace
from tracejudge.testing import Reply, ScriptedLLMServer

USER = {"role": "user", "content": "Can you help me with my trip?"}
REFUSALS = refusal_answers.REFUSALS + refusal_answers.HELD_OUT_REFUSALS
ANSWERS = refusal_answers.ANSWERS + refusal_answers.HELD_OUT_ANSWERS


@pytest.mark.parametrize("answer", REFUSALS)
def test_a_refusal_is_recognised(answer: str) -> None:
    assert declines(answer), answer


@pytest.mark.parametrize("answer", ANSWERS)
def test_an_answer_is_not_taken_for_a_refusal(answer: str) -> None:
    assert declines(answer) is None, answer


def _final(messages: list[dict[str, Any]], check: Any = None) -> Any:
    agent = AgentInstance.from_chat_session(messages, name="assistant")
    trace = MultiAgentTrace.from_agent(agent)
    return (check or checks.final_answer).evaluate(trace)[agent.id]


def _after_tool(result: str, answer: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    return [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "assistant", "content": answer},
    ]


@pytest.mark.parametrize("answer", REFUSALS)
def test_a_written_refusal_without_tools_fails_final_answer(answer: str) -> None:
    result = _final([USER, {"role": "assistant", "content": answer}])
    assert result.score == 0.0, result.explanation
    assert "final answer is a refusal" in result.explanation
    assert "final_answer_with(allow_refusal=True)" in result.explanation


@pytest.mark.parametrize("answer", ANSWERS)
def test_an_answer_without_tools_passes_final_answer(answer: str) -> None:
    result = _final([USER, {"role": "assistant", "content": answer}])
    assert result.score == 1.0, result.explanation


def test_the_readme_refusal_fails_and_a_judge_keeps_the_fair_ones() -> None:
    refusal = "I'm sorry, but I can't help with that request."
    assert _final([USER, {"role": "assistant", "content": refusal}]).score == 0.0
    # after tools that worked: fails, as before
    worked = _final(_after_tool(json.dumps({"hotels": ["Sol"]}), refusal))
    assert worked.score == 0.0 and "all 1 tool call succeeded" in worked.explanation
    # after a tool that failed or found nothing: fair, left to a judge
    for result in ('{"error": "service down"}', '{"results": []}'):
        fair = _final(_after_tool(result, refusal))
        assert fair.score == 1.0 and "left to a judge" in fair.explanation, fair.explanation
    nothing = _final(_after_tool('{"results": []}', "I couldn't find any results for that."))
    assert nothing.score == 1.0


def test_the_switches_allow_refusals_or_stop_reading_them() -> None:
    messages = [USER, {"role": "assistant", "content": "I can't assist with that."}]
    allowed = _final(messages, checks.final_answer_with(allow_refusal=True))
    assert allowed.score == 1.0 and "allow_refusal permits" in allowed.explanation
    off = checks.final_answer_with(plain_text_refusals=False)
    assert off.name == "final_answer(plain_text_refusals=False)"
    unread = _final(messages, off)
    assert unread.score == 1.0 and "left to a judge" in unread.explanation
    # switched off, apologies after tools that worked still fail, as before the detector
    assert _final(_after_tool('{"hotels": ["Sol"]}', "I'm sorry, I can't say."), off).score == 0.0
    with pytest.raises(ValueError, match="plain_text_refusals must be True or False"):
        checks.final_answer_with(plain_text_refusals="no")  # type: ignore[arg-type]


def test_a_traced_agents_written_refusal_fails_through_evaluate_trace(
    composo_tracing: TracerProvider,
) -> None:
    replies = [
        Reply.text("Plan: ask the writer."),
        Reply.text("I'm sorry, but I can't help with that request."),
        Reply.text("Here is your note: Lisbon is sunny."),
    ]
    with ScriptedLLMServer(replies) as model:
        with openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0) as client:
            with AgentTracer(name="orchestrator") as run:
                client.chat.completions.create(model="m", messages=[USER])
                with AgentTracer(name="writer"):
                    client.chat.completions.create(model="m", messages=[USER])
                client.chat.completions.create(model="m", messages=[USER])
    with Composo() as composo:
        result = composo.evaluate_trace(run.trace, criteria=checks.final_answer)
    assert result.scores_by_agent_name() == {"orchestrator": 1.0, "writer": 0.0}
    assert result.worst_agent is not None and result.worst_agent.agent_name == "writer"
    assert result.failing_agents == 1
