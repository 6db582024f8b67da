"""Background evaluations (`block=False`): run now, read later by task id."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from tracejudge.errors import BadRequestError
from tracejudge.models import TaskResponse, TaskStatus

__all__ = ["TaskRegistry", "MAX_FINISHED_TASKS", "FINISHED_TASK_TTL_SECONDS"]

#: At most this many finished tasks wait to be read; past it the oldest finished are dropped.
MAX_FINISHED_TASKS = 10_000
#: A finished task not read within this many seconds is dropped.
FINISHED_TASK_TTL_SECONDS = 3600.0
#: How many ids of dropped tasks are remembered, so that reading one says it expired.
_REMEMBERED_EXPIRED = 10_000


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass
class _Task:
    future: asyncio.Task[Any]
    started: bool = False


class TaskRegistry:
    """Evaluations running in the background of one event loop.

    A task is kept while it runs and, once finished, until it has been read once, for at
    most `ttl_seconds` (an hour by default). At most `max_finished` finished tasks (10,000
    by default) wait to be read: past that the oldest finished are dropped first. Reading
    a dropped task raises a `BadRequestError` that says it expired (the ids of the last
    10,000 dropped tasks are remembered for that; older ones read as unknown). Running
    tasks are never dropped. `aclose()` cancels the unfinished tasks and forgets them all.
    """

    def __init__(
        self,
        *,
        max_finished: int = MAX_FINISHED_TASKS,
        ttl_seconds: float = FINISHED_TASK_TTL_SECONDS,
    ) -> None:
        if max_finished < 1:
            raise ValueError(f"max_finished must be at least 1, got {max_finished!r}")
        if not ttl_seconds > 0:
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds!r}")
        self.max_finished = max_finished
        self.ttl_seconds = ttl_seconds
        self._tasks: dict[str, _Task] = {}
        #: Finished, unread tasks: id -> when it finished (monotonic), oldest first.
        self._finished: OrderedDict[str, float] = OrderedDict()
        #: Ids of dropped tasks, oldest first, so that reading one says it expired.
        self._expired: OrderedDict[str, None] = OrderedDict()
        # Done callbacks run on the task's loop, which may not be the reader's thread.
        self._lock = threading.Lock()

    def submit(self, work: Coroutine[Any, Any, Any]) -> str:
        """Start `work` on the running loop and return its task id."""
        task_id = str(uuid.uuid4())

        async def run() -> Any:
            entry.started = True
            return await work

        entry = _Task(future=asyncio.get_running_loop().create_task(run()))
        with self._lock:
            self._tasks[task_id] = entry
        # Cancelled before it started, `work` was never awaited: close it, so Python does not
        # warn about a coroutine that was never awaited.
        entry.future.add_done_callback(lambda _: work.close())
        entry.future.add_done_callback(lambda _: self._finish(task_id))
        return task_id

    def _finish(self, task_id: str) -> None:
        with self._lock:
            if task_id in self._tasks:
                self._finished[task_id] = time.monotonic()
            self._prune()

    def _prune(self) -> None:
        """Drop finished tasks past the count or the age limit (the lock held)."""
        oldest = time.monotonic() - self.ttl_seconds
        while self._finished:
            task_id, finished_at = next(iter(self._finished.items()))
            if len(self._finished) <= self.max_finished and finished_at > oldest:
                break
            del self._finished[task_id]
            self._tasks.pop(task_id, None)
            self._expired[task_id] = None
            if len(self._expired) > _REMEMBERED_EXPIRED:
                self._expired.popitem(last=False)

    def __contains__(self, task_id: object) -> bool:
        """Whether this registry started the task (running, finished, or dropped unread)."""
        with self._lock:
            self._prune()
            return task_id in self._tasks or task_id in self._expired

    def get(self, task_id: str) -> TaskResponse:
        """The task's status, and its result or error once finished (which forgets it).

        Raises `BadRequestError` for an id this registry does not know, or whose task
        finished and was dropped unread (it expired).
        """
        with self._lock:
            self._prune()
            entry = self._tasks.get(task_id)
            if entry is None:
                if task_id in self._expired:
                    raise BadRequestError(
                        f"task {task_id!r} expired: it finished but was not read within "
                        f"{self.ttl_seconds:g} s, or more than {self.max_finished} finished "
                        "tasks were waiting to be read (the oldest are dropped first)"
                    )
                raise BadRequestError(
                    f"unknown task id {task_id!r}: tasks are kept until they are read once "
                    "after finishing, or until the client is closed"
                )
            future = entry.future
            if not future.done():
                status: TaskStatus = "running" if entry.started else "queued"
                return TaskResponse(task_id=task_id, status=status)
            del self._tasks[task_id]
            self._finished.pop(task_id, None)
        if future.cancelled():
            return TaskResponse(task_id=task_id, status="failed", error="the task was cancelled")
        error = future.exception()
        if error is not None:
            return TaskResponse(
                task_id=task_id, status="failed", error=f"{type(error).__name__}: {error}"
            )
        return TaskResponse(task_id=task_id, status="done", result=_plain(future.result()))

    async def aclose(self) -> None:
        """Cancel every unfinished task and forget them all."""
        with self._lock:
            tasks = [t.future for t in self._tasks.values()]
            self._tasks.clear()
            self._finished.clear()
            self._expired.clear()
        loop = asyncio.get_running_loop()
        mine = []
        for task in tasks:
            owner = task.get_loop()
            if owner is loop:
                task.cancel()
                mine.append(task)
            elif not owner.is_closed():
                # Started on another loop (an AsyncComposo used from several): cancel it there.
                owner.call_soon_threadsafe(task.cancel)
        if mine:
            await asyncio.gather(*mine, return_exceptions=True)
