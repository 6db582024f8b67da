"""Scores written back onto traces, as OpenTelemetry GenAI evaluation events.

Each score of a trace evaluation becomes one `gen_ai.evaluation.result` event with
`gen_ai.evaluation.name` (the criterion or check), `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label` ("pass" / "fail" against a threshold, or "not
applicable"), `gen_ai.evaluation.explanation` and, where known, `gen_ai.response.id`.
The GenAI conventions say the event SHOULD be parented to the span of the operation it
judges: here the agent's span, or (an agent without a span of its own, such as the
implicit root) its last model call's span. The ids come from the trace
(`MultiAgentTrace.trace_id`, `AgentInstance.span_id`, `LLMInteraction.span_id`), which
the converter fills from the spans.

The conventions define the event as a log record (the OTel Events API), so that is how
it is sent when a LoggerProvider is there: one log record per score, tied to the judged
span by its trace and span ids. Many trace backends (Jaeger, Tempo, Phoenix, Langfuse)
read no logs; for them, or when no LoggerProvider is set, the same events go as span
events on one short span per judged agent (`evaluate {agent name}`), a child of the
agent's span, so they show inside the trace next to the agent. The converter reads
both forms back (`AgentInstance.evaluations`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from opentelemetry import _logs as otel_logs
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from tracejudge import semconv
from tracejudge.models import (
    LABEL_FAIL,
    LABEL_NOT_APPLICABLE,
    LABEL_PASS,
    AgentInstance,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    ScoreResponse,
)

__all__ = [
    "DEFAULT_PASS_THRESHOLD",
    "EvaluationEvent",
    "EvaluationEventEmitter",
    "Signal",
    "evaluation_events",
    "label_of",
    "logger_provider_is_set",
]

#: A score at or above this is labelled "pass".
DEFAULT_PASS_THRESHOLD = 0.5

#: How the events travel: log records, span events on a short span, or `auto` (log
#: records when a LoggerProvider is set, else span events).
Signal = Literal["auto", "logs", "spans"]


def label_of(score: float | None, threshold: float = DEFAULT_PASS_THRESHOLD) -> str:
    """ "pass" / "fail" against `threshold`, or "not applicable" for a None score."""
    if score is None:
        return LABEL_NOT_APPLICABLE
    return LABEL_PASS if score >= threshold else LABEL_FAIL


@dataclass(frozen=True)
class EvaluationEvent:
    """One score, ready to send: the agent it judges, the span to parent it to, and the
    event's attributes."""

    agent_id: str
    agent_name: str
    trace_id: str | None
    span_id: str | None
    attributes: Mapping[str, Any]


def _parent_span_id(agent: AgentInstance) -> tuple[str | None, str | None]:
    """(span id to parent the event to, response id judged) for an agent: its own span,
    else its last model call's span; the response id of its last call that has one."""
    calls = agent.llm_interactions
    response_id = next((c.response_id for c in reversed(calls) if c.response_id), None)
    if agent.span_id:
        return agent.span_id, response_id
    return next((c.span_id for c in reversed(calls) if c.span_id), None), response_id


def evaluation_events(
    trace: MultiAgentTrace,
    responses: Sequence[MultiAgentTraceResponse],
    *,
    threshold: float = DEFAULT_PASS_THRESHOLD,
) -> list[EvaluationEvent]:
    """The events for `responses` (evaluations of `trace`), agent by agent in trace
    order. Agents an evaluation left without a result (nothing to judge) get none."""
    events: list[EvaluationEvent] = []
    for agent in trace.iter_agents():
        span_id, response_id = _parent_span_id(agent)
        for response in responses:
            result = _result_for(response, agent.id)
            if result is None:
                continue
            attributes: dict[str, Any] = {
                semconv.GEN_AI_EVALUATION_NAME: response.criterion,
                semconv.GEN_AI_EVALUATION_SCORE_LABEL: label_of(result.score, threshold),
                semconv.GEN_AI_EVALUATION_EXPLANATION: result.explanation,
                semconv.TRACEJUDGE_AGENT_INSTANCE_ID: agent.id,
            }
            if result.score is not None:
                attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] = result.score
            if response_id:
                attributes[semconv.GEN_AI_RESPONSE_ID] = response_id
            events.append(
                EvaluationEvent(agent.id, agent.name, trace.trace_id, span_id, attributes)
            )
    return events


