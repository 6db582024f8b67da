"""Provider results and Responses API input -> chat messages.

`Composo.evaluate(result=...)` takes what a provider SDK returned (an OpenAI
ChatCompletion or Responses `Response`, an Anthropic `Message`, their dict
forms, a message dict or plain text) and appends it to the conversation as
chat messages; `input=` takes the Responses API's input. A refusal stays a
refusal (the message's `refusal`), and how the call ended travels as a
`finish_reason` key on its assistant message, in OpenAI's words (Anthropic's
`stop_reason`, the Responses API's `incomplete_details.reason`), so that the
judge and `final_answer` see a refused, truncated or filtered answer as such. The result is the
OpenAI chat format that `tracejudge.models` (chat sessions) understands and the wire protocol
carries, so an in-process judge and a remote server see the same conversation.

Provider SDKs are never imported: objects are read through `model_dump()`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.errors import BadRequestError

__all__ = [
    "AdaptedResult",
    "adapt_result",
    "adapt_input",
    "responses_input_to_messages",
    "as_plain",
]


@dataclass
class AdaptedResult:
    """The messages a result adds, plus what it says about the call.

    `tools` are the tools the call declared (a Responses `Response` lists them),
    `discovered_tools` those it found while running (an MCP server's tool list),
    `system` its instructions.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    discovered_tools: list[dict[str, Any]] = field(default_factory=list)
    system: str | None = None


def as_plain(value: Any) -> Any:
    """Pydantic models (provider SDK objects) as plain dicts, recursively, also inside dicts
    and lists (`{"role": "assistant", "tool_calls": message.tool_calls}` is common)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json", exclude_none=True)
        except TypeError:  # a model_dump without those keywords (pydantic v1 style)
            return as_plain(dump())
    if isinstance(value, Mapping):
        return {key: as_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_plain(item) for item in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return as_plain(to_dict())
    return value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _without(data: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys and v is not None}


# --------------------------------------------------------------------------- builder


class _Builder:
    """Accumulates chat messages, merging consecutive tool calls into one assistant message
    (as the chat format writes parallel calls)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []

    def text(self, role: str, content: Any) -> None:
        self.messages.append({"role": role, "content": content})

    def call(self, call_id: str, name: str, arguments: Any) -> None:
        call = {
            "id": call_id,
            "type": "function",
            "function": {
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else _json(arguments),
            },
        }
        last = self.messages[-1] if self.messages else None
        # A call right after an assistant message belongs to it (text then calls, or parallel
        # calls); a call after a tool result starts a new assistant message.
        if last is not None and last.get("role") == "assistant":
            last.setdefault("tool_calls", []).append(call)
            return
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})

    def result(self, call_id: str, output: Any) -> None:
        content = output if isinstance(output, str) else _json(output)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})


# --------------------------------------------------------------------------- Responses API


def _refusal_parts(item: Mapping[str, Any]) -> str | None:
    """The refusal parts of a Responses API output message, joined; None when none."""
    content = item.get("content")
    if not isinstance(content, list):
        return None
    parts = [
        str(part.get("refusal") or "")
        for part in content
        if isinstance(part, Mapping) and part.get("type") == "refusal"
    ]
    return "\n".join(p for p in parts if p) or None


def _output_message_text(item: Mapping[str, Any]) -> str:
    """A message item's text (refusal parts are left to `_refusal_parts`)."""
    pieces: list[str] = []
    citations: list[str] = []
    content = item.get("content")
    if isinstance(content, str):
        return content
    for part in content or []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in ("output_text", "input_text", "text"):
            pieces.append(str(part.get("text", "")))
            for note in part.get("annotations") or []:
                if isinstance(note, Mapping) and note.get("type") == "url_citation":
                    title = note.get("title") or note.get("url")
                    citations.append(f"- {title} <{note.get('url')}>")
        elif kind == "refusal":
            continue
        elif kind in ("input_image", "image"):
            pieces.append("[image]")
        elif kind in ("input_file", "file"):
            pieces.append("[file]")
        else:
            # An unknown part is kept as JSON rather than silently lost.
            pieces.append(_json(part))
    text = "\n".join(p for p in pieces if p)
    if citations:
        # Deduplicated: a source is often cited several times in one answer.
        text += "\n\nCited sources:\n" + "\n".join(dict.fromkeys(citations))
    return text


