"""The trends repository: the rollups (`rollups`) read back as series of points per hour
or day, and the metrics of a point.

A query fixes the agent and the criterion (None: every agent / every criterion, the
rollups' own rows for them), narrows service, version and rule when given (None: all of
them, summed), and may split the series by one dimension (`by`). It reads the series'
keys from `trend_series` (a small table: one row per combination seen), then their rows
in the time range from `trend_rollups` by primary key: what it reads grows with the
buckets shown and the series matched, never with the traces stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.server.store._core import SQLCore
from tracejudge.server.store._trend_rows import ALL, COUNT_INDEX, bucket_of, percentile
from tracejudge.server.store.migrations import TREND_COUNTS

__all__ = [
    "COUNT_INDEX",
    "DIMENSIONS",
    "METRICS",
    "GRAIN_SECONDS",
    "TrendPoint",
    "TrendQuery",
    "TrendSeries",
    "Trends",
    "percentile",
]

#: What a trend can be split by.
DIMENSIONS = ("agent", "criterion", "service", "version", "rule")
#: The metrics of a point, and what each one is (for the API's document and the page).
METRICS = {
    "failure_rate": "failing / scored (a unit fails when an answer is below its bar)",
    "mean_score": "mean of the scored units' worst scores",
    "not_evaluated_rate": "units not evaluated / units",
    "judge_cost": "dollars the judge cost (per criterion: none for one agent's series)",
    "volume": "traces",
    "latency_p50": "median trace duration, seconds (from a fixed-bucket histogram)",
    "latency_p95": "95th percentile trace duration, seconds (same histogram)",
}
#: The count each metric is a rate or a mean of (a monitor's minimum count).
_COUNT_OF = {
    "failure_rate": "scored",
    "mean_score": "scored",
    "not_evaluated_rate": "units",
    "judge_cost": "traces",
    "volume": "traces",
    "latency_p50": "timed",
    "latency_p95": "timed",
}
GRAIN_SECONDS = {"hour": 3600, "day": 86400}
_LATENCY = slice(COUNT_INDEX["lat_0"], COUNT_INDEX["lat_0"] + 16)
_IN_CHUNK = 500


@dataclass(frozen=True)
class TrendQuery:
    """One chart's worth of rollups: `grain` ("hour" or "day") buckets from `since` to
    `until` (Unix seconds, until excluded); see the module's docstring for the rest."""

    since: float
    until: float
    grain: str = "hour"
    agent: str | None = None
    criterion: str | None = None
    service: str | None = None
    version: str | None = None
    rule: str | None = None
    by: str | None = None

    def buckets(self) -> list[int]:
        """The buckets the range covers, oldest first."""
        width = GRAIN_SECONDS[self.grain]
        first = bucket_of(self.since, self.grain)
        return list(range(first, int(self.until) if self.until > first else first + 1, width))


@dataclass
class TrendPoint:
    """One bucket's counts (`TREND_COUNTS` order)."""

    bucket: int
    counts: list[float] = field(default_factory=lambda: [0.0] * len(TREND_COUNTS))
    #: One agent's point: the judge's cost is not split between agents, so it has none.
    one_agent: bool = False

    def get(self, name: str) -> float:
        return self.counts[COUNT_INDEX[name]]

    def add(self, counts: Sequence[float]) -> None:
        for index, value in enumerate(counts):
            self.counts[index] += value

    def count_of(self, metric: str) -> float:
        """What `metric` is a rate or a mean of (traces for volume and cost)."""
        return self.get(_COUNT_OF[metric])

    def metric(self, name: str) -> float | None:
        """The metric `name` (one of `METRICS`); None when there is nothing to measure."""
        if name == "volume":
            return self.get("traces")
        if name == "judge_cost":
            return None if self.one_agent else self.get("judge_cost")
        if name in ("latency_p50", "latency_p95"):
            return percentile(self.counts[_LATENCY], 0.5 if name == "latency_p50" else 0.95)
        below = self.get(_COUNT_OF[name])
        if below <= 0:
            return None
        above = {
            "failure_rate": "failing",
            "mean_score": "score_sum",
            "not_evaluated_rate": "not_evaluated",
        }[name]
        return self.get(above) / below


