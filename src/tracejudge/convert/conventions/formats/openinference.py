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
from collections.abc import Mapping, Sequence
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._common import (
    REASONING_PARTS,
    SERVER_TOOL_ITEMS,
    Extraction,
    as_str,
    finish_reasons,
    hashable,
    in_order,
    load_json,
    remembered_tools,
    text_value,
    tool_call,
    tool_response,
    tools,
    usage,
)
from tracejudge.convert._construct import build
from tracejudge.convert._json import is_mapping
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView, view_of
from tracejudge.convert.conventions.formats import _oi_keys
from tracejudge.convert.conventions.formats._oi_keys import Record
from tracejudge.models import LLMInput, LLMToolCall, LLMToolDefinition, TokenUsage

__all__ = [
    "is_llm",
    "is_agent",
    "agent_name",
    "has_messages",
    "extract",
    "tool_arguments",
    "tool_result",
]

_FUNCTION_CALL_ITEM = "function_call"
_RESPONSES_SPAN = "Response"
_FUNCTION_CALL_NAME = "function_call_name"
_FUNCTION_CALL_ARGUMENTS = "function_call_arguments_json"
_CALLS = "tool_calls"  # a message record's calls and content parts, by index (`_oi_keys`)
_PARTS = "contents"
_FIRST_INPUT = f"{semconv.LLM_INPUT_MESSAGES}.0.message.role"
# The sections of messages (all but the tools).
_MESSAGE_STARTS = tuple(
    section + "." for section in _oi_keys.SECTIONS if section != semconv.LLM_TOOLS
)
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


def has_messages(span: SpanRecord | SpanView) -> bool:
    attrs = span.attributes
    if _FIRST_INPUT in attrs:  # the usual case, without a look at every key
        return True
    return any(key.startswith(_MESSAGE_STARTS) for key in attrs)


def extract(span: SpanRecord | SpanView) -> Extraction:
    """Everything the span says about its model call, in wire form."""
    span = view_of(span)
    attrs = span.attributes
    inputs, outputs, tool_records, prompts, choices = _oi_keys.records(span)
    extraction = Extraction(has_content=has_messages(span))
    extraction.model = as_str(attrs.get(semconv.LLM_MODEL_NAME)) or _requested_model(attrs)
    extraction.usage = _usage(attrs)
    reason = attrs.get(semconv.LLM_FINISH_REASON)
    reasons = finish_reasons(reason) if reason is not None else []
    responses_span = span.name == _RESPONSES_SPAN
    raw = _raw_response(attrs.get(semconv.OUTPUT_VALUE), responses_span)
    responses_api = responses_span or raw.get("object") == "response"

    for record in inputs:
        _add_input(record, extraction.inputs)
    for record in outputs:
        role, content, calls, reasoning = _message(record, extraction.server_tools)
        if role in _TOOL_ROLES:  # a tool result is not an answer
            texts, calls = [], []
        else:
            texts = [text_value(content)] if content is not None else []
        extraction.add_choice(
            texts,
            calls,
            reasoning=reasoning,
            finish=reasons[0] if reasons and not extraction.finish_reasons else None,
            same_choice=responses_api,
        )
    _legacy_completion(prompts, choices, extraction)
    if not outputs and not choices:
        _plain_answer(attrs, extraction)
    extraction.refusal = _refusal(raw)
    for reason in reasons:
        if reason not in extraction.finish_reasons:
            extraction.finish_reasons.append(reason)

    raw_schemas = [record.get(semconv.OI_JSON_SCHEMA) for record in tool_records]
    if raw_schemas:

        def read(warnings: list[str]) -> list[LLMToolDefinition] | None:
            what = f"span {span.name!r} ({span.span_id})"
            schemas = []
            for raw_schema in raw_schemas:
                schema = load_json(raw_schema, f"{what} {semconv.LLM_TOOLS}", warnings)
                # Built-in tools (web search ...) have no function schema: left out.
                if is_mapping(schema) and schema.get("type") in (None, "function"):
                    schemas.append(schema)
            return tools(schemas, warnings, what) if schemas else None

        remembered = hashable(("openinference", *raw_schemas))
        extraction.tools = remembered_tools(remembered, read, extraction.warnings, span.memo)

    extraction.call_aliases = _call_aliases(attrs.get(semconv.INPUT_VALUE))
    return extraction


