"""What every endpoint reaches through `request.app.state.context`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import anyio.to_thread
from starlette.requests import Request

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
from tracejudge.server.config import ServerConfig
from tracejudge.server.http.offload import Offload
from tracejudge.server.http.page_cache import PageCache
from tracejudge.server.store import Store
from tracejudge.server.work.backlog import Backlog
from tracejudge.server.work.readiness import Readiness
from tracejudge.server.work.tasks import TaskRunner
from tracejudge.server.work.writeback import WriteBack

__all__ = ["Service", "ServerContext", "context_of", "in_thread"]


class Service(Protocol):
    """The evaluation service's contract (`tracejudge.evaluation.service`)."""

    async def evaluate(self, request: RewardRequest) -> EvaluationResponse: ...

    async def evaluate_trace(self, request: TraceRewardRequest) -> MultiAgentTraceResponse: ...

    async def score_trace(
        self, trace: MultiAgentTrace, criteria: Sequence[str | TraceCheck]
    ) -> list[MultiAgentTraceResponse]: ...

    async def attribute(self, request: AttributionRequest) -> Attribution: ...

    async def aclose(self) -> None: ...


@dataclass
class ServerContext:
    config: ServerConfig
    store: Store
    #: The evaluation service, run on an event loop of its own (`offload.ServiceLoop`).
    service: Service
    #: Where decoding, validating and converting run: worker threads, a few at once.
    offload: Offload
    runner: TaskRunner
    #: What ingested traces are scored against: the text criteria (when a judge is
    #: configured) and the deterministic checks.
    criteria: Sequence[str | TraceCheck]
    #: The judge's name for messages, None when only checks run.
    judge_label: str | None
    #: Where scores are written back onto their traces (None: nowhere).
    writeback: WriteBack | None = None
    #: What GET /ready reports (set once the background loops run).
    readiness: Readiness | None = None
    #: The traces waiting to be scored, and their bound (the intake's backpressure).
    backlog: Backlog | None = None
    #: Trace pages drawn before, by what they were drawn from.
    pages: PageCache = field(default_factory=PageCache)


def context_of(request: Request) -> ServerContext:
    context: ServerContext = request.app.state.context
    return context


T = TypeVar("T")


async def in_thread(function: Callable[..., T], *args: Any) -> T:
    """Run a blocking store call off the event loop (CPU work goes to `context.offload`)."""
    return await anyio.to_thread.run_sync(function, *args)
