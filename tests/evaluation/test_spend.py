"""Cost on every verdict, and the run's cap on what the judge may spend, through the one
evaluation path and a real judge over HTTP (the scripted model reports fixed usage, so the
cost of each call is known)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from tests.evaluation.test_trace import multi_agent_trace
from tracejudge import Composo, checks
from tracejudge.errors import ConfigurationError
from tracejudge.evaluation import format_usd
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import JudgeUsage, PriceTable
from tracejudge.testing import Reply, ScriptedLLMServer

VERDICT = json.dumps({"explanation": "Fine.", "applicable": True, "score": 8})
#: Judged agents of `multi_agent_trace()` (t1 never called a model).
JUDGED = {"o1", "r1", "r2", "w1"}


def completion(
    prompt: int = 10_000, cached: int = 8_000, completion: int = 200, delay: float = 0.0
) -> Reply:
    """A chat completion reporting this usage, as OpenAI does (cached tokens in details)."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": VERDICT},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }
    return Reply.raw(200, body, delay=delay)


def judge(server: ScriptedLLMServer, model: str = "gpt-4.1-mini") -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge(
        model, base_url=server.base_url, api_key="k", cache=False, logprobs=False
    )


#: gpt-4.1-mini in the shipped table: $0.40 input, $0.10 cached input, $1.60 output.
GPT_41_MINI_CALL = (2_000 * 0.40 + 8_000 * 0.10 + 200 * 1.60) / 1_000_000


async def test_every_verdict_carries_its_tokens_and_cost() -> None:
    with ScriptedLLMServer(default=completion()) as server:
        service = EvaluationService(judge(server))
        reward, check = await service.score_trace(
            multi_agent_trace(), ["Reward focus", checks.tool_results]
        )
    for instance_id in JUDGED:
        usage = _result(reward, instance_id).usage
        assert usage is not None
        assert (usage.calls, usage.input_tokens, usage.cached_input_tokens) == (1, 10_000, 8_000)
        assert usage.output_tokens == 200
        assert usage.cost_usd == pytest.approx(GPT_41_MINI_CALL)
    # the criterion's answer sums its agents; a check costs nothing and says so by no usage
    assert reward.usage is not None and reward.usage.calls == 4
    assert reward.usage.cached_input_tokens == 32_000
    assert reward.usage.cost_usd == pytest.approx(4 * GPT_41_MINI_CALL)
    assert check.usage is None
    assert service.spend.total.cost_usd == pytest.approx(4 * GPT_41_MINI_CALL)
    # and on the wire, as the server and `--json` give it
    wire = json.loads(reward.model_dump_json())
    assert wire["usage"]["cost_usd"] == pytest.approx(4 * GPT_41_MINI_CALL)
    agent = wire["results_by_agent_name"]["writer"]["results_by_agent_instance_id"]["w1"]
    assert agent["usage"]["cached_input_tokens"] == 8_000


async def test_an_unknown_model_shows_tokens_and_no_cost() -> None:
    with ScriptedLLMServer(default=completion()) as server:
        service = EvaluationService(judge(server, "my-finetune"))
        (response,) = await service.score_trace(multi_agent_trace(), ["Reward focus"])
    usage = _result(response, "o1").usage
    assert usage is not None and usage.input_tokens == 10_000 and usage.cost_usd is None
    assert response.usage is not None and response.usage.cost_usd is None
    assert "cost_usd" not in json.loads(response.model_dump_json())["usage"]


