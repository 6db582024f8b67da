"""Retries, backoff, Retry-After, deadlines, typed errors and the concurrency limit."""

from __future__ import annotations

import asyncio
import email.utils
import time

import httpx
import pytest

from tests.in_flight import HeldUntilInFlight
from tests.judges.helpers import graded
from tracejudge._http import pooled_transport, retry_after_seconds
from tracejudge._http._sharded import ShardedTransport
from tracejudge.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    RateLimitError,
)
from tracejudge.errors import TimeoutError as JudgeTimeoutError
from tracejudge.judges import JudgeRequest
from tracejudge.testing import Reply, ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")


async def test_429_with_retry_after_is_waited_out_then_succeeds(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.error(429, message="slow down", retry_after=0.3), graded(8))
    verdict = await make_judge().judge(REQUEST)
    assert verdict.score == pytest.approx(7 / 9)
    assert verdict.usage.calls == 2
    assert len(server.requests) == 2
    # Honoured: the second request came no sooner than asked (loose bound, no tight timing).
    gap = server.requests[1].received_at - server.requests[0].received_at
    assert gap >= 0.25


async def test_retry_after_beyond_the_deadline_fails_at_once_with_rate_limit_error(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.error(429, retry_after=30), graded(8))
    started = time.monotonic()
    with pytest.raises(RateLimitError) as caught:
        await make_judge(timeout=1.0).judge(REQUEST)
    # not waited: failed long before the 30 s asked for (no wall-clock limit on the test)
    assert time.monotonic() - started < 30 / 2
    assert "retry after" in str(caught.value)
    assert len(server.requests) == 1


