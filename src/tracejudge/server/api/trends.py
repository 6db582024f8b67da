"""Trends over time as JSON: `GET /api/v1/trends`.

Per hour or day (`grain`), from `since` to `until` (ISO 8601 or Unix seconds; default:
the last 48 hours by the hour, the last 30 days by the day), for one agent and one
criterion (`agent`, `criterion`; left out: every agent, every criterion), narrowed to a
`service`, `version` (`service.version`) or `rule` when given, split by one of them
(`by`): each series gives, column by column, its buckets and every metric of `METRICS`
(failure rate, mean score, not-evaluated rate, judge cost, volume, latency p50/p95) with
the counts they are of.
The numbers come from rollups kept current as traces are scored (`store.rollups`), so an
answer reads a few rows per bucket whatever the number of traces stored.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse

from tracejudge.server.http.list_query import parse_moment, query_error
from tracejudge.server.http.operation import OBJECT, ApiRoute, Operation, query, text_query
from tracejudge.server.store.trends import (
    COUNT_INDEX,
    DIMENSIONS,
    GRAIN_SECONDS,
    METRICS,
    TrendQuery,
    TrendSeries,
    percentile,
)
from tracejudge.server.work.context import context_of, in_thread

__all__ = [
    "TRENDS_PATH",
    "failing_traces_path",
    "iso",
    "COUNTS",
    "routes",
    "series_json",
    "trend_query",
]

TRENDS_PATH = "/api/v1/trends"
#: How far back a chart reaches by default, and at most, per grain (buckets shown).
_DEFAULT_SPAN = {"hour": 48 * 3600, "day": 30 * 86400}
_MOST_BUCKETS = {"hour": 24 * 31, "day": 400}
_PARAMETERS = ("grain", "since", "until", "by", *DIMENSIONS)


def iso(moment: float) -> str:
    """A moment as ISO 8601, UTC."""
    return (
        _dt.datetime.fromtimestamp(moment, _dt.timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def trend_query(params: QueryParams | Mapping[str, str], *, now: float | None = None) -> TrendQuery:
    """The query `params` ask for (422 naming the parameter when one is wrong)."""
    given = {k: v for k, v in params.items() if v != ""}
    grain = given.get("grain", "hour")
    if grain not in GRAIN_SECONDS:
        raise query_error("grain", f"{grain!r} is not one of hour, day")
    width = GRAIN_SECONDS[grain]
    moment = time.time() if now is None else now
    until = parse_moment("until", given["until"]) if "until" in given else moment
    until = (until // width + (1 if until % width else 0)) * width  # the last bucket, whole
    since = (
        parse_moment("since", given["since"]) if "since" in given else until - _DEFAULT_SPAN[grain]
    )
    if since >= until:
        raise query_error("since", "must be before until")
    if (until - since) / width > _MOST_BUCKETS[grain]:
        most = _MOST_BUCKETS[grain]
        raise query_error(
            "since",
            f"at most {most} {grain}s in one chart; narrow since..until"
            + (" or ask grain=day" if grain == "hour" else ""),
        )
    by = given.get("by")
    if by is not None and by not in DIMENSIONS:
        raise query_error("by", f"{by!r} is not one of {', '.join(DIMENSIONS)}")
    return TrendQuery(
        since=since,
        until=until,
        grain=grain,
        by=by,
        **{d: given.get(d) for d in DIMENSIONS if d != by},
    )


def failing_traces_path(asked: TrendQuery, since: float, until: float) -> str:
    """The list page of the failed traces a trend counts (its agent, criterion and
    service, from `since` to `until`)."""
    params = [("verdict", "failed"), ("since", iso(since)), ("until", iso(until))]
    params += [(d, v) for d in ("agent", "criterion", "service") if (v := getattr(asked, d))]
    return "/ui?" + urlencode(params)


#: The counts each series carries beside its metrics.
COUNTS = ("traces", "units", "scored", "failing", "not_evaluated", "timed")


_AT = COUNT_INDEX
_LATENCY = slice(_AT["lat_0"], _AT["lat_0"] + 16)


def _ratio(above: float, below: float) -> float | None:
    return round(above / below, 6) if below > 0 else None


def series_json(series: TrendSeries) -> dict[str, Any]:
    """One series, column by column: the buckets' starts (Unix seconds), each metric and
    each count, one value per bucket (a metric is null where there is nothing to
    measure). The same numbers as `TrendPoint.metric`, computed in one pass (a chart of a
    month by the hour, split six ways, is 4,000 points)."""
    metrics: dict[str, list[float | None]] = {m: [] for m in METRICS}
    counts: dict[str, list[int]] = {c: [] for c in COUNTS}
    failure, mean, unjudged = (
        metrics["failure_rate"],
        metrics["mean_score"],
        metrics["not_evaluated_rate"],
    )
    cost, volume = metrics["judge_cost"], metrics["volume"]
    p50, p95 = metrics["latency_p50"], metrics["latency_p95"]
    columns = [(counts[c], _AT[c]) for c in COUNTS]
    one_agent = bool(series.points) and series.points[0].one_agent
    for point in series.points:
        c = point.counts
        scored = c[_AT["scored"]]
        failure.append(_ratio(c[_AT["failing"]], scored))
        mean.append(_ratio(c[_AT["score_sum"]], scored))
        unjudged.append(_ratio(c[_AT["not_evaluated"]], c[_AT["units"]]))
        cost.append(None if one_agent else round(c[_AT["judge_cost"]], 6))
        volume.append(c[_AT["traces"]])
        if c[_AT["timed"]] > 0:
            histogram = c[_LATENCY]
            p50.append(percentile(histogram, 0.5))
            p95.append(percentile(histogram, 0.95))
        else:
            p50.append(None)
            p95.append(None)
        for numbers, index in columns:
            numbers.append(int(c[index] + 0.5))
    return {
        "group": series.group,
        "buckets": [p.bucket for p in series.points],
        "metrics": metrics,
        "counts": counts,
    }


def answer_json(asked: TrendQuery, found: list[TrendSeries]) -> dict[str, Any]:
    return {
        "grain": asked.grain,
        "since": iso(asked.since),
        "until": iso(asked.until),
        "by": asked.by,
        "filters": {d: getattr(asked, d) for d in DIMENSIONS if d != asked.by},
        "metric_definitions": METRICS,
        "series": [series_json(s) for s in found],
    }


async def get_trends(request: Request) -> JSONResponse:
    unknown = sorted(set(request.query_params) - set(_PARAMETERS))
    if unknown:
        raise query_error(unknown[0], f"not a parameter here; give {', '.join(_PARAMETERS)}")
    asked = trend_query(request.query_params)
    found = await in_thread(context_of(request).store.trends.series, asked)
    return JSONResponse(answer_json(asked, found))


def parameters() -> list[dict[str, Any]]:
    when = "ISO 8601 (UTC unless it says) or Unix seconds"
    return [
        query("grain", {"type": "string", "enum": list(GRAIN_SECONDS)}, "bucket size (hour)"),
        text_query("since", f"from ({when}); default 48 hours (30 days by the day) back"),
        text_query("until", f"to, excluded ({when}); default now"),
        query("by", {"type": "string", "enum": list(DIMENSIONS)}, "one series per value of"),
        text_query("agent", "one agent's name (left out: every agent)"),
        text_query("criterion", "one criterion (left out: every criterion)"),
        text_query("service", "one service.name"),
        text_query("version", "one service.version"),
        text_query("rule", "one rule's name"),
    ]


routes = [
    ApiRoute(
        TRENDS_PATH,
        get_trends,
        methods=["GET"],
        operation=Operation(
            "Failure rate, mean score, not-evaluated rate, judge cost, volume and latency "
            "p50/p95 per hour or day, per agent and criterion, service, version and rule",
            {"200": {"description": "The series and their points", "content": OBJECT}},
            errors=(422,),
            parameters=parameters(),
        ),
    ),
]
