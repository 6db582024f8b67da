"""logfire (pydantic/logfire): the spans of its LLM instrumentations, by message template.

Every logfire span carries `logfire.msg_template` (also its span name), and the template
says what the span is: logfire's integrations pick one per kind of span, and have kept
them across releases (`logfire/_internal/integrations/openai_agents.py`,
`llm_providers/openai.py`, `llm_providers/anthropic.py`).

- `logfire.instrument_openai()` / `instrument_anthropic()`: one span per request
  (`Chat Completion with {request_data[model]!r}`, `Responses API with ...`,
  `Message with ...`). Format version 2 (logfire 4.x and later, the default) writes the
  GenAI messages (`gen_ai.input.messages` ...), read by `genai_semconv`; version 1 (every
  release before, and `version=1`) writes the request as one JSON `request_data`, the
  answer as `response_data` (`{"message": {...}, "usage": {...}}`, OpenAI-shaped even for
  Anthropic, whose tool arguments are then wrapped as `{"input": {...}}`), and the
  Responses API's messages as one JSON `events` list (inputs, then the answer).
- Streaming: the request span ends when the stream is returned; the output, usage and
  finish reason come in a separate log span written when the stream is consumed
  (`streaming response from {request_data[model]!r} took {duration:.2f}s`), a sibling
  of the request span. It is read as the response of the request before it
  (`Extraction.response_apart`), and the walk joins the two into one call.
- `logfire.instrument_openai_agents()`: `OpenAI Agents trace: {name}` (the run: a
  workflow), `Agent run: {name!r}` (agents), `Handoff: {from_agent} → {to_agent}`,
  `Function: {name}` (tool runs, no call id), `Responses API ...` (messages in `events`,
  the response JSON in `response`) and, in Chat Completions mode,
  `Chat completion with {gen_ai.request.model!r}` (messages in `input` / `output`; no
  `gen_ai.operation.name`, no tools: those are the names its `Agent run` span lists).

logfire records message content always: no setting turns it off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _handoffs, _tools
from tracejudge.convert._common import (
    Extraction,
    as_int,
    as_str,
    finish_reason,
    load_json,
    message_inputs,
    openai_message,
    text_value,
    tool_call,
    tool_response,
    tools,
)
from tracejudge.convert._json import is_mapping
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import UNNAMED_AGENT, Convention, Identity, Kind
from tracejudge.convert.conventions.formats import genai_semconv
from tracejudge.convert.conventions.formats.genai_semconv import model_and_usage
from tracejudge.convert.conventions.genai import LLM_OPERATIONS
from tracejudge.models import LLMToolCall, LLMToolDefinition, LLMToolResponse

__all__ = ["LOGFIRE", "Logfire"]

# The message templates (logfire 0.x to 5.x).
AGENTS_TRACE = "OpenAI Agents trace: {name}"
AGENT_RUN = "Agent run: {name!r}"
HANDOFF = "Handoff: {from_agent} → {to_agent}"
FUNCTION = "Function: {name}"
AGENTS_CHAT = "Chat completion with {gen_ai.request.model!r}"
RESPONSES = "Responses API"
RESPONSES_WITH_MODEL = "Responses API with {gen_ai.request.model!r}"
CHAT_COMPLETION = "Chat Completion with {request_data[model]!r}"
COMPLETION = "Completion with {request_data[model]!r}"
ANTHROPIC_MESSAGE = "Message with {request_data[model]!r}"
STREAMING_RESPONSE = "streaming response from {request_data[model]!r} took {duration:.2f}s"
#: Templates of newer Agents SDK span types, the low-cardinality values inlined.
_STEP_PREFIXES = ("Task: ", "Turn ", "Guardrail ", "Custom span: ", "MCP: ", "OpenAI agents: ")
_UNKNOWN_EVENT = "gen_ai.unknown"  # an input or output item logfire has no message form for

_KINDS = {
    AGENTS_TRACE: Kind.WORKFLOW,
    AGENT_RUN: Kind.AGENT,
    HANDOFF: Kind.HANDOFF,
    FUNCTION: Kind.TOOL_RUN,
    AGENTS_CHAT: Kind.MODEL_CALL,
    RESPONSES: Kind.MODEL_CALL,
    RESPONSES_WITH_MODEL: Kind.MODEL_CALL,
    CHAT_COMPLETION: Kind.MODEL_CALL,
    COMPLETION: Kind.MODEL_CALL,
    ANTHROPIC_MESSAGE: Kind.MODEL_CALL,
    STREAMING_RESPONSE: Kind.MODEL_CALL,
    "Embedding Creation with {request_data[model]!r}": Kind.STEP,
    "Image Generation with {request_data[model]!r}": Kind.STEP,
}


class Logfire(Convention):
    name = "logfire"
    # pydantic-ai's agent run span records the run's result.
    answer_keys = ((semconv.PYDANTIC_AI_FINAL_RESULT, "text"),)
    marker_keys = frozenset({semconv.LOGFIRE_MSG_TEMPLATE, semconv.LOGFIRE_EVENTS})

    def kind(self, span: SpanView) -> str | None:
        attrs = span.attributes
        template = attrs.get(semconv.LOGFIRE_MSG_TEMPLATE)
        if template is None:
            # pydantic-ai's model calls under logfire (its `event_mode="attributes"`):
            # GenAI spans whose messages are logfire's one JSON `events` list.
            if attrs.get(semconv.LOGFIRE_EVENTS) is None:
                return None
            operation = as_str(attrs.get(semconv.GEN_AI_OPERATION_NAME))
            if operation in LLM_OPERATIONS and not genai_semconv.has_content(span):
                return Kind.MODEL_CALL
            return None
        if type(template) is not str:
            template = as_str(template) or ""
        found = _KINDS.get(template)
        if found is None:
            return Kind.STEP if template.startswith(_STEP_PREFIXES) else None
        if span.attributes.get(semconv.LOGFIRE_SPAN_TYPE) == semconv.LOGFIRE_PENDING_SPAN:
            return Kind.STEP  # the running copy of a span whose ended copy is read
        return found

    def agent(self, span: SpanView) -> Identity:
        name = as_str(span.attributes.get(semconv.LOGFIRE_AGENT_NAME))
        return None, name or ("workflow" if _template(span) == AGENTS_TRACE else UNNAMED_AGENT)

    def agent_tools(self, span: SpanView, warnings: list[str]) -> list[LLMToolDefinition] | None:
        """The names of an `Agent run` span's tools: what its calls offered the model where
        they record no tools of their own (the Agents SDK's Chat Completions spans), when
        the agent may hand off to none (a hand-off's tool name is not recorded)."""
        attrs = span.attributes
        if _template(span) != AGENT_RUN or attrs.get(semconv.LOGFIRE_AGENT_TOOLS) is None:
            return None
        what = _what(span)
        handoffs = load_json(attrs.get(semconv.LOGFIRE_AGENT_HANDOFFS), what, warnings)
        if handoffs:
            return None
        names = load_json(attrs[semconv.LOGFIRE_AGENT_TOOLS], what, warnings)
        names = names if isinstance(names, list) else []
        return tools([{"name": name} for name in names if isinstance(name, str)], warnings, what)

    def model_call(self, span: SpanView) -> Extraction:
        attrs = span.attributes
        template = _template(span)
        if template == AGENTS_CHAT:
            extraction = _agents_generation(span)
        elif genai_semconv.has_content(span):  # format version 2
            extraction = genai_semconv.extract(span)
        else:
            extraction = _version_1(span, template)
        if extraction.tools is None and attrs.get(semconv.LOGFIRE_RESPONSE) is not None:
            response = load_json(attrs[semconv.LOGFIRE_RESPONSE], _what(span), [])
            if is_mapping(response):
                extraction.tools = tools(response.get("tools"), extraction.warnings, _what(span))
        extraction.response_apart = template == STREAMING_RESPONSE
        return extraction

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        attrs = span.attributes
        return _tools.run(
            attrs.get(semconv.LOGFIRE_AGENT_NAME), None, attrs.get(semconv.LOGFIRE_OUTPUT)
        )

    def handoff(self, span: SpanView) -> _handoffs.Handoff | None:
        attrs = span.attributes
        return _handoffs.Handoff(
            from_agent=_handoffs.known(as_str(attrs.get(semconv.LOGFIRE_FROM_AGENT))),
            to_agent=_handoffs.known(as_str(attrs.get(semconv.LOGFIRE_TO_AGENT))),
            start_ns=span.record.start_ns,
        )


def _template(span: SpanView) -> str:
    return as_str(span.attributes.get(semconv.LOGFIRE_MSG_TEMPLATE)) or ""


def _what(span: SpanView) -> str:
    return f"span {span.name!r} ({span.span_id})"


# --------------------------------------------------------------------------- readers


def _agents_generation(span: SpanView) -> Extraction:
    """The Agents SDK's Chat Completions span: OpenAI messages in `input` and `output`."""
    attrs, what = span.attributes, _what(span)
    extraction = Extraction(has_content=True)
    model_and_usage(attrs, extraction)
    warnings = extraction.warnings
    for message in _list(load_json(attrs.get(semconv.LOGFIRE_INPUT), what, warnings)):
        extraction.inputs.extend(message_inputs(*openai_message(message)))
    for message in _list(load_json(attrs.get(semconv.LOGFIRE_OUTPUT), what, warnings)):
        _, texts, calls, _ = openai_message(message)
        extraction.add_choice(texts, calls, same_choice=True)
    return extraction


def _version_1(span: SpanView, template: str) -> Extraction:
    """Format version 1: `request_data`, `response_data` and the Responses API's `events`."""
    attrs, what = span.attributes, _what(span)
    extraction = Extraction()
    model_and_usage(attrs, extraction)
    warnings = extraction.warnings
    request = load_json(attrs.get(semconv.LOGFIRE_REQUEST_DATA), what, warnings)
    request = request if is_mapping(request) else {}
    anthropic = template == ANTHROPIC_MESSAGE or (
        template == STREAMING_RESPONSE
        and as_str(attrs.get(semconv.GEN_AI_SYSTEM)) == semconv.LOGFIRE_ANTHROPIC
    )
    messages = request.get("messages")
    if isinstance(messages, list):
        extraction.has_content = True
        if anthropic and request.get("system"):
            system = text_value(request["system"])
            extraction.inputs.extend(message_inputs("system", [system], [], []))
        for message in messages:
            read = _anthropic_message(message) if anthropic else openai_message(message)
            extraction.inputs.extend(message_inputs(*read))
    extraction.tools = tools(
        request.get("tools")
        or load_json(attrs.get(semconv.GEN_AI_TOOL_DEFINITIONS), what, warnings),
        warnings,
        what,
    )
    response = load_json(attrs.get(semconv.LOGFIRE_RESPONSE_DATA), what, warnings)
    if is_mapping(response):
        extraction.has_content = True
        _response_data(response, anthropic, extraction)
    events = attrs.get(semconv.LOGFIRE_EVENTS)
    if events is not None:
        extraction.has_content = True
        _events(_list(load_json(events, what, warnings)), extraction)
    return extraction


def _response_data(response: Mapping[str, Any], anthropic: bool, extraction: Extraction) -> None:
    """`{"message": {...}, "usage": ...}` (chat, and Anthropic in OpenAI's shape),
    `{"combined_chunk_content": "..."}` (a stream whose message was not kept) or
    `{"text": "...", "finish_reason": ...}` (legacy completions)."""
    message = response.get("message")
    if is_mapping(message):
        _, texts, calls, _ = openai_message(message)
        if anthropic:  # `block.model_dump_json(include={'input'})`: the input, wrapped
            calls = [_unwrapped_input(call) for call in calls]
        extraction.add_choice(texts, calls)
    elif "combined_chunk_content" in response:
        extraction.add_choice([text_value(response.get("combined_chunk_content"))], [])
    elif "text" in response:
        extraction.add_choice([text_value(response.get("text"))], [])


def _unwrapped_input(call: LLMToolCall) -> LLMToolCall:
    arguments = load_json(call.parameters, "", [])
    if is_mapping(arguments) and set(arguments) == {"input"}:
        return tool_call(call.id, call.name, arguments["input"])
    return call


def _events(events: list[Any], extraction: Extraction) -> None:
    """Messages as logfire's event dicts (`{"event.name": "gen_ai.user.message", "role",
    "content", "tool_calls"}`; tool results with `id`): the request's messages, then the
    answer's: `gen_ai.choice` events (`{"index", "message"}`: the Agents SDK integration
    before logfire 3.x, pydantic-ai) where there are any, else the assistant messages
    after the last message of any other role (logfire's Responses API spans)."""
    known = [e for e in events if is_mapping(e) and e.get(semconv.EVENT_NAME) != _UNKNOWN_EVENT]
    choices = [e for e in known if e.get(semconv.EVENT_NAME) == semconv.EVENT_CHOICE]
    if choices:
        for event in known:
            if event.get(semconv.EVENT_NAME) != semconv.EVENT_CHOICE:
                extraction.inputs.extend(message_inputs(*openai_message(event)))
        for event in sorted(choices, key=lambda e: as_int(e.get("index")) or 0):
            message = event.get("message")
            _, texts, calls, _ = openai_message(message if is_mapping(message) else event)
            extraction.add_choice(texts, calls, finish=finish_reason(event.get("finish_reason")))
        return
    answer_from = len(known)
    while answer_from and as_str(known[answer_from - 1].get("role")) == "assistant":
        answer_from -= 1
    for event in known[:answer_from]:
        extraction.inputs.extend(message_inputs(*openai_message(event)))
    for event in known[answer_from:]:
        _, texts, calls, _ = openai_message(event)
        extraction.add_choice(texts, calls, same_choice=True)


def _anthropic_message(
    message: Any,
) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]:
    """An Anthropic Messages API message -> (role, texts, tool calls, tool results)."""
    if not is_mapping(message):
        return "user", [text_value(message)], [], []
    role = (as_str(message.get("role")) or "user").lower()
    content = message.get("content")
    if not isinstance(content, list):
        return role, [text_value(content)], [], []
    texts: list[str] = []
    calls: list[LLMToolCall] = []
    results: list[LLMToolResponse] = []
    for block in content:
        kind = as_str(block.get("type")) if is_mapping(block) else None
        if kind == "tool_use":
            calls.append(tool_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":
            results.append(
                tool_response(block.get("tool_use_id"), text_value(block.get("content")))
            )
        elif kind in ("thinking", "redacted_thinking"):
            continue
        else:
            texts.append(text_value(block.get("text") if is_mapping(block) else block))
    return role, texts, calls, results


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


LOGFIRE = Logfire()
