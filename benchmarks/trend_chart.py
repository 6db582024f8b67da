"""Trend charts over 1,000,000 stored traces: how long a chart takes to answer, on SQLite
and PostgreSQL (issue #33: under 300 ms), and what keeping the rollups current costs a
write.

1. **The chart at 1,000,000 traces.** The rollups of `--traces` traces are built in bulk
   through the store (`store.rollups.add`): each hour of `--days` days gets its share of
   the traces, split between services, versions (a deploy half-way) and trace shapes
   (which agent failed which criterion, how long it took); what each shape adds is
   `_trend_rows.contributions`, the function the server runs on every digest, summed over
   the traces of that shape in that hour (building the rows trace by trace would take an
   hour, and gives the same rows). Then `python -m tracejudge.server` is started on the
   database and each chart is asked `--repeat` times over HTTP (`GET /api/v1/trends`),
   median and p95, with `GET /health` as the floor; and the same query through the store
   alone (`store.trends.series`).
2. **The baseline: the same chart from the per-trace rows.** `--raw-traces` traces are
   stored through the store as the server stores them (`store.traces.save_many`: digest,
   agent scores and rollups), and the chart "writer's failure rate on final_answer per
   hour, split by version" is computed once from `agent_scores` joined with `traces` (what
   a server without rollups would do) and once from the rollups.
3. **The write.** The same `save_many` with the rollups' `record` made a no-op: the
   ratio is what the rollups add to storing a scored trace.

    python benchmarks/trend_chart.py [--traces 1000000] [--days 60] [--repeat 20]
                                     [--raw-traces 5000] [--db sqlite,postgres]

PostgreSQL is skipped, saying why, when its binaries or psycopg are missing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.server.harness import ServerProcess  # noqa: E402
from tests.server.postgres import postgres_cluster  # noqa: E402
from tests.server.stored import agent_trace, answer, stored  # noqa: E402

from tracejudge.server.store import open_store  # noqa: E402
from tracejudge.server.store._trend_rows import (  # noqa: E402
    SeriesDims,
    TraceFacts,
    bucket_of,
    contributions,
    series_key,
)
from tracejudge.server.store.digest import AgentScore  # noqa: E402
from tracejudge.server.store.rollups import Rollups  # noqa: E402
from tracejudge.server.store.trends import TrendQuery  # noqa: E402

AGENTS = ("planner", "researcher", "writer", "checker")
CRITERIA = ("tool_arguments", "grounded_numbers", "final_answer", "Reward helpful answers")
JUDGED = CRITERIA[-1]
SERVICES = ("trip-planner", "support-bot", "search")
HOUR = 3600
DAY = 86400


def _shapes(version_new: bool) -> list[tuple[float, TraceFacts]]:
    """(share of traces, facts) for the trace shapes of one version: which agent fails
    what, how long the trace takes, whether the judge ran (sampled) and what it cost."""
    shapes = []
    writer_fails = 0.25 if version_new else 0.08
    for fails in (False, True):
        for slow in (False, True):
            for judged in (False, True):
                share = (
                    (writer_fails if fails else 1 - writer_fails)
                    * (0.1 if slow else 0.9)
                    * (0.1 if judged else 0.9)
                )
                scores = []
                for agent in AGENTS:
                    for criterion in CRITERIA:
                        if criterion == JUDGED and not judged:
                            continue
                        bad = fails and agent == "writer" and criterion == "final_answer"
                        score = 0.2 if bad else 0.9
                        scores.append(
                            AgentScore(criterion, f"{agent}-0", agent, score, 0.5, bad, "scored")
                        )
                facts = TraceFacts(
                    start=0.0,
                    duration=14.0 if slow else 2.4,
                    status="scored",
                    verdict="failed" if fails else "passed",
                    service="",
                    version="",
                    scores=scores,
                    costs={JUDGED: 0.004} if judged else {},
                    rules={JUDGED: "sampled-10"} if judged else {},
                )
                shapes.append((share, facts))
    return shapes


def _seed_rollups(db: str, traces: int, days: int, end: float) -> tuple[float, int]:
    """The rollups of `traces` traces over `days` days before `end`; (seconds, rows)."""
    began = time.perf_counter()
    store = open_store(db)
    random.seed(33)
    hours = days * 24
    first_hour = bucket_of(end, "hour") - hours * HOUR
    per_hour = traces // hours
    left = traces - per_hour * hours
    shapes = {False: _shapes(False), True: _shapes(True)}
    # each shape's rows once per (service, version): the counts scale with the traces
    templates: dict[tuple[str, str, bool], list[tuple[float, dict[str, list[float]]]]] = {}
    series: dict[str, SeriesDims] = {}
    for service in SERVICES:
        for new in (False, True):
            version = f"{service[:3]}-{'2.0' if new else '1.9'}"
            rows = []
            for share, facts in shapes[new]:
                placed = TraceFacts(**{**vars(facts), "service": service, "version": version})
                added = contributions(placed)
                series.update({series_key(d): d for d in added})
                rows.append((share, {series_key(d): row for d, row in added.items()}))
            templates[(service, version, new)] = rows
    written = 0
    deltas: dict[tuple[str, str, int], list[float]] = {}

    def flush() -> None:
        nonlocal written, deltas
        store.rollups.add(series, deltas)
        written += len(deltas)
        deltas = {}

    for index in range(hours):
        hour = first_hour + index * HOUR
        count = per_hour + (1 if index < left else 0)
        new = index >= hours // 2  # the deploy, half-way
        for service_index, service in enumerate(SERVICES):
            share_of_service = (0.5, 0.3, 0.2)[service_index]
            version = f"{service[:3]}-{'2.0' if new else '1.9'}"
            for share, rows in templates[(service, version, new)]:
                n = round(count * share_of_service * share)
                if n == 0:
                    continue
                for grain, bucket in (("hour", hour), ("day", bucket_of(hour, "day"))):
                    for key, row in rows.items():
                        total = deltas.setdefault((grain, key, bucket), [0.0] * len(row))
                        for i, value in enumerate(row):
                            total[i] += value * n
        if len(deltas) > 20_000:
            flush()
    flush()
    store.close()
    return time.perf_counter() - began, written


def _charts(end: float) -> list[tuple[str, dict[str, str]]]:
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end))
    return [
        (
            "writer x final_answer, failure rate per hour, 7 days, by version",
            {
                "agent": "writer",
                "criterion": "final_answer",
                "by": "version",
                "since": time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(end - 7 * DAY)),
                "until": iso,
            },
        ),
        (
            "every trace per hour, 30 days (720 points)",
            {
                "since": time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(end - 30 * DAY)),
                "until": iso,
            },
        ),
        (
            "every trace per day, 60 days, by service",
            {
                "grain": "day",
                "by": "service",
                "since": time.strftime("%Y-%m-%d", time.gmtime(end - 60 * DAY)),
                "until": iso,
            },
        ),
        (
            "final_answer per day, 60 days, by agent",
            {
                "grain": "day",
                "by": "agent",
                "criterion": "final_answer",
                "since": time.strftime("%Y-%m-%d", time.gmtime(end - 60 * DAY)),
                "until": iso,
            },
        ),
        (
            "judged criterion per hour, 14 days, rule sampled-10, by version",
            {
                "criterion": JUDGED,
                "rule": "sampled-10",
                "by": "version",
                "since": time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(end - 14 * DAY)),
                "until": iso,
            },
        ),
    ]


def _timed(call: object, repeat: int) -> tuple[float, float]:
    assert callable(call)
    call()
    call()
    seconds = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        seconds.append((time.perf_counter() - began) * 1000)
    seconds.sort()
    return statistics.median(seconds), seconds[min(len(seconds) - 1, int(len(seconds) * 0.95))]


def _settle(db: str) -> None:
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db, autocommit=True) as connection:
            connection.execute("VACUUM ANALYZE")


def chart_at_scale(db: str, label: str, args: argparse.Namespace) -> None:
    end = time.time()
    seconds, rows = _seed_rollups(db, args.traces, args.days, end)
    print(f"{label}: rollups of {args.traces:,} traces ({rows:,} rows) in {seconds:.0f} s")
    _settle(db)
    store = open_store(db)
    for name, params in _charts(end):
        from tracejudge.server.api.trends import trend_query

        query = trend_query(params, now=end)
        found = store.trends.series(query)
        assert found and any(p.get("traces") for s in found for p in s.points), name
        median, p95 = _timed(lambda q=query: store.trends.series(q), args.repeat)
        print(f"{label} store  {name}: median {median:.1f} ms, p95 {p95:.1f} ms", flush=True)
    store.close()
    server = ServerProcess(
        db, api_key=None, args=["--rate-limit", "0", "--log-level", "error"]
    ).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            floor, _ = _timed(lambda: http.get("/health"), args.repeat)
            print(f"{label} HTTP   GET /health (floor): median {floor:.1f} ms", flush=True)
            for name, params in _charts(end):

                def ask(p: dict[str, str] = params) -> None:
                    answer = http.get("/api/v1/trends", params=p)
                    assert answer.status_code == 200, answer.text[:300]

                median, p95 = _timed(ask, args.repeat)
                verdict = "within" if p95 < 300 else "OVER"
                print(
                    f"{label} HTTP   {name}: median {median:.1f} ms, p95 {p95:.1f} ms "
                    f"({verdict} 300 ms at p95)",
                    flush=True,
                )
    finally:
        server.stop()


def _raw_items(count: int, end: float) -> list[tuple[object, object]]:
    items = []
    random.seed(7)
    start = end - 7 * DAY
    for i in range(count):
        moment = start + (7 * DAY) * i / count
        new = i >= count // 2
        trace = agent_trace(list(AGENTS), start=moment)
        failing = random.random() < (0.25 if new else 0.08)
        answers = [
            answer(
                trace,
                criterion,
                {
                    a: (0.2 if failing and a == "writer" and criterion == "final_answer" else 0.9)
                    for a in AGENTS
                },
            )
            for criterion in CRITERIA[:3]
        ]
        row, evaluations = stored(uuid.uuid4().hex, trace, answers)
        row.resource = {"service.name": "trip-planner", "service.version": "2.0" if new else "1.9"}
        items.append((row, evaluations))
    return items


_RAW_CHART = (
    "SELECT r.value, CAST(t.start_time / 3600 AS BIGINT), "
    "SUM(CASE WHEN a.failing = 1 THEN 1 ELSE 0 END), COUNT(*) "
    "FROM agent_scores a JOIN traces t ON t.trace_id = a.trace_id "
    "JOIN trace_resource r ON r.trace_id = a.trace_id AND r.key = 'service.version' "
    "WHERE a.agent_name = ? AND a.criterion = ? AND a.state = 'scored' "
    "AND t.start_time >= ? AND t.start_time < ? GROUP BY 1, 2"
)


def baseline_and_write(
    db_rollups: str, db_plain: str, label: str, args: argparse.Namespace
) -> None:
    end = time.time()
    items = _raw_items(args.raw_traces, end)
    store = open_store(db_rollups)
    began = time.perf_counter()
    for first in range(0, len(items), 500):
        store.traces.save_many(items[first : first + 500])  # type: ignore[arg-type]
    with_rollups = time.perf_counter() - began
    plain = open_store(db_plain)
    original = Rollups.record
    Rollups.record = lambda *a, **k: None  # type: ignore[method-assign]
    try:
        began = time.perf_counter()
        for first in range(0, len(items), 500):
            plain.traces.save_many(items[first : first + 500])  # type: ignore[arg-type]
        without = time.perf_counter() - began
    finally:
        Rollups.record = original  # type: ignore[method-assign]
    plain.close()
    print(
        f"{label} write: {args.raw_traces:,} scored traces stored in {with_rollups:.1f} s with "
        f"rollups, {without:.1f} s without ({with_rollups / without:.2f}x)"
    )
    _settle(db_rollups)
    query = TrendQuery(
        since=end - 7 * DAY,
        until=end + HOUR,
        agent="writer",
        criterion="final_answer",
        by="version",
    )
    since, until = end - 7 * DAY, end + HOUR

    def raw() -> None:
        with store.core.transaction() as cursor:
            store.core.run(cursor, _RAW_CHART, ["writer", "final_answer", since, until]).fetchall()

    raw_median, raw_p95 = _timed(raw, args.repeat)
    rolled, rolled_p95 = _timed(lambda: store.trends.series(query), args.repeat)
    print(
        f"{label} baseline at {args.raw_traces:,} traces, writer x final_answer per hour, 7 days, "
        f"by version: from agent_scores median {raw_median:.1f} ms (p95 {raw_p95:.1f}); from the "
        f"rollups {rolled:.1f} ms (p95 {rolled_p95:.1f}): {raw_median / rolled:.1f}x faster"
    )
    store.close()


@contextlib.contextmanager
def databases(kind: str, folder: str) -> Iterator[list[str] | None]:
    if kind == "sqlite":
        yield [os.path.join(folder, f"trends-{n}.db") for n in range(3)]
        return
    import pytest

    try:
        with postgres_cluster() as cluster:
            yield [cluster.database() for _ in range(3)]
    except pytest.skip.Exception as why:
        print(f"postgres: skipped ({why})")
        yield None


def _reference_ms() -> float:
    """A fixed CPU loop's time: how loaded the machine was during the run (the figures of
    a shared machine move with it)."""
    began = time.perf_counter()
    sum(range(10**7))
    return (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--raw-traces", type=int, default=5_000)
    parser.add_argument("--db", default="sqlite,postgres")
    args = parser.parse_args()
    print(
        f"machine: {_reference_ms():.0f} ms for the reference loop (about 150 ms on an idle core)"
    )
    for kind in args.db.split(","):
        with tempfile.TemporaryDirectory() as folder, databases(kind, folder) as dbs:
            if dbs is None:
                continue
            chart_at_scale(dbs[0], kind, args)
            if args.raw_traces:
                baseline_and_write(dbs[1], dbs[2], kind, args)
            print(f"machine after {kind}: {_reference_ms():.0f} ms for the reference loop")


if __name__ == "__main__":
    main()
