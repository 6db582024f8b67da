"""The trend rollups, kept current on write: whenever a trace's digest is written (it is
converted, scored, re-scored), what it added before is taken back and what it adds now is
added, per hour and per day, in the same transaction.

What a trace adds (`_trend_rows.contributions`) is remembered in `trend_marks`, so a
re-score moves its counts rather than counting it twice. The rows are written last in
the transaction (`SQLCore.at_commit`), all the transaction's changes summed and sorted:
every writer takes the rollup rows in one order, and a busy hour's row is updated once
per transaction however many traces it scored. Rollups outlive retention: the trends of
last month stay when its traces are deleted.

The rule of a criterion's answer is its evaluation's `RULE_TAG` tag (the rules that
score traces set it); none: the rule dimension is "".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tracejudge import semconv
from tracejudge.server.store._core import SQLCore
from tracejudge.server.store._trend_rows import (
    SeriesDims,
    TraceFacts,
    bucket_of,
    contributions,
    series_key,
)
from tracejudge.server.store.digest import TraceDigest
from tracejudge.server.store.migrations import TREND_COUNTS

__all__ = [
    "GRAINS",
    "RULE_TAG",
    "TRACE_COLUMNS",
    "TRACE_PARAMS",
    "Rollups",
    "TraceContext",
    "answers_context",
]

#: The evaluation tag that names the rule which ran a criterion on a trace.
RULE_TAG = "tracejudge.rule"
#: The rollups' time grains.
GRAINS = ("hour", "day")

_KEY = ("grain", "series_key", "bucket")
_UPSERT = (
    f"INSERT INTO trend_rollups ({', '.join(_KEY + TREND_COUNTS)}) VALUES "
    f"({', '.join('?' for _ in _KEY + TREND_COUNTS)}) "
    "ON CONFLICT (grain, series_key, bucket) DO UPDATE SET "
    + ", ".join(f"{c} = trend_rollups.{c} + excluded.{c}" for c in TREND_COUNTS)
)
_SERIES = (
    "INSERT INTO trend_series (series_key, service, version, rule, agent, criterion) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (series_key) DO NOTHING"
)
#: (grain, series key, bucket) -> the counts to add.
Deltas = dict[tuple[str, str, int], list[float]]


#: What a digest's read of `traces` adds for the rollups (after its own columns), and its
#: parameters: the service (the column, else the resource attribute), the first-seen time,
#: the service's version, and what the trace added to the rollups so far.
TRACE_COLUMNS = (
    "COALESCE(traces.service, (SELECT r.value FROM trace_resource r WHERE r.trace_id = "
    "traces.trace_id AND r.key = ?)), traces.first_seen, (SELECT r.value FROM "
    "trace_resource r WHERE r.trace_id = traces.trace_id AND r.key = ?), (SELECT m.body "
    "FROM trend_marks m WHERE m.trace_id = traces.trace_id)"
)
TRACE_PARAMS = (semconv.SERVICE_NAME, semconv.SERVICE_VERSION)


@dataclass(frozen=True)
class TraceContext:
    """What the rollups need of a trace beside its digest: its status, service, version
    and first-seen time, the judge's cost and the rule per criterion (`answers_context`),
    and what it added to the rollups so far (`mark`, JSON; None: nothing yet)."""

    status: str
    service: str
    version: str
    first_seen: float
    costs: Mapping[str, float] = field(default_factory=dict)
    rules: Mapping[str, str] = field(default_factory=dict)
    mark: str | None = None


def answers_context(
    answers: Iterable[tuple[str, Mapping[str, str] | str | None, float | None]],
) -> tuple[dict[str, float], dict[str, str]]:
    """(the judge's cost per criterion, the rule per criterion) of a trace's answers,
    oldest first: (criterion, tags (a dict or its JSON), judge cost)."""
    costs: dict[str, float] = {}
    rules: dict[str, str] = {}
    for criterion, tags, cost in answers:
        costs[criterion] = costs.get(criterion, 0.0) + float(cost or 0.0)
        given = json.loads(tags or "{}") if isinstance(tags, str) or tags is None else tags
        rule = given.get(RULE_TAG)
        if rule:
            rules[criterion] = str(rule)
        else:
            rules.pop(criterion, None)
    return costs, rules


class Rollups:
    """Writes the trend rollups through `core` (see the module's docstring)."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core
        self._local = threading.local()

    # ------------------------------------------------------------------ on write

    def record(
        self,
        cursor: Any,
        trace_id: str,
        found: TraceDigest,
        start: float | None,
        end: float | None,
        context: TraceContext,
    ) -> None:
        """Move what trace `trace_id` adds to the rollups to what `found` (its new
        digest; `start`/`end`: its span times; `context`: what else is known of it) says,
        in the caller's transaction. Nothing is read here (the digest's reads bring
        `context`): a bulk store keeps its statements pipelined."""
        starts = [t for t in (start, found.start_time) if t is not None]
        ends = [t for t in (end, found.end_time) if t is not None]
        began = min(starts) if starts else context.first_seen
        facts = TraceFacts(
            start=began,
            duration=max(0.0, max(ends) - began) if ends else None,
            status=context.status,
            verdict=found.verdict,
            service=context.service,
            version=context.version,
            scores=found.scores,
            costs=context.costs,
            rules=context.rules,
        )
        pending = self._pending(cursor)
        if context.mark is not None:
            _add_mark(pending.deltas, json.loads(context.mark), sign=-1.0)
        added = contributions(facts)
        keys = {series_key(d): d for d in added}
        body = {
            "hour": bucket_of(facts.start, "hour"),
            "day": bucket_of(facts.start, "day"),
            # sparse: {series key: {count index: value}} (most counts are zero)
            "rows": {
                key: {str(i): v for i, v in enumerate(added[d]) if v} for key, d in keys.items()
            },
        }
        _add_mark(pending.deltas, body, sign=1.0)
        pending.series.update(keys)
        self.core.run(
            cursor,
            "INSERT INTO trend_marks (trace_id, body) VALUES (?, ?) ON CONFLICT (trace_id) "
            "DO UPDATE SET body = excluded.body",
            [trace_id, json.dumps(body, separators=(",", ":"))],
        )

    def _pending(self, cursor: Any) -> _Pending:
        """This transaction's changes, written before it commits."""
        pending: _Pending | None = getattr(self._local, "pending", None)
        if pending is None or pending.cursor is not cursor:
            pending = self._local.pending = _Pending(cursor)
            self.core.at_commit("trend_rollups", self._flush)
        return pending

    def _flush(self, cursor: Any) -> None:
        pending: _Pending | None = getattr(self._local, "pending", None)
        self._local.pending = None
        if pending is not None and pending.cursor is cursor:
            self.write(cursor, pending.series, pending.deltas)

    # ------------------------------------------------------------------ in bulk

    def write(self, cursor: Any, series: Mapping[str, SeriesDims], deltas: Deltas) -> None:
        """Add `deltas` to the rollups (and their `series`), in key order, in the caller's
        transaction (the bulk loads of the benchmark use it directly)."""
        self.core.run_many(
            cursor,
            _SERIES,
            [
                (key, d.service, d.version, d.rule, d.agent, d.criterion)
                for key, d in sorted(series.items())
            ],
        )
        rows = [
            (grain, key, bucket, *counts)
            for (grain, key, bucket), counts in sorted(deltas.items())
            if any(counts)
        ]
        for first in range(0, len(rows), 5_000):
            self.core.run_many(cursor, _UPSERT, rows[first : first + 5_000])

    def add(self, series: Mapping[str, SeriesDims], deltas: Deltas) -> None:
        """`write` in a transaction of its own."""
        with self.core.transaction() as cursor:
            self.write(cursor, series, deltas)


class _Pending:
    """One transaction's changes to the rollups."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.deltas: Deltas = {}
        self.series: dict[str, SeriesDims] = {}


def _add_mark(deltas: Deltas, mark: Mapping[str, Any], *, sign: float) -> None:
    """Add (sign 1) or take back (sign -1) what a trace's mark says it adds."""
    rows: Mapping[str, Mapping[str, float]] = mark["rows"]
    for grain in GRAINS:
        bucket = int(mark[grain])
        for key, counts in rows.items():
            total = deltas.setdefault((grain, key, bucket), [0.0] * len(TREND_COUNTS))
            for index, value in counts.items():
                total[int(index)] += sign * value
