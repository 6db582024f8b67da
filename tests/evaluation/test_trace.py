"""`Composo.evaluate_trace()`: every agent instance judged, then aggregated."""

from __future__ import annotations

import re
import statistics
import time
from typing import Any

import pytest

from tests.evaluation.conftest import judge_question, judged_content, verdict
from tests.evaluation.test_client import AnswerMentions
from tests.evaluation.test_render import TOOL_CONVERSATION, WEATHER_TOOL
from tracejudge import (
    AgentInstance,
    BadRequestError,
    Composo,
    ConfigurationError,
    LLMInteraction,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    NoLLMInteractionsError,
    criteria,
)
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import LLMInput, LLMOutput, LLMToolCall, LLMToolResponse
from tracejudge.testing import RecordedRequest, ScriptedLLMServer

INSTANCE_RE = re.compile(r'the agent "[^"]+" \(instance (\w+)\)')
#: What the scripted judge answers for each agent instance (1..10).
GRADES = {"o1": 10, "r1": 7, "r2": 4, "w1": 1}


def instance_of(request: RecordedRequest) -> str:
    match = INSTANCE_RE.search(judge_question(request))
    assert match, "the judge prompt names no agent instance"
    return match.group(1)


def grade_by_instance(request: RecordedRequest) -> Any:
    instance = instance_of(request)
    return verdict(GRADES[instance], f"{instance} did its part.")


def _interaction(user: str, answer: str, *calls: LLMToolCall) -> LLMInteraction:
    return LLMInteraction(
        input_messages=[LLMInput(role="user", content=user)],
        output_messages=[LLMOutput(content=answer), *(LLMOutput(content=c) for c in calls)],
    )


def multi_agent_trace() -> MultiAgentTrace:
    """orchestrator o1 -> researcher r1, researcher r2, writer w1; tool_runner t1 never called
    a model."""
    delegate = LLMToolCall(id="d1", name="delegate", parameters={"to": "researcher"})
    orchestrator = AgentInstance(
        id="o1",
        name="orchestrator",
        interactions=[
            _interaction("Write a weather report for SF.", "Planning.", delegate),
            "r1",
            "r2",
            "w1",
            "t1",
            LLMInteraction(
                input_messages=[
                    LLMInput(role="user", content="Write a weather report for SF."),
                    LLMInput(role="assistant", content="Planning."),
                    LLMInput(role="assistant", content=delegate),
                    LLMInput(role="tool", content=LLMToolResponse(id="d1", response="done")),
                ],
                output_messages=[LLMOutput(content="Report: sunny, 65 F.")],
            ),
        ],
    )
    agents = [
        orchestrator,
        AgentInstance(
            id="r1", name="researcher", interactions=[_interaction("Find SF weather", "65 F")]
        ),
        AgentInstance(
            id="r2", name="researcher", interactions=[_interaction("Find SF sky", "Sunny")]
        ),
        AgentInstance(
            id="w1", name="writer", interactions=[_interaction("Write it up", "Sunny, 65 F.")]
        ),
        AgentInstance(id="t1", name="tool_runner", interactions=[]),
    ]
    return MultiAgentTrace(
        root_agent_instance_id="o1", agent_instance_by_id={a.id: a for a in agents}
    )


