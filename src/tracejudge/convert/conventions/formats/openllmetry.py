"""OpenLLMetry (`opentelemetry-instrumentation-openai`): one model-call span.

From 0.55 OpenLLMetry writes the GenAI semconv message attributes
(`gen_ai.input.messages` ... as JSON strings, Chat Completions and Responses
API alike) and its events mode writes the semconv per-message events; both are
read by `genai_semconv`, with two OpenLLMetry quirks handled elsewhere: the
finish reason `tool_call` (normalised in `_common`) and Responses API tool calls
that carry the item id `fc_…` while their results carry the call id `call_…`
(joined in `_tree`).

This module reads what 0.54 and earlier write, still widely deployed: indexed
attributes `gen_ai.prompt.{i}.role|content|tool_call_id|tool_calls.{j}.*`,
`gen_ai.completion.{i}.*` and `llm.request.functions.{i}.name|description|parameters`.
"""

from __future__ import annotations

from typing import Any, cast

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._common import (
    FINISH_TOOL_CALLS,
    UNRECORDED_SERVER_TOOL,
    Extraction,
    as_str,
    finish_reason,
    hashable,
    indexed,
    load_json,
    openai_message,
    openai_tool_call,
    remembered_tools,
    text_value,
    tool_call,
    tool_response,
    tools,
)
from tracejudge.convert._construct import build
from tracejudge.convert._json import is_mapping
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView, view_of
from tracejudge.convert.conventions.formats import _legacy_keys
from tracejudge.convert.conventions.formats._legacy_keys import TOOL_CALLS
from tracejudge.convert.conventions.formats.genai_semconv import model_and_usage
from tracejudge.models import LLMInput, LLMToolDefinition

__all__ = ["is_legacy", "extract_legacy", "unrecorded_server_tools"]

#: OpenLLMetry's span of a Responses API call.
RESPONSES_SPAN = "openai.response"
_TOOL_ROLES = ("tool", "function")


def is_legacy(span: SpanRecord | SpanView) -> bool:
    """Whether the span carries OpenLLMetry's pre-0.55 indexed attributes."""
    span = view_of(span)
    return _legacy_keys.has_indexed_keys(span.attributes, span.memo)


def extract_legacy(span: SpanRecord | SpanView) -> Extraction:
    """Everything a pre-0.55 OpenLLMetry span says about its model call, in wire form."""
    span = view_of(span)
    attrs = span.attributes
    extraction = Extraction()
    model_and_usage(attrs, extraction)
    groups = _legacy_keys.read(attrs, span.memo)
    if groups is not None:
        prompts, completions, functions = groups
        extraction.has_content = bool(prompts or completions)
    else:
        prompts, completions, functions = _from_tree(span)
        extraction.has_content = span.has_indexed(semconv.GEN_AI_PROMPT) or span.has_indexed(
            semconv.GEN_AI_COMPLETION
        )

    # (Indices in order with `sorted`: in one pass, not a list of entries made first.)
    for index in sorted(prompts):
        extraction.inputs.extend(_input_items(_message(prompts[index])))
    for index in sorted(completions):
        entry = completions[index]
        message = _message(entry, role="assistant")
        _, texts, calls, _ = openai_message(message)
        reason = finish_reason(entry.get("finish_reason")) if is_mapping(entry) else None
        refusal = message.get("refusal")
        refused = [str(refusal)] if refusal else []
        extraction.add_choice(texts, calls, refusal=refused, finish=reason)

    entries = [functions[i] for i in sorted(functions) if is_mapping(functions[i])]
    if entries:

        def read(warnings: list[str]) -> list[LLMToolDefinition] | None:
            what = f"span {span.name!r} ({span.span_id})"
            functions = []
            for entry in entries:
                function = dict(entry)
                if isinstance(function.get("parameters"), str):
                    where = f"{what} {semconv.LLM_REQUEST_FUNCTIONS} parameters"
                    function["parameters"] = load_json(function["parameters"], where, warnings)
                functions.append(function)
            return tools(functions, warnings, what)

        remembered = hashable(("openllmetry", *(tuple(e.items()) for e in entries)))
        extraction.tools = remembered_tools(remembered, read, extraction.warnings, span.memo)
    return extraction


