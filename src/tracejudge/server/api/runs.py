"""Experiment runs stored on the server (`tracejudge run --to URL`, `experiment(to=URL)`).

- `POST /api/v1/runs` (`RunBody`): store a run's record (name, git commit and dirty flag,
  models seen, params, start and end, repeats, rows, criteria, cost); the client gives
  its `id` so that a retried upload stores it once (without one, the server makes one).
- `POST /api/v1/runs/{run_id}/rows` (`RunRowsBody`): store row results (a row and repeat
  each, its scores), each with the trace it scored and the answers it was scored with:
  the trace is stored with the others, tagged `run:ID` and `run_name:NAME`, so the trace
  list filters on a run (`/ui?tag=run:ID`) and shows its scores.
- `GET /api/v1/runs`: runs newest first (`name`: of that name), a page at a time.
- `GET /api/v1/runs/{run_id}`: the run: its record and its row results.
- `GET /api/v1/runs/compare?baseline=ID&candidate=ID`: the two runs compared
  (`tracejudge.experiments.compare_runs`, what `tracejudge compare` runs: per agent and
  criterion the paired difference, the exact test, the verdict) and the gate's result;
  `level`, `min_effect`, `min_rows`, `hard_break_repeats` as `tracejudge compare` takes
  them.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from typing_extensions import TypedDict

from tracejudge.experiments import Comparison, GatePolicy, StoredRun, compare_runs
from tracejudge.experiments.record import run_from_json
from tracejudge.models import (
    MAX_CRITERION_LENGTH,
    MAX_TAG_LENGTH,
    PLAIN_TEXT_SCHEMA,
    MultiAgentTrace,
    MultiAgentTraceResponse,
)
from tracejudge.server.api.evals import read_model
from tracejudge.server.http.errors import ApiError, validation_error
from tracejudge.server.http.list_query import page_limit, query_error
from tracejudge.server.http.operation import OBJECT, ApiRoute, Operation, answer, query, text_query
from tracejudge.server.store import (
    RUN_SOURCE,
    EvaluationRow,
    RunCursorError,
    RunResultRow,
    RunRow,
    TraceRow,
)
from tracejudge.server.work.context import context_of, in_thread

__all__ = [
    "COMPARE_PARAMETERS",
    "RUNS_PATH",
    "RunBody",
    "RunRowsBody",
    "load_run",
    "compared",
    "parse_policy",
    "routes",
    "run_page",
    "run_summary",
]

RUNS_PATH = "/api/v1/runs"
#: A run id: what the client makes (a UUID's hex) or a name of the same alphabet.
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
#: Not a run id: the comparison's path.
_RESERVED = "compare"
#: The most row results one request stores.
MAX_ROWS_PER_REQUEST = 500

_Text = Annotated[str, Field(max_length=500, json_schema_extra=PLAIN_TEXT_SCHEMA)]
_Long = Annotated[str, Field(max_length=MAX_CRITERION_LENGTH, json_schema_extra=PLAIN_TEXT_SCHEMA)]
#: An explanation, an error: what a judge or a task said, at most this long (a NUL in it
#: is stored as U+FFFD, as in every stored text).
_Note = Annotated[str, Field(max_length=100_000)]
_Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
_Number = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class GitState(BaseModel):
    """The git commit the run was made at, and whether the work tree had changes."""

    model_config = ConfigDict(extra="ignore")

    commit: str | None = Field(default=None, max_length=100, json_schema_extra=PLAIN_TEXT_SCHEMA)
    dirty: bool | None = None


class RunBody(BaseModel):
    """Body of POST /api/v1/runs: a run's record (fields a newer client adds are kept out).
    `params` and `cost` are objects of any JSON the client recorded."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    name: str = Field(min_length=1, max_length=200, json_schema_extra=PLAIN_TEXT_SCHEMA)
    started_at: str = Field(default="", max_length=64, json_schema_extra=PLAIN_TEXT_SCHEMA)
    ended_at: str | None = Field(default=None, max_length=64, json_schema_extra=PLAIN_TEXT_SCHEMA)
    git: GitState = Field(default_factory=GitState)
    models: list[_Text] = Field(default_factory=list, max_length=100)
    params: dict[str, Any] = Field(default_factory=dict, json_schema_extra={"type": "object"})
    repeats: int = Field(default=1, ge=1, le=100_000)
    rows: int = Field(default=0, ge=0, le=100_000_000)
    criteria: list[_Long] = Field(default_factory=list, max_length=100)
    cost: dict[str, Any] = Field(default_factory=dict, json_schema_extra={"type": "object"})
    format: int = Field(default=1, ge=1, le=1000)


