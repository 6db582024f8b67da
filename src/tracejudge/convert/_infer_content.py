"""A model call's content read without a row: its messages, answer and tool calls found by
their shape, whatever keys the producer keeps them under.

A producer no row of the conventions table names still records what its model calls said,
under keys of its own (`ai.prompt.messages`, `genkit:output`, `all_messages_events`). This
phase is asked only of a call whose row read no content at all: it looks at the span's
attribute values (below a size cap, each parsed once) for a JSON array of chat messages
(OpenAI, Anthropic, Gemini and GenAI part shapes), an object holding `messages` or
`contents`, an answer (`message`, `choices`, `candidates`, `content`, `text`), tool calls
(OpenAI, Anthropic, Gemini, Genkit, AI SDK shapes), and for loose text a key whose last
segment names the prompt or the answer. Structured JSON is preferred to loose text; the
first value found for each side is kept; what a row read is never touched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tracejudge.convert import _json
from tracejudge.convert._common import (
    Extraction,
    message_inputs,
    text_value,
    tool_call,
    tool_response,
)
from tracejudge.convert._python_literals import python_literal
from tracejudge.convert._view import SpanView
from tracejudge.models import LLMInput, LLMToolCall, LLMToolResponse

__all__ = ["content_blocks", "infer_content", "read_shape"]

#: Values longer than this are not looked at (a cap on the work for huge payloads).
SIZE_CAP = 200_000
_SEGMENTS = re.compile(r"[.:/]")
_INPUT_WORDS = ("message", "prompt", "input", "request", "contents")
_OUTPUT_WORDS = ("output", "response", "completion", "answer", "result", "text", "choices")
_CALL_WORDS = ("toolcalls", "tool_calls")
#: Keys of the whole conversation, the answer last (logfire's `events`, `all_messages_events`).
_CONVERSATION_WORDS = ("events", "conversation", "history", "all_messages")
_ANSWER_ROLES = frozenset({"assistant", "model", "ai"})


def infer_content(view: SpanView, extraction: Extraction, *, events: bool = False) -> None:
    """Fill a call's inputs and answer from values shaped like them, when the call's
    row read none (`extraction.has_content` False); else leave it as it is.

    With `events` (a span no row reads at all), the span's events are read too when its
    attributes hold nothing: a row that reads events and found no content there (Strands'
    redacted ones) said so, and its warning stands."""
    if extraction.has_content or extraction.inputs or extraction.outputs:
        return
    inputs, answer = _scan(view.attributes.items())
    if events and inputs is None and answer is None and view.events:
        inputs, answer = _conversation(_event_messages(view))
    if inputs:
        extraction.inputs = inputs
    if answer is not None and (answer[0] or answer[1]):
        extraction.add_choice(answer[0], answer[1])
    if extraction.inputs or extraction.outputs:
        extraction.has_content = True


_Answer = tuple[list[str], list[LLMToolCall]]


def read_shape(attributes: Mapping[str, Any]) -> tuple[list[LLMInput] | None, _Answer | None]:
    """(inputs, answer: texts and tool calls) that the attribute values hold by their
    shapes, each None when none is found (what `infer_content` fills a call with)."""
    return _scan(attributes.items())


def _scan(pairs: Iterable[tuple[str, Any]]) -> tuple[list[LLMInput] | None, _Answer | None]:
    """(inputs, answer) from the values of these keys, by their shapes and key names."""
    inputs: list[LLMInput] | None = None
    answer: _Answer | None = None
    loose_input: str | None = None
    loose_answer: str | None = None
    calls: list[LLMToolCall] | None = None
    for key, raw in pairs:
        if not isinstance(raw, str) or not raw or len(raw) > SIZE_CAP:
            continue
        sides = _KEY_SIDES.get(key)
        if sides is None:
            sides = _key_sides(key)
        if not any(sides):
            continue
        is_whole, is_input, is_output, is_calls = sides
        value = _parsed(raw)
        if is_whole:
            if answer is None and isinstance(value, list):
                # (the conversation's answer, where no key held one; its inputs where
                # none did: a request may be recorded apart, its answer only here)
                found_inputs, answer = _conversation(value)
                inputs = inputs if inputs is not None else found_inputs
            continue
        if value is None:  # loose text
            if is_input and loose_input is None:
                loose_input = raw
            elif is_output and loose_answer is None:
                loose_answer = raw
            continue
        if is_calls:
            if calls is None and isinstance(value, list):
                calls = [c for c in map(_call, value) if c is not None] or None
            continue
        if is_input and inputs is None:
            inputs = _messages_in(value)
        elif is_output and answer is None:
            answer = _answer_in(value)
            if answer is None and isinstance(value, str) and value:
                loose_answer = loose_answer or value
    if inputs is None and loose_input is not None:
        inputs = message_inputs("user", [loose_input], [], [])
    if answer is None and (loose_answer is not None or calls):
        answer = ([loose_answer] if loose_answer else [], calls or [])
    elif answer is not None and calls and not answer[1]:
        answer = (answer[0], calls)
    return inputs, answer


#: What each attribute key seen names (keys repeat on every span of a producer).
_KEY_SIDES: dict[str, tuple[bool, bool, bool, bool]] = {}
_KEY_SIDES_CAP = 4096


def _key_sides(key: str) -> tuple[bool, bool, bool, bool]:
    """(a whole conversation, input, output, tool calls): what the key's last segment
    names, remembered. An id (`response_id`) names none: it is no prompt or answer."""
    segment = _SEGMENTS.split(key)[-1]
    last = segment.lower()
    if last == "id" or last.endswith(("_id", "-id")) or segment.endswith("Id"):
        sides = _KEY_SIDES[key] = (False, False, False, False)
        return sides
    is_whole = any(word in last for word in _CONVERSATION_WORDS)
    is_output = not is_whole and any(word in last for word in _OUTPUT_WORDS)
    is_input = not is_whole and not is_output and any(w in last for w in _INPUT_WORDS)
    is_calls = any(word in last for word in _CALL_WORDS)
    if len(_KEY_SIDES) >= _KEY_SIDES_CAP:
        _KEY_SIDES.clear()
    sides = _KEY_SIDES[key] = (is_whole, is_input, is_output, is_calls)
    return sides


def _event_messages(view: SpanView) -> list[Any]:
    """The span's events read as chat messages: an event that names its role (in an
    attribute, or as `<ns>.<role>.message`; a `choice` is the assistant's) with its
    content (`content`, `message`, or its body)."""
    messages: list[Any] = []
    for event in view.events:
        attrs = event.attributes
        body = event.body if isinstance(event.body, Mapping) else {}
        segments = _SEGMENTS.split(event.name.lower())
        role = attrs.get("role") or body.get("role")
        if role is None and len(segments) >= 2 and segments[-1] == "message":
            role = segments[-2]
        elif role is None and segments[-1] == "choice":
            role = "assistant"
        if not isinstance(role, str):
            continue
        content = next(
            (found[k] for found in (attrs, body) for k in ("content", "message") if k in found),
            None,
        )
        if isinstance(content, str) and len(content) <= SIZE_CAP:
            parsed = _parsed(content)
            content = content if parsed is None or isinstance(parsed, str) else parsed
        if isinstance(content, Mapping) and "role" in content:
            messages.append(content)
            continue
        message: dict[str, Any] = {"role": role, "content": content}
        for key in ("tool_calls", "id", "tool_call_id", "name"):
            if key in body or key in attrs:
                message[key] = body.get(key, attrs.get(key))
        messages.append(message)
    return messages


def content_blocks(
    role: str, content: Any
) -> tuple[list[str], list[LLMToolCall], list[LLMToolResponse]] | None:
    """A message content recorded as the JSON text of a list of content blocks (Strands'
    Bedrock blocks in GenAI events) read as (texts, tool calls, tool results); None when
    the content is no such text."""
    if not isinstance(content, str) or content[:1] != "[" or len(content) > SIZE_CAP:
        return None
    blocks = _parsed(content)
    if not isinstance(blocks, list) or not blocks:
        return None
    if not all(isinstance(b, Mapping) for b in blocks):
        return None
    _, texts, calls, responses = _message({"role": role, "content": blocks})
    return texts, calls, responses


def _parsed(raw: str) -> Any:
    """The value's JSON when it is a JSON array, object or string, or the dict or list it
    writes as a Python literal (`_python_literals`); else None."""
    if raw[:1] not in ("[", "{", '"'):
        return None
    try:
        return _json.loads(raw)
    except (json.JSONDecodeError, ValueError, RecursionError):
        return python_literal(raw)


def _messages_in(value: Any) -> list[LLMInput] | None:
    """Chat messages: an array of them, or an object holding one (`messages`, `contents`),
    or the AI SDK's `{system, prompt}`."""
    if isinstance(value, Mapping):
        for key in ("messages", "contents"):
            found = value.get(key)
            if isinstance(found, list):
                messages = _messages_in(found)
                system = _system_instruction(value)
                if messages is not None and system and messages[0].role != "system":
                    return message_inputs("system", [system], [], []) + messages
                return messages
        system, prompt = value.get("system"), value.get("prompt")
        if isinstance(prompt, str):
            head = message_inputs("system", [system], [], []) if isinstance(system, str) else []
            return head + message_inputs("user", [prompt], [], [])
        return None
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(m, Mapping) and "role" in m for m in value):
        return None
    items: list[LLMInput] = []
    for message in value:
        role, texts, calls, responses = _message(message)
        items.extend(message_inputs(role, texts, calls, responses))
    return items


