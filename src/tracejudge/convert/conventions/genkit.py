"""Genkit (JavaScript, `genkit` on npm): spans with `genkit:*` attributes.

Every Genkit step is a span named after it whose `genkit:type` says what it is
(@genkit-ai/core lib/tracing/instrumentation.mjs `runInNewSpan`, with the labels set by
lib/action.mjs, ai lib/prompt.mjs and ai lib/generate/action.mjs):

- an action (`genkit:type=action`) of subtype (`genkit:metadata:subtype`) `flow` is an
  agent (a flow is what a Genkit user runs; it calls `ai.generate` itself or runs
  prompts), `model` a model call, `tool` a tool run;
- a prompt run (`genkit:type=dotprompt`, a `definePrompt` called with its input: its own
  system prompt, model and tools) is an agent: Genkit's guide builds agents as prompts;
- the rest (`util` generate loops, `promptTemplate` renders, `flowStep`s of `ai.run`,
  embedders, retrievers, other actions) are steps.

A model span's `genkit:input` and `genkit:output` are JSON text of Genkit's
GenerateRequest (`messages` of `{role, content: [parts]}`, `tools`) and GenerateResponse
(`message`, or `candidates` before Genkit 1.0; `finishReason`; `usage`). Parts are
`{text}`, `{toolRequest: {name, ref, input}}`, `{toolResponse: {name, ref, output}}`,
`{media}`, `{reasoning}`, `{data}`; roles are user, model, system and tool. Genkit always
records content: there is no switch to turn off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _tools
from tracejudge.convert._common import (
    Extraction,
    as_int,
    as_str,
    finish_reason,
    load_json,
    message_inputs,
    text_value,
    tool_call,
    tool_response,
    tools,
)
from tracejudge.convert._json import is_mapping
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind
from tracejudge.models import LLMToolCall, LLMToolResponse, TokenUsage, to_json_string

__all__ = ["GENKIT", "Genkit"]

_ACTION_KINDS = {
    semconv.GENKIT_SUBTYPE_FLOW: Kind.AGENT,
    semconv.GENKIT_SUBTYPE_MODEL: Kind.MODEL_CALL,
    semconv.GENKIT_SUBTYPE_TOOL: Kind.TOOL_RUN,
}
#: Genkit's finish reasons that are not OpenAI's words (`blocked`: a safety block).
_FINISH = {"blocked": "content_filter", "interrupted": "tool_calls"}


class Genkit(Convention):
    name = "genkit"
    answer_keys = ((semconv.GENKIT_OUTPUT, "json"),)  # a flow's output
    marker_keys = frozenset({semconv.GENKIT_TYPE})
    kind_attribute = semconv.GENKIT_TYPE

    def kind(self, span: SpanView) -> str | None:
        attrs = span.attributes
        genkit_type = attrs.get(semconv.GENKIT_TYPE)
        if genkit_type is None:
            return None
        if genkit_type == semconv.GENKIT_TYPE_ACTION:
            subtype = attrs.get(semconv.GENKIT_SUBTYPE)
            return _ACTION_KINDS.get(subtype, Kind.STEP) if subtype is not None else Kind.STEP
        if genkit_type == semconv.GENKIT_TYPE_PROMPT:
            return Kind.AGENT
        return Kind.STEP

    def agent(self, span: SpanView) -> Identity:
        return None, as_str(span.attributes.get(semconv.GENKIT_NAME)) or span.name

    def model_call(self, span: SpanView) -> Extraction:
        attrs = span.attributes
        extraction = Extraction()
        what = f"span {span.name!r} ({span.span_id})"
        extraction.model = as_str(attrs.get(semconv.GENKIT_NAME)) or span.name
        request = load_json(
            attrs.get(semconv.GENKIT_INPUT), f"{what} genkit:input", extraction.warnings
        )
        response = load_json(
            attrs.get(semconv.GENKIT_OUTPUT), f"{what} genkit:output", extraction.warnings
        )
        if is_mapping(request):
            extraction.has_content = True
            for message in _list(request.get("messages")):
                extraction.inputs.extend(message_inputs(*_message(message)))
            definitions = [_definition(d) for d in _list(request.get("tools"))]
            extraction.tools = tools([d for d in definitions if d], extraction.warnings, what)
        if is_mapping(response):
            extraction.has_content = True
            _read_response(response, extraction)
        return extraction

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        attrs = span.attributes
        output = attrs.get(semconv.GENKIT_OUTPUT)
        result = load_json(output, "", []) if output is not None else None
        return _tools.run(
            attrs.get(semconv.GENKIT_NAME) or span.name,
            None,  # Genkit records no call id on the tool's span
            text_value(result) if result is not None else None,
            attrs.get(semconv.GENKIT_INPUT),
            span.record.start_ns,
        )


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _message(
    message: Any,
) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]:
    """A Genkit message -> (role, texts, tool calls, tool results)."""
    if not is_mapping(message):
        return "user", [text_value(message)] if message is not None else [], [], []
    role = as_str(message.get("role")) or "user"
    texts, calls, responses = _parts(message.get("content"), [])
    return role, texts, calls, responses  # (`model` is read as assistant by the walk)


def _parts(
    parts: Any, reasoning: list[str]
) -> tuple[list[str], list[LLMToolCall], list[LLMToolResponse]]:
    texts: list[str] = []
    calls: list[LLMToolCall] = []
    responses: list[LLMToolResponse] = []
    for part in parts if isinstance(parts, (list, tuple)) else [parts]:
        if isinstance(part, str):
            texts.append(part)
        elif not is_mapping(part):
            continue
        elif "text" in part:
            texts.append(text_value(part["text"]))
        elif is_mapping(part.get("toolRequest")):
            request = part["toolRequest"]
            calls.append(tool_call(request.get("ref"), request.get("name"), request.get("input")))
        elif is_mapping(part.get("toolResponse")):
            answer = part["toolResponse"]
            responses.append(
                tool_response(answer.get("ref"), answer.get("output"), answer.get("name"))
            )
        elif "reasoning" in part:
            reasoning.append(text_value(part["reasoning"]))
        elif is_mapping(part.get("media")):
            kind = as_str(part["media"].get("contentType")) or ""
            texts.append("[image]" if kind.startswith("image/") else "[file]")
        elif "data" in part:
            texts.append(to_json_string(part["data"]))
    return texts, calls, responses


def _definition(tool: Any) -> dict[str, Any] | None:
    """A Genkit ToolDefinition (`{name, description, inputSchema}`) in OpenAI's shape."""
    if not is_mapping(tool) or not as_str(tool.get("name")):
        return None
    schema = tool.get("inputSchema")
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": as_str(tool.get("description")) or "",
            "parameters": schema if is_mapping(schema) else {"type": "object"},
        },
    }


