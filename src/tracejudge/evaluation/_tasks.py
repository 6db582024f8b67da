"""Background evaluations (`block=False`): run now, read later by task id."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from tracejudge.errors import BadRequestError
from tracejudge.models import TaskResponse

__all__ = ["TaskRegistry"]


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

    A task is kept until it has been read once after finishing, or until
    `aclose()`; reading it while it runs leaves it in place.
    """

    def __init__(self) -> None:
        self._tasks: dict[str, _Task] = {}

    def submit(self, work: Coroutine[Any, Any, Any]) -> str:
        """Start `work` on the running loop and return its task id."""
        task_id = str(uuid.uuid4())

        async def run() -> Any:
            entry.started = True
            return await work

        entry = _Task(future=asyncio.get_running_loop().create_task(run()))
        # Cancelled before it started, `work` was never awaited: close it, so Python does not
        # warn about a coroutine that was never awaited.
        entry.future.add_done_callback(lambda _: work.close())
        self._tasks[task_id] = entry
        return task_id

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    def get(self, task_id: str) -> TaskResponse:
        """The task's status, and its result or error once finished (which forgets it).

        Raises `BadRequestError` for an id this registry does not know.
        """
        entry = self._tasks.get(task_id)
        if entry is None:
            raise BadRequestError(
                f"unknown task id {task_id!r}: tasks are kept until they are read once after "
                "finishing, or until the client is closed"
            )
        future = entry.future
        if not future.done():
            status = "running" if entry.started else "pending"
            return TaskResponse(task_id=task_id, status=status)
        del self._tasks[task_id]
        if future.cancelled():
            return TaskResponse(task_id=task_id, status="failed", error="the task was cancelled")
        error = future.exception()
        if error is not None:
            return TaskResponse(
                task_id=task_id, status="failed", error=f"{type(error).__name__}: {error}"
            )
        return TaskResponse(task_id=task_id, status="succeeded", result=_plain(future.result()))

    async def wait(self, task_id: str) -> None:
        """Wait until the task finishes (its status then reads succeeded or failed)."""
        entry = self._tasks.get(task_id)
        if entry is not None:
            await asyncio.wait([entry.future])

    async def aclose(self) -> None:
        """Cancel every unfinished task and forget them all."""
        tasks = [t.future for t in self._tasks.values()]
        self._tasks.clear()
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
