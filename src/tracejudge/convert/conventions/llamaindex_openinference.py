"""OpenInference's LlamaIndex instrumentation (`openinference-instrumentation-llama-index`)
of LlamaIndex agents (`FunctionAgent`, `AgentWorkflow`): OpenInference spans, made by
LlamaIndex's instrumentation dispatcher, one per decorated method.

- Each agent step is a CHAIN span, side by side under `<Agent>.run`: no span is an
  agent's. The steps whose event names the current agent (`init_run` -> `AgentInput`,
  `setup_agent` -> `AgentSetup`, their repr in `output.value` ending with
  `current_agent_name='x'`) are turns (`Kind.TURN`): agent `x` runs from there on. A repr
  OpenInference shortened (`...`) names no agent: that step stays with the current agent.
- `OpenAI._prepare_chat_with_tools` is an LLM span that builds a request and sends
  nothing, and the dispatcher records `astream_chat` twice (the LLM class's method and the
  `OpenAI` base's it calls), the outer without messages or output: both are steps, not
  model calls (they made 3 calls count as 6, 9 composed with the client's spans).
- AgentWorkflow's `handoff` tool (`FunctionTool.acall`, `tool.name=handoff`) hands off
  to `kwargs.to_agent` of its `input.value`.
"""

from __future__ import annotations

from tracejudge import semconv
from tracejudge.convert import _handoffs, _json
from tracejudge.convert._common import as_str
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Identity, Kind
from tracejudge.convert.conventions.formats import openinference
from tracejudge.convert.conventions.openinference import OpenInference

__all__ = ["OPENINFERENCE_LLAMAINDEX", "agent_in_repr"]

_NAMED = f"{semconv.LLAMAINDEX_CURRENT_AGENT}='"


class OpenInferenceLlamaIndex(OpenInference):
    name = "openinference-llama-index"
    # Only this instrumentation's spans (its scope): no attribute key marks them.
    marker_keys = frozenset[str]()
    marker_scopes = frozenset({semconv.OPENINFERENCE_LLAMAINDEX_SCOPE})
    agent_setting = (
        "the workflow's events (`output.value` of init_run / setup_agent) name the agents "
        "when outputs are recorded: unset OPENINFERENCE_HIDE_OUTPUTS"
    )

    def kind(self, span: SpanView) -> str | None:
        if span.scope != semconv.OPENINFERENCE_LLAMAINDEX_SCOPE:
            return None
        attrs = span.attributes
        span_kind = attrs.get(semconv.OPENINFERENCE_SPAN_KIND)
        if span_kind == semconv.OPENINFERENCE_KIND_LLM and not _sends(span):
            return Kind.STEP
        if span_kind == semconv.OPENINFERENCE_KIND_TOOL and _handoff_target(span) is not None:
            return Kind.HANDOFF
        if _turn_agent(span) is not None:
            return Kind.TURN
        return super().kind(span)

    def agent(self, span: SpanView) -> Identity:
        return None, _turn_agent(span) or span.name

    def handoff(self, span: SpanView) -> _handoffs.Handoff | None:
        return _handoffs.Handoff(
            from_agent=None, to_agent=_handoff_target(span), start_ns=span.record.start_ns
        )


def _sends(span: SpanView) -> bool:
    """Whether an LLM span records a request sent to the model: not a request being built,
    and not the dispatcher's outer record of a call (no messages, output or usage)."""
    if span.name.endswith(semconv.LLAMAINDEX_PREPARE_CHAT):
        return False
    attrs = span.attributes
    if openinference.has_messages(span) or semconv.OUTPUT_VALUE in attrs:
        return True
    if semconv.LLM_FINISH_REASON in attrs:
        return True
    return any(key.startswith(semconv.LLM_TOKEN_COUNT_PREFIX) for key in attrs)


def agent_in_repr(text: object) -> str | None:
    """The agent an `AgentInput(...)` / `AgentSetup(...)` repr names, or None (another
    event, or a repr cut short)."""
    if not isinstance(text, str) or not text.startswith(semconv.LLAMAINDEX_AGENT_EVENTS):
        return None
    start = text.rfind(_NAMED)
    if start < 0 or not text.endswith("')"):
        return None
    name = text[start + len(_NAMED) : -2]
    return name if name and "'" not in name else None


def _turn_agent(span: SpanView) -> str | None:
    return agent_in_repr(span.attributes.get(semconv.OUTPUT_VALUE))


def _handoff_target(span: SpanView) -> str | None:
    attrs = span.attributes
    if as_str(attrs.get(semconv.TOOL_NAME)) != semconv.LLAMAINDEX_HANDOFF_TOOL:
        return None
    raw = attrs.get(semconv.INPUT_VALUE)
    try:
        value = _json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        return None
    kwargs = value.get("kwargs") if _json.is_mapping(value) else None
    return as_str(kwargs.get(semconv.LLAMAINDEX_HANDOFF_TO)) if _json.is_mapping(kwargs) else None


OPENINFERENCE_LLAMAINDEX = OpenInferenceLlamaIndex()
