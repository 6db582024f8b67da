"""Strands Agents' own spans (instrumentation scope `strands.telemetry.tracer`), by
`gen_ai.operation.name`: `invoke_agent` (an agent), `chat` (a model call), `execute_tool`
(a tool run), `invoke_swarm` / `invoke_graph` (a multi-agent run: the root agent), and
`execute_event_loop_cycle` (a step of its agent). A swarm's `execute_tool handoff_to_agent`
is a hand-off to the agent its `agent_name` argument names.

Strands writes its messages in Bedrock's content blocks (strands/telemetry/tracer.py):

- by default (GenAI semconv 1.36), one span event per message, `gen_ai.<role>.message`,
  whose `content` attribute is the JSON of the message's blocks: `[{"text": ...}]`,
  `[{"toolUse": {"toolUseId", "name", "input"}}]`, `[{"toolResult": {"toolUseId",
  "status", "content": [blocks]}}]` (a tool result's message is `gen_ai.tool.message`);
  the answer is a `gen_ai.choice` event whose `message` attribute holds the answer's
  blocks (on `chat`), or the agent's answer as plain text (on `invoke_agent`). A tool
  span's `gen_ai.tool.message` event holds the arguments, its `gen_ai.choice` the result
  blocks;
- with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`, the GenAI messages
  (`gen_ai.input.messages` ... in `gen_ai.client.inference.operation.details` events),
  read by `genai_semconv`, except that a tool result's `response` is still its block list.

Strands' opt-in redaction (`gen_ai_unredacted_attributes=...` in the same variable) writes
`[REDACTED]` for each message it leaves out: such a message is not recorded.

An agent span lists its tools' names in `gen_ai.agent.tools`; with `gen_ai_tool_definitions`
in `OTEL_SEMCONV_STABILITY_OPT_IN` also their specs in `gen_ai.tool.definitions`, in
Bedrock's shape (`{"name", "description", "inputSchema": {"json": schema}}`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _handoffs, _json, _tools
from tracejudge.convert._common import (
    PART_TEXT,
    PART_TOOL_CALL,
    PART_TOOL_RESPONSE,
    Extraction,
    as_str,
    finish_reason,
    load_json,
    message_inputs,
    parts_message,
    tool_response,
    tools,
)
from tracejudge.convert._json import is_mapping
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind
from tracejudge.convert.conventions.formats import genai_semconv
from tracejudge.convert.conventions.formats.genai_semconv import model_and_usage
from tracejudge.convert.conventions.genai import GENAI
from tracejudge.models import LLMInput, LLMToolDefinition, LLMToolResponse, to_json_string

__all__ = ["STRANDS", "Strands"]

_KINDS = {
    semconv.OPERATION_INVOKE_AGENT: Kind.AGENT,
    semconv.OPERATION_CHAT: Kind.MODEL_CALL,
    semconv.OPERATION_EXECUTE_TOOL: Kind.TOOL_RUN,
    **{operation: Kind.WORKFLOW for operation in semconv.STRANDS_WORKFLOW_OPERATIONS},
}
_ROLE_EVENTS = {
    semconv.EVENT_SYSTEM_MESSAGE: "system",
    semconv.EVENT_USER_MESSAGE: "user",
    semconv.EVENT_ASSISTANT_MESSAGE: "assistant",
    semconv.EVENT_TOOL_MESSAGE: "tool",
}


class Strands(Convention):
    name = "strands"
    marker_keys = frozenset[str]()  # its spans are known by their scope alone
    marker_scopes = frozenset({semconv.STRANDS_SCOPE})
    # Strands records the messages unless its opt-in redaction leaves them out.
    content_setting = (
        "remove gen_ai_unredacted_attributes=... from OTEL_SEMCONV_STABILITY_OPT_IN, or "
        "list gen_ai.input.messages;gen_ai.output.messages in it (Strands' redaction)"
    )

    def kind(self, span: SpanView) -> str | None:
        if span.scope != semconv.STRANDS_SCOPE:
            return None
        attrs = span.attributes
        operation = as_str(attrs.get(semconv.GEN_AI_OPERATION_NAME))
        kind = _KINDS.get(operation or "", Kind.STEP)
        if (
            kind is Kind.TOOL_RUN
            and attrs.get(semconv.GEN_AI_TOOL_NAME) == semconv.STRANDS_HANDOFF_TOOL
        ):
            return Kind.HANDOFF
        return kind

    def agent(self, span: SpanView) -> Identity:
        operation = as_str(span.attributes.get(semconv.GEN_AI_OPERATION_NAME)) or ""
        if operation in semconv.STRANDS_WORKFLOW_OPERATIONS:
            return None, operation.removeprefix("invoke_")  # `invoke_swarm`: the swarm
        return GENAI.agent(span)

    def agent_tools(self, span: SpanView, warnings: list[str]) -> list[LLMToolDefinition] | None:
        attrs = span.attributes
        what = f"span {span.name!r} ({span.span_id})"
        raw = attrs.get(semconv.GEN_AI_TOOL_DEFINITIONS)
        if raw is not None:
            found = load_json(raw, f"{what} {semconv.GEN_AI_TOOL_DEFINITIONS}", warnings)
            specs = found if isinstance(found, list) else [found]
            return tools([_tool_spec(spec) for spec in specs if is_mapping(spec)], warnings, what)
        raw = attrs.get(semconv.GEN_AI_AGENT_TOOLS)
        if raw is None:
            return None
        # Without the definitions opt-in, the names alone (a tool without a schema takes
        # any arguments): which tools the model was offered is still known.
        names = load_json(raw, f"{what} {semconv.GEN_AI_AGENT_TOOLS}", warnings)
        names = names if isinstance(names, list) else []
        return tools([{"name": name} for name in names if isinstance(name, str)], warnings, what)

    def model_call(self, span: SpanView) -> Extraction:
        if _latest(span):
            extraction = genai_semconv.extract(_unredacted(span))
            extraction.inputs = [_with_result_text(item) for item in extraction.inputs]
            return extraction
        extraction = Extraction()
        model_and_usage(span.attributes, extraction)
        what = f"span {span.name!r} ({span.span_id})"
        for event in span.events:
            role = _ROLE_EVENTS.get(event.name)
            if role is not None:
                raw = event.attributes.get(semconv.STRANDS_EVENT_CONTENT)
                if raw == semconv.STRANDS_REDACTED:
                    continue
                extraction.has_content = True
                message = {"role": role, "parts": _parts(_blocks(raw, what, extraction))}
                extraction.inputs.extend(message_inputs(*parts_message(message, what, [])))
            elif event.name == semconv.EVENT_CHOICE:
                raw = event.attributes.get(semconv.STRANDS_EVENT_MESSAGE)
                if raw == semconv.STRANDS_REDACTED:
                    continue
                extraction.has_content = True
                message = {"role": "assistant", "parts": _parts(_blocks(raw, what, extraction))}
                _, texts, calls, _ = parts_message(message, what, extraction.warnings)
                reason = finish_reason(event.attributes.get(semconv.STRANDS_EVENT_FINISH_REASON))
                extraction.add_choice(texts, calls, finish=reason)
        return extraction

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        attrs = span.attributes
        arguments, result = _tool_io(span)
        return _tools.run(
            attrs.get(semconv.GEN_AI_TOOL_NAME),
            attrs.get(semconv.GEN_AI_TOOL_CALL_ID),
            None if result is None else _result_text(result),
            _loaded(arguments),
            span.record.start_ns,
        )

    def handoff(self, span: SpanView) -> _handoffs.Handoff | None:
        arguments = _loaded(_tool_io(span)[0])
        target = arguments.get(semconv.STRANDS_HANDOFF_TARGET) if is_mapping(arguments) else None
        # From the agent it runs in (the span names none).
        return _handoffs.Handoff(None, as_str(target), span.record.start_ns)


def _tool_io(span: SpanView) -> tuple[Any, Any]:
    """A tool span's recorded arguments and result: attributes under the latest
    conventions, the span's two events under the default ones."""
    attrs = span.attributes
    arguments = attrs.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS)
    result = attrs.get(semconv.GEN_AI_TOOL_CALL_RESULT)
    for event in span.events:
        if event.name == semconv.EVENT_TOOL_MESSAGE and arguments is None:
            arguments = event.attributes.get(semconv.STRANDS_EVENT_CONTENT)
        elif event.name == semconv.EVENT_CHOICE and result is None:
            result = event.attributes.get(semconv.STRANDS_EVENT_MESSAGE)
    redacted = semconv.STRANDS_REDACTED
    return (None if arguments == redacted else arguments), (None if result == redacted else result)


