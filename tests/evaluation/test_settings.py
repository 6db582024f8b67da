"""`EvaluationSettings`: every setting reaches the judge (or the service) that
`build_judge` / `build_service` make from it, seen from a real scripted judge server on
loopback: requests in flight, timeout, retries, tokens per reply and per request, key,
URL, cache, prices, caps and the bar. The commands and the clients build through them."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.evaluation.conftest import verdict
from tests.evaluation.test_single_call import one_reply_per_criterion
from tracejudge import AsyncComposo
from tracejudge._http import HTTPOptions
from tracejudge.cli import build_parser
from tracejudge.cli._settings import judged_service
from tracejudge.errors import ComposoError, ConfigurationError
from tracejudge.evaluation import EvaluationSettings, build_judge, build_service
from tracejudge.evaluation.service import ConversationRequest, EvaluationService
from tracejudge.judges import ExplorationLimits, OpenAICompatibleJudge
from tracejudge.models import AgentInstance, LLMInput, LLMInteraction, LLMOutput, MultiAgentTrace
from tracejudge.testing import Reply, ScriptedLLMServer


def _conversation(number: int, criterion: str = "Reward correct arithmetic") -> ConversationRequest:
    return ConversationRequest(
        messages=[
            {"role": "user", "content": f"What is {number} + {number}?"},
            {"role": "assistant", "content": str(2 * number)},
        ],
        criteria=[criterion],
    )


async def _judge_all(service: EvaluationService, count: int) -> list:
    results = await asyncio.gather(
        *(service.evaluate_conversation(_conversation(n)) for n in range(count))
    )
    return [result for (result,) in results]


async def test_every_judge_setting_reaches_an_openai_compatible_judge() -> None:
    with ScriptedLLMServer(default=Reply.text(verdict().content or "", delay=0.3)) as model:
        settings = EvaluationSettings(
            judge="openai:settings-model",
            base_url=model.base_url,
            api_key="sk-from-settings",
            http=HTTPOptions(timeout=7, num_retries=3, max_concurrency=5),
            max_tokens=321,
            max_input_tokens=5000,
            cache=False,
        )
        service = build_service(settings)
        try:
            judge = service.judge
            assert isinstance(judge, OpenAICompatibleJudge)
            assert (judge.timeout, judge.num_retries, judge.max_concurrency) == (7.0, 3, 5)
            assert (judge.max_tokens, judge.max_input_tokens) == (321, 5000)
            # 12 judgements at once: 5 at the judge together, never more.
            results = await _judge_all(service, 12)
            assert [r.score for r in results] == pytest.approx([7 / 9] * 12)
            assert model.max_in_flight == 5
            for request in model.requests:
                assert request.path == "/v1/chat/completions"
                assert request.headers["authorization"] == "Bearer sk-from-settings"
                assert request.json["model"] == "settings-model"
                assert request.json["max_tokens"] == 321
            # cache=False: the same judgement again is asked again.
            await _judge_all(service, 1)
            assert len(model.requests) == 13
        finally:
            await service.aclose()
    assert "sk-from-settings" not in repr(settings)


async def test_the_timeout_setting_bounds_a_judgement() -> None:
    with ScriptedLLMServer(default=Reply.text(verdict().content or "", delay=5)) as model:
        settings = EvaluationSettings(
            judge="openai:slow-model", base_url=model.base_url, http=HTTPOptions(timeout=0.5)
        )
        service = build_service(settings)
        started = time.monotonic()
        try:
            with pytest.raises((ComposoError, TimeoutError)):
                await service.evaluate_conversation(_conversation(1))
        finally:
            await service.aclose()
        assert time.monotonic() - started < 3


async def test_the_retries_setting_reaches_the_judge() -> None:
    busy = [Reply.error(503, retry_after=0) for _ in range(3)]
    with ScriptedLLMServer([*busy, verdict()]) as model:
        settings = EvaluationSettings(
            judge="openai:busy-model", base_url=model.base_url, http=HTTPOptions(num_retries=3)
        )
        service = build_service(settings)
        try:
            (result,) = await service.evaluate_conversation(_conversation(1))
        finally:
            await service.aclose()
        assert result.score == pytest.approx(7 / 9)
        assert len(model.requests) == 4
    with ScriptedLLMServer([*busy, verdict()]) as model:
        service = build_service(
            EvaluationSettings(judge="openai:busy-model", base_url=model.base_url)
        )
        try:
            with pytest.raises(ComposoError):
                await service.evaluate_conversation(_conversation(1))
        finally:
            await service.aclose()
        assert len(model.requests) == 2  # the default: one retry


async def test_the_input_budget_setting_keeps_a_long_judgement_from_the_judge() -> None:
    with ScriptedLLMServer(default=verdict()) as model:
        settings = EvaluationSettings(
            judge="openai:small-model", base_url=model.base_url, max_input_tokens=300
        )
        service = build_service(settings)
        try:
            request = ConversationRequest(
                messages=[
                    {"role": "user", "content": "Summarise this. " + "word " * 3000},
                    {"role": "assistant", "content": "A summary."},
                ],
                criteria=["Reward faithful summaries"],
            )
            (result,) = await service.evaluate_conversation(request)
        finally:
            await service.aclose()
        assert result.score is None and result.not_evaluated
        assert "300" in result.not_evaluated
        assert model.requests == []


async def test_an_anthropic_judge_takes_the_same_settings() -> None:
    with ScriptedLLMServer(default=verdict()) as model:
        settings = EvaluationSettings(
            judge="anthropic:claude-settings",
            base_url=model.url,
            api_key="anthropic-key-from-settings",
            http=HTTPOptions(max_concurrency=2),
            max_tokens=77,
        )
        service = build_service(settings)
        try:
            assert service.judge is not None and service.judge.max_concurrency == 2
            await _judge_all(service, 3)
        finally:
            await service.aclose()
        (first, *_) = model.requests
        assert first.path == "/v1/messages"
        assert first.headers["x-api-key"] == "anthropic-key-from-settings"
        assert first.json["max_tokens"] == 77


async def test_the_environments_judge_takes_the_settings_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ScriptedLLMServer(default=Reply.text(verdict().content or "", delay=0.3)) as model:
        monkeypatch.setenv("TRACEJUDGE_JUDGE", "openai:env-model")
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        service = build_service(EvaluationSettings(http=HTTPOptions(max_concurrency=3)))
        try:
            assert service.judge is not None and service.judge.name == "openai:env-model"
            await _judge_all(service, 8)
        finally:
            await service.aclose()
        assert model.max_in_flight == 3


def test_the_spend_settings_reach_the_service() -> None:
    judge = OpenAICompatibleJudge("priced-model", base_url="http://127.0.0.1:9/v1")
    prices = {"priced-model": {"input": 1.0, "output": 2.0}}
    settings = EvaluationSettings(
        judge=judge,
        http=HTTPOptions(max_concurrency=9),
        prices=prices,
        max_judge_cost=0.5,
        max_judge_tokens=1000,
        fail_under=0.7,
    )
    service = build_service(settings)
    assert service.judge is judge  # a judge object is used as it is
    assert service.fail_under == 0.7
    assert service._evaluator.max_concurrency == 9
    assert (service.spend.max_cost_usd, service.spend.max_tokens) == (0.5, 1000)
    assert service.spend.price is not None and service.spend.price.input == 1.0


async def test_the_token_cap_setting_stops_judgements() -> None:
    usage = {"prompt_tokens": 400, "completion_tokens": 100}
    with ScriptedLLMServer(default=Reply.text(verdict().content or "", usage=usage)) as model:
        settings = EvaluationSettings(
            judge="openai:capped-model",
            base_url=model.base_url,
            http=HTTPOptions(max_concurrency=1),
            max_judge_tokens=900,
        )
        service = build_service(settings)
        try:
            results = await _judge_all(service, 4)
        finally:
            await service.aclose()
    assert [r.score is not None for r in results] == [True, True, False, False]
    assert len(model.requests) == 2


def test_a_judge_the_environment_names_but_cannot_build_is_reported_when_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRACEJUDGE_JUDGE", "nowhere:model")
    service = build_service(EvaluationSettings())
    assert service.judge is None
    assert isinstance(service.judge_problem, ConfigurationError)
    with pytest.raises(ConfigurationError, match="unknown judge provider 'nowhere'"):
        service.require_judge(["Reward correct answers"])
    service.require_judge([])  # checks need no judge
    # Named in the settings, it raises at once.
    with pytest.raises(ConfigurationError, match="unknown judge provider 'nowhere'"):
        build_service(EvaluationSettings(judge="nowhere:model"))
    with pytest.raises(ConfigurationError, match="unknown judge provider 'nowhere'"):
        build_judge(EvaluationSettings())
    assert build_service(EvaluationSettings(), judge=None).judge_problem is None


async def test_the_clients_settings_reach_its_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedLLMServer(default=Reply.text(verdict().content or "", delay=0.3)) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        async with AsyncComposo(
            judge="openai:client-model", max_concurrency=6, timeout=9, num_retries=2
        ) as client:
            judge = client.judge
            assert judge is not None
            assert (judge.timeout, judge.num_retries, judge.max_concurrency) == (9.0, 2, 6)
            messages = [
                [{"role": "user", "content": f"{n}?"}, {"role": "assistant", "content": str(n)}]
                for n in range(10)
            ]
            await asyncio.gather(
                *(client.evaluate(messages=m, criteria="Reward correct answers") for m in messages)
            )
        assert model.max_in_flight == 6


def test_score_flags_reach_the_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    args = build_parser().parse_args(
        ["score", "in.jsonl", "--judge", "openai:m", "--concurrency", "3", "--fail-under", "0.6"]
    )
    service = judged_service(args)
    try:
        assert service.judge is not None
        # --concurrency traces at once, four judge calls each: the judge's bound and the
        # service's are one number.
        assert service.judge.max_concurrency == 12
        assert service._evaluator.max_concurrency == 12
        assert service.fail_under == 0.6
    finally:
        asyncio.run(service.aclose())


def _long_trace() -> MultiAgentTrace:
    """One agent whose material is far over a 300-token input budget."""
    agent = AgentInstance(
        id="a1",
        name="summariser",
        interactions=[
            LLMInteraction(
                input_messages=[LLMInput(role="user", content="Summarise. " + "word " * 3000)],
                output_messages=[LLMOutput(content="A summary.")],
            )
        ],
    )
    return MultiAgentTrace(root_agent_instance_id="a1", agent_instance_by_id={"a1": agent})


@pytest.mark.parametrize("explore", [True, False])
async def test_the_exploration_setting_reaches_the_judgement(explore: bool) -> None:
    with ScriptedLLMServer(default=verdict()) as model:
        settings = EvaluationSettings(
            judge="openai:small-model",
            base_url=model.base_url,
            max_input_tokens=2000,
            exploration=ExplorationLimits(max_rounds=3) if explore else None,
        )
        service = build_service(settings)
        try:
            (response,) = await service.score_trace(_long_trace(), ["Reward faithful summaries"])
        finally:
            await service.aclose()
        result = response.results_by_agent_name["summariser"].results_by_agent_instance_id["a1"]
        assert result is not None
        if explore:  # the judge is handed the digest and tools, and answers
            assert result.score == pytest.approx(7 / 9)
            assert len(model.requests) == 1 and model.requests[0].json.get("tools")
        else:
            assert result.score is None and "exploration is off" in (result.not_evaluated or "")
            assert model.requests == []


async def test_the_single_call_setting_judges_the_criteria_in_one_call() -> None:
    with ScriptedLLMServer(default=one_reply_per_criterion) as model:
        settings = EvaluationSettings(
            judge="openai:batch-model", base_url=model.base_url, single_call=True
        )
        service = build_service(settings)
        try:
            request = ConversationRequest(
                messages=_conversation(1).messages,
                criteria=["Reward focus", "Passes if it is correct", "Penalize verbosity"],
            )
            results = await service.evaluate_conversation(request)
        finally:
            await service.aclose()
        assert len(model.requests) == 1
        assert [r.score for r in results] == pytest.approx([1 / 9, 1.0, 3 / 9])


def test_single_call_with_a_judge_that_cannot_is_a_configuration_error() -> None:
    class OneAtATime:
        name = "one-at-a-time"

        async def judge(self, request):  # pragma: no cover - never called
            raise AssertionError

        async def aclose(self) -> None:
            pass

    with pytest.raises(ConfigurationError):
        build_service(EvaluationSettings(judge=OneAtATime(), single_call=True))
