"""The span processors tracejudge puts on a TracerProvider, each with one job.

* :class:`CaptureSpanProcessor` keeps, for every live root agent, the spans started beneath it
  (up to a cap per root agent).
* :class:`IsolatingSpanProcessor` wraps one of our processors so that its failures never reach
  the code that started or ended a span, and so that it can be switched off later (the SDK has
  no way to remove a processor from a provider).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import SpanContext

from tracejudge import semconv

__all__ = [
    "DEFAULT_MAX_SPANS_PER_TRACE",
    "CaptureSpanProcessor",
    "IsolatingSpanProcessor",
    "SpanCapture",
]

logger = logging.getLogger("tracejudge.tracing")

#: How many spans the capture keeps per root agent unless told otherwise.
DEFAULT_MAX_SPANS_PER_TRACE = 10_000

_SpanKey = tuple[int, int]  # (trace id, span id): span ids alone are only unique per trace


def _key(span: ReadableSpan) -> _SpanKey | None:
    context = span.context
    if context is None:
        return None
    return context.trace_id, context.span_id


def _is_agent_span(span: ReadableSpan) -> bool:
    """Whether `span` marks an agent run, judged from what it carries when it starts (our
    `AgentTracer` spans, GenAI ``invoke_agent`` spans, OpenInference AGENT spans)."""
    attributes = span.attributes or {}
    operation = attributes.get(semconv.GEN_AI_OPERATION_NAME)
    if operation == semconv.OPERATION_INVOKE_AGENT:
        return True
    if attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OPENINFERENCE_KIND_AGENT:
        return True
    prefix = semconv.INVOKE_AGENT_SPAN_PREFIX
    return operation is None and (span.name == prefix or span.name.startswith(prefix + " "))


def _reparented(span: ReadableSpan, parent: SpanContext) -> ReadableSpan:
    """A snapshot of `span` whose parent is `parent`."""
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=parent,
        resource=span.resource,
        attributes=dict(span.attributes or {}),
        events=tuple(span.events),
        links=tuple(span.links),
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class SpanCapture:
    """The spans of one root agent: its own span and every span started beneath it, in the
    order they started, up to the processor's cap (agent spans are always kept). Spans are
    kept as the SDK's live objects, so one that ends after the agent's block (a stream read
    later, a task still running) shows its end when read.

    Attributes:
        closed: True once the root agent has ended (nothing is added any more).
        dropped: How many spans beneath the root agent the cap turned away.
        limit: The cap in force when the first span was dropped (None while none was).
    """

    __slots__ = ("_keys", "_lock", "_parents", "_spans", "closed", "dropped", "limit")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[ReadableSpan] = []
        # The (trace id, span id) of each span in `_spans` that has a context, so that the
        # processor can forget them on close without reading every span again.
        self._keys: list[_SpanKey] = []
        # Spans kept beneath a dropped span -> their nearest kept ancestor.
        self._parents: dict[_SpanKey, SpanContext] = {}
        self.closed = False
        self.dropped = 0
        self.limit: int | None = None

    @property
    def kept_count(self) -> int:
        """How many spans the capture holds."""
        return len(self._spans)

    def append(self, span: ReadableSpan, parent: SpanContext | None = None) -> None:
        """Keep `span`; `parent`, when given, stands in for its own parent (which was dropped)."""
        self._add(span, _key(span), parent)

    def _add(self, span: ReadableSpan, key: _SpanKey | None, parent: SpanContext | None) -> None:
        # `append` with the span's key already read (the processor's hot path has it).
        with self._lock:
            self._spans.append(span)
            if key is not None:
                self._keys.append(key)
                if parent is not None:
                    self._parents[key] = parent

    def keys(self) -> list[_SpanKey]:
        """The (trace id, span id) of the captured spans, in start order."""
        with self._lock:
            return list(self._keys)

    def kept(self) -> list[ReadableSpan]:
        """The captured spans as the SDK holds them, in start order."""
        with self._lock:
            return list(self._spans)

    def spans(self) -> list[ReadableSpan]:
        """All captured spans, in start order. A span kept beneath a dropped one (an agent)
        comes as a snapshot whose parent is its nearest captured ancestor, so the agent tree
        stays whole."""
        with self._lock:
            spans = list(self._spans)
            parents = dict(self._parents)
        if not parents:
            return spans
        return [
            _reparented(span, parents[key])
            if (key := _key(span)) is not None and key in parents
            else span
            for span in spans
        ]

    def subtree(self, root: ReadableSpan) -> list[ReadableSpan]:
        """`root` and the captured spans descending from it, in start order."""
        root_key = _key(root)
        if root_key is None:
            return []
        # A span starts after its parent, so one pass in start order sees parents first.
        ids = {root_key[1]}
        found: list[ReadableSpan] = []
        for span in self.spans():
            key = _key(span)
            if key is None:
                continue
            parent = span.parent
            if key == root_key or (parent is not None and parent.span_id in ids):
                ids.add(key[1])
                found.append(span)
        return found


@dataclass(frozen=True)
class _Dropped:
    """A running span the cap turned away: whose it is, and its nearest kept ancestor."""

    capture: SpanCapture
    anchor: SpanContext


class CaptureSpanProcessor(SpanProcessor):
    """Captures the spans started beneath a live root agent, keyed on span ancestry.

    A root :class:`~tracejudge.tracing.AgentTracer` calls :meth:`open` with its span; from
    then on every span whose parent is already captured is captured too, when it *starts*
    (its parent is known then). That is why LLM calls in asyncio tasks, in threads that carry
    the caller's context, in streams finished later, or in spans that end after the agent's
    own span are never lost. The agent calls :meth:`close` when it ends: the processor then
    forgets every span of that agent, so it holds nothing for spans outside live agents and
    nothing at all once every root agent has ended (see :attr:`span_count`).

    The capture is bounded: a root agent keeps at most `max_spans_per_trace` spans (None: no
    limit). Later spans beneath it are dropped and counted in :attr:`SpanCapture.dropped`
    (``AgentTracer.trace`` reports them in its warnings), and so are the spans started
    beneath a dropped span while it runs. Agent spans are never dropped, wherever they
    start, so every agent stays in the tree (attached to its nearest kept ancestor); a
    root agent with more nested agents than the cap therefore still grows by one span per
    agent. Dropped spans are remembered only while they run, by their ids.
    """

    def __init__(self, max_spans_per_trace: int | None = DEFAULT_MAX_SPANS_PER_TRACE) -> None:
        self._lock = threading.Lock()
        self._capture_by_span: dict[_SpanKey, SpanCapture] = {}
        self._dropped: dict[_SpanKey, _Dropped] = {}
        self.max_spans_per_trace = max_spans_per_trace

    @property
    def max_spans_per_trace(self) -> int | None:
        """The most spans kept per root agent (None: no limit); agent spans do not wait for
        room. A change applies to live root agents from their next span on."""
        return self._max_spans

    @max_spans_per_trace.setter
    def max_spans_per_trace(self, value: int | None) -> None:
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"max_spans_per_trace must be a positive int or None, got {value!r}")
        self._max_spans = value

    @property
    def span_count(self) -> int:
        """How many spans the processor tracks now: those kept for live root agents, and
        the dropped spans still running beneath them."""
        return len(self._capture_by_span) + len(self._dropped)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        parent = span.parent
        # Fast path: most spans of a process belong to no agent.
        if parent is None or not self._capture_by_span:
            return
        parent_key = (parent.trace_id, parent.span_id)
        capture = self._capture_by_span.get(parent_key)
        anchor: SpanContext | None = None  # set when the parent itself was dropped
        if capture is None:
            dropped = self._dropped.get(parent_key)
            if dropped is None:
                return
            capture, anchor = dropped.capture, dropped.anchor
        key = _key(span)
        if key is None:
            return
        limit = self._max_spans
        # Appending under the lock too: close() must see every key it has to forget.
        with self._lock:
            if capture.closed:
                return
            if limit is None or capture.kept_count < limit or _is_agent_span(span):
                self._capture_by_span[key] = capture
                capture._add(span, key, anchor)
                return
            self._dropped[key] = _Dropped(capture, anchor if anchor is not None else parent)
            capture.dropped += 1
            first = capture.limit is None
            if first:
                capture.limit = limit
        if first:
            logger.warning(
                "tracejudge: the capture of one root agent reached max_spans_per_trace=%d; "
                "later spans beneath it are not kept for AgentTracer.trace (agent spans are)",
                limit,
            )

    def on_end(self, span: ReadableSpan) -> None:
        if not self._dropped:
            return
        key = _key(span)
        if key is not None and key in self._dropped:
            with self._lock:
                self._dropped.pop(key, None)

    def capture_of(self, span: ReadableSpan) -> SpanCapture | None:
        """The capture that claimed `span` when it started, if an enclosing agent is live."""
        key = _key(span)
        return None if key is None else self._capture_by_span.get(key)

    def open(self, span: ReadableSpan) -> SpanCapture:
        """Start capturing beneath `span`, a root agent's span; returns the new capture."""
        key = _key(span)
        capture = SpanCapture()
        capture._add(span, key, None)
        if key is not None:
            with self._lock:
                self._capture_by_span[key] = capture
        return capture

    def close(self, capture: SpanCapture) -> None:
        """Stop capturing for `capture` and forget its spans here (the capture keeps them)."""
        with self._lock:
            capture.closed = True
            for key in capture.keys():
                if self._capture_by_span.get(key) is capture:
                    del self._capture_by_span[key]
            if self._dropped:
                for key in [k for k, d in self._dropped.items() if d.capture is capture]:
                    del self._dropped[key]

    def shutdown(self) -> None:
        with self._lock:
            for capture in self._capture_by_span.values():
                capture.closed = True
            self._capture_by_span.clear()
            self._dropped.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class IsolatingSpanProcessor(SpanProcessor):
    """Forwards to one processor of ours, never letting its errors reach the span's caller.

    Tracing must not break the user's agent: an exception from the wrapped processor (an
    exporter failing on shutdown, a bug of ours) is logged, once at WARNING then at DEBUG,
    and swallowed. :meth:`detach` switches the wrapper off for good, because the SDK offers
    no way to remove a processor from a TracerProvider.
    """

    def __init__(self, inner: SpanProcessor) -> None:
        self._inner: SpanProcessor | None = inner
        self._warned = False

    @property
    def inner(self) -> SpanProcessor | None:
        """The wrapped processor, or None once detached."""
        return self._inner

    def detach(self) -> SpanProcessor | None:
        """Stop forwarding; returns the processor that was wrapped (not shut down)."""
        inner, self._inner = self._inner, None
        return inner

    def _failed(self, what: str) -> None:
        level = logging.DEBUG if self._warned else logging.WARNING
        self._warned = True
        logger.log(level, "tracejudge span processor failed in %s", what, exc_info=True)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        inner = self._inner
        if inner is None:
            return
        try:
            inner.on_start(span, parent_context=parent_context)
        except Exception:
            self._failed("on_start")

    def on_end(self, span: ReadableSpan) -> None:
        inner = self._inner
        if inner is None:
            return
        try:
            inner.on_end(span)
        except Exception:
            self._failed("on_end")

    def shutdown(self) -> None:
        inner = self._inner
        if inner is None:
            return
        try:
            inner.shutdown()
        except Exception:
            self._failed("shutdown")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        inner = self._inner
        if inner is None:
            return True
        try:
            return inner.force_flush(timeout_millis)
        except Exception:
            self._failed("force_flush")
            return False
