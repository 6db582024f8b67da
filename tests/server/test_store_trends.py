"""The trend rollups on SQLite and PostgreSQL: kept current as traces are scored and
re-scored (moved, never counted twice), per agent x criterion, per service, version and
rule, per hour and day, latency percentiles from the histogram, concurrent writers on one
hour's rows, and trends that outlive retention."""

from __future__ import annotations

import itertools
import threading

import pytest

from tests.server.stored import agent_trace, answer, stored
from tracejudge.server.store import Store, open_store
from tracejudge.server.store.rollups import RULE_TAG
from tracejudge.server.store.trends import TrendQuery

HOUR = 3600
START = 1_700_000_000.0 - 1_700_000_000.0 % 86400  # a day's start, UTC
POLITE = "Reward polite answers"
CORRECT = "Reward correct answers"
_CLOCK = itertools.count(START + 86400 * 3)


def save(
    store: Store,
    trace_id: str,
    start: float,
    scores: dict[str, dict[str, float | None]],
    *,
    version: str = "1.0",
    service: str = "shop",
    cost: float = 0.01,
    rule: str | None = None,
    agents: tuple[str, ...] = ("planner", "writer"),
) -> None:
    trace = agent_trace(list(agents), start=start)
    row, evaluations = stored(
        trace_id, trace, [answer(trace, criterion, s) for criterion, s in scores.items()]
    )
    row.resource = {"service.name": service, "service.version": version}
    for evaluation in evaluations:
        evaluation.created_at = next(_CLOCK)  # a later answer is the latest
        evaluation.judge_cost_usd = cost
        if rule is not None:
            evaluation.tags = {RULE_TAG: rule}
    store.traces.save(row, evaluations)


def one(store: Store, **asked: object) -> list[tuple[int, float | None]]:
    """(bucket, metric) of the one series a query gives, buckets with traces only."""
    metric = str(asked.pop("metric"))
    query = TrendQuery(since=START, until=START + 2 * 86400, **asked)  # type: ignore[arg-type]
    (series,) = store.trends.series(query)
    return [(p.bucket, p.metric(metric)) for p in series.points if p.get("traces")]


@pytest.fixture
def store(db_url: str) -> Store:
    opened = open_store(db_url)
    yield opened  # type: ignore[misc]
    opened.close()


def test_failure_rate_per_agent_and_criterion_per_hour_and_day(store: Store) -> None:
    save(store, "a", START + 60, {POLITE: {"planner": 0.9, "writer": 0.2}})
    save(store, "b", START + 120, {POLITE: {"planner": 0.8, "writer": 0.9}})
    save(store, "c", START + HOUR + 5, {POLITE: {"planner": 0.1, "writer": 0.3}})
    writer = {"agent": "writer", "criterion": POLITE}
    assert one(store, metric="failure_rate", **writer) == [
        (START, 0.5),
        (START + HOUR, 1.0),
    ]
    assert one(store, metric="failure_rate", grain="day", **writer) == [
        (START, pytest.approx(2 / 3))
    ]
    assert one(store, metric="mean_score", grain="day", agent="planner", criterion=POLITE) == [
        (START, pytest.approx((0.9 + 0.8 + 0.1) / 3))
    ]
    # every agent: a trace fails when one of its agents does (a, c of a, b, c)
    assert one(store, metric="failure_rate", grain="day") == [(START, pytest.approx(2 / 3))]
    assert one(store, metric="volume", grain="day") == [(START, 3)]
    assert one(store, metric="judge_cost", grain="day", criterion=POLITE) == [
        (START, pytest.approx(0.03))
    ]


def test_a_rescore_moves_the_counts_instead_of_adding_them(store: Store) -> None:
    save(store, "a", START + 60, {POLITE: {"planner": 0.9, "writer": 0.2}})
    writer = {"agent": "writer", "criterion": POLITE, "grain": "day"}
    assert one(store, metric="failure_rate", **writer) == [(START, 1.0)]
    # scored again (a new answer for the criterion, the same trace): 0 of 1 fails now
    save(store, "a", START + 60, {POLITE: {"planner": 0.9, "writer": 0.9}})
    assert one(store, metric="failure_rate", **writer) == [(START, 0.0)]
    assert one(store, metric="volume", **writer) == [(START, 1)]
    assert one(store, metric="failure_rate", grain="day") == [(START, 0.0)]


