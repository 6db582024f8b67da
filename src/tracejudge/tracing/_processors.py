"""The span processors tracejudge puts on a TracerProvider, each with one job.

* :class:`CaptureSpanProcessor` keeps, for every live root agent, the spans started beneath it.
* :class:`IsolatingSpanProcessor` wraps one of our processors so that its failures never reach
  the code that started or ended a span, and so that it can be switched off later (the SDK has
  no way to remove a processor from a provider).
"""

from __future__ import annotations

import logging
import threading

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

__all__ = ["CaptureSpanProcessor", "IsolatingSpanProcessor", "SpanCapture"]

logger = logging.getLogger("tracejudge.tracing")

_SpanKey = tuple[int, int]  # (trace id, span id): span ids alone are only unique per trace


def _key(span: ReadableSpan) -> _SpanKey | None:
    context = span.context
    if context is None:
        return None
    return context.trace_id, context.span_id


class SpanCapture:
    """The spans of one root agent: its own span and every span started beneath it, in the
    order they started. Spans are kept as the SDK's live objects, so one that ends after the
    agent's block (a stream read later, a task still running) shows its end when read."""

    __slots__ = ("_lock", "_spans", "closed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[ReadableSpan] = []
        self.closed = False

    def append(self, span: ReadableSpan) -> None:
        with self._lock:
            self._spans.append(span)

    def spans(self) -> list[ReadableSpan]:
        """All captured spans, in start order."""
        with self._lock:
            return list(self._spans)

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


class CaptureSpanProcessor(SpanProcessor):
    """Captures the spans started beneath a live root agent, keyed on span ancestry.

    A root :class:`~tracejudge.tracing.AgentTracer` calls :meth:`open` with its span; from
    then on every span whose parent is already captured is captured too, when it *starts*
    (its parent is known then). That is why LLM calls in asyncio tasks, in threads that carry
    the caller's context, in streams finished later, or in spans that end after the agent's
    own span are never lost. The agent calls :meth:`close` when it ends: the processor then
    forgets every span of that agent, so it holds nothing for spans outside live agents and
    nothing at all once every root agent has ended (see :attr:`span_count`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._capture_by_span: dict[_SpanKey, SpanCapture] = {}

    @property
    def span_count(self) -> int:
        """How many spans the processor tracks now (those of live root agents)."""
        return len(self._capture_by_span)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        parent = span.parent
        # Fast path: most spans of a process belong to no agent.
        if parent is None or not self._capture_by_span:
            return
        capture = self._capture_by_span.get((parent.trace_id, parent.span_id))
        key = _key(span)
        if capture is None or key is None:
            return
        # Appending under the lock too: close() must see every key it has to forget.
        with self._lock:
            if capture.closed:
                return
            self._capture_by_span[key] = capture
            capture.append(span)

    def capture_of(self, span: ReadableSpan) -> SpanCapture | None:
        """The capture that claimed `span` when it started, if an enclosing agent is live."""
        key = _key(span)
        return None if key is None else self._capture_by_span.get(key)

    def open(self, span: ReadableSpan) -> SpanCapture:
        """Start capturing beneath `span`, a root agent's span; returns the new capture."""
        key = _key(span)
        capture = SpanCapture()
        capture.append(span)
        if key is not None:
            with self._lock:
                self._capture_by_span[key] = capture
        return capture

    def close(self, capture: SpanCapture) -> None:
        """Stop capturing for `capture` and forget its spans here (the capture keeps them)."""
        with self._lock:
            capture.closed = True
            for span in capture.spans():
                key = _key(span)
                if key is not None and self._capture_by_span.get(key) is capture:
                    del self._capture_by_span[key]

    def shutdown(self) -> None:
        with self._lock:
            for capture in self._capture_by_span.values():
                capture.closed = True
            self._capture_by_span.clear()

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
