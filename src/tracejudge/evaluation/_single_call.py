"""The opt-in single-call mode: every text criterion of a request judged in ONE judge call
per agent (one reply object per criterion, `Judge.judge_batch`), rather than a call per
criterion and agent.

The request's criteria are still answered one awaitable each (the service's shape does
not change): the first of them to reach an agent starts the one call for all the
criteria of that agent, and the others wait for its verdicts. It trades some
independence between the criteria (the judge sees them together) for cost: the agent's
material is read once, not once per criterion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["SingleCall"]

R = TypeVar("R")


class SingleCall(Generic[R]):
    """One per request: the criteria judged together, and each agent's call once started."""

    def __init__(self, criteria: Sequence[str]) -> None:
        self.criteria = list(dict.fromkeys(criteria))
        self._calls: dict[str, asyncio.Future[list[R]]] = {}

    async def verdict(
        self, key: str, criterion: str, judge_all: Callable[[list[str]], Awaitable[list[R]]]
    ) -> R:
        """`criterion`'s answer for the material `key` (an agent instance): from the one
        call `judge_all(criteria)` made for all of them, started by the first to ask."""
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = asyncio.ensure_future(judge_all(self.criteria))
            # Its failure is read by whoever awaits it; none may be left to (all cancelled).
            call.add_done_callback(lambda done: done.cancelled() or done.exception())
        # Shielded: a criterion's awaitable cancelled alone does not cancel the others'.
        answers = await asyncio.shield(call)
        return answers[self.criteria.index(criterion)]
