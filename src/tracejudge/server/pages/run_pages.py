"""Web pages of the experiment runs stored on the server.

- `GET /ui/runs`: the runs, newest first (name, start, git commit, models, rows, repeats,
  results), each with its page and its traces in the trace list (`/ui?tag=run:ID`),
  and a form choosing two of them to compare.
- `GET /ui/runs/compare?baseline=ID&candidate=ID`: the two runs compared (the server runs
  `tracejudge.experiments.compare_runs`, as `tracejudge compare` does), regressions first:
  the gate's result, per agent and criterion the verdict, the pass rates, the paired
  difference and its interval, the exact test, then each changed row's two outputs side
  by side with links to both traces (`tracejudge.report.render_comparison_html`).
  `level`, `min_effect`, `min_rows` as the API takes them.
- `GET /ui/runs/{run_id}`: one run: its record (git, params, cost), its pass rates per
  agent and criterion, its rows with their verdicts and traces, and a form comparing it
  with another run (its baseline).

Access, escaping and the Content-Security-Policy are the other pages' (see `ui`): no
script, only the page's own style, forms to this server only.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from tracejudge.report import comparison_policy, render_comparison_html
from tracejudge.server.api.runs import COMPARE_PARAMETERS, compared, load_run, run_summary
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.list_query import page_limit
from tracejudge.server.http.operation import ERROR_TEXT, HTML, ApiRoute, Operation
from tracejudge.server.pages.plainpage import page_headers, style_policy
from tracejudge.server.pages.ui import LIST_PATH, trace_path
from tracejudge.server.store import RunCursorError, RunRow
from tracejudge.server.work.context import context_of, in_thread

__all__ = ["RUNS_PAGE", "routes"]

RUNS_PAGE = LIST_PATH + "/runs"
_e = html.escape

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1300px;padding:0 16px;color:#222}
h1{font-size:20px;margin:12px 0 4px}h2{font-size:15px;margin:16px 0 4px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#f6f6f6;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}nav a{margin-right:14px}
.mono{font-family:monospace;font-size:12px;color:#555}.bad{color:#c0392b;font-weight:600}
.good{color:#1e8449}.na{color:#888}.warn{color:#b9770e}
form.pick{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:end;margin:8px 0;padding:8px;
background:#f6f6f6;border-radius:4px}form.pick label{display:flex;flex-direction:column;
font-size:12px;color:#555}form.pick select{font:inherit;max-width:28em}
pre{white-space:pre-wrap;margin:0;max-width:36em;font-size:12px}
"""
_POLICY = style_policy(_CSS)


def _headers(policy: str = _POLICY) -> dict[str, str]:
    return page_headers(policy)


def _document(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
        f'<nav><a href="{LIST_PATH}">traces</a><a href="{RUNS_PAGE}">runs</a></nav>\n'
        f"{body}\n</body></html>\n"
    )


def _page_of(run_id: str) -> str:
    return f"{RUNS_PAGE}/{quote(run_id, safe='')}"


def _traces_of(run_id: str) -> str:
    return f"{LIST_PATH}?{urlencode({'tag': f'run:{run_id}'})}"


def _label(row: RunRow) -> str:
    summary = run_summary(row)
    return f"{row.name} · {summary['started_at'][:19]} · {row.id[:12]}"


def _options(runs: list[RunRow], chosen: str | None) -> str:
    return "".join(
        f'<option value="{_e(r.id)}"{" selected" if r.id == chosen else ""}>{_e(_label(r))}'
        "</option>"
        for r in runs
    )


def _pick_form(runs: list[RunRow], baseline: str | None, candidate: str | None) -> str:
    return (
        f'<form class="pick" method="get" action="{RUNS_PAGE}/compare">'
        f'<label>baseline<select name="baseline">{_options(runs, baseline)}</select></label>'
        f'<label>candidate<select name="candidate">{_options(runs, candidate)}</select></label>'
        '<button type="submit">compare</button></form>'
    )


