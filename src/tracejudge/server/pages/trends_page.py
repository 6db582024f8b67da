"""The trends page, `GET /ui/trends`: the same query parameters as `GET /api/v1/trends`,
one chart per metric (failure rate, mean score, not-evaluated rate, judge cost, volume,
latency p50 and p95), a line per series, a table of each series over the range with a
link to its failed traces, and the monitors (`alerts`) with where each stands.

The charts are inline SVG drawn here (no script, no external URL, no chart library);
the page is sent with a Content-Security-Policy that allows only its own style. A bucket
with nothing to measure (no scored unit for a rate) is a gap in the line, not a zero.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse

from tracejudge.server.api.trends import failing_traces_path, iso, parameters, trend_query
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.operation import ERROR_TEXT, HTML, ApiRoute, Operation
from tracejudge.server.pages.plainpage import page_headers, style_policy
from tracejudge.server.pages.ui import LIST_PATH
from tracejudge.server.store.monitors import MonitorRow, MonitorState
from tracejudge.server.store.trends import DIMENSIONS, METRICS, TrendQuery, TrendSeries
from tracejudge.server.work.context import context_of, in_thread

__all__ = ["TRENDS_PAGE", "render_trends", "routes"]

TRENDS_PAGE = LIST_PATH + "/trends"
_e = html.escape
_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1240px;padding:0 16px;color:#222}
h1{font-size:20px;margin:12px 0 4px}h2{font-size:14px;margin:0 0 2px}
form{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:end;margin:8px 0;padding:8px;
background:#f6f6f6;border-radius:4px}form label{display:flex;flex-direction:column;
font-size:12px;color:#555}form input,form select{font:inherit;padding:2px 4px;max-width:16em}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(380px,1fr));gap:14px}
.chart{border:1px solid #e3e3e3;border-radius:4px;padding:6px 8px}.chart p{margin:0;
font-size:12px;color:#666}.legend span{margin-right:12px;font-size:12px}
.legend b{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
.c0{background:#1f77b4}.c1{background:#d62728}.c2{background:#2ca02c}.c3{background:#9467bd}
.c4{background:#ff7f0e}.c5{background:#8c564b}.c6{background:#e377c2}.c7{background:#7f7f7f}
table{border-collapse:collapse;margin:12px 0}td,th{border-bottom:1px solid #ddd;
padding:4px 8px;text-align:right}th{background:#f6f6f6}td:first-child,th:first-child{
text-align:left}.error{color:#c0392b}.none{color:#888}
"""
_HEADERS = page_headers(style_policy(_CSS))
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f")
_TITLES = {
    "failure_rate": "Failure rate",
    "mean_score": "Mean score",
    "not_evaluated_rate": "Not evaluated",
    "judge_cost": "Judge cost ($)",
    "volume": "Traces",
    "latency_p50": "Latency p50 (s)",
    "latency_p95": "Latency p95 (s)",
}
_RATES = frozenset({"failure_rate", "mean_score", "not_evaluated_rate"})
_WIDTH, _HEIGHT = 380, 170
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 8, 8, 22
_MOST_LINES = len(_COLORS)


def _number(value: float | None, metric: str) -> str:
    if value is None:
        return "–"
    if metric in _RATES:
        return f"{value:.0%}" if metric != "mean_score" else f"{value:.2f}"
    if metric == "judge_cost":
        return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
    if metric == "volume":
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _tick(value: float, metric: str) -> str:
    """An axis label: a count may fall between whole numbers (1.25 traces)."""
    return f"{value:,.3g}" if metric == "volume" else _number(value, metric)


def _top(values: Sequence[float], metric: str) -> float:
    """The chart's upper bound: 1 for rates and scores, else a round number above."""
    high = max(values, default=0.0)
    if metric in _RATES or high <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(high))
    return float(next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= high))


