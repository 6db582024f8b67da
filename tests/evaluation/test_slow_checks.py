"""A user's slow check runs off the event loop: judge calls on the same client go on
meanwhile. A check returning NaN is an error naming the check. Real judge over loopback."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from tests.evaluation.test_client import CAPITAL, MakeJudge
from tracejudge import AsyncComposo, checks
from tracejudge.models import AgentInstance
from tracejudge.testing import ScriptedLLMServer

#: Seconds a slow check holds its thread: the judge call beside it must take far less.
SLOW_CHECK = 2.0


@pytest.mark.heavy("a user check that takes seconds beside judge calls")
async def test_a_slow_user_check_does_not_stall_judge_calls_on_the_same_client(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    @checks.check
    def slow_service(agent: AgentInstance) -> float:
        time.sleep(SLOW_CHECK)  # a user's check calling a slow service, synchronously
        return 1.0

    async with AsyncComposo(judge=make_judge(judge_server)) as client:
        await client.evaluate(messages=CAPITAL, criteria="Reward accuracy")  # warm up
        started = time.perf_counter()
        judging = asyncio.create_task(client.evaluate(messages=CAPITAL, criteria="Reward brevity"))
        await asyncio.sleep(0)  # the judge call is sent first...
        checking = asyncio.create_task(client.evaluate(messages=CAPITAL, criteria=slow_service))
        judged = await judging  # ...and its answer read while the check runs
        took = time.perf_counter() - started
        checked = await checking
    assert judged.score is not None and checked.score == 1.0
    # On the event loop, the judge call waited for the check: all of it and more.
    assert took < SLOW_CHECK / 2, f"the judge call took {took:.2f}s while the check ran"


def test_a_check_returning_nan_is_an_error_naming_it(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    @checks.check
    def ratio(agent: AgentInstance) -> float:
        return math.nan  # 0/0 in the user's arithmetic

    from tracejudge import Composo

    with Composo(judge=make_judge(judge_server)) as client:
        with pytest.raises(ValueError, match="check 'ratio' returned NaN"):
            client.evaluate(messages=CAPITAL, criteria=ratio)
