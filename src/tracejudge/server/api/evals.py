"""The hosted API's evaluation endpoints, answering the published `composo` client unchanged.

`POST /api/v1/evals/reward` and `/api/v1/evals/trace` evaluate one criterion and
answer at once; their `/background` variants store a task and answer its id, read
with `GET /api/v1/tasks/{task_id}`. Every evaluation goes through the evaluation
service, as the client's local mode does. `model_core` (such as `align-20251111`)
is accepted and means the configured judge. A result is written to the store before
it is answered (unless the request says `data_retention: "none"`), and a posted
trace is kept with its evaluations, readable through the traces API.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
import uuid
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from tracejudge._advice import Surface, reworded
from tracejudge.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ComposoError,
    ConfigurationError,
    NoLLMInteractionsError,
    RateLimitError,
    TimeoutError,
)
from tracejudge.models import (
    EvaluationResponse,
    MultiAgentTraceResponse,
    RewardRequest,
    TaskResponse,
    TraceRewardRequest,
)
from tracejudge.server.http import jsonbody
from tracejudge.server.http.errors import ApiError, judge_said, validation_error
from tracejudge.server.http.operation import JUDGED_ERRORS, ApiRoute, Operation, answer
from tracejudge.server.store import EvaluationRow, TaskRow, TraceRow
from tracejudge.server.store.trace_text import stored_text
from tracejudge.server.work.context import ServerContext, context_of, in_thread
from tracejudge.server.work.tasks import Handler, Outcome

__all__ = [
    "routes",
    "handlers",
    "is_json_media",
    "read_model",
    "parse",
    "service_error",
    "trace_summary",
]

logger = logging.getLogger("tracejudge.server")

M = TypeVar("M", bound=BaseModel)


def is_json_media(content_type: str | None) -> bool:
    """`application/json` or a `+json` type, with any parameters (charset)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _require_json(request: Request) -> None:
    """415 unless the body is sent as JSON (a web page can send text/plain, forms and
    multipart to any address without asking; never application/json)."""
    if not is_json_media(request.headers.get("content-type")):
        given = request.headers.get("content-type") or "none"
        raise ApiError(
            415,
            f"this endpoint reads JSON only (Content-Type {given!r}); send the body with "
            "Content-Type: application/json",
            errors=[{"loc": ["header", "content-type"], "msg": "not JSON", "type": "media"}],
        )


