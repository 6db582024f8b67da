"""Web pages: the stored traces, and the report of one trace. Server-rendered HTML, no build
step, no external URL.

- `GET /ui`: the stored traces (see `list_page`).
- `GET /ui/traces/{trace_id}`: the trace viewer on that trace with its latest answer per
  criterion: the verdict first, the agent tree with scores, the timeline, the model calls
  (`tracejudge.report.render_trace_page`, the viewer every trace of `tracejudge score
  --html` opens into), and a labels section where a person agrees or disagrees with each
  agent's verdict on each criterion, or gives their own score, with a note. A failed
  trace shows its ranked causes and marks the most likely step on the timeline: the
  attribution stored with a judge while newer than the answers, else the deterministic
  one (`attribution.page_attribution`).
- `POST /ui/traces/{trace_id}/labels`: what that section sends (`labels.record`): JSON
  from the page's own origin only, so no other site's page can record a label with the
  credentials the browser holds.

Access is the API's (see `auth`): open when the server has no API key (loopback only,
unless the operator passed --allow-no-auth), else a key in a header; a browser signs in
through its own HTTP Basic prompt with the key as the password. Keys are never taken
from the URL and no cookie is set. Every text is escaped, and each page is sent with a
Content-Security-Policy that runs only its own inline style and script.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from tracejudge.report import content_security_policy, labelling_data, render_trace_page
from tracejudge.server.api import labels
from tracejudge.server.api.attribution import page_attribution
from tracejudge.server.api.evals import read_model
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.operation import ERROR_TEXT, HTML, ApiRoute, Operation
from tracejudge.server.http.page_cache import page_key
from tracejudge.server.pages.plainpage import page_headers, style_policy
from tracejudge.server.pages.span_view import span_rows
from tracejudge.server.store import (
    AttributionRow,
    EvaluationRow,
    RuleDecisionRow,
    SpanEncoding,
    TraceRow,
)
from tracejudge.server.store.stored import collection_paused, latest_answers, read_trace
from tracejudge.server.work.context import context_of, in_thread

__all__ = ["routes", "LIST_PATH", "session_path", "trace_path"]

LIST_PATH = "/ui"
_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px;color:#222}
h1{font-size:20px}form{margin:8px 0}label{margin-right:10px}input{margin-left:4px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f6f6f6}
.good{color:#1e8449}.warn{color:#b9770e}.bad{color:#c0392b;font-weight:600}.na{color:#888}
.tag{display:inline-block;background:#eef;border-radius:3px;padding:0 4px;margin:1px;
font-size:12px}.error{color:#c0392b}.pages a{margin-right:12px}.mono{font-family:monospace}
"""


def _page_policy() -> str:
    """The list page's CSP: its own style, no script, forms to this server only."""
    return style_policy(_CSS)


def trace_path(trace_id: str) -> str:
    """The address of one trace's page."""
    return f"{LIST_PATH}/traces/{quote(trace_id, safe='')}"


def session_path(session_id: str) -> str:
    """The address of a session's page."""
    return f"{LIST_PATH}/sessions/{quote(session_id, safe='')}"


#: How each rule outcome reads on the trace page.
_OUTCOMES = {
    "scored": "scored it",
    "sampled_out": "sampled it out",
    "over_budget": "did not judge it (budget spent)",
    "queued": "queued it (backfill)",
}


def _preface(decisions: Sequence[RuleDecisionRow], session: tuple[str | None, str | None]) -> str:
    """Which rules scored the trace and which sampled it out, and its session: what the
    trace page says above the viewer ("why was this not judged?")."""
    e = html.escape
    parts = []
    session_id, user_id = session
    if session_id is not None or user_id is not None:
        facts = []
        if session_id is not None:
            facts.append(f'session <a href="{e(session_path(session_id))}">{e(session_id)}</a>')
        if user_id is not None:
            facts.append(f"user {e(user_id)}")
        parts.append(f'<p id="tj-session">{" · ".join(facts)}</p>')
    if decisions:
        items = "".join(
            f'<li data-outcome="{e(d.outcome)}"><b>{e(d.rule)}</b> '
            f"{e(_OUTCOMES.get(d.outcome, d.outcome))}: {e(d.reason)}</li>"
            for d in decisions
        )
        parts.append(
            f'<section id="tj-rules"><b>Rules</b> (<a href="{LIST_PATH}/rules">all rules</a>)'
            f"<ul>{items}</ul></section>"
        )
    return "\n".join(parts) + ("\n" if parts else "")


def _document(title: str, body: str) -> str:
    e = html.escape
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def _render(
    row: TraceRow,
    rows: Sequence[EvaluationRow],
    shown: list[dict[str, Any]],
    who: str | None,
    stored: AttributionRow | None,
    preface: str = "",
    batches: Sequence[tuple[SpanEncoding, bytes]] = (),
) -> bytes:
    """The page, encoded (`shown`: the labels as the page shows them)."""
    with collection_paused():
        # The trace and its page's data are freed before the collector is back on: its
        # first pass then walks what survives, not millions of parsed containers.
        return _draw(row, rows, shown, who, stored, preface, batches).encode("utf-8")


