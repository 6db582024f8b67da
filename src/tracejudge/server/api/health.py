"""`GET /health` (liveness) and `GET /ready` (readiness), both open without a key.

`/health` (liveness) answers 200 while the server can get on by itself, and 503 naming
why when it cannot: the store has failed, or a background loop made no progress, for
longer than `--liveness-seconds` (a short blip, a restarted database, keeps it at 200):
restart the process when it answers 503 or not at all. `/ready` answers 200 when the
store answers (and takes writes) and no background loop is stalled, else 503, with what
it found: the stalled loops, each loop's state and restarts, the queue's depth and the
age of its oldest task, and the backlog of traces waiting to be scored against
`--max-backlog-traces` (a full backlog refuses uploads, not readiness). Its store
queries run once at a time and are reused for half a second (see `readiness`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from typing_extensions import TypedDict

from tracejudge.server.http.operation import ApiRoute, Operation, answer
from tracejudge.server.store import SCHEMA_VERSION
from tracejudge.server.work.context import context_of

__all__ = ["Health", "routes"]


class Health(TypedDict):
    """GET /health."""

    #: "ok", or "failing" (503) with the `problems`.
    status: str
    problems: list[str]
    schema_version: int
    #: The judge's name, None when only checks run.
    judge: str | None


async def health(request: Request) -> JSONResponse:
    context = context_of(request)
    problems = (
        context.readiness.problems(context.config.liveness_seconds)
        if context.readiness is not None
        else []
    )
    answer: Health = {
        "status": "failing" if problems else "ok",
        "problems": problems,
        "schema_version": SCHEMA_VERSION,
        "judge": context.judge_label,
    }
    return JSONResponse(answer, status_code=503 if problems else 200)


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
        operation=Operation(
            "Liveness",
            {
                "200": answer("The server can get on by itself", "Health"),
                "503": answer(
                    "The store failed, or a loop made no progress, for longer than "
                    "--liveness-seconds: restart the server",
                    "Health",
                ),
            },
            open=True,
        ),
    ),
    ApiRoute(
        "/ready",
        ready,
        methods=["GET"],
        operation=Operation(
            "Readiness: stalled background loops, the queue, the store, the backlog",
            {
                "200": answer("Ready", "ReadyReport"),
                "503": answer("Not ready: what is wrong", "ReadyReport"),
            },
            open=True,
        ),
    ),
]
