"""Scores written back onto the traces the server scored, to an OTLP/HTTP endpoint.

After post-hoc scoring of an ingested trace, each score becomes a GenAI
`gen_ai.evaluation.result` event parented to the span of the agent it judges (see
`tracejudge.evaluation.events`), sent to `--evaluation-events-endpoint` (a Collector, or
a backend's OTLP/HTTP base URL) with the server's own providers, never the process's
global ones. `--evaluation-events-signal spans` (the default) sends them as span events
on a short span per agent, which trace backends (Jaeger, Tempo, Phoenix, Langfuse) show
inside the trace; `logs` sends the conventions' log records to `/v1/logs`. Headers for
the endpoint (its key) come from the standard OTEL_EXPORTER_OTLP_HEADERS variable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from tracejudge.evaluation.events import EvaluationEventEmitter
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse

__all__ = ["SIGNALS", "WriteBack"]

logger = logging.getLogger("tracejudge.server")

#: The values `--evaluation-events-signal` takes.
SIGNALS = ("spans", "logs")
_SERVICE_NAME = "tracejudge-server"


class _Provider(Protocol):
    """What is asked of the SDK provider the events go through (logs or traces)."""

    def force_flush(self, timeout_millis: int = ...) -> bool: ...

    def shutdown(self) -> None: ...


class WriteBack:
    """Sends the evaluation events of scored traces to one OTLP/HTTP endpoint."""

    def __init__(self, endpoint: str, signal: str = "spans") -> None:
        from opentelemetry.sdk.resources import Resource

        base = endpoint.rstrip("/")
        resource = Resource.create({"service.name": _SERVICE_NAME})
        self.signal = signal
        self._provider: _Provider
        if signal == "logs":
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

            self._logs = LoggerProvider(resource=resource)
            self._logs.add_log_record_processor(
                BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{base}/v1/logs"))
            )
            self._emitter = EvaluationEventEmitter(signal="logs", logger_provider=self._logs)
            self._provider = self._logs
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            self._traces = TracerProvider(resource=resource)
            self._traces.add_span_processor(
                BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces"))
            )
            self._emitter = EvaluationEventEmitter(signal="spans", tracer_provider=self._traces)
            self._provider = self._traces

    def emit(self, trace: MultiAgentTrace, responses: Sequence[MultiAgentTraceResponse]) -> int:
        """Queue the events of `responses` for export; how many. Never raises: a failed
        write-back must not fail the scoring (it is logged)."""
        if trace.trace_id is None:
            return 0  # not from spans: nothing to attach the scores to
        try:
            return len(self._emitter.emit(trace, responses))
        except Exception:
            logger.exception("tracejudge: could not write the scores back onto the trace")
            return 0

    def flush(self, timeout_millis: int = 10_000) -> None:
        self._provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Export what is queued and stop."""
        self._provider.shutdown()
