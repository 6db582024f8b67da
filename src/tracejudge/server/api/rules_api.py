"""`/api/v1/rules`: the evaluation rules, made, read, changed and deleted through the API, and
backfilled onto stored traces.

- `GET /api/v1/rules`: every rule, with where it came from (`file`: the `--rules` file,
  changed only there; `api`), its revision and how many traces it scored and sampled out.
- `POST /api/v1/rules` (a `RuleBody`): a new rule; 409 when the name is taken.
- `GET|PUT|DELETE /api/v1/rules/{name}`: one rule; PUT replaces it (its revision goes up),
  for the traces completed from then on. A file rule answers 409 to PUT and DELETE.
- `POST /api/v1/rules/{name}/backfill` (`BackfillRequest`): the rule's criteria for stored
  traces it never decided for, newest first, at most `limit` of them (10,000 at most a
  call); answers how many were queued and sampled out, and whether more are left.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from typing_extensions import TypedDict

from tracejudge.server.api.evals import read_model
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.operation import ApiRoute, Operation, answer
from tracejudge.server.store import RuleRow, RuleSourceError, RuleTally, Store
from tracejudge.server.work.context import context_of, in_thread
from tracejudge.server.work.rules.apply import Backfilled, active_rules, backfill
from tracejudge.server.work.rules.model import RuleBody
from tracejudge.server.work.rules.plan import ActiveRule

__all__ = [
    "BackfillAnswer",
    "BackfillRequest",
    "MAX_BACKFILL",
    "RuleAnswer",
    "RuleList",
    "routes",
    "rule_answer",
]

#: The most traces one backfill call queues.
MAX_BACKFILL = 10_000


class BackfillRequest(BaseModel):
    """Body of POST /api/v1/rules/{name}/backfill: how many stored traces at most, and the
    window of their start times (Unix seconds; `until` excluded)."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=1000, ge=1, le=MAX_BACKFILL)
    since: float | None = Field(default=None, ge=0)
    until: float | None = Field(default=None, ge=0)


class RuleAnswer(TypedDict):
    """A stored rule."""

    rule: RuleBody
    source: Literal["file", "api"]
    revision: int
    created_at: float
    updated_at: float
    #: Traces it scored, sampled out and left unjudged over its budget, so far.
    scored: int
    sampled_out: int
    over_budget: int


class RuleList(TypedDict):
    """GET /api/v1/rules."""

    rules: list[RuleAnswer]


class BackfillAnswer(TypedDict):
    """What a backfill did: traces queued, decided out of the sample, looked at; `capped`:
    it stopped at its limit and more stored traces may be left (call it again)."""

    rule: str
    queued: int
    sampled_out: int
    scanned: int
    capped: bool


def rule_answer(row: RuleRow, tally: RuleTally | None = None) -> RuleAnswer:
    tally = tally or RuleTally()
    return {
        "rule": RuleBody.model_validate_json(row.body),
        "source": "file" if row.source == "file" else "api",
        "revision": row.revision,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "scored": tally.scored,
        "sampled_out": tally.sampled_out,
        "over_budget": tally.over_budget,
    }


def _json(value: RuleAnswer | RuleList, status: int = 200) -> JSONResponse:
    return JSONResponse(to_jsonable_python(value), status_code=status)


def _name(request: Request) -> str:
    return str(request.path_params["name"])


def _judged(request: Request, body: RuleBody) -> None:
    if body.judged and body.enabled and context_of(request).judge_label is None:
        raise ApiError(
            400,
            f"rule {body.name!r} gives judge criteria, but this server has no judge (its "
            "operator sets --judge): leave the criteria out, or set enabled to false",
        )


def _file_owned(name: str) -> ApiError:
    return ApiError(
        409,
        f"rule {name!r} comes from the server's --rules file: change it there (the server "
        "reads the file at start)",
    )


async def list_rules(request: Request) -> JSONResponse:
    store = context_of(request).store
    rows = await in_thread(store.rules.all)
    tallies = await in_thread(store.decisions.tallies)
    return _json({"rules": [rule_answer(r, tallies.get(r.name)) for r in rows]})


async def create_rule(request: Request) -> JSONResponse:
    body = await read_model(request, RuleBody)
    _judged(request, body)
    made = await in_thread(
        context_of(request).store.rules.create, body.name, body.model_dump_json()
    )
    if made is None:
        raise ApiError(
            409, f"a rule named {body.name!r} exists: change it with PUT /api/v1/rules/{body.name}"
        )
    return _json(rule_answer(made), status=201)


async def _stored(request: Request) -> RuleRow:
    name = _name(request)
    row = await in_thread(context_of(request).store.rules.get, name)
    if row is None:
        raise ApiError(404, f"no rule named {name!r}; GET /api/v1/rules lists them")
    return row


