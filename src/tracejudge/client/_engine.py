"""The asynchronous core behind both clients: which backend judges, and how a call runs.

Deterministic checks always run in process. Text criteria go to the in-process judge
through the evaluation service, or to the remote server as wire requests; `block=False`
returns task ids instead (local tasks in this client's registry, remote ones on the
server). Where evaluation runs is `tracejudge._env.choose_backend`'s decision.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Coroutine, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from tracejudge import _env
from tracejudge._http import HTTPOptions
from tracejudge.client._inputs import (
    coerce_trace,
    conversation,
    evaluate_latest_flag,
)
from tracejudge.client._remote import RemoteServer
from tracejudge.errors import BadRequestError
from tracejudge.evaluation import (
    DEFAULT_EXPLORATION,
    Criterion,
    PricesOption,
    TaskRegistry,
    TraceCheck,
    gather_all,
    validate_criteria,
    validate_explanation_cleaning,
    validate_tags,
)
from tracejudge.evaluation.attribution import AttributionRequest
from tracejudge.evaluation.service import ConversationRequest, TraceRequest
from tracejudge.evaluation.settings import EvaluationSettings, build_service
from tracejudge.judges import CacheOption, ExplorationLimits, Judge
from tracejudge.models import (
    Attribution,
    EvaluationResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    RewardRequest,
    TaskResponse,
    TraceRewardRequest,
    check_latest_only_core,
)

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL_CORE", "Engine", "EvaluateResult", "TraceResult"]


class _DefaultURL(str):
    """The default base URL, told apart from the same URL passed explicitly."""


#: Where the remote Composo platform lives.
DEFAULT_BASE_URL: str = _DefaultURL("https://platform.composo.ai")
#: The model core sent to a remote server when none is chosen.
DEFAULT_MODEL_CORE = "align-20251111"

EvaluateResult = EvaluationResponse | list[EvaluationResponse] | dict[str, Any] | list[Any]
TraceResult = MultiAgentTraceResponse | list[MultiAgentTraceResponse] | dict[str, Any] | list[Any]
# A criterion a remote server judges, as sent to it.
_WireRequest = RewardRequest | TraceRewardRequest


def _wire(model: type[BaseModel], **fields: Any) -> Any:
    """A wire request, its validation errors told as the caller's bad request."""
    try:
        return model(**fields)
    except ValidationError as exc:
        raise BadRequestError(f"the request for the server is not valid: {exc}") from exc


def _in_order(
    count: int, remote: dict[int, _WireRequest], local: Sequence[Coroutine[Any, Any, Any]]
) -> list[Coroutine[Any, Any, Any] | _WireRequest]:
    """The remote requests at their criteria's places, the local work in the others."""
    rest = iter(local)
    return [remote[index] if index in remote else next(rest) for index in range(count)]


def _emit_events(trace: MultiAgentTrace, results: Sequence[Any]) -> None:
    """Write the scores back onto the trace through the process's OpenTelemetry
    providers (tracejudge's TracerProvider when `ComposoTracer.init` made one)."""
    from tracejudge.evaluation.events import EvaluationEventEmitter
    from tracejudge.tracing import ComposoTracer

    responses = [r for r in results if isinstance(r, MultiAgentTraceResponse)]
    emitter = EvaluationEventEmitter(tracer_provider=ComposoTracer.tracer_provider())
    emitter.emit(trace, responses)


def _one_or_list(results: list[Any], as_list: bool) -> list[Any] | Any:
    """A list for criteria given as a list (even of one), one answer for one criterion."""
    if as_list:
        return results
    one: Any = results[0]
    return one


