"""Hostile judge replies from a real server on loopback: huge, deeply nested, quadratic-bait.

Reading a reply is linear in its length, never raises anything but the documented errors,
and runs off the event loop so other calls on the same client go on meanwhile. Time is
measured as growth (a reply eight times longer takes about eight times as long, not
sixty-four: tests/timing.py); memory bounds are generous: they catch unbounded behaviour.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import tracemalloc
from typing import Any

import pytest

from tests.timing import LINEAR, growth
from tracejudge.errors import APIError, MalformedError
from tracejudge.judges import JudgeRequest
from tracejudge.judges._parse import ReplyError, extract_object
from tracejudge.testing import Reply, ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")

# Each of these took seconds to minutes (or a RecursionError) when extraction rescanned:
# (how one is built for a size, its size then).
HOSTILE = {
    "16,000 unclosed braces": (lambda n: "{" * n, 16_000),
    "a million unclosed braces": (lambda n: "{" * n, 1_000_000),
    "nested 200,000 deep": (lambda n: "{" * n + "}" * n, 200_000),
    "valid JSON nested 200,000 deep": (lambda n: '{"a":' * n + "1" + "}" * n, 200_000),
    "arrays nested 200,000 deep": (lambda n: '{"a":' + "[" * n + "]" * n + "}", 200_000),
    "500,000 empty objects": (lambda n: "{}" * n, 500_000),
    "braces that never pair": (lambda n: "{{}" * n, 300_000),
    "an unterminated string of escapes": (lambda n: '{"' + '\\"' * n, 1_000_000),
}


def _read(text: str) -> None:
    with contextlib.suppress(ReplyError):
        extract_object(text, keys=("score", "explanation"))


@pytest.mark.parametrize(("build", "size"), list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.heavy("replies of hundreds of thousands of tokens, measured as they grow")
def test_hostile_replies_are_refused_in_linear_time(build: Any, size: int) -> None:
    with pytest.raises(ReplyError):
        extract_object(build(size), keys=("score", "explanation"))
    # an eighth of the size, then the size itself: linear time (or better)
    assert growth(_read, size // 8, make=build) < LINEAR


def test_20k_unclosed_think_tags_cost_no_rescans() -> None:
    def think_tags(n: int) -> str:
        return "<think>" * n + '{"explanation": "fine", "score": 7}'

    assert extract_object(think_tags(20_000), keys=("score",)).value["score"] == 7
    assert growth(lambda text: extract_object(text, keys=("score",)), 2_500, make=think_tags) < (
        LINEAR
    )


def test_a_20mb_reply_is_read_in_bounded_time_and_memory() -> None:
    def reply(n: int) -> str:
        return json.dumps({"explanation": "x" * n, "score": 5})

    text = reply(20_000_000)
    tracemalloc.start()
    try:
        found = extract_object(text, keys=("score",))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.value["score"] == 5
    assert growth(lambda t: extract_object(t, keys=("score",)), 2_500_000, make=reply) < LINEAR
    # The parsed explanation plus one copy of the object: not the ~135 bytes per reply byte
    # the trailing-comma rewrite used to cost.
    assert peak < 4 * len(text), f"{peak / 1e6:.0f} MB for a {len(text) / 1e6:.0f} MB reply"


async def test_a_deeply_nested_reply_is_a_malformed_error(
    server: ScriptedLLMServer, make_judge
) -> None:
    nested = '{"explanation": ' * 100_000 + '"x"' + "}" * 100_000
    server.add(Reply.text(nested), Reply.text(nested))
    with pytest.raises(MalformedError, match="nested more than"):
        await make_judge().judge(REQUEST)
    assert len(server.requests) == 2  # asked again once, with the reason


async def test_a_deeply_nested_response_body_is_an_api_error(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.raw(200, "[" * 200_000 + "]" * 200_000))
    with pytest.raises(APIError, match="without a chat completion"):
        await make_judge().judge(REQUEST)


async def test_a_body_that_is_not_json_is_kept_as_sent(
    server: ScriptedLLMServer, make_judge
) -> None:
    """Before: a 200 whose body is not JSON (a proxy's HTML page) was an APIError with
    `response_body == 'None'` (what the parser made of it). Now the body as sent."""
    page = "<html><body>502 from the proxy, judge-provider-key</body></html>"
    server.add(Reply.raw(200, page, headers={"Content-Type": "text/html"}))
    with pytest.raises(APIError, match="without a chat completion") as raised:
        await make_judge(api_key="judge-provider-key").judge(REQUEST)
    assert raised.value.response_body is not None
    assert raised.value.response_body.startswith("<html><body>502 from the proxy")
    assert "judge-provider-key" not in raised.value.response_body  # redacted


async def test_reading_a_huge_reply_does_not_stall_other_calls(
    server: ScriptedLLMServer, make_judge
) -> None:
    # The most expensive reply to read (every step of the search spent), next to calls that
    # should take milliseconds: the event loop must keep turning while it is read.
    server.add(Reply.text("{}" * 1_500_000), Reply.text("{}" * 1_500_000))
    judge = make_judge(timeout=30)
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append(time.perf_counter() - before - 0.005)

    async def hostile() -> float:
        started = time.perf_counter()
        try:
            with pytest.raises(MalformedError):
                await judge.judge(REQUEST)
        finally:
            done.set()
        return time.perf_counter() - started

    tick = asyncio.create_task(ticker())
    took = await hostile()
    await tick
    assert took > 0.2, "the hostile reply was too cheap to show anything"
    # Read inline, the loop would stall for each of the two whole reads (half the time
    # each); off it, for a GIL switch or two. The second-longest lag is compared: a loaded
    # machine may deschedule the whole process once (a run at load 4.7 failed on the max).
    second = sorted(lags)[-2]
    assert second < took / 5, (sorted(lags)[-3:], took)


async def test_an_answer_over_the_size_cap_is_an_api_error_read_no_further(
    server: ScriptedLLMServer, make_judge
) -> None:
    huge = json.dumps({"explanation": "x" * 20_000_000, "score": 5})
    server.add(Reply.text(huge))
    with pytest.raises(APIError, match="more than 4,194,304 bytes") as caught:
        await make_judge(timeout=10).judge(REQUEST)
    assert caught.value.status_code == 200
    assert len(server.requests) == 1  # not retried: the same question gets the same answer


async def test_a_20mb_answer_within_a_raised_cap_is_judged_in_bounded_time_and_memory(
    server: ScriptedLLMServer, make_judge
) -> None:
    huge = json.dumps({"explanation": "x" * 20_000_000, "score": 5})
    server.add(Reply.text(huge))
    judge = make_judge(timeout=30, max_response_bytes=64 * 1024 * 1024)
    tracemalloc.start()
    try:
        verdict = await judge.judge(REQUEST)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert verdict.score == pytest.approx(4 / 9)
    # It took 2.9 GB before: the body, its text, the parsed object and a few copies now.
    assert peak < 12 * len(huge), f"{peak / 1e6:.0f} MB for a {len(huge) / 1e6:.0f} MB answer"


def test_the_size_cap_must_be_a_sensible_number(make_judge) -> None:
    from tracejudge.errors import ConfigurationError

    for wrong in (0, 10, 1.5, True):
        with pytest.raises(ConfigurationError, match="max_response_bytes"):
            make_judge(max_response_bytes=wrong)
