"""`AgentTracer` and `agent_tracer`: one OpenTelemetry GenAI agent span per agent run."""

from __future__ import annotations

import contextvars
import inspect
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

import wrapt
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode

from tracejudge import semconv
from tracejudge.tracing._processors import CaptureSpanProcessor, SpanCapture
from tracejudge.tracing._setup import current_setup

if TYPE_CHECKING:
    from tracejudge.models import AgentInstance, MultiAgentTrace

__all__ = ["AgentTracer", "agent_tracer"]

_SCOPE = "tracejudge.tracing"
F = TypeVar("F", bound=Callable[..., Any])
_active: contextvars.ContextVar[AgentTracer | None] = contextvars.ContextVar(
    "tracejudge_active_agent", default=None
)
# The agents' tracer and the provider it came from. Asking the SDK provider again on every
# agent costs more than starting the span (it builds a scope and goes through `warnings`
# each time), and hands back the same tracer anyway.
_tracer_of: tuple[otel_trace.TracerProvider, otel_trace.Tracer] | None = None


def _agent_tracer(provider: otel_trace.TracerProvider) -> otel_trace.Tracer:
    global _tracer_of
    cached = _tracer_of
    if cached is None or cached[0] is not provider:
        cached = (provider, provider.get_tracer(_SCOPE))
        _tracer_of = cached
    return cached[1]


