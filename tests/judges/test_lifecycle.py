"""A judge outlives event loops and closing: the sync client and tests may use several."""

from __future__ import annotations

import asyncio

import pytest

from tests.judges.helpers import graded
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
