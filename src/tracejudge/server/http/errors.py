"""The server's error answers: JSON `{"detail": ...}`, never a stack trace.

`detail` is one sentence that names what is wrong and how to fix it; validation
errors add `errors`, one item per field (`loc`, `msg`), as FastAPI does, so clients
that read either shape find the message.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracejudge.errors import ComposoError

__all__ = [
    "ApiError",
    "BodyTooLargeError",
    "UnexpectedErrorMiddleware",
    "error_response",
    "judge_said",
    "validation_error",
]

logger = logging.getLogger("tracejudge.server")


class ApiError(Exception):
    """An error answer: HTTP `status`, a message, optional headers."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        headers: Mapping[str, str] | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})
        self.errors = errors


class BodyTooLargeError(ApiError):
    """The request body is larger than the server accepts."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            f"the request body is larger than this server accepts ({limit} bytes); send "
            "smaller batches (OTLP exporters: lower the batch size) or raise --max-body-bytes",
        )


def error_response(error: ApiError) -> JSONResponse:
    body: dict[str, Any] = {"detail": error.detail}
    if error.errors is not None:
        body["errors"] = error.errors
    return JSONResponse(body, status_code=error.status, headers=error.headers)


def _location(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "body"


def validation_error(exc: ValidationError, *, prefix: tuple[str | int, ...] = ()) -> ApiError:
    """A 422 naming every field that failed (`messages[0].role: Field required`)."""
    items = []
    for error in exc.errors(include_url=False, include_input=False):
        # Tagged unions add the tag to the location; it names no field the caller wrote.
        loc = tuple(p for p in error["loc"] if p not in ("llm_interaction", "agent_instance_id"))
        items.append({"loc": [*prefix, *loc], "msg": error["msg"], "type": error["type"]})
    shown = "; ".join(f"{_location(tuple(i['loc']))}: {i['msg']}" for i in items[:5])
    more = f" (and {len(items) - 5} more)" if len(items) > 5 else ""
    return ApiError(422, f"invalid request: {shown}{more}", errors=items)


class UnexpectedErrorMiddleware:
    """A 500 for an error no route expected: logged once with its traceback, answered with
    a plain sentence, the connection kept open. (Starlette's own error middleware answers
    too, then raises to uvicorn, which logs the error a second time and drops the
    connection.) An error after the answer started cannot be answered: it is raised."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            if started:
                raise
            logger.error(
                "tracejudge: %s %s failed", scope.get("method"), scope.get("path"), exc_info=exc
            )
            answer = JSONResponse(
                {"detail": "the server failed to answer this request (see its log)"},
                status_code=500,
            )
            await answer(scope, receive, send)


#: An address in an error message (a judge's base URL, a proxy's).
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.IGNORECASE)


def judge_said(error: ComposoError) -> str:
    """An evaluation error's message for the caller, every address in it left out: where
    the judge runs is the operator's business (the full message goes to the log)."""
    message = str(error.message)
    if _URL.search(message) is None:
        return message
    logger.warning("tracejudge: %s: %s", type(error).__name__, message)
    return _URL.sub("(the judge's address)", message)
