"""Sessions and users (#33 item 2): the API and the session page.

- `GET /api/v1/sessions`: sessions, the latest activity first (`user=` one user's), each
  with its user, its traces' count and times, and its worst verdict.
- `GET /api/v1/sessions/{session_id}`: one session: its traces in start order (as the
  trace list shows them), its worst verdict and worst score, its session-level answers.
- `POST /api/v1/sessions/{session_id}/score` `{"criteria": [...]}`: judge the whole
  session, its turns in order (in the background; answers a task id).
- `GET /ui/sessions/{session_id}`: the session page.

The trace list filters by `session=` and `user=` too.
"""

from __future__ import annotations

import html
import json
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from typing_extensions import TypedDict

from tracejudge.models import CRITERION_TEXT_SCHEMA, MAX_CRITERION_LENGTH
from tracejudge.server.api.evals import read_model
from tracejudge.server.api.traces import TraceSummary, summary
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.list_query import page_limit, query_error
from tracejudge.server.http.operation import (
    ERROR_TEXT,
    HTML,
    ApiRoute,
    Operation,
    answer,
    text_query,
)
from tracejudge.server.pages import plainpage
from tracejudge.server.pages.ui import LIST_PATH, session_path, trace_path
from tracejudge.server.store import (
    InvalidCursorError,
    SessionEvaluationRow,
    SessionRow,
    TraceRow,
)
from tracejudge.server.work.context import context_of, in_thread
from tracejudge.server.work.sessions.judging import session_payload

__all__ = [
    "SessionAnswer",
    "SessionEvaluationAnswer",
    "SessionList",
    "SessionScoreRequest",
    "SessionSummary",
    "routes",
    "session_path",
]

Verdict = Literal["failed", "passed", "unscored", "pending"]


class SessionScoreRequest(BaseModel):
    """Body of POST /api/v1/sessions/{session_id}/score: the criteria to judge the whole
    session with."""

    model_config = ConfigDict(extra="forbid")

    criteria: list[
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_CRITERION_LENGTH,
                json_schema_extra=CRITERION_TEXT_SCHEMA,
            ),
        ]
    ] = Field(min_length=1, max_length=16)


class SessionSummary(TypedDict):
    session_id: str
    user_id: str | None
    first_start: float | None
    last_start: float | None
    traces: int
    #: The worst of its traces' verdicts (failed, pending, passed, unscored).
    verdict: Verdict


class SessionList(TypedDict):
    """GET /api/v1/sessions."""

    sessions: list[SessionSummary]
    next_cursor: str | None


class SessionEvaluationAnswer(TypedDict):
    """A session-level answer: `turns` traces read, `response` a MultiAgentTraceResponse
    whose one agent, `session`, is the conversation."""

    id: str
    criterion: str
    overall_score: float | None
    turns: int
    judge_cost_usd: float | None
    created_at: float
    response: dict[str, Any]


class SessionAnswer(SessionSummary):
    """GET /api/v1/sessions/{session_id}."""

    #: The lowest agent score over its traces.
    worst_score: float | None
    #: Its traces, in start order.
    trace_list: list[TraceSummary]
    evaluations: list[SessionEvaluationAnswer]


def _summary(row: SessionRow) -> SessionSummary:
    return {
        "session_id": row.session_id,
        "user_id": row.user_id,
        "first_start": row.first_start,
        "last_start": row.last_start,
        "traces": row.traces,
        "verdict": row.verdict,  # type: ignore[typeddict-item]  # one of the VERDICTS
    }


def _evaluation(row: SessionEvaluationRow) -> SessionEvaluationAnswer:
    return {
        "id": row.id,
        "criterion": row.criterion,
        "overall_score": row.overall_score,
        "turns": row.turns,
        "judge_cost_usd": row.judge_cost_usd,
        "created_at": row.created_at,
        "response": json.loads(row.response),
    }


def _worst(traces: list[TraceRow]) -> float | None:
    scores = [t.worst_score for t in traces if t.worst_score is not None]
    return min(scores) if scores else None


