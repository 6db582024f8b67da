"""OpenInference: one LLM span's messages, tools, model and usage.

OpenInference flattens messages into indexed keys
(`llm.input_messages.{i}.message.role|content|tool_calls.{j}.tool_call.*`,
Responses API text under `message.contents.{k}.message_content.text`; indices may
have gaps), records each tool's whole JSON schema as a string
(`llm.tools.{i}.tool.json_schema`), the response model in `llm.model_name`, and
the raw request in `input.value`. Agents are spans of kind AGENT.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert._common import (
    Extraction,
    as_str,
    finish_reasons,
    indexed,
    load_json,
    message_outputs,
    openai_message,
    openai_message_inputs,
    tools,
    unflatten,
    usage,
)
from tracejudge.convert._records import SpanRecord

__all__ = ["is_llm", "is_agent", "agent_name", "has_messages", "extract"]

_FUNCTION_CALL_ITEM = "function_call"


def is_llm(span: SpanRecord) -> bool:
    return span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OPENINFERENCE_KIND_LLM


def is_agent(span: SpanRecord) -> bool:
    kind = span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND)
    return kind == semconv.OPENINFERENCE_KIND_AGENT


def agent_name(span: SpanRecord) -> str:
    return as_str(span.attributes.get(semconv.AGENT_NAME)) or span.name or "agent"


def has_messages(span: SpanRecord) -> bool:
    prefixes = (semconv.LLM_INPUT_MESSAGES + ".", semconv.LLM_OUTPUT_MESSAGES + ".")
    return any(key.startswith(prefixes) for key in span.attributes)


def extract(span: SpanRecord) -> Extraction:
    """Everything the span says about its model call, in wire form."""
    attrs = span.attributes
    what = f"span {span.name!r} ({span.span_id})"
    extraction = Extraction(has_content=has_messages(span))
    extraction.model = as_str(attrs.get(semconv.LLM_MODEL_NAME)) or _requested_model(attrs)
    extraction.usage = usage(
        attrs,
        (semconv.LLM_TOKEN_COUNT_PROMPT,),
        (semconv.LLM_TOKEN_COUNT_COMPLETION,),
        (semconv.LLM_TOKEN_COUNT_TOTAL,),
    )
    extraction.finish_reasons = finish_reasons(attrs.get(semconv.LLM_FINISH_REASON))

    for entry in indexed(unflatten(attrs, semconv.LLM_INPUT_MESSAGES)):
        extraction.inputs.extend(openai_message_inputs(_openai_shape(entry)))
    for entry in indexed(unflatten(attrs, semconv.LLM_OUTPUT_MESSAGES)):
        _, texts, calls, _ = openai_message(_openai_shape(entry))
        extraction.outputs.extend(message_outputs(texts, calls))

    schemas = []
    for entry in indexed(unflatten(attrs, semconv.LLM_TOOLS)):
        tool = entry.get(semconv.OI_TOOL) if isinstance(entry, Mapping) else None
        raw = tool.get(semconv.OI_JSON_SCHEMA) if isinstance(tool, Mapping) else None
        schema = load_json(raw, f"{what} {semconv.LLM_TOOLS}", extraction.warnings)
        if isinstance(schema, Mapping):
            schemas.append(schema)
    if schemas:
        extraction.tools = tools(schemas, extraction.warnings, what)

    extraction.call_aliases = _call_aliases(attrs.get(semconv.INPUT_VALUE))
    return extraction


def _requested_model(attrs: Mapping[str, Any]) -> str | None:
    params = attrs.get(semconv.LLM_INVOCATION_PARAMETERS)
    try:
        parsed = json.loads(params) if isinstance(params, str) else params
    except (ValueError, RecursionError):
        return None
    return as_str(parsed.get("model")) if isinstance(parsed, Mapping) else None


def _openai_shape(entry: Any) -> dict[str, Any]:
    """`{message: {role, content, contents, tool_calls: {j: {tool_call: …}}}}` -> OpenAI dict."""
    message = entry.get(semconv.OI_MESSAGE) if isinstance(entry, Mapping) else None
    if not isinstance(message, Mapping):
        return {"role": "user", "content": None}
    shaped = dict(message)
    if shaped.get("content") is None and "contents" in message:
        parts = []
        for item in indexed(message.get("contents")):
            part = item.get(semconv.OI_MESSAGE_CONTENT) if isinstance(item, Mapping) else None
            if isinstance(part, Mapping):
                parts.append({"type": part.get("type") or "text", "text": part.get("text")})
        shaped["content"] = parts
    calls = []
    for item in indexed(message.get("tool_calls")):
        call = item.get(semconv.OI_TOOL_CALL) if isinstance(item, Mapping) else None
        if isinstance(call, Mapping):
            calls.append(call)
    shaped["tool_calls"] = calls
    return shaped


def _call_aliases(raw_request: Any) -> dict[str, str]:
    """Responses API: `fc_…` item id -> `call_…` call id, from the raw request's input items.

    The raw request is optional context, so anything unreadable is silently ignored.
    """
    if not isinstance(raw_request, str) or '"' + _FUNCTION_CALL_ITEM + '"' not in raw_request:
        return {}
    try:
        request = json.loads(raw_request)
    except (ValueError, RecursionError):
        return {}
    items = request.get("input") if isinstance(request, Mapping) else None
    aliases: dict[str, str] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping) and item.get("type") == _FUNCTION_CALL_ITEM:
            item_id, call_id = as_str(item.get("id")), as_str(item.get("call_id"))
            if item_id and call_id and item_id != call_id:
                aliases[item_id] = call_id
    return aliases
