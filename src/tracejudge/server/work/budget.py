"""The server's daily judge budgets, kept in its store.

Every judgement the server's judge makes is counted in the store's `judge_spend` table
(dollars, tokens, calls) for its day (UTC) in all and for its criterion, in one
transaction, so that replicas sharing a database share the budgets and a restart keeps
what was spent. Before a judgement starts, the day's spending is read back: once it has
reached `--max-judge-cost-per-day` (or, for that criterion,
`--max-judge-cost-per-criterion-per-day`; and the same in tokens), new judgements are not
evaluated, with the reason, until the day ends. Judgements already started finish and
are counted. Deterministic checks cost nothing and always run.

A judgement's spending that the store cannot take when it is made (SQLite locked past its
busy timeout, PostgreSQL away) is not lost: it is owed, kept in memory per day and
criterion, counted in this process's budget checks meanwhile, and written with the next
spending or budget check once the store takes writes again (issue #32: such spending
went uncounted).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tracejudge.evaluation import format_usd
from tracejudge.models import JudgeUsage
from tracejudge.server.config import ServerConfig
from tracejudge.server.store import Store
from tracejudge.server.work.context import in_thread

__all__ = ["DailyBudget", "utc_day"]

logger = logging.getLogger("tracejudge.server")

_RESETS = "it resets at 00:00 UTC"


def utc_day(now: float) -> str:
    """The day (UTC, YYYY-MM-DD) a Unix time falls on."""
    return time.strftime("%Y-%m-%d", time.gmtime(now))


@dataclass
class DailyBudget:
    """A `tracejudge.evaluation.SpendLimit` over the store: the limits per day in all and
    per criterion, in dollars and in tokens (None: no such limit)."""

    store: Store
    cost_per_day: float | None = None
    cost_per_criterion_per_day: float | None = None
    tokens_per_day: int | None = None
    tokens_per_criterion_per_day: int | None = None
    clock: Callable[[], float] = time.time
    #: Told of every judgement's spending, before it is counted in the store (the
    #: metrics: counted even when the store fails to record it).
    on_spent: Callable[[JudgeUsage], None] | None = None
    #: Spending not written to the store yet: (day, criterion) -> [dollars, tokens, calls].
    _owed: dict[tuple[str, str], list[float]] = field(default_factory=dict, repr=False)
    _settling: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def limited(self) -> bool:
        """Whether any limit is set (without one, spending is only counted)."""
        return any(
            limit is not None
            for limit in (
                self.cost_per_day,
                self.cost_per_criterion_per_day,
                self.tokens_per_day,
                self.tokens_per_criterion_per_day,
            )
        )

    async def refusal(self, criterion: str) -> str | None:
        if not self.limited:
            return None
        today = utc_day(self.clock())
        if self._owed:
            try:
                await self._settle()
            except Exception:  # still owed: counted below from memory
                pass
        day, mine = await in_thread(self.store.spend.of_day, today, criterion)
        day_cost, day_tokens = day.cost_usd, day.tokens
        mine_cost, mine_tokens = mine.cost_usd, mine.tokens
        for (owed_day, owed_criterion), (cost, used, _) in list(self._owed.items()):
            if owed_day == today:
                day_cost, day_tokens = day_cost + cost, day_tokens + int(used)
                if owed_criterion == criterion:
                    mine_cost, mine_tokens = mine_cost + cost, mine_tokens + int(used)
        if self.cost_per_day is not None and day_cost >= self.cost_per_day:
            return (
                f"the server's judge budget of {format_usd(self.cost_per_day)} per day was "
                f"spent ({_RESETS})"
            )
        if self.tokens_per_day is not None and day_tokens >= self.tokens_per_day:
            return (
                f"the server's judge budget of {self.tokens_per_day:,} tokens per day was "
                f"spent ({_RESETS})"
            )
        limit = self.cost_per_criterion_per_day
        if limit is not None and mine_cost >= limit:
            return (
                f"the server's judge budget of {format_usd(limit)} per criterion per day was "
                f"spent on this criterion ({_RESETS})"
            )
        tokens = self.tokens_per_criterion_per_day
        if tokens is not None and mine_tokens >= tokens:
            return (
                f"the server's judge budget of {tokens:,} tokens per criterion per day was "
                f"spent on this criterion ({_RESETS})"
            )
        return None

    async def spent(self, criterion: str, usage: JudgeUsage) -> None:
        if not (usage.calls or usage.total_tokens or usage.cost_usd):
            return  # a verdict from the judge's cache: nothing was spent
        if self.on_spent is not None:
            self.on_spent(usage)
        owed = self._owed.setdefault((utc_day(self.clock()), criterion), [0.0, 0, 0])
        owed[0] += usage.cost_usd or 0.0
        owed[1] += usage.total_tokens
        owed[2] += usage.calls
        try:
            await self._settle()
        except Exception as error:
            logger.warning(
                "tracejudge: the store did not take the judge's spending (%s); it is kept "
                "and counted in this server's budgets until it is written",
                type(error).__name__,
            )

    async def _settle(self) -> None:
        """Write what is owed to the store, one (day, criterion) at a time; what the store
        refuses stays owed (and the error is raised, for the caller to say)."""
        async with self._settling:
            for key in list(self._owed):
                cost, tokens, calls = self._owed.pop(key)
                try:
                    await in_thread(
                        self.store.spend.add, key[0], key[1], cost, int(tokens), int(calls)
                    )
                except BaseException:
                    again = self._owed.setdefault(key, [0.0, 0, 0])  # spent meanwhile: add
                    again[0] += cost
                    again[1] += tokens
                    again[2] += calls
                    raise

    @classmethod
    def from_config(cls, store: Store, config: ServerConfig, *, priced: bool) -> DailyBudget:
        """The budgets `config` sets; the dollar ones only when the judge's model has a
        price (`create_app` refuses a dollar budget without one, or says it is left to
        the token budget)."""
        return cls(
            store,
            cost_per_day=config.max_judge_cost_per_day if priced else None,
            cost_per_criterion_per_day=(
                config.max_judge_cost_per_criterion_per_day if priced else None
            ),
            tokens_per_day=config.max_judge_tokens_per_day,
            tokens_per_criterion_per_day=config.max_judge_tokens_per_criterion_per_day,
        )
