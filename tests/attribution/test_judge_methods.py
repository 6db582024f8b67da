"""The judge methods, each against a scripted judge model over a real loopback socket: what
they ask, how they walk the steps, what they answer, what it cost."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tracejudge.errors import BadRequestError, ConfigurationError, MalformedError
from tracejudge.evaluation.attribution import AttributionRequest
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import JudgeRequest, OpenAICompatibleJudge, Verdict
from tracejudge.models import AgentInstance, JudgeUsage, MultiAgentTrace
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

USAGE = {"prompt_tokens": 100, "completion_tokens": 10}
OUTCOME = "The answer says the meeting is on Monday; it is on Tuesday."


def _trace() -> MultiAgentTrace:
    """Six steps: the planner's 0 and 5, the worker's 1 to 4 between them; step 3 (the
    worker's model call 2) is the scripted culprit."""
    planner = AgentInstance.from_chat_session(
        [
            {"role": "user", "content": "When is the meeting?"},
            {"role": "assistant", "content": "I will ask the worker."},
            {"role": "user", "content": "The worker answered."},
            {"role": "assistant", "content": "Monday."},
        ],
        id="p1",
        name="planner",
    )
    worker = AgentInstance.from_chat_session(
        [
            {"role": "user", "content": "Find the meeting day."},
            {"role": "assistant", "content": "Reading the calendar."},
            {"role": "user", "content": "Calendar: Tuesday 10:00 team meeting."},
            {"role": "assistant", "content": "Let me read the day."},
            {"role": "user", "content": "Go on."},
            {"role": "assistant", "content": "The calendar says Monday."},
            {"role": "user", "content": "Thanks."},
            {"role": "assistant", "content": "You are welcome."},
        ],
        id="w1",
        name="worker",
    )
    planner.interactions.insert(1, "w1")
    return MultiAgentTrace(
        root_agent_instance_id="p1", agent_instance_by_id={"p1": planner, "w1": worker}
    )


def _schema_name(request: RecordedRequest) -> str:
    return str(request.json["response_format"]["json_schema"]["name"])


def _prompt(request: RecordedRequest) -> str:
    return "\n".join(m["content"] for m in request.json["messages"])


def _reply(value: dict[str, Any]) -> Reply:
    return Reply.text(json.dumps(value), usage=USAGE)


async def _attribute(judge: OpenAICompatibleJudge, methods: list[str], **options: Any):  # type: ignore[no-untyped-def]
    service = EvaluationService(judge)
    request = AttributionRequest(trace=_trace(), methods=methods, outcome=OUTCOME, **options)
    return await service.attribute(request)


async def test_all_at_once_names_the_step_and_ranks_its_alternatives(
    judge: OpenAICompatibleJudge, judge_server: ScriptedLLMServer
) -> None:
    judge_server.add(
        _reply(
            {
                "explanation": "The worker misread the calendar at step 3.",
                "agent": "worker",
                "step": 3,
                "other_steps": [5, 3, 99],
                "confidence": 0.8,
            }
        )
    )
    attribution = await _attribute(judge, ["all_at_once"])
    assert [(c.agent_name, c.index, c.step.interaction) for c in attribution.causes] == [
        ("worker", 3, 2),
        ("planner", 5, 1),
    ]
    top = attribution.top
    assert top is not None and top.method == "all_at_once" and top.confidence == 0.8
    assert "misread the calendar" in top.evidence
    assert attribution.causes[1].confidence == 0.4
    assert attribution.failures == [f"outcome: {OUTCOME}"]
    assert attribution.usage.calls == 1 and attribution.usage.input_tokens == 100
    prompt = _prompt(judge_server.requests[0])
    assert OUTCOME in prompt and 'STEP 5 | agent "planner"' in prompt
    assert "sees the output" not in prompt.split("STEP 0")[1].split("STEP 1")[0]


async def test_step_by_step_stops_at_the_first_step_called_decisive(
    judge: OpenAICompatibleJudge, judge_server: ScriptedLLMServer
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        asked = int(re.search(r"whether STEP (\d+) is", _prompt(request)).group(1))  # type: ignore[union-attr]
        return _reply({"explanation": f"step {asked}", "decisive": asked == 3, "confidence": 0.7})

    judge_server.default = answer
    attribution = await _attribute(judge, ["step_by_step"])
    assert [(c.index, c.method) for c in attribution.causes] == [(3, "step_by_step")]
    assert len(judge_server.requests) == 4 and attribution.usage.input_tokens == 400
    # Each question shows the steps up to the one it asks about, no further.
    last = _prompt(judge_server.requests[-1])
    assert "STEP 3 |" in last and "STEP 4 |" not in last


async def test_binary_search_halves_the_steps_down_to_one(
    judge: OpenAICompatibleJudge, judge_server: ScriptedLLMServer
) -> None:
    asked: list[tuple[int, int, int]] = []

    def answer(request: RecordedRequest) -> Reply:
        found = re.search(
            r"FIRST HALF: steps (\d+) to (\d+)\. SECOND HALF: steps (\d+) to (\d+)",
            _prompt(request),
        )
        assert found is not None
        low, middle, _, high = (int(g) for g in found.groups())
        asked.append((low, middle, high))
        return _reply(
            {"explanation": "e", "half": "first" if 3 <= middle else "second", "confidence": 0.9}
        )

    judge_server.default = answer
    attribution = await _attribute(judge, ["binary_search"])
    assert asked == [(0, 2, 5), (3, 4, 5), (3, 3, 4)]
    assert [(c.index, c.method, c.confidence) for c in attribution.causes] == [
        (3, "binary_search", 0.9)
    ]


async def test_counterfactual_tries_another_step_when_the_fix_would_not_help(
    judge: OpenAICompatibleJudge, judge_server: ScriptedLLMServer
) -> None:
    judge_server.add(
        _reply(
            {
                "explanation": "The planner relayed Monday.",
                "agent": "planner",
                "step": 1,
                "fix": "say Tuesday",
                "outcome_changes": False,
                "confidence": 0.6,
            }
        ),
        _reply(
            {
                "explanation": "The worker misread Tuesday as Monday.",
                "agent": "worker",
                "step": 3,
                "fix": "The calendar says Tuesday.",
                "outcome_changes": True,
                "confidence": 0.9,
            }
        ),
    )
    attribution = await _attribute(judge, ["counterfactual"])
    assert [(c.index, c.outcome_changes, c.fix) for c in attribution.causes] == [
        (3, True, "The calendar says Tuesday."),
        (1, False, "say Tuesday"),
    ]
    assert attribution.causes[1].confidence == 0.3  # its fix would not have helped
    assert "Steps already considered" in _prompt(judge_server.requests[1])
    assert "considered" not in _prompt(judge_server.requests[0])


async def test_checks_rank_first_and_a_judge_that_agrees_is_merged(
    judge: OpenAICompatibleJudge, judge_server: ScriptedLLMServer
) -> None:
    trace = _trace()
    worker = trace.agent_instance_by_id["w1"]
    worker.llm_interactions[3].finish_reason = "length"  # the worker's last answer: cut off
    reply = {"explanation": "cut off", "agent": "worker", "step": 4, "other_steps": [3]}
    judge_server.add(_reply({**reply, "confidence": 0.5}))
    service = EvaluationService(judge)
    attribution = await service.attribute(
        AttributionRequest(trace=trace, methods=["checks", "all_at_once"])
    )
    assert [(c.index, c.method) for c in attribution.causes] == [(4, "checks"), (3, "all_at_once")]
    assert "Also found by all_at_once: cut off" in attribution.causes[0].evidence
    assert attribution.causes[0].confidence == 0.9
    assert "final_answer: agent 'worker'" in _prompt(judge_server.requests[0])


async def test_judge_methods_without_a_judge_fail_before_anything_runs() -> None:
    with pytest.raises(ConfigurationError, match="binary_search need a judge"):
        await EvaluationService().attribute(
            AttributionRequest(trace=_trace(), methods=["checks", "binary_search"], failed=True)
        )
    with pytest.raises(BadRequestError, match="unknown attribution method 'guess'"):
        await EvaluationService().attribute(AttributionRequest(trace=_trace(), methods=["guess"]))


async def test_nothing_is_asked_of_the_judge_when_nothing_failed(
    judge: OpenAICompatibleJudge, judge_server: ScriptedLLMServer
) -> None:
    attribution = await EvaluationService(judge).attribute(
        AttributionRequest(trace=_trace(), methods=["all_at_once"])
    )
    assert not attribution.failed and attribution.causes == []
    assert judge_server.requests == []
    said = await EvaluationService(judge).attribute(
        AttributionRequest(trace=_trace(), methods=["checks"], failed=False)
    )
    assert not said.failed and "did not fail" in said.notes[0]


class _ScoringJudge:
    """A judge of the user's own that scores whatever it is asked (no structured asks)."""

    name = "scoring"

    def __init__(self, not_evaluated: str | None = None) -> None:
        self.not_evaluated = not_evaluated

    async def judge(self, request: JudgeRequest) -> Verdict:
        if self.not_evaluated:
            return Verdict(
                score=None,
                explanation="",
                not_evaluated=self.not_evaluated,
                usage=JudgeUsage(calls=1, input_tokens=7),
            )
        return Verdict(score=1.0, explanation="fine", usage=JudgeUsage(calls=1))

    async def aclose(self) -> None:
        return None


async def test_a_judge_that_cannot_answer_structured_asks_is_named() -> None:
    service = EvaluationService(_ScoringJudge())
    with pytest.raises(
        MalformedError, match="judge scoring answered a structured ask with a score"
    ):
        await service.attribute(
            AttributionRequest(trace=_trace(), methods=["all_at_once"], failed=True)
        )


async def test_a_judgement_over_budget_is_noted_not_guessed() -> None:
    service = EvaluationService(_ScoringJudge(not_evaluated="over its 32k-token budget"))
    attribution = await service.attribute(
        AttributionRequest(trace=_trace(), methods=["all_at_once"], failed=True)
    )
    assert attribution.causes == []
    assert "decisive_error: not evaluated (over its 32k-token budget)" in attribution.notes
    assert attribution.usage.input_tokens == 7
    assert attribution.failures == [
        "the user reports that this run failed (no check or criterion says how)"
    ]


async def test_judge_methods_are_priced_and_stop_at_the_run_cap(
    judge: OpenAICompatibleJudge, judge_server: ScriptedLLMServer
) -> None:
    judge_server.default = _reply({"explanation": "no", "decisive": False, "confidence": 0.5})
    service = EvaluationService(
        judge,
        prices={"judge-model": {"input": 1.0, "output": 2.0}},  # dollars per million tokens
        max_judge_tokens=200,
    )
    attribution = await service.attribute(
        AttributionRequest(trace=_trace(), methods=["step_by_step"], failed=True)
    )
    # 110 tokens a call: the second call reaches the cap, the third is not made.
    assert len(judge_server.requests) == 2 and attribution.causes == []
    assert attribution.usage.calls == 2 and attribution.usage.input_tokens == 200
    assert attribution.usage.cost_usd == pytest.approx((200 * 1.0 + 20 * 2.0) / 1e6)
    assert service.spend.total.total_tokens == 220
    assert any(
        "not evaluated (the run's judge budget of 200 tokens was spent)" in n
        for n in attribution.notes
    )
