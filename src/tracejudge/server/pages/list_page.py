"""The list of stored traces, `GET /ui` (and `GET /`, which leads there).

Server-rendered HTML and CSS, no script, no external URL, every text escaped; sent with a
Content-Security-Policy that allows only its own style. Above the list, a filter form with
every filter of `GET /api/v1/traces` (the same query parameters: `list_query`), a search
box, the total, and the batch overview of the filtered traces (per agent name and
criterion: scored, failing, mean, median, min, max). Each row: start time, duration, root
agent, agents, model calls, tokens, cost, the worst agent score, the failing agents,
status, service and tags (shown as `key:value`, each a link that filters by it); a trace
with any failing agent is red. Every column header sorts; pages go forward and back.
"""

from __future__ import annotations

import html
import time
from collections import Counter
from collections.abc import Mapping
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from tracejudge.server.api.traces import read_overview, read_page
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.list_query import (
    DEFAULT_LIMIT,
    PARAMETERS,
    ListQuery,
    format_tag,
    list_query,
)
from tracejudge.server.http.operation import ERROR_TEXT, HTML, ApiRoute, Operation, list_parameters
from tracejudge.server.pages.plainpage import page_headers, style_policy
from tracejudge.server.pages.snippets import Snippet, find_snippets
from tracejudge.server.pages.ui import LIST_PATH, trace_path
from tracejudge.server.store import (
    TRACE_STATUSES,
    VERDICTS,
    Overview,
    TraceFilter,
    TraceOrder,
    TracePage,
    TraceRow,
)
from tracejudge.server.work.context import context_of, in_thread

__all__ = ["routes", "list_page", "render_list"]