class AgentTracer:
    """Marks one run of an agent: ``with AgentTracer(name="researcher") as tracer: ...``
    (or ``async with``). Every LLM call made inside the block, and every agent nested in it,
    belongs to this agent.

    Entering starts an OpenTelemetry span ``invoke_agent {name}`` (kind INTERNAL) with
    ``gen_ai.operation.name=invoke_agent``, ``gen_ai.agent.name`` and ``gen_ai.agent.id``,
    and makes it the current span; a tracer entered inside another becomes its child agent.
    An exception raised in the block marks the span ERROR, is recorded on it, and propagates.

    Capture follows span ancestry, so calls made in asyncio tasks created inside the block
    and in threads that run with the caller's context (``context_propagating_executor``,
    ``asyncio.to_thread``, ``contextvars.copy_context().run``) are included; a plain
    ``threading.Thread`` or ``loop.run_in_executor`` does not carry the context, and its calls
    are not. Without ``ComposoTracer.init`` (or with no SDK TracerProvider at all, or when a
    sampler drops the agent's span) the block still runs and :attr:`trace` holds this agent
    with no interactions and a warning that says why. The outermost tracer's capture is
    released from global state when it exits; the tracer itself keeps its spans, so
    :attr:`trace` works afterwards.

    Attributes:
        name: The agent's name (``agent_<hex>`` when none was given).
        agent_id: The id of this run (a UUID when none was given); also :attr:`id`.
        span: The agent's OpenTelemetry span (an invalid span until entered).
    """

    def __init__(self, name: str | None = None, agent_id: str | None = None) -> None:
        self.name: str = name or f"agent_{uuid.uuid4().hex[:8]}"
        self.agent_id: str = agent_id or str(uuid.uuid4())
        self.span: Span = INVALID_SPAN
        self._token: contextvars.Token[otel_context.Context] | None = None
        self._active_token: contextvars.Token[AgentTracer | None] | None = None
        self._entered = False
        self._capture: SpanCapture | None = None
        self._owned_by: CaptureSpanProcessor | None = None  # set when this is a root agent

    @classmethod
    def get_active(cls) -> AgentTracer | None:
        """The innermost AgentTracer whose block the caller is in (in this context), or
        None (the Composo SDK's method)."""
        return _active.get()

    @property
    def id(self) -> str:
        """The agent instance id (same as :attr:`agent_id`)."""
        return self.agent_id

    @property
    def agent_name(self) -> str:
        """The agent's name (same as :attr:`name`; the Composo SDK's spelling)."""
        return self.name

    def __repr__(self) -> str:
        return f"AgentTracer(name={self.name!r}, agent_id={self.agent_id!r})"

    # -- context manager ----------------------------------------------------------------------

    def __enter__(self) -> AgentTracer:
        if self._entered:
            raise RuntimeError(
                "an AgentTracer marks one agent run and can be entered once; "
                "create a new AgentTracer for each run"
            )
        self._entered = True
        setup = current_setup()
        provider = setup.provider if setup is not None else otel_trace.get_tracer_provider()
        span = _agent_tracer(provider).start_span(
            f"{semconv.INVOKE_AGENT_SPAN_PREFIX} {self.name}",
            kind=SpanKind.INTERNAL,
            attributes={
                semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT,
                semconv.GEN_AI_AGENT_NAME: self.name,
                semconv.GEN_AI_AGENT_ID: self.agent_id,
            },
        )
        self.span = span
        if setup is not None and isinstance(span, ReadableSpan):
            # Nested in a live agent: the enclosing capture claimed this span as it started.
            self._capture = setup.capture.capture_of(span)
            if self._capture is None:
                self._capture = setup.capture.open(span)
                self._owned_by = setup.capture
        self._token = otel_context.attach(otel_trace.set_span_in_context(span))
        self._active_token = _active.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        span = self.span
        try:
            if exc is not None and span.is_recording():
                span.set_attribute(semconv.ERROR_TYPE, type(exc).__qualname__)
                span.record_exception(exc, escaped=True)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        finally:
            if self._active_token is not None:
                try:
                    _active.reset(self._active_token)
                except ValueError:  # exited in another context than it was entered in
                    pass
                self._active_token = None
            if self._token is not None:
                otel_context.detach(self._token)
                self._token = None
            span.end()
            if self._owned_by is not None and self._capture is not None:
                self._owned_by.close(self._capture)
                self._owned_by = None

    async def __aenter__(self) -> AgentTracer:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, traceback)

    # -- results ------------------------------------------------------------------------------

    @property
    def spans(self) -> list[ReadableSpan]:
        """This agent's span and every captured span beneath it, in start order. Spans still
        running appear with ``end_time`` None."""
        if self._capture is not None:
            return self._capture.subtree(self.span)  # type: ignore[arg-type]  # an SDK span
        if isinstance(self.span, ReadableSpan):
            return [self.span]
        return []

    @property
    def trace(self) -> MultiAgentTrace:
        """The `MultiAgentTrace` rooted at this agent, with every agent nested in it.

        Readable during the block (what has been captured so far) and after it.
        """
        from tracejudge.models import AgentInstance, MultiAgentTrace

        trace: MultiAgentTrace | None = None
        spans = self.spans
        if spans:
            from tracejudge.convert import traces_from_spans

            for candidate in traces_from_spans(spans):
                if self.agent_id in candidate.agent_instance_by_id:
                    trace = _rerooted(candidate, self.agent_id)
                    break
        if trace is None:
            trace = MultiAgentTrace.from_agent(AgentInstance(id=self.agent_id, name=self.name))
        if self._capture is None and self._entered:
            trace.warnings.append(
                "nothing was captured for this agent: tracing was not initialised when it "
                "started (call ComposoTracer.init(...) first) or its span was not recorded"
            )
        elif self._capture is not None and self._capture.dropped:
            trace.warnings.append(self._dropped_warning(self._capture))
        return trace

    def _dropped_warning(self, capture: SpanCapture) -> str:
        kept = capture.kept()
        whose = "this agent"
        first: object = kept[0] if kept else None  # (the SDK's spans are both span types)
        if kept and first is not self.span:
            root_name = (kept[0].attributes or {}).get(semconv.GEN_AI_AGENT_NAME)
            whose = f"its root agent {root_name!r}"
        return (
            f"capture kept the first {capture.limit} spans of {whose}; {capture.dropped} later "
            "spans were dropped (agent spans are always kept), so interactions may be missing "
            "— raise ComposoTracer.init(max_spans_per_trace=...)"
        )

    def get_multi_agent_trace(self) -> MultiAgentTrace:
        """The same as :attr:`trace` (the Composo SDK's method name)."""
        return self.trace

    def get_agent_instance(self) -> AgentInstance:
        """This agent's own `AgentInstance` (the Composo SDK's method name)."""
        trace = self.trace
        return trace.agent_instance_by_id[trace.root_agent_instance_id]

    def get_raw_spans(self) -> list[ReadableSpan]:
        """The same as :attr:`spans` (the Composo SDK's method name)."""
        return self.spans


