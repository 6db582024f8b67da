"""The OpenAPI 3.1 description the app publishes at `/openapi.json`.

Every schema is generated from the types the routes use: the pydantic models they
validate request bodies with, and the models and typed dicts they build answers from
(`traces.TraceSummary`, `readiness.ReadyReport`, ...), so the document cannot drift from
what the endpoints take and give. What JSON Schema can say beyond the models' fields is
said here from the same sources: the evaluator names and check names the server knows,
the answers' error codes. A test fuzzes the live server with this document
(`tests/server/test_fuzz.py`, Schemathesis): no 5xx, every answer as described.

What a schema cannot say (a trace's root id must be one of its agents' ids, a cursor
must be one this server handed out) is answered 422 naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from tracejudge.models import (
    ATTRIBUTION_METHODS,
    PLAIN_TEXT_SCHEMA,
    Attribution,
    EvaluationResponse,
    MultiAgentTraceResponse,
    RewardRequest,
    TaskResponse,
    TraceRewardRequest,
)

__all__ = ["openapi_document"]

_REF = "#/components/schemas/{model}"
_PROTOBUF = "application/x-protobuf"


class ErrorAnswer(TypedDict, total=False):
    """An error: `detail` says what is wrong and how to fix it; `errors` one item per
    field (`loc`, `msg`, `type`) for validation errors."""

    detail: str
    errors: list[dict[str, Any]]


class TaskAccepted(TypedDict):
    """A background task was stored; read it with GET /api/v1/tasks/{task_id}."""

    task_id: str


class OTLPStatus(TypedDict):
    """An OTLP/HTTP error (google.rpc.Status in JSON)."""

    code: int
    message: str


class OTLPPartialSuccess(TypedDict, total=False):
    rejectedSpans: str
    errorMessage: str


class OTLPExportAnswer(TypedDict, total=False):
    """ExportTraceServiceResponse in JSON: empty, or the spans that were rejected."""

    partialSuccess: OTLPPartialSuccess


Mode = Literal["validation", "serialization"]


def _schemas() -> dict[str, Any]:
    from tracejudge.server.attribution import AttributionBody
    from tracejudge.server.health import Health
    from tracejudge.server.labels import LabelRequest
    from tracejudge.server.readiness import ReadyReport
    from tracejudge.server.traces import (
        EvaluationList,
        OverviewAnswer,
        RescoreRequest,
        StoredTrace,
        TraceList,
    )

    inputs: list[tuple[Any, Mode]] = [
        (RewardRequest, "validation"),
        (TraceRewardRequest, "validation"),
        (RescoreRequest, "validation"),
        (LabelRequest, "validation"),
        (AttributionBody, "validation"),
        (Attribution, "serialization"),
        (EvaluationResponse, "serialization"),
        (MultiAgentTraceResponse, "serialization"),
        (TaskResponse, "serialization"),
        (TaskAccepted, "serialization"),
        (TraceList, "serialization"),
        (OverviewAnswer, "serialization"),
        (StoredTrace, "serialization"),
        (EvaluationList, "serialization"),
        (Health, "serialization"),
        (ReadyReport, "serialization"),
        (ErrorAnswer, "serialization"),
        (OTLPStatus, "serialization"),
        (OTLPExportAnswer, "serialization"),
    ]
    _, document = TypeAdapter.json_schemas(
        [(kind, mode, TypeAdapter(kind)) for kind, mode in inputs], ref_template=_REF
    )
    schemas: dict[str, Any] = document.get("$defs", {})
    _known_names(schemas)
    return schemas


def _known_names(schemas: dict[str, Any]) -> None:
    """The names the server knows, as enums: `evaluator_name` (checks and ready-made
    criteria) and the re-score request's `checks`."""
    from tracejudge import checks
    from tracejudge.evaluation import criteria

    check_names = sorted(str(c.name) for c in checks.ALL)
    ready_made = [
        n
        for n in criteria.__all__
        if n not in ("rag", "agent") and isinstance(getattr(criteria, n, None), str)
    ]
    evaluators = sorted({*check_names, *ready_made})
    for model in ("RewardRequest", "TraceRewardRequest"):
        field = schemas[model]["properties"]["evaluator_name"]
        for option in field.get("anyOf", [field]):
            if option.get("type") == "string":
                option.pop("minLength", None)
                option.pop("maxLength", None)
                option["enum"] = evaluators
    schemas["RescoreRequest"]["properties"]["checks"]["items"]["enum"] = check_names


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(model=name)}


