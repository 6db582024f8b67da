"""What `GET /ready` reports: the supervisor's stalled loops and one store query.

The store query runs once at a time and is reused for half a second, so probes in a
flood cost the store one query; a store that does not answer within 2 s makes the
server not ready (the query goes on in its thread).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anyio.to_thread
from typing_extensions import TypedDict

from tracejudge.server.store import Store
from tracejudge.server.supervise import Supervisor

__all__ = ["QueueReport", "Readiness", "ReadyReport"]

logger = logging.getLogger("tracejudge.server")

#: Seconds /ready waits for the store before saying it does not answer.
_STORE_WAIT = 2.0
_REUSE = 0.5


class QueueReport(TypedDict):
    #: Tasks queued (None: the store did not answer).
    depth: int | None
    oldest_queued_seconds: float | None


class ReadyReport(TypedDict):
    """GET /ready."""

    ready: bool
    #: "ok", or why the store is not.
    store: str
    #: The background loops that made no progress for --stall-seconds.
    stalled: list[str]
    queue: QueueReport
    #: Each loop's state and restarts.
    loops: list[dict[str, Any]]


class Readiness:
    """What `/ready` reports, from the supervisor and one store query."""

    def __init__(self, store: Store, supervisor: Supervisor) -> None:
        self.store = store
        self.supervisor = supervisor
        self._query: asyncio.Future[tuple[int, float | None]] | None = None
        self._asked = 0.0

    async def _queue(self) -> tuple[int, float | None]:
        stale = time.monotonic() - self._asked > _REUSE
        if self._query is None or (self._query.done() and stale):
            self._asked = time.monotonic()
            self._query = asyncio.ensure_future(
                anyio.to_thread.run_sync(self.store.tasks.queue_stats)
            )
        # shield: a probe that gives up must not cancel the query others wait on
        return await asyncio.wait_for(asyncio.shield(self._query), _STORE_WAIT)

    async def report(self) -> ReadyReport:
        stalled = self.supervisor.stalled()
        queue: QueueReport = {"depth": None, "oldest_queued_seconds": None}
        store = "ok"
        try:
            depth, oldest = await self._queue()
            queue = {
                "depth": depth,
                "oldest_queued_seconds": (
                    None if oldest is None else round(max(0.0, time.time() - oldest), 3)
                ),
            }
        except asyncio.TimeoutError:
            store = f"did not answer within {_STORE_WAIT:g} s"
        except Exception as error:  # the store's own error: unreachable, locked, ...
            # Its message may name the database's host: that stays in the log.
            logger.debug("tracejudge: /ready: the store failed", exc_info=error)
            store = f"failed ({type(error).__name__}; see the server's log)"
            self._query = None
        return {
            "ready": store == "ok" and not stalled,
            "store": store,
            "stalled": stalled,
            "queue": queue,
            "loops": self.supervisor.report(),
        }
