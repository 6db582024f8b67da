"""People's labels: a verdict per stored trace, agent and criterion, who and when.

- `POST /api/v1/labels` `{"trace_id", "agent_instance_id", "criterion", "stance", "score"?,
  "note"?, "who"?}`: record one. `stance` is "agree" or "disagree" with the verdict the
  trace's latest answer on that criterion gave that agent (pass when its score is at
  least its bar), or "score": the person's own score in 0..1 (`score`). Recording the
  same (trace, agent instance, criterion, person) again replaces it. Who: the name of
  the API key the request carries (see `auth`); a server without keys takes `who` from
  the body (the page's name field), and needs it.
- `POST /ui/traces/{trace_id}/labels`: the same from the trace page, which the browser
  sends with the credentials it signed in with; it takes only JSON from the page's own
  origin.
- `GET /api/v1/labels?trace_id=...`: the labels, newest first, `limit` (1..500, default
  50) at a time, the next page through `cursor`.
- `GET /api/v1/labels/export?trace_id=...`: every label as the labels file `tracejudge
  calibrate` reads (JSON lines of `tracejudge.models.HumanLabel`), oldest first.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tracejudge.models import HumanLabel, MultiAgentTraceResponse
from tracejudge.server.api.evals import read_model
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.list_query import page_limit
from tracejudge.server.http.operation import OBJECT, ApiRoute, Operation, query, text_query
from tracejudge.server.store import LabelCursorError, LabelRow
from tracejudge.server.work.context import context_of, in_thread

__all__ = ["LABELS_PATH", "LabelRequest", "label_json", "record", "routes"]

LABELS_PATH = "/api/v1/labels"
Stance = Literal["agree", "disagree", "score"]


class LabelRequest(BaseModel):
    """Body of POST /api/v1/labels (the page's POST leaves out `trace_id`: it is in the
    path)."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str | None = Field(default=None, min_length=1, max_length=200)
    agent_instance_id: str = Field(min_length=1, max_length=500)
    criterion: str = Field(min_length=1, max_length=4096)
    stance: Stance
    # 0..1, checked in `_verdict` so that a score out of range is answered in words ("a
    # score from 0 to 1") rather than as a validation message; the schema still says so.
    score: float | None = Field(default=None, json_schema_extra={"minimum": 0, "maximum": 1})
    note: str | None = Field(default=None, max_length=4000)
    who: str | None = Field(default=None, max_length=200)


def _field_error(field: str, message: str, status: int = 422) -> ApiError:
    return ApiError(
        status,
        f"{field}: {message}",
        errors=[{"loc": ["body", field], "msg": message, "type": "value_error"}],
    )