_e = html.escape

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1500px;padding:0 16px;color:#222}
h1{font-size:20px;margin:12px 0 4px}h2{font-size:15px;margin:0}
form.filters{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:end;margin:8px 0;
padding:8px;background:#f6f6f6;border-radius:4px}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#555}
form.filters input,form.filters select{font:inherit;padding:2px 4px;min-width:7em}
form.filters .search{flex:1 1 100%}form.filters .search input{width:100%;box-sizing:border-box}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#f6f6f6;white-space:nowrap}
th a{color:inherit;text-decoration:none}th a:hover{text-decoration:underline}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{background:#fdecea}tr.failed td:first-child{box-shadow:inset 4px 0 #c0392b}
.good{color:#1e8449}.bad{color:#c0392b;font-weight:600}.na{color:#888}.warn{color:#b9770e}
.tag{display:inline-block;background:#eef;border-radius:3px;padding:0 4px;margin:1px;
font-size:12px;color:#223;text-decoration:none}.error{color:#c0392b;font-size:12px}
.mono{font-family:monospace;font-size:12px;color:#666}.count{margin:8px 0;color:#444}
.pages a,.pages span{margin-right:14px}details.overview{margin:8px 0}
details.overview summary{cursor:pointer;font-weight:600}
details.overview .scroll{max-height:18em;overflow-y:auto;display:inline-block;margin-top:4px}
details.overview table{width:auto}.badge{font-weight:600}td.tags{max-width:16em}
tr.snippet td{font-size:12px;color:#444;padding-top:0;border-top:0}tr.snippet .where{color:#666}
tr.snippet mark{background:#fff59d}
"""
_HEADERS = page_headers(style_policy(_CSS))
#: The columns: (header, sort key or None, numeric).
_COLUMNS = (
    ("start (UTC)", "start_time", False),
    ("duration", "duration", True),
    ("root agent", "root_agent", False),
    ("agents", "agents", False),
    ("model calls", "model_calls", True),
    ("tokens", "tokens", True),
    ("cost", "cost", True),
    ("worst agent score", "worst_score", True),
    ("failing", "failing", True),
    ("status", "status", False),
    ("service", None, False),
    ("tags", None, False),
)
#: Sorting by these starts ascending (A to Z; worst status first); the rest descending.
_ASCENDING_FIRST = frozenset({"root_agent", "status"})
_DESCRIPTIONS = {name: text for name, _, text in PARAMETERS}
_SHOWN_CRITERION = 80
#: The server's other pages, above the list.
_NAV = f' <a href="{LIST_PATH}/rules">evaluation rules &rarr;</a>'


def _href(params: list[tuple[str, str]]) -> str:
    return LIST_PATH + ("?" + urlencode(params) if params else "")


def _when(moment: float | None) -> str:
    if moment is None:
        return "unknown"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(moment))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _short(trace_id: str) -> str:
    return trace_id if len(trace_id) <= 16 else trace_id[:16] + "…"


def _cost(dollars: float | None) -> str:
    if dollars is None:
        return "–"
    return f"${dollars:.4f}" if dollars < 1 else f"${dollars:,.2f}"


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _agents(names: list[str]) -> str:
    counts = Counter(names)
    shown = [f"{name} ×{n}" if n > 1 else name for name, n in counts.items()]
    if len(shown) > 5:
        shown = [*shown[:4], f"+{len(shown) - 4} more"]
    return ", ".join(shown)


def _status(row: TraceRow) -> str:
    verdict = {
        "failed": '<span class="badge bad">failed</span>',
        "passed": '<span class="badge good">passed</span>',
        "unscored": '<span class="badge na">unscored</span>',
        "pending": '<span class="na">not scored yet</span>',
    }[row.verdict if row.verdict in VERDICTS else "pending"]
    parts = [verdict]
    if row.status != "scored":
        parts.append(f'<div class="na">{_e(row.status)}</div>')
    if row.error:
        parts.append(f'<div class="error">{_e(row.error)}</div>')
    return "".join(parts)


def _tags(query: ListQuery, row: TraceRow) -> str:
    links = []
    for key, value in sorted(row.tags.items()):
        text = format_tag(key, value)
        href = _href(query.link_params(tag=text))
        links.append(f'<a class="tag" href="{_e(href)}">{_e(text)}</a>')
    return "".join(links)


def _row(query: ListQuery, row: TraceRow) -> str:
    failed = row.verdict == "failed"
    worst_class = "bad" if failed else ("good" if row.verdict == "passed" else "na")
    worst = f'<td class="n {worst_class}"'
    if row.worst_agent:
        title = f"{row.worst_agent} on {row.worst_criterion}"
        worst += f' title="{_e(title)}">{_score(row.worst_score)} {_e(row.worst_agent)}</td>'
    else:
        worst += f">{_score(row.worst_score)}</td>"
    if row.verdict == "pending":
        failing = '<td class="n na">–</td>'
    else:
        pairs = f"{row.failing_pairs} pair{'' if row.failing_pairs == 1 else 's'}"
        text = f"{row.failing_agents} of {row.agent_count}"
        kind = "bad" if row.failing_agents else "good"
        failing = f'<td class="n {kind}" title="{_e(pairs)}">{_e(text)}</td>'
    tokens = f"in {row.input_tokens:,} / out {row.output_tokens:,}"
    models = ", ".join(row.models) or "no model recorded"
    return (
        f'<tr class="{"failed" if failed else "ok"}">'
        f'<td><a href="{_e(trace_path(row.trace_id))}">{_e(_when(row.start_time))}</a>'
        f'<div class="mono" title="{_e(row.trace_id)}">{_e(_short(row.trace_id))}</div></td>'
        f'<td class="n">{_e(_duration(row.duration))}</td>'
        f"<td>{_e(row.root_agent or '')}</td><td>{_e(_agents(row.agents))}</td>"
        f'<td class="n">{row.model_calls}</td>'
        f'<td class="n" title="{_e(tokens)}">{row.tokens:,}</td>'
        f'<td class="n" title="{_e(models)}">{_e(_cost(row.cost))}</td>'
        f"{worst}{failing}<td>{_status(row)}</td>"
        f'<td>{_e(row.service or "")}</td><td class="tags">{_tags(query, row)}</td></tr>'
    )


def _snippet_row(found: Snippet | None) -> str:
    """The row under a trace that shows what the search matched in it ("" for none)."""
    if found is None:
        return ""
    return f'<tr class="snippet"><td colspan="{len(_COLUMNS)}">{found.html()}</td></tr>'


def _header(query: ListQuery, name: str, key: str | None, numeric: bool) -> str:
    cls = ' class="n"' if numeric else ""
    if key is None:
        return f"<th{cls}>{_e(name)}</th>"
    current = query.order.sort == key
    if current:
        descending = not query.order.descending
        arrow = " ▼" if query.order.descending else " ▲"
    else:
        descending = key not in _ASCENDING_FIRST
        arrow = ""
    href = _href(query.link_params(sort=key, order="desc" if descending else "asc"))
    label = f"sort by {name}, {'descending' if descending else 'ascending'}"
    state = "none"
    if current:
        state = "descending" if query.order.descending else "ascending"
    return (
        f'<th{cls} aria-sort="{state}">'
        f'<a href="{_e(href)}" title="{_e(label)}">{_e(name)}{arrow}</a></th>'
    )


_SCORE_INPUT = 'type="number" step="any" min="0" max="1"'


def _field(query: ListQuery, name: str, label: str, hint: str, kind: str = 'type="text"') -> str:
    value = dict(query.given).get(name, "")
    return (
        f'<label title="{_e(_DESCRIPTIONS[name])}">{_e(label)}<input {kind} '
        f'name="{name}" value="{_e(value)}" placeholder="{_e(hint)}"></label>'
    )


def _select(query: ListQuery, name: str, label: str, options: tuple[str, ...]) -> str:
    chosen = dict(query.given).get(name, "")
    items = ['<option value="">any</option>'] + [
        f'<option value="{_e(o)}"{" selected" if o == chosen else ""}>{_e(o)}</option>'
        for o in options
    ]
    return (
        f'<label title="{_e(_DESCRIPTIONS[name])}">{_e(label)}<select name="{name}">'
        f"{''.join(items)}</select></label>"
    )


def _form(query: ListQuery) -> str:
    given = dict(query.given)
    tags = [v for k, v in query.given if k == "tag"]
    kept = "".join(
        f'<input type="hidden" name="{name}" value="{_e(given[name])}">'
        for name in ("sort", "order", "limit")
        if name in given
    )
    extra_tags = "".join(f'<input type="hidden" name="tag" value="{_e(t)}">' for t in tags[1:])
    tag_value = tags[0] if tags else ""
    return (
        f'<form class="filters" method="get" action="{LIST_PATH}">'
        '<label class="search" title="'
        + _e(_DESCRIPTIONS["q"])
        + '">search<input type="search" name="q" value="'
        + _e(given.get("q", ""))
        + '" placeholder="words in messages, tool arguments and results, explanations; '
        '&quot;a phrase&quot;; prefix*"></label>'
        + _field(query, "agent", "agent", "writer (any case, a prefix)")
        + _field(query, "criterion", "criterion", "final_answer")
        + _field(query, "score_below", "score below", "0.5", _SCORE_INPUT)
        + _field(query, "score_above", "score at or above", "0.8", _SCORE_INPUT)
        + _select(query, "verdict", "verdict", VERDICTS)
        + _select(query, "status", "status", TRACE_STATUSES)
        + _field(query, "since", "started since", "2026-12-01T09:00Z")
        + _field(query, "until", "started before", "2026-12-02")
        + (
            f'<label title="{_e(_DESCRIPTIONS["tag"])}">tag<input name="tag" '
            f'value="{_e(tag_value)}" placeholder="team:search"></label>'
        )
        + _field(query, "service", "service", "checkout")
        + _field(query, "session", "session", "session id")
        + _field(query, "user", "user", "user id")
        + kept
        + extra_tags
        + f'<button type="submit">filter</button> <a href="{LIST_PATH}">clear</a></form>'
    )


def _overview(found: Overview, total: int) -> str:
    if not found.rows:
        return ""
    covered = (
        f"the {found.traces:,} latest of {total:,} traces"
        if found.traces < total
        else f"{found.traces:,} trace{'' if found.traces == 1 else 's'}"
    )
    rows = []
    for r in found.rows:
        criterion = r.criterion
        shown = criterion if len(criterion) <= _SHOWN_CRITERION else criterion[:77] + "…"
        failing = (
            f'<td class="n bad">{r.failing:,} of {r.scored:,}</td>'
            if r.failing
            else f'<td class="n good">0 of {r.scored:,}</td>'
        )
        rows.append(
            f"<tr><td>{_e(r.agent_name)}</td>"
            f'<td title="{_e(criterion)}">{_e(shown)}</td>{failing}'
            f'<td class="n">{_score(r.mean)}</td><td class="n">{_score(r.median)}</td>'
            f'<td class="n">{_score(r.min)}</td><td class="n">{_score(r.max)}</td></tr>'
        )
    return (
        '<details class="overview"><summary>Per agent and criterion, over '
        f'{_e(covered)}</summary><div class="scroll"><table><thead><tr><th>agent</th>'
        "<th>criterion</th>"
        '<th class="n">failing</th><th class="n">mean</th><th class="n">median</th>'
        '<th class="n">min</th><th class="n">max</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table></div></details>"
    )


def _pages(query: ListQuery, page: TracePage) -> str:
    links = []
    if page.offset > 0 or page.previous:
        links.append(f'<a href="{_e(_href(query.link_params()))}">first page</a>')
    if page.previous:
        href = _href(query.link_params(cursor=page.previous))
        links.append(f'<a href="{_e(href)}" rel="prev">previous page</a>')
    if page.cursor:
        href = _href(query.link_params(cursor=page.cursor))
        links.append(f'<a href="{_e(href)}" rel="next">next page</a>')
    return f'<nav class="pages">{"".join(links)}</nav>'


def _count(page: TracePage) -> str:
    if not page.traces:
        return f'<p class="count">No stored trace matches ({page.total:,} found).</p>'
    first, last = page.offset + 1, page.offset + len(page.traces)
    noun = "trace" if page.total == 1 else "traces"
    return f'<p class="count">{first:,}–{last:,} of <b>{page.total:,}</b> {noun}</p>'


def _document(body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>tracejudge: traces</title><style>{_CSS}</style></head><body>\n{body}\n"
        "</body></html>\n"
    )


def render_list(
    query: ListQuery,
    page: TracePage,
    overview: Overview,
    snippets: Mapping[str, Snippet] | None = None,
) -> str:
    """The list page of `page`, with its filter form and the overview above; under each
    trace a search found, what it matched (`snippets`, by trace id)."""
    found = snippets or {}
    runs = (
        f'<p class="pages"><a href="{LIST_PATH}/runs">experiment runs &rarr;</a> '
        f'<a href="{LIST_PATH}/trends">trends &rarr;</a>{_NAV}</p>'
    )
    head = [
        f"<h1>tracejudge: stored traces</h1>{runs}{_form(query)}",
        _overview(overview, page.total),
    ]
    if page.traces:
        header = "".join(_header(query, *column) for column in _COLUMNS)
        head += [
            _count(page),
            f"<table><thead><tr>{header}</tr></thead><tbody>",
            *(_row(query, row) + _snippet_row(found.get(row.trace_id)) for row in page.traces),
            "</tbody></table>",
            _pages(query, page),
        ]
    else:
        head.append("<p>No stored trace matches.</p>")
    return _document("\n".join(head))


def _error_page(request: Request, error: ApiError) -> str:
    """The form as it was filled in, and what is wrong with it."""
    typed = ListQuery(
        where=TraceFilter(),
        order=TraceOrder(),
        limit=DEFAULT_LIMIT,
        cursor=None,
        given=tuple(
            (k, v)
            for k, v in request.query_params.multi_items()
            if k in _DESCRIPTIONS and k != "cursor"
        ),
    )
    return _document(
        f'<h1>tracejudge: stored traces</h1>{_form(typed)}<p class="error">{_e(error.detail)}</p>'
    )


async def list_page(request: Request) -> HTMLResponse:
    try:
        query = list_query(request.query_params)
        page = await read_page(request, query)
        found = await read_overview(request, query, page.total) if page.total else Overview([], 0)
    except ApiError as error:
        return HTMLResponse(_error_page(request, error), status_code=error.status, headers=_HEADERS)
    snippets = {}
    if query.where.q and page.traces:
        ids = [row.trace_id for row in page.traces]
        store = context_of(request).store
        snippets = await in_thread(find_snippets, store, ids, query.where.q)
    return HTMLResponse(render_list(query, page, found, snippets), headers=_HEADERS)


async def home(request: Request) -> Response:
    """`/` leads to the list."""
    return RedirectResponse(LIST_PATH, status_code=307)


routes = [
    Route("/", home, methods=["GET", "HEAD"]),
    ApiRoute(
        LIST_PATH,
        list_page,
        methods=["GET"],
        operation=Operation(
            "Web page: the stored traces (same filters as /api/v1/traces)",
            {
                "200": {"description": "The page", "content": HTML},
                "422": {"description": ERROR_TEXT[422], "content": HTML},
            },
            parameters=list_parameters,
        ),
    ),
]
