"""The read API: stored traces with their scores, and re-scoring one with other criteria.

- `GET /api/v1/traces`: a page of stored traces (newest first by default) with what the
  list shows of each (start time, duration, agents, model calls, tokens, cost, the worst
  agent score and the failing agents, verdict, service, tags), the `total` the filters
  keep, and cursors to the next and previous pages. The parameters (filters, `sort`,
  `order`, `limit`, `cursor`) are `list_query.PARAMETERS`.
- `GET /api/v1/overview`: the batch overview of the traces the same filters keep (the
  latest 1,000 of them): per agent name and criterion, how many were scored and failed,
  the mean, median, min and max score.
- `GET /api/v1/traces/{trace_id}`: the trace as a MultiAgentTrace with its evaluations,
  and its verdict in full: the worst agent instance (`worst`) and the failing (agent,
  criterion) pairs worst first (`failures`), as `TraceVerdict` reads the latest answers.
- `GET /api/v1/traces/{trace_id}/evaluations`: only the evaluations.
- `POST /api/v1/traces/{trace_id}/score` `{"criteria": [...], "checks": [...]}`: score
  it again (in the background; answers a task id).
- `GET /api/v1/traces/{trace_id}/attribution`: its failure's ranked causes (see
  `tracejudge.server.api.attribution`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python
from starlette.requests import Request
from starlette.responses import JSONResponse
from typing_extensions import TypedDict

from tracejudge._advice import Surface, how_to_configure_a_judge
from tracejudge.errors import BadRequestError
from tracejudge.models import (
    CRITERION_TEXT_SCHEMA,
    MAX_CRITERION_LENGTH,
    Failure,
    ScoredAgent,
    TraceVerdict,
)
from tracejudge.server.api.evals import read_model
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.list_query import (
    FILTERS,
    ListQuery,
    format_tag,
    list_query,
    query_error,
)
from tracejudge.server.http.operation import ApiRoute, Operation, answer, list_parameters
from tracejudge.server.store import (
    EvaluationRow,
    InvalidCursorError,
    Overview,
    RuleDecisionRow,
    TracePage,
    TraceRow,
)
from tracejudge.server.store.stored import latest_answers
from tracejudge.server.store.trace_text import trace_data
from tracejudge.server.work.context import context_of, in_thread
from tracejudge.server.work.scoring import RESCORE, resolve_criteria

__all__ = [
    "routes",
    "EvaluationList",
    "OverviewAnswer",
    "RescoreRequest",
    "RuleDecisionAnswer",
    "StoredEvaluation",
    "StoredTrace",
    "TraceList",
    "TraceSummary",
    "summary",
    "evaluation",
    "read_page",
    "read_overview",
    "OVERVIEW_TRACES",
    "stored_trace",
]

#: The overview covers at most this many traces (the latest the filters keep).
OVERVIEW_TRACES = 1_000


TraceStatus = Literal["open", "queued", "scored", "unscorable", "failed", "too_large"]
Verdict = Literal["failed", "passed", "unscored", "pending"]


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
    verdict: Verdict
    first_seen: float
    start_time: float | None
    end_time: float | None
    duration: float | None
    root_agent: str | None
    agents: list[str]
    agent_count: int
    span_count: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    tokens: int
    cost: float | None
    models: list[str]
    worst_score: float | None
    worst_agent: str | None
    worst_criterion: str | None
    failing_agents: int
    failing_pairs: int
    service: str | None
    tags: dict[str, str]
    tag_list: list[str]
    resource: dict[str, str]
    #: criterion -> the overall score of its latest evaluation (None: not applicable)
    scores: dict[str, float | None]
    judge_cost_usd: float | None
    error: str | None


class TraceList(TypedDict):
    """GET /api/v1/traces."""

    traces: list[TraceSummary]
    #: How many traces the filters keep, and how many of them come before this page.
    total: int
    offset: int
    limit: int
    sort: str
    order: Literal["asc", "desc"]
    next_cursor: str | None
    previous_cursor: str | None


class OverviewRowAnswer(TypedDict):
    agent_name: str
    criterion: str
    scored: int
    failing: int
    mean: float | None
    median: float | None
    min: float | None
    max: float | None


class OverviewAnswer(TypedDict):
    """GET /api/v1/overview."""

    #: How many traces the overview covers.
    traces: int
    rows: list[OverviewRowAnswer]


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


class RuleDecisionAnswer(TypedDict):
    """What a rule decided for a trace: scored, sampled_out, over_budget, or queued (by a
    backfill), with one line saying why."""

    rule: str
    outcome: Literal["scored", "sampled_out", "over_budget", "queued"]
    reason: str
    revision: int
    decided_at: float


class StoredTrace(TraceSummary):
    """GET /api/v1/traces/{trace_id}: the summary, the verdict in full, the
    MultiAgentTrace (None until the spans are converted) and the evaluations."""

    #: The worst agent instance over every criterion (name, instance id, score).
    worst: ScoredAgent | None
    #: The failing (agent instance, criterion) pairs, worst first, with explanations.
    failures: list[Failure]
    trace: dict[str, Any] | None
    evaluations: list[StoredEvaluation]
    #: What each rule decided for it: which scored it, which sampled it out, and why.
    rules: list[RuleDecisionAnswer]
    #: The session and user it belongs to (None: not recorded).
    session_id: str | None
    user_id: str | None


class EvaluationList(TypedDict):
    """GET /api/v1/traces/{trace_id}/evaluations."""

    evaluations: list[StoredEvaluation]


def summary(row: TraceRow) -> TraceSummary:
    """What the list says of a trace. `first_seen` is when the server received it;
    `start_time` when it started (its earliest span or model call)."""
    return {
        "trace_id": row.trace_id,
        "source": row.source,
        "status": row.status,  # type: ignore[typeddict-item]  # one of TRACE_STATUSES
        "verdict": row.verdict,  # type: ignore[typeddict-item]  # one of VERDICTS
        "first_seen": row.first_seen,
        "start_time": row.start_time,
        "end_time": row.end_time,
        "duration": row.duration,
        "root_agent": row.root_agent,
        "agents": row.agents,
        "agent_count": row.agent_count,
        "span_count": row.span_count,
        "model_calls": row.model_calls,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "tokens": row.tokens,
        "cost": row.cost,
        "models": row.models,
        "worst_score": row.worst_score,
        "worst_agent": row.worst_agent,
        "worst_criterion": row.worst_criterion,
        "failing_agents": row.failing_agents,
        "failing_pairs": row.failing_pairs,
        "service": row.service,
        "tags": row.tags,
        "tag_list": [format_tag(k, v) for k, v in sorted(row.tags.items())],
        "resource": row.resource,
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


async def read_page(request: Request, query: ListQuery) -> TracePage:
    """The page `query` asks for (422 naming `cursor` for a cursor of another order)."""
    try:
        return await in_thread(
            context_of(request).store.lists.page,
            query.where,
            query.limit,
            query.cursor,
            query.order,
        )
    except InvalidCursorError as exc:
        raise query_error("cursor", str(exc)) from None


async def read_overview(request: Request, query: ListQuery, total: int | None = None) -> Overview:
    """The overview of the traces `query` keeps (`total`: how many, when counted)."""
    store = context_of(request).store
    found = await in_thread(store.lists.overview, query.where, OVERVIEW_TRACES, total)
    return found


async def list_traces(request: Request) -> JSONResponse:
    query = list_query(request.query_params)
    page = await read_page(request, query)
    answer: TraceList = {
        "traces": [summary(t) for t in page.traces],
        "total": page.total,
        "offset": page.offset,
        "limit": query.limit,
        "sort": query.order.sort,
        "order": "desc" if query.order.descending else "asc",
        "next_cursor": page.cursor,
        "previous_cursor": page.previous,
    }
    return JSONResponse(answer)


async def overview(request: Request) -> JSONResponse:
    query = list_query(request.query_params)
    found = await read_overview(request, query)
    answer: OverviewAnswer = {
        "traces": found.traces,
        "rows": [
            {
                "agent_name": r.agent_name,
                "criterion": r.criterion,
                "scored": r.scored,
                "failing": r.failing,
                "mean": r.mean,
                "median": r.median,
                "min": r.min,
                "max": r.max,
            }
            for r in found.rows
        ],
    }
    return JSONResponse(answer)


async def stored_trace(request: Request) -> TraceRow:
    """The stored trace the path's `trace_id` names; 404 when there is none."""
    trace_id = request.path_params["trace_id"]
    row = await in_thread(context_of(request).store.traces.get, trace_id)
    if row is None:
        raise ApiError(404, f"no trace {trace_id!r} is stored here")
    return row