class AgentScoreBody(BaseModel):
    """One agent name's verdict on one criterion for one row."""

    model_config = ConfigDict(extra="forbid")

    agent: _Text
    criterion: _Long
    score: _Share | None = None
    bar: _Share = 0.5
    passed: bool | None = None
    explanation: _Note = ""


class RowResultBody(BaseModel):
    """One run of the task on one row (one repeat) and its scores."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=500, json_schema_extra=PLAIN_TEXT_SCHEMA)
    repeat: int = Field(default=0, ge=0, le=100_000)
    input: Any = None
    expected: Any = None
    output: Any = None
    seconds: _Number = 0.0
    scores: list[AgentScoreBody] = Field(default_factory=list, max_length=10_000)
    error: _Note | None = None
    trace_id: str | None = Field(
        default=None, min_length=1, max_length=200, json_schema_extra=PLAIN_TEXT_SCHEMA
    )
    models: list[_Text] = Field(default_factory=list, max_length=100)
    judge_cost_usd: _Number | None = None


class RowUploadBody(BaseModel):
    """A row result, the trace it scored (a `MultiAgentTrace`) and the answers it was
    scored with (`MultiAgentTraceResponse`s). The trace and the answers are described as
    objects and read when the row is stored (422 naming what is wrong): a document that
    spelled them out would be most of the API's."""

    model_config = ConfigDict(extra="forbid")

    result: RowResultBody
    trace: dict[str, Any] | None = None
    evaluations: list[dict[str, Any]] = Field(default_factory=list, max_length=1000)


class RunRowsBody(BaseModel):
    """Body of POST /api/v1/runs/{run_id}/rows."""

    model_config = ConfigDict(extra="forbid")

    rows: list[RowUploadBody] = Field(min_length=1, max_length=MAX_ROWS_PER_REQUEST)
    #: The place of the first row in the run (default: after the results stored so far).
    first: int | None = Field(default=None, ge=0, le=100_000_000)


class RunSummary(TypedDict):
    """A stored run: its id, name, when it started and ended, its git commit, how many
    rows and repeats it has and how many row results are stored, and its page."""

    id: str
    name: str
    started_at: str
    ended_at: str | None
    commit: str | None
    dirty: bool | None
    models: list[str]
    rows: int
    repeats: int
    results: int
    page: str
    traces: str


class RunList(TypedDict):
    """GET /api/v1/runs."""

    runs: list[RunSummary]
    next_cursor: str | None


class StoredRunAnswer(TypedDict):
    """GET /api/v1/runs/{run_id}: the summary, the record as the client sent it, and
    every row result (the run's order)."""

    run: RunSummary
    record: dict[str, Any]
    results: list[dict[str, Any]]


class RowsStored(TypedDict):
    """POST /api/v1/runs/{run_id}/rows: how many row results (and traces) were stored."""

    stored: int
    traces: int


def finite(value: Any) -> Any:
    """`value` with every number JSON cannot carry (NaN, infinity: Python's json reads
    them) as None, so that what is stored can be answered."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def run_page(run_id: str) -> str:
    """The address of a run's page."""
    return f"/ui/runs/{run_id}"


def run_summary(row: RunRow) -> RunSummary:
    """A stored run as the API lists it."""
    record = json.loads(row.record)
    git = record.get("git") if isinstance(record.get("git"), dict) else {}
    return {
        "id": row.id,
        "name": row.name,
        "started_at": str(record.get("started_at") or ""),
        "ended_at": record.get("ended_at"),
        "commit": git.get("commit"),
        "dirty": git.get("dirty"),
        "models": [str(m) for m in record.get("models") or []],
        "rows": int(record.get("rows") or 0),
        "repeats": int(record.get("repeats") or 1),
        "results": row.results,
        "page": run_page(row.id),
        "traces": f"/ui?tag=run:{row.id}",
    }


def _path_id(request: Request) -> str:
    return str(request.path_params["run_id"])


async def _stored(request: Request, run_id: str) -> RunRow:
    row = await in_thread(context_of(request).store.runs.get, run_id)
    if row is None:
        raise ApiError(404, f"no run {run_id!r} is stored here (the runs: GET {RUNS_PATH})")
    return row


async def post_run(request: Request) -> JSONResponse:
    body = await read_model(request, RunBody)
    run_id = body.id or uuid.uuid4().hex
    if run_id == _RESERVED:
        raise ApiError(
            422,
            f"id: {_RESERVED!r} names the comparison's path; choose another id",
            errors=[{"loc": ["body", "id"], "msg": "reserved", "type": "value_error"}],
        )
    record = finite(body.model_dump(exclude={"id"}))
    row = RunRow(run_id, body.name, json.dumps(record), time.time())
    await in_thread(context_of(request).store.runs.save, row)
    stored = await _stored(request, run_id)
    return JSONResponse(run_summary(stored), status_code=201)


