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
from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.server.digest import TraceDigest
from tracejudge.server.store._core import SQLCore
from tracejudge.server.store._trend_rows import (
    SeriesDims,
    TraceFacts,
    bucket_of,
    contributions,
    series_key,
)
from tracejudge.server.store.migrations import TREND_COUNTS

__all__ = ["GRAINS", "RULE_TAG", "Rollups"]

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
    ) -> None:
        """Move what trace `trace_id` adds to the rollups to what `found` (its new
        digest; `start`/`end`: its span times) says, in the caller's transaction."""
        read = self._facts(cursor, trace_id, found, start, end)
        if read is None:
            return
        facts, mark = read
        pending = self._pending(cursor)
        if mark is not None:
            _add_mark(pending.deltas, json.loads(mark), sign=-1.0)
        added = contributions(facts)
        body = {
            "hour": bucket_of(facts.start, "hour"),
            "day": bucket_of(facts.start, "day"),
            # sparse: {series key: {count index: value}} (most counts are zero)
            "rows": {
                series_key(d): {str(i): v for i, v in enumerate(row) if v}
                for d, row in added.items()
            },
        }
        _add_mark(pending.deltas, body, sign=1.0)
        pending.series.update({series_key(d): d for d in added})
        self.core.run(
            cursor,
            "INSERT INTO trend_marks (trace_id, body) VALUES (?, ?) ON CONFLICT (trace_id) "
            "DO UPDATE SET body = excluded.body",
            [trace_id, json.dumps(body, separators=(",", ":"))],
        )

    def _facts(
        self,
        cursor: Any,
        trace_id: str,
        found: TraceDigest,
        start: float | None,
        end: float | None,
    ) -> tuple[TraceFacts, str | None] | None:
        """The trace's facts (its digest with what the rollups read beside it), and what
        it added to the rollups so far (None: nothing yet)."""
        row = self.core.run(
            cursor,
            "SELECT t.status, COALESCE(t.service, (SELECT r.value FROM trace_resource r "
            "WHERE r.trace_id = t.trace_id AND r.key = ?)), t.first_seen, (SELECT r.value "
            "FROM trace_resource r WHERE r.trace_id = t.trace_id AND r.key = ?), "
            "(SELECT m.body FROM trend_marks m WHERE m.trace_id = t.trace_id) FROM traces t "
            "WHERE t.trace_id = ?",
            [semconv.SERVICE_NAME, semconv.SERVICE_VERSION, trace_id],
        ).fetchone()
        if row is None:
            return None
        status, service, first_seen, version, mark = row
        costs: dict[str, float] = {}
        rules: dict[str, str] = {}
        for criterion, tags, cost in self.core.run(
            cursor,
            "SELECT criterion, tags, judge_cost_usd FROM evaluations WHERE trace_id = ? "
            "AND kind = 'trace' ORDER BY created_at, id",
            [trace_id],
        ).fetchall():
            costs[criterion] = costs.get(criterion, 0.0) + float(cost or 0.0)
            rule = json.loads(tags or "{}").get(RULE_TAG)
            if rule:
                rules[criterion] = str(rule)
        starts = [t for t in (start, found.start_time) if t is not None]
        ends = [t for t in (end, found.end_time) if t is not None]
        began = min(starts) if starts else float(first_seen)
        facts = TraceFacts(
            start=began,
            duration=max(0.0, max(ends) - began) if ends else None,
            status=status,
            verdict=found.verdict,
            service=service or "",
            version=version or "",
            scores=found.scores,
            costs=costs,
            rules=rules,
        )
        return facts, mark

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