async def list_sessions(request: Request) -> JSONResponse:
    params = request.query_params
    unknown = sorted(set(params) - {"user", "limit", "cursor"})
    if unknown:
        raise query_error(
            unknown[0], "not a parameter of the sessions list; it takes user, limit, cursor"
        )
    limit = page_limit(params.get("limit"))
    try:
        page = await in_thread(
            context_of(request).store.sessions.page,
            params.get("user") or None,
            limit,
            params.get("cursor") or None,
        )
    except InvalidCursorError as exc:
        raise query_error("cursor", str(exc)) from None
    found: SessionList = {
        "sessions": [_summary(s) for s in page.sessions],
        "next_cursor": page.cursor,
    }
    return JSONResponse(found)


async def _session(
    request: Request,
) -> tuple[SessionRow, list[TraceRow], list[SessionEvaluationRow]]:
    session_id = str(request.path_params["session_id"])
    store = context_of(request).store
    found = await in_thread(store.sessions.get, session_id)
    if found is None:
        raise ApiError(404, f"no session {session_id!r} is stored here")
    evaluations = await in_thread(store.sessions.evaluations, session_id)
    return found[0], found[1], evaluations


async def get_session(request: Request) -> JSONResponse:
    session, traces, evaluations = await _session(request)
    found: SessionAnswer = {
        **_summary(session),
        "worst_score": _worst(traces),
        "trace_list": [summary(t) for t in traces],
        "evaluations": [_evaluation(e) for e in evaluations],
    }
    return JSONResponse(found)


async def score_session(request: Request) -> JSONResponse:
    context = context_of(request)
    body = await read_model(request, SessionScoreRequest)
    session, traces, _ = await _session(request)
    if context.judge_label is None:
        raise ApiError(
            400,
            "this server has no judge, so it cannot judge a session (its operator sets --judge)",
        )
    if not any(t.status in ("scored", "failed") for t in traces):
        raise ApiError(409, f"session {session.session_id!r} has no converted trace yet")
    payload = session_payload(session.session_id, body.criteria, {}, claimed=False)
    task_id = await context.runner.submit("score_session", payload)
    return JSONResponse({"task_id": task_id}, status_code=202)


# ---------------------------------------------------------------------- the page

_e = html.escape
_VERDICT_CLASS = {"failed": "bad", "passed": "good", "unscored": "na", "pending": "na"}


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _trace_row(number: int, row: TraceRow) -> str:
    verdict = row.verdict
    worst = _score(row.worst_score)
    if row.worst_agent:
        worst += f" {row.worst_agent} on {row.worst_criterion}"
    return (
        f'<tr class="{"failed" if verdict == "failed" else "ok"}"><td class="n">{number}</td>'
        f'<td><a href="{_e(trace_path(row.trace_id))}">{_e(plainpage.when(row.start_time))}</a>'
        f'<div class="mono">{_e(row.trace_id)}</div></td>'
        f'<td>{_e(row.root_agent or "")}</td><td class="n">{row.model_calls}</td>'
        f'<td class="badge {_VERDICT_CLASS.get(verdict, "na")}">{_e(verdict)}</td>'
        f"<td>{_e(worst)}</td></tr>"
    )


def _answers(evaluations: list[SessionEvaluationRow]) -> str:
    if not evaluations:
        return (
            '<p class="na">No session-level criterion judged this session yet (a rule\'s '
            "session_criteria, or POST /api/v1/sessions/{id}/score).</p>"
        )
    latest: dict[str, SessionEvaluationRow] = {}
    for row in evaluations:  # oldest first
        latest[row.criterion] = row
    rows = []
    for row in latest.values():
        response = json.loads(row.response)
        failing = response.get("failing_agents") or 0
        kind = "bad" if failing else ("good" if row.overall_score is not None else "na")
        verdict = (
            "failed" if failing else ("passed" if row.overall_score is not None else "unscored")
        )
        explanation = ""
        for result in response.get("results_by_agent_name", {}).values():
            for instance in result.get("results_by_agent_instance_id", {}).values():
                if instance:
                    explanation = instance.get("not_evaluated") or instance.get("explanation") or ""
        rows.append(
            f'<tr><td>{_e(row.criterion)}</td><td class="n {kind}">{_score(row.overall_score)}'
            f'</td><td class="badge {kind}">{verdict}</td><td class="n">{row.turns}</td>'
            f"<td><pre>{_e(explanation)}</pre></td></tr>"
        )
    return (
        '<table><thead><tr><th>criterion</th><th class="n">score</th><th>verdict</th>'
        '<th class="n">turns read</th><th>explanation</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
    )