def _read_response(response: Mapping[str, Any], extraction: Extraction) -> None:
    """The answer (`message`, or each of `candidates`), finish reason and usage."""
    choices: list[tuple[Any, Any]] = []
    if is_mapping(response.get("message")):
        choices.append((response["message"], response.get("finishReason")))
    for candidate in _list(response.get("candidates")):  # GenerateResponse before 1.0
        if is_mapping(candidate) and is_mapping(candidate.get("message")):
            choices.append((candidate["message"], candidate.get("finishReason")))
    for message, reason in choices:
        reasoning: list[str] = []
        texts, calls, _ = _parts(message.get("content"), reasoning)
        text = as_str(reason)
        extraction.add_choice(
            texts,
            calls,
            reasoning=reasoning,
            finish=_FINISH.get(text, finish_reason(text)) if text else None,
        )
    usage = response.get("usage")
    if is_mapping(usage):
        read = {k: as_int(usage.get(k)) for k in ("inputTokens", "outputTokens", "totalTokens")}
        if any(v is not None for v in read.values()):
            given_in, given_out = read["inputTokens"] or 0, read["outputTokens"] or 0
            total = read["totalTokens"]
            extraction.usage = TokenUsage(
                input_tokens=given_in,
                output_tokens=given_out,
                total_tokens=total if total is not None else given_in + given_out,
            )


GENKIT = Genkit()
