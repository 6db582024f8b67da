"""What one trace adds to the trend rollups: pure functions, no database.

A rollup row counts, for one series (service, version, rule, agent, criterion) and one
hour or day, the *units* it saw. A unit is what a failure rate is a rate of:

- agent A on criterion C: each instance of A, its answer on C;
- agent A, every criterion (criterion ""): each instance of A, over all its answers;
- every agent (agent ""), criterion C: the trace, over every agent's answer on C;
- every agent, every criterion: the trace.

A unit is *scored* when one of its answers has a score, *failing* when one is below its
bar, *not evaluated* when none is scored and one says not_evaluated (a trace with no
answer at all, once settled, is not evaluated too); its score is its worst (never a
mean). Each series the trace touches also counts the trace once (`traces`, the volume)
with its duration in a fixed-bucket histogram (`LATENCY_EDGES`: p50 and p95 are read
from it, never from raw values). The judge's cost is the criterion's: it is counted on
the every-agent series only (a judgement is not split between the agents it read).
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tracejudge.server.store.digest import AgentScore
from tracejudge.server.store.migrations import TREND_COUNTS

__all__ = [
    "ALL",
    "COUNT_INDEX",
    "LATENCY_EDGES",
    "SeriesDims",
    "TraceFacts",
    "bucket_of",
    "contributions",
    "percentile",
    "series_key",
]

#: The value of a dimension that means "every agent" / "every criterion" / "none".
ALL = ""
#: The upper edges (seconds) of the latency histogram's buckets; the last bucket is open.
LATENCY_EDGES = (
    0.1,
    0.25,
    0.5,
    1.0,
    2.0,
    3.0,
    5.0,
    8.0,
    13.0,
    20.0,
    30.0,
    60.0,
    120.0,
    300.0,
    900.0,
)
COUNT_INDEX = {name: i for i, name in enumerate(TREND_COUNTS)}
_LATENCY_FIRST = COUNT_INDEX["lat_0"]
_GRAINS = {"hour": 3600, "day": 86400}


@dataclass(frozen=True, order=True)
class SeriesDims:
    """One series' dimensions ("" where it is not narrowed)."""

    service: str
    version: str
    rule: str
    agent: str
    criterion: str


def series_key(dims: SeriesDims) -> str:
    """The series' key (a digest: a criterion may be longer than an index entry may be)."""
    text = "\0".join((dims.service, dims.version, dims.rule, dims.agent, dims.criterion))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bucket_of(moment: float, grain: str) -> int:
    """The start (Unix seconds, UTC) of the hour or day `moment` falls in."""
    width = _GRAINS[grain]
    return int(math.floor(moment / width) * width)


@dataclass(frozen=True)
class TraceFacts:
    """What the rollups read of one trace: its latest answers (`scores`), what the judge
    cost per criterion, which rule ran each criterion (none: ""), and the trace's own
    start, duration, status and verdict."""

    start: float
    duration: float | None
    status: str
    verdict: str
    service: str
    version: str
    scores: Sequence[AgentScore]
    costs: Mapping[str, float]
    rules: Mapping[str, str]


@dataclass
class _Unit:
    answers: int = 0
    scored: bool = False
    failing: bool = False
    not_evaluated: bool = False
    worst: float | None = None

    def add(self, score: AgentScore) -> None:
        self.answers += 1
        if score.state == "scored" and score.score is not None:
            self.scored = True
            self.worst = score.score if self.worst is None else min(self.worst, score.score)
        self.failing = self.failing or score.failing
        self.not_evaluated = self.not_evaluated or score.state == "not_evaluated"


def _latency_bucket(seconds: float) -> int:
    """The bucket of `seconds`: bucket i holds (edge i-1, edge i]."""
    return bisect.bisect_left(LATENCY_EDGES, seconds)


def contributions(facts: TraceFacts) -> dict[SeriesDims, list[float]]:
    """Each series the trace touches, with what it adds there (`TREND_COUNTS` order)."""
    units: dict[tuple[str, str, str], _Unit] = {(ALL, ALL, ""): _Unit()}
    for score in facts.scores:
        for key in (
            (score.agent_name, score.criterion, score.agent_instance_id),
            (score.agent_name, ALL, score.agent_instance_id),
            (ALL, score.criterion, ""),
            (ALL, ALL, ""),
        ):
            units.setdefault(key, _Unit()).add(score)
    settled = facts.status not in ("open", "queued")
    found: dict[SeriesDims, list[float]] = {}
    for (agent, criterion, _), unit in units.items():
        rule = facts.rules.get(criterion, ALL) if criterion else ALL
        dims = SeriesDims(facts.service, facts.version, rule, agent, criterion)
        row = found.get(dims)
        if row is None:
            row = found[dims] = _trace_row(facts, agent, criterion)
        row[COUNT_INDEX["units"]] += 1
        if unit.scored:
            row[COUNT_INDEX["scored"]] += 1
            row[COUNT_INDEX["score_sum"]] += unit.worst or 0.0
        row[COUNT_INDEX["failing"]] += int(unit.failing)
        nothing = unit.answers == 0 and settled
        row[COUNT_INDEX["not_evaluated"]] += int(
            not unit.scored and (unit.not_evaluated or nothing)
        )
    return found


def _trace_row(facts: TraceFacts, agent: str, criterion: str) -> list[float]:
    """A series' row with the trace counted once: volume, latency, the judge's cost."""
    row = [0.0] * len(TREND_COUNTS)
    row[COUNT_INDEX["traces"]] = 1
    if facts.duration is not None:
        row[COUNT_INDEX["timed"]] = 1
        row[COUNT_INDEX["duration_sum"]] = facts.duration
        row[_LATENCY_FIRST + _latency_bucket(facts.duration)] = 1
    if agent == ALL:
        cost = facts.costs.get(criterion, 0.0) if criterion else sum(facts.costs.values())
        row[COUNT_INDEX["judge_cost"]] = cost
    return row


def percentile(histogram: Sequence[float], q: float) -> float | None:
    """The `q` quantile (0..1) of the latencies counted in `histogram` (one count per
    bucket of `LATENCY_EDGES`), interpolated within its bucket; None when it is empty.
    In the last, open bucket: its lower edge."""
    total = sum(histogram)
    if total <= 0:
        return None
    rank = q * total
    seen = 0.0
    for index, count in enumerate(histogram):
        if count <= 0:
            continue
        if seen + count >= rank:
            low = LATENCY_EDGES[index - 1] if index > 0 else 0.0
            if index >= len(LATENCY_EDGES):
                return low
            high = LATENCY_EDGES[index]
            return low + (high - low) * max(0.0, rank - seen) / count
        seen += count
    return LATENCY_EDGES[-1]
