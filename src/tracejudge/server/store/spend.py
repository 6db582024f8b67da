"""The spend repository: what the judge spent per day (UTC), in all and per criterion,
the daily budgets' ledger (shared by replicas through the one database)."""

from __future__ import annotations

import hashlib
import time

from tracejudge.server.store._core import SQLCore
from tracejudge.server.store.base import JudgeSpendRow

__all__ = ["Spend"]

#: The key of a day's total in judge_spend.
_ALL_CRITERIA = "*"


def _criterion_key(criterion: str) -> str:
    return hashlib.sha256(criterion.encode("utf-8")).hexdigest()


class Spend:
    """The judge's spending through `core`."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    def add(self, day: str, criterion: str, cost_usd: float, tokens: int, calls: int) -> None:
        """Add one judgement's cost to the day's total and to its criterion's, at once."""
        now = time.time()
        # The day's total first, then the criterion: one lock order for every writer.
        rows = sorted([(_ALL_CRITERIA, ""), (_criterion_key(criterion), criterion)])
        with self.core.transaction() as cursor:
            for key, text in rows:
                self.core.run(
                    cursor,
                    "INSERT INTO judge_spend (day, criterion_key, criterion, cost_usd, tokens, "
                    "calls, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (day, criterion_key) DO UPDATE SET "
                    "cost_usd = judge_spend.cost_usd + excluded.cost_usd, "
                    "tokens = judge_spend.tokens + excluded.tokens, "
                    "calls = judge_spend.calls + excluded.calls, "
                    "updated_at = excluded.updated_at",
                    [day, key, text, float(cost_usd), int(tokens), int(calls), now],
                )

    def of_day(self, day: str, criterion: str) -> tuple[JudgeSpendRow, JudgeSpendRow]:
        """What the judge spent on `day`: in all, and on `criterion`."""
        key = _criterion_key(criterion)
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                "SELECT criterion_key, cost_usd, tokens, calls FROM judge_spend "
                "WHERE day = ? AND criterion_key IN (?, ?)",
                [day, _ALL_CRITERIA, key],
            ).fetchall()
        found = {k: JudgeSpendRow(float(c), int(t), int(n)) for k, c, t, n in rows}
        return found.get(_ALL_CRITERIA, JudgeSpendRow()), found.get(key, JudgeSpendRow())