_TRACE = TypeAdapter(MultiAgentTrace)
_ANSWERS = TypeAdapter(list[MultiAgentTraceResponse])


def _read(adapter: TypeAdapter[Any], data: Any, where: tuple[str | int, ...]) -> Any:
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        raise validation_error(exc, prefix=where) from None


def _trace_row(
    run: RunRow, upload: RowUploadBody, number: int, now: float
) -> tuple[TraceRow, list[EvaluationRow]] | None:
    """The row's trace as the trace list keeps it, tagged with the run, and its answers."""
    if upload.trace is None:
        return None
    where = ("body", "rows", number)
    trace: MultiAgentTrace = _read(_TRACE, upload.trace, (*where, "trace"))
    responses: list[MultiAgentTraceResponse] = _read(
        _ANSWERS, upload.evaluations, (*where, "evaluations")
    )
    result = upload.result
    trace_id = result.trace_id or trace.trace_id or f"run-{run.id}-{uuid.uuid4().hex[:16]}"
    times = [
        i.start_time
        for agent in trace.iter_agents()
        for i in agent.llm_interactions
        if i.start_time is not None
    ]
    row = TraceRow(
        trace_id=trace_id,
        source=RUN_SOURCE,
        status="scored",
        first_seen=now,
        last_span_at=now,
        start_time=min(times) if times else None,
        root_agent=trace.root.name,
        agents=[agent.name for agent in trace.iter_agents()],
        trace_json=trace.to_json(),
        tags={"run": run.id, "run_name": run.name[:MAX_TAG_LENGTH]},
    )
    answers = [
        EvaluationRow(
            id=f"{trace_id}-{number}-{uuid.uuid4().hex[:12]}",
            kind="trace",
            criterion=response.criterion or f"criterion {number + 1}",
            response=response.model_dump_json(),
            overall_score=response.overall_score,
            created_at=now,
            trace_id=trace_id,
            source=RUN_SOURCE,
            judge_cost_usd=response.usage.cost_usd if response.usage is not None else None,
        )
        for number, response in enumerate(responses)
    ]
    return row, answers


def _rows(
    run: RunRow, body: RunRowsBody, first: int
) -> tuple[list[RunResultRow], list[tuple[TraceRow, list[EvaluationRow]]]]:
    now = time.time()
    results: list[RunResultRow] = []
    traces: list[tuple[TraceRow, list[EvaluationRow]]] = []
    for offset, upload in enumerate(body.rows):
        stored = _trace_row(run, upload, offset, now)
        result = finite(upload.result.model_dump(mode="json"))
        if stored is not None:
            traces.append(stored)
            result["trace_id"] = stored[0].trace_id
        results.append(
            RunResultRow(
                run.id,
                upload.result.id,
                upload.result.repeat,
                first + offset,
                json.dumps(result),
                result["trace_id"],
            )
        )
    return results, traces


async def post_rows(request: Request) -> JSONResponse:
    context = context_of(request)
    run = await _stored(request, _path_id(request))
    body = await read_model(request, RunRowsBody)
    keys = [(r.result.id, r.result.repeat) for r in body.rows]
    if len(set(keys)) != len(keys):
        raise ApiError(
            422,
            "rows: two rows have the same id and repeat; send each row and repeat once",
            errors=[{"loc": ["body", "rows"], "msg": "duplicate row", "type": "value_error"}],
        )
    first = body.first if body.first is not None else run.results
    results, traces = await context.offload.run(_rows, run, body, first)
    await in_thread(context.store.runs.add_results, results, traces)
    return JSONResponse({"stored": len(results), "traces": len(traces)})


async def list_runs(request: Request) -> JSONResponse:
    limit = page_limit(request.query_params.get("limit"))
    name = request.query_params.get("name") or None
    try:
        page = await in_thread(
            lambda: context_of(request).store.runs.page(
                limit, request.query_params.get("cursor") or None, name=name
            )
        )
    except RunCursorError as exc:
        raise query_error("cursor", str(exc)) from None
    return JSONResponse({"runs": [run_summary(r) for r in page.runs], "next_cursor": page.cursor})


async def load_run(request: Request, run_id: str) -> tuple[RunRow, StoredRun, list[Any]]:
    """The stored run `run_id` (404 when unknown): its row, as a `StoredRun`, and its row
    results as JSON."""
    context = context_of(request)
    row = await _stored(request, run_id)
    results = await in_thread(context.store.runs.results, run_id)
    return await context.offload.run(_as_run, row, results)