@dataclass
class TrendSeries:
    """The points of one series (`group`: the value of the `by` dimension, None when not
    split or not set), one per bucket of the range."""

    group: str | None
    points: list[TrendPoint]

    def total(self) -> TrendPoint:
        """Every point summed (a monitor's window)."""
        first = self.points[0] if self.points else TrendPoint(0)
        whole = TrendPoint(first.bucket, one_agent=first.one_agent)
        for point in self.points:
            whole.add(point.counts)
        return whole


class Trends:
    """Trend series through `core` (written by `rollups.Rollups` on every digest)."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    def series(self, query: TrendQuery) -> list[TrendSeries]:
        """The series `query` asks for (one when not split), groups in name order."""
        with self.core.transaction() as cursor:
            groups: dict[str | None, list[str]] = {} if query.by is not None else {None: []}
            for key, group in self._series_keys(cursor, query).items():
                groups.setdefault(group, []).append(key)
            summed = {g: self._summed(cursor, query, sorted(keys)) for g, keys in groups.items()}
        buckets = query.buckets()
        one_agent = query.agent is not None or query.by == "agent"
        found = []
        for group, points in sorted(summed.items(), key=lambda item: item[0] or ""):
            found.append(
                TrendSeries(
                    group,
                    [
                        TrendPoint(b, points[b], one_agent)
                        if b in points
                        else TrendPoint(b, one_agent=one_agent)
                        for b in buckets
                    ],
                )
            )
        return found

    def dimension_values(self) -> dict[str, list[str]]:
        """Every value seen of each dimension (the page's choices)."""
        values: dict[str, set[str]] = {d: set() for d in DIMENSIONS}
        with self.core.transaction() as cursor:
            for row in self.core.run(
                cursor,
                "SELECT DISTINCT agent, criterion, service, version, rule FROM trend_series",
            ).fetchall():
                for dimension, value in zip(DIMENSIONS, row, strict=True):
                    if value != ALL:
                        values[dimension].add(value)
        return {d: sorted(v) for d, v in values.items()}

    def _series_keys(self, cursor: Any, query: TrendQuery) -> dict[str, str | None]:
        """The keys of the series the query reads, with the group each one falls in."""
        if query.by is not None and query.by not in DIMENSIONS:
            raise ValueError(f"by: one of {', '.join(DIMENSIONS)}, not {query.by!r}")
        conditions: list[str] = []
        params: list[Any] = []
        for dimension in ("agent", "criterion"):
            value = getattr(query, dimension)
            if query.by == dimension:
                conditions.append(f"{dimension} <> ?")
                params.append(ALL)
            else:
                conditions.append(f"{dimension} = ?")
                params.append(ALL if value is None else value)
        for dimension in ("service", "version", "rule"):
            value = getattr(query, dimension)
            if value is not None:
                conditions.append(f"{dimension} = ?")
                params.append(value)
        by = query.by or "''"
        rows = self.core.run(
            cursor,
            f"SELECT series_key, {by} FROM trend_series WHERE {' AND '.join(conditions)}",
            params,
        ).fetchall()
        return {
            key: (group if query.by is not None and group != ALL else None) for key, group in rows
        }

    def _summed(self, cursor: Any, query: TrendQuery, keys: list[str]) -> dict[int, list[float]]:
        """The counts of the series `keys`, summed per bucket of the range (by the
        database: a chart reads one row per bucket)."""
        found: dict[int, list[float]] = {}
        sums = ", ".join(f"SUM({c})" for c in TREND_COUNTS)
        for first in range(0, len(keys), _IN_CHUNK):
            chunk = keys[first : first + _IN_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for bucket, *counts in self.core.run(
                cursor,
                f"SELECT bucket, {sums} FROM trend_rollups WHERE grain = ? "
                f"AND series_key IN ({marks}) AND bucket >= ? AND bucket < ? GROUP BY bucket",
                [query.grain, *chunk, bucket_of(query.since, query.grain), int(query.until)],
            ).fetchall():
                known = found.get(int(bucket))
                if known is None:
                    found[int(bucket)] = [float(c) for c in counts]
                else:
                    for index, value in enumerate(counts):
                        known[index] += float(value)
        return found
