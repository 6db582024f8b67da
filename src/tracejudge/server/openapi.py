"""The OpenAPI 3.1 description the app publishes at `/openapi.json`.

Request and answer schemas come from the pydantic models themselves, so the
document cannot drift from what the endpoints validate.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from tracejudge.models import (
    EvaluationResponse,
    MultiAgentTraceResponse,
    RewardRequest,
    TaskResponse,
    TraceRewardRequest,
)

__all__ = ["openapi_document"]

_REF = "#/components/schemas/{model}"


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": _REF.format(model=model.__name__)}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


_ERROR = {
    "description": "An error: `detail` says what is wrong and how to fix it",
    "content": _json(
        {
            "type": "object",
            "properties": {"detail": {"type": "string"}, "errors": {"type": "array"}},
            "required": ["detail"],
        }
    ),
}
_TASK_ID = {
    "description": "The task was stored; read it with GET /api/v1/tasks/{task_id}",
    "content": _json(
        {"type": "object", "properties": {"task_id": {"type": "string"}}, "required": ["task_id"]}
    ),
}
_OBJECT = {"description": "OK", "content": _json({"type": "object"})}


def _errors(*codes: int) -> dict[str, Any]:
    return {str(code): _ERROR for code in (401, 413, 429, *codes)}


def _post(summary: str, body: type[BaseModel], ok: dict[str, Any], status: str = "200") -> Any:
    return {
        "post": {
            "summary": summary,
            "requestBody": {"required": True, "content": _json(_ref(body))},
            "responses": {status: ok, **_errors(400, 422, 502, 503, 504)},
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


def openapi_document() -> dict[str, Any]:
    from tracejudge.server.list_query import FILTERS, PARAMETERS
    from tracejudge.server.traces import RescoreRequest

    list_parameters = [_query(name, schema, text) for name, schema, text in PARAMETERS]
    for parameter in list_parameters:
        if parameter["name"] == "tag":  # repeat it for several
            parameter["schema"] = {"type": "array", "items": parameter["schema"]}
            parameter["explode"] = True

    _, schemas = models_json_schema(
        [
            (RewardRequest, "validation"),
            (TraceRewardRequest, "validation"),
            (RescoreRequest, "validation"),
            (EvaluationResponse, "serialization"),
            (MultiAgentTraceResponse, "serialization"),
            (TaskResponse, "serialization"),
        ],
        ref_template=_REF,
    )
    reward_ok = {"description": "The score", "content": _json(_ref(EvaluationResponse))}
    trace_ok = {"description": "Scores per agent", "content": _json(_ref(MultiAgentTraceResponse))}
    paths: dict[str, Any] = {
        "/api/v1/evals/reward": _post("Evaluate a conversation", RewardRequest, reward_ok),
        "/api/v1/evals/reward/background": _post(
            "Evaluate a conversation in the background", RewardRequest, _TASK_ID, "202"
        ),
        "/api/v1/evals/trace": _post("Evaluate a multi-agent trace", TraceRewardRequest, trace_ok),
        "/api/v1/evals/trace/background": _post(
            "Evaluate a trace in the background", TraceRewardRequest, _TASK_ID, "202"
        ),
        "/api/v1/tasks/{task_id}": {
            "get": {
                "summary": "A background task's status, with its result or error",
                "parameters": [_path_param("task_id")],
                "responses": {
                    "200": {"description": "The task", "content": _json(_ref(TaskResponse))},
                    **_errors(404),
                },
            }
        },
        "/api/v1/traces": {
            "get": {
                "summary": "Stored traces: a page in the order asked for, with the total",
                "description": "Each trace with its start time, duration, agents, model "
                "calls, tokens, cost, verdict (the worst agent score, never a mean; failing "
                "agents and pairs), service and tags. `total` counts every trace the filters "
                "keep; `next_cursor` / `previous_cursor` read the pages beside this one.",
                "parameters": list_parameters,
                "responses": {"200": _OBJECT, **_errors(422)},
            }
        },
        "/api/v1/overview": {
            "get": {
                "summary": "The batch overview of the traces the same filters keep",
                "description": "Per agent name and criterion, over the latest 1,000 traces "
                "the filters keep: how many instances were scored and failed, the mean, "
                "median, min and max score.",
                "parameters": [p for p in list_parameters if p["name"] in FILTERS],
                "responses": {"200": _OBJECT, **_errors(422)},
            }
        },
        "/api/v1/traces/{trace_id}": {
            "get": {
                "summary": "One trace as a MultiAgentTrace, with its evaluations",
                "parameters": [_path_param("trace_id")],
                "responses": {"200": _OBJECT, **_errors(404)},
            }
        },
        "/api/v1/traces/{trace_id}/evaluations": {
            "get": {
                "summary": "A trace's evaluations",
                "parameters": [_path_param("trace_id")],
                "responses": {"200": _OBJECT, **_errors(404)},
            }
        },
        "/api/v1/traces/{trace_id}/score": {
            "post": {
                "summary": "Score a stored trace again, with other criteria or checks",
                "parameters": [_path_param("trace_id")],
                "requestBody": {"required": True, "content": _json(_ref(RescoreRequest))},
                "responses": {"202": _TASK_ID, **_errors(400, 404, 409, 422)},
            }
        },
        "/v1/traces": {
            "post": {
                "summary": "OTLP/HTTP trace intake (protobuf or JSON, gzip accepted)",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/x-protobuf": {
                            "schema": {"type": "string", "format": "binary"}
                        },
                        "application/json": {"schema": {"type": "object"}},
                    },
                },
                "responses": {"200": _OBJECT, **_errors(400, 415)},
            }
        },
        "/health": {"get": {"summary": "Liveness", "security": [], "responses": {"200": _OBJECT}}},
    }
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
            "schemas": schemas.get("$defs", {}),
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "API-Key"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
        "security": [{"apiKey": []}, {"bearer": []}],
    }