def _draw(
    row: TraceRow,
    rows: Sequence[EvaluationRow],
    shown: list[dict[str, Any]],
    who: str | None,
    stored: AttributionRow | None,
    preface: str = "",
    batches: Sequence[tuple[SpanEncoding, bytes]] = (),
) -> str:
    assert row.trace_json is not None
    trace = read_trace(row.trace_json)
    answers = latest_answers(rows)
    labelling = labelling_data(
        trace, post=trace_path(row.trace_id) + "/labels", who=who, labels=shown
    )
    return render_trace_page(
        trace,
        answers,
        trace_id=row.trace_id,
        home=LIST_PATH,
        labelling=labelling,
        attribution=page_attribution(trace, answers, rows, stored),
        preface=preface,
        spans=span_rows(batches) if batches else None,
    )


async def trace_page(request: Request) -> HTMLResponse:
    context = context_of(request)
    trace_id = request.path_params["trace_id"]
    row = await in_thread(context.store.traces.get, trace_id)
    e = html.escape
    back = f'<p><a href="{LIST_PATH}">&larr; all traces</a></p>'
    if row is None:
        page = _document(
            "tracejudge: no such trace",
            f"{back}<h1>No trace {e(json.dumps(trace_id))} is stored here</h1>",
        )
        return HTMLResponse(page, status_code=404, headers=page_headers(_page_policy()))
    if row.trace_json is None or row.status == "too_large":
        why = f": {row.error}" if row.error else " (it is scored once complete)"
        spans = f"{row.span_count:,} span{'' if row.span_count == 1 else 's'}"
        state = "not converted" if row.status == "too_large" else "not converted yet"
        page = _document(
            f"tracejudge: trace {trace_id}",
            f"{back}<h1>Trace {e(trace_id)}</h1><p>Status {e(row.status)}, "
            f"{spans}; {state}{e(why)}.</p>",
        )
        return HTMLResponse(page, headers=page_headers(_page_policy()))
    evaluations = await in_thread(context.store.evaluations.of_trace, row.trace_id)
    recorded = await in_thread(context.store.labels.all, row.trace_id)
    who = request.scope.get("state", {}).get("key_name")
    stored = await in_thread(context.store.attributions.latest, row.trace_id)
    decisions = await in_thread(context.store.decisions.of_trace, row.trace_id)
    session = await in_thread(context.store.sessions.of_trace, row.trace_id)
    preface = _preface(decisions, session)
    headers = page_headers(content_security_policy(connect_self=True))
    shown = [labels.label_json(r) for r in recorded]
    key = await context.offload.run(page_key, row, evaluations, shown, who, stored, preface)
    kept = context.pages.get(key)
    if kept is not None:
        return HTMLResponse(kept, headers={**headers, "Server-Timing": 'page;desc="kept"'})
    began = time.perf_counter()
    # Each span's own attributes and events, for a trace that came as spans.
    batches: list[tuple[SpanEncoding, bytes]] = []
    if row.source == "otlp":
        batches, _ = await in_thread(context.store.traces.span_batches, row.trace_id)
    drawn = await context.offload.run(
        _render, row, evaluations, shown, who, stored, preface, batches
    )
    context.pages.put(key, drawn)
    timing = f'page;desc="drawn";dur={(time.perf_counter() - began) * 1000:.1f}'
    return HTMLResponse(drawn, headers={**headers, "Server-Timing": timing})


def same_origin_json(request: Request) -> None:
    """403 unless the request comes from a page of this server (its `Origin` is the
    request's own host), 415 unless it is JSON: what a page of another site cannot send
    (a form or a plain fetch can carry neither), whatever credentials the browser holds."""
    origin = request.headers.get("origin")
    host = request.headers.get("host")
    fetched = request.headers.get("sec-fetch-site")
    if (
        origin is None
        or host is None
        or urlsplit(origin).netloc.lower() != host.strip().lower()
        or (fetched is not None and fetched != "same-origin")
    ):
        raise ApiError(
            403,
            "this address takes labels from the trace page only (a request with the page's "
            f"own Origin); programs send them to POST {labels.LABELS_PATH}",
        )
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise ApiError(415, "send the label as JSON (Content-Type: application/json)")


async def post_page_label(request: Request) -> Response:
    same_origin_json(request)
    body = await read_model(request, labels.LabelRequest)
    trace_id = request.path_params["trace_id"]
    if body.trace_id is not None and body.trace_id != trace_id:
        raise ApiError(422, f"trace_id: the page is trace {trace_id!r}; leave trace_id out")
    return await labels.record(request, body, trace_id)


routes = [
    ApiRoute(
        LIST_PATH + "/traces/{trace_id}",
        trace_page,
        methods=["GET"],
        operation=Operation(
            "Web page: one trace's viewer with its latest scores",
            {
                "200": {"description": "The page", "content": HTML},
                "404": {"description": ERROR_TEXT[404], "content": HTML},
            },
        ),
    ),
    Route(LIST_PATH + "/traces/{trace_id}/labels", post_page_label, methods=["POST"]),
]
