"""OpenInference: one LLM span's messages, tools, model and usage.

OpenInference flattens messages into indexed keys
(`llm.input_messages.{i}.message.role|content|tool_calls.{j}.tool_call.*`,
Responses API text under `message.contents.{k}.message_content.text`, reasoning as
contents of type `reasoning`, built-in tools as tool calls named after their item type
(`web_search_call` ...), legacy `function_call` as `message.function_call_name|
function_call_arguments_json`, legacy Completions as `llm.prompts.{i}.prompt.text` and
`llm.choices.{i}.completion.text`; indices may have gaps), keeps the raw response in
`output.value` (the only place a refusal is), records each tool's whole JSON schema as a string
(`llm.tools.{i}.tool.json_schema`), the response model in `llm.model_name`, and
the raw request in `input.value`. Agents are spans of kind AGENT.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._common import (
    REASONING_PARTS,
    SERVER_TOOL_ITEMS,
    Extraction,
    as_str,
    finish_reasons,
    has_flattened,
    hashable,
    indexed,
    load_json,
    openai_message,
    openai_message_inputs,
    remembered_tools,
    text_value,
    tool_call,
    tools,
    unflatten,
    usage,
)
from tracejudge.convert._json import is_mapping
from tracejudge.convert._records import SpanRecord
from tracejudge.models import LLMInput, LLMToolDefinition

__all__ = ["is_llm", "is_agent", "agent_name", "has_messages", "extract"]

_FUNCTION_CALL_ITEM = "function_call"
_RESPONSES_SPAN = "Response"
_FUNCTION_CALL_NAME = "function_call_name"
_FUNCTION_CALL_ARGUMENTS = "function_call_arguments_json"
_PROMPTS = "llm.prompts"
_CHOICES = "llm.choices"
# Raw response JSON bigger than this is not parsed (it only adds the refusal).
_MAX_RAW_CHARS = 2_000_000
# What makes the raw response worth parsing: a refusal that is not null, or the Responses
# API's object type. (In JSON text, `"refusal"` followed by a colon can only be a key.)
_RAW_NEEDED = re.compile(r'"refusal"\s*:\s*[^n\s]|"object"\s*:\s*"response"')


def is_llm(span: SpanRecord) -> bool:
    return span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OPENINFERENCE_KIND_LLM


def is_agent(span: SpanRecord) -> bool:
    kind = span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND)
    return kind == semconv.OPENINFERENCE_KIND_AGENT


def agent_name(span: SpanRecord) -> str:
    return as_str(span.attributes.get(semconv.AGENT_NAME)) or span.name or "agent"


def has_messages(span: SpanRecord) -> bool:
    attrs = span.attributes
    prefixes = (semconv.LLM_INPUT_MESSAGES, semconv.LLM_OUTPUT_MESSAGES, _PROMPTS, _CHOICES)
    return any(has_flattened(attrs, prefix) for prefix in prefixes)


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
    reasons = finish_reasons(attrs.get(semconv.LLM_FINISH_REASON))
    raw = _raw_response(attrs.get(semconv.OUTPUT_VALUE))
    responses_api = span.name == _RESPONSES_SPAN or raw.get("object") == "response"

    for entry in indexed(unflatten(attrs, semconv.LLM_INPUT_MESSAGES)):
        extraction.inputs.extend(openai_message_inputs(_openai_shape(entry)))
    for entry in indexed(unflatten(attrs, semconv.LLM_OUTPUT_MESSAGES)):
        shaped = _openai_shape(entry)
        calls = []
        for raw_call in shaped["tool_calls"]:
            function = raw_call.get("function")
            name = function.get("name") if is_mapping(function) else None
            if name in SERVER_TOOL_ITEMS:
                call = tool_call(raw_call.get("id"), SERVER_TOOL_ITEMS[name], {})
                extraction.server_tools.append(call)
            else:
                calls.append(raw_call)
        _, texts, tool_calls, _ = openai_message(dict(shaped, tool_calls=calls))
        extraction.add_choice(
            texts,
            tool_calls,
            reasoning=shaped["reasoning"],
            finish=reasons[0] if reasons and not extraction.finish_reasons else None,
            same_choice=responses_api,
        )
    _legacy_completion(attrs, extraction)
    extraction.refusal = _refusal(raw)
    for reason in reasons:
        if reason not in extraction.finish_reasons:
            extraction.finish_reasons.append(reason)

    raw_schemas = []
    for entry in indexed(unflatten(attrs, semconv.LLM_TOOLS)):
        tool = entry.get(semconv.OI_TOOL) if is_mapping(entry) else None
        raw_schemas.append(tool.get(semconv.OI_JSON_SCHEMA) if is_mapping(tool) else None)
    if raw_schemas:

        def read(warnings: list[str]) -> list[LLMToolDefinition] | None:
            schemas = []
            for raw_schema in raw_schemas:
                schema = load_json(raw_schema, f"{what} {semconv.LLM_TOOLS}", warnings)
                # Built-in tools (web search ...) have no function schema: left out.
                if is_mapping(schema) and schema.get("type") in (None, "function"):
                    schemas.append(schema)
            return tools(schemas, warnings, what) if schemas else None

        remembered = hashable(("openinference", *raw_schemas))
        extraction.tools = remembered_tools(remembered, read, extraction.warnings)

    extraction.call_aliases = _call_aliases(attrs.get(semconv.INPUT_VALUE))
    return extraction


def _raw_response(value: Any) -> Mapping[str, Any]:
    """The raw response JSON (`output.value`) as a dict, when it says something the
    flattened attributes do not (a refusal, or that it is a Responses API response);
    empty when it does not, or is absent or unreadable."""
    if not isinstance(value, str) or len(value) > _MAX_RAW_CHARS:
        return {}
    if not value.lstrip().startswith("{") or not _RAW_NEEDED.search(value):
        return {}
    try:
        parsed = _json.loads(value)
    except (ValueError, RecursionError):
        return {}
    return parsed if is_mapping(parsed) else {}


def _refusal(raw: Mapping[str, Any]) -> str | None:
    """The refusal of the first choice: OpenInference flattens none, the raw response
    keeps it (`choices[0].message.refusal`, Responses API `refusal` content)."""
    choices = raw.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        message = choices[0].get("message")
        if is_mapping(message):
            return as_str(message.get("refusal"))
    found = []
    for item in raw.get("output") or ():
        for part in item.get("content") or () if is_mapping(item) else ():
            if is_mapping(part) and part.get("type") == "refusal":
                found.append(as_str(part.get("refusal")) or "")
    return "\n".join(found) or None


def _legacy_completion(attrs: Mapping[str, Any], extraction: Extraction) -> None:
    """Legacy Completions: `llm.prompts.{i}.prompt.text`, `llm.choices.{i}.completion.text`."""
    for entry in indexed(unflatten(attrs, _PROMPTS)):
        prompt = entry.get("prompt") if is_mapping(entry) else None
        if is_mapping(prompt) and prompt.get("text") is not None:
            extraction.has_content = True
            extraction.inputs.append(
                LLMInput(role="user", type="text", content=text_value(prompt["text"]))
            )
    for entry in indexed(unflatten(attrs, _CHOICES)):
        completion = entry.get("completion") if is_mapping(entry) else None
        if is_mapping(completion) and completion.get("text") is not None:
            extraction.has_content = True
            extraction.add_choice([text_value(completion["text"])], [])


def _requested_model(attrs: Mapping[str, Any]) -> str | None:
    params = attrs.get(semconv.LLM_INVOCATION_PARAMETERS)
    try:
        parsed = _json.loads(params) if isinstance(params, str) else params
    except (ValueError, RecursionError):
        return None
    return as_str(parsed.get("model")) if is_mapping(parsed) else None


def _openai_shape(entry: Any) -> dict[str, Any]:
    """`{message: {role, content, contents, tool_calls: {j: {tool_call: …}}}}` -> OpenAI dict
    (plus `reasoning`: the texts of reasoning contents, kept out of the content)."""
    message = entry.get(semconv.OI_MESSAGE) if is_mapping(entry) else None
    if not is_mapping(message):
        return {"role": "user", "content": None, "tool_calls": [], "reasoning": []}
    shaped = dict(message)
    reasoning: list[str] = []
    if shaped.get("content") is None and "contents" in message:
        parts = []
        for item in indexed(message.get("contents")):
            part = item.get(semconv.OI_MESSAGE_CONTENT) if is_mapping(item) else None
            if not is_mapping(part):
                continue
            if part.get("type") in REASONING_PARTS:
                reasoning.append(text_value(part.get("text")))
            else:
                parts.append({"type": part.get("type") or "text", "text": part.get("text")})
        shaped["content"] = parts
    calls = []
    for item in indexed(message.get("tool_calls")):
        call = item.get(semconv.OI_TOOL_CALL) if is_mapping(item) else None
        if is_mapping(call):
            calls.append(call)
    name = message.get(_FUNCTION_CALL_NAME)
    if name is not None:  # legacy `function_call` of Chat Completions
        arguments = message.get(_FUNCTION_CALL_ARGUMENTS)
        shaped["function_call"] = {"name": name, "arguments": arguments}
    shaped["tool_calls"] = calls
    shaped["reasoning"] = reasoning
    return shaped


def _call_aliases(raw_request: Any) -> dict[str, str]:
    """Responses API: `fc_…` item id -> `call_…` call id, from the raw request's input items.

    The raw request is optional context, so anything unreadable is silently ignored.
    """
    if not isinstance(raw_request, str) or '"' + _FUNCTION_CALL_ITEM + '"' not in raw_request:
        return {}
    try:
        request = _json.loads(raw_request)
    except (ValueError, RecursionError):
        return {}
    items = request.get("input") if is_mapping(request) else None
    aliases: dict[str, str] = {}
    for item in items if isinstance(items, list) else []:
        if is_mapping(item) and item.get("type") == _FUNCTION_CALL_ITEM:
            item_id, call_id = as_str(item.get("id")), as_str(item.get("call_id"))
            if item_id and call_id and item_id != call_id:
                aliases[item_id] = call_id
    return aliases