def _result_for(response: MultiAgentTraceResponse, agent_id: str) -> ScoreResponse | None:
    for by_name in response.results_by_agent_name.values():
        if agent_id in by_name.results_by_agent_instance_id:
            return by_name.results_by_agent_instance_id[agent_id]
    return None


def logger_provider_is_set() -> bool:
    """Whether the process has a LoggerProvider (the API's default is a proxy to none)."""
    provider = otel_logs.get_logger_provider()
    return type(provider).__name__ not in ("ProxyLoggerProvider", "NoOpLoggerProvider")


def _context(trace_id: str | None, span_id: str | None) -> otel_context.Context | None:
    """A context whose current span is the judged one (a remote parent), or None when
    its ids are unknown (then the caller's current context is used)."""
    if not trace_id or not span_id:
        return None
    try:
        parent = SpanContext(
            int(trace_id, 16),
            int(span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    except ValueError:
        return None
    if not parent.is_valid:
        return None
    return otel_trace.set_span_in_context(NonRecordingSpan(parent))


class EvaluationEventEmitter:
    """Sends evaluation events through OpenTelemetry providers.

    `signal="auto"` sends log records when `logger_provider` is given or a global
    LoggerProvider is set, else span events; "logs" and "spans" force one form. The
    providers default to the global ones; the emitter never sets, flushes or shuts
    them down (their owner does).
    """

    def __init__(
        self,
        *,
        signal: Signal = "auto",
        tracer_provider: otel_trace.TracerProvider | None = None,
        logger_provider: otel_logs.LoggerProvider | None = None,
        threshold: float = DEFAULT_PASS_THRESHOLD,
    ) -> None:
        if signal not in ("auto", "logs", "spans"):
            raise ValueError(f"signal must be 'auto', 'logs' or 'spans', got {signal!r}")
        self.signal = signal
        self.threshold = threshold
        self._tracer_provider = tracer_provider
        self._logger_provider = logger_provider

    def _uses_logs(self) -> bool:
        if self.signal != "auto":
            return self.signal == "logs"
        return self._logger_provider is not None or logger_provider_is_set()

    def emit(
        self, trace: MultiAgentTrace, responses: Sequence[MultiAgentTraceResponse]
    ) -> list[EvaluationEvent]:
        """Send the events of `responses` (evaluations of `trace`); returns them."""
        events = evaluation_events(trace, responses, threshold=self.threshold)
        if not events:
            return events
        if self._uses_logs():
            self._as_logs(events)
        else:
            self._as_spans(events)
        return events

    def _as_logs(self, events: list[EvaluationEvent]) -> None:
        provider = self._logger_provider or otel_logs.get_logger_provider()
        logger = provider.get_logger(semconv.EVALUATION_SCOPE)
        for event in events:
            now = time.time_ns()
            logger.emit(
                timestamp=now,
                observed_timestamp=now,
                context=_context(event.trace_id, event.span_id),
                event_name=semconv.EVENT_EVALUATION_RESULT,
                attributes=dict(event.attributes),
            )

    def _as_spans(self, events: list[EvaluationEvent]) -> None:
        provider = self._tracer_provider or otel_trace.get_tracer_provider()
        tracer = provider.get_tracer(semconv.EVALUATION_SCOPE)
        by_agent: dict[str, list[EvaluationEvent]] = {}
        for event in events:
            by_agent.setdefault(event.agent_id, []).append(event)
        for agent_events in by_agent.values():
            first = agent_events[0]
            span = tracer.start_span(
                f"{semconv.EVALUATION_SPAN_PREFIX} {first.agent_name}",
                context=_context(first.trace_id, first.span_id),
                kind=SpanKind.INTERNAL,
                attributes={semconv.TRACEJUDGE_AGENT_INSTANCE_ID: first.agent_id},
            )
            for event in agent_events:
                span.add_event(semconv.EVENT_EVALUATION_RESULT, attributes=dict(event.attributes))
            span.end()
