"""OpenLLMetry's LlamaIndex instrumentation (`opentelemetry-instrumentation-llamaindex`)
of LlamaIndex agents (`FunctionAgent`, `AgentWorkflow`): Traceloop `workflow` / `task`
spans, one per method of LlamaIndex's instrumentation dispatcher.

- No span is an agent's: the steps whose output event names the current agent
  (`traceloop.entity.output` of an `AgentInput` / `AgentSetup`:
  `{"input": [...], "current_agent_name": "x"}`) are turns (`Kind.TURN`), and
  `<Agent>.workflow` is a step (as OpenInference's `<Agent>.run`).
- The model call is the innermost `<LLM>.task` span, with `gen_ai.operation.name=chat`;
  its GenAI messages drop every tool call (`"parts": []`) and tool result id, so its input
  is read from `traceloop.entity.input` (LlamaIndex `ChatMessage`s: text blocks,
  `additional_kwargs.tool_calls`, `additional_kwargs.tool_call_id`; the tools offered in
  `kwargs.tools`). Its answer's tool calls are recorded nowhere on it: the tool steps
  (`tool.name`, `tool.arguments`, the result's `tool_id`) are tool runs, from which the
  walk restores the calls of a call that finished for tool calls. The `handoff` tool's run
  is also the hand-off to its `to_agent`.
- The `<LLM>.task` spans around it (`_prepare_chat_with_tools`, the outer `astream_chat`)
  are steps.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tracejudge import semconv
from tracejudge.convert import _json, _tools
from tracejudge.convert._common import (
    Extraction,
    as_str,
    load_json,
    openai_message_inputs,
    text_value,
    tools,
)
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind
from tracejudge.convert.conventions.formats import genai_semconv
from tracejudge.convert.conventions.genai import LLM_OPERATIONS

__all__ = ["OPENLLMETRY_LLAMAINDEX"]

_TEXT_BLOCK = "text"
_NAMED = f'"{semconv.LLAMAINDEX_CURRENT_AGENT}"'


class OpenLLMetryLlamaIndex(Convention):
    name = "openllmetry-llama-index"
    # Only this instrumentation's spans (its scope): no attribute key marks them.
    marker_keys: ClassVar[frozenset[str] | None] = frozenset()
    marker_scopes = frozenset({semconv.OPENLLMETRY_LLAMAINDEX_SCOPE})
    content_setting = "TRACELOOP_TRACE_CONTENT=true"
    agent_setting = (
        "the workflow's events name the agents when content capture is on: "
        "TRACELOOP_TRACE_CONTENT=true"
    )

    def kind(self, span: SpanView) -> str | None:
        if span.scope != semconv.OPENLLMETRY_LLAMAINDEX_SCOPE:
            return None
        attrs = span.attributes
        operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
        if operation is not None and as_str(operation) in LLM_OPERATIONS:
            return Kind.MODEL_CALL
        if attrs.get(semconv.TOOL_NAME) is not None:
            return Kind.TOOL_RUN
        if _turn_agent(span) is not None:
            return Kind.TURN
        return Kind.STEP

    def agent(self, span: SpanView) -> Identity:
        return None, _turn_agent(span) or span.name

    def model_call(self, span: SpanView) -> Extraction:
        extraction = genai_semconv.extract(span)
        what = f"span {span.name!r} ({span.span_id}): {semconv.TRACELOOP_ENTITY_INPUT}"
        request = load_json(span.attributes.get(semconv.TRACELOOP_ENTITY_INPUT), what, [])
        if not _json.is_mapping(request):
            return extraction
        messages = request.get("messages")
        if isinstance(messages, list) and messages:
            extraction.inputs = [
                item for message in messages for item in openai_message_inputs(_openai(message))
            ]
            extraction.has_content = True
        kwargs = request.get("kwargs")
        offered = kwargs.get("tools") if _json.is_mapping(kwargs) else None
        if offered and extraction.tools is None:
            extraction.tools = tools(offered, extraction.warnings, what)
        return extraction

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        attrs = span.attributes
        what = f"span {span.name!r} ({span.span_id}): {semconv.TRACELOOP_ENTITY_OUTPUT}"
        output = load_json(attrs.get(semconv.TRACELOOP_ENTITY_OUTPUT), what, [])
        call_id = result = None
        if _json.is_mapping(output):
            call_id = output.get("tool_id")
            tool_output = output.get("tool_output")
            if _json.is_mapping(tool_output):
                result = tool_output.get("raw_output")
                if result is None:
                    result = _blocks_text(tool_output.get("blocks"))
        found = _tools.run(
            attrs.get(semconv.TOOL_NAME),
            call_id,
            result,
            attrs.get(semconv.TOOL_ARGUMENTS),
            span.record.start_ns,
        )
        if found is not None:
            if found.name == semconv.LLAMAINDEX_HANDOFF_TOOL:
                found.handoff_to = _handoff_target(found.arguments)
        return found


def _handoff_target(arguments: str | None) -> str | None:
    """`to_agent` of AgentWorkflow's `handoff(to_agent, reason)` call."""
    try:
        value = _json.loads(arguments) if arguments else None
    except (ValueError, RecursionError):
        return None
    return as_str(value.get(semconv.LLAMAINDEX_HANDOFF_TO)) if _json.is_mapping(value) else None


def _turn_agent(span: SpanView) -> str | None:
    """The agent an `AgentInput` / `AgentSetup` output event names, or None."""
    raw = span.attributes.get(semconv.TRACELOOP_ENTITY_OUTPUT)
    if not isinstance(raw, str) or _NAMED not in raw or not raw.startswith('{"input"'):
        return None
    try:
        value = _json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not _json.is_mapping(value) or semconv.LLAMAINDEX_EVENT_INPUT not in value:
        return None
    return as_str(value.get(semconv.LLAMAINDEX_CURRENT_AGENT))


def _blocks_text(blocks: Any) -> str | None:
    if not isinstance(blocks, list):
        return None
    texts = [
        text_value(block.get("text"))
        for block in blocks
        if _json.is_mapping(block) and block.get("block_type", _TEXT_BLOCK) == _TEXT_BLOCK
    ]
    return "".join(texts) if texts else None


def _openai(message: Any) -> Any:
    """A LlamaIndex `ChatMessage` (as JSON) as an OpenAI chat message."""
    if not _json.is_mapping(message):
        return message
    extra = message.get("additional_kwargs")
    extra = extra if _json.is_mapping(extra) else {}
    converted: dict[str, Any] = {
        "role": message.get("role"),
        "content": _blocks_text(message.get("blocks")) or message.get("content") or "",
    }
    if extra.get("tool_calls"):
        converted["tool_calls"] = extra["tool_calls"]
    else:
        calls = [
            {
                "id": b.get("tool_call_id"),
                "name": b.get("tool_name"),
                "arguments": b.get("tool_kwargs"),
            }
            for b in message.get("blocks") or ()
            if _json.is_mapping(b) and b.get("block_type") == "tool_call"
        ]
        if calls:
            converted["tool_calls"] = calls
    for key in ("tool_call_id", "name"):
        if extra.get(key) is not None:
            converted[key] = extra[key]
    return converted


OPENLLMETRY_LLAMAINDEX = OpenLLMetryLlamaIndex()
