"""What the store forgets: finished tasks after `--task-retention-hours`, and with
`--retain-days` the traces (their span batches, tags and evaluations) and evaluations
older than that. Without `--retain-days` stored traces are kept.

One supervised loop deletes in batches of a few hundred rows per transaction (so a
large backlog never holds the database's write lock for long), every hour, or more often
when the retention is short.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio.to_thread

from tracejudge.server.store import Store
from tracejudge.server.work.supervise import Beat, retry

__all__ = ["Pruner"]

logger = logging.getLogger("tracejudge.server")

_HOUR = 3600.0


class Pruner:
    """Deletes what is past its retention, as the `pruner` loop."""

    def __init__(
        self,
        store: Store,
        *,
        task_retention_seconds: float,
        retain_seconds: float | None = None,
        min_interval: float = 0.5,
    ) -> None:
        self.store = store
        self.task_retention_seconds = task_retention_seconds
        self.retain_seconds = retain_seconds
        shortest = min(task_retention_seconds, retain_seconds or _HOUR * 24)
        self.interval = max(min_interval, min(_HOUR, shortest / 10))

    async def prune_once(self) -> dict[str, int]:
        """One pass: finished tasks, then (with a retention) old traces and evaluations."""
        now = time.time()
        totals: dict[str, int] = {}
        tasks = await self._call(self.store.tasks.prune, now - self.task_retention_seconds)
        totals["tasks"] = int(tasks)
        if self.retain_seconds is not None:
            cutoff = now - self.retain_seconds
            while True:
                deleted = await self._call(self.store.traces.delete_before, cutoff)
                for table, count in deleted.items():
                    totals[table] = totals.get(table, 0) + count
                if not any(deleted.values()):
                    break
            # the sessions whose traces all went (their turns' answers with them)
            while sessions := await self._call(self.store.sessions.prune, cutoff):
                totals["sessions"] = totals.get("sessions", 0) + int(sessions)
        if any(v for k, v in totals.items() if k != "tasks"):
            logger.info(
                "tracejudge: retention deleted %s",
                ", ".join(f"{count} {table}" for table, count in totals.items() if count),
            )
        return totals

    @staticmethod
    async def _call(function: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(function, *args)

    async def run(self, beat: Beat) -> None:
        while True:
            await retry(beat, "delete what is past its retention", self.prune_once)
            await beat.wait(self.interval)