def _trace_answer(
    row: TraceRow,
    evaluations: list[EvaluationRow],
    decisions: list[RuleDecisionRow],
    session: tuple[str | None, str | None],
) -> JSONResponse:
    verdict = TraceVerdict.of(latest_answers(evaluations))
    body: StoredTrace = {
        **summary(row),
        "worst": verdict.worst,
        "failures": verdict.failures,
        "trace": trace_data(row.trace_json) if row.trace_json else None,
        "evaluations": [evaluation(e) for e in evaluations],
        "rules": [
            {
                "rule": d.rule,
                "outcome": d.outcome,  # type: ignore[typeddict-item]  # one of the outcomes
                "reason": d.reason,
                "revision": d.revision,
                "decided_at": d.decided_at,
            }
            for d in decisions
        ],
        "session_id": session[0],
        "user_id": session[1],
    }
    # the verdict's models as JSON, the trace as parsed (walking it again costs)
    verdict_json = {
        "worst": to_jsonable_python(verdict.worst),
        "failures": to_jsonable_python(verdict.failures),
    }
    return JSONResponse({**body, **verdict_json})


def _evaluations_answer(evaluations: list[EvaluationRow]) -> JSONResponse:
    answer: EvaluationList = {"evaluations": [evaluation(e) for e in evaluations]}
    return JSONResponse(answer)


