"""OpenLLMetry (Traceloop): its framework spans, by `traceloop.span.kind` (a workflow is
an agent, a task is a step of the agent it runs in), and the model-call spans of
OpenLLMetry 0.54 and before, whose messages are indexed keys (`gen_ai.prompt.0.role` ...).

OpenLLMetry's other spans (`invoke_agent`, `execute_tool`, `handoff`, and model calls since
0.55) follow the GenAI conventions and are read by `genai`.
"""

from __future__ import annotations

from tracejudge import semconv
from tracejudge.convert._common import Extraction, as_str
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind
from tracejudge.convert.conventions.formats import genai_semconv, openllmetry
from tracejudge.convert.conventions.genai import LEGACY_REQUEST_TYPES, LLM_OPERATIONS

__all__ = ["TRACELOOP", "LEGACY_OPENLLMETRY"]


class Traceloop(Convention):
    """OpenLLMetry's framework spans: workflows and tasks."""

    name = "openllmetry-frameworks"
    # A workflow's or task's entity output, and the GenAI task output of `execute_task`.
    answer_keys = (
        (semconv.TRACELOOP_ENTITY_OUTPUT, "json"),
        (semconv.GEN_AI_TASK_OUTPUT, "json"),
    )
    marker_keys = frozenset({semconv.TRACELOOP_SPAN_KIND})
    kind_attribute = semconv.TRACELOOP_SPAN_KIND

    def kind(self, span: SpanView) -> str | None:
        traceloop_kind = span.attributes.get(semconv.TRACELOOP_SPAN_KIND)
        if traceloop_kind == semconv.TRACELOOP_KIND_TASK:
            operation = span.attributes.get(semconv.GEN_AI_OPERATION_NAME)
            if operation is not None and as_str(operation) in LLM_OPERATIONS:
                # A task that is a model call by the GenAI conventions (an instrumentation
                # that writes its calls as tasks): the GenAI row reads it.
                return None
            # A step (CrewAI task, LangChain runnable) of the agent it runs in, even where
            # it is written as `invoke_agent` (OpenLLMetry's CrewAI tasks).
            return Kind.STEP
        if traceloop_kind == semconv.TRACELOOP_KIND_WORKFLOW:
            return Kind.WORKFLOW
        return None

    def agent(self, span: SpanView) -> Identity:
        attrs = span.attributes
        name = (
            as_str(attrs.get(semconv.GEN_AI_AGENT_NAME))
            or as_str(attrs.get(semconv.CREWAI_CREW_NAME))
            or as_str(attrs.get(semconv.TRACELOOP_WORKFLOW_NAME))
            or span.name
        )
        return as_str(attrs.get(semconv.GEN_AI_AGENT_ID)), name


class LegacyOpenLLMetry(Convention):
    """Model-call spans of OpenLLMetry 0.54 and before (indexed message keys)."""

    name = "openllmetry-legacy"
    content_setting = "TRACELOOP_TRACE_CONTENT=true"

    def kind(self, span: SpanView) -> str | None:
        if not openllmetry.is_legacy(span):
            return None
        attrs = span.attributes
        operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
        if operation is not None:
            return Kind.MODEL_CALL if as_str(operation) in LLM_OPERATIONS else None
        request_type = attrs.get(semconv.LLM_REQUEST_TYPE)
        if request_type is not None and as_str(request_type) not in LEGACY_REQUEST_TYPES:
            return None
        return Kind.MODEL_CALL

    def carries_messages(self, span: SpanView) -> bool:
        """Whether the span's messages are in this convention's keys (and no GenAI ones)."""
        return openllmetry.is_legacy(span) and not genai_semconv.has_content(span)

    def model_call(self, span: SpanView) -> Extraction:
        extraction = openllmetry.extract_legacy(span)
        openllmetry.unrecorded_server_tools(span, extraction)
        return extraction


TRACELOOP = Traceloop()
LEGACY_OPENLLMETRY = LegacyOpenLLMetry()