async def test_prices_by_option_by_file_and_by_environment(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    price = {"input": 1.0, "output": 10.0, "cached_input": 0.5}
    expected = (2_000 * 1.0 + 8_000 * 0.5 + 200 * 10.0) / 1_000_000
    prices_file = tmp_path / "prices.json"
    prices_file.write_text(json.dumps({"my-finetune": price}))
    with ScriptedLLMServer(default=completion()) as server:
        options: list[dict[str, Any]] = [
            {"prices": {"my-finetune": price}},
            {"prices": str(prices_file)},
            {"prices": PriceTable({"my-finetune": price})},
        ]
        for given in options:
            service = EvaluationService(judge(server, "my-finetune"), **given)
            (response,) = await service.score_trace(multi_agent_trace(), ["Reward focus"])
            assert _result(response, "r1").usage.cost_usd == pytest.approx(expected), given
        monkeypatch.setenv("TRACEJUDGE_JUDGE_PRICES", str(prices_file))
        service = EvaluationService(judge(server, "my-finetune"))
        (response,) = await service.score_trace(multi_agent_trace(), ["Reward focus"])
        assert _result(response, "r1").usage.cost_usd == pytest.approx(expected)
        # an override replaces a shipped price
        service = EvaluationService(judge(server), prices={"gpt-4.1-mini": price})
        (response,) = await service.score_trace(multi_agent_trace(), ["Reward focus"])
        assert _result(response, "r1").usage.cost_usd == pytest.approx(expected)


def test_a_bad_prices_file_names_the_option_and_the_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text('{"m": {"input": 1}}')
    with pytest.raises(ConfigurationError, match=r"prices=: prices file .*prices.json.*output"):
        EvaluationService(None, prices=str(bad))
    monkeypatch.setenv("TRACEJUDGE_JUDGE_PRICES", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigurationError, match="TRACEJUDGE_JUDGE_PRICES: .*cannot read"):
        EvaluationService(None)


def test_composo_takes_prices_and_its_results_carry_the_cost() -> None:
    with ScriptedLLMServer(default=completion()) as server:
        with Composo(
            judge=judge(server, "my-finetune"), prices={"my-finetune": {"input": 2, "output": 4}}
        ) as client:
            messages = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
            result = client.evaluate(messages=messages, criteria="Reward accuracy")
    assert result.usage is not None
    assert result.usage.cost_usd == pytest.approx((10_000 * 2 + 200 * 4) / 1_000_000)


# --------------------------------------------------------------------------- the run cap


async def test_past_the_cap_no_judgement_starts_and_the_rest_are_not_evaluated() -> None:
    # One judgement at a time, $0.01 each: the third starts at $0.02 < $0.025 and the
    # fourth finds $0.03 spent.
    prices = {"flat": {"input": 1.0, "output": 0.0}}
    with ScriptedLLMServer(default=completion(10_000, 0, 0)) as server:
        service = EvaluationService(
            judge(server, "flat"), max_concurrency=1, prices=prices, max_judge_cost=0.025
        )
        first, second = await service.score_trace(
            multi_agent_trace(), ["Reward focus", checks.tool_results]
        )
        again, *_ = await service.score_trace(multi_agent_trace(), ["Reward clarity"])
        assert len(server.requests) == 3
    results = [_result(first, i) for i in ("o1", "r1", "r2", "w1")]
    assert [r.status for r in results] == ["scored", "scored", "scored", "not_evaluated"]
    refused = results[3]
    assert refused.score is None and refused.usage is None
    assert refused.not_evaluated == "the run's judge budget of $0.025 was spent"
    # left out of the aggregates: the mean is of the three scored agents, nothing failed
    assert first.overall_score == pytest.approx(7 / 9)
    assert first.failing_agents == 0
    assert first.usage is not None and first.usage.cost_usd == pytest.approx(0.03)
    # checks still run; the next trace's judgements are all refused
    assert second.usage is None and second.overall_score is not None
    assert all(
        _result(again, i).not_evaluated == refused.not_evaluated for i in ("o1", "r1", "r2", "w1")
    )
    assert service.spend.refused == 5
    assert service.spend.total.cost_usd == pytest.approx(0.03)


async def test_judgements_in_flight_at_the_cap_finish_and_are_kept() -> None:
    prices = {"flat": {"input": 1.0, "output": 0.0}}
    with ScriptedLLMServer(default=completion(10_000, 0, 0, delay=0.3)) as server:
        service = EvaluationService(
            judge(server, "flat"), max_concurrency=4, prices=prices, max_judge_cost=0.01
        )
        (response,) = await service.score_trace(multi_agent_trace(), ["Reward focus"])
        (later,) = await service.score_trace(multi_agent_trace(), ["Reward focus"])
        assert server.max_in_flight == 4 and len(server.requests) == 4
    # all four started before any had spent: all four are paid for and kept
    assert {i for i in JUDGED if _result(response, i).status == "scored"} == JUDGED
    assert response.usage is not None and response.usage.cost_usd == pytest.approx(0.04)
    assert {_result(later, i).status for i in JUDGED} == {"not_evaluated"}


async def test_a_token_cap_works_without_prices() -> None:
    with ScriptedLLMServer(default=completion(1_000, 0, 50)) as server:
        service = EvaluationService(
            judge(server, "my-finetune"), max_concurrency=1, max_judge_tokens=2_000
        )
        (response,) = await service.score_trace(multi_agent_trace(), ["Reward focus"])
    statuses = [_result(response, i).status for i in ("o1", "r1", "r2", "w1")]
    assert statuses == ["scored", "scored", "not_evaluated", "not_evaluated"]
    assert _result(response, "r2").not_evaluated == (
        "the run's judge budget of 2,000 tokens was spent"
    )


def test_a_cost_cap_on_an_unpriced_model_is_refused_or_capped_by_tokens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with ScriptedLLMServer() as server:
        with pytest.raises(ConfigurationError) as refused:
            EvaluationService(judge(server, "my-finetune"), max_judge_cost=1.0)
        message = str(refused.value)
        assert "'my-finetune' has no price" in message
        assert "prices=" in message and "max_judge_tokens=" in message
        with caplog.at_level(logging.WARNING, logger="tracejudge.evaluation"):
            service = EvaluationService(
                judge(server, "my-finetune"), max_judge_cost=1.0, max_judge_tokens=10
            )
        assert service.spend.unenforceable is not None
        (warning,) = [r.getMessage() for r in caplog.records]
        assert "cannot be enforced" in warning and "capping tokens only" in warning
        with pytest.raises(ConfigurationError, match="above 0"):
            EvaluationService(judge(server), max_judge_cost=0)


def test_a_cached_verdict_costs_nothing_and_a_missing_usage_is_unknown() -> None:
    from tracejudge.evaluation.spend import JudgeSpend

    spend = JudgeSpend("gpt-4.1-mini", PriceTable())
    assert spend.priced_usage(JudgeUsage(cached_calls=1)).cost_usd == 0.0
    assert spend.priced_usage(JudgeUsage(calls=1)).cost_usd is None  # no tokens reported
    assert spend.priced_usage(JudgeUsage(calls=1, cost_usd=0.5)).cost_usd == 0.5


def test_dollars_read_as_dollars() -> None:
    assert [format_usd(x) for x in (0, 0.0042, 0.025, 0.5, 1, 1234.5)] == [
        "$0.00",
        "$0.0042",
        "$0.025",
        "$0.50",
        "$1.00",
        "$1,234.50",
    ]


def _result(response: Any, instance_id: str) -> Any:
    for by_name in response.results_by_agent_name.values():
        if instance_id in by_name.results_by_agent_instance_id:
            return by_name.results_by_agent_instance_id[instance_id]
    raise AssertionError(f"no agent {instance_id}")