def _system_instruction(request: Mapping[str, Any]) -> str | None:
    """The system prompt a request object keeps beside its messages (Gemini's
    `system_instruction`, in its `config` or not; Anthropic's `system`)."""
    config = request.get("config")
    for holder in (request, config if isinstance(config, Mapping) else {}):
        for key in ("system_instruction", "systemInstruction", "system"):
            found = holder.get(key)
            if isinstance(found, str):
                return found
            if isinstance(found, Mapping):
                return "\n".join(_message(found)[1]) or None
    return None


def _conversation(
    value: list[Any],
) -> tuple[list[LLMInput] | None, tuple[list[str], list[LLMToolCall]] | None]:
    """A whole conversation's (inputs, answer): its trailing assistant message is the
    answer, the messages before it the inputs; (None, None) when it is no conversation."""
    if not value or not all(isinstance(m, Mapping) and "role" in m for m in value):
        return None, None
    if str(value[-1].get("role")).lower() not in _ANSWER_ROLES:
        return _messages_in(value), None
    _, texts, calls, _ = _message(value[-1])
    return _messages_in(value[:-1]) or None, (texts, calls)


def _answer_in(value: Any) -> tuple[list[str], list[LLMToolCall]] | None:
    """(texts, tool calls) of an answer in any of the common shapes, or None."""
    if isinstance(value, list):
        if value and all(isinstance(m, Mapping) and "role" in m for m in value):
            answers = [m for m in value if str(m.get("role")).lower() in _ANSWER_ROLES]
            if answers:
                _, texts, calls, _ = _message(answers[-1])
                return texts, calls
            return None
        if value and isinstance(value[0], Mapping) and isinstance(value[0].get("message"), Mapping):
            # (a response's `choices` recorded alone: the first choice's message)
            _, texts, calls, _ = _message(value[0]["message"])
            return texts, calls
        return None
    if not isinstance(value, Mapping):
        return None
    for key in ("message", "output", "content"):  # (Genkit, ADK: one message)
        found = value.get(key)
        if isinstance(found, Mapping) and not {"content", "parts", "tool_calls"}.isdisjoint(found):
            _, texts, calls, _ = _message(found)
            return texts, calls
    choices = value.get("choices") or value.get("candidates")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        first = choices[0]
        message = first.get("message") or first.get("content")
        if isinstance(message, Mapping):
            _, texts, calls, _ = _message(message)
            return texts, calls
        if isinstance(first.get("text"), str):
            return [first["text"]], []
    if "content" in value and ("role" in value or "type" in value):
        _, texts, calls, _ = _message(value)
        return texts, calls
    if isinstance(value.get("text"), str):
        return [value["text"]], []
    return None