def _unredacted(span: SpanView) -> SpanView:
    """The span without the values Strands' redaction wrote (the span itself when none)."""
    redacted = semconv.STRANDS_REDACTED
    attrs = span.attributes
    found = redacted in attrs.values() or any(
        redacted in event.attributes.values() for event in span.events
    )
    if not found:
        return span
    record = dataclasses.replace(
        span.record,
        attributes={k: v for k, v in attrs.items() if v != redacted},
        events=[
            dataclasses.replace(
                e, attributes={k: v for k, v in e.attributes.items() if v != redacted}
            )
            for e in span.events
        ],
    )
    return SpanView(record)


def _latest(span: SpanView) -> bool:
    """Whether the span holds its messages in the latest GenAI conventions' keys."""
    if semconv.GEN_AI_INPUT_MESSAGES in span.attributes:  # (gen_ai_span_attributes_only)
        return True
    return any(event.name == semconv.EVENT_INFERENCE_DETAILS for event in span.events)


def _tool_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A Bedrock tool spec as the definition `tools` reads: its schema under `parameters`."""
    schema = spec.get("inputSchema")
    if is_mapping(schema) and "json" in schema:
        schema = schema["json"]
    return {"name": spec.get("name"), "description": spec.get("description"), "parameters": schema}


def _loaded(value: Any) -> Any:
    """A JSON string's value (else the value itself)."""
    if isinstance(value, str):
        try:
            return _json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _blocks(raw: Any, what: str, extraction: Extraction) -> list[Any]:
    """An event's content blocks: a JSON list of blocks, else (an agent's answer) text."""
    if raw is None:
        return []
    if isinstance(raw, str) and not raw.lstrip().startswith(("[", "{")):
        return [{"text": raw}]
    found = load_json(raw, what, extraction.warnings)
    if isinstance(found, list):
        return found
    return [found] if is_mapping(found) else [{"text": as_str(found) or ""}]


