"""The read API: stored traces with their scores, and re-scoring one with other criteria.

- `GET /api/v1/traces`: newest first; filters `tag=key:value`, `agent=<name>`,
  `score_below=<0..1>` (any evaluation's overall score under it), `status`, `since` /
  `until` (Unix seconds, when the server first saw the trace); `limit` (1..500,
  default 50) and `cursor` (the previous page's `next_cursor`).
- `GET /api/v1/traces/{trace_id}`: the trace as a MultiAgentTrace with its evaluations.
- `GET /api/v1/traces/{trace_id}/evaluations`: only the evaluations.
- `POST /api/v1/traces/{trace_id}/score` `{"criteria": [...], "checks": [...]}`: score
  it again (in the background; answers a task id).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typing_extensions import TypedDict

from tracejudge.errors import BadRequestError
from tracejudge.models import (
    CRITERION_TEXT_SCHEMA,
    MAX_CRITERION_LENGTH,
    validate_plain_text,
)
from tracejudge.server.context import context_of, in_thread
from tracejudge.server.errors import ApiError
from tracejudge.server.evals import parse, read_json
from tracejudge.server.scoring import RESCORE, resolve_criteria
from tracejudge.server.store import (
    EvaluationRow,
    InvalidCursorError,
    TraceFilter,
    TraceRow,
)
from tracejudge.server.store.base import TRACE_STATUSES

__all__ = [
    "routes",
    "EvaluationList",
    "RescoreRequest",
    "StoredEvaluation",
    "StoredTrace",
    "TraceList",
    "TraceSummary",
    "summary",
    "evaluation",
    "trace_filter",
    "page_limit",
]

_STATUSES = TRACE_STATUSES
TraceStatus = Literal["open", "queued", "scored", "unscorable", "failed"]
assert set(TraceStatus.__args__) == set(TRACE_STATUSES)  # type: ignore[attr-defined]


class RescoreRequest(BaseModel):
    """Body of POST /api/v1/traces/{trace_id}/score: at least one criterion or check."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": ["criteria"], "properties": {"criteria": {"minItems": 1}}},
                {"required": ["checks"], "properties": {"checks": {"minItems": 1}}},
            ]
        },
    )

    criteria: list[
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_CRITERION_LENGTH,
                json_schema_extra=CRITERION_TEXT_SCHEMA,
            ),
        ]
    ] = Field(default_factory=list, max_length=64)
    checks: list[str] = Field(default_factory=list, max_length=64)


# The answers of the read API, typed: `openapi.py` describes them from these types.


class TraceSummary(TypedDict):
    """A stored trace in a listing."""

    trace_id: str
    source: str
    status: TraceStatus
    first_seen: float
    start_time: float | None
    root_agent: str | None
    agents: list[str]
    span_count: int
    tags: dict[str, str]
    #: criterion -> the overall score of its latest evaluation (None: not applicable)
    scores: dict[str, float | None]
    judge_cost_usd: float | None
    error: str | None


class TraceList(TypedDict):
    """GET /api/v1/traces."""

    traces: list[TraceSummary]
    next_cursor: str | None


class StoredEvaluation(TypedDict):
    """One stored answer: a ScoreResponse (`kind` reward) or a MultiAgentTraceResponse."""

    id: str
    kind: str
    source: str
    criterion: str
    overall_score: float | None
    created_at: float
    tags: dict[str, str]
    judge_cost_usd: float | None
    response: dict[str, Any]


class StoredTrace(TraceSummary):
    """GET /api/v1/traces/{trace_id}: the summary, the MultiAgentTrace (None until the
    spans are converted) and the evaluations."""

    trace: dict[str, Any] | None
    evaluations: list[StoredEvaluation]


class EvaluationList(TypedDict):
    """GET /api/v1/traces/{trace_id}/evaluations."""

    evaluations: list[StoredEvaluation]


def summary(row: TraceRow) -> TraceSummary:
    return {
        "trace_id": row.trace_id,
        "source": row.source,
        "status": row.status,  # type: ignore[typeddict-item]  # one of TRACE_STATUSES
        "first_seen": row.first_seen,
        "start_time": row.start_time,
        "root_agent": row.root_agent,
        "agents": row.agents,
        "span_count": row.span_count,
        "tags": row.tags,
        "scores": row.scores,
        "judge_cost_usd": row.judge_cost_usd,
        "error": row.error,
    }


def evaluation(row: EvaluationRow) -> StoredEvaluation:
    return {
        "id": row.id,
        "kind": row.kind,
        "source": row.source,
        "criterion": row.criterion,
        "overall_score": row.overall_score,
        "created_at": row.created_at,
        "tags": row.tags,
        "judge_cost_usd": row.judge_cost_usd,
        "response": json.loads(row.response),
    }