def render_session(
    session: SessionRow, traces: list[TraceRow], evaluations: list[SessionEvaluationRow]
) -> str:
    kind = _VERDICT_CLASS.get(session.verdict, "na")
    user = session.user_id or "unknown"
    same = _e(LIST_PATH + "?" + urlencode({"session": session.session_id}))
    by_user = (
        f' · <a href="{_e(LIST_PATH + "?" + urlencode({"user": session.user_id}))}">'
        "this user's traces</a>"
        if session.user_id
        else ""
    )
    body = (
        f'<nav><a href="{LIST_PATH}">&larr; all traces</a><a href="{same}">these traces in '
        f"the list</a>{by_user}</nav>"
        f"<h1>Session {_e(session.session_id)}</h1>"
        f'<p class="facts">user <b>{_e(user)}</b> · {len(traces)} '
        f"trace{'' if len(traces) == 1 else 's'} from {_e(plainpage.when(session.first_start))} "
        f"to {_e(plainpage.when(session.last_start))} UTC · worst verdict "
        f'<span class="badge {kind}">{_e(session.verdict)}</span>'
        f" · worst agent score {_score(_worst(traces))}</p>"
        "<h2>Session-level criteria</h2>" + _answers(evaluations) + "<h2>Its traces, in order</h2>"
        '<table><thead><tr><th class="n">turn</th><th>start (UTC)</th><th>root agent</th>'
        '<th class="n">model calls</th><th>verdict</th><th>worst agent score</th></tr></thead>'
        "<tbody>" + "".join(_trace_row(n, t) for n, t in enumerate(traces, 1)) + "</tbody></table>"
    )
    return plainpage.document(f"tracejudge: session {session.session_id}", body)


async def session_page(request: Request) -> HTMLResponse:
    try:
        session, traces, evaluations = await _session(request)
    except ApiError as error:
        page = plainpage.document(
            "tracejudge: no such session",
            f'<nav><a href="{LIST_PATH}">&larr; all traces</a></nav><h1>{_e(error.detail)}</h1>',
        )
        return HTMLResponse(page, status_code=error.status, headers=plainpage.headers())
    page = render_session(session, traces, evaluations)
    return HTMLResponse(page, headers=plainpage.headers())


_ONE = "/api/v1/sessions/{session_id}"
routes = [
    ApiRoute(
        "/api/v1/sessions",
        list_sessions,
        methods=["GET"],
        operation=Operation(
            "Sessions, the latest activity first, each with its worst verdict",
            {"200": answer("A page of sessions", "SessionList")},
            errors=(422,),
            parameters=[
                text_query("user", "one user's sessions (user.id or enduser.id)"),
                {
                    "name": "limit",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
                    "description": "sessions per page",
                },
                text_query("cursor", "a page's next_cursor"),
            ],
        ),
    ),
    ApiRoute(
        _ONE,
        get_session,
        methods=["GET"],
        operation=Operation(
            "One session: its traces in order, its worst verdict, its session-level answers",
            {"200": answer("The session", "SessionAnswer")},
            errors=(404,),
        ),
    ),
    ApiRoute(
        _ONE + "/score",
        score_session,
        methods=["POST"],
        operation=Operation(
            "Judge a whole session (its turns in order) with criteria",
            {"202": answer("The task was stored", "TaskAccepted")},
            errors=(400, 404, 409, 415, 422),
            body="SessionScoreRequest",
            changes=True,
        ),
    ),
    ApiRoute(
        LIST_PATH + "/sessions/{session_id}",
        session_page,
        methods=["GET"],
        operation=Operation(
            "Web page: one session, its traces in order and its worst verdict",
            {
                "200": {"description": "The page", "content": HTML},
                "404": {"description": ERROR_TEXT[404], "content": HTML},
            },
        ),
    ),
]
