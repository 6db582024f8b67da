"""The OpenAPI 3.1 description the app publishes at `/openapi.json`.

The paths are generated from the app's routes: each `ApiRoute` declares its operation
beside it (`server.http.operation`), the path and its parameters are the route's own. Every
schema is generated from the types the routes use: the pydantic models they
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

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import TypeAdapter
from starlette.routing import BaseRoute
from typing_extensions import TypedDict

from tracejudge.models import (
    Attribution,
    EvaluationResponse,
    MultiAgentTraceResponse,
    RewardRequest,
    TaskResponse,
    TraceRewardRequest,
)
from tracejudge.server.http.operation import REF, ApiRoute

__all__ = ["openapi_document", "paths_of"]


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
    from tracejudge.server.api.alerts import MonitorSpec
    from tracejudge.server.api.attribution import AttributionBody
    from tracejudge.server.api.health import Health
    from tracejudge.server.api.labels import LabelRequest
    from tracejudge.server.api.rules_api import (
        BackfillAnswer,
        BackfillRequest,
        RuleAnswer,
        RuleList,
    )
    from tracejudge.server.api.runs import (
        RowsStored,
        RunBody,
        RunList,
        RunRowsBody,
        RunSummary,
        StoredRunAnswer,
    )
    from tracejudge.server.api.traces import (
        EvaluationList,
        OverviewAnswer,
        RescoreRequest,
        StoredTrace,
        TraceList,
    )
    from tracejudge.server.pages.sessions_api import SessionAnswer, SessionList, SessionScoreRequest
    from tracejudge.server.work.readiness import ReadyReport
    from tracejudge.server.work.rules.model import RuleBody

    inputs: list[tuple[Any, Mode]] = [
        (RewardRequest, "validation"),
        (TraceRewardRequest, "validation"),
        (RescoreRequest, "validation"),
        (LabelRequest, "validation"),
        (AttributionBody, "validation"),
        (MonitorSpec, "validation"),
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
        (RuleBody, "validation"),
        (BackfillRequest, "validation"),
        (SessionScoreRequest, "validation"),
        (RuleAnswer, "serialization"),
        (RuleList, "serialization"),
        (BackfillAnswer, "serialization"),
        (SessionList, "serialization"),
        (SessionAnswer, "serialization"),
        (RunBody, "validation"),
        (RunRowsBody, "validation"),
        (RunSummary, "serialization"),
        (RunList, "serialization"),
        (StoredRunAnswer, "serialization"),
        (RowsStored, "serialization"),
    ]
    _, document = TypeAdapter.json_schemas(
        [(kind, mode, TypeAdapter(kind)) for kind, mode in inputs], ref_template=REF
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


def paths_of(routes: Sequence[BaseRoute]) -> dict[str, Any]:
    """The document's paths, from the routes that declare their operation (`ApiRoute`):
    each path with its parameters as the route has them, each method's operation as the
    route declares it. Other routes (the home redirect, this document, a page's form
    post) are not part of the API."""
    paths: dict[str, Any] = {}
    for route in routes:
        if not isinstance(route, ApiRoute):
            continue
        parameters = list(route.param_convertors)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            operations = paths.setdefault(route.path, {})
            if method.lower() in operations:
                raise ValueError(f"{method} {route.path} is declared twice")
            operations[method.lower()] = route.operation.document(parameters)
    return paths


def _answers_as_serialized(node: Any, schemas: dict[str, Any]) -> None:
    """Point the paths' references to a model that is read in one place and answered in
    another (pydantic names its two schemas `X-Input` and `X-Output`) at `X-Output`: the
    paths name models as answers."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name not in schemas and f"{name}-Output" in schemas:
                node["$ref"] = REF.format(model=f"{name}-Output")
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


def openapi_document(routes: Sequence[BaseRoute]) -> dict[str, Any]:
    """The OpenAPI document of an app of `routes`."""
    paths, schemas = paths_of(routes), _schemas()
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
