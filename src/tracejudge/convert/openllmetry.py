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

from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._common import (
    FINISH_TOOL_CALLS,
    UNRECORDED_SERVER_TOOL,
    Extraction,
    finish_reason,
    has_indexed,
    hashable,
    indexed,
    load_json,
    model_and_usage,
    openai_message,
    openai_message_inputs,
    remembered_tools,
    tool_call,
    tools,
    unflatten,
)
from tracejudge.convert._json import is_mapping
from tracejudge.convert._records import SpanRecord
from tracejudge.models import LLMToolDefinition

__all__ = ["is_legacy", "extract_legacy", "unrecorded_server_tools"]

#: OpenLLMetry's span of a Responses API call.
RESPONSES_SPAN = "openai.response"


def is_legacy(span: SpanRecord) -> bool:
    """Whether the span carries OpenLLMetry's pre-0.55 indexed attributes."""
    attrs = span.attributes
    return (
        has_indexed(attrs, semconv.GEN_AI_PROMPT)
        or has_indexed(attrs, semconv.GEN_AI_COMPLETION)
        or has_indexed(attrs, semconv.LLM_REQUEST_FUNCTIONS)
    )


def extract_legacy(span: SpanRecord) -> Extraction:
    """Everything a pre-0.55 OpenLLMetry span says about its model call, in wire form."""
    attrs = span.attributes
    what = f"span {span.name!r} ({span.span_id})"
    extraction = Extraction()
    model_and_usage(attrs, extraction)
    extraction.has_content = has_indexed(attrs, semconv.GEN_AI_PROMPT) or has_indexed(
        attrs, semconv.GEN_AI_COMPLETION
    )

    for entry in indexed(unflatten(attrs, semconv.GEN_AI_PROMPT)):
        extraction.inputs.extend(openai_message_inputs(_message(entry)))
    for entry in indexed(unflatten(attrs, semconv.GEN_AI_COMPLETION)):
        message = _message(entry, role="assistant")
        _, texts, calls, _ = openai_message(message)
        reason = finish_reason(entry.get("finish_reason")) if is_mapping(entry) else None
        refusal = message.get("refusal")
        refused = [str(refusal)] if refusal else []
        extraction.add_choice(texts, calls, refusal=refused, finish=reason)

    entries = [e for e in indexed(unflatten(attrs, semconv.LLM_REQUEST_FUNCTIONS)) if is_mapping(e)]
    if entries:

        def read(warnings: list[str]) -> list[LLMToolDefinition] | None:
            functions = []
            for entry in entries:
                function = dict(entry)
                if isinstance(function.get("parameters"), str):
                    where = f"{what} {semconv.LLM_REQUEST_FUNCTIONS} parameters"
                    function["parameters"] = load_json(function["parameters"], where, warnings)
                functions.append(function)
            return tools(functions, warnings, what)

        remembered = hashable(("openllmetry", *(tuple(e.items()) for e in entries)))
        extraction.tools = remembered_tools(remembered, read, extraction.warnings)
    return extraction


def _message(entry: Any, role: str | None = None) -> dict[str, Any]:
    if not is_mapping(entry):
        return {"role": role or "user", "content": entry}
    message = dict(entry)
    if role and not message.get("role"):
        message["role"] = role
    message["tool_calls"] = indexed(entry.get("tool_calls"))
    message["content"] = _content(entry.get("content"))
    return message


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


def unrecorded_server_tools(span: SpanRecord, extraction: Extraction) -> None:
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