def _json(name: str) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(name)}}


def _answer(description: str, name: str) -> dict[str, Any]:
    return {"description": description, "content": _json(name)}


_ERROR_TEXT = {
    400: "The server cannot do this (its configuration)",
    401: "No valid API key",
    403: "A cross-site request that changes state",
    404: "Not found",
    409: "Not yet possible",
    413: "The body is larger than the server accepts",
    415: "The body is not JSON",
    421: "A Host the server does not answer to",
    422: "The request is invalid: `detail` names the field",
    429: "Too many requests (or failed keys): retry after Retry-After seconds",
    502: "The judge model failed",
    503: "The judge model is rate-limiting: retry after Retry-After seconds",
    504: "The judge model did not answer in time",
}


def _errors(*codes: int, open_route: bool = False, changes: bool = False) -> dict[str, Any]:
    """The error answers of an operation: its own `codes`, plus what every request can
    get (a foreign Host; the body limit, the rate limit, a missing key unless
    `open_route`; a cross-site origin when it `changes` state)."""
    common = [421] if open_route else [401, 413, 421, 429]
    if changes:
        common.append(403)
    return {
        str(code): _answer(_ERROR_TEXT[code], "ErrorAnswer") for code in sorted({*common, *codes})
    }


def _post(summary: str, body: str, ok: dict[str, Any], status: str = "200") -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "requestBody": {"required": True, "content": _json(body)},
            "responses": {status: ok, **_errors(400, 415, 422, 502, 503, 504, changes=True)},
        }
    }


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


