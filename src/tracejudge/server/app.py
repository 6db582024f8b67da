"""The ASGI app: routes, middleware, error answers, and the lifespan that starts the workers.

`create_app(config)` builds it; uvicorn serves it (`tracejudge serve`). Every error
is a JSON `{"detail": ...}` answer: validation errors are 422 naming the field, and
no answer ever carries a stack trace (unexpected errors are logged once, and answered
500 with a plain sentence on a connection that stays open).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tracejudge import checks, criteria
from tracejudge._advice import Surface
from tracejudge._http import HTTPOptions
from tracejudge.errors import ConfigurationError
from tracejudge.evaluation import DEFAULT_EXPLORATION, TraceCheck, judge_model, resolve_prices
from tracejudge.evaluation.criteria_file import read_criteria_file
from tracejudge.evaluation.settings import EvaluationSettings, build_judge, build_service
from tracejudge.judges import Judge
from tracejudge.models import PriceTable
from tracejudge.server.api import (
    attribution,
    evals,
    export,
    health,
    labels,
    monitors,
    rules_api,
    runs,
    traces,
    trends,
)
from tracejudge.server.api.alerts import AlertLoop
from tracejudge.server.api.metrics import Metrics, MetricsMiddleware, TimedStore
from tracejudge.server.api.metrics import routes as metrics_routes
from tracejudge.server.config import ServerConfig
from tracejudge.server.http.auth import AuthMiddleware, KeyRing
from tracejudge.server.http.buckets import TokenBuckets
from tracejudge.server.http.errors import ApiError, UnexpectedErrorMiddleware, error_response
from tracejudge.server.http.guard import HostPolicy, WebGuardMiddleware
from tracejudge.server.http.limits import LimitsMiddleware
from tracejudge.server.http.offload import Offload, ServiceLoop
from tracejudge.server.intake import otlp
from tracejudge.server.openapi import openapi_document
from tracejudge.server.pages import list_page, rules_page, run_pages, sessions_api, trends_page, ui
from tracejudge.server.store import StoreFullError, StoreOutageError, open_store
from tracejudge.server.work import scoring
from tracejudge.server.work.backlog import Backlog
from tracejudge.server.work.budget import DailyBudget
from tracejudge.server.work.context import ServerContext, in_thread
from tracejudge.server.work.heap import HeapTrimmer
from tracejudge.server.work.readiness import Readiness
from tracejudge.server.work.retention import Pruner
from tracejudge.server.work.rules import RuleBody, check_judged, read_rules_file
from tracejudge.server.work.sessions import judging as sessions_judging
from tracejudge.server.work.supervise import Supervisor
from tracejudge.server.work.tasks import TaskRunner
from tracejudge.server.work.writeback import WriteBack

__all__ = ["create_app", "judge_settings", "rules_from_file", "server_criteria"]

logger = logging.getLogger("tracejudge.server")


def judge_settings(config: ServerConfig) -> EvaluationSettings:
    """What the server's judge and evaluation service are built from: `--judge` (else the
    environment's judge), `--judge-base-url`, `--max-concurrency` (the judge's requests in
    flight and the service's judge calls alike), `--judge-timeout-seconds`,
    `--judge-max-tokens`, `--judge-max-input-tokens`, `--single-call` and `--no-explore`.
    The prices are `judge_pricing`'s; the budgets, `DailyBudget`'s."""
    return EvaluationSettings(
        judge=config.judge,
        base_url=config.judge_base_url,
        http=HTTPOptions(
            timeout=config.judge_timeout_seconds, max_concurrency=config.max_concurrency
        ),
        max_tokens=config.judge_max_tokens,
        max_input_tokens=config.judge_max_input_tokens,
        exploration=None if config.no_explore else DEFAULT_EXPLORATION,
        single_call=config.single_call,
        surface=Surface.SERVER,
    )


def server_criteria(config: ServerConfig, judged: bool) -> list[str | TraceCheck]:
    """What ingested traces are scored against: the checks always; the criteria file's (or
    the agent criteria) when a judge is configured."""
    texts: list[str] = []
    if config.criteria_file:
        texts = read_criteria_file(config.criteria_file, "--criteria-file")
        if not judged:
            raise ConfigurationError(
                "--criteria-file gives criteria for a judge, but no judge is configured: "
                "add --judge (e.g. openai:gpt-4.1-mini), or leave out --criteria-file"
            )
    elif judged:
        texts = list(criteria.agent)
    return [*texts, *checks.ALL]


def rules_from_file(config: ServerConfig, judged: bool) -> list[RuleBody] | None:
    """The `--rules` file's rules, checked (None: no file). `ConfigurationError`, one line,
    when the file is wrong, a rule needs a judge there is not, or `--criteria-file` is
    given too (the rules say what is judged)."""
    if config.rules_file is None:
        return None
    if config.criteria_file:
        raise ConfigurationError(
            "--criteria-file and --rules: the rules say what is judged; put the file's "
            'criteria in a rule (criteria = ["..."]) and leave out --criteria-file'
        )
    rules = read_rules_file(config.rules_file)
    check_judged(rules, judged, f"--rules {config.rules_file}")
    return rules


def judge_pricing(config: ServerConfig, judge: Judge | None) -> tuple[PriceTable, bool, str | None]:
    """The price table (`--judge-prices`), whether the judge's model has a price in it,
    and the one line to say at start when a dollar budget cannot be enforced (its model
    has no price) and the token budget is left to do it. Raises `ConfigurationError`
    when a dollar budget cannot be enforced and there is no token budget either."""
    table = resolve_prices(config.judge_prices, option="--judge-prices")
    model = judge_model(judge) if judge is not None else None
    priced = table.get(model) is not None
    dollars = [
        flag
        for flag, value in (
            ("--max-judge-cost-per-day", config.max_judge_cost_per_day),
            (
                "--max-judge-cost-per-criterion-per-day",
                config.max_judge_cost_per_criterion_per_day,
            ),
        )
        if value is not None
    ]
    if judge is None or priced or not dollars:
        return table, priced, None
    problem = f"{dollars[0]}: the judge's model {model!r} has no price, so it cannot be enforced"
    tokens = config.max_judge_tokens_per_day or config.max_judge_tokens_per_criterion_per_day
    if tokens is None:
        raise ConfigurationError(
            f"{problem}; give its price with --judge-prices FILE (or TRACEJUDGE_JUDGE_PRICES; "
            f'JSON: {{"{model}": {{"input": 0.3, "output": 1.2}}}}, dollars per million '
            "tokens) or budget tokens with --max-judge-tokens-per-day N"
        )
    return table, priced, f"{problem}; the token budget applies"


async def _openapi(request: Request) -> JSONResponse:
    return JSONResponse(request.app.state.openapi)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = {
        404: f"nothing at {request.url.path}; see /openapi.json for this server's endpoints",
        405: f"{request.method} is not allowed on {request.url.path}",
    }.get(exc.status_code, str(exc.detail))
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)


async def _store_outage(request: Request, exc: Exception) -> Response:
    """503 with `Retry-After` (what OTLP exporters and HTTP clients retry) while the store
    cannot take calls: unreachable, restarting, locked, out of space. Nothing was stored.
    The reason, which may name the database's host, stays in the log."""
    assert isinstance(exc, StoreOutageError)
    if isinstance(exc, StoreFullError):
        detail = (
            "no space left on the server's store: nothing was stored; retry after "
            "Retry-After seconds (the operator must free space on the store's disk)"
        )
    else:
        detail = (
            "the server's store is unavailable for now: nothing was stored; retry after "
            "Retry-After seconds"
        )
    error = ApiError(503, detail, headers={"Retry-After": str(exc.retry_after)})
    answer = otlp.error_answer(request.scope, error)
    assert isinstance(answer, Response)
    return answer


