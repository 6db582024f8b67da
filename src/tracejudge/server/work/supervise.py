"""Supervised background loops: restarted when they die, watched for stalls.

Every loop the server runs in the background (the task workers, the trace sweeper, the
lease keeper, the pruner) is started by a `Supervisor`. A loop that raises is logged
once with its traceback, counted, and started again after a short back-off; a loop
reports its progress through its `Beat`, and one that made none for `stall_seconds`
(while it is not inside a task's handler, whose time the judge's own timeouts bound) is
*stalled*: `/ready` names it and answers 503. `retry` is how a loop waits out a store
that is busy or unreachable: one warning when the trouble starts, one line when it ends,
never a log line per attempt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Beat", "LoopStatus", "Supervisor", "retry"]

logger = logging.getLogger("tracejudge.server")

T = TypeVar("T")

#: Back-off between restarts of a loop that died, and between retries of a failing call.
_FIRST_DELAY = 0.2
_MAX_DELAY = 10.0


@dataclass
class LoopStatus:
    """What `/ready` shows of one loop."""

    name: str
    restarts: int = 0
    #: idle, waiting (for work), busy (inside a task's handler), retrying (a store call
    #: keeps failing)
    state: str = "idle"
    last_progress: float = field(default_factory=time.monotonic)
    last_error: str | None = None
    _busy: int = 0

    def stalled(self, stall_seconds: float, now: float | None = None) -> bool:
        """No progress for `stall_seconds`, outside a handler."""
        now = time.monotonic() if now is None else now
        return self._busy == 0 and now - self.last_progress > stall_seconds

    def as_dict(self, stall_seconds: float) -> dict[str, Any]:
        now = time.monotonic()
        return {
            "name": self.name,
            "state": self.state,
            "restarts": self.restarts,
            "seconds_since_progress": round(now - self.last_progress, 3),
            "stalled": self.stalled(stall_seconds, now),
            "last_error": self.last_error,
        }


class Beat:
    """A loop's line to its supervisor."""

    def __init__(self, status: LoopStatus) -> None:
        self.status = status

    def progress(self) -> None:
        """The loop did something that worked (a store call answered, a task finished)."""
        self.status.last_progress = time.monotonic()
        if self.status._busy == 0:
            self.status.state = "idle"

    def trouble(self, what: str) -> None:
        self.status.state = "retrying"
        self.status.last_error = what

    @contextmanager
    def busy(self, state: str = "busy") -> Iterator[None]:
        """Inside a task's handler, or waiting for work: that time does not count towards
        a stall (the stall clock starts again when it ends)."""
        self.status._busy += 1
        self.status.state = state
        try:
            yield
        finally:
            self.status._busy -= 1
            self.progress()

    async def wait(self, seconds: float, event: asyncio.Event | None = None) -> None:
        """Sleep `seconds` (or until `event` is set) between rounds of work."""
        with self.busy("waiting"):
            if event is None:
                await asyncio.sleep(seconds)
                return
            try:
                await asyncio.wait_for(event.wait(), seconds)
            except asyncio.TimeoutError:
                pass


def _short(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}"[:300] if text else type(error).__name__


async def retry(
    beat: Beat,
    what: str,
    call: Callable[[], Awaitable[T]],
    *,
    transient: Callable[[BaseException], bool] = lambda error: True,
) -> T:
    """`await call()` until it succeeds, backing off from 0.2 s to 10 s between tries.

    An error that `transient` calls passing (a locked SQLite file, a lost PostgreSQL
    connection) is waited out; any other is raised at once, for the caller to record."""
    delay = _FIRST_DELAY
    failing_since: float | None = None
    while True:
        try:
            result = await call()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not transient(error):
                raise
            beat.trouble(_short(error))
            if failing_since is None:
                failing_since = time.monotonic()
                logger.warning("tracejudge: could not %s (%s); retrying", what, _short(error))
            else:
                logger.debug("tracejudge: could not %s (%s); retrying", what, _short(error))
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)
            continue
        if failing_since is not None:
            logger.warning(
                "tracejudge: %s works again after %.1f s", what, time.monotonic() - failing_since
            )
        beat.progress()
        return result


class Supervisor:
    """Runs named loops, restarts those that die, and says which are stalled."""

    def __init__(self, stall_seconds: float = 30.0) -> None:
        self.stall_seconds = stall_seconds
        self.loops: dict[str, LoopStatus] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def spawn(self, name: str, body: Callable[[Beat], Awaitable[None]]) -> None:
        """Run `body(beat)` for ever: restarted (and counted) each time it returns or raises."""
        status = LoopStatus(name)
        self.loops[name] = status
        self._tasks.append(asyncio.create_task(self._keep(status, body), name=name))

    async def _keep(self, status: LoopStatus, body: Callable[[Beat], Awaitable[None]]) -> None:
        delay = _FIRST_DELAY
        while True:
            beat = Beat(status)
            started = time.monotonic()
            try:
                await body(beat)
                problem = "it returned"
            except asyncio.CancelledError:
                raise
            except Exception as error:
                problem = _short(error)
                logger.error(
                    "tracejudge: background loop %s died (%s); restarting it",
                    status.name,
                    problem,
                    exc_info=error,
                )
            status.restarts += 1
            status.last_error = problem
            status._busy = 0
            if time.monotonic() - started > 60:
                delay = _FIRST_DELAY  # it ran a good while: not a crash loop
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)

    def stalled(self, seconds: float | None = None) -> list[str]:
        """The loops without progress for `seconds` (default: `stall_seconds`)."""
        now = time.monotonic()
        limit = self.stall_seconds if seconds is None else seconds
        return [s.name for s in self.loops.values() if s.stalled(limit, now)]

    def report(self) -> list[dict[str, Any]]:
        return [s.as_dict(self.stall_seconds) for s in self.loops.values()]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