def _from_tree(span: SpanView) -> tuple[dict[int, Any], ...]:
    """What `_legacy_keys.read` gives, read through the generic nested-dict index (for keys
    of a shape that only it reads right); each message's fields a dict of its own."""

    def messages(prefix: str) -> dict[int, Any]:
        entries = indexed(span.unflatten(prefix))
        return {i: _owned(e) if is_mapping(e) else e for i, e in enumerate(entries)}

    functions = indexed(span.unflatten(semconv.LLM_REQUEST_FUNCTIONS))
    return (
        messages(semconv.GEN_AI_PROMPT),
        messages(semconv.GEN_AI_COMPLETION),
        dict(enumerate(functions)),
    )


def _owned(entry: Any) -> dict[str, Any]:
    fields = dict(entry)
    fields[TOOL_CALLS] = indexed(entry.get(TOOL_CALLS))
    return fields


def _message(entry: Any, role: str | None = None) -> Any:
    """A message's fields (a dict of its own, changed in place) as `openai_message` reads
    them: multi-part content parsed, the default role set; a bare value is the content."""
    if not is_mapping(entry):
        return {"role": role or "user", "content": entry}
    # A dict of its own: `_legacy_keys.read` and `_from_tree` make one per message.
    message = cast("dict[str, Any]", entry)
    if role and not message.get("role"):
        message["role"] = role
    message["content"] = _content(message.get("content"))
    return message


def _input_items(message: dict[str, Any]) -> list[LLMInput]:
    """A prompt message's items: what `openai_message_inputs` gives for it, without the
    tuple of lists in between (measured: 4% of a legacy span's instructions)."""
    role = (as_str(message.get("role")) or "user").lower()
    content = message.get("content")
    raw_calls = message.get(TOOL_CALLS)  # a list (see `_owned`), or None
    calls = [c for c in map(openai_tool_call, raw_calls) if c] if raw_calls else []
    function_call = message.get("function_call")
    if function_call is not None:
        call = openai_tool_call(function_call)
        if call is not None:
            calls.append(call)
    if role in _TOOL_ROLES:
        call_id = message.get("tool_call_id") or message.get("id")
        response = tool_response(call_id, text_value(content), message.get("name"))
        return [build(LLMInput, {"role": "tool", "type": "tool_response", "content": response})]
    text = text_value(content) if content is not None else ""
    items = []
    if text or (not calls and role != "assistant"):
        items.append(build(LLMInput, {"role": role, "type": "text", "content": text}))
    for call in calls:
        items.append(build(LLMInput, {"role": role, "type": "tool_call", "content": call}))
    return items


def _content(value: Any) -> Any:
    # Multi-part content is written as a JSON string of the parts list.
    if isinstance(value, str) and value.startswith("[{"):
        try:
            parts = _json.loads(value)
        except (ValueError, RecursionError):
            return value
        if isinstance(parts, list) and all(is_mapping(p) and "type" in p for p in parts):
            return parts
    return value


def unrecorded_server_tools(span: SpanRecord | SpanView, extraction: Extraction) -> None:
    """A built-in tool (web search ...) ran in this Responses API call, unrecorded.

    OpenLLMetry writes no output item of a built-in tool, only the finish reason
    `tool_call` it derives from the output item types (the Responses API has no finish
    reason of its own). An answer with that reason and no function call therefore ran a
    server-side tool: it is recorded as one of unknown kind, and the finish reason is
    `stop` (the answer is complete).
    """
    if span.name != RESPONSES_SPAN or FINISH_TOOL_CALLS not in extraction.finish_reasons:
        return
    if any(not isinstance(o.content, str) for o in extraction.outputs) or not extraction.outputs:
        return
    extraction.server_tools.append(tool_call("", UNRECORDED_SERVER_TOOL, {}))
    extraction.finish_reasons = [
        "stop" if r == FINISH_TOOL_CALLS else r for r in extraction.finish_reasons
    ]
