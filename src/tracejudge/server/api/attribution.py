"""Attribution on the server: which agent and step caused a trace's failure.

- `GET /api/v1/traces/{trace_id}/attribution`: a stored trace's ranked causes
  (`tracejudge.models.Attribution`) from its latest answer per criterion. By default the
  deterministic one (`method=checks`: the checks' findings with their steps, then agents
  that failed a criterion; no judge, nothing spent). `method=` (repeated, or
  comma-separated) picks judge methods too (`all_at_once`, `step_by_step`,
  `binary_search`, `counterfactual`) when the server has a judge: each judge call counts
  against the server's judge budgets, and once they are spent the answer says so in its
  notes. `outcome=` says what went wrong in words, `failed=true|false` gives the
  caller's word, `max_step_chars=` bounds what the judge sees of one message. An
  attribution made with a judge is stored as the trace's latest and answered again for
  the same methods until the trace is scored anew (`fresh=true` makes a new one).
- `POST /api/v1/attribution` `{"trace", "methods"?, "criteria"?, "checks"?,
  "responses"?, "outcome"?, "failed"?, "max_step_chars"?}`: the same for a trace sent in
  the body (what a client of this server calls for `attribute`); nothing is stored.

`page_attribution` is what the trace page shows: the stored attribution while it is
newer than the trace's answers, else the deterministic one when the trace failed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse

from tracejudge.errors import BadRequestError
from tracejudge.evaluation.attribution import AttributionRequest, from_answers
from tracejudge.models import (
    ATTRIBUTION_METHODS,
    Attribution,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    TraceVerdict,
)
from tracejudge.server.api.evals import read_model, service_error
from tracejudge.server.api.traces import stored_trace
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.operation import (
    JUDGED_ERRORS,
    ApiRoute,
    Operation,
    answer,
    query,
    text_query,
)
from tracejudge.server.store import AttributionRow, EvaluationRow
from tracejudge.server.store.stored import latest_answers, read_trace
from tracejudge.server.work.context import ServerContext, context_of, in_thread
from tracejudge.server.work.scoring import resolve_criteria

__all__ = ["ATTRIBUTION_PATH", "AttributionBody", "page_attribution", "routes"]

ATTRIBUTION_PATH = "/api/v1/attribution"
#: Characters of `outcome` taken (a sentence or a paragraph, not a document).
MAX_OUTCOME = 4000


class AttributionBody(BaseModel):
    """Body of POST /api/v1/attribution: a trace and how to attribute its failure (the
    fields of `tracejudge.evaluation.attribution.AttributionRequest`; criteria as texts
    and built-in checks by name)."""

    model_config = ConfigDict(extra="forbid")

    trace: MultiAgentTrace
    methods: list[str] = Field(default_factory=lambda: ["checks"], min_length=1, max_length=8)
    criteria: list[str] | None = Field(default=None, max_length=64)
    checks: list[str] | None = Field(default=None, max_length=64)
    responses: list[MultiAgentTraceResponse] | None = Field(default=None, max_length=128)
    outcome: str | None = Field(default=None, max_length=MAX_OUTCOME)
    failed: bool | None = None
    max_step_chars: int | None = Field(default=None, ge=100, le=100_000)


def page_attribution(
    trace: MultiAgentTrace,
    responses: Sequence[MultiAgentTraceResponse],
    evaluations: Sequence[EvaluationRow],
    stored: AttributionRow | None,
) -> Attribution | None:
    """What the trace page shows: `stored` while it is newer than every answer the trace
    has, else the deterministic attribution of `responses` when they fail the trace;
    None when there is nothing to show."""
    if stored is not None and _fresh(stored, evaluations):
        return Attribution.model_validate_json(stored.body)
    if not responses or not TraceVerdict.of(responses).failed:
        return None
    return from_answers(trace, responses)


def _fresh(stored: AttributionRow, evaluations: Sequence[EvaluationRow]) -> bool:
    return all(row.created_at <= stored.created_at for row in evaluations)


def _query_error(name: str, message: str) -> ApiError:
    return ApiError(
        422,
        f"query parameter {name}: {message}",
        errors=[{"loc": ["query", name], "msg": message, "type": "value_error"}],
    )


def _methods(request: Request) -> list[str]:
    given = [
        part.strip()
        for value in request.query_params.getlist("method")
        for part in value.split(",")
        if part.strip()
    ]
    for method in given:
        if method not in ATTRIBUTION_METHODS:
            raise _query_error(
                "method", f"unknown method {method!r}; use {', '.join(ATTRIBUTION_METHODS)}"
            )
    return list(dict.fromkeys(given)) or ["checks"]


def _flag(request: Request, name: str) -> bool | None:
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    if text.lower() not in ("true", "false"):
        raise _query_error(name, f"{text!r} is not true or false")
    return text.lower() == "true"


def _max_step_chars(request: Request) -> int | None:
    text = request.query_params.get("max_step_chars")
    if text is None or text == "":
        return None
    if not text.isdigit() or not 100 <= int(text) <= 100_000:
        raise _query_error("max_step_chars", f"{text!r} is not a whole number from 100 to 100000")
    return int(text)


def _outcome(request: Request) -> str | None:
    text = request.query_params.get("outcome") or None
    if text is not None and len(text) > MAX_OUTCOME:
        raise _query_error("outcome", f"longer than {MAX_OUTCOME} characters; say it shorter")
    return text


def _needs_judge(context: ServerContext, methods: Sequence[str], texts: bool) -> None:
    judged = [m for m in methods if m != "checks"]
    if context.judge_label is None and (judged or texts):
        what = f"the methods {', '.join(judged)}" if judged else "text criteria"
        raise ApiError(
            400,
            f"{what} need a judge, and this server has none: start the server with "
            "--judge, or use method=checks, the deterministic attribution",
        )


async def _attribute(context: ServerContext, request: AttributionRequest) -> Attribution:
    try:
        return await context.service.attribute(request)
    except Exception as error:
        raise service_error(error) from None


def _request(
    trace: MultiAgentTrace, methods: list[str], max_step_chars: int | None, **given: Any
) -> AttributionRequest:
    if max_step_chars is not None:
        given["max_step_chars"] = max_step_chars
    request = AttributionRequest(trace=trace, methods=methods, **given)
    try:
        request.checked_methods()
    except BadRequestError as error:
        raise ApiError(422, error.message) from None
    return request


def _stored_answer(body: str) -> JSONResponse:
    return JSONResponse(json.loads(body))


def _answer(attribution: Attribution) -> JSONResponse:
    """An attribution as JSON, encoded in a worker thread (it quotes the trace's steps)."""
    return JSONResponse(attribution.model_dump(mode="json"))


async def get_attribution(request: Request) -> JSONResponse:
    context = context_of(request)
    methods = _methods(request)
    outcome, failed = _outcome(request), _flag(request, "failed")
    max_step_chars, fresh = _max_step_chars(request), _flag(request, "fresh")
    _needs_judge(context, methods, texts=False)
    row = await stored_trace(request)
    if row.trace_json is None:
        raise ApiError(
            409,
            f"trace {row.trace_id!r} has not been converted yet (status {row.status}); "
            "attribute it once it is complete",
        )
    evaluations = await in_thread(context.store.evaluations.of_trace, row.trace_id)
    judged = methods != ["checks"]
    plain = outcome is None and failed is None and max_step_chars is None
    if judged and plain and not fresh:
        stored = await in_thread(context.store.attributions.latest, row.trace_id)
        if stored is not None and stored.methods == methods and _fresh(stored, evaluations):
            return await context.offload.run(_stored_answer, stored.body)
    trace = await context.offload.run(read_trace, row.trace_json)
    answers = await context.offload.run(latest_answers, evaluations)
    attribution = await _attribute(
        context,
        _request(
            trace,
            methods,
            max_step_chars,
            responses=answers or None,
            outcome=outcome,
            failed=failed,
        ),
    )
    if judged:
        text = await context.offload.run(attribution.model_dump_json)
        kept = AttributionRow(row.trace_id, methods, text, time.time())
        await in_thread(context.store.attributions.save, kept)
    return await context.offload.run(_answer, attribution)


async def post_attribution(request: Request) -> JSONResponse:
    context = context_of(request)
    body = await read_model(request, AttributionBody)
    criteria = None
    if body.criteria is not None or body.checks is not None:
        try:
            criteria = resolve_criteria(body.criteria or [], body.checks or [])
        except BadRequestError as error:
            raise ApiError(422, error.message) from None
    asked = _request(
        body.trace,
        body.methods,
        body.max_step_chars,
        criteria=criteria,
        responses=body.responses,
        outcome=body.outcome,
        failed=body.failed,
    )
    _needs_judge(context, body.methods, texts=bool(body.criteria))
    attribution = await _attribute(context, asked)
    return await context.offload.run(_answer, attribution)


_CAUSES = answer("The failure's causes, most likely first", "Attribution")

routes = [
    ApiRoute(
        "/api/v1/traces/{trace_id}/attribution",
        get_attribution,
        methods=["GET"],
        operation=Operation(
            "Which agent and step caused a stored trace's failure: deterministic by "
            "default; judge methods within the server's judge budget",
            {"200": _CAUSES},
            errors=(400, 404, 409, 422, 502, 503),
            parameters=[
                query(
                    "method",
                    {"type": "string", "enum": list(ATTRIBUTION_METHODS)},
                    "repeated or comma-separated; default checks (no judge)",
                ),
                text_query("outcome", "what went wrong"),
                query("failed", {"type": "boolean"}, "the caller's word: it failed"),
                query(
                    "max_step_chars",
                    {"type": "integer", "minimum": 100, "maximum": 100000},
                    "characters of one message a judge method shows",
                ),
                query("fresh", {"type": "boolean"}, "judge again, not the stored one"),
            ],
        ),
    ),
    ApiRoute(
        ATTRIBUTION_PATH,
        post_attribution,
        methods=["POST"],
        operation=Operation(
            "Which agent and step caused the failure of a trace sent in the body",
            {"200": _CAUSES},
            errors=JUDGED_ERRORS,
            body="AttributionBody",
            changes=True,
        ),
    ),
]