def _message(
    message: Mapping[str, Any],
) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]:
    """One message in any of the shapes: (role, texts, tool calls, tool results)."""
    role = str(message.get("role") or "user").lower()
    texts: list[str] = []
    calls: list[LLMToolCall] = []
    responses: list[LLMToolResponse] = []
    content = message.get("content", message.get("parts", message.get("text")))
    parts = content if isinstance(content, list) else [content] if content is not None else []
    for part in parts:
        _part(part, texts, calls, responses)
    for raw in message.get("tool_calls") or ():
        found = _call(raw)
        if found is not None:
            calls.append(found)
    if role in ("tool", "function") and not responses:
        call_id = message.get("tool_call_id") or message.get("id")
        responses.append(tool_response(call_id, "\n".join(texts), message.get("name")))
        texts = []
    return role, texts, calls, responses


def _part(
    part: Any, texts: list[str], calls: list[LLMToolCall], responses: list[LLMToolResponse]
) -> None:
    if isinstance(part, str):
        texts.append(part)
        return
    if not isinstance(part, Mapping):
        return
    kind = str(part.get("type") or "").replace("-", "_")
    if kind in ("tool_result", "tool_response", "function_call_output") or (
        not {"toolResponse", "functionResponse", "function_response", "toolResult"}.isdisjoint(part)
    ):
        inner = (
            part.get("toolResponse")
            or part.get("functionResponse")
            or part.get("function_response")
            or part.get("toolResult")
            or part
        )
        call_id = inner.get("ref") or inner.get("toolCallId") or inner.get("tool_use_id")
        call_id = call_id or inner.get("toolUseId")
        call_id = call_id or inner.get("call_id") or inner.get("id")
        result = next(
            (inner[k] for k in ("output", "response", "result", "content") if k in inner), ""
        )
        if isinstance(result, Mapping) and set(result) <= {"type", "value"}:
            result = result.get("value", "")  # the AI SDK's `{type: "text", value}`
        elif isinstance(result, list) and all(
            isinstance(b, Mapping) and "text" in b for b in result
        ):
            result = "".join(str(b["text"]) for b in result)  # text blocks: their text
        responses.append(tool_response(call_id, result, inner.get("name") or inner.get("toolName")))
        return
    found = _call(part)
    if found is not None:
        calls.append(found)
        return
    if kind in ("reasoning", "thinking"):
        return
    text = part.get("text", part.get("content"))
    if text is not None:
        texts.append(text_value(text))


