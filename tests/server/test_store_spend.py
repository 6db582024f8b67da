"""The spend repository on SQLite and PostgreSQL: the judge's spending per day and per
criterion, added by concurrent writers, kept apart by day, surviving a reopen."""

from __future__ import annotations

import threading

import pytest

from tracejudge.server.store import open_store


def test_spending_adds_up_per_day_and_criterion_under_concurrent_writers(db_url: str) -> None:
    store = open_store(db_url)
    long_criterion = "Reward " + "thoroughness " * 400  # longer than an index entry may be
    try:

        def spend(criterion: str) -> None:
            for _ in range(25):
                store.spend.add("2025-06-01", criterion, 0.01, 1_000, 1)

        threads = [
            threading.Thread(target=spend, args=(c,))
            for c in ("Reward focus", "Reward focus", long_criterion, "Reward focus")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        day, focus = store.spend.of_day("2025-06-01", "Reward focus")
        assert (day.calls, day.tokens, day.cost_usd) == (100, 100_000, pytest.approx(1.0))
        assert (focus.calls, focus.cost_usd) == (75, pytest.approx(0.75))
        _, long_one = store.spend.of_day("2025-06-01", long_criterion)
        assert long_one.calls == 25
        other_day, _ = store.spend.of_day("2025-06-02", "Reward focus")
        assert other_day.calls == 0 and other_day.cost_usd == 0.0
    finally:
        store.close()
    again = open_store(db_url)  # what was spent survives a restart
    try:
        assert again.spend.of_day("2025-06-01", "Reward focus")[0].calls == 100
    finally:
        again.close()
