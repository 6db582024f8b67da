"""A judge outlives event loops and closing: the sync client and tests may use several."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.judges.helpers import graded, no_resource_warnings
from tracejudge.judges import JudgeRequest, OpenAICompatibleJudge
from tracejudge.testing import ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")


def test_one_judge_serves_several_event_loops(server: ScriptedLLMServer) -> None:
    server.add(graded(8), graded(6))
    judge = OpenAICompatibleJudge("m", base_url=server.base_url, cache=False)
    first = asyncio.run(judge.judge(REQUEST))
    second = asyncio.run(judge.judge(REQUEST))
    assert (first.score, second.score) == pytest.approx((7 / 9, 5 / 9))


async def test_a_closed_judge_can_be_used_again(server: ScriptedLLMServer, make_judge) -> None:
    server.add(graded(8), graded(6))
    async with make_judge() as judge:
        await judge.judge(REQUEST)
    assert (await judge.judge(REQUEST)).score == pytest.approx(5 / 9)


def test_connections_of_finished_event_loops_are_closed(server: ScriptedLLMServer) -> None:
    # Each asyncio.run ends its loop; the judge's connections there must end with it.
    server.default = graded(7)
    judge = OpenAICompatibleJudge("m", base_url=server.base_url, cache=False)
    with no_resource_warnings():
        for _ in range(5):
            asyncio.run(judge.judge(REQUEST))
        del judge


@pytest.mark.parametrize("concurrency", [8, 64], ids=["one pool", "sharded pools"])
def test_a_loop_closed_without_shutdown_leaves_no_open_connection(
    server: ScriptedLLMServer, concurrency: int
) -> None:
    server.default = graded(7)
    judge = OpenAICompatibleJudge(
        "m", base_url=server.base_url, cache=False, max_concurrency=concurrency
    )
    with no_resource_warnings():
        loop = asyncio.new_event_loop()
        loop.run_until_complete(judge.judge(REQUEST))
        loop.close()  # no shutdown_asyncgens: nothing closed the connection on that loop
        asyncio.run(judge.judge(REQUEST))  # a new loop: the dead loop's client is closed
        del judge


def test_aclose_closes_the_connections_of_another_running_loop(
    server: ScriptedLLMServer,
) -> None:
    server.default = graded(7)
    judge = OpenAICompatibleJudge("m", base_url=server.base_url, cache=False)
    with no_resource_warnings():
        other = asyncio.new_event_loop()
        thread = threading.Thread(target=other.run_forever, daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(judge.judge(REQUEST), other).result(timeout=10)
            asyncio.run(judge.aclose())  # from this thread's loop, not the other one
            # Give the other loop a moment to run the close it was handed.
            asyncio.run_coroutine_threadsafe(asyncio.sleep(0.2), other).result(timeout=10)
        finally:
            other.call_soon_threadsafe(other.stop)
            thread.join(timeout=10)
        other.close()  # without shutdown_asyncgens: only aclose() can have closed it
        del judge


async def test_one_judge_serves_the_loops_of_several_threads_at_once(
    server: ScriptedLLMServer,
) -> None:
    # Several threads, each with its own loop, use one judge at once.
    server.default = graded(7)
    judge = OpenAICompatibleJudge("m", base_url=server.base_url, cache=False)
    scores: list[float | None] = []

    def work() -> None:
        scores.append(asyncio.run(judge.judge(REQUEST)).score)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert scores == [pytest.approx(6 / 9)] * 4
    await judge.aclose()
