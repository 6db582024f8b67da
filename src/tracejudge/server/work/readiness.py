"""What `GET /ready` reports: the supervisor's stalled loops, one store query, and the
backlog of traces waiting to be scored (`backlog`); and what `GET /health` (liveness)
checks: that the server can still make progress.

The store query runs once at a time and is reused for half a second, so probes in a
flood cost the store one query; a store that does not answer within 2 s makes the
server not ready (the query goes on in its thread). While the store's disk is full the
query also tries one write, so `/ready` stays 503 until writes work again, however the
reads fare.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anyio.to_thread
from typing_extensions import TypedDict

from tracejudge.server.store import Store, StoreFullError
from tracejudge.server.work.backlog import Backlog
from tracejudge.server.work.supervise import Supervisor

__all__ = ["BacklogReport", "QueueReport", "Readiness", "ReadyReport"]

logger = logging.getLogger("tracejudge.server")

#: Seconds /ready waits for the store before saying it does not answer.
_STORE_WAIT = 2.0
_REUSE = 0.5


class QueueReport(TypedDict):
    #: Tasks queued (None: the store did not answer).
    depth: int | None
    oldest_queued_seconds: float | None


class BacklogReport(TypedDict):
    #: Traces stored and not scored yet (None: the store did not answer).
    traces: int | None
    #: --max-backlog-traces (0: no bound).
    limit: int
    #: Whether uploads are refused (503 with Retry-After) until scoring catches up.
    full: bool


class ReadyReport(TypedDict):
    """GET /ready."""

    ready: bool
    #: "ok", or why the store is not.
    store: str
    #: The background loops that made no progress for --stall-seconds.
    stalled: list[str]
    queue: QueueReport
    #: The traces waiting to be scored. A full backlog does not make the server unready:
    #: reads and the evaluation endpoints still work; uploads get 503 on their own.
    backlog: BacklogReport
    #: Each loop's state and restarts.
    loops: list[dict[str, Any]]


class Readiness:
    """What `/ready` reports, from the supervisor, one store query and the backlog."""

    def __init__(self, store: Store, supervisor: Supervisor, backlog: Backlog) -> None:
        self.store = store
        self.supervisor = supervisor
        self.backlog = backlog
        self._query: asyncio.Future[tuple[int, float | None]] | None = None
        self._asked = 0.0

    async def _queue(self) -> tuple[int, float | None]:
        stale = time.monotonic() - self._asked > _REUSE
        if self._query is None or (self._query.done() and stale):
            self._asked = time.monotonic()
            self._query = asyncio.ensure_future(anyio.to_thread.run_sync(self._ask))
        # shield: a probe that gives up must not cancel the query others wait on
        return await asyncio.wait_for(asyncio.shield(self._query), _STORE_WAIT)

    def _ask(self) -> tuple[int, float | None]:
        """The queue's depth and oldest task; first, after writes failed for want of
        space, one write (StoreFullError while they still fail)."""
        outage = self.store.core.outage()
        if outage is not None and outage.full:
            self.store.core.probe_write()
            outage = self.store.core.outage()
            if outage is not None and outage.full:  # a small write fits, a real one not
                raise StoreFullError(outage.reason)
        return self.store.tasks.queue_stats()

    def problems(self, window: float) -> list[str]:
        """Why the server cannot get on by itself (empty: it can): the store failing, or a
        loop without progress outside a task's handler, for longer than `window` seconds."""
        found: list[str] = []
        outage = self.store.core.outage()
        now = time.monotonic()
        if outage is not None and now - outage.since > window:
            what = "has had no space for writes" if outage.full else "has failed"
            found.append(f"the store {what} for {now - outage.since:.0f} s")
        found.extend(
            f"the {name} loop made no progress for more than {window:g} s"
            for name in self.supervisor.stalled(window)
        )
        return found

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
        except StoreFullError:
            store = "no space left on the store's disk: writes fail (free space there)"
            self._query = None
        except Exception as error:  # the store's own error: unreachable, locked, ...
            # Its message may name the database's host: that stays in the log.
            logger.debug("tracejudge: /ready: the store failed", exc_info=error)
            store = f"failed ({type(error).__name__}; see the server's log)"
            self._query = None
        waiting: int | None = None
        if store == "ok":
            try:
                waiting = await asyncio.wait_for(self.backlog.size(), _STORE_WAIT)
            except asyncio.TimeoutError:  # the count goes on, for the next probe
                waiting = None
        limit = self.backlog.limit
        backlog: BacklogReport = {
            "traces": waiting,
            "limit": limit,
            "full": limit > 0 and waiting is not None and waiting >= limit,
        }
        return {
            "ready": store == "ok" and not stalled,
            "store": store,
            "stalled": stalled,
            "queue": queue,
            "backlog": backlog,
            "loops": self.supervisor.report(),
        }