_TOOL_ROLES = ("tool", "function")


def _plain_answer(attrs: Mapping[str, Any], extraction: Extraction) -> None:
    """A call with no output message whose `output.value` is plain text (OpenInference's
    processor for the AI SDK writes a text answer only there): that text is the answer."""
    text = attrs.get(semconv.OUTPUT_VALUE)
    if (
        type(text) is str
        and text.strip()
        and text != semconv.OPENINFERENCE_REDACTED
        and attrs.get(semconv.OUTPUT_MIME_TYPE) == semconv.OPENINFERENCE_MIME_TEXT
    ):
        extraction.add_choice([text], [])


def _message(
    record: Record, builtin: list[LLMToolCall] | None = None
) -> tuple[str, Any, list[LLMToolCall], Sequence[str]]:
    """One message -> (role, content, tool calls, reasoning texts), read as `openai_message`
    reads an OpenAI message. The content is a string, OpenAI content parts (from
    `contents`, without the reasoning parts) or None. With `builtin`, calls of built-in tools
    (named after their item type, `web_search_call` ...) go there instead of the tool calls."""
    role = record.get("role")  # (as_str only where not a string: its call was a tenth of this)
    role = ((role if type(role) is str else as_str(role)) or "user").lower()
    content = record.get("content")
    reasoning: Sequence[str] = ()
    if content is None and _PARTS in record:  # Responses API: text and reasoning
        content, reasoning = _contents(in_order(record[_PARTS]))
    if _CALLS in record or _FUNCTION_CALL_NAME in record:
        calls = _calls(record, builtin)
    else:  # the usual message: no call to read
        calls = []
    return role, content, calls, reasoning


def _calls(record: Record, builtin: list[LLMToolCall] | None) -> list[LLMToolCall]:
    """A message's tool calls, then its legacy `function_call` (see `_message`)."""
    calls = []
    for call in in_order(record.get(_CALLS) or {}):
        name = call.get("name")
        if builtin is not None and call.get("builtin", True) and name in SERVER_TOOL_ITEMS:
            builtin.append(tool_call(call.get("id"), SERVER_TOOL_ITEMS[name], {}))
        else:
            call_id = call.get("id") or call.get("call_id")
            calls.append(tool_call(call_id, name, call.get("arguments")))
    name = record.get(_FUNCTION_CALL_NAME)
    if name is not None:  # legacy `function_call` of Chat Completions
        calls.append(tool_call(None, name, record.get(_FUNCTION_CALL_ARGUMENTS)))
    return calls


def _add_input(record: Record, inputs: list[LLMInput]) -> None:
    """One input message's items, as `message_inputs` makes them: its text, then its tool
    calls; a `tool` (or `function`) message is its result alone."""
    role, content, calls, _ = _message(record)
    if role in _TOOL_ROLES:
        call_id = record.get("tool_call_id") or record.get("id")
        response = tool_response(call_id, text_value(content), record.get("name"))
        inputs.append(
            build(LLMInput, {"role": "tool", "type": "tool_response", "content": response})
        )
        return
    text = content if type(content) is str else "" if content is None else text_value(content)
    # An empty message still counts, but for an assistant's (see `message_inputs`).
    if text or (not calls and role != "assistant"):
        inputs.append(build(LLMInput, {"role": role, "type": "text", "content": text}))
    for call in calls:
        inputs.append(build(LLMInput, {"role": role, "type": "tool_call", "content": call}))