async def get_rule(request: Request) -> JSONResponse:
    row = await _stored(request)
    tallies = await in_thread(context_of(request).store.decisions.tallies)
    return _json(rule_answer(row, tallies.get(row.name)))


async def put_rule(request: Request) -> JSONResponse:
    name = _name(request)
    body = await read_model(request, RuleBody)
    if body.name != name:
        raise ApiError(
            422,
            f"name: the path names rule {name!r}, the body {body.name!r}; a rule keeps its "
            "name (make a new one with POST /api/v1/rules)",
            errors=[{"loc": ["body", "name"], "msg": "not the path's name", "type": "value_error"}],
        )
    _judged(request, body)
    try:
        row = await in_thread(context_of(request).store.rules.update, name, body.model_dump_json())
    except RuleSourceError:
        raise _file_owned(name) from None
    if row is None:
        raise ApiError(404, f"no rule named {name!r}; make it with POST /api/v1/rules")
    return _json(rule_answer(row))


async def delete_rule(request: Request) -> Response:
    name = _name(request)
    try:
        deleted = await in_thread(context_of(request).store.rules.delete, name)
    except RuleSourceError:
        raise _file_owned(name) from None
    if not deleted:
        raise ApiError(404, f"no rule named {name!r}; GET /api/v1/rules lists them")
    return Response(status_code=204)


async def backfill_rule(request: Request) -> JSONResponse:
    context = context_of(request)
    asked = await read_model(request, BackfillRequest)
    row = await _stored(request)
    rule = next(
        (r for r in await in_thread(active_rules, context.store) if r.name == row.name), None
    )
    if rule is None:  # stored, but no longer readable
        raise ApiError(409, f"rule {row.name!r} cannot be read; replace it with PUT")
    _judged(request, rule.body)
    if not rule.body.criteria:
        raise ApiError(
            409,
            f"rule {row.name!r} has no judge criteria to backfill (the checks ran on every "
            "trace when it completed)",
        )
    done: Backfilled = await in_thread(_backfill, context.store, rule, asked)
    if done.queued:
        context.runner.wake()
    found: BackfillAnswer = {
        "rule": rule.name,
        "queued": len(done.queued),
        "sampled_out": done.sampled_out,
        "scanned": done.scanned,
        "capped": done.capped,
    }
    return JSONResponse(found, status_code=202)


def _backfill(store: Store, rule: ActiveRule, asked: BackfillRequest) -> Backfilled:
    return backfill(store, rule, asked.limit, asked.since, asked.until)


_ONE = "/api/v1/rules/{name}"
routes = [
    ApiRoute(
        "/api/v1/rules",
        list_rules,
        methods=["GET"],
        operation=Operation(
            "The evaluation rules, with what each decided so far",
            {"200": answer("The rules", "RuleList")},
        ),
    ),
    ApiRoute(
        "/api/v1/rules",
        create_rule,
        methods=["POST"],
        operation=Operation(
            "Make a rule: it applies to the traces completed from now on",
            {"201": answer("The rule, stored", "RuleAnswer")},
            errors=(400, 409, 415, 422),
            body="RuleBody",
            changes=True,
        ),
    ),
    ApiRoute(
        _ONE,
        get_rule,
        methods=["GET"],
        operation=Operation("One rule", {"200": answer("The rule", "RuleAnswer")}, errors=(404,)),
    ),
    ApiRoute(
        _ONE,
        put_rule,
        methods=["PUT"],
        operation=Operation(
            "Replace a rule made through the API (for the traces completed from now on)",
            {"200": answer("The rule, stored", "RuleAnswer")},
            errors=(400, 404, 409, 415, 422),
            body="RuleBody",
            changes=True,
        ),
    ),
    ApiRoute(
        _ONE,
        delete_rule,
        methods=["DELETE"],
        operation=Operation(
            "Delete a rule made through the API (its decisions on traces stay)",
            {"204": {"description": "Deleted"}},
            errors=(404, 409),
            changes=True,
        ),
    ),
    ApiRoute(
        _ONE + "/backfill",
        backfill_rule,
        methods=["POST"],
        operation=Operation(
            "Run a rule's judge criteria on stored traces it never decided for (capped)",
            {"202": answer("What was queued", "BackfillAnswer")},
            errors=(400, 404, 409, 415, 422),
            body="BackfillRequest",
            changes=True,
            description="Newest first, the traces its filter keeps and its sample picks, "
            "at most `limit` (10,000 a call); those its sample leaves out are recorded as "
            "sampled out. `capped`: more stored traces may be left; call it again.",
        ),
    ),
]