def test_each_agent_instance_is_judged_and_aggregated(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    judge_server.default = grade_by_instance
    result = client.evaluate_trace(
        trace=multi_agent_trace(),
        criteria="Reward agents that work towards the goal",
        tags={"environment": "production", "agent_version": "1.0.0"},
    )
    assert isinstance(result, MultiAgentTraceResponse)
    assert sorted(instance_of(r) for r in judge_server.requests) == ["o1", "r1", "r2", "w1"]
    expected = {"o1": 1.0, "r1": 6 / 9, "r2": 3 / 9, "w1": 0.0, "t1": None}
    assert result.agent_scores == pytest.approx(expected)
    assert result.overall_score == pytest.approx(statistics.fmean([1.0, 6 / 9, 3 / 9, 0.0]))
    assert result.criterion == "Reward agents that work towards the goal"
    assert len(result.request_id) == 36

    researchers = result.results_by_agent_name["researcher"]
    assert set(researchers.results_by_agent_instance_id) == {"r1", "r2"}
    stats = researchers.summary_statistics
    assert stats.median == pytest.approx(0.5)
    assert stats.min == pytest.approx(3 / 9) and stats.max == pytest.approx(6 / 9)
    assert stats.std == pytest.approx(statistics.pstdev([6 / 9, 3 / 9]))
    runner = result.results_by_agent_name["tool_runner"]
    assert runner.results_by_agent_instance_id == {"t1": None}
    assert runner.summary_statistics.median is None

    # The verdict per agent: the mean hides the writer's 0.00, these do not.
    assert result.fail_under == 0.5
    assert result.worst_agent is not None
    assert (result.worst_agent.agent_name, result.worst_agent.agent_instance_id) == (
        "writer",
        "w1",
    )
    assert result.worst_agent.score == 0.0
    assert result.failing_agents == 2  # w1 (0.00) and r2 (0.33)
    assert [a.agent_instance_id for a in result.failing()] == ["w1", "r2"]

    lines = result.explanation.splitlines()
    assert lines[0] == "Overall score 0.50: the mean of 4 agent scores."
    assert lines[1] == "2 of 4 below 0.5: writer 0.00, researcher 0.33."
    assert "- orchestrator (o1): 1.00 - o1 did its part." in lines
    assert "- tool_runner (t1): not applicable (nothing to judge)" in lines
    assert result.usage is not None and result.usage.calls == 4


def test_parent_sees_children_as_calls_with_final_outputs(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    judge_server.default = grade_by_instance
    client.evaluate_trace(multi_agent_trace(), criteria.agent_goal_pursuit)
    parent = next(r for r in judge_server.requests if instance_of(r) == "o1")
    content = judged_content(parent)
    assert 'calls sub-agent "researcher" (instance r1) [judged]; its final output:\n65 F' in content
    assert 'calls sub-agent "writer" (instance w1) [judged]; its final output:\nSunny, 65 F.' in (
        content
    )
    assert "Find SF weather" not in content  # the child's own conversation is its own
    assert content.count("Write a weather report for SF.") == 1


def test_trace_from_a_chat_session(client: Composo, judge_server: ScriptedLLMServer) -> None:
    agent = AgentInstance.from_chat_session(
        {"messages": TOOL_CONVERSATION, "tools": [WEATHER_TOOL]}
    )
    trace = MultiAgentTrace.from_agent(agent)
    result = client.evaluate_trace(trace, criteria=criteria.agent_tool_use)
    assert result.agent_scores == {"agent_instance_0": pytest.approx(7 / 9)}
    assert result.overall_score == pytest.approx(7 / 9)
    content = judged_content(judge_server.requests[0])
    assert "- get_weather: Get current weather for a location" in content
    assert "calls tool get_weather (id call_123)" in content
    assert "tool result (get_weather, id call_123)" in content


def test_several_criteria_give_a_list(client: Composo, judge_server: ScriptedLLMServer) -> None:
    trace = MultiAgentTrace.from_agent(AgentInstance.from_chat_session(TOOL_CONVERSATION))
    results = client.evaluate_trace(trace, criteria=criteria.agent)
    assert [r.criterion for r in results] == criteria.agent
    assert len(judge_server.requests) == 5


def test_a_list_of_one_criterion_gives_a_list_and_one_criterion_one_answer() -> None:
    """A list in, a list out (so `for result in evaluate_trace(criteria=[one])` iterates
    over results, not over one result's fields); a criterion on its own, one answer."""
    with Composo() as client:
        listed = client.evaluate_trace(multi_agent_trace(), criteria=[AnswerMentions("sunny")])
        alone = client.evaluate_trace(multi_agent_trace(), criteria=AnswerMentions("sunny"))
        submitted = client.evaluate_trace(
            multi_agent_trace(), criteria=[AnswerMentions("sunny")], block=False
        )
    assert isinstance(listed, list) and [r.criterion for r in listed] == ["mentions sunny"]
    assert isinstance(alone, MultiAgentTraceResponse)
    assert (
        alone.agent_scores
        == listed[0].agent_scores
        == {"o1": 1.0, "r1": 0.0, "r2": 1.0, "w1": 1.0, "t1": None}
    )
    assert isinstance(submitted, list) and set(submitted[0]) == {"task_id"}


def test_trace_may_be_a_dict_or_a_tracer(client: Composo) -> None:
    trace = multi_agent_trace()

    class FinishedTracer:
        def __init__(self, trace: MultiAgentTrace) -> None:
            self.trace = trace

    from_dict = client.evaluate_trace(trace.to_wire(), "Reward goal pursuit")
    from_tracer = client.evaluate_trace(FinishedTracer(trace), "Reward goal pursuit")
    assert (
        set(from_dict.agent_scores)
        == set(from_tracer.agent_scores)
        == {"o1", "r1", "r2", "w1", "t1"}
    )
    with pytest.raises(BadRequestError, match="not a valid MultiAgentTrace"):
        client.evaluate_trace({"root_agent_instance_id": "x"}, "Reward goal pursuit")


def test_trace_without_llm_interactions_is_rejected(client: Composo) -> None:
    empty = MultiAgentTrace.from_agent(AgentInstance(id="a", name="idle"))
    with pytest.raises(NoLLMInteractionsError, match="no LLM interaction") as raised:
        client.evaluate_trace(empty, "Reward goal pursuit")
    # The one message every path gives: what was found, and what to check.
    with pytest.raises(NoLLMInteractionsError) as direct:
        empty.require_llm_interactions()
    assert str(raised.value) == str(direct.value)
    assert "ComposoTracer.init" in str(raised.value) and "idle (a)" in str(raised.value)


def test_evaluate_latest_must_be_false_for_traces(client: Composo) -> None:
    with pytest.raises(BadRequestError, match="must be False for trace evaluations"):
        client.evaluate_trace(multi_agent_trace(), "Reward goal pursuit", evaluate_latest=True)
    result = client.evaluate_trace(
        multi_agent_trace(), "Reward goal pursuit", evaluate_latest=False
    )
    assert result.overall_score is not None


def test_trace_tags_are_validated(client: Composo) -> None:
    with pytest.raises(BadRequestError, match="tag 'env' has a nested set value"):
        client.evaluate_trace(multi_agent_trace(), "Reward x", tags={"env": {1}})


def test_checks_score_traces_without_a_judge() -> None:
    with Composo() as client:
        result = client.evaluate_trace(multi_agent_trace(), criteria=AnswerMentions("sunny"))
        assert result.criterion == "mentions sunny"
        assert result.agent_scores == {"o1": 1.0, "r1": 0.0, "r2": 1.0, "w1": 1.0, "t1": None}
        assert result.overall_score == pytest.approx(0.75)
        assert result.results_by_agent_name["researcher"].summary_statistics.median == 0.5
        with pytest.raises(ConfigurationError):
            client.evaluate_trace(multi_agent_trace(), [AnswerMentions("x"), "Reward x"])


def test_checks_and_text_criteria_together(
    client: Composo, judge_server: ScriptedLLMServer
) -> None:
    judge_server.default = grade_by_instance
    judged, checked = client.evaluate_trace(
        multi_agent_trace(), ["Reward goal pursuit", AnswerMentions("65")]
    )
    assert judged.agent_scores["o1"] == 1.0
    assert checked.agent_scores == {"o1": 1.0, "r1": 1.0, "r2": 0.0, "w1": 1.0, "t1": None}
    assert len(judge_server.requests) == 4


def test_non_blocking_trace_evaluation(client: Composo, judge_server: ScriptedLLMServer) -> None:
    judge_server.default = grade_by_instance
    submitted = client.evaluate_trace(multi_agent_trace(), "Reward goal pursuit", block=False)
    deadline = time.monotonic() + 10
    while (task := client.get_task(submitted["task_id"])).status not in ("done", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert task.status == "done"
    assert task.result["overall_score"] == pytest.approx(0.5)
    assert task.result["results_by_agent_name"]["writer"]["agent_name"] == "writer"


def test_agents_are_judged_concurrently(judge_server: ScriptedLLMServer, make_judge: Any) -> None:
    from tracejudge.testing import Reply

    judge_server.default = Reply.text('{"explanation": "ok", "score": 6}', delay=0.3)
    with Composo(judge=make_judge(judge_server)) as client:
        client.evaluate_trace(multi_agent_trace(), "Reward goal pursuit")
    # Four judged agents at once. (More than five new connections at once can overflow the
    # scripted server's listen backlog and cost a SYN retry of 1 s, so the test stays at 4.)
    assert judge_server.max_in_flight == 4  # four judgements at once, not one after another


async def test_evaluation_service_directly(
    judge_server: ScriptedLLMServer, make_judge: Any
) -> None:
    judge_server.default = grade_by_instance
    service = EvaluationService(make_judge(judge_server))
    (result,) = await service.score_trace(multi_agent_trace(), ["Reward goal pursuit"])
    assert result.overall_score == pytest.approx(0.5)
    with pytest.raises(ConfigurationError):
        await EvaluationService(None).score_trace(multi_agent_trace(), ["Reward goal pursuit"])


def test_each_agent_is_rendered_once_for_all_criteria(
    client: Composo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracejudge.evaluation import evaluator

    rendered: list[str] = []
    real = evaluator.render_agent

    def counting(trace: MultiAgentTrace, agent_id: str) -> Any:
        rendered.append(agent_id)
        return real(trace, agent_id)

    monkeypatch.setattr(evaluator, "render_agent", counting)
    client.evaluate_trace(multi_agent_trace(), ["Reward a", "Reward b", "Reward c"])
    assert sorted(rendered) == ["o1", "r1", "r2", "w1"]
