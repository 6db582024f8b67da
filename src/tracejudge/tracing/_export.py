"""OTLP export that cannot hold the traced program hostage.

The SDK's defaults let a dead collector delay a program's exit by up to 30 s: each export
request waits 10 s, and the batch processor's shutdown waits 30 s for its worker. Here the
request timeout is 2 s and shutdown (and flush) give up after the request timeout plus a
second, unless the standard variables say otherwise: ``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` /
``OTEL_EXPORTER_OTLP_TIMEOUT`` (seconds, as the Python SDK reads them) for each request,
``OTEL_BSP_EXPORT_TIMEOUT`` (milliseconds) for shutdown. Spans that were not exported are
counted, and reported in one warning when the processor shuts down.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from tracejudge import _env
from tracejudge.errors import MissingDependencyError

__all__ = ["BoundedExportProcessor", "otlp_processor"]

logger = logging.getLogger("tracejudge.tracing")

#: Seconds one export request may take when no OTEL_* variable says otherwise.
DEFAULT_REQUEST_TIMEOUT = 2.0
# (exporter module, package, tracejudge extra or None)
_OTLP_HTTP = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry-exporter-otlp-proto-http",
    "otlp",
)
_OTLP_GRPC = (
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry-exporter-otlp-proto-grpc",
    None,
)


def _first_set(names: Sequence[str]) -> str | None:
    for name in names:
        value = _env.read(name)
        if value:
            return value
    return None


def _seconds(value: str | None, scale: float = 1.0) -> float | None:
    """A positive number of seconds from a variable's text, or None when unset or unreadable."""
    try:
        seconds = float(value) * scale if value else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds > 0 else None


def _shown_endpoint() -> str:
    """Where spans go, fit for a log line: no user, password or query (they may be keys)."""
    raw = _first_set(_env.OTLP_ENDPOINT_VARIABLES) or "the default OTLP endpoint"
    parts = urllib.parse.urlsplit(raw)
    if not parts.scheme or not parts.hostname:
        return raw if "@" not in raw and "?" not in raw else "the configured OTLP endpoint"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"


class _CountingExporter(SpanExporter):
    """Passes batches to the real exporter and counts the spans it exported."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            with self._lock:
                self.exported += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _within(seconds: float, function: Callable[[], Any], name: str) -> bool:
    """Run `function` in a daemon thread; whether it finished within `seconds`. A daemon,
    so that one stuck on a dead collector does not keep the process alive."""
    finished = threading.Event()

    def run() -> None:
        try:
            function()
        except Exception:
            logger.debug("tracejudge: %s failed", name, exc_info=True)
        finally:
            finished.set()

    threading.Thread(target=run, name=f"tracejudge-{name}", daemon=True).start()
    return finished.wait(seconds)


class BoundedExportProcessor(SpanProcessor):
    """A BatchSpanProcessor whose shutdown and flush end within `shutdown_timeout` seconds
    whatever the collector does, and which says how many spans it could not export."""

    def __init__(
        self, exporter: SpanExporter, *, shutdown_timeout: float, destination: str
    ) -> None:
        self._exporter = _CountingExporter(exporter)
        self._batch = BatchSpanProcessor(self._exporter)
        self.shutdown_timeout = shutdown_timeout
        self._destination = destination
        self._ended = 0
        self._pid = os.getpid()
        self._lock = threading.Lock()

    @property
    def dropped(self) -> int:
        """Spans handed to this processor and not (yet) exported."""
        return max(0, self._ended - self._exporter.exported)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self._batch.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None and span.context.trace_flags.sampled:
            with self._lock:
                if self._pid != os.getpid():
                    # A forked child starts with an empty queue (the SDK clears it).
                    self._pid = os.getpid()
                    self._ended = self._exporter.exported = 0
                self._ended += 1
        self._batch.on_end(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        # The SDK's flush ignores its timeout; this one keeps to it.
        return _within(timeout_millis / 1000, self._batch.force_flush, "otlp-flush")

    def shutdown(self) -> None:
        finished = _within(self.shutdown_timeout, self._batch.shutdown, "otlp-shutdown")
        dropped = self.dropped
        if dropped:
            why = "" if finished else f" within {self.shutdown_timeout:g}s"
            logger.warning(
                "tracejudge: %d of %d spans could not be exported to %s%s (is the collector "
                "up?); they are lost",
                dropped,
                self._ended,
                self._destination,
                why,
            )


def otlp_processor() -> BoundedExportProcessor:
    """A bounded batch processor around the standard OTLP exporter the environment asks
    for: OTLP/HTTP, or gRPC when ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL=grpc``. Raises
    MissingDependencyError when that exporter's package is not installed."""
    if (_first_set(_env.OTLP_PROTOCOL_VARIABLES) or "").lower() == "grpc":
        module, package, extra = _OTLP_GRPC
    else:  # http/protobuf, the default (http/json is not offered by the Python SDK)
        module, package, extra = _OTLP_HTTP
    try:
        exporter_class = importlib.import_module(module).OTLPSpanExporter
    except ImportError as error:
        raise MissingDependencyError(package, extra, "OTLP export") from error
    # The exporter reads endpoint, headers, compression and (when set) the timeout from the
    # OTEL_* variables; only the timeout's default is ours.
    configured = _seconds(_first_set(_env.OTLP_TIMEOUT_VARIABLES))
    exporter = exporter_class() if configured else exporter_class(timeout=DEFAULT_REQUEST_TIMEOUT)
    shutdown_timeout = _seconds(_env.read(_env.OTEL_BSP_EXPORT_TIMEOUT), 1 / 1000) or (
        (configured or DEFAULT_REQUEST_TIMEOUT) + 1.0
    )
    return BoundedExportProcessor(
        exporter, shutdown_timeout=shutdown_timeout, destination=_shown_endpoint()
    )