def _commit(summary: dict[str, Any]) -> str:
    commit = summary.get("commit")
    if not commit:
        return '<span class="na">-</span>'
    dirty = ' <span class="warn">dirty</span>' if summary.get("dirty") else ""
    return f'<span class="mono">{_e(str(commit)[:12])}</span>{dirty}'


def render_runs(runs: list[RunRow], next_cursor: str | None) -> str:
    """The runs page."""
    rows = []
    for row in runs:
        summary = run_summary(row)
        rows.append(
            f'<tr><td><a href="{_e(_page_of(row.id))}">{_e(row.name)}</a>'
            f'<div class="mono">{_e(row.id)}</div></td>'
            f"<td>{_e(summary['started_at'][:19].replace('T', ' '))}</td>"
            f"<td>{_commit(dict(summary))}</td>"
            f"<td>{_e(', '.join(summary['models']) or '-')}</td>"
            f'<td class="n">{summary["rows"]}</td><td class="n">{summary["repeats"]}</td>'
            f'<td class="n">{summary["results"]}</td>'
            f'<td><a href="{_e(_traces_of(row.id))}">traces</a></td></tr>'
        )
    pick = _pick_form(runs, runs[1].id if len(runs) > 1 else None, runs[0].id) if runs else ""
    more = (
        f'<p><a href="{RUNS_PAGE}?{urlencode({"cursor": next_cursor})}">older runs &rarr;</a></p>'
        if next_cursor
        else ""
    )
    table = (
        "<table><tr><th>run</th><th>started (UTC)</th><th>commit</th><th>models</th>"
        '<th class="n">rows</th><th class="n">repeats</th><th class="n">results</th>'
        f"<th></th></tr>{''.join(rows)}</table>"
        if runs
        else "<p>No run is stored here yet: <code>tracejudge run FILE.py --to URL</code> "
        "stores one.</p>"
    )
    return _document("tracejudge: runs", f"<h1>Experiment runs</h1>{pick}{table}{more}")


async def runs_page(request: Request) -> HTMLResponse:
    limit = page_limit(request.query_params.get("limit"))
    try:
        page = await in_thread(
            context_of(request).store.runs.page, limit, request.query_params.get("cursor") or None
        )
    except RunCursorError as exc:
        raise ApiError(422, f"query parameter cursor: {exc}") from None
    return HTMLResponse(render_runs(page.runs, page.cursor), headers=_headers())


def _verdict(passed: Any) -> str:
    if passed is True:
        return '<span class="good">passed</span>'
    if passed is False:
        return '<span class="bad">failed</span>'
    return '<span class="na">-</span>'


