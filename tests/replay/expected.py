"""What a recorded exchange says happened, read from the request and response bodies
alone (never from spans), in the comparable form the replay tests check traces against.

Items are tuples: ("text", role, text), ("call", role, id, name, arguments parsed),
("result", id, text). Texts are compared with whitespace collapsed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: Built-in server-side tool items of the Responses API.
SERVER_TOOL_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "image_generation_call",
        "computer_call",
    }
)


@dataclass
class Expected:
    api: str  # chat | completions | responses | messages
    inputs: list[tuple[Any, ...]] = field(default_factory=list)
    outputs: list[tuple[Any, ...]] = field(default_factory=list)  # the first choice
    alternatives: list[list[tuple[Any, ...]]] = field(default_factory=list)
    refusal: str | None = None
    finish_reason: str | None = None
    usage: tuple[int, int, int] | None = None
    model: str | None = None
    error: int | None = None  # the HTTP status of a failed call
    reasoning: bool = False
    server_tools: list[str] = field(default_factory=list)


def norm(text: Any) -> str:
    return " ".join(str(text).split())


def args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else {}
        except ValueError:
            return value
    return value if value is not None else {}


def finish(reason: Any) -> str | None:
    if not reason:
        return None
    reason = str(reason).lower()
    return {
        "tool_call": "tool_calls",
        "function_call": "tool_calls",
        "tool_use": "tool_calls",
        "end_turn": "stop",
        "stop_sequence": "stop",
        "max_tokens": "length",
    }.get(reason, reason)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") in ("image_url", "image", "input_image"):
            parts.append("[image]")  # the converter's placeholder for an image part
    return "\n".join(parts)


# --------------------------------------------------------------------------- requests


def _chat_inputs(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    items: list[tuple[Any, ...]] = []
    for message in body.get("messages") or []:
        role = message.get("role", "user")
        if role in ("tool", "function"):
            call_id = message.get("tool_call_id") or ""
            items.append(("result", call_id, norm(_text(message.get("content")))))
            continue
        text = _text(message.get("content"))
        if text:
            items.append(("text", role, norm(text)))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            items.append(
                (
                    "call",
                    role,
                    call.get("id"),
                    function.get("name"),
                    args(function.get("arguments")),
                )
            )
        if message.get("function_call"):
            function = message["function_call"]
            items.append(("call", role, "", function.get("name"), args(function.get("arguments"))))
    return items


def _responses_inputs(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    items: list[tuple[Any, ...]] = []
    if body.get("instructions"):
        items.append(("text", "system", norm(body["instructions"])))
    given = body.get("input")
    if isinstance(given, str):
        return [*items, ("text", "user", norm(given))]
    for item in given or []:
        kind = item.get("type", "message")
        if kind == "message":
            text = _text(item.get("content"))
            if text:
                items.append(("text", item.get("role", "user"), norm(text)))
        elif kind == "function_call":
            items.append(
                (
                    "call",
                    "assistant",
                    item.get("call_id"),
                    item.get("name"),
                    args(item.get("arguments")),
                )
            )
        elif kind == "function_call_output":
            items.append(("result", item.get("call_id"), norm(_text(item.get("output")))))
    return items


def _anthropic_inputs(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    items: list[tuple[Any, ...]] = []
    if body.get("system"):
        items.append(("text", "system", norm(_text(body["system"]))))
    for message in body.get("messages") or []:
        role = message.get("role", "user")
        content = message.get("content")
        if isinstance(content, str):
            items.append(("text", role, norm(content)))
            continue
        texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
        if texts:
            items.append(("text", role, norm("\n".join(texts))))
        for block in content or []:
            if block.get("type") == "tool_use":
                items.append(
                    ("call", role, block.get("id"), block.get("name"), args(block.get("input")))
                )
            elif block.get("type") == "tool_result":
                items.append(
                    ("result", block.get("tool_use_id"), norm(_text(block.get("content"))))
                )
    return items


# --------------------------------------------------------------------------- responses


def _sse_data(body: bytes) -> list[tuple[str | None, Any]]:
    events = []
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data and data != ["[DONE]"]:
            events.append((name, json.loads("\n".join(data))))
    return events


def _chat_stream(body: bytes) -> dict[str, Any]:
    """Chunks assembled into a non-streamed chat completion."""
    choices: dict[int, dict[str, Any]] = {}
    result: dict[str, Any] = {}
    for _, chunk in _sse_data(body):
        result["model"] = chunk.get("model") or result.get("model")
        if chunk.get("usage"):
            result["usage"] = chunk["usage"]
        for delta_choice in chunk.get("choices") or []:
            choice = choices.setdefault(delta_choice["index"], {"message": {"content": None}})
            delta = delta_choice.get("delta") or {}
            message = choice["message"]
            if delta.get("content"):
                message["content"] = (message["content"] or "") + delta["content"]
            if delta.get("refusal"):
                message["refusal"] = (message.get("refusal") or "") + delta["refusal"]
            for call in delta.get("tool_calls") or []:
                calls = message.setdefault("tool_calls", {})
                entry = calls.setdefault(
                    call["index"], {"id": "", "function": {"name": "", "arguments": ""}}
                )
                entry["id"] = call.get("id") or entry["id"]
                function = call.get("function") or {}
                entry["function"]["name"] += function.get("name") or ""
                entry["function"]["arguments"] += function.get("arguments") or ""
            if delta_choice.get("finish_reason"):
                choice["finish_reason"] = delta_choice["finish_reason"]
    for choice in choices.values():
        calls = choice["message"].get("tool_calls")
        if calls is not None:
            choice["message"]["tool_calls"] = [calls[i] for i in sorted(calls)]
    result["choices"] = [choices[i] for i in sorted(choices)]
    return result


def _anthropic_stream(body: bytes) -> dict[str, Any]:
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for _, event in _sse_data(body):
        kind = event.get("type")
        if kind == "message_start":
            message = dict(event["message"])
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif kind == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta.get("type") == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            usage = dict(message.get("usage") or {})
            usage.update(event.get("usage") or {})
            message["usage"] = usage
    for index, text in partial.items():
        blocks[index]["input"] = args(text)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def _chat_choice(choice: dict[str, Any]) -> list[tuple[Any, ...]]:
    message = choice.get("message") or {}
    items: list[tuple[Any, ...]] = []
    text = choice.get("text") if "text" in choice else _text(message.get("content"))
    if text:
        items.append(("text", "assistant", norm(text)))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        items.append(
            (
                "call",
                "assistant",
                call.get("id"),
                function.get("name"),
                args(function.get("arguments")),
            )
        )
    if message.get("function_call"):
        function = message["function_call"]
        items.append(
            ("call", "assistant", "", function.get("name"), args(function.get("arguments")))
        )
    return items


def _read_chat(expected: Expected, data: dict[str, Any]) -> None:
    choices = data.get("choices") or []
    if choices:
        expected.outputs = _chat_choice(choices[0])
        expected.alternatives = [_chat_choice(c) for c in choices[1:]]
        expected.finish_reason = finish(choices[0].get("finish_reason"))
        refusal = (choices[0].get("message") or {}).get("refusal")
        expected.refusal = norm(refusal) if refusal else None
    usage = data.get("usage")
    if usage:
        expected.usage = (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])
    expected.model = data.get("model")


def _read_responses(expected: Expected, data: dict[str, Any]) -> None:
    texts = []
    for item in data.get("output") or []:
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    texts.append(part.get("text", ""))
                elif part.get("type") == "refusal":
                    expected.refusal = norm(part.get("refusal", ""))
        elif kind == "function_call":
            expected.outputs.append(
                (
                    "call",
                    "assistant",
                    item.get("call_id"),
                    item.get("name"),
                    args(item.get("arguments")),
                )
            )
        elif kind == "reasoning":
            expected.reasoning = expected.reasoning or bool(item.get("summary"))
        elif kind in SERVER_TOOL_ITEMS:
            expected.server_tools.append(kind)
    if texts:
        expected.outputs.insert(0, ("text", "assistant", norm("".join(texts))))
    calls = [o for o in expected.outputs if o[0] == "call"]
    incomplete = (data.get("incomplete_details") or {}).get("reason")
    expected.finish_reason = finish(incomplete) if incomplete else "tool_calls" if calls else "stop"
    usage = data.get("usage")
    if usage:
        expected.usage = (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"])
    expected.model = data.get("model")


def _read_messages(expected: Expected, data: dict[str, Any]) -> None:
    texts = []
    for block in data.get("content") or []:
        if block.get("type") == "text":
            texts.append(block.get("text", ""))
        elif block.get("type") == "tool_use":
            expected.outputs.append(
                ("call", "assistant", block.get("id"), block.get("name"), args(block.get("input")))
            )
        elif block.get("type") in ("thinking", "redacted_thinking"):
            expected.reasoning = True
    if texts:
        expected.outputs.insert(0, ("text", "assistant", norm("\n".join(texts))))
    expected.finish_reason = finish(data.get("stop_reason"))
    usage = data.get("usage") or {}
    if usage:
        given = usage.get("input_tokens", 0)
        cached = (usage.get("cache_read_input_tokens") or 0) + (
            usage.get("cache_creation_input_tokens") or 0
        )
        output = usage.get("output_tokens", 0)
        expected.usage = (given + cached, output, given + cached + output)
    expected.model = data.get("model")


def expected(exchange: Any) -> Expected:
    """What the recorded exchange (a `RecordedExchange`) says happened."""
    path = exchange.path
    body = exchange.request_json or {}
    api = (
        "chat"
        if path.endswith("/chat/completions")
        else "completions"
        if path.endswith("/completions")
        else "responses"
        if path.endswith("/responses")
        else "messages"
    )
    result = Expected(api=api)
    if api == "chat":
        result.inputs = _chat_inputs(body)
    elif api == "completions":
        prompt = body.get("prompt")
        result.inputs = [
            ("text", "user", norm(prompt if isinstance(prompt, str) else _text(prompt)))
        ]
    elif api == "responses":
        result.inputs = _responses_inputs(body)
    else:
        result.inputs = _anthropic_inputs(body)
    if exchange.status >= 400:
        result.error = exchange.status
        return result
    if api in ("chat", "completions"):
        data = _chat_stream(exchange.body) if exchange.is_stream else exchange.response_json
        _read_chat(result, data)
    elif api == "responses":
        if exchange.is_stream:
            data = next(
                e["response"]
                for name, e in _sse_data(exchange.body)
                if e.get("type") == "response.completed"
            )
        else:
            data = exchange.response_json
        _read_responses(result, data)
    else:
        data = _anthropic_stream(exchange.body) if exchange.is_stream else exchange.response_json
        _read_messages(result, data)
    return result