def _chart(metric: str, found: list[TrendSeries], asked: TrendQuery) -> str:
    """One metric's SVG: a line per series over the buckets."""
    buckets = [p.bucket for p in found[0].points] if found else asked.buckets()
    lines = [[p.metric(metric) for p in s.points] for s in found[:_MOST_LINES]]
    top = _top([v for line in lines for v in line if v is not None], metric)
    inner_w, inner_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
    span = max(1, len(buckets) - 1)

    def x(index: int) -> float:
        return _LEFT + inner_w * index / span

    def y(value: float) -> float:
        return _TOP + inner_h * (1 - min(value, top) / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="{_e(_TITLES[metric])}" '
        f'class="plot" data-metric="{metric}">'
    ]
    for step in range(5):
        value = top * step / 4
        at = y(value)
        parts.append(
            f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{at:.1f}" y2="{at:.1f}" '
            f'stroke="#e6e6e6"/><text x="{_LEFT - 4}" y="{at + 4:.1f}" font-size="10" '
            f'text-anchor="end" fill="#666">{_e(_tick(value, metric))}</text>'
        )
    for index in sorted({0, len(buckets) // 2, len(buckets) - 1}):
        if 0 <= index < len(buckets):
            label = iso(buckets[index])[5:16].replace("T", " ")
            anchor = "start" if index == 0 else ("end" if index == len(buckets) - 1 else "middle")
            parts.append(
                f'<text x="{x(index):.1f}" y="{_HEIGHT - 6}" font-size="10" '
                f'text-anchor="{anchor}" fill="#666">{_e(label)}</text>'
            )
    for number, line in enumerate(lines):
        color = _COLORS[number]
        segment: list[str] = []
        for index, measured in enumerate([*line, None]):
            if measured is not None:
                segment.append(f"{x(index):.1f},{y(measured):.1f}")
                continue
            if len(segment) > 1:
                parts.append(
                    f'<polyline fill="none" stroke="{color}" stroke-width="1.6" '
                    f'points="{" ".join(segment)}"/>'
                )
            elif segment:
                cx, cy = segment[0].split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.2" fill="{color}"/>')
            segment = []
    parts.append("</svg>")
    return "".join(parts)


def _legend(found: list[TrendSeries]) -> str:
    if len(found) < 2:
        return ""
    items = [
        f'<span><b class="c{i}"></b>{_e(s.group or "(none)")}</span>'
        for i, s in enumerate(found[:_MOST_LINES])
    ]
    more = len(found) - _MOST_LINES
    if more > 0:
        items.append(f'<span class="none">and {more} more (see the table)</span>')
    return f'<p class="legend">{"".join(items)}</p>'


def _select(name: str, label: str, options: Sequence[str], chosen: str | None, every: str) -> str:
    choices = [f'<option value="">{_e(every)}</option>']
    for option in options:
        mark = " selected" if option == chosen else ""
        choices.append(f'<option value="{_e(option)}"{mark}>{_e(option[:80])}</option>')
    return f'<label>{_e(label)}<select name="{name}">{"".join(choices)}</select></label>'


def _form(asked: TrendQuery | None, values: dict[str, list[str]], given: dict[str, str]) -> str:
    def chosen(name: str) -> str | None:
        return getattr(asked, name) if asked is not None else given.get(name)

    fields = [
        _select("grain", "per", ["hour", "day"], chosen("grain") or "hour", "hour"),
        f'<label>since<input name="since" value="{_e(given.get("since", ""))}" '
        'placeholder="2026-12-01"></label>',
        f'<label>until<input name="until" value="{_e(given.get("until", ""))}" '
        'placeholder="now"></label>',
    ]
    everyone = {"agent": "every agent", "criterion": "every criterion"}
    for dimension in DIMENSIONS:
        fields.append(
            _select(
                dimension,
                dimension,
                values.get(dimension, []),
                chosen(dimension),
                everyone.get(dimension, "all"),
            )
        )
    fields.append(_select("by", "one line per", list(DIMENSIONS), chosen("by"), "(one line)"))
    fields.append('<button type="submit">Show</button>')
    return f'<form method="get" action="{TRENDS_PAGE}">{"".join(fields)}</form>'


def _table(asked: TrendQuery, found: list[TrendSeries]) -> str:
    head = "".join(f"<th>{_e(_TITLES[m])}</th>" for m in METRICS)
    rows = []
    for series in found:
        total = series.total()
        cells = "".join(f"<td>{_e(_number(total.metric(m), m))}</td>" for m in METRICS)
        narrowed = asked
        if asked.by in ("agent", "criterion", "service") and series.group is not None:
            narrowed = TrendQuery(**{**vars(asked), asked.by: series.group, "by": None})
        link = failing_traces_path(narrowed, asked.since, asked.until)
        failing = int(total.get("failing"))
        rows.append(
            f"<tr><td>{_e(series.group or 'all')}</td>{cells}"
            f'<td><a href="{_e(link)}">{failing:,} failing</a></td></tr>'
        )
    return (
        f"<table><thead><tr><th>series, {_e(iso(asked.since))} to {_e(iso(asked.until))}</th>"
        f"{head}<th>traces</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _monitors(watching: Sequence[tuple[MonitorRow, MonitorState]]) -> str:
    """The monitors and where each stands (firing first)."""
    if not watching:
        return (
            '<p class="none">No monitor: create one with POST /api/v1/monitors (see the '
            "README's alerts).</p>"
        )
    rows = []
    for monitor, state in sorted(watching, key=lambda pair: pair[1].state != "firing"):
        spec = json.loads(monitor.body)
        where = (
            ", ".join(f"{d} {spec[d]}" for d in DIMENSIONS if spec.get(d) is not None)
            or "every trace"
        )
        metric = spec["metric"]
        sign = ">" if spec["direction"] == "above" else "<"
        status = '<b class="error">firing</b>' if state.state == "firing" else "ok"
        log = f"/api/v1/monitors/{quote(monitor.id, safe='')}/deliveries"
        rows.append(
            f"<tr><td>{_e(monitor.name)}</td><td>{_e(_TITLES.get(metric, metric))}, "
            f"{_e(where[:120])}</td><td>{sign} {_e(_number(spec['threshold'], metric))}, "
            f"{spec['window_hours']} h, at least {spec['min_count']}</td><td>{status}</td>"
            f"<td>{_e(_number(state.value, metric))}</td><td>{state.crossings}</td>"
            f'<td><a href="{_e(log)}">deliveries</a></td></tr>'
        )
    return (
        "<table><thead><tr><th>monitor</th><th>watches</th><th>fires when</th><th>state"
        "</th><th>last value</th><th>fired</th><th>log</th></tr></thead><tbody>"
        f"{''.join(rows)}</tbody></table>"
    )


def render_trends(
    asked: TrendQuery,
    found: list[TrendSeries],
    values: dict[str, list[str]],
    given: dict[str, str],
    watching: Sequence[tuple[MonitorRow, MonitorState]] = (),
) -> str:
    """The page: the form, a chart per metric, the table, the monitors."""
    charts = "".join(
        f'<div class="chart"><h2>{_e(_TITLES[m])}</h2><p>{_e(METRICS[m])}</p>'
        f"{_chart(m, found, asked)}{_legend(found)}</div>"
        for m in METRICS
    )
    empty = (
        ""
        if any(p.get("traces") for s in found for p in s.points)
        else ('<p class="none">No scored trace in this range and selection.</p>')
    )
    return _document(
        f'{_form(asked, values, given)}{empty}<div class="charts">{charts}</div>'
        f"{_table(asked, found)}<h2>Monitors</h2>{_monitors(watching)}"
    )


def _document(body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>tracejudge: trends</title><style>{_CSS}</style></head><body>\n"
        f'<p><a href="{LIST_PATH}">&larr; traces</a></p><h1>tracejudge: trends</h1>\n'
        f"{body}\n</body></html>\n"
    )


async def trends_page(request: Request) -> HTMLResponse:
    store = context_of(request).store
    given = {k: v for k, v in request.query_params.items() if v}
    values = await in_thread(store.trends.dimension_values)
    try:
        asked = trend_query(request.query_params)
    except ApiError as error:
        page = _document(f'{_form(None, values, given)}<p class="error">{_e(error.detail)}</p>')
        return HTMLResponse(page, status_code=error.status, headers=_HEADERS)
    found = await in_thread(store.trends.series, asked)
    watching = await in_thread(store.monitors.all)
    return HTMLResponse(render_trends(asked, found, values, given, watching), headers=_HEADERS)


routes = [
    ApiRoute(
        TRENDS_PAGE,
        trends_page,
        methods=["GET"],
        operation=Operation(
            "Web page: the trends as charts (same parameters as /api/v1/trends)",
            {
                "200": {"description": "The page", "content": HTML},
                "422": {"description": ERROR_TEXT[422], "content": HTML},
            },
            parameters=parameters(),
        ),
    ),
]
