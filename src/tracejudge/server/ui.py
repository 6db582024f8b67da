"""Web pages: the stored traces, and the report of one trace. Server-rendered HTML, no build
step, no external URL.

- `GET /ui`: the stored traces (see `list_page`).
- `GET /ui/traces/{trace_id}`: the trace viewer on that trace with its latest answer per
  criterion: the verdict first, the agent tree with scores, the timeline, the model calls
  (`tracejudge.report.render_trace_page`, the viewer every trace of `tracejudge score
  --html` opens into).

Access is the API's (see `auth`): open when the server has no API key (loopback only,
unless the operator passed --allow-no-auth), else a key in a header; a browser signs in
through its own HTTP Basic prompt with the key as the password. Keys are never taken
from the URL and no cookie is set. Every text is escaped, and each page is sent with a
Content-Security-Policy that runs only its own inline style and script.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import hashlib
import html
import json
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.report import content_security_policy, render_trace_page
from tracejudge.server.context import context_of, in_thread
from tracejudge.server.store import EvaluationRow, TraceRow

__all__ = ["routes", "LIST_PATH", "trace_path"]

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
    digest = base64.b64encode(hashlib.sha256(_CSS.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )


def _headers(policy: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        # Traces hold prompts and answers: no shared cache keeps them.
        "Cache-Control": "no-store",
    }


def trace_path(trace_id: str) -> str:
    """The address of one trace's page."""
    return f"{LIST_PATH}/traces/{quote(trace_id, safe='')}"


def _document(title: str, body: str) -> str:
    e = html.escape
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def _latest_by_criterion(rows: Sequence[EvaluationRow]) -> list[MultiAgentTraceResponse]:
    """The trace's newest answer per criterion, in the order criteria were first scored."""
    latest: dict[str, MultiAgentTraceResponse] = {}
    for row in rows:  # oldest first
        if row.kind == "trace":
            latest[row.criterion] = MultiAgentTraceResponse.model_validate_json(row.response)
    return list(latest.values())


def _read_trace(text: str) -> MultiAgentTrace:
    """A stored trace, validated in time linear in what its calls add to the conversation.

    A chat agent resends its whole conversation on every call, so a stored trace holds
    each message about as many times as the agent made calls after it (an agent of 32
    calls: 500 copies of 60 messages), and validating every copy took seconds on a
    5,000-span trace. Where a call's input starts with the previous call's input (exactly:
    the same JSON), only its new messages are validated, and the previous call's
    validated messages are shared in front of them. The trace is the one `from_json`
    gives.
    """
    data = json.loads(text)
    repeated: dict[int, int] = {}  # id of a trimmed interaction -> messages trimmed
    for interactions in _raw_interactions(data):
        previous: list[Any] = []
        for item in interactions:
            inputs = item.get("input_messages") if isinstance(item, dict) else None
            if not isinstance(inputs, list):
                continue
            n = len(previous)
            if 0 < n <= len(inputs) and inputs[:n] == previous:
                item["input_messages"] = inputs[n:]
                repeated[id(item)] = n
            previous = inputs
    trace = MultiAgentTrace.model_validate(data)
    if repeated:
        _share_repeated_inputs(trace, repeated, data)
    return trace


def _raw_interactions(data: Any) -> list[list[Any]]:
    """Each agent's `interactions` list in a trace's parsed JSON (none when it is not a
    trace: validation then says what is wrong)."""
    agents = data.get("agent_instance_by_id") if isinstance(data, dict) else None
    if not isinstance(agents, dict):
        return []
    found = [a.get("interactions") for a in agents.values() if isinstance(a, dict)]
    return [i for i in found if isinstance(i, list)]


def _share_repeated_inputs(
    trace: MultiAgentTrace, repeated: dict[int, int], data: dict[str, Any]
) -> None:
    """Put back, in front of each trimmed call's input, the previous call's messages."""
    for agent_id, agent in trace.agent_instance_by_id.items():
        raw = data["agent_instance_by_id"][agent_id]["interactions"]
        previous: list[Any] = []
        for item, model in zip(raw, agent.interactions, strict=True):
            if isinstance(model, str):
                continue
            n = repeated.get(id(item))
            if n is not None:
                model.input_messages = previous[:n] + model.input_messages
            previous = model.input_messages


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cycle collector paused while a stored trace is read and drawn: the
    millions of containers that JSON parsing makes hold no cycles, yet each full
    collection walks them all (half the time of a 5,000-span trace's page). Concurrent
    readers never leave it off: the reader that found it on turns it back on when done."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _render(row: TraceRow, rows: Sequence[EvaluationRow]) -> str:
    assert row.trace_json is not None
    with _collection_paused():
        trace = _read_trace(row.trace_json)
        return render_trace_page(
            trace, _latest_by_criterion(rows), trace_id=row.trace_id, home=LIST_PATH
        )


async def trace_page(request: Request) -> HTMLResponse:
    context = context_of(request)
    trace_id = request.path_params["trace_id"]
    row = await in_thread(context.store.get_trace, trace_id)
    e = html.escape
    back = f'<p><a href="{LIST_PATH}">&larr; all traces</a></p>'
    if row is None:
        page = _document(
            "tracejudge: no such trace",
            f"{back}<h1>No trace {e(json.dumps(trace_id))} is stored here</h1>",
        )
        return HTMLResponse(page, status_code=404, headers=_headers(_page_policy()))
    if row.trace_json is None:
        why = f": {row.error}" if row.error else " (it is scored once complete)"
        spans = f"{row.span_count} span{'' if row.span_count == 1 else 's'}"
        page = _document(
            f"tracejudge: trace {trace_id}",
            f"{back}<h1>Trace {e(trace_id)}</h1><p>Status {e(row.status)}, "
            f"{spans}; not converted yet{e(why)}.</p>",
        )
        return HTMLResponse(page, headers=_headers(_page_policy()))
    evaluations = await in_thread(context.store.evaluations_of, row.trace_id)
    page = await in_thread(_render, row, evaluations)
    return HTMLResponse(page, headers=_headers(content_security_policy()))


routes = [
    Route(LIST_PATH + "/traces/{trace_id}", trace_page, methods=["GET"]),
]
