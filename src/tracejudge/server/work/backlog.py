"""Backpressure from scoring to intake: a bound on the traces waiting to be scored.

Intake takes spans far faster than the judge scores them (about 20,000 spans a second
against 2,000 on the probe of issue #32): without a bound the store grows by hundreds of
megabytes a minute and nothing tells the senders. The backlog is the traces stored and
not yet scored (status open or queued). Past `--max-backlog-traces`, `POST /v1/traces`
is answered 503 with `Retry-After`, in the request's encoding, which OTLP exporters and
Collectors retry after the delay (the OTLP/HTTP specification's throttling); what was
acknowledged stays acknowledged. Reads, the evaluation endpoints and re-scoring go on.

The count is one indexed query, run once at a time and reused for `REUSE_SECONDS` (with
the traces of the uploads accepted since added to it), so a flood of uploads costs the
store one query, not one each, and cannot pass the bound by more than the uploads in
flight. When the store is away (`StoreOutageError`: unreachable, locked, full), the
count's error is the upload's answer (503 with `Retry-After`, see `app`), so an upload
waits for a locked store once, not twice; any other error of the count refuses nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time

import anyio.to_thread

from tracejudge.server.http.errors import ApiError
from tracejudge.server.store import Store, StoreOutageError

__all__ = ["Backlog", "REUSE_SECONDS", "RETRY_AFTER_SECONDS"]

logger = logging.getLogger("tracejudge.server")

#: Seconds one count of the backlog is reused.
REUSE_SECONDS = 0.5
#: What a refused upload is told to wait.
RETRY_AFTER_SECONDS = 5


class Backlog:
    """The traces waiting to be scored, counted at most every `REUSE_SECONDS`, against
    `limit` (0: no bound, still counted)."""

    def __init__(self, store: Store, limit: int) -> None:
        self.store = store
        self.limit = limit
        self._query: asyncio.Future[int] | None = None
        self._asked = 0.0
        #: The last count (None before the first, or while the store fails).
        self.last: int | None = None

    async def size(self) -> int | None:
        """The number of traces waiting to be scored; None when the store failed."""
        try:
            return await self._count()
        except Exception as error:  # the store's own error
            logger.debug("tracejudge: the backlog could not be counted", exc_info=error)
            return None

    async def _count(self) -> int:
        """The count, reused for `REUSE_SECONDS`; the store's error when it fails."""
        stale = time.monotonic() - self._asked > REUSE_SECONDS
        fresh = self._query is not None and self._query.done() and not stale
        if fresh and self.last is not None:
            return self.last  # the last count, with the traces added since (`added`)
        if self._query is None or self._query.done():
            self._asked = time.monotonic()
            self._query = asyncio.ensure_future(
                anyio.to_thread.run_sync(self.store.traces.backlog_size)
            )
        try:
            # shield: a request that gives up must not cancel the count others wait on
            self.last = await asyncio.shield(self._query)
        except Exception:
            self._query = None
            self.last = None
            raise
        return self.last

    def added(self, traces: int) -> None:
        """Count `traces` more until the next count (at most: some may have been stored
        already), so that uploads between two counts cannot pass the bound by much."""
        if self.last is not None:
            self.last += traces

    def full_error(self, size: int) -> ApiError:
        return ApiError(
            503,
            f"{size:,} traces are waiting to be scored, the most this server queues "
            f"(--max-backlog-traces {self.limit:,}); retry in {RETRY_AFTER_SECONDS} s: "
            "scoring is behind intake, so spans are refused for now rather than piled up",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )

    async def refusal(self) -> ApiError | None:
        """The 503 to answer an upload with while the backlog is at its bound, else None."""
        if self.limit <= 0:
            return None
        try:
            size = await self._count()
        except StoreOutageError:
            # The store is away (or locked): the upload is answered 503 for that now (the
            # app's handler), not after waiting for the store a second time to store it.
            raise
        except Exception as error:  # not an outage: the upload meets it, or not
            logger.debug("tracejudge: the backlog could not be counted", exc_info=error)
            return None
        if size < self.limit:
            return None
        return self.full_error(size)
