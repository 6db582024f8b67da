"""`GET /metrics`: what an operator watches, in Prometheus's text format.

Made with the standard client library (`prometheus_client`), on a registry of the app's
own (two apps in one process, as tests run them, count apart). What is counted:

- `tracejudge_http_requests_total{route,method,status}` and
  `tracejudge_http_request_seconds{route}`: every request, by its route's template (not
  its path: trace ids would make a series each);
- `tracejudge_spans_accepted_total`, `tracejudge_spans_rejected_total{reason}` (invalid,
  too_large) and `tracejudge_uploads_refused_total{reason}` (backlog_full);
- `tracejudge_backlog_traces` and `tracejudge_backlog_limit`: the traces waiting to be
  scored, counted when scraped (`backlog`), and `--max-backlog-traces`;
- `tracejudge_traces_scored_total{status}`: scored, unscorable, too_large, failed; its
  rate is the scoring rate;
- `tracejudge_tasks_total{kind,outcome}`: background tasks done, failed, or
  queued_again (the store failed under them: they run again once it works);
- `tracejudge_judge_calls_total`, `tracejudge_judge_tokens_total`,
  `tracejudge_judge_cost_usd_total`: what the judge was asked and what it cost (what
  the daily budgets count);
- `tracejudge_errors_total{kind}`: unexpected (a 500 answered), store (a store call
  that raised), task (a task that raised);
- `tracejudge_store_seconds{operation}`: how long each store call took, by repository
  and method (`traces.add_spans`, `tasks.claim`, ...; `TimedStore`).

`/metrics` is not in the open paths: with API keys it needs one, like the rest of the
API (Prometheus sends it with `authorization: {credentials: KEY}` in its scrape config).
"""

from __future__ import annotations

import time
from typing import Any, cast

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracejudge.models import JudgeUsage
from tracejudge.server.http.operation import ApiRoute, Operation
from tracejudge.server.store import Store, StoreOutageError
from tracejudge.server.work.context import context_of
from tracejudge.server.work.tasks import Handler, Outcome

__all__ = ["PATH", "Metrics", "MetricsMiddleware", "TimedStore", "metrics_of", "routes"]

PATH = "/metrics"
#: The route label of a request no route matched.
_UNMATCHED = "unmatched"


class Metrics:
    """The server's metrics, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "tracejudge_http_requests",
            "HTTP requests answered, by route template, method and status",
            ["route", "method", "status"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "tracejudge_http_request_seconds",
            "Seconds from a request's start to its answer's end, by route template",
            ["route"],
            registry=r,
        )
        self.spans_accepted = Counter("tracejudge_spans_accepted", "OTLP spans stored", registry=r)
        self.spans_rejected = Counter(
            "tracejudge_spans_rejected",
            "OTLP spans answered as rejected (partial_success), by reason",
            ["reason"],
            registry=r,
        )
        self.uploads_refused = Counter(
            "tracejudge_uploads_refused",
            "OTLP uploads refused whole (503 with Retry-After), by reason",
            ["reason"],
            registry=r,
        )
        self.backlog = Gauge(
            "tracejudge_backlog_traces",
            "Traces stored and not scored yet (-1: the store did not answer)",
            registry=r,
        )
        self.backlog_limit = Gauge(
            "tracejudge_backlog_limit", "--max-backlog-traces (0: no bound)", registry=r
        )
        self.traces_scored = Counter(
            "tracejudge_traces_scored",
            "Ingested traces done with, by the status they were left in",
            ["status"],
            registry=r,
        )
        self.tasks = Counter(
            "tracejudge_tasks",
            "Background tasks run, by kind and outcome (done, failed, queued_again: the "
            "store failed under it)",
            ["kind", "outcome"],
            registry=r,
        )
        self.judge_calls = Counter(
            "tracejudge_judge_calls", "Calls made to the judge model", registry=r
        )
        self.judge_tokens = Counter(
            "tracejudge_judge_tokens", "Tokens the judge model read and wrote", registry=r
        )
        self.judge_cost = Counter(
            "tracejudge_judge_cost_usd",
            "Dollars the judge's calls cost (calls to an unpriced model count 0)",
            registry=r,
        )
        self.errors = Counter(
            "tracejudge_errors",
            "Errors, by kind: unexpected (a 500 answered), store (a store call raised), "
            "task (a background task raised)",
            ["kind"],
            registry=r,
        )
        self.store_seconds = Histogram(
            "tracejudge_store_seconds",
            "Seconds each store call took, by operation",
            ["operation"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        for kind in ("unexpected", "store", "task"):
            self.errors.labels(kind)  # shown at 0 from the start
        for reason in ("invalid", "too_large"):
            self.spans_rejected.labels(reason)
        self.uploads_refused.labels("backlog_full")

    def judge_spent(self, usage: JudgeUsage) -> None:
        """Count one judgement's calls, tokens and cost."""
        self.judge_calls.inc(usage.calls)
        self.judge_tokens.inc(usage.total_tokens)
        self.judge_cost.inc(usage.cost_usd or 0.0)

    def counted(self, kind: str, handler: Handler) -> Handler:
        """`handler`, counting its outcomes (and the trace statuses scoring left)."""

        async def run(payload: dict[str, Any]) -> Outcome:
            try:
                outcome = await handler(payload)
            except StoreOutageError:  # not the task's fault: the runner queues it again
                self.tasks.labels(kind, "queued_again").inc()
                raise
            except Exception:
                self.errors.labels("task").inc()
                self.tasks.labels(kind, "failed").inc()
                raise
            self.tasks.labels(kind, "failed" if outcome.failed else "done").inc()
            if outcome.trace is not None:
                self.traces_scored.labels(outcome.trace.status).inc()
            elif outcome.failed and kind == "score_trace":
                self.traces_scored.labels("failed").inc()
            return outcome

        return run

    def text(self) -> bytes:
        return generate_latest(self.registry)