def _call(raw: Any) -> LLMToolCall | None:
    """A tool call in the OpenAI, Anthropic, Gemini, Genkit, AI SDK or GenAI shapes."""
    if not isinstance(raw, Mapping):
        return None
    inner = (
        raw.get("toolRequest")  # Genkit
        or raw.get("functionCall")  # Gemini
        or raw.get("function_call")
        or raw.get("toolUse")  # Bedrock (Strands)
    )
    if isinstance(inner, Mapping):
        arguments = inner.get("input", inner.get("args", inner.get("arguments")))
        call_id = inner.get("ref") or inner.get("toolUseId") or inner.get("id")
        return tool_call(call_id, inner.get("name"), arguments)
    kind = str(raw.get("type") or "").replace("-", "_")
    if kind in ("tool_call", "tool_use", "function_call", "function") or (
        not kind and isinstance(raw.get("function"), Mapping)  # OpenAI's, untyped
    ):
        function = raw.get("function")
        spec = function if isinstance(function, Mapping) else raw
        name = spec.get("name") or raw.get("toolName")
        if name is None:
            return None
        arguments = next(
            (spec[k] for k in ("arguments", "input", "args") if k in spec),
            raw.get("input", raw.get("args")),
        )
        call_id = raw.get("toolCallId") or raw.get("call_id") or raw.get("id")
        return tool_call(call_id, name, arguments)
    if "toolName" in raw and "toolCallId" in raw:  # the AI SDK's response tool calls
        arguments = raw.get("input", raw.get("args"))
        return tool_call(raw["toolCallId"], raw["toolName"], arguments)
    return None
