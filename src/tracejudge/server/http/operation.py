"""What each route says of itself in the OpenAPI document, written beside the route.

A route that belongs in `/openapi.json` is an `ApiRoute`: a Starlette `Route` with an
`Operation` (its summary, request body, answers, query parameters, error codes). The
document's paths are generated from the app's routes (`openapi.paths_of`): the path and
its parameters from the route itself, the rest from its `Operation`, so a new route is
documented by declaring its operation where it is defined, and a path cannot be
documented apart from the route that serves it.

Request bodies and answers name schemas of `openapi`'s components (`RewardRequest`,
`TaskAccepted`, ...), or give their content whole (HTML pages, OTLP's protobuf).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.routing import Route

from tracejudge.models import PLAIN_TEXT_SCHEMA

__all__ = [
    "ERROR_TEXT",
    "INTAKE_UNAVAILABLE_TEXT",
    "JUDGED_ERRORS",
    "HTML",
    "OBJECT",
    "PROTOBUF",
    "ApiRoute",
    "Operation",
    "answer",
    "json_content",
    "list_parameters",
    "query",
    "ref",
    "text_query",
]

REF = "#/components/schemas/{model}"
PROTOBUF = "application/x-protobuf"
HTML: dict[str, Any] = {"text/html": {"schema": {"type": "string"}}}
OBJECT: dict[str, Any] = {"application/json": {"schema": {"type": "object"}}}

#: What each error status means, in every operation that can answer it.
ERROR_TEXT = {
    400: "The server cannot do this (its configuration)",
    401: "No valid API key",
    403: "A cross-site request that changes state",
    404: "Not found",
    409: "Not yet possible",
    413: "The body is larger than the server accepts",
    415: "The body is not JSON",
    421: "A Host the server does not answer to",
    422: "The request is invalid: `detail` names the field",
    429: (
        "Too many requests, or too many wrong API keys from this address (the right key is "
        "never refused for those): retry after Retry-After seconds"
    ),
    502: "The judge model failed",
    503: (
        "The judge model is rate-limiting, or the store is unavailable or out of space "
        "(nothing was stored): retry after Retry-After seconds"
    ),
    504: "The judge model did not answer in time",
}

#: What the OTLP intake's 503 means (in the request's encoding, like its other errors).
INTAKE_UNAVAILABLE_TEXT = (
    "Scoring is behind (as many traces wait to be scored as --max-backlog-traces allows), "
    "or the store is unavailable or out of space: nothing was stored; retry after "
    "Retry-After seconds"
)

#: The errors of an operation that evaluates with the judge.
JUDGED_ERRORS = (400, 415, 422, 502, 503, 504)


def ref(name: str) -> dict[str, str]:
    """A reference to the component schema `name`."""
    return {"$ref": REF.format(model=name)}


def json_content(name: str) -> dict[str, Any]:
    """JSON content of the component schema `name`."""
    return {"application/json": {"schema": ref(name)}}


def answer(description: str, name: str) -> dict[str, Any]:
    """An answer: `description`, with a JSON body of the component schema `name`."""
    return {"description": description, "content": json_content(name)}


def query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    """An optional query parameter."""
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


def text_query(name: str, description: str) -> dict[str, Any]:
    """An optional query parameter of plain text (no NUL)."""
    return query(name, {"type": "string", **PLAIN_TEXT_SCHEMA}, description)


def list_parameters(only: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The trace list's query parameters (`list_query.PARAMETERS`; `only`: those named).
    No text parameter may hold a NUL; `tag` may be repeated."""
    from tracejudge.server.http.list_query import PARAMETERS

    parameters = []
    for name, schema, text in PARAMETERS:
        if only is not None and name not in only:
            continue
        if schema.get("type") == "string" and "enum" not in schema:
            schema = {**schema, **PLAIN_TEXT_SCHEMA}
        parameter = query(name, schema, text)
        if name == "tag":
            parameter["schema"] = {"type": "array", "items": schema}
            parameter["explode"] = True
        parameters.append(parameter)
    return parameters


@dataclass(frozen=True)
class Operation:
    """One operation of the OpenAPI document, as its route declares it.

    - `summary`, `description`: what it does.
    - `answers`: status -> OpenAPI response (`answer(...)`), the successes and any error
      whose body is not an `ErrorAnswer` (an HTML page's, OTLP's).
    - `errors`: the statuses it can answer with an `ErrorAnswer`, besides those every
      request can get (a foreign Host; the body limit, the rate limit and a missing key
      unless `open`; a cross-site origin when it `changes` state).
    - `body`: the request body: a component schema's name (JSON, required), or its
      content whole.
    - `parameters`: its query parameters (the path's come from the route), or a function
      giving them when the document is built.
    - `open`: answered without a key (`security: []`).
    """

    summary: str
    answers: Mapping[str, Any]
    errors: tuple[int, ...] = ()
    body: str | Mapping[str, Any] | None = None
    parameters: Sequence[Mapping[str, Any]] | Callable[[], Sequence[Mapping[str, Any]]] = ()
    description: str | None = None
    changes: bool = False
    open: bool = False

    def document(self, path_parameters: Sequence[str]) -> dict[str, Any]:
        """This operation as the OpenAPI document writes it, under a path whose
        parameters are `path_parameters`."""
        operation: dict[str, Any] = {"summary": self.summary}
        if self.description is not None:
            operation["description"] = self.description
        if self.open:
            operation["security"] = []
        queries = self.parameters() if callable(self.parameters) else self.parameters
        parameters = [_path_parameter(name) for name in path_parameters]
        parameters += [dict(parameter) for parameter in queries]
        if parameters:
            operation["parameters"] = parameters
        if self.body is not None:
            content = json_content(self.body) if isinstance(self.body, str) else dict(self.body)
            operation["requestBody"] = {"required": True, "content": content}
        responses = dict(self.answers)
        for code, error in self._error_answers().items():
            responses.setdefault(code, error)
        operation["responses"] = responses
        return operation

    def _error_answers(self) -> dict[str, Any]:
        common = [421] if self.open else [401, 413, 421, 429]
        if self.changes:
            common.append(403)
        codes = sorted({*common, *self.errors})
        return {str(code): answer(ERROR_TEXT[code], "ErrorAnswer") for code in codes}


def _path_parameter(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


class ApiRoute(Route):
    """A route documented in `/openapi.json` by its `operation`."""

    def __init__(
        self,
        path: str,
        endpoint: Callable[..., Any],
        *,
        methods: list[str],
        operation: Operation,
    ) -> None:
        super().__init__(path, endpoint, methods=methods)
        self.operation = operation