def _iso(moment: float) -> str:
    return (
        _dt.datetime.fromtimestamp(moment, _dt.timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def label_json(row: LabelRow) -> dict[str, Any]:
    """A stored label as the API answers it."""
    return {
        "id": row.id,
        "trace_id": row.trace_id,
        "agent": row.agent,
        "agent_instance_id": row.agent_instance_id,
        "criterion": row.criterion,
        "stance": row.stance,
        "verdict": row.verdict,
        "score": row.score,
        "judge_score": row.judge_score,
        "bar": row.bar,
        "note": row.note,
        "who": row.who,
        "when": _iso(row.created_at),
    }


def human_label(row: LabelRow) -> HumanLabel:
    """A stored label as a line of the labels file."""
    return HumanLabel(
        trace_id=row.trace_id,
        agent=row.agent,
        agent_instance_id=row.agent_instance_id,
        criterion=row.criterion,
        verdict=row.verdict,  # type: ignore[arg-type]  # a stored Verdict
        score=row.score,
        note=row.note,
        who=row.who,
        when=_iso(row.created_at),
    )


def _who(request: Request, given: str | None) -> str:
    key_name = request.scope.get("state", {}).get("key_name")
    if key_name is not None:
        if given is not None and given.strip() != key_name:
            raise _field_error(
                "who",
                f"this server names people by their API key ({key_name!r}); leave who out",
            )
        return str(key_name)
    if given is None or not given.strip():
        raise _field_error(
            "who", "give your name (this server has no API keys to tell people apart)"
        )
    return given.strip()


def _judged(rows: list[Any], criterion: str, instance: str) -> tuple[float | None, float | None]:
    """(the score, the bar) the trace's latest answer on `criterion` gave `instance`;
    (None, None) when the criterion was never scored on the trace."""
    latest = None
    for row in rows:  # oldest first
        if row.kind == "trace" and row.criterion == criterion:
            latest = row
    if latest is None:
        return None, None
    response = MultiAgentTraceResponse.model_validate_json(latest.response)
    for result in response.results_by_agent_name.values():
        answer = result.results_by_agent_instance_id.get(instance)
        if instance in result.results_by_agent_instance_id:
            return (answer.score if answer is not None else None), response.bar()
    return None, response.bar()


def _agent_name(trace_json: str, instance: str) -> str | None:
    agents = json.loads(trace_json).get("agent_instance_by_id") or {}
    agent = agents.get(instance)
    return str(agent.get("name")) if isinstance(agent, dict) else None


def _verdict(body: LabelRequest, judge_score: float | None, bar: float | None) -> str | None:
    if body.score is not None and not 0.0 <= body.score <= 1.0:
        raise _field_error("score", f"give a score from 0 to 1 ({body.score:g} is not one)")
    if body.stance == "score":
        if body.score is None:
            raise _field_error("score", 'give your score, from 0 to 1, with stance "score"')
        return None
    if body.score is not None:
        raise _field_error("score", 'give a score only with stance "score"')
    if judge_score is None or bar is None:
        raise _field_error(
            "stance",
            f"the trace's answers on {body.criterion[:80]!r} give agent instance "
            f"{body.agent_instance_id!r} no score to {body.stance} with; record your own "
            'score (stance "score")',
        )
    judged = "pass" if judge_score >= bar else "fail"
    if body.stance == "agree":
        return judged
    return "fail" if judged == "pass" else "pass"


def _label_id(trace_id: str, instance: str, criterion: str, who: str) -> str:
    key = "\0".join((trace_id, instance, criterion, who))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


async def record(request: Request, body: LabelRequest, trace_id: str) -> JSONResponse:
    """Check and store one label (see the module's docstring)."""
    context = context_of(request)
    who = _who(request, body.who)
    row = await in_thread(context.store.traces.get, trace_id)
    if row is None:
        raise ApiError(404, f"no trace {trace_id!r} is stored here")
    if row.trace_json is None:
        raise ApiError(409, f"trace {trace_id!r} has not been converted yet (status {row.status})")
    # The stored trace and its answers may be megabytes: read in a worker thread.
    agent = await context.offload.run(_agent_name, row.trace_json, body.agent_instance_id)
    if agent is None:
        raise _field_error(
            "agent_instance_id",
            f"trace {trace_id!r} has no agent instance {body.agent_instance_id!r}",
        )
    evaluations = await in_thread(context.store.evaluations.of_trace, trace_id)
    judge_score, bar = await context.offload.run(
        _judged, evaluations, body.criterion, body.agent_instance_id
    )
    verdict = _verdict(body, judge_score, bar)
    label = LabelRow(
        id=_label_id(trace_id, body.agent_instance_id, body.criterion, who),
        trace_id=trace_id,
        agent=agent,
        agent_instance_id=body.agent_instance_id,
        criterion=body.criterion,
        stance=body.stance,
        who=who,
        created_at=time.time(),
        verdict=verdict,
        score=body.score,
        judge_score=judge_score,
        bar=bar,
        note=(body.note or "").strip() or None,
    )
    await in_thread(context.store.labels.save, label)
    return JSONResponse(label_json(label), status_code=201)


async def post_label(request: Request) -> JSONResponse:
    body = await read_model(request, LabelRequest)
    if body.trace_id is None:
        raise _field_error("trace_id", "give the id of the stored trace the label is on")
    return await record(request, body, body.trace_id)


def _trace_id_query(request: Request) -> str | None:
    return request.query_params.get("trace_id") or None


async def list_labels(request: Request) -> JSONResponse:
    limit = page_limit(request.query_params.get("limit"))
    try:
        page = await in_thread(
            context_of(request).store.labels.page,
            _trace_id_query(request),
            limit,
            request.query_params.get("cursor") or None,
        )
    except LabelCursorError as exc:
        raise ApiError(
            422,
            f"query parameter cursor: {exc}",
            errors=[{"loc": ["query", "cursor"], "msg": str(exc), "type": "value_error"}],
        ) from None
    return JSONResponse(
        {"labels": [label_json(r) for r in page.labels], "next_cursor": page.cursor}
    )


async def export_labels(request: Request) -> Response:
    rows = await in_thread(context_of(request).store.labels.all, _trace_id_query(request))
    text = "".join(human_label(r).model_dump_json() + "\n" for r in rows)
    return Response(
        text,
        media_type="application/x-ndjson",
        headers={
            "Content-Disposition": 'attachment; filename="labels.jsonl"',
            "Cache-Control": "no-store",
        },
    )


_THIS_TRACE = text_query("trace_id", "this trace's only")

routes = [
    ApiRoute(
        LABELS_PATH,
        post_label,
        methods=["POST"],
        operation=Operation(
            "Record a person's label on one agent of a stored trace against one criterion: "
            "agree or disagree with its verdict, or their own score",
            {"201": {"description": "The label", "content": OBJECT}},
            errors=(404, 409, 415, 422),
            body="LabelRequest",
            changes=True,
        ),
    ),
    ApiRoute(
        LABELS_PATH,
        list_labels,
        methods=["GET"],
        operation=Operation(
            "People's labels, newest first",
            {"200": {"description": "A page of labels", "content": OBJECT}},
            errors=(422,),
            parameters=[
                _THIS_TRACE,
                query("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "page size"),
                text_query("cursor", "the previous page's next_cursor"),
            ],
        ),
    ),
    ApiRoute(
        LABELS_PATH + "/export",
        export_labels,
        methods=["GET"],
        operation=Operation(
            "Every label as the labels file `tracejudge calibrate` reads (JSON lines)",
            {
                "200": {
                    "description": "JSON lines of HumanLabel",
                    "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                }
            },
            errors=(422,),
            parameters=[_THIS_TRACE],
        ),
    ),
]