def _loads(body: bytes) -> Any:
    """The body as JSON; 422 when it is not JSON."""
    try:
        return jsonbody.loads(body)
    except jsonbody.TooDeepError as exc:
        raise ApiError(
            422,
            f"the request body is not accepted: {exc}",
            errors=[{"loc": ["body"], "msg": str(exc), "type": "json_too_deep"}],
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(
            422,
            f"the request body is not JSON ({exc}); send a JSON object with "
            "Content-Type: application/json",
            errors=[{"loc": ["body"], "msg": "invalid JSON", "type": "json_invalid"}],
        ) from None


async def read_model(request: Request, model: type[M]) -> M:
    """The body, sent as JSON (415 otherwise), parsed and validated as `model` (422 naming
    what is wrong) in a worker thread: a body may be megabytes."""
    _require_json(request)
    body = await request.body()
    return await context_of(request).offload.run(_validated, model, body)


def _validated(model: type[M], body: bytes) -> M:
    return parse(model, _loads(body))


def parse(model: type[M], data: Any) -> M:
    """`data` validated as `model`; 422 naming each wrong field."""
    if not isinstance(data, dict):
        raise ApiError(
            422,
            f"the request body must be a JSON object, got {type(data).__name__}",
            errors=[{"loc": ["body"], "msg": "not an object", "type": "model_type"}],
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, prefix=("body",)) from None


def service_error(error: Exception) -> ApiError:
    """The answer for an evaluation that could not be made. Messages from the judge name
    no address (`judge_said`)."""
    if isinstance(error, ConfigurationError):
        # The service words its advice for a server's reader ("start the server with ...").
        return ApiError(400, reworded(error.message, Surface.SERVER))
    if isinstance(error, (BadRequestError, NoLLMInteractionsError)):
        return ApiError(422, error.message)
    if isinstance(error, AuthenticationError):
        return ApiError(
            502,
            "the judge model refused this server's credentials; the server's operator must "
            "check the provider key",
        )
    if isinstance(error, RateLimitError):
        return ApiError(
            503,
            f"the judge model is rate-limiting: {judge_said(error)}",
            headers={"Retry-After": "5"},
        )
    if isinstance(error, TimeoutError):
        said = reworded(judge_said(error), Surface.SERVER)
        return ApiError(504, f"the judge model did not answer in time: {said}")
    if isinstance(error, (APIError, ComposoError)):
        said = reworded(judge_said(error), Surface.SERVER)
        return ApiError(502, f"the judge model failed: {said}")
    if isinstance(error, ValueError):
        return ApiError(422, f"invalid request: {error}")
    logger.exception("tracejudge: evaluation failed", exc_info=error)
    return ApiError(500, "the server failed to evaluate this request (see its log)")


def _trace_id(request: TraceRewardRequest) -> str:
    """The stored trace's id: the request's `trace_id`, else a digest of the trace, so
    that several criteria sent for one trace (one request each) land on one trace."""
    if request.trace_id:
        return request.trace_id
    wire = request.trace.model_dump_json()
    return "api-" + hashlib.sha256(wire.encode()).hexdigest()[:32]


def trace_summary(trace_id: str, request: TraceRewardRequest) -> TraceRow:
    trace = request.trace
    agents = [agent.name for agent in trace.iter_agents()]
    times = [
        i.start_time
        for agent in trace.iter_agents()
        for i in agent.llm_interactions
        if i.start_time is not None
    ]
    now = time.time()
    return TraceRow(
        trace_id=trace_id,
        source="api",
        status="scored",
        first_seen=now,
        last_span_at=now,
        start_time=min(times) if times else None,
        root_agent=trace.root.name,
        agents=agents,
        trace_json=stored_text(trace),
        tags=dict(request.tags or {}),
    )


def _row(
    kind: str, criterion: str, response: BaseModel, overall: float | None, **extra: Any
) -> EvaluationRow:
    usage = getattr(response, "usage", None)
    return EvaluationRow(
        id=str(uuid.uuid4()),
        kind=kind,
        criterion=criterion,
        response=response.model_dump_json(),
        overall_score=overall,
        created_at=time.time(),
        judge_cost_usd=usage.cost_usd if usage is not None else None,
        **extra,
    )


def _criterion(request: RewardRequest | TraceRewardRequest) -> str:
    return request.evaluation_criteria or f"evaluator:{request.evaluator_name}"


def _reward_outcome(request: RewardRequest, response: EvaluationResponse) -> Outcome:
    keep = request.data_retention != "none"
    rows = [
        _row(
            "reward",
            _criterion(request),
            response,
            response.score,
            tags=dict(request.tags or {}),
            trace_id=request.trace_id,
        )
    ]
    return Outcome(response.model_dump(mode="json"), evaluations=rows if keep else ())


def _trace_outcome(request: TraceRewardRequest, response: MultiAgentTraceResponse) -> Outcome:
    if request.data_retention == "none":
        return Outcome(response.model_dump(mode="json"))
    trace_id = _trace_id(request)
    row = _row(
        "trace",
        _criterion(request),
        response,
        response.overall_score,
        trace_id=trace_id,
        tags=dict(request.tags or {}),
    )
    return Outcome(
        response.model_dump(mode="json"), evaluations=[row], trace=trace_summary(trace_id, request)
    )


async def _reward(context: ServerContext, request: RewardRequest) -> Outcome:
    response = await context.service.evaluate(request)
    # What is stored and answered is encoded off the event loop, as the request was read.
    return await context.offload.run(_reward_outcome, request, response)


async def _trace(context: ServerContext, request: TraceRewardRequest) -> Outcome:
    response = await context.service.evaluate_trace(request)
    return await context.offload.run(_trace_outcome, request, response)


def handlers(context: ServerContext) -> dict[str, Handler]:
    """The task handlers for background evaluations."""

    async def reward(payload: dict[str, Any]) -> Outcome:
        request = await context.offload.run(RewardRequest.model_validate, payload)
        return await _reward(context, request)

    async def trace(payload: dict[str, Any]) -> Outcome:
        request = await context.offload.run(TraceRewardRequest.model_validate, payload)
        return await _trace(context, request)

    return {"reward": reward, "trace": trace}


async def _store(context: ServerContext, outcome: Outcome) -> None:
    if outcome.trace is not None:
        await in_thread(context.store.traces.save, outcome.trace, outcome.evaluations)
    elif outcome.evaluations:
        await in_thread(context.store.evaluations.save, outcome.evaluations)


async def _evaluate(request: Request, kind: str) -> JSONResponse:
    context = context_of(request)
    model: type[RewardRequest] | type[TraceRewardRequest] = (
        RewardRequest if kind == "reward" else TraceRewardRequest
    )
    parsed = await read_model(request, model)
    try:
        if isinstance(parsed, RewardRequest):
            outcome = await _reward(context, parsed)
        else:
            outcome = await _trace(context, parsed)
    except Exception as error:
        raise service_error(error) from None
    await _store(context, outcome)
    return await context.offload.run(JSONResponse, outcome.result)


async def _background(request: Request, kind: str) -> JSONResponse:
    context = context_of(request)
    model: type[RewardRequest] | type[TraceRewardRequest] = (
        RewardRequest if kind == "reward" else TraceRewardRequest
    )
    parsed = await read_model(request, model)
    payload = await context.offload.run(functools.partial(parsed.model_dump, mode="json"))
    task_id = await context.runner.submit(kind, payload)
    return JSONResponse({"task_id": task_id}, status_code=202)


async def reward(request: Request) -> JSONResponse:
    return await _evaluate(request, "reward")


async def reward_background(request: Request) -> JSONResponse:
    return await _background(request, "reward")


async def trace(request: Request) -> JSONResponse:
    return await _evaluate(request, "trace")


async def trace_background(request: Request) -> JSONResponse:
    return await _background(request, "trace")


async def get_task(request: Request) -> JSONResponse:
    context = context_of(request)
    task_id = request.path_params["task_id"]
    row = await in_thread(context.store.tasks.get, task_id)
    if row is None:
        raise ApiError(
            404,
            f"no task {task_id!r} here: it was never submitted to this server, or it finished "
            f"more than {context.config.task_retention_hours:g} hours ago and was removed",
        )
    return await context.offload.run(_task_answer, row)


def _task_answer(row: TaskRow) -> JSONResponse:
    """A task's status and result, decoded and encoded off the event loop (a result may be
    the answer for a trace of thousands of agents)."""
    answer = TaskResponse(
        task_id=row.id,
        status=row.status,
        result=json.loads(row.result) if row.result is not None else None,
        error=row.error,
    )
    return JSONResponse(answer.model_dump(mode="json"))


def _judged(summary: str, body: str, ok: dict[str, Any], status: str = "200") -> Operation:
    """An evaluation: a JSON body, judged now or stored as a task."""
    return Operation(summary, {status: ok}, errors=JUDGED_ERRORS, body=body, changes=True)


_STORED = answer("The task was stored", "TaskAccepted")

routes = [
    ApiRoute(
        "/api/v1/evals/reward",
        reward,
        methods=["POST"],
        operation=_judged(
            "Evaluate a conversation", "RewardRequest", answer("The score", "EvaluationResponse")
        ),
    ),
    ApiRoute(
        "/api/v1/evals/reward/background",
        reward_background,
        methods=["POST"],
        operation=_judged(
            "Evaluate a conversation in the background", "RewardRequest", _STORED, "202"
        ),
    ),
    ApiRoute(
        "/api/v1/evals/trace",
        trace,
        methods=["POST"],
        operation=_judged(
            "Evaluate a multi-agent trace",
            "TraceRewardRequest",
            answer("Scores per agent", "MultiAgentTraceResponse"),
        ),
    ),
    ApiRoute(
        "/api/v1/evals/trace/background",
        trace_background,
        methods=["POST"],
        operation=_judged(
            "Evaluate a trace in the background", "TraceRewardRequest", _STORED, "202"
        ),
    ),
    ApiRoute(
        "/api/v1/tasks/{task_id}",
        get_task,
        methods=["GET"],
        operation=Operation(
            "A background task's status, with its result or error",
            {"200": answer("The task", "TaskResponse")},
            errors=(404,),
        ),
    ),
]
