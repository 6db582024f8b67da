"""The Vercel AI SDK's own spans: `ai` 3 to 6 with `experimental_telemetry:
{ isEnabled: true }`, and AI SDK 7's `LegacyOpenTelemetry` (`@ai-sdk/otel`); AI SDK 7's
`OpenTelemetry` writes the GenAI conventions (`genai` reads it).

Every span names its operation (`ai.operationId`; AI SDK 3.2 only by the span's name):

- `ai.generateText` / `ai.streamText` (and `ai.generateObject` / `ai.streamObject`) is the
  run: an agent, named by the user's `functionId` (`ai.telemetry.functionId`, also written
  as `resource.name`). It repeats the last step's text and the summed usage: it is not a
  call of its own.
- `<run>.doGenerate` / `<run>.doStream` is one model call (one step): the prompt in
  `ai.prompt.messages` (JSON: `{role, content}` with `text`, `tool-call`, `tool-result`
  parts), tools in `ai.prompt.tools` (one JSON string per tool), the answer in
  `ai.response.text` + `ai.response.toolCalls`, `ai.response.finishReason`, and usage as
  `ai.usage.promptTokens` / `completionTokens` (AI SDK 4, and 5's doGenerate) or
  `inputTokens` / `outputTokens` (5's doStream, 6+). It also carries `gen_ai.system`,
  `gen_ai.request.model` and `gen_ai.usage.*`: it is read here, once, never as a GenAI call.
- `ai.toolCall` is one tool run: `ai.toolCall.name`, `.id`, `.args`, `.result` (JSON).

What the AI SDK writes changed between majors (tool-call `args` -> `input`, tool-result
`result` -> `output: {type, value}`, tool `parameters` -> `inputSchema`; AI SDK 3.2's
`ai.result.*` and `ai.finishReason` -> `ai.response.*`); each is read where it is.
Source: packages/ai/core/telemetry/ and core/generate-text/generate-text.ts (`recordSpan`
calls) in github.com/vercel/ai, v3.2 to v6; packages/otel/src/legacy-open-telemetry.ts in
AI SDK 7.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json, _tools
from tracejudge.convert._common import (
    Extraction,
    as_str,
    finish_reason,
    finish_reasons,
    hashable,
    load_json,
    message_inputs,
    remembered_tools,
    text_value,
    tool_call,
    tool_response,
    tools,
    usage,
)
from tracejudge.convert._json import is_mapping
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind
from tracejudge.models import LLMToolCall, LLMToolDefinition, LLMToolResponse

__all__ = ["VERCEL_AI", "VercelAI"]

_RUNS = frozenset(semconv.AI_RUN_OPERATIONS)
_CALLS = frozenset(run + suffix for run in _RUNS for suffix in semconv.AI_CALL_SUFFIXES)
_NAMED = _RUNS | _CALLS | {semconv.AI_OPERATION_TOOL_CALL}
_MEDIA = {"image": "[image]", "file": "[file]"}
#: Where the answer is: the current keys (AI SDK 3.3+), then AI SDK 3.2's.
_TEXT_KEYS = (
    semconv.AI_RESPONSE_TEXT,
    semconv.AI_RESPONSE_OBJECT,
    semconv.AI_RESULT_TEXT,
    semconv.AI_RESULT_OBJECT,
)
_TOOL_CALLS_KEYS = (semconv.AI_RESPONSE_TOOL_CALLS, semconv.AI_RESULT_TOOL_CALLS)
_FINISH_KEYS = (semconv.AI_RESPONSE_FINISH_REASON, semconv.AI_FINISH_REASON)
#: The setting that names a run, for the warning on a run recorded without it.
_NAME_SETTING = "experimental_telemetry: { functionId: '<agent name>' } (AI SDK 7: telemetry)"


class VercelAI(Convention):
    name = "vercel-ai"
    content_setting = (
        "experimental_telemetry: { recordInputs: true, recordOutputs: true } (the default; "
        "AI SDK 7: telemetry)"
    )

    marker_keys = frozenset({semconv.AI_OPERATION_ID})
    marker_names = frozenset(_NAMED)

    def kind(self, span: SpanView) -> str | None:
        operation = span.attributes.get(semconv.AI_OPERATION_ID)
        if operation is None:
            # AI SDK 3.2 writes no operation id (and `operation.name` is the run's on its
            # step spans too): its span names are the operations.
            if span.name not in _NAMED:
                return None
            operation = span.name
        if operation in _CALLS:
            return Kind.MODEL_CALL
        if operation in _RUNS:
            return Kind.AGENT
        if operation == semconv.AI_OPERATION_TOOL_CALL:
            return Kind.TOOL_RUN
        return Kind.STEP  # embed, embedMany, rerank ...: no call the trace holds

    def agent(self, span: SpanView) -> Identity:
        attrs = span.attributes
        name = as_str(attrs.get(semconv.AI_FUNCTION_ID)) or as_str(
            attrs.get(semconv.AI_RESOURCE_NAME)
        )
        return None, name or as_str(attrs.get(semconv.AI_OPERATION_ID)) or span.name

    def identity_warnings(self, span: SpanView) -> list[str]:
        attrs = span.attributes
        if as_str(attrs.get(semconv.AI_FUNCTION_ID)) or as_str(attrs.get(semconv.AI_RESOURCE_NAME)):
            return []
        return [
            f"span {span.name!r} ({span.span_id}): the Vercel AI SDK (instrumentation scope "
            f"{span.scope or 'ai'!r}) recorded no agent identity, so the run is named after "
            f"its operation; set {_NAME_SETTING} to name it"
        ]

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        attrs = span.attributes
        result = attrs.get(semconv.AI_TOOL_CALL_RESULT)
        if isinstance(result, str) and result.startswith('"'):  # JSON: a string is quoted
            try:
                result = _json.loads(result)
            except ValueError:
                pass
        name = attrs.get(semconv.AI_TOOL_CALL_NAME)
        return _tools.run(name, attrs.get(semconv.AI_TOOL_CALL_ID), result)

    def model_call(self, span: SpanView) -> Extraction:
        attrs = span.attributes
        extraction = Extraction()
        what = f"span {span.name!r} ({span.span_id})"
        warnings = extraction.warnings
        extraction.model = (
            as_str(attrs.get(semconv.AI_RESPONSE_MODEL))
            or as_str(attrs.get(semconv.AI_MODEL_ID))
            or as_str(attrs.get(semconv.GEN_AI_RESPONSE_MODEL))
        )
        extraction.usage = usage(
            attrs,
            (
                semconv.AI_USAGE_INPUT_TOKENS,
                semconv.AI_USAGE_PROMPT_TOKENS,
                semconv.GEN_AI_USAGE_INPUT_TOKENS,
            ),
            (
                semconv.AI_USAGE_OUTPUT_TOKENS,
                semconv.AI_USAGE_COMPLETION_TOKENS,
                semconv.GEN_AI_USAGE_OUTPUT_TOKENS,
            ),
            (semconv.AI_USAGE_TOTAL_TOKENS,),
        )
        messages = attrs.get(semconv.AI_PROMPT_MESSAGES)
        if messages is not None:
            extraction.has_content = True
            prompt = load_json(messages, f"{what} {semconv.AI_PROMPT_MESSAGES}", warnings)
            for message in prompt if isinstance(prompt, list) else ():
                if is_mapping(message):
                    extraction.inputs.extend(message_inputs(*_message(message)))
        raw_tools = attrs.get(semconv.AI_PROMPT_TOOLS)
        if raw_tools is not None:
            # Remembered by the raw strings (an agent offers the same tools on each step).
            raw = tuple(raw_tools) if isinstance(raw_tools, list) else raw_tools
            extraction.tools = remembered_tools(
                hashable((self.name, raw)),
                lambda found: _tools_offered(raw_tools, found, what),
                warnings,
                span.memo,
            )
        self._answer(attrs, extraction, what)
        return extraction

    def _answer(self, attrs: Mapping[str, Any], extraction: Extraction, what: str) -> None:
        text = _first(attrs, _TEXT_KEYS)  # (generateObject: the object's JSON)
        raw_calls = _first(attrs, _TOOL_CALLS_KEYS)
        reasoning = as_str(attrs.get(semconv.AI_RESPONSE_REASONING))
        reason = finish_reason(_first(attrs, _FINISH_KEYS))
        if reason is None:
            found = finish_reasons(attrs.get(semconv.GEN_AI_RESPONSE_FINISH_REASONS))
            reason = found[0] if found else None
        if text is None and raw_calls is None:  # outputs not recorded (recordOutputs: false)
            if reason is not None:
                extraction.finish_reasons.append(reason)
            return
        extraction.has_content = True
        calls: list[LLMToolCall] = []
        key = semconv.AI_RESPONSE_TOOL_CALLS
        parsed = load_json(raw_calls, f"{what} {key}", extraction.warnings)
        for call in parsed if isinstance(parsed, list) else ():
            if is_mapping(call):
                calls.append(_tool_call(call))
        texts = [text_value(text)] if text is not None else []
        extraction.add_choice(
            texts, calls, reasoning=[reasoning] if reasoning else (), finish=reason
        )


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


def _tool_call(part: Mapping[str, Any]) -> LLMToolCall:
    """A `tool-call` part or response tool call: `args` (AI SDK 4) or `input` (5+),
    an object or its JSON string."""
    arguments = part.get("input", part.get("args"))
    return tool_call(part.get("toolCallId"), part.get("toolName"), arguments)


def _result(part: Mapping[str, Any]) -> Any:
    """A `tool-result` part's result: `result` (AI SDK 4), or `output: {type, value}` (5+:
    `text`, `json`, `error-text`, `error-json`, `content` parts, `execution-denied`)."""
    if "output" not in part:
        return part.get("result")
    output = part["output"]
    if not is_mapping(output):
        return output
    kind = output.get("type")
    value = output.get("value")
    if kind == "content" and isinstance(value, list):
        return "\n".join(
            text_value(item.get("text")) if item.get("type") == "text" else "[file]"
            for item in value
            if is_mapping(item)
        )
    if kind == "execution-denied":
        return as_str(output.get("reason")) or "tool execution denied"
    return value


def _message(
    message: Mapping[str, Any],
) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]:
    """One `ai.prompt.messages` message -> (role, texts, tool calls, tool results)."""
    role = as_str(message.get("role")) or "user"
    content = message.get("content")
    if not isinstance(content, list):
        return role, [text_value(content)] if content is not None else [], [], []
    texts: list[str] = []
    calls: list[LLMToolCall] = []
    responses: list[LLMToolResponse] = []
    for part in content:
        if not is_mapping(part):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(text_value(part.get("text")))
        elif kind == "tool-call":
            calls.append(_tool_call(part))
        elif kind == "tool-result":
            name = part.get("toolName")
            responses.append(tool_response(part.get("toolCallId"), _result(part), name))
        elif kind in _MEDIA:
            texts.append(_MEDIA[kind])
        # reasoning parts of earlier answers, tool-approval parts: not the conversation
    return role, texts, calls, responses


def _tools_offered(raw: Any, warnings: list[str], what: str) -> list[LLMToolDefinition] | None:
    """`ai.prompt.tools`: one JSON string per tool, `{type, name, description,
    parameters}` (AI SDK 4) or `inputSchema` (5+); provider tools carry `id` and `args`."""
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    definitions = []
    for item in items:
        tool = load_json(item, f"{what} {semconv.AI_PROMPT_TOOLS}", warnings)
        if not is_mapping(tool):
            continue
        schema = tool.get("inputSchema", tool.get("parameters"))
        definitions.append(
            {
                "name": tool.get("name") or tool.get("id") or "tool",
                "description": tool.get("description") or "",
                "parameters": schema if schema is not None else {},
            }
        )
    return tools(definitions, warnings, f"{what} {semconv.AI_PROMPT_TOOLS}")


VERCEL_AI = VercelAI()