def _text(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return _e(text if len(text) <= limit else text[: limit - 1] + "…")


def render_run(row: RunRow, record: dict[str, Any], lines: list[Any], others: list[RunRow]) -> str:
    """One run's page."""
    summary = run_summary(row)
    rates: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for line in lines:
        for score in line.get("scores") or []:
            if score.get("passed") is not None:
                rates[str(score["agent"]), str(score["criterion"])].append(bool(score["passed"]))
    rate_rows = "".join(
        f"<tr><td>{_e(agent)}</td><td>{_text(criterion, 120)}</td>"
        f'<td class="n">{sum(v)}/{len(v)}</td><td class="n">{sum(v) / len(v):.1%}</td></tr>'
        for (agent, criterion), v in rates.items()
    )
    result_rows = []
    for line in lines:
        verdicts = "<br>".join(
            f"{_e(str(s.get('agent')))} / {_text(s.get('criterion'), 60)}: "
            f"{_verdict(s.get('passed'))}"
            for s in line.get("scores") or []
        )
        trace_id = line.get("trace_id")
        trace = f'<a href="{_e(trace_path(trace_id))}">trace</a>' if trace_id else "-"
        said = line.get("error") or line.get("output")
        result_rows.append(
            f"<tr><td>{_e(str(line.get('id')))}</td><td class='n'>{line.get('repeat', 0)}</td>"
            f"<td><pre>{_text(line.get('input'))}</pre></td><td><pre>{_text(said)}</pre></td>"
            f"<td>{verdicts or '-'}</td><td>{trace}</td></tr>"
        )
    others = [r for r in others if r.id != row.id]
    compare = (
        f'<form class="pick" method="get" action="{RUNS_PAGE}/compare">'
        f'<label>compare with (baseline)<select name="baseline">{_options(others, None)}'
        f'</select></label><input type="hidden" name="candidate" value="{_e(row.id)}">'
        '<button type="submit">compare</button></form>'
        if others
        else ""
    )
    details = json.dumps(
        {k: record.get(k) for k in ("git", "params", "cost", "criteria")}, indent=2
    )
    body = (
        f"<h1>Run {_e(row.name)}</h1><p class='mono'>{_e(row.id)}</p>"
        f"<p>started {_e(summary['started_at'])}, ended {_e(str(summary['ended_at']))}; "
        f"commit {_commit(dict(summary))}; models {_e(', '.join(summary['models']) or '-')}; "
        f"{summary['rows']} rows × {summary['repeats']}; "
        f'<a href="{_e(_traces_of(row.id))}">its traces</a></p>{compare}'
        f"<h2>Pass rates</h2><table><tr><th>agent</th><th>criterion</th>"
        f'<th class="n">passed</th><th class="n">rate</th></tr>{rate_rows}</table>'
        f"<h2>Rows ({len(lines)})</h2><table><tr><th>row</th><th class='n'>repeat</th>"
        f"<th>input</th><th>output</th><th>verdicts</th><th></th></tr>"
        f"{''.join(result_rows)}</table><h2>Record</h2><pre>{_e(details)}</pre>"
    )
    return _document(f"tracejudge: run {row.name}", body)


def _not_found(error: ApiError) -> HTMLResponse:
    page = _document("tracejudge: no such run", f"<h1>{_e(error.detail)}</h1>")
    return HTMLResponse(page, status_code=error.status, headers=_headers())


async def run_page(request: Request) -> HTMLResponse:
    try:
        row, _, lines = await load_run(request, str(request.path_params["run_id"]))
    except ApiError as error:
        if error.status != 404:
            raise
        return _not_found(error)
    others = await in_thread(context_of(request).store.runs.page, 50, None)
    page = await context_of(request).offload.run(
        render_run, row, json.loads(row.record), lines, others.runs
    )
    return HTMLResponse(page, headers=_headers())


async def compare_page(request: Request) -> Response:
    try:
        comparison, before, after = await compared(request)
    except ApiError as error:
        if error.status != 404:
            raise
        return _not_found(error)
    result, reasons = comparison.gate()
    report = comparison.as_dict()
    report["baseline"] = f"{before.name} ({before.id})"
    report["candidate"] = f"{after.name} ({after.id})"
    report["gate"] = {"result": result, "reasons": reasons}
    page = await context_of(request).offload.run(
        lambda: render_comparison_html(
            report,
            title=f"{after.name} compared with {before.name}",
            trace_href=LIST_PATH + "/traces/{trace_id}",
            nav=[
                ("traces", LIST_PATH),
                ("runs", RUNS_PAGE),
                (f"baseline: {before.name}", _page_of(before.id)),
                (f"candidate: {after.name}", _page_of(after.id)),
            ],
        )
    )
    return HTMLResponse(page, headers=_headers(comparison_policy()))


_PAGE = {"200": {"description": "The page", "content": HTML}}
_PAGE_OR_NONE = {**_PAGE, "404": {"description": ERROR_TEXT[404], "content": HTML}}

routes = [
    ApiRoute(
        RUNS_PAGE,
        runs_page,
        methods=["GET"],
        operation=Operation("Web page: the experiment runs, newest first", _PAGE, errors=(422,)),
    ),
    ApiRoute(
        RUNS_PAGE + "/compare",
        compare_page,
        methods=["GET"],
        operation=Operation(
            "Web page: two runs compared, regressions first, each changed row's traces "
            "side by side",
            _PAGE_OR_NONE,
            errors=(422,),
            parameters=COMPARE_PARAMETERS,
        ),
    ),
    ApiRoute(
        RUNS_PAGE + "/{run_id}",
        run_page,
        methods=["GET"],
        operation=Operation("Web page: one run, its pass rates and rows", _PAGE_OR_NONE),
    ),
]
