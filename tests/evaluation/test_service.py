"""The one evaluation path: wire requests and their in-process twins in, answers out."""

from __future__ import annotations

from typing import Any

import pytest

from tests.evaluation.conftest import verdict
from tests.evaluation.test_client import CAPITAL
from tests.evaluation.test_trace import multi_agent_trace
from tracejudge import checks
from tracejudge.errors import BadRequestError, ConfigurationError
from tracejudge.evaluation.service import ConversationRequest, EvaluationService, TraceRequest
from tracejudge.models import RewardRequest, TraceRewardRequest
from tracejudge.testing import ScriptedLLMServer


async def test_a_wire_reward_request_is_judged(
    judge_server: ScriptedLLMServer, make_judge: Any
) -> None:
    judge_server.default = verdict(10, "Correct capital.")
    service = EvaluationService(make_judge(judge_server))
    request = RewardRequest.model_validate(
        {"evaluation_criteria": "Reward accuracy", "messages": CAPITAL, "model_core": "x"}
    )
    response = await service.evaluate(request)
    assert response.score == 1.0
    assert response.explanation == "Correct capital."
    assert response.criterion == "Reward accuracy"
    assert len(judge_server.requests) == 1


async def test_a_wire_trace_request_scores_every_agent(
    judge_server: ScriptedLLMServer, make_judge: Any
) -> None:
    judge_server.default = verdict(5)
    service = EvaluationService(make_judge(judge_server))
    request = TraceRewardRequest(evaluation_criteria="Reward focus", trace=multi_agent_trace())
    response = await service.evaluate_trace(request)
    assert set(response.agent_scores) == {"o1", "r1", "r2", "w1", "t1"}
    assert response.agent_scores["t1"] is None  # never called a model
    assert response.overall_score == pytest.approx(4 / 9)


async def test_an_evaluator_name_selects_a_check_with_no_judge() -> None:
    service = EvaluationService(None)
    request = TraceRewardRequest(evaluator_name="tool_results", trace=multi_agent_trace())
    response = await service.evaluate_trace(request)
    assert response.criterion == "tool_results"
    with pytest.raises(BadRequestError, match="evaluator_name 'nope' names no evaluator"):
        await service.evaluate_trace(
            TraceRewardRequest(evaluator_name="nope", trace=multi_agent_trace())
        )


async def test_requests_are_checked_before_any_work_starts() -> None:
    service = EvaluationService(None)
    with pytest.raises(ConfigurationError, match="TRACEJUDGE_JUDGE"):
        service.conversation_work(ConversationRequest(messages=CAPITAL, criteria=["Reward x"]))
    with pytest.raises(BadRequestError, match="no assistant response"):
        service.conversation_work(
            ConversationRequest(messages=CAPITAL[:1], criteria=[checks.final_answer])
        )
    # Checks alone need no judge, and come back one per criterion, in order.
    responses = await service.score_trace(multi_agent_trace(), [checks.loops, checks.tool_results])
    assert [r.criterion for r in responses] == ["loops", "tool_results"]


async def test_each_agent_is_rendered_once_for_every_criterion_of_a_request(
    judge_server: ScriptedLLMServer, make_judge: Any
) -> None:
    judge_server.default = verdict(7)
    service = EvaluationService(make_judge(judge_server))
    request = TraceRequest(trace=multi_agent_trace(), criteria=["Reward a", "Reward b"])
    first, second = [await work for work in service.trace_work(request)]
    assert first.criterion == "Reward a" and second.criterion == "Reward b"
    assert set(request.renders) == {"o1", "r1", "r2", "w1"}


def test_lightning_cores_judge_only_the_latest_response() -> None:
    from pydantic import ValidationError

    from tracejudge import Composo

    body = {
        "evaluation_criteria": "Reward accuracy",
        "messages": CAPITAL,
        "model_core": "align-lightning-20250731",
        "evaluate_latest": False,
    }
    with pytest.raises(ValidationError, match="Lightning"):
        RewardRequest.model_validate(body)
    assert RewardRequest.model_validate({**body, "evaluate_latest": True}).evaluate_latest
    with Composo(judge="ollama:m", model_core="align-lightning-20250731") as client:
        with pytest.raises(BadRequestError, match="evaluate_latest=True"):
            client.evaluate(messages=CAPITAL, criteria=checks.final_answer, evaluate_latest=False)


def test_a_request_checks_its_criteria_and_trace_once_when_made() -> None:
    from tracejudge.errors import NoLLMInteractionsError
    from tracejudge.evaluation import validate_criteria
    from tracejudge.models import MultiAgentTrace

    with pytest.raises(BadRequestError, match=r"criteria\[1\]"):
        TraceRequest(trace=multi_agent_trace(), criteria=["Reward a", ""])
    silent = MultiAgentTrace.model_validate(
        {
            "root_agent_instance_id": "a",
            "agent_instance_by_id": {"a": {"id": "a", "name": "quiet", "interactions": []}},
        }
    )
    with pytest.raises(NoLLMInteractionsError):
        TraceRequest(trace=silent, criteria=["Reward a"])
    # Criteria checked by the caller (the client's engine, `score`) are taken as they are,
    # not checked again: the same list reaches the service's request.
    checked, as_list = validate_criteria(["Reward a", checks.loops])
    assert validate_criteria(checked) == (checked, as_list)
    assert TraceRequest(trace=multi_agent_trace(), criteria=checked).criteria is checked
    assert ConversationRequest(messages=CAPITAL, criteria=checked).criteria is checked
    # unchecked ones are checked on the way in, into a checked list
    request = ConversationRequest(messages=CAPITAL, criteria=("Reward a",))
    assert request.criteria == ["Reward a"]
    assert validate_criteria(request.criteria)[0] is request.criteria
    only_checks = checked.where(lambda c: not isinstance(c, str))
    assert only_checks == [checks.loops] and validate_criteria(only_checks)[0] is only_checks