def _code_interpreter_output(item: Mapping[str, Any]) -> str:
    lines: list[str] = []
    for output in item.get("outputs") or []:
        if not isinstance(output, Mapping):
            continue
        if output.get("type") == "logs":
            lines.append(str(output.get("logs", "")))
        elif output.get("type") == "image":
            lines.append(f"[image {output.get('url', '')}]".replace(" ]", "]"))
        else:
            lines.append(_json(output))
    return "\n".join(lines) if lines else f"(status: {item.get('status', 'unknown')})"


# One handler per Responses API item kind: each adds its item to the builder as chat
# messages. `_add_item` picks the handler; a kind without one is a built-in tool call
# (`*_call`) or kept as JSON.

Item = Mapping[str, Any]


def _call_id(item: Item) -> str:
    return str(item.get("call_id") or item.get("id") or "")


def _item_id(item: Item) -> str:
    return str(item.get("id") or "")


def _message(builder: _Builder, item: Item) -> None:
    role = str(item.get("role") or "user")
    content = item.get("content")
    if role != "assistant":
        builder.text(role, content if isinstance(content, str) else _output_message_text(item))
        return
    builder.text("assistant", _output_message_text(item))
    refusal = _refusal_parts(item)
    if refusal:
        builder.messages[-1]["refusal"] = refusal


def _function_call(builder: _Builder, item: Item) -> None:
    name = str(item.get("name") or "function")
    builder.call(_call_id(item), name, item.get("arguments") or "{}")


def _custom_tool_call(builder: _Builder, item: Item) -> None:
    name = str(item.get("name") or "custom_tool")
    builder.call(_call_id(item), name, {"input": item.get("input")})


def _call_output(builder: _Builder, item: Item) -> None:
    output = item.get("output")
    if not isinstance(output, str):
        from tracejudge.models import text_of

        output = text_of(output) if isinstance(output, list) else _json(output)
    builder.result(_call_id(item), output)


def _nothing_seen(builder: _Builder, item: Item) -> None:
    """Hidden reasoning and references to stored items carry nothing the judge can see."""


def _web_search_call(builder: _Builder, item: Item) -> None:
    call_id = _item_id(item)
    action = item.get("action") or {}
    arguments = _without(action, "sources") if isinstance(action, Mapping) else action
    builder.call(call_id, "web_search", arguments or {})
    sources = action.get("sources") if isinstance(action, Mapping) else None
    result: dict[str, Any] = {"status": item.get("status", "completed")}
    if sources:
        result["sources"] = sources
    builder.result(call_id, result)


def _code_interpreter_call(builder: _Builder, item: Item) -> None:
    call_id = _item_id(item)
    builder.call(call_id, "code_interpreter", {"code": item.get("code") or ""})
    builder.result(call_id, _code_interpreter_output(item))


def _file_search_call(builder: _Builder, item: Item) -> None:
    call_id = _item_id(item)
    builder.call(call_id, "file_search", {"queries": item.get("queries") or []})
    builder.result(call_id, {"status": item.get("status"), "results": item.get("results")})


def _mcp_call(builder: _Builder, item: Item) -> None:
    call_id = _item_id(item)
    builder.call(call_id, str(item.get("name") or "mcp_tool"), item.get("arguments") or "{}")
    if item.get("error"):
        label = item.get("server_label")
        builder.result(call_id, f"[error from MCP server {label}] {item['error']}")
    else:
        builder.result(call_id, item.get("output") or "")