def _timed(call: Any, seconds: Any, errors: Any) -> Any:
    """`call`, its duration observed in `seconds` and its exceptions counted in `errors`."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        except Exception:
            errors.inc()
            raise
        finally:
            seconds.observe(time.perf_counter() - started)

    return timed


class _TimedRepository:
    """One repository of the store (`store.tasks`, ...), its every call timed as
    `<area>.<method>`."""

    def __init__(self, repository: Any, area: str, metrics: Metrics) -> None:
        self._repository = repository
        self._area = area
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._repository, name)
        if not callable(found) or name.startswith("_"):
            return found
        seconds = self._metrics.store_seconds.labels(f"{self._area}.{name}")
        return _timed(found, seconds, self._metrics.errors.labels("store"))


class TimedStore:
    """A store whose every repository call is timed into `tracejudge_store_seconds`
    (and counted in `tracejudge_errors_total{kind="store"}` when it raises), and so are
    the store's own calls (`migrate`, `counts`, ...). The dialect core (`store.core`,
    which `/ready` asks about outages) and anything else is the store's own."""

    def __init__(self, store: Store, metrics: Metrics) -> None:
        self._store = store
        self._metrics = metrics
        self._repositories: dict[str, _TimedRepository] = {}

    def __getattr__(self, name: str) -> Any:
        if name in self._repositories:
            return self._repositories[name]
        found = getattr(self._store, name)
        if name.startswith("_") or found is self._store.core:
            return found
        if getattr(found, "core", None) is self._store.core:  # a repository
            timed = self._repositories[name] = _TimedRepository(found, name, self._metrics)
            return timed
        if not callable(found) or name == "is_transient":
            return found
        seconds = self._metrics.store_seconds.labels(name)
        return _timed(found, seconds, self._metrics.errors.labels("store"))

    @classmethod
    def around(cls, store: Store, metrics: Metrics) -> Store:
        """`store`, timed (typed as the store it stands for)."""
        return cast(Store, cls(store, metrics))


class MetricsMiddleware:
    """Counts every request by its route's template, method and answer status, and times
    it; a 500 answered is counted as an unexpected error too."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: list[Any]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = [r for r in routes if isinstance(r, Route)]

    def _template(self, scope: Scope) -> str:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return route.path
        return _UNMATCHED

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            route = self._template(scope)
            self.metrics.requests.labels(route, scope.get("method", ""), str(status)).inc()
            self.metrics.request_seconds.labels(route).observe(time.perf_counter() - started)
            if status == 500:
                self.metrics.errors.labels("unexpected").inc()


def metrics_of(request: Request) -> Metrics | None:
    """The app's metrics (None for an app made without them)."""
    found: Metrics | None = getattr(request.app.state, "metrics", None)
    return found


async def metrics_page(request: Request) -> Response:
    context = context_of(request)
    metrics = metrics_of(request)
    assert metrics is not None
    if context.backlog is not None:
        waiting = await context.backlog.size()
        metrics.backlog.set(-1 if waiting is None else waiting)
        metrics.backlog_limit.set(context.backlog.limit)
    return Response(metrics.text(), media_type=CONTENT_TYPE_LATEST)


routes = [
    ApiRoute(
        PATH,
        metrics_page,
        methods=["GET"],
        operation=Operation(
            "Prometheus metrics: requests, spans, backlog, scoring, judge, errors, store latency",
            {
                "200": {
                    "description": "The metrics, in Prometheus's text format",
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                }
            },
        ),
    )
]
