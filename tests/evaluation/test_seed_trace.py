"""The seed's evaluate_trace example end to end: traced openai calls -> tracer.trace -> judge."""

from __future__ import annotations

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.evaluation.conftest import judge_question, judged_content
from tests.evaluation.test_client import AnswerMentions
from tests.scenario import FINDINGS, PLAN, REPORT, run_scenario, scripted_replies
from tracejudge import Composo
from tracejudge.testing import ScriptedLLMServer


def test_traced_agents_are_evaluated(
    composo_tracing: TracerProvider,
    llm_server: ScriptedLLMServer,
    judge_server: ScriptedLLMServer,
    client: Composo,
) -> None:
    llm_server.add(*scripted_replies())
    with openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0) as oai:
        tracer = run_scenario(oai)

    evaluation = client.evaluate_trace(
        trace=tracer.trace,
        criteria="Reward thorough research and accurate information",
        tags={"environment": "production", "agent_version": "1.0.0"},
    )
    names = {result.agent_name for result in evaluation.results_by_agent_name.values()}
    assert names == {"orchestrator", "researcher", "writer"}
    assert evaluation.overall_score == pytest.approx(7 / 9)
    assert len(evaluation.explanation.splitlines()) == 4
    assert len(judge_server.requests) == 3

    by_agent = {
        name: next(r for r in judge_server.requests if f'the agent "{name}"' in judge_question(r))
        for name in names
    }
    researcher = judged_content(by_agent["researcher"])
    # Three model calls, each repeating the history: every message is still written once.
    assert researcher.count("You research with tools.") == 1
    assert researcher.count("What is the weather in San Francisco?") == 1
    assert researcher.count("San Francisco weather today: 65 F and sunny.") == 1
    assert "- search: Search the web." in researcher
    assert "calls tool fetch_page (id call_f1)" in researcher
    assert "tool result (fetch_page, id call_f1)" in researcher
    assert f"assistant [judged]:\n{FINDINGS}" in researcher
    orchestrator = judged_content(by_agent["orchestrator"])
    assert f"assistant [judged]:\n{PLAN}" in orchestrator
    assert 'calls sub-agent "researcher" (instance' in orchestrator
    assert REPORT in orchestrator  # the writer's final output, shown as its call's result

    # The tracer itself may be passed; a check needs no judge call.
    checked = client.evaluate_trace(tracer, criteria=AnswerMentions("65 F"))
    assert checked.overall_score == 1.0
    assert len(judge_server.requests) == 3
