"""OpenInference (Arize): spans typed by `openinference.span.kind`. LLM spans are model
calls (flattened `llm.input_messages.*` keys), AGENT spans agents, TOOL spans tool runs
(or hand-offs: the Agents SDK's `handoff to <agent>`), and OpenInference's CrewAI crew
run (`Crew_<id>.kickoff`, a CHAIN span) the crew's agent. Other kinds (CHAIN, RETRIEVER,
EMBEDDING ...) are steps.

An LLM span that holds no OpenInference messages but GenAI ones
(`OPENINFERENCE_ENABLE_GENAI_SEMCONV`) is left to `genai`, as is any other span that
also names a GenAI operation.
"""

from __future__ import annotations

from tracejudge import semconv
from tracejudge.convert import _handoffs, _tools
from tracejudge.convert._common import Extraction, as_str
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import UNNAMED_AGENT, Convention, Identity, Kind
from tracejudge.convert.conventions.formats import genai_semconv, openinference

__all__ = ["OPENINFERENCE"]

#: Suffixes frameworks add to an agent's name in the span name.
_NAME_SUFFIXES = (".run", "._execute_core")
_KICKOFF = ".kickoff"
#: The methods whose runs OpenInference instrumentations record as TOOL spans named
#: `<tool>.<method>` without `tool.name`.
_TOOL_METHODS = (".__call__", ".acall")
_CREW = "crew"


class OpenInference(Convention):
    name = "openinference"
    answer_keys = ((semconv.OUTPUT_VALUE, "json"),)  # on AGENT and CHAIN spans
    marker_keys = frozenset({semconv.OPENINFERENCE_SPAN_KIND})
    content_setting = "unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS"
    kind_attribute = semconv.OPENINFERENCE_SPAN_KIND

    def kind(self, span: SpanView) -> str | None:
        attrs = span.attributes
        span_kind = attrs.get(semconv.OPENINFERENCE_SPAN_KIND)
        if span_kind is None:
            return None
        if span_kind == semconv.OPENINFERENCE_KIND_LLM:
            if openinference.has_messages(span) or not genai_semconv.has_content(span):
                return Kind.MODEL_CALL
            return None
        if attrs.get(semconv.CREWAI_CREW_AGENTS) is not None and span.name.endswith(_KICKOFF):
            return Kind.AGENT
        if span_kind == semconv.OPENINFERENCE_KIND_AGENT:
            return Kind.AGENT
        if span_kind == semconv.OPENINFERENCE_KIND_TOOL:
            if attrs.get(semconv.TOOL_NAME) is None and span.name.startswith(
                semconv.OPENINFERENCE_HANDOFF_PREFIX
            ):
                return Kind.HANDOFF
            return Kind.TOOL_RUN
        if attrs.get(semconv.GEN_AI_OPERATION_NAME) is not None:
            return None  # also a GenAI span: `genai` says what it is
        return Kind.STEP

    def agent(self, span: SpanView) -> Identity:
        attrs = span.attributes
        declared = as_str(attrs.get(semconv.GEN_AI_AGENT_ID))
        name = as_str(attrs.get(semconv.GEN_AI_AGENT_NAME))
        if attrs.get(semconv.OPENINFERENCE_SPAN_KIND) != semconv.OPENINFERENCE_KIND_AGENT:
            return declared, name or _CREW  # the crew run
        name = name or as_str(attrs.get(semconv.AGENT_NAME))
        return declared, name or _strip_suffix(span.name) or UNNAMED_AGENT

    def model_call(self, span: SpanView) -> Extraction:
        return openinference.extract(span)

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        attrs = span.attributes
        return _tools.run(
            attrs.get(semconv.TOOL_NAME) or _tool_name(span.name),
            attrs.get(semconv.GEN_AI_TOOL_CALL_ID),
            openinference.tool_result(
                attrs.get(semconv.OUTPUT_VALUE), attrs.get(semconv.OUTPUT_MIME_TYPE)
            ),
            arguments=openinference.tool_arguments(
                attrs.get(semconv.INPUT_VALUE), attrs.get(semconv.TOOL_PARAMETERS)
            ),
            start_ns=span.record.start_ns,
        )

    def handoff(self, span: SpanView) -> _handoffs.Handoff | None:
        attrs = span.attributes
        prefix = semconv.OPENINFERENCE_HANDOFF_PREFIX
        target = as_str(attrs.get(semconv.OUTPUT_VALUE)) or span.name[len(prefix) :].strip()
        return _handoffs.Handoff(
            from_agent=_handoffs.known(as_str(attrs.get(semconv.INPUT_VALUE))),
            to_agent=_handoffs.known(target),
            start_ns=span.record.start_ns,
        )


def _tool_name(span_name: str) -> str | None:
    """The tool a TOOL span without `tool.name` ran: its span name, the wrapped method's
    name taken off (DSPy's `Tool.__call__` spans are named `<tool>.__call__`)."""
    for suffix in _TOOL_METHODS:
        if span_name.endswith(suffix) and len(span_name) > len(suffix):
            return span_name[: -len(suffix)]
    return None


def _strip_suffix(name: str) -> str:
    for suffix in _NAME_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


OPENINFERENCE = OpenInference()