class Engine:
    """One backend (in-process service and/or remote server) and one task registry."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str,
        model_core: str | None,
        options: HTTPOptions,
        judge: str | Judge | None,
        cache: CacheOption,
        emit_events: bool = False,
        prices: PricesOption = None,
        single_call: bool = False,
        exploration: ExplorationLimits | None = DEFAULT_EXPLORATION,
    ) -> None:
        self.model_core = model_core
        self.emit_events = emit_events
        self.remote: RemoteServer | None = None
        self._owns_judge = False
        self._tasks = TaskRegistry()
        self._closed = False
        self._released = False
        settings = EvaluationSettings(
            judge=judge,
            http=options,
            cache=cache,
            exploration=exploration,
            single_call=single_call,
            prices=prices,
        )
        choice = _env.choose_backend(
            judge_given=judge is not None,
            base_url_given=not isinstance(base_url, _DefaultURL),
            api_key=api_key,
        )
        if choice.remote:
            self.remote = RemoteServer(
                base_url, choice.api_key, options, default_url=str(DEFAULT_BASE_URL)
            )
        if choice.remote or choice.backend is _env.Backend.NONE:
            self.service = build_service(settings, judge=None)
        else:
            # `judge=`, else the environment's judge (TRACEJUDGE_JUDGE, OPENAI_*): one the
            # environment names but that cannot be built is reported when a text
            # criterion needs it, not here: checks need no judge.
            self.service = build_service(settings)
        self._owns_judge = self.service.judge is not None and self.service.judge is not judge

    @property
    def judge(self) -> Judge | None:
        return self.service.judge

    def describe(self) -> str:
        if self.judge is not None:
            return f"judge={getattr(self.judge, 'name', self.judge)!r}"
        if self.remote is not None:
            return f"base_url={self.remote.base_url!r}"
        return "no judge configured"

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the client is closed; create a new one")

    def _local(self, criterion: Criterion) -> bool:
        """Checks always run here; text criteria here unless a remote server judges them."""
        return isinstance(criterion, TraceCheck) or self.remote is None

    async def _finish(
        self, work: Sequence[Coroutine[Any, Any, Any] | _WireRequest], block: bool
    ) -> list[Any]:
        """Await local work and send remote requests (`block`), or start them all as tasks."""
        remote = self.remote

        def one(item: Coroutine[Any, Any, Any] | _WireRequest) -> Awaitable[Any]:
            if isinstance(item, BaseModel):
                assert remote is not None
                if not block:
                    return remote.submit(item)
                if isinstance(item, RewardRequest):
                    return remote.evaluate(item)
                return remote.evaluate_trace(item)
            if block:
                return item
            return self._submit(item)

        return await gather_all(one(item) for item in work)

    async def _submit(self, work: Coroutine[Any, Any, Any]) -> dict[str, Any]:
        return {"task_id": self._tasks.submit(work)}

    # ------------------------------------------------------------------ evaluate

    async def evaluate(
        self,
        *,
        messages: Any,
        criteria: Any,
        system: Any,
        tools: Any,
        result: Any,
        block: bool,
        tags: Any,
        evaluate_latest: Any,
        explanation_cleaning: Any,
        input: Any,
    ) -> EvaluateResult:
        self._check_open()
        checked, as_list = validate_criteria(criteria)
        clean_tags = validate_tags(tags)
        clean = validate_explanation_cleaning(explanation_cleaning)
        latest = evaluate_latest_flag(evaluate_latest)
        check_latest_only_core(self.model_core, latest)
        chat = conversation(
            messages=messages, input=input, result=result, system=system, tools=tools
        )
        # The wire requests first: a bad one fails the call before any work is created.
        remote = {
            index: _wire(
                RewardRequest,
                evaluation_criteria=criterion,
                model_core=self.model_core or DEFAULT_MODEL_CORE,
                tags=clean_tags or {},
                messages=chat.messages,
                system=chat.system,
                tools=chat.tools,
                evaluate_latest=latest,
                explanation_cleaning="end_user" if clean else None,
            )
            for index, criterion in enumerate(checked)
            if not self._local(criterion)
        }
        local = checked.where(self._local)  # checked once, above
        local_work = (
            self.service.conversation_work(
                ConversationRequest(
                    messages=chat.messages,
                    criteria=local,
                    system=chat.system,
                    tools=chat.tools,
                    evaluate_latest=latest,
                    clean_explanation=clean,
                )
            )
            if local
            else []
        )
        work = _in_order(len(checked), remote, local_work)
        results = await self._finish(work, block)
        return _one_or_list(results, as_list)

    # ------------------------------------------------------------------ evaluate_trace

    async def evaluate_trace(
        self,
        *,
        trace: Any,
        criteria: Any,
        model_core: str | None,
        block: bool,
        tags: Any,
        evaluate_latest: Any,
        emit_events: bool | None = None,
    ) -> TraceResult:
        self._check_open()
        if evaluate_latest is not None and evaluate_latest is not False:
            raise BadRequestError(
                f"evaluate_latest={evaluate_latest!r}: evaluate_latest must be False for trace "
                "evaluations (every agent's responses are judged); leave it unset"
            )
        checked, as_list = validate_criteria(criteria)
        clean_tags = validate_tags(tags)
        multi = coerce_trace(trace)
        # The trace is checked once, before any work is created: by the service's request
        # when some criteria are judged here, else here.
        local = checked.where(self._local)
        request = TraceRequest(trace=multi, criteria=local) if local else None
        if request is None:
            multi.require_llm_interactions()
        core = model_core or self.model_core or DEFAULT_MODEL_CORE
        remote = {
            index: _wire(
                TraceRewardRequest,
                evaluation_criteria=criterion,
                model_core=core,
                tags=clean_tags or {},
                trace=multi,
                evaluate_latest=False,
            )
            for index, criterion in enumerate(checked)
            if not self._local(criterion)
        }
        local_work = self.service.trace_work(request) if request is not None else []
        work = _in_order(len(checked), remote, local_work)
        results = await self._finish(work, block)
        if block and (self.emit_events if emit_events is None else emit_events):
            _emit_events(multi, results)
        return _one_or_list(results, as_list)

    # ------------------------------------------------------------------ attribute

    async def attribute(
        self,
        *,
        trace: Any,
        methods: Any,
        criteria: Any,
        responses: Any,
        outcome: str | None,
        failed: bool | None,
        max_step_chars: int,
    ) -> Attribution:
        """Forwarded to the evaluation service, in process, unless it needs a judge (a
        judge method, a text criterion) that only the remote server has: then the server's
        `POST /api/v1/attribution` attributes it, with its judge and within its budget.
        Deterministic findings need no judge and are always made here."""
        self._check_open()
        multi = coerce_trace(trace)
        request = AttributionRequest(
            trace=multi,
            methods=[methods] if isinstance(methods, str) else list(methods),
            criteria=None if criteria is None else validate_criteria(criteria)[0],
            responses=responses,
            outcome=outcome,
            failed=failed,
            max_step_chars=max_step_chars,
        )
        judged = [m for m in request.checked_methods() if m != "checks"]
        texts = any(isinstance(c, str) for c in request.criteria or ())
        if (judged or texts) and self.service.judge is None and self.remote is not None:
            return await self.remote.attribute(_attribution_body(request))
        return await self.service.attribute(request)

    # ------------------------------------------------------------------ tasks, closing

    async def get_task(self, task_id: str) -> TaskResponse:
        self._check_open()
        if task_id in self._tasks or self.remote is None:
            return self._tasks.get(task_id)
        return await self.remote.task(task_id)

    def refuse_work(self) -> None:
        """Refuse new evaluations from now on (releasing is `aclose`'s job)."""
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True
        if self._released:
            return
        self._released = True
        await self._tasks.aclose()
        if self.remote is not None:
            await self.remote.aclose()
        if self.judge is not None and self._owns_judge:
            await self.judge.aclose()


def _attribution_body(request: AttributionRequest) -> dict[str, Any]:
    """`request` as the body of a tracejudge server's `POST /api/v1/attribution`: text
    criteria as they are, the built-in checks by name (the server knows no other)."""
    from tracejudge.evaluation import ALL as BUILT_IN

    body: dict[str, Any] = {
        "trace": json.loads(request.trace.to_json()),
        "methods": list(request.checked_methods()),
        "max_step_chars": request.max_step_chars,
    }
    if request.criteria is not None:
        known = {str(c.name) for c in BUILT_IN}
        own = [str(c.name) for c in request.criteria if not isinstance(c, str)]
        unknown = [name for name in own if name not in known]
        if unknown:
            raise BadRequestError(
                f"criteria: the remote server knows the built-in checks by name only "
                f"({', '.join(sorted(known))}), not {unknown[0]!r}; pass responses=... (the "
                "answers of evaluate_trace, used as they are) instead of criteria, or "
                "judge=... to attribute in process"
            )
        body["criteria"] = [c for c in request.criteria if isinstance(c, str)]
        body["checks"] = own
    if request.responses is not None:
        body["responses"] = [r.model_dump(mode="json") for r in request.responses]
    for field in ("outcome", "failed"):
        value = getattr(request, field)
        if value is not None:
            body[field] = value
    return body
