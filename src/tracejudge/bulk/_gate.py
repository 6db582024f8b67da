"""One limit for the whole cluster: the judge's calls in flight and the run's budget.

`Gate` is a Ray actor (one per run): every worker's judge asks it for a slot before a
call and gives it back after, and every worker's evaluation service asks it whether a
judgement may start (the run's money or token budget) and tells it what each one used,
through the same `SpendLimit` hook the server's daily budgets use. Past the budget, new
judgements are not evaluated, with the reason, and the checks still run, as everywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tracejudge.evaluation import format_usd
from tracejudge.models import JudgeUsage

__all__ = ["ClusterBudget", "Gate", "GatedJudge"]

#: The judge's methods that call the judge's API: each call holds one slot of the gate.
_CALLS = frozenset({"judge_batch"})


class Gate:
    """The actor's class (made remote by the driver: only bulk imports Ray)."""

    def __init__(
        self,
        max_concurrency: int,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        *,
        spent_usd: float = 0.0,
        spent_tokens: int = 0,
    ) -> None:
        self._slots = asyncio.Semaphore(max(1, max_concurrency))
        self.max_cost_usd = max_cost_usd
        self.max_tokens = max_tokens
        self.spent_usd = spent_usd
        self.spent_tokens = spent_tokens
        self.scored = 0
        self.in_flight = 0
        self.most_in_flight = 0

    async def acquire(self) -> None:
        await self._slots.acquire()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)

    async def release(self) -> None:
        self.in_flight -= 1
        self._slots.release()

    async def refusal(self, criterion: str) -> str | None:
        if self.max_cost_usd is not None and self.spent_usd >= self.max_cost_usd:
            return f"the run's judge budget of {format_usd(self.max_cost_usd)} was spent"
        if self.max_tokens is not None and self.spent_tokens >= self.max_tokens:
            return f"the run's judge budget of {self.max_tokens:,} tokens was spent"
        return None

    async def spent(self, cost_usd: float | None, tokens: int) -> None:
        self.spent_usd += cost_usd or 0.0
        self.spent_tokens += tokens

    async def traces_scored(self, count: int) -> None:
        self.scored += count

    async def state(self) -> dict[str, Any]:
        return {
            "scored": self.scored,
            "spent_usd": self.spent_usd,
            "spent_tokens": self.spent_tokens,
            "most_in_flight": self.most_in_flight,
        }


class ClusterBudget:
    """The gate as the evaluation service's `SpendLimit`."""

    def __init__(self, gate: Any) -> None:
        self._gate = gate

    async def refusal(self, criterion: str) -> str | None:
        reason: str | None = await self._gate.refusal.remote(criterion)
        return reason

    async def spent(self, criterion: str, usage: JudgeUsage) -> None:
        await self._gate.spent.remote(usage.cost_usd, usage.total_tokens)


class GatedJudge:
    """A judge whose calls each hold a slot of the gate; everything else is the judge's."""

    def __init__(self, judge: Any, gate: Any) -> None:
        self._judge = judge
        self._gate = gate
        self.name = judge.name

    async def _gated(self, call: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        await self._gate.acquire.remote()
        try:
            return await call(*args)
        finally:
            await self._gate.release.remote()

    async def judge(self, request: Any) -> Any:
        return await self._gated(self._judge.judge, request)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._judge, name)
        if name in _CALLS and callable(value):

            async def gated(*args: Any) -> Any:
                return await self._gated(value, *args)

            return gated
        return value