def _mcp_list_tools(builder: _Builder, item: Item) -> None:
    call_id = _item_id(item)
    label = item.get("server_label")
    tools = [t for t in item.get("tools") or [] if isinstance(t, Mapping)]
    builder.call(call_id, "mcp_list_tools", {"server_label": label})
    if item.get("error"):
        builder.result(call_id, f"[error] {item['error']}")
    else:
        builder.result(call_id, {"tools": [t.get("name") for t in tools]})
    for tool in tools:
        description = tool.get("description") or ""
        builder.tools.append(
            {
                "type": "function",
                "function": {
                    "name": tool.get("name"),
                    "description": f"(MCP server {label}) {description}".strip(),
                    "parameters": tool.get("input_schema") or {},
                },
            }
        )


def _image_generation_call(builder: _Builder, item: Item) -> None:
    call_id = _item_id(item)
    builder.call(call_id, "image_generation", _without(item, "id", "type", "result", "status"))
    builder.result(call_id, f"[image generated] (status: {item.get('status', 'unknown')})")


def _builtin_tool_call(builder: _Builder, item: Item, kind: str) -> None:
    """computer_call, local_shell_call, shell_call, apply_patch_call and any future built-in
    tool: the call with its fields as arguments; its output, if any, is a separate
    *_output item."""
    builder.call(_call_id(item), kind[: -len("_call")], _without(item, "id", "call_id", "type"))


def _unknown(builder: _Builder, item: Item, kind: Any) -> None:
    """Unknown items are kept (as JSON the judge can read) rather than silently dropped."""
    builder.text("assistant", f"[{kind or 'item'}] {_json(_without(item, 'id'))}")


_HANDLERS: dict[str, Callable[[_Builder, Item], None]] = {
    "message": _message,
    "function_call": _function_call,
    "custom_tool_call": _custom_tool_call,
    **dict.fromkeys(
        (
            "function_call_output",
            "custom_tool_call_output",
            "computer_call_output",
            "local_shell_call_output",
            "shell_call_output",
            "apply_patch_call_output",
        ),
        _call_output,
    ),
    **dict.fromkeys(("reasoning", "item_reference", "compaction"), _nothing_seen),
    "web_search_call": _web_search_call,
    "code_interpreter_call": _code_interpreter_call,
    "file_search_call": _file_search_call,
    "mcp_call": _mcp_call,
    "mcp_list_tools": _mcp_list_tools,
    "image_generation_call": _image_generation_call,
}


def _add_item(builder: _Builder, item: Item) -> None:
    """One Responses API item (input or output) as chat messages."""
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"
    handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is not None:
        handler(builder, item)
    elif isinstance(kind, str) and kind.endswith("_call"):
        _builtin_tool_call(builder, item, kind)
    else:
        _unknown(builder, item, kind)


def responses_input_to_messages(input: str | Sequence[Any]) -> list[dict[str, Any]]:
    """The Responses API `input` (text, or a list of items) as chat messages."""
    return adapt_input(input).messages


def adapt_input(input: str | Sequence[Any]) -> AdaptedResult:
    """The Responses API `input` as chat messages, with any MCP tools it lists."""
    if isinstance(input, str):
        return AdaptedResult(messages=[{"role": "user", "content": input}])
    if not isinstance(input, Sequence):
        raise BadRequestError(
            f"input must be a string or a list of Responses API input items, got "
            f"{type(input).__name__}"
        )
    builder = _Builder()
    for index, raw in enumerate(input):
        item = as_plain(raw)
        if isinstance(item, str):
            builder.text("user", item)
            continue
        if not isinstance(item, Mapping):
            raise BadRequestError(
                f"input[{index}] is a {type(raw).__name__}; Responses API input items are "
                "dicts such as {'role': 'user', 'content': '...'} or {'type': "
                "'function_call_output', 'call_id': '...', 'output': '...'}"
            )
        _add_item(builder, item)
    return AdaptedResult(messages=builder.messages, discovered_tools=builder.tools)