def _as_run(row: RunRow, results: Sequence[RunResultRow]) -> tuple[RunRow, StoredRun, list[Any]]:
    lines = [json.loads(r.result) for r in results]
    run = run_from_json(
        json.loads(row.record), lines, url=run_page(row.id), where=f"run {row.id!r}"
    )
    return row, run, lines


async def get_run(request: Request) -> JSONResponse:
    row, _, lines = await load_run(request, _path_id(request))
    answer_body: StoredRunAnswer = {
        "run": run_summary(row),
        "record": json.loads(row.record),
        "results": lines,
    }
    return JSONResponse(answer_body)


def _number(request: Request, name: str, default: float, low: float, high: float) -> float:
    text = request.query_params.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not low <= value <= high:
        raise query_error(name, f"{text!r} is not a number from {low:g} to {high:g}")
    return value


def parse_policy(request: Request) -> GatePolicy:
    """The comparison's gate from the query (`tracejudge compare`'s defaults), 422 naming
    a parameter out of range."""
    level = _number(request, "level", 0.05, 1e-9, 1 - 1e-9)
    min_effect = _number(request, "min_effect", 0.05, 0.0, 1.0)
    min_rows = _number(request, "min_rows", 10, 1, 1_000_000)
    hard = _number(request, "hard_break_repeats", 3, 1, 100_000)
    return GatePolicy(
        level=level,
        min_effect=min_effect,
        min_rows=int(min_rows),
        hard_break_repeats=int(hard),
    )


def _run_query(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise query_error(name, f"give the {name} run's id")
    return value


async def compared(request: Request) -> tuple[Comparison, RunRow, RunRow]:
    """The runs the query names (`baseline`, `candidate`) compared under its policy."""
    policy = parse_policy(request)
    before_row, before, _ = await load_run(request, _run_query(request, "baseline"))
    after_row, after, _ = await load_run(request, _run_query(request, "candidate"))
    comparison = await context_of(request).offload.run(compare_runs, before, after, policy)
    return comparison, before_row, after_row


async def compare(request: Request) -> JSONResponse:
    comparison, _, _ = await compared(request)
    result, reasons = comparison.gate()
    report = comparison.as_dict()
    report["gate"] = {"result": result, "reasons": reasons}
    return JSONResponse(report)


#: The comparison's query parameters (the API's and the page's).
COMPARE_PARAMETERS = [
    text_query("baseline", "the id of the run compared against"),
    text_query("candidate", "the id of the new run"),
    query("level", {"type": "number"}, "the significance level (default 0.05)"),
    query("min_effect", {"type": "number"}, "the smallest drop that counts (default 0.05)"),
    query("min_rows", {"type": "integer"}, "fewer paired rows is inconclusive (default 10)"),
    query("hard_break_repeats", {"type": "integer"}, "repeats a hard break needs (default 3)"),
]

routes = [
    ApiRoute(
        RUNS_PATH,
        post_run,
        methods=["POST"],
        operation=Operation(
            "Store an experiment run's record (again: replaced)",
            {"201": answer("The run", "RunSummary")},
            errors=(415, 422),
            body="RunBody",
            changes=True,
        ),
    ),
    ApiRoute(
        RUNS_PATH,
        list_runs,
        methods=["GET"],
        operation=Operation(
            "Experiment runs, newest first",
            {"200": answer("A page of runs", "RunList")},
            errors=(422,),
            parameters=[
                text_query("name", "runs of this name only"),
                query("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "page size"),
                text_query("cursor", "the previous page's next_cursor"),
            ],
        ),
    ),
    ApiRoute(
        RUNS_PATH + "/compare",
        compare,
        methods=["GET"],
        operation=Operation(
            "Two runs compared per agent and criterion (paired, with the gate's result)",
            {"200": {"description": "The comparison", "content": OBJECT}},
            errors=(404, 422),
            parameters=COMPARE_PARAMETERS,
        ),
    ),
    ApiRoute(
        RUNS_PATH + "/{run_id}",
        get_run,
        methods=["GET"],
        operation=Operation(
            "One run: its record and every row result",
            {"200": answer("The run", "StoredRunAnswer")},
            errors=(404,),
        ),
    ),
    ApiRoute(
        RUNS_PATH + "/{run_id}/rows",
        post_rows,
        methods=["POST"],
        operation=Operation(
            "Store row results of a run, each with its trace and the answers it was scored "
            "with (again: replaced)",
            {"200": answer("How many were stored", "RowsStored")},
            errors=(404, 415, 422),
            body="RunRowsBody",
            changes=True,
        ),
    ),
]
