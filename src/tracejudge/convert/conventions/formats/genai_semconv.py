"""OTel GenAI semantic conventions: one model-call span's messages, tools, model, usage.

Read, in this order of preference:

- span attributes `gen_ai.input.messages` / `gen_ai.output.messages` /
  `gen_ai.system_instructions` / `gen_ai.tool.definitions`: JSON strings of
  `{role, parts}` messages. Written by the contrib openai-v2 instrumentation with
  content capture on, by OpenLLMetry 0.55 and later (Chat Completions and
  Responses API), and by GenAI instrumentations in other languages;
- the same keys on a `gen_ai.client.inference.operation.details` event (a span
  event, or a log record tied to the span), where values are structured;
- per-message events `gen_ai.system|user|assistant|tool.message` and
  `gen_ai.choice` (semconv 1.28 to 1.36, OpenLLMetry's events mode), whose log
  record bodies hold `{content, tool_calls, id}`; for span events, which have no
  body, the event attributes are read as the body, or the JSON text of their
  `gen_ai.event.content` attribute where they have it (Semantic Kernel .NET); a choice's
  `message` that is JSON text is the message;
- semconv 1.26 span events `gen_ai.content.prompt` / `gen_ai.content.completion`
  with JSON-string `gen_ai.prompt` / `gen_ai.completion` attributes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._common import (
    PART_TEXT,
    PART_TOOL_CALL,
    PART_TOOL_RESPONSE,
    Extraction,
    as_int,
    as_str,
    finish_reason,
    finish_reasons,
    indexed,
    load_json,
    message_inputs,
    openai_message,
    openai_message_inputs,
    openai_tool_call,
    parts_message,
    remembered_tools,
    text_value,
    tool_call,
    tool_response,
    tools,
    usage,
)
from tracejudge.convert._construct import build
from tracejudge.convert._infer_content import content_blocks
from tracejudge.convert._json import is_mapping
from tracejudge.convert._records import EventRecord, SpanRecord, describe
from tracejudge.convert._view import SpanView, view_of
from tracejudge.models import LLMInput, LLMToolCall, LLMToolDefinition, LLMToolResponse

__all__ = ["extract", "has_content", "is_text", "model_and_usage", "role_lines"]

_ROLE_EVENTS = {
    semconv.EVENT_SYSTEM_MESSAGE: "system",
    semconv.EVENT_USER_MESSAGE: "user",
    semconv.EVENT_ASSISTANT_MESSAGE: "assistant",
    semconv.EVENT_TOOL_MESSAGE: "tool",
}
_MESSAGE_EVENTS = frozenset(
    {
        *_ROLE_EVENTS,
        semconv.EVENT_CHOICE,
        semconv.EVENT_CONTENT_PROMPT,
        semconv.EVENT_CONTENT_COMPLETION,
        semconv.EVENT_INFERENCE_DETAILS,
    }
)
#: The keys of message content. Tool definitions are not: instrumentations record them
#: with content capture off (the contrib google-genai instrumentation), or beside content
#: of their own (logfire's format version 1).
_MESSAGE_KEYS = (
    semconv.GEN_AI_INPUT_MESSAGES,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    semconv.GEN_AI_SYSTEM_INSTRUCTIONS,
)
_CONTENT_KEYS = (*_MESSAGE_KEYS, semconv.GEN_AI_TOOL_DEFINITIONS)
# Event attributes that describe the event, not the message (when read as a body).
_EVENT_META_KEYS = frozenset(
    {semconv.GEN_AI_SYSTEM, semconv.GEN_AI_PROVIDER_NAME, semconv.EVENT_NAME}
)


def model_and_usage(attrs: Mapping[str, Any], extraction: Extraction) -> None:
    """Model and token usage from the `gen_ai.*` attributes (semconv, OpenLLMetry)."""
    extraction.model = as_str(attrs.get(semconv.GEN_AI_RESPONSE_MODEL)) or as_str(
        attrs.get(semconv.GEN_AI_REQUEST_MODEL)
    )
    extraction.usage = usage(
        attrs,
        (semconv.GEN_AI_USAGE_INPUT_TOKENS, semconv.GEN_AI_USAGE_PROMPT_TOKENS),
        (semconv.GEN_AI_USAGE_OUTPUT_TOKENS, semconv.GEN_AI_USAGE_COMPLETION_TOKENS),
        (semconv.GEN_AI_USAGE_TOTAL_TOKENS, semconv.LLM_USAGE_TOTAL_TOKENS),
    )
    extraction.finish_reasons = finish_reasons(
        attrs.get(semconv.GEN_AI_RESPONSE_FINISH_REASONS)
    ) or finish_reasons(attrs.get(semconv.ANTHROPIC_STOP_REASON))


def has_content(span: SpanRecord | SpanView) -> bool:
    """Whether the span carries GenAI semconv messages (attributes or events)."""
    if not span.attributes.keys().isdisjoint(_MESSAGE_KEYS):  # (no generator: asked of every span)
        return True
    return any(event.name in _MESSAGE_EVENTS for event in span.events)


def extract(span: SpanRecord | SpanView) -> Extraction:
    """Everything the span says about its model call, in wire form."""
    span = view_of(span)
    extraction = Extraction()
    merged = _merged(span)
    model_and_usage(merged, extraction)
    if _holds_messages(merged):
        _from_message_lists(merged, extraction, span)
    elif span.events:
        _from_message_events(span, extraction)
    return extraction


def _holds_messages(attrs: Mapping[str, Any]) -> bool:
    """Whether any of `_CONTENT_KEYS` has a value (a loop, not `any` over a generator)."""
    for key in _CONTENT_KEYS:
        if attrs.get(key) is not None:
            return True
    return False


def _merged(span: SpanView) -> Mapping[str, Any]:
    """The span's attributes, with those of its inference details events (and log
    records) under them: the first source that has a key gives its value."""
    if not span.events:
        return span.attributes  # (the usual case, without a list of sources)
    sources: list[Mapping[str, Any]] = [span.attributes]
    for event in span.events:
        if event.name == semconv.EVENT_INFERENCE_DETAILS:
            sources.append(event.attributes)
            if isinstance(event.body, Mapping):
                sources.append(event.body)
    if len(sources) == 1:
        return span.attributes  # no inference details event: nothing to merge
    merged: dict[str, Any] = {}
    for source in reversed(sources):
        merged.update({k: v for k, v in source.items() if v is not None})
    return merged


def _parsed(value: Any, span: SpanView, key: str, warnings: list[str]) -> Any:
    """`load_json` of an attribute value, naming the span (only made when it warns)."""
    if type(value) is str:
        try:
            return _json.loads(value)
        except (ValueError, RecursionError):
            pass  # load_json parses it again, to word the warning
    elif value is None:
        return None  # (a key not recorded: most calls' output, without naming the span)
    return load_json(value, f"{describe(span)} {key}", warnings)


def _message_list(value: Any, span: SpanView, key: str, extraction: Extraction) -> list[Any]:
    if type(value) is str and is_text(value):
        return _text_messages(value, key)
    parsed = _parsed(value, span, key, extraction.warnings)
    if parsed is None:
        return []
    if type(parsed) is list:
        return parsed
    if is_mapping(parsed):
        return [parsed]
    if isinstance(parsed, (list, tuple)):
        return list(parsed)
    extraction.warnings.append(f"{describe(span)} {key}: expected a list of messages; skipped")
    return []


def is_text(value: str) -> bool:
    """Whether a recorded message list is plain text, not JSON: some producers write the
    prompt as `role: text` lines and the answer as its text (OpenLIT's Together, Cohere,
    Mistral and other instrumentations: `format_content`)."""
    return not value.lstrip().startswith(("[", "{"))


def _text_messages(text: str, key: str) -> list[dict[str, Any]]:
    """A plain-text message list as the messages it writes: the input's `role: text`
    lines (see `role_lines`), the output's text as the assistant's answer."""
    if key == semconv.GEN_AI_OUTPUT_MESSAGES:
        found = [("assistant", text)] if text else []
    else:
        found = role_lines(text)
    return [{"role": role, "parts": [{"type": PART_TEXT, "content": part}]} for role, part in found]


#: A line that starts a message in a `role: text` prompt (roles as the providers' clients
#: name them: Cohere's `chatbot` is the assistant).
_ROLE_LINE = re.compile(
    r"(system|user|assistant|tool|developer|function|model|chatbot|human|ai): ?(.*)",
    re.IGNORECASE | re.DOTALL,
)
_ROLE_NAMES = {"chatbot": "assistant", "ai": "assistant", "human": "user"}


def role_lines(text: str) -> list[tuple[str, str]]:
    """A `role: text` prompt as (role, text) messages: a line that starts with a role
    begins a message, other lines continue the one before (a prompt that starts with no
    role is one user message)."""
    # (each message's lines joined once: appending to its text line by line was quadratic)
    messages: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        found = _ROLE_LINE.fullmatch(line)
        if found is not None:
            role = found.group(1).lower()
            messages.append((_ROLE_NAMES.get(role, role), [found.group(2)]))
        elif messages:
            messages[-1][1].append(line)
        else:
            messages.append(("user", [line]))
    return [(role, "\n".join(lines)) for role, lines in messages]


def _system_text(value: Any, what: str, extraction: Extraction) -> str:
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.startswith(("[", "{", '"')):
            return value  # a plain-text system prompt, not a JSON part list
    parsed = load_json(value, what, extraction.warnings)
    if is_mapping(parsed) and "parts" in parsed:
        parsed = parsed["parts"]
    return text_value(parsed) if parsed is not None else ""


def _from_message_lists(attrs: Mapping[str, Any], extraction: Extraction, span: SpanView) -> None:
    for key in _MESSAGE_KEYS:
        if attrs.get(key) is not None:
            extraction.has_content = True
            break
    warnings = extraction.warnings
    key = semconv.GEN_AI_INPUT_MESSAGES
    inputs = extraction.inputs
    for message in _message_list(attrs.get(key), span, key, extraction):
        # (OpenAI-shaped `tool_calls` beside the parts: the general reading below)
        items = None if type(message) is dict and "tool_calls" in message else _text_inputs(message)
        if items is None:
            parts = _usual_parts(message)
            if parts is None:
                parts = parts_message(message, describe(span), warnings)
            items = message_inputs(*_with_openai_calls(message, parts))
        inputs.extend(items)

    key = semconv.GEN_AI_SYSTEM_INSTRUCTIONS
    if attrs.get(key) is not None:
        system = _system_text(attrs[key], f"{describe(span)} {key}", extraction)
        first = extraction.inputs[0] if extraction.inputs else None
        duplicate = first is not None and first.role == "system" and first.content == system
        if system and not duplicate:
            item = build(LLMInput, {"role": "system", "type": "text", "content": system})
            extraction.inputs.insert(0, item)

    key = semconv.GEN_AI_OUTPUT_MESSAGES
    outputs = _message_list(attrs.get(key), span, key, extraction)
    one_answer = len(outputs) > 1 and _one_answer(attrs, span, len(outputs))
    # Streamed chunks written as messages (the contrib google-genai instrumentation): each
    # chunk but the last has an empty finish reason; they are one answer, concatenated.
    chunks: tuple[list[str], list[LLMToolCall]] | None = None
    last = len(outputs) - 1
    for position, message in enumerate(outputs):
        # One output message per choice (`n` > 1 gives several), or parts of one answer.
        parts = _usual_parts(message)
        if parts is not None and position < last and message.get("finish_reason") == "":
            chunks = chunks or ([], [])
            chunks[0].extend(parts[1])
            chunks[1].extend(parts[2])
            continue
        if parts is not None:
            _, texts, calls, _ = parts
            if chunks is not None:
                texts, calls = ["".join([*chunks[0], *texts])], _one_per_id([*chunks[1], *calls])
                chunks = None
            reason = finish_reason(message.get("finish_reason"))
            extraction.add_choice(texts, calls, finish=reason, same_choice=one_answer)
            continue
        apart: dict[str, list[str]] = {}
        _, texts, calls, _ = parts_message(message, describe(span), warnings, apart)
        if chunks is not None:
            texts, calls = ["".join([*chunks[0], *texts])], _one_per_id([*chunks[1], *calls])
            chunks = None
        reason = None
        if is_mapping(message):
            reason = finish_reason(message.get("finish_reason"))
        extraction.add_choice(
            texts,
            calls,
            refusal=apart.get("refusal", ()),
            reasoning=apart.get("reasoning", ()),
            finish=reason,
            same_choice=one_answer,
        )

    key = semconv.GEN_AI_TOOL_DEFINITIONS
    raw = attrs.get(key)
    if raw is not None:

        def read(warnings: list[str]) -> list[LLMToolDefinition] | None:
            what = describe(span)
            return tools(load_json(raw, f"{what} {key}", warnings), warnings, what)

        remembered = ("semconv", raw) if type(raw) is str else None
        extraction.tools = remembered_tools(remembered, read, extraction.warnings, span.memo)


def _one_per_id(calls: list[LLMToolCall]) -> list[LLMToolCall]:
    """The tool calls of an answer's streamed chunks, one per call id: a call is repeated
    in each chunk that carries part of it (Google ADK over LiteLLM writes the call in every
    chunk, its arguments null until the last), so the chunks of one id are one call, with
    the last arguments recorded (`{}`: none). Calls without an id are kept as they are."""
    if len(calls) < 2:
        return calls
    kept: dict[str, int] = {}  # call id -> its position in `found`
    found: list[LLMToolCall] = []
    for call in calls:
        position = kept.get(call.id) if call.id else None
        if position is None:
            if call.id:
                kept[call.id] = len(found)
            found.append(call)
        elif call.parameters != "{}":
            found[position] = call
    return found


def _one_answer(attrs: Mapping[str, Any], span: SpanView, messages: int) -> bool:
    """Whether several output messages are parts of one answer rather than `n` > 1 choices.

    The conventions write one output message per choice, but producers also write each
    output item of a Responses API answer (OpenLLMetry's openai_agents, `_hooks.py`: a
    message per function call, so parallel calls look like choices) or each streamed chunk
    as a message of its own. A call with several choices says so: the request's
    `gen_ai.request.choice.count` (written when `n` != 1), and one finish reason per choice
    in `gen_ai.response.finish_reasons` (each choice ends with its own: OpenLLMetry's and
    the contrib openai-v2 Chat Completions spans; a Responses answer's reasons are per
    kind of item, deduplicated). The Responses API has no `n`: its messages are one answer.
    """
    count = as_int(attrs.get(semconv.GEN_AI_REQUEST_CHOICE_COUNT))
    if count is not None:
        return count <= 1
    if span.name == semconv.OPENLLMETRY_RESPONSES_SPAN:
        return True
    if attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OPERATION_RESPONSES:
        return True
    reasons = attrs.get(semconv.GEN_AI_RESPONSE_FINISH_REASONS)
    if isinstance(reasons, str):
        reasons = (reasons,)
    return not isinstance(reasons, (list, tuple)) or len(reasons) != messages


def _text_inputs(message: Any) -> list[LLMInput] | None:
    """What `message_inputs` makes of `_usual_parts` of a message of one text part and a
    role other than `tool` (most messages of a conversation), without their lists; None
    for any other message."""
    if type(message) is not dict:
        return None
    parts = message.get("parts")
    if type(parts) is not list or len(parts) != 1:
        return None
    part = parts[0]
    if type(part) is not dict or part.get("type") != PART_TEXT:
        return None
    content = part.get("content", part.get("text"))
    if type(content) is not str:
        return None
    role = (as_str(message.get("role")) or "user").lower()
    if role == "tool":
        return None
    if not content and role == "assistant":
        return []  # (an empty answer is no item)
    return [build(LLMInput, {"role": role, "type": "text", "content": content})]


def _with_openai_calls(
    message: Any, parts: tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]
) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]:
    """A message's parts with the OpenAI-shaped `tool_calls` it keeps beside them, where its
    parts hold no tool call (LiteLLM writes an assistant message's calls so: `{"role":
    "assistant", "parts": [{"type": "text", "content": ""}], "tool_calls": [...]}`)."""
    role, texts, calls, responses = parts
    if calls or type(message) is not dict or type(message.get("tool_calls")) is not list:
        return parts
    _, _, found, _ = openai_message({"role": role, "tool_calls": message["tool_calls"]})
    return role, texts, found, responses


def _usual_parts(
    message: Any,
) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]] | None:
    """What `parts_message` gives for a message of the usual shape: a dict whose parts
    are text (string content), tool call and tool result (not a block list) dicts, of a
    role other than `tool` or with a tool result in it. None for any other message, for
    the generic reading. (Measured: 5% of the instructions of a semconv span with messages.)
    """
    if type(message) is not dict:
        return None
    parts = message.get("parts")
    if type(parts) is not list:
        return None
    texts: list[str] = []
    calls: list[LLMToolCall] = []
    responses: list[LLMToolResponse] = []
    for part in parts:
        if type(part) is not dict:
            return None
        kind = part.get("type")
        if kind == PART_TEXT:
            content = part.get("content", part.get("text"))
            if type(content) is not str:
                return None
            texts.append(content)
        elif kind == PART_TOOL_CALL:
            calls.append(tool_call(part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == PART_TOOL_RESPONSE:
            result = part["response"] if "response" in part else part.get("result")
            if type(result) is list:
                return None  # perhaps Anthropic text blocks
            responses.append(tool_response(part.get("id"), result, part.get("name")))
        else:
            return None
    role = (as_str(message.get("role")) or "user").lower()
    if role == "tool" and not responses and texts:
        return None
    return role, texts, calls, responses


def _body(event: EventRecord, what: str, extraction: Extraction) -> Any:
    if event.body is not None:
        body = event.body
    elif semconv.GEN_AI_EVENT_CONTENT in event.attributes:
        body = event.attributes[semconv.GEN_AI_EVENT_CONTENT]  # Semantic Kernel (.NET)
    else:
        body = {k: v for k, v in event.attributes.items() if k not in _EVENT_META_KEYS}
    if isinstance(body, str) and body.lstrip().startswith(("{", "[")):
        body = load_json(body, what, extraction.warnings)
    return body


def _from_message_events(span: SpanView, extraction: Extraction) -> None:
    what = describe(span)
    events = span.events
    choices: list[tuple[int, int, list[Any]]] = []
    for position, event in enumerate(events):
        if event.name in _ROLE_EVENTS:
            extraction.has_content = True
            body = _body(event, f"{what} event {event.name}", extraction)
            message = dict(body) if is_mapping(body) else {"content": body}
            if not message.get("role"):
                message["role"] = _ROLE_EVENTS[event.name]
            role = str(message["role"])
            blocks = content_blocks(role, message.get("content"))
            if blocks is not None:  # (Strands: Bedrock content blocks as JSON text)
                extraction.inputs.extend(message_inputs(role, *blocks))
                continue
            extraction.inputs.extend(openai_message_inputs(message))
        elif event.name == semconv.EVENT_CHOICE:
            extraction.has_content = True
            body = _body(event, f"{what} event {event.name}", extraction)
            if not is_mapping(body):
                body = {"message": {"content": body}}
            index = as_int(body.get("index"))
            choices.append((index if index is not None else position, position, [body]))
        elif event.name == semconv.EVENT_CONTENT_PROMPT:
            extraction.has_content = True
            prompt = event.attributes.get(semconv.GEN_AI_PROMPT)
            for message in _message_list(prompt, span, f"event {event.name}", extraction):
                extraction.inputs.extend(openai_message_inputs(message))
        elif event.name == semconv.EVENT_CONTENT_COMPLETION:
            extraction.has_content = True
            completion = event.attributes.get(semconv.GEN_AI_COMPLETION)
            items = _message_list(completion, span, f"event {event.name}", extraction)
            choices.append((position, position, items))
    for _, _, items in sorted(choices, key=lambda c: (c[0], c[1])):
        for item in items:
            _add_choice(item, extraction)


def _add_choice(choice: Any, extraction: Extraction) -> None:
    if not is_mapping(choice):
        choice = {"message": {"content": choice}}
    message = choice.get("message")
    blocks = content_blocks("assistant", message)
    if blocks is not None:  # (Strands: Bedrock content blocks as JSON text)
        reason = finish_reason(choice.get("finish_reason"))
        extraction.add_choice(blocks[0], blocks[1], finish=reason)
        return
    if isinstance(message, str) and message.lstrip().startswith("{"):
        # A span event cannot hold a map: Semantic Kernel (.NET) writes the message as
        # JSON text in the `message` attribute of its `gen_ai.choice` events.
        message = load_json(message, "gen_ai.choice message", extraction.warnings)
    message = message if isinstance(message, Mapping) else choice
    _, texts, calls, _ = openai_message(dict(message, role="assistant"))
    if message is not choice:
        # OpenLLMetry's events mode puts the tool calls next to the message, not in it.
        for raw in indexed(choice.get("tool_calls")):
            call = openai_tool_call(raw)
            if call is not None:
                calls.append(call)
    refusal = as_str(message.get("refusal"))
    reason = finish_reason(choice.get("finish_reason"))
    extraction.add_choice(texts, calls, refusal=[refusal] if refusal else (), finish=reason)