def _from_response(data: Mapping[str, Any]) -> AdaptedResult:
    builder = _Builder()
    for item in data.get("output") or []:
        if isinstance(item, Mapping):
            _add_item(builder, item)
    details = data.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    if isinstance(reason, str) and reason:
        # An incomplete response (`max_output_tokens`, `content_filter`): said on its
        # last assistant message, added empty when it wrote none.
        if not builder.messages or builder.messages[-1].get("role") != "assistant":
            builder.text("assistant", None)
        builder.messages[-1]["finish_reason"] = _finish(reason)
    instructions = data.get("instructions")
    tools = [dict(t) for t in data.get("tools") or [] if isinstance(t, Mapping)]
    return AdaptedResult(
        messages=builder.messages,
        tools=tools,
        discovered_tools=builder.tools,
        system=instructions if isinstance(instructions, str) and instructions else None,
    )


# --------------------------------------------------------------------------- dispatch


#: Finish reasons in OpenAI's words: Anthropic's `stop_reason`s and the Responses API's
#: `incomplete_details.reason` (others, such as `refusal` or `content_filter`, are kept).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "model_context_window_exceeded": "length",
}


def _finish(reason: str) -> str:
    return _FINISH.get(reason, reason)


def _message_dict(message: Mapping[str, Any], finish_reason: Any = None) -> dict[str, Any]:
    """A chat message as the chat-session reader takes it: its `refusal` kept as such,
    and the call's finish reason (not part of the chat format) under `finish_reason`."""
    kept = ("role", "content", "tool_calls", "function_call", "name", "tool_call_id", "refusal")
    result = {k: message[k] for k in kept if k in message and message[k] is not None}
    result.setdefault("role", "assistant")
    result.setdefault("content", None)
    if isinstance(finish_reason, str) and finish_reason:
        result["finish_reason"] = _finish(finish_reason)
    return result


def adapt_result(result: Any) -> AdaptedResult:
    """What `result=` adds to the conversation.

    Accepts an OpenAI ChatCompletion, an OpenAI Responses `Response`, an
    Anthropic `Message` (objects or their dict forms), a chat message dict, or
    a string (the assistant's answer).
    """
    if isinstance(result, str):
        return AdaptedResult(messages=[{"role": "assistant", "content": result}])
    data = as_plain(result)
    if not isinstance(data, Mapping):
        raise BadRequestError(
            f"result is a {type(result).__name__}, which tracejudge cannot read: pass an OpenAI "
            "ChatCompletion or Responses Response, an Anthropic Message, a message dict, or "
            "the answer's text"
        )
    choices = data.get("choices")
    if isinstance(choices, list):
        if not choices or not isinstance(choices[0], Mapping):
            raise BadRequestError("result is a chat completion with no choices to evaluate")
        chosen = choices[0].get("message") or {}
        return AdaptedResult(messages=[_message_dict(chosen, choices[0].get("finish_reason"))])
    if data.get("object") == "response" or (
        isinstance(data.get("output"), list) and "role" not in data
    ):
        return _from_response(data)
    if data.get("type") == "message" and isinstance(data.get("content"), list):
        # Anthropic Message: its content blocks, kept as blocks; its stop reason (a refusal,
        # the token limit) as the finish reason.
        message: dict[str, Any] = {"role": "assistant", "content": data["content"]}
        stop = data.get("stop_reason")
        if isinstance(stop, str) and stop:
            message["finish_reason"] = _finish(stop)
        return AdaptedResult(messages=[message])
    if "role" in data or "content" in data or "tool_calls" in data:
        return AdaptedResult(messages=[_message_dict(data)])
    raise BadRequestError(
        "result is a dict tracejudge cannot read: expected a message ({'role': 'assistant', "
        "'content': ...}), a chat completion ('choices'), a Responses API response "
        "('output') or an Anthropic message ('type': 'message')"
    )