def test_split_by_version_and_rule_narrowed(store: Store) -> None:
    save(store, "a", START + 60, {POLITE: {"writer": 0.9}}, version="1.0", rule="all")
    save(store, "b", START + 70, {POLITE: {"writer": 0.1}}, version="1.1", rule="all")
    save(store, "c", START + 80, {POLITE: {"writer": 0.2}}, version="1.1", rule="sampled")
    query = TrendQuery(
        since=START,
        until=START + 86400,
        grain="day",
        agent="writer",
        criterion=POLITE,
        by="version",
    )
    found = {s.group: s.total().metric("failure_rate") for s in store.trends.series(query)}
    assert found == {"1.0": 0.0, "1.1": 1.0}
    by_rule = TrendQuery(
        since=START, until=START + 86400, grain="day", criterion=POLITE, rule="all"
    )
    (series,) = store.trends.series(by_rule)
    assert series.total().metric("volume") == 2
    assert store.trends.dimension_values()["version"] == ["1.0", "1.1"]
    assert store.trends.dimension_values()["rule"] == ["all", "sampled"]


def test_latency_percentiles_come_from_the_histogram(store: Store) -> None:
    # 18 traces of one agent (1 s), 2 of five agents (5 s: one call after another)
    for i in range(18):
        save(store, f"short-{i}", START + i, {POLITE: {"planner": 1.0}}, agents=("planner",))
    for i in range(2):
        five = ("planner", "a", "b", "c", "d")
        save(store, f"long-{i}", START + 30 + i, {POLITE: {"planner": 1.0}}, agents=five)
    (series,) = store.trends.series(TrendQuery(since=START, until=START + HOUR))
    total = series.total()
    p50, p95 = total.metric("latency_p50"), total.metric("latency_p95")
    assert p50 is not None and 0.5 < p50 <= 1.0  # in the (0.5, 1] bucket
    assert p95 is not None and 3.0 < p95 <= 5.0  # the 19th of 20: in the (3, 5] bucket
    assert total.metric("volume") == 20 and total.get("timed") == 20
    assert total.get("duration_sum") == pytest.approx(18 * 1.0 + 2 * 5.0)


def test_concurrent_writers_add_up_on_one_hour(store: Store) -> None:
    def write(worker: int) -> None:
        for i in range(15):
            score = 0.1 if i % 3 == 0 else 0.9
            save(
                store,
                f"w{worker}-{i}",
                START + i,
                {POLITE: {"planner": score, "writer": 0.9}, CORRECT: {"writer": score}},
            )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert one(store, metric="volume", grain="hour") == [(START, 60)]
    assert one(store, metric="failure_rate", agent="planner", criterion=POLITE) == [
        (START, 20 / 60)
    ]
    assert one(store, metric="failure_rate", agent="writer") == [(START, 20 / 60)]


def test_trends_outlive_retention(store: Store) -> None:
    save(store, "a", START + 60, {POLITE: {"writer": 0.2}})
    while any(store.traces.delete_before(float("inf")).values()):
        pass
    assert store.traces.get("a") is None
    assert one(store, metric="failure_rate", agent="writer", criterion=POLITE, grain="day") == [
        (START, 1.0)
    ]


def test_traces_stored_before_the_trends_are_rolled_up_once_when_the_store_opens(
    db_url: str,
) -> None:
    store = open_store(db_url)
    try:
        save(store, "a", START + 60, {POLITE: {"writer": 0.2}})
        save(store, "b", START + 70, {POLITE: {"writer": 0.9}})
        with store.core.transaction() as cursor:  # as an earlier version left them
            for table in ("trend_rollups", "trend_series", "trend_marks"):
                store.core.run(cursor, f"DELETE FROM {table}")
            store.core.run(cursor, "UPDATE traces SET digested = 2")
    finally:
        store.close()
    again = open_store(db_url)
    try:
        writer = {"agent": "writer", "criterion": POLITE, "grain": "day"}
        assert one(again, metric="failure_rate", **writer) == [(START, 0.5)]
        assert one(again, metric="volume", **writer) == [(START, 2)]
    finally:
        again.close()