def _parts(blocks: list[Any]) -> list[dict[str, Any]]:
    """Bedrock content blocks as GenAI parts (as Strands' own
    `_map_content_blocks_to_otel_parts` maps them under the latest conventions)."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if not is_mapping(block):
            continue
        if "text" in block:
            parts.append({"type": PART_TEXT, "content": as_str(block["text"]) or ""})
        elif is_mapping(use := block.get("toolUse")):
            parts.append(
                {
                    "type": PART_TOOL_CALL,
                    "id": use.get("toolUseId"),
                    "name": use.get("name"),
                    "arguments": use.get("input"),
                }
            )
        elif is_mapping(result := block.get("toolResult")):
            parts.append(
                {
                    "type": PART_TOOL_RESPONSE,
                    "id": result.get("toolUseId"),
                    "response": _block_text(result.get("content")),
                }
            )
        else:  # images, documents, reasoning ...: named, not read
            parts.extend({"type": PART_TEXT, "content": f"[{key}]"} for key in block)
    return parts


def _block_text(content: Any) -> str:
    """A tool result's content blocks as text: the texts, and JSON blocks as JSON."""
    if not isinstance(content, list):
        return to_json_string(content) if content is not None else ""
    texts = []
    for block in content:
        if is_mapping(block) and "text" in block:
            texts.append(as_str(block["text"]) or "")
        elif is_mapping(block) and "json" in block:
            texts.append(to_json_string(block["json"]))
        else:
            texts.append(to_json_string(block))
    return "\n".join(texts)


def _result_text(value: Any) -> str:
    """A tool result recorded as JSON content blocks, as text."""
    loaded = _loaded(value)
    if isinstance(loaded, list):
        return _block_text(loaded)
    return value if isinstance(value, str) else to_json_string(value)


def _with_result_text(item: LLMInput) -> LLMInput:
    """A tool result whose response is Strands' block list (under the latest conventions
    too), with the blocks' text as its response."""
    content = item.content
    if not isinstance(content, LLMToolResponse) or not content.response.startswith("["):
        return item
    text = _result_text(content.response)
    if text == content.response:
        return item
    response = tool_response(content.id, text, content.name)
    return item.model_copy(update={"content": response})


STRANDS = Strands()