async def _client_gone(request: Request, exc: Exception) -> Response:
    # The client hung up before its request was read: its choice, not a failure here.
    # Nothing can be answered; one line at DEBUG, not a traceback per disconnect.
    client = request.client
    logger.debug(
        "tracejudge: %s %s: the client (%s) hung up before its request was read",
        request.method,
        request.url.path,
        f"{client.host}:{client.port}" if client else "unknown",
    )
    return Response(status_code=400)


def create_app(
    config: ServerConfig,
    *,
    judge: Judge | None = None,
    checks_only: bool = False,
    criteria: Sequence[str | TraceCheck] | None = None,
) -> Starlette:
    """The server's ASGI app. `judge` overrides the configured one; `checks_only` runs
    without any judge whatever the environment says. `criteria` (checks, and texts when
    there is a judge) replaces what ingested traces are scored against; re-scoring
    through the API still takes any criterion."""
    settings = judge_settings(config)
    chosen = judge if judge is not None else (None if checks_only else build_judge(settings))
    scoring_criteria: Sequence[str | TraceCheck]
    if criteria is None:
        scoring_criteria = server_criteria(config, chosen is not None)
    else:
        if chosen is None and any(isinstance(c, str) for c in criteria):
            raise ConfigurationError(
                "criteria holds natural-language criteria, but no judge is configured: "
                "give a judge, or pass checks only"
            )
        scoring_criteria = list(criteria)
    if config.single_call and chosen is not None and getattr(chosen, "judge_batch", None) is None:
        # Said now, in one line, rather than when the workers start.
        raise ConfigurationError(
            f"--single-call: the judge {getattr(chosen, 'name', chosen)!r} cannot judge "
            "several criteria in one call; leave out --single-call"
        )
    file_rules = rules_from_file(config, chosen is not None)
    prices, priced, budget_note = judge_pricing(config, chosen)
    settings = dataclasses.replace(settings, prices=prices)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = TimedStore.around(await in_thread(open_store, config.db), metrics)
        if file_rules is not None:  # the file owns its rules: they replace the stored ones
            await in_thread(
                store.rules.load_file, [(r.name, r.model_dump_json()) for r in file_rules]
            )
        # Every judgement is counted in the store (the daily budgets, shared by replicas).
        budget = DailyBudget.from_config(store, config, priced=priced)
        budget.on_spent = metrics.judge_spent
        service = ServiceLoop(
            build_service(
                settings, judge=chosen, spend_limits=[budget] if chosen is not None else ()
            )
        )
        supervisor = Supervisor(config.stall_seconds)
        backlog = Backlog(store, config.max_backlog_traces)
        runner = TaskRunner(
            store,
            {},
            supervisor=supervisor,
            workers=config.workers,
            lease_seconds=config.task_lease_seconds,
            attempts=config.task_attempts,
            poll_seconds=config.poll_seconds,
        )
        context = ServerContext(
            config=config,
            store=store,
            service=service,
            offload=Offload(config.parse_threads),
            runner=runner,
            criteria=scoring_criteria,
            judge_label=app.state.judge_label,
            writeback=(
                WriteBack(config.evaluation_events_endpoint, config.evaluation_events_signal)
                if config.evaluation_events_endpoint
                else None
            ),
            readiness=Readiness(store, supervisor, backlog),
            backlog=backlog,
        )
        every = {
            **evals.handlers(context),
            **scoring.handlers(context),
            **sessions_judging.handlers(context),
        }
        for kind, handler in every.items():
            runner.handlers[kind] = metrics.counted(kind, handler)
        app.state.context = context
        pruner = Pruner(
            store,
            task_retention_seconds=config.task_retention_hours * 3600,
            retain_seconds=None if config.retain_days is None else config.retain_days * 86400,
            min_interval=config.poll_seconds,
        )
        await runner.start()
        supervisor.spawn("sweeper", scoring.TraceSweeper(context).run)
        supervisor.spawn("pruner", pruner.run)
        supervisor.spawn("heap", HeapTrimmer().run)
        supervisor.spawn(
            "alerts",
            AlertLoop(
                store,
                base_url=config.public_url or f"http://{config.host}:{config.port}",
                interval=config.alert_interval_seconds,
                retry_seconds=config.alert_retry_seconds,
                attempts=config.alert_attempts,
            ).run,
        )
        try:
            yield
        finally:
            await supervisor.stop()
            await service.aclose()
            if context.writeback is not None:
                await in_thread(context.writeback.shutdown)
            await in_thread(store.close)

    metrics = Metrics()
    routes = [
        *health.routes,
        Route("/openapi.json", _openapi, methods=["GET"]),
        *evals.routes,
        *traces.routes,
        *attribution.routes,
        *labels.routes,
        *runs.routes,
        *run_pages.routes,
        *otlp.routes,
        *list_page.routes,
        *ui.routes,
        *rules_api.routes,
        *rules_page.routes,
        *sessions_api.routes,
        *trends.routes,
        *trends_page.routes,
        *monitors.routes,
        *export.routes,
        *metrics_routes,
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(MetricsMiddleware, metrics=metrics, routes=routes),
            Middleware(UnexpectedErrorMiddleware),
            Middleware(
                WebGuardMiddleware,
                policy=HostPolicy(config.host, config.allowed_hosts, keys=bool(config.api_keys)),
            ),
            Middleware(AuthMiddleware, keys=KeyRing(config.api_keys)),
            Middleware(
                LimitsMiddleware,
                max_body_bytes=config.max_body_bytes,
                buckets=TokenBuckets(config.rate_limit, config.rate_burst),
                answer=otlp.error_answer,
            ),
        ],
        exception_handlers={
            ApiError: _api_error,
            HTTPException: _http_error,
            ClientDisconnect: _client_gone,
            StoreOutageError: _store_outage,
        },
        lifespan=lifespan,
    )
    app.state.openapi = openapi_document(app.routes)
    app.state.metrics = metrics
    app.state.judge_label = getattr(chosen, "name", None) if chosen is not None else None
    app.state.text_criteria = sum(isinstance(c, str) for c in scoring_criteria)
    if file_rules is not None:  # the rules say what is judged
        app.state.text_criteria = len({c.text for r in file_rules for c in r.criteria})
    app.state.budget_note = budget_note
    return app
