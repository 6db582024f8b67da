"""The OTel GenAI semantic conventions, by `gen_ai.operation.name`: tracejudge's own
agent spans and any GenAI instrumentation's (`invoke_agent`, `invoke_workflow`, `chat`,
`execute_tool`, `handoff` ...), and model-call spans that carry GenAI messages without an
operation (OpenLLMetry's `llm.request.type` spans since 0.55, older semconv).

Messages are read by `conventions.formats.genai_semconv`: the `gen_ai.input.messages` family of
attributes, the inference-details event, or the per-message events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _handoffs, _tools
from tracejudge.convert._common import Extraction, as_str, load_json, remembered_tools, tools
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import UNNAMED_AGENT, Convention, Identity, Kind
from tracejudge.convert.conventions.formats import genai_semconv, openllmetry
from tracejudge.models import LLMToolDefinition

__all__ = ["GENAI", "GenAISemconv", "LLM_OPERATIONS"]

#: The operations of a call to a model.
LLM_OPERATIONS = frozenset(
    {
        semconv.OPERATION_CHAT,
        semconv.OPERATION_TEXT_COMPLETION,
        semconv.OPERATION_GENERATE_CONTENT,
        semconv.OPERATION_RESPONSES,
    }
)
#: OpenLLMetry's `llm.request.type` values of a call to a model.
LEGACY_REQUEST_TYPES = frozenset({"chat", "completion"})
_KINDS = {
    semconv.OPERATION_INVOKE_AGENT: Kind.AGENT,
    semconv.OPERATION_INVOKE_WORKFLOW: Kind.WORKFLOW,
    semconv.OPERATION_EXECUTE_TOOL: Kind.TOOL_RUN,
    semconv.OPERATION_HANDOFF: Kind.HANDOFF,
}
_AGENT_SPAN_START = semconv.INVOKE_AGENT_SPAN_PREFIX + " "


def named_like_agent(name: str) -> bool:
    return name == semconv.INVOKE_AGENT_SPAN_PREFIX or name.startswith(_AGENT_SPAN_START)


_OPENLLMETRY_CONTENT = (
    "TRACELOOP_TRACE_CONTENT=true; in its events mode (use_legacy_attributes=False) the "
    "messages are log records: give them too (traces_from_otlp(..., logs=...))"
)
_CONTRIB_CONTENT = (
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only; with event_only the "
    "messages are log records: give them too (traces_from_otlp(..., logs=...))"
)
#: Instrumentation scopes of the OTel contrib GenAI instrumentations (the others named
#: `opentelemetry.instrumentation.*` are OpenLLMetry's).
_CONTRIB_SCOPES = ("opentelemetry.util.genai", "opentelemetry.instrumentation.openai_v2")


#: What a model call names besides its messages: a span of no operation that records an
#: answer and none of these is a function's span that writes its return value there
#: (OpenLIT's `@openlit.trace`), around the calls it made, not a call.
_CALL_KEYS = frozenset(
    {
        semconv.GEN_AI_INPUT_MESSAGES,
        semconv.GEN_AI_REQUEST_MODEL,
        semconv.GEN_AI_RESPONSE_MODEL,
        semconv.GEN_AI_USAGE_INPUT_TOKENS,
        semconv.GEN_AI_USAGE_OUTPUT_TOKENS,
    }
)


def _answer_only(attrs: Mapping[str, Any]) -> bool:
    return semconv.GEN_AI_OUTPUT_MESSAGES in attrs and attrs.keys().isdisjoint(_CALL_KEYS)


class GenAISemconv(Convention):
    name = "genai"
    # An `invoke_agent` span's output messages; CrewAI's crew span (OpenLLMetry's CrewAI
    # instrumentation) its crew's result.
    answer_keys = (
        (semconv.CREWAI_CREW_RESULT, "text"),
        (semconv.GEN_AI_OUTPUT_MESSAGES, "messages"),
    )
    content_setting = f"{_CONTRIB_CONTENT} (OTel contrib), {_OPENLLMETRY_CONTENT} (OpenLLMetry)"
    kind_attribute = semconv.GEN_AI_OPERATION_NAME

    def content_hint(self, span: SpanView) -> str | None:
        scope = span.scope or ""
        if scope.startswith(_CONTRIB_SCOPES) or scope.endswith("_v2"):
            return _CONTRIB_CONTENT
        if scope.startswith("opentelemetry.instrumentation."):
            return _OPENLLMETRY_CONTENT
        return self.content_setting

    def kind(self, span: SpanView) -> str | None:
        attrs = span.attributes
        operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
        if operation is None:
            if named_like_agent(span.name):
                return Kind.AGENT
            request_type = attrs.get(semconv.LLM_REQUEST_TYPE)
            if request_type is not None:  # OpenLLMetry: chat, completion, embedding ...
                if as_str(request_type) not in LEGACY_REQUEST_TYPES:
                    return None
                if genai_semconv.has_content(span) or not openllmetry.is_legacy(span):
                    return Kind.MODEL_CALL
                return None  # its messages are in the pre-0.55 keys (see `openllmetry`)
            if not genai_semconv.has_content(span) or _answer_only(attrs):
                return None
            return Kind.MODEL_CALL
        if type(operation) is not str:
            operation = as_str(operation)
        if operation in LLM_OPERATIONS:
            if genai_semconv.has_content(span) or not openllmetry.is_legacy(span):
                return Kind.MODEL_CALL
            return None
        if operation is None:
            return Kind.STEP
        return _KINDS.get(operation) or _invoked(operation)

    def agent(self, span: SpanView) -> Identity:
        attrs = span.attributes
        declared = as_str(attrs.get(semconv.GEN_AI_AGENT_ID))
        operation = as_str(attrs.get(semconv.GEN_AI_OPERATION_NAME)) or ""
        if operation != semconv.OPERATION_INVOKE_AGENT and _invoked(operation) is Kind.WORKFLOW:
            name = as_str(attrs.get(semconv.GEN_AI_WORKFLOW_NAME)) or as_str(
                attrs.get(semconv.GEN_AI_AGENT_NAME)
            )
            if name is None and operation != semconv.OPERATION_INVOKE_WORKFLOW:
                name = operation.removeprefix(_INVOKE)  # `invoke_swarm`: the swarm
            return declared, name or _after(span.name, operation)
        name = as_str(attrs.get(semconv.GEN_AI_AGENT_NAME))
        if name is None and named_like_agent(span.name):
            name = span.name[len(semconv.INVOKE_AGENT_SPAN_PREFIX) :].strip() or None
        name = name or as_str(attrs.get(semconv.CREWAI_CREW_NAME))
        return declared, name or UNNAMED_AGENT

    def agent_tools(self, span: SpanView, warnings: list[str]) -> list[LLMToolDefinition] | None:
        raw = span.attributes.get(semconv.GEN_AI_TOOL_DEFINITIONS)
        if raw is None:
            return None
        what = f"span {span.name!r} ({span.span_id})"

        def read(found: list[str]) -> list[LLMToolDefinition] | None:
            loaded = load_json(raw, f"{what} {semconv.GEN_AI_TOOL_DEFINITIONS}", found)
            return tools(loaded, found, what)

        # (The key of the model calls' reading of the same attribute: every agent span of
        # a run offers the same tools, as its calls do.)
        remembered = ("semconv", raw) if type(raw) is str else None
        return remembered_tools(remembered, read, warnings, span.memo)

    def model_call(self, span: SpanView) -> Extraction:
        extraction = genai_semconv.extract(span)
        openllmetry.unrecorded_server_tools(span, extraction)
        return extraction

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        attrs = span.attributes
        return _tools.run(
            attrs.get(semconv.GEN_AI_TOOL_NAME),
            attrs.get(semconv.GEN_AI_TOOL_CALL_ID),
            attrs.get(semconv.GEN_AI_TOOL_CALL_RESULT),
            attrs.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS),
            span.record.start_ns,
        )

    def handoff(self, span: SpanView) -> _handoffs.Handoff | None:
        attrs = span.attributes
        return _handoffs.Handoff(
            from_agent=_handoffs.known(as_str(attrs.get(semconv.GEN_AI_HANDOFF_FROM_AGENT))),
            to_agent=_handoffs.known(as_str(attrs.get(semconv.GEN_AI_HANDOFF_TO_AGENT))),
            start_ns=span.record.start_ns,
        )


_INVOKE = "invoke_"


def _invoked(operation: str) -> str:
    """The kind of an operation no row names: `invoke_<what>` (`invoke_workflow`, and
    what frameworks write in its image: Strands' `invoke_swarm`, `invoke_graph`) runs
    a workflow, which holds agents; any other is a step."""
    if operation.startswith(_INVOKE) and len(operation) > len(_INVOKE):
        return Kind.WORKFLOW
    return Kind.STEP


def _after(name: str, prefix: str) -> str:
    rest = name[len(prefix) :].strip() if name.startswith(prefix) else name
    return rest or "workflow"


GENAI = GenAISemconv()
