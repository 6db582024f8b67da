"""`GET /health` (liveness) and `GET /ready` (readiness), both open without a key.

`/health` answers 200 whenever the event loop does: restart the process when it stops
answering. `/ready` answers 200 when the store answers and no background loop is stalled,
else 503, with what it found: the stalled loops, each loop's state and restarts, the
queue's depth and the age of its oldest task. Its store query runs once at a time and is
reused for half a second (see `readiness`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from typing_extensions import TypedDict

from tracejudge.server.context import context_of
from tracejudge.server.operation import ApiRoute, Operation, answer
from tracejudge.server.store import SCHEMA_VERSION

__all__ = ["Health", "routes"]


class Health(TypedDict):
    """GET /health."""

    status: str
    schema_version: int
    #: The judge's name, None when only checks run.
    judge: str | None


async def health(request: Request) -> JSONResponse:
    context = context_of(request)
    answer: Health = {
        "status": "ok",
        "schema_version": SCHEMA_VERSION,
        "judge": context.judge_label,
    }
    return JSONResponse(answer)


async def ready(request: Request) -> JSONResponse:
    context = context_of(request)
    assert context.readiness is not None
    report = await context.readiness.report()
    return JSONResponse(report, status_code=200 if report["ready"] else 503)


routes = [
    ApiRoute(
        "/health",
        health,
        methods=["GET"],
        operation=Operation("Liveness", {"200": answer("The server answers", "Health")}, open=True),
    ),
    ApiRoute(
        "/ready",
        ready,
        methods=["GET"],
        operation=Operation(
            "Readiness: stalled background loops, the queue, the store",
            {
                "200": answer("Ready", "ReadyReport"),
                "503": answer("Not ready: what is wrong", "ReadyReport"),
            },
            open=True,
        ),
    ),
]
