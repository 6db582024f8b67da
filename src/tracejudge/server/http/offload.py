"""What runs off the event loop, so that no request stalls the others (`/health` among them).

The event loop moves bytes and awaits; the work that takes time runs elsewhere:

- `Offload.run(function, *args)`: a blocking function in a worker thread, at most
  `--parse-threads` of them at once (the rest wait their turn): decoding, inflating and
  splitting OTLP requests, parsing and validating JSON bodies, converting stored traces,
  encoding them and drawing their pages.
- `ServiceLoop`: the evaluation service on an event loop of its own, in a thread of its
  own, behind the service's methods. Its work is asynchronous (it awaits the judge) and
  also heavy (a 10 MiB conversation takes a second to take apart and render, the
  checks of a 20,000-span trace several): here it shares no loop with the requests.

Python runs one thread at a time, switching every few milliseconds
(`sys.getswitchinterval()`), so the event loop waits about that long for a turn, not for
the whole piece of work. One call into C that keeps the interpreter (`json.loads` of a
16 MiB body: about 60 ms) is the least a request can wait behind.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from tracejudge.evaluation import TraceCheck
from tracejudge.evaluation.attribution import AttributionRequest
from tracejudge.models import (
    Attribution,
    EvaluationResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    RewardRequest,
    TraceRewardRequest,
)

__all__ = ["Offload", "ServiceLoop"]

T = TypeVar("T")


class Offload:
    """Blocking work in worker threads, `threads` at once. Make it inside the event loop
    that uses it (its limiter belongs to that loop)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._limiter = anyio.CapacityLimiter(threads)

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` in a worker thread, once one of the `threads` is free."""
        return await anyio.to_thread.run_sync(function, *args, limiter=self._limiter)


class ServiceLoop:
    """An evaluation service (`tracejudge.evaluation.service.EvaluationService`, or any
    object with its methods) run on an event loop in a thread of its own; each method
    awaits the call there. Cancelling the caller cancels the call. `aclose()` closes the
    service on its loop, then ends the loop and its thread."""

    def __init__(self, service: Any, *, name: str = "tracejudge-evaluation") -> None:
        self.service = service
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    async def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return await asyncio.wrap_future(future)

    async def evaluate(self, request: RewardRequest) -> EvaluationResponse:
        return await self._call(self.service.evaluate(request))

    async def evaluate_trace(self, request: TraceRewardRequest) -> MultiAgentTraceResponse:
        return await self._call(self.service.evaluate_trace(request))

    async def score_trace(
        self, trace: MultiAgentTrace, criteria: Sequence[str | TraceCheck]
    ) -> list[MultiAgentTraceResponse]:
        return await self._call(self.service.score_trace(trace, criteria))

    async def attribute(self, request: AttributionRequest) -> Attribution:
        return await self._call(self.service.attribute(request))

    async def aclose(self) -> None:
        if self._loop.is_closed():
            return
        try:
            await self._call(self._shutdown())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            await anyio.to_thread.run_sync(self._thread.join)
            self._loop.close()

    async def _shutdown(self) -> None:
        """On the service's loop: cancel what still runs there, then close the service."""
        current = asyncio.current_task()
        left = [task for task in asyncio.all_tasks() if task is not current]
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        await self.service.aclose()
