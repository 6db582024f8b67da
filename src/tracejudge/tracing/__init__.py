"""Tracing for LLM agents with OpenTelemetry, with the Composo SDK's API.

``ComposoTracer.init(instruments=Instruments.OPENAI)`` once at start-up; then
``with AgentTracer(name="researcher") as tracer: ...`` around each agent run (or the
``@agent_tracer`` decorator), and ``tracer.trace`` is the `MultiAgentTrace` to evaluate.
Spans follow the OpenTelemetry GenAI conventions and go wherever your TracerProvider sends
them; the capture for ``tracer.trace`` happens in process, is bounded (at most
``max_spans_per_trace`` spans per root agent, agent spans always kept) and holds nothing once
the outermost agent has ended.
"""

from __future__ import annotations

from tracejudge.errors import MissingDependencyError  # here too, where it used to live
from tracejudge.tracing._agent import AgentTracer, agent_tracer
from tracejudge.tracing._executor import ContextPropagatingExecutor, context_propagating_executor
from tracejudge.tracing._processors import (
    CaptureSpanProcessor,
    IsolatingSpanProcessor,
    SpanCapture,
)
from tracejudge.tracing._setup import ComposoTracer, Instruments

__all__ = [
    "AgentTracer",
    "CaptureSpanProcessor",
    "ComposoTracer",
    "ContextPropagatingExecutor",
    "Instruments",
    "IsolatingSpanProcessor",
    "MissingDependencyError",
    "SpanCapture",
    "agent_tracer",
    "context_propagating_executor",
]