def _rerooted(trace: MultiAgentTrace, root_id: str) -> MultiAgentTrace:
    """`trace` with `root_id` as its root and only the agents reachable from it."""
    if trace.root_agent_instance_id == root_id:
        return trace
    from tracejudge.models import MultiAgentTrace

    keep: dict[str, Any] = {}
    stack = [root_id]
    while stack:
        agent = trace.agent_instance_by_id.get(stack.pop())
        if agent is not None and agent.id not in keep:
            keep[agent.id] = agent
            stack.extend(reversed(agent.child_ids))
    return MultiAgentTrace(
        root_agent_instance_id=root_id,
        agent_instance_by_id=keep,
        warnings=trace.warnings,
        trace_id=trace.trace_id,
    )


# -- decorator --------------------------------------------------------------------------------


@overload
def agent_tracer(name: F) -> F: ...


@overload
def agent_tracer(name: str | None = None, *, agent_id: str | None = None) -> Callable[[F], F]: ...


def agent_tracer(
    name: str | Callable[..., Any] | None = None, *, agent_id: str | None = None
) -> Any:
    """Run each call of the decorated function or method as one agent (an `AgentTracer`).

    Use ``@agent_tracer``, ``@agent_tracer()`` or ``@agent_tracer(name="planner")``; the
    agent is named after the function unless `name` is given. Works on sync and ``async``
    functions and methods; the wrapper keeps the function's name, signature and docstring,
    and an async function stays a coroutine function (its agent starts when awaited). A
    fixed `agent_id` gives every call the same id, so leave it unset for repeated calls.
    Generator functions are refused: their body runs after the call returns, so wrap the
    iteration in ``with AgentTracer(...)`` instead.
    """
    # Bare use (`@agent_tracer`): the function itself arrives as `name`. A classmethod
    # object is not callable before Python 3.13, so test for it as well.
    if callable(name) or isinstance(name, (classmethod, staticmethod)):
        return _decorate(name, None, agent_id)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"agent_tracer name must be a string, got {type(name).__name__}")

    def decorator(func: F) -> F:
        return _decorate(func, name, agent_id)

    return decorator


def _decorate(func: F, name: str | None, agent_id: str | None) -> F:
    target = func.__func__ if isinstance(func, (classmethod, staticmethod)) else func
    if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
        raise TypeError(
            f"agent_tracer cannot wrap the generator function {target.__name__!r}; "
            "use `with AgentTracer(...)` around the iteration instead"
        )
    agent_name = name or getattr(target, "__name__", None) or "agent"

    if inspect.iscoroutinefunction(target):

        @wrapt.decorator
        async def traced_async(
            wrapped: Callable[..., Any],
            instance: Any,
            args: tuple[Any, ...],
            kwargs: dict[str, Any],
        ) -> Any:
            async with AgentTracer(name=agent_name, agent_id=agent_id):
                return await wrapped(*args, **kwargs)

        return cast(F, traced_async(func))  # a FunctionWrapper: a proxy with func's signature

    @wrapt.decorator
    def traced(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        with AgentTracer(name=agent_name, agent_id=agent_id):
            return wrapped(*args, **kwargs)

    return cast(F, traced(func))  # a FunctionWrapper: a proxy with func's signature
