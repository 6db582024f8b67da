"""Microsoft Agent Framework's own spans (instrumentation scope `agent_framework`).

Its agent, model-call and tool spans follow the GenAI conventions (`invoke_agent` with the
agent's `gen_ai.tool.definitions`, `chat`, `execute_tool`) and are read as `genai` reads
them (its `gen_ai.response.finish_reasons` is the JSON text of a list,
`json.dumps([finish_reason])` in agent_framework/observability.py, which
`_common.finish_reasons` reads as the list, as it does logfire's). A workflow run
(`workflow.run`, named by `workflow.name`) is the root agent; its executor, edge-group and
message spans are steps. A hand-off workflow's (`HandoffBuilder`) hand-off has no span: its
`handoff_to_<agent>` call is answered by middleware with `{"handoff_to": "<agent>"}`,
which only the agent span's `gen_ai.output.messages` (the whole run) records.

Messages, tool arguments and results are recorded only with sensitive data on (and, under
the v1.36 conventions it takes when `OTEL_SEMCONV_STABILITY_OPT_IN` lacks
`gen_ai_latest_experimental`, as log records).
"""

from __future__ import annotations

from typing import Any

from tracejudge import semconv
from tracejudge.convert import _handoffs, _json
from tracejudge.convert._common import PART_TOOL_RESPONSE, as_str
from tracejudge.convert._json import is_mapping
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Identity, Kind
from tracejudge.convert.conventions.genai import GenAISemconv

__all__ = ["AGENT_FRAMEWORK", "AgentFramework"]


class AgentFramework(GenAISemconv):
    name = "agent-framework"
    marker_keys = frozenset[str]()  # its spans are known by their scope alone
    marker_scopes = frozenset({semconv.AGENT_FRAMEWORK_SCOPE})
    content_setting = (
        "enable_instrumentation(enable_sensitive_data=True) "
        "(agent_framework.observability), or ENABLE_SENSITIVE_DATA=true; with "
        "OTEL_SEMCONV_STABILITY_OPT_IN set without gen_ai_latest_experimental the messages "
        "are log records: give them too (traces_from_otlp(..., logs=...))"
    )

    def content_hint(self, span: SpanView) -> str | None:
        return self.content_setting

    def kind(self, span: SpanView) -> str | None:
        if span.scope != semconv.AGENT_FRAMEWORK_SCOPE:
            return None
        if span.name == semconv.AGENT_FRAMEWORK_WORKFLOW_RUN:
            return Kind.WORKFLOW
        if semconv.GEN_AI_OPERATION_NAME not in span.attributes:
            return Kind.STEP  # workflow.build, executor.process, edge_group.process ...
        return super().kind(span)

    def agent(self, span: SpanView) -> Identity:
        if span.name == semconv.AGENT_FRAMEWORK_WORKFLOW_RUN:
            attrs = span.attributes
            name = as_str(attrs.get(semconv.AGENT_FRAMEWORK_WORKFLOW_NAME))
            return as_str(attrs.get(semconv.AGENT_FRAMEWORK_WORKFLOW_ID)), name or "workflow"
        return super().agent(span)

    def agent_handoff(self, span: SpanView) -> _handoffs.Handoff | None:
        raw = span.attributes.get(semconv.GEN_AI_OUTPUT_MESSAGES)
        if not isinstance(raw, str) or semconv.AGENT_FRAMEWORK_HANDOFF_TO not in raw:
            return None  # (the usual case: no hand-off, or no content recorded)
        target = None
        for message in _list(_loaded(raw)):
            for part in _list(message.get("parts") if is_mapping(message) else None):
                if is_mapping(part) and part.get("type") == PART_TOOL_RESPONSE:
                    result = _loaded(part.get("response"))
                    if is_mapping(result):
                        target = as_str(result.get(semconv.AGENT_FRAMEWORK_HANDOFF_TO)) or target
        if target is None:
            return None
        name = self.agent(span)[1]
        return _handoffs.Handoff(from_agent=name, to_agent=target, start_ns=span.record.start_ns)


def _loaded(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return _json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


AGENT_FRAMEWORK = AgentFramework()
