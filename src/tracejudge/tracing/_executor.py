"""A thread pool whose tasks run with the submitter's context (and so in its agent)."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

__all__ = ["ContextPropagatingExecutor", "context_propagating_executor"]

P = ParamSpec("P")
T = TypeVar("T")


class ContextPropagatingExecutor(ThreadPoolExecutor):
    """A `ThreadPoolExecutor` whose `submit` (and so `map`) runs each task in a copy of the
    caller's `contextvars` context, taken when the task is submitted.

    The current OpenTelemetry span lives in that context, so LLM calls made by the task are
    children of the submitting agent's span and are captured by its `AgentTracer`. A plain
    ThreadPoolExecutor or ``loop.run_in_executor`` starts tasks in an empty context, and
    their calls belong to no agent.
    """

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        context = contextvars.copy_context()

        def in_context() -> T:
            return context.run(fn, *args, **kwargs)

        return super().submit(in_context)


def context_propagating_executor(
    max_workers: int | None = None,
    thread_name_prefix: str = "",
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
) -> ContextPropagatingExecutor:
    """A thread pool for running an agent's work in threads without losing its LLM calls:
    ``with context_propagating_executor(max_workers=4) as pool: pool.map(step, items)``.

    Arguments are those of `concurrent.futures.ThreadPoolExecutor`. For a single thread
    of your own, ``threading.Thread(target=contextvars.copy_context().run, args=(fn,))``
    does the same; ``asyncio.to_thread`` copies the context already.
    """
    return ContextPropagatingExecutor(
        max_workers=max_workers,
        thread_name_prefix=thread_name_prefix,
        initializer=initializer,
        initargs=initargs,
    )