def _list_parameters(only: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The list's query parameters (`list_query.PARAMETERS`; `only`: those named). No
    text parameter may hold a NUL; `tag` may be repeated."""
    from tracejudge.server.list_query import PARAMETERS

    parameters = []
    for name, schema, text in PARAMETERS:
        if only is not None and name not in only:
            continue
        if schema.get("type") == "string" and "enum" not in schema:
            schema = {**schema, **PLAIN_TEXT_SCHEMA}
        parameter = _query(name, schema, text)
        if name == "tag":
            parameter["schema"] = {"type": "array", "items": schema}
            parameter["explode"] = True
        parameters.append(parameter)
    return parameters


_HTML = {"text/html": {"schema": {"type": "string"}}}
_OBJECT = {"application/json": {"schema": {"type": "object"}}}
_attribution_ok = _answer("The failure's causes, most likely first", "Attribution")


def _paths() -> dict[str, Any]:
    from tracejudge.server.list_query import FILTERS

    trace_id = _path_param("trace_id")
    otlp_body = {
        _PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
        "application/json": {"schema": {"type": "object"}},
    }
    otlp_error = {
        "content": {
            "application/json": {"schema": {"anyOf": [_ref("OTLPStatus"), _ref("ErrorAnswer")]}},
            _PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
        }
    }
    return {
        "/api/v1/evals/reward": _post(
            "Evaluate a conversation",
            "RewardRequest",
            _answer("The score", "EvaluationResponse"),
        ),
        "/api/v1/evals/reward/background": _post(
            "Evaluate a conversation in the background",
            "RewardRequest",
            _answer("The task was stored", "TaskAccepted"),
            "202",
        ),
        "/api/v1/evals/trace": _post(
            "Evaluate a multi-agent trace",
            "TraceRewardRequest",
            _answer("Scores per agent", "MultiAgentTraceResponse"),
        ),
        "/api/v1/evals/trace/background": _post(
            "Evaluate a trace in the background",
            "TraceRewardRequest",
            _answer("The task was stored", "TaskAccepted"),
            "202",
        ),
        "/api/v1/tasks/{task_id}": {
            "get": {
                "summary": "A background task's status, with its result or error",
                "parameters": [_path_param("task_id")],
                "responses": {"200": _answer("The task", "TaskResponse"), **_errors(404)},
            }
        },
        "/api/v1/traces": {
            "get": {
                "summary": "Stored traces: a page in the order asked for, with the total",
                "description": "Each trace with its start time, duration, agents, model "
                "calls, tokens, cost, verdict (the worst agent score, never a mean; failing "
                "agents and pairs), service and tags. `total` counts every trace the filters "
                "keep; `next_cursor` / `previous_cursor` read the pages beside this one.",
                "parameters": _list_parameters(),
                "responses": {"200": _answer("A page of traces", "TraceList"), **_errors(422)},
            }
        },
        "/api/v1/overview": {
            "get": {
                "summary": "The batch overview of the traces the same filters keep",
                "description": "Per agent name and criterion, over the latest 1,000 traces "
                "the filters keep: how many instances were scored and failed, the mean, "
                "median, min and max score.",
                "parameters": _list_parameters(FILTERS),
                "responses": {"200": _answer("The overview", "OverviewAnswer"), **_errors(422)},
            }
        },
        "/api/v1/traces/{trace_id}": {
            "get": {
                "summary": "One trace as a MultiAgentTrace, with its evaluations",
                "parameters": [trace_id],
                "responses": {"200": _answer("The trace", "StoredTrace"), **_errors(404)},
            }
        },
        "/api/v1/traces/{trace_id}/evaluations": {
            "get": {
                "summary": "A trace's evaluations",
                "parameters": [trace_id],
                "responses": {
                    "200": _answer("The evaluations", "EvaluationList"),
                    **_errors(404),
                },
            }
        },
        "/api/v1/traces/{trace_id}/score": {
            "post": {
                "summary": "Score a stored trace again, with other criteria or checks",
                "parameters": [trace_id],
                "requestBody": {"required": True, "content": _json("RescoreRequest")},
                "responses": {
                    "202": _answer("The task was stored", "TaskAccepted"),
                    **_errors(400, 404, 409, 415, 422, changes=True),
                },
            }
        },
        "/api/v1/traces/{trace_id}/attribution": {
            "get": {
                "summary": "Which agent and step caused a stored trace's failure: "
                "deterministic by default; judge methods within the server's judge budget",
                "parameters": [
                    trace_id,
                    _query(
                        "method",
                        {"type": "string", "enum": list(ATTRIBUTION_METHODS)},
                        "repeated or comma-separated; default checks (no judge)",
                    ),
                    _query("outcome", {"type": "string", **PLAIN_TEXT_SCHEMA}, "what went wrong"),
                    _query("failed", {"type": "boolean"}, "the caller's word: it failed"),
                    _query(
                        "max_step_chars",
                        {"type": "integer", "minimum": 100, "maximum": 100000},
                        "characters of one message a judge method shows",
                    ),
                    _query("fresh", {"type": "boolean"}, "judge again, not the stored one"),
                ],
                "responses": {
                    "200": _attribution_ok,
                    **_errors(400, 404, 409, 422, 502, 503),
                },
            }
        },
        "/api/v1/attribution": _post(
            "Which agent and step caused the failure of a trace sent in the body",
            "AttributionBody",
            _attribution_ok,
        ),
        "/api/v1/labels": {
            "post": {
                "summary": "Record a person's label on one agent of a stored trace against "
                "one criterion: agree or disagree with its verdict, or their own score",
                "requestBody": {"required": True, "content": _json("LabelRequest")},
                "responses": {
                    "201": {"description": "The label", "content": _OBJECT},
                    **_errors(404, 409, 415, 422, changes=True),
                },
            },
            "get": {
                "summary": "People's labels, newest first",
                "parameters": [
                    _query(
                        "trace_id", {"type": "string", **PLAIN_TEXT_SCHEMA}, "this trace's only"
                    ),
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "page size"),
                    _query(
                        "cursor",
                        {"type": "string", **PLAIN_TEXT_SCHEMA},
                        "the previous page's next_cursor",
                    ),
                ],
                "responses": {
                    "200": {"description": "A page of labels", "content": _OBJECT},
                    **_errors(422),
                },
            },
        },
        "/api/v1/labels/export": {
            "get": {
                "summary": "Every label as the labels file `tracejudge calibrate` reads "
                "(JSON lines)",
                "parameters": [
                    _query("trace_id", {"type": "string", **PLAIN_TEXT_SCHEMA}, "this trace's only")
                ],
                "responses": {
                    "200": {
                        "description": "JSON lines of HumanLabel",
                        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                    },
                    **_errors(422),
                },
            }
        },
        "/v1/traces": {
            "post": {
                "summary": "OTLP/HTTP trace intake (protobuf or JSON, gzip accepted)",
                "requestBody": {"required": True, "content": otlp_body},
                "responses": {
                    "200": {
                        "description": "Stored (partialSuccess names rejected spans)",
                        "content": {
                            "application/json": {"schema": _ref("OTLPExportAnswer")},
                            _PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
                        },
                    },
                    **_errors(changes=True),
                    **{
                        str(code): {"description": _ERROR_TEXT[code], **otlp_error}
                        for code in (400, 413, 415)
                    },
                    "503": {
                        "description": "Scoring is behind: as many traces wait to be scored "
                        "as --max-backlog-traces allows; retry after Retry-After seconds",
                        **otlp_error,
                    },
                },
            }
        },
        "/ui": {
            "get": {
                "summary": "Web page: the stored traces (same filters as /api/v1/traces)",
                "parameters": _list_parameters(),
                "responses": {
                    "200": {"description": "The page", "content": _HTML},
                    **_errors(),
                    "422": {"description": _ERROR_TEXT[422], "content": _HTML},
                },
            }
        },
        "/ui/traces/{trace_id}": {
            "get": {
                "summary": "Web page: one trace's viewer with its latest scores",
                "parameters": [trace_id],
                "responses": {
                    "200": {"description": "The page", "content": _HTML},
                    **_errors(),
                    "404": {"description": _ERROR_TEXT[404], "content": _HTML},
                },
            }
        },
        "/health": {
            "get": {
                "summary": "Liveness",
                "security": [],
                "responses": {
                    "200": _answer("The server answers", "Health"),
                    **_errors(open_route=True),
                },
            }
        },
        "/ready": {
            "get": {
                "summary": "Readiness: stalled background loops, the queue, the store",
                "security": [],
                "responses": {
                    "200": _answer("Ready", "ReadyReport"),
                    "503": _answer("Not ready: what is wrong", "ReadyReport"),
                    **_errors(open_route=True),
                },
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics: requests, spans, backlog, scoring, judge, errors, "
                "store latency",
                "responses": {
                    "200": {
                        "description": "The metrics, in Prometheus's text format",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **_errors(),
                },
            }
        },
    }


def _answers_as_serialized(node: Any, schemas: dict[str, Any]) -> None:
    """Point the paths' references to a model that is read in one place and answered in
    another (pydantic names its two schemas `X-Input` and `X-Output`) at `X-Output`: the
    paths name models as answers."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name not in schemas and f"{name}-Output" in schemas:
                node["$ref"] = _REF.format(model=f"{name}-Output")
        for value in node.values():
            _answers_as_serialized(value, schemas)
    elif isinstance(node, list):
        for value in node:
            _answers_as_serialized(value, schemas)


_MALFORMED = "A malformed HTTP request (the HTTP parser's plain-text answer)"


def _malformed_requests_answered(paths: dict[str, Any]) -> None:
    """Every operation can be answered 400 in plain text by the HTTP server itself, before
    any route runs (a `Content-Length` that is not a number, a header name with a space)."""
    plain = {"text/plain": {"schema": {"type": "string"}}}
    for operations in paths.values():
        for operation in operations.values():
            responses = operation["responses"]
            bad = responses.setdefault("400", {"description": _MALFORMED, "content": {}})
            if bad["description"] != _MALFORMED:
                bad["description"] += f"; or {_MALFORMED[0].lower()}{_MALFORMED[1:]}"
            bad["content"] = {**bad.get("content", {}), **plain}


def openapi_document() -> dict[str, Any]:
    paths, schemas = _paths(), _schemas()
    _answers_as_serialized(paths, schemas)
    _malformed_requests_answered(paths)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "tracejudge server",
            "version": "1",
            "description": "Composo-compatible evaluation API, OTLP/HTTP trace intake, stored "
            "traces with their scores.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "API-Key"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
        "security": [{"apiKey": []}, {"bearer": []}],
    }