def _contents(parts: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Content parts as OpenAI content parts, and the texts of the reasoning parts apart."""
    content = []
    reasoning = []
    for part in parts:
        kind = part.get("type")
        if kind in REASONING_PARTS:
            reasoning.append(text_value(part.get("text")))
        else:
            content.append({"type": kind or "text", "text": part.get("text")})
    return content, reasoning


def _usage(attrs: Mapping[str, Any]) -> TokenUsage | None:
    prompt = attrs.get(semconv.LLM_TOKEN_COUNT_PROMPT)
    completion = attrs.get(semconv.LLM_TOKEN_COUNT_COMPLETION)
    total = attrs.get(semconv.LLM_TOKEN_COUNT_TOTAL)
    if type(prompt) is int and type(completion) is int and type(total) is int:
        # All three recorded, as integers: half the time of the general reading.
        data = {"input_tokens": prompt, "output_tokens": completion, "total_tokens": total}
        return build(TokenUsage, data)
    return usage(
        attrs,
        (semconv.LLM_TOKEN_COUNT_PROMPT,),
        (semconv.LLM_TOKEN_COUNT_COMPLETION,),
        (semconv.LLM_TOKEN_COUNT_TOTAL,),
    )


def _raw_response(value: Any, responses_span: bool = False) -> Mapping[str, Any]:
    """The raw response JSON (`output.value`) as a dict, when it says something the
    flattened attributes and the span (`responses_span`: named as a Responses API call)
    do not: a refusal, or that it is a Responses API response; empty when it does not,
    or is absent or unreadable."""
    if not isinstance(value, str) or len(value) > _MAX_RAW_CHARS:
        return {}
    if responses_span and '"refusal"' not in value and "\\u00" not in value:
        # Only a refusal would be news, and JSON without the string "refusal" (unescaped;
        # without \u00XX escapes no other spelling decodes to it) has none: parsing it
        # anyway was a tenth of an OpenInference span's time.
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


def _legacy_completion(
    prompts: list[Record], choices: list[Record], extraction: Extraction
) -> None:
    """Legacy Completions: `llm.prompts.{i}.prompt.text`, `llm.choices.{i}.completion.text`."""
    for record in prompts:
        text = record.get("text")
        if text is not None:
            extraction.has_content = True
            extraction.inputs.append(LLMInput(role="user", type="text", content=text_value(text)))
    for record in choices:
        text = record.get("text")
        if text is not None:
            extraction.has_content = True
            extraction.add_choice([text_value(text)], [])


def _requested_model(attrs: Mapping[str, Any]) -> str | None:
    params = attrs.get(semconv.LLM_INVOCATION_PARAMETERS)
    try:
        parsed = _json.loads(params) if isinstance(params, str) else params
    except (ValueError, RecursionError):
        return None
    return as_str(parsed.get("model")) if is_mapping(parsed) else None


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


#: The keys of OpenInference's record of a Python call's arguments on a TOOL span's
#: `input.value` (its instrumentations' `_get_input_value`: DSPy `{"kwargs": {...}}`,
#: smolagents `{"args": [...], "sanitize_inputs_outputs": ..., "kwargs": {...}}`).
_CALL_KEYS = frozenset({"args", "kwargs", "sanitize_inputs_outputs"})
_MAX_ARGUMENT_CHARS = 2_000_000


def tool_arguments(input_value: Any, parameters: Any) -> Any:
    """A TOOL span's arguments by name: a recorded Python call's `args` named after the
    tool's parameters (`tool.parameters`, in order) and its `kwargs`; any other input as
    recorded (None when there is none)."""
    text = as_str(input_value)
    if text is None or len(text) > _MAX_ARGUMENT_CHARS or not text.lstrip().startswith("{"):
        return input_value
    try:
        value = _json.loads(text)
    except (ValueError, RecursionError):
        return input_value
    if not is_mapping(value) or not value.keys() <= _CALL_KEYS or not value:
        return input_value
    positional = value.get("args") or []
    named = value.get("kwargs") or {}
    if not isinstance(positional, list) or not is_mapping(named):
        return input_value
    names = list(_parameter_names(parameters))
    if len(positional) > len(names):
        return input_value  # positional arguments the span does not name: kept as recorded
    return {**dict(zip(names, positional, strict=False)), **named}


def tool_result(output_value: Any, mime_type: Any) -> Any:
    """A TOOL span's result: a text return value recorded as JSON (`"..."`, mime type
    `application/json`: DSPy's tools) is the text; anything else as recorded."""
    text = as_str(output_value)
    if (
        text is None
        or mime_type != semconv.MIME_JSON
        or not text.startswith('"')
        or len(text) > _MAX_ARGUMENT_CHARS
    ):
        return output_value
    try:
        value = _json.loads(text)
    except (ValueError, RecursionError):
        return output_value
    return value if isinstance(value, str) else output_value


def _parameter_names(parameters: Any) -> Sequence[str]:
    text = as_str(parameters)
    if text is None:
        return ()
    try:
        value = _json.loads(text)
    except (ValueError, RecursionError):
        return ()
    return [str(name) for name in value] if is_mapping(value) else ()