def _query_error(name: str, message: str) -> ApiError:
    return ApiError(
        422,
        f"query parameter {name}: {message}",
        errors=[{"loc": ["query", name], "msg": message, "type": "value_error"}],
    )


def _text(request: Request, name: str) -> str | None:
    """A text query parameter (None when absent or blank); 422 for a NUL in it."""
    text = request.query_params.get(name)
    if not text:
        return None
    try:
        return validate_plain_text(text, f"{text[:40]!r}")
    except BadRequestError as exc:
        raise _query_error(name, exc.message) from None


def _number(request: Request, name: str) -> float | None:
    text = _text(request, name)
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise _query_error(name, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise _query_error(name, f"{text!r} is not a finite number")
    return value


def trace_filter(request: Request) -> TraceFilter:
    tag = None
    tag_text = _text(request, "tag")
    if tag_text:
        key, colon, value = tag_text.partition(":")
        if not colon or not key:
            raise _query_error("tag", "write it as key:value, e.g. tag=service.name:checkout")
        tag = (key, value)
    status = _text(request, "status")
    if status is not None and status not in _STATUSES:
        raise _query_error("status", f"{status!r} is not one of {', '.join(_STATUSES)}")
    return TraceFilter(
        tag=tag,
        agent=_text(request, "agent"),
        score_below=_number(request, "score_below"),
        status=status,
        since=_number(request, "since"),
        until=_number(request, "until"),
    )


def page_limit(request: Request) -> int:
    text = request.query_params.get("limit") or "50"
    if not text.isdigit() or not 1 <= int(text) <= 500:
        raise _query_error("limit", f"{text!r} is not a whole number from 1 to 500")
    return int(text)


async def list_traces(request: Request) -> JSONResponse:
    context = context_of(request)
    where, limit = trace_filter(request), page_limit(request)
    try:
        page = await in_thread(context.store.list_traces, where, limit, _text(request, "cursor"))
    except InvalidCursorError as exc:
        raise _query_error("cursor", str(exc)) from None
    answer: TraceList = {"traces": [summary(t) for t in page.traces], "next_cursor": page.cursor}
    return JSONResponse(answer)


async def _stored(request: Request) -> TraceRow:
    trace_id = request.path_params["trace_id"]
    row = await in_thread(context_of(request).store.get_trace, trace_id)
    if row is None:
        raise ApiError(404, f"no trace {trace_id!r} is stored here")
    return row


async def get_trace(request: Request) -> JSONResponse:
    row = await _stored(request)
    evaluations = await in_thread(context_of(request).store.evaluations_of, row.trace_id)
    body: StoredTrace = {
        **summary(row),
        "trace": json.loads(row.trace_json) if row.trace_json else None,
        "evaluations": [evaluation(e) for e in evaluations],
    }
    return JSONResponse(body)


async def get_evaluations(request: Request) -> JSONResponse:
    row = await _stored(request)
    evaluations = await in_thread(context_of(request).store.evaluations_of, row.trace_id)
    answer: EvaluationList = {"evaluations": [evaluation(e) for e in evaluations]}
    return JSONResponse(answer)


async def rescore(request: Request) -> JSONResponse:
    context = context_of(request)
    body = parse(RescoreRequest, await read_json(request))
    try:
        criteria = resolve_criteria(body.criteria, body.checks)
    except BadRequestError as exc:
        raise ApiError(422, exc.message) from None
    row = await _stored(request)
    if row.trace_json is None:
        raise ApiError(
            409,
            f"trace {row.trace_id!r} has not been converted yet (status {row.status}); "
            "score it once it is complete",
        )
    if context.judge_label is None and any(isinstance(c, str) for c in criteria):
        raise ApiError(
            400,
            "this server has no judge, so it can score with checks only (its operator sets "
            "--judge)",
        )
    task_id = await context.runner.submit(
        "score_trace",
        {
            "trace_id": row.trace_id,
            "source": RESCORE,
            "criteria": [c for c in criteria if isinstance(c, str)],
            "checks": [c.name for c in criteria if not isinstance(c, str)],
        },
    )
    return JSONResponse({"task_id": task_id}, status_code=202)


routes = [
    Route("/api/v1/traces", list_traces, methods=["GET"]),
    Route("/api/v1/traces/{trace_id}", get_trace, methods=["GET"]),
    Route("/api/v1/traces/{trace_id}/evaluations", get_evaluations, methods=["GET"]),
    Route("/api/v1/traces/{trace_id}/score", rescore, methods=["POST"]),
]