async def test_429_exhausting_retries_raises_rate_limit_error(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(*[Reply.error(429, message="quota") for _ in range(3)])
    with pytest.raises(RateLimitError) as caught:
        await make_judge(num_retries=2).judge(REQUEST)
    assert caught.value.status_code == 429
    assert "max_concurrency" in str(caught.value)
    assert len(server.requests) == 3


@pytest.mark.parametrize("num_retries", [1, 3])
async def test_5xx_exhausting_retries_raises_api_error_after_num_retries_plus_one_requests(
    server: ScriptedLLMServer, make_judge, num_retries: int
) -> None:
    server.add(*[Reply.error(500, message="boom") for _ in range(num_retries + 1)], graded(8))
    with pytest.raises(APIError) as caught:
        await make_judge(num_retries=num_retries).judge(REQUEST)
    assert not isinstance(caught.value, JudgeTimeoutError)
    assert caught.value.status_code == 500
    assert "boom" in str(caught.value)
    assert len(server.requests) == num_retries + 1


async def test_num_retries_below_one_is_raised_to_one(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.error(503), graded(8))
    judge = make_judge(num_retries=0)
    assert judge.num_retries == 1
    assert (await judge.judge(REQUEST)).usage.calls == 2


async def test_5xx_then_success_is_retried(server: ScriptedLLMServer, make_judge) -> None:
    server.add(Reply.error(502), Reply.error(529), graded(10))
    verdict = await make_judge(num_retries=2).judge(REQUEST)
    assert verdict.score == 1.0
    assert verdict.usage.calls == 3


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failure_raises_authentication_error_without_retry(
    server: ScriptedLLMServer, make_judge, status: int
) -> None:
    server.add(Reply.error(status, message="Incorrect API key provided"), graded(8))
    with pytest.raises(AuthenticationError) as caught:
        await make_judge(num_retries=3).judge(REQUEST)
    assert "OPENAI_API_KEY" in str(caught.value)
    assert caught.value.status_code == status
    assert len(server.requests) == 1


async def test_unknown_model_names_the_model_and_base_url(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.error(404, message="The model `no-such-model` does not exist"), graded(8))
    with pytest.raises(BadRequestError) as caught:
        await make_judge(model="no-such-model").judge(REQUEST)
    message = str(caught.value)
    assert "no-such-model" in message and server.base_url in message
    assert len(server.requests) == 1


async def test_a_slow_reply_times_out_within_about_the_deadline(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.text("{}", delay=60.0), Reply.text("{}", delay=60.0))
    started = time.monotonic()
    with pytest.raises(JudgeTimeoutError) as caught:
        await make_judge(timeout=0.5, num_retries=3).judge(REQUEST)
    elapsed = time.monotonic() - started
    # at the deadline: not before it, and not after the replies (a minute away) came
    assert 0.4 < elapsed < 60 / 4
    assert "timeout" in str(caught.value)


async def test_the_request_timeout_retries_within_the_total_deadline(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.text("{}", delay=60.0), graded(6))
    verdict = await make_judge(timeout=30.0, request_timeout=0.3).judge(REQUEST)
    # the slow first reply (a minute away) was given up on at 0.3 s, and the retry judged
    assert verdict.score == pytest.approx(5 / 9)
    assert verdict.usage.calls == 2


async def test_connection_refused_raises_api_error(make_judge) -> None:
    with ScriptedLLMServer() as gone:
        url = gone.base_url
    with pytest.raises(APIError) as caught:
        await make_judge(base_url=url, timeout=5.0).judge(REQUEST)
    assert "could not reach" in str(caught.value)


async def test_concurrency_limit_bounds_requests_in_flight(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.default = Reply.text('{"explanation": "ok", "applicable": true, "score": 7}', delay=0.2)
    judge = make_judge(max_concurrency=2)
    verdicts = await asyncio.gather(*(judge.judge(REQUEST) for _ in range(6)))
    assert [v.score for v in verdicts] == pytest.approx([6 / 9] * 6)
    assert len(server.requests) == 6
    assert server.max_in_flight == 2


async def test_a_limit_above_one_pool_uses_every_connection_over_several_pools(
    server: ScriptedLLMServer, make_judge
) -> None:
    # 40 connections are split over pools of at most 16 (one large httpx pool is slow);
    # together they must still carry all 40 calls at once, no more.
    verdict = Reply.text('{"explanation": "ok", "applicable": true, "score": 7}')
    server.default = HeldUntilInFlight(verdict, 40)
    judge = make_judge(max_concurrency=40)
    verdicts = await asyncio.gather(*(judge.judge(REQUEST) for _ in range(50)))
    assert [v.score for v in verdicts] == pytest.approx([6 / 9] * 50)
    assert server.max_in_flight == 40
    client = judge._clients.get().client
    assert isinstance(client._transport, ShardedTransport)
    assert len(client._transport._transports) == 3


def test_pooled_transport_is_one_plain_pool_up_to_sixteen_connections() -> None:
    assert isinstance(pooled_transport(16), httpx.AsyncHTTPTransport)
    assert len(pooled_transport(17)._transports) == 2  # type: ignore[attr-defined]


def test_retry_after_reads_seconds_milliseconds_and_http_dates() -> None:
    assert retry_after_seconds(httpx.Headers({"retry-after": "2"})) == 2.0
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds(httpx.Headers({"retry-after": date})) <= 31
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_seconds(httpx.Headers({})) is None


async def test_an_injected_transport_replaces_the_network() -> None:
    from tracejudge.judges import OpenAICompatibleJudge

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": '{"explanation": "ok", "applicable": true, "score": 4}',
                        }
                    }
                ]
            },
        )

    judge = OpenAICompatibleJudge(
        "m", base_url="http://judge.invalid/v1", transport=httpx.MockTransport(handler), cache=False
    )
    verdict = await judge.judge(REQUEST)
    await judge.aclose()
    assert verdict.score == pytest.approx(3 / 9)
    # Before its first judgement the judge asks the server its context (marked requests,
    # through the same transport); then the judgement.
    probes = [r for r in seen if "x-tracejudge-probe" in r.headers]
    seen = [r for r in seen if r not in probes]
    assert [str(r.url) for r in probes] == [
        "http://judge.invalid/props",
        "http://judge.invalid/v1/models",
        "http://judge.invalid/api/show",
    ]
    assert str(seen[0].url) == "http://judge.invalid/v1/chat/completions"
    assert "authorization" not in seen[0].headers