async def get_trace(request: Request) -> JSONResponse:
    context = context_of(request)
    row = await stored_trace(request)
    evaluations = await in_thread(context.store.evaluations.of_trace, row.trace_id)
    decisions = await in_thread(context.store.decisions.of_trace, row.trace_id)
    session = await in_thread(context.store.sessions.of_trace, row.trace_id)
    # A stored trace may be tens of megabytes of JSON: decoded and encoded off the loop.
    return await context.offload.run(_trace_answer, row, evaluations, decisions, session)


async def get_evaluations(request: Request) -> JSONResponse:
    context = context_of(request)
    row = await stored_trace(request)
    evaluations = await in_thread(context.store.evaluations.of_trace, row.trace_id)
    return await context.offload.run(_evaluations_answer, evaluations)


async def rescore(request: Request) -> JSONResponse:
    context = context_of(request)
    body = await read_model(request, RescoreRequest)
    try:
        criteria = resolve_criteria(body.criteria, body.checks)
    except BadRequestError as exc:
        raise ApiError(422, exc.message) from None
    row = await stored_trace(request)
    if row.trace_json is None:
        raise ApiError(
            409,
            f"trace {row.trace_id!r} has not been converted yet (status {row.status}); "
            "score it once it is complete",
        )
    if context.judge_label is None and any(isinstance(c, str) for c in criteria):
        raise ApiError(400, how_to_configure_a_judge(Surface.SERVER))
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
    ApiRoute(
        "/api/v1/traces",
        list_traces,
        methods=["GET"],
        operation=Operation(
            "Stored traces: a page in the order asked for, with the total",
            {"200": answer("A page of traces", "TraceList")},
            errors=(422,),
            parameters=list_parameters,
            description="Each trace with its start time, duration, agents, model calls, "
            "tokens, cost, verdict (the worst agent score, never a mean; failing agents and "
            "pairs), service and tags. `total` counts every trace the filters keep; "
            "`next_cursor` / `previous_cursor` read the pages beside this one.",
        ),
    ),
    ApiRoute(
        "/api/v1/overview",
        overview,
        methods=["GET"],
        operation=Operation(
            "The batch overview of the traces the same filters keep",
            {"200": answer("The overview", "OverviewAnswer")},
            errors=(422,),
            parameters=lambda: list_parameters(FILTERS),
            description="Per agent name and criterion, over the latest 1,000 traces the "
            "filters keep: how many instances were scored and failed, the mean, median, min "
            "and max score.",
        ),
    ),
    ApiRoute(
        "/api/v1/traces/{trace_id}",
        get_trace,
        methods=["GET"],
        operation=Operation(
            "One trace as a MultiAgentTrace, with its evaluations",
            {"200": answer("The trace", "StoredTrace")},
            errors=(404,),
        ),
    ),
    ApiRoute(
        "/api/v1/traces/{trace_id}/evaluations",
        get_evaluations,
        methods=["GET"],
        operation=Operation(
            "A trace's evaluations",
            {"200": answer("The evaluations", "EvaluationList")},
            errors=(404,),
        ),
    ),
    ApiRoute(
        "/api/v1/traces/{trace_id}/score",
        rescore,
        methods=["POST"],
        operation=Operation(
            "Score a stored trace again, with other criteria or checks",
            {"202": answer("The task was stored", "TaskAccepted")},
            errors=(400, 404, 409, 415, 422),
            body="RescoreRequest",
            changes=True,
        ),
    ),
]
