"""Chat sessions: message lists (OpenAI or Anthropic format) -> LLMInteractions.

One place turns a provider's message list into the wire model, so that
`AgentInstance.from_chat_session`, `Composo.evaluate(messages=...)` and the
server's reward endpoint all see a conversation the same way (Anthropic
server-side tool blocks included).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tracejudge.errors import BadRequestError
from tracejudge.models._interaction import LLMInteraction
from tracejudge.models._messages import (
    LLMInput,
    LLMOutput,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
)

__all__ = ["interactions_from_messages", "tool_definitions", "text_of"]


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts/blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # (`type(...) is`: the usual list of dict parts, without the slower ABC checks)
    if type(content) is not list and isinstance(content, Mapping):
        content = [content]
    if type(content) is list or isinstance(content, Iterable):
        pieces: list[str] = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif type(part) is dict or isinstance(part, Mapping):
                kind = part.get("type")
                if "text" in part and isinstance(part["text"], str):
                    pieces.append(part["text"])
                elif isinstance(part.get("content"), str):
                    pieces.append(part["content"])
                elif kind in ("image", "image_url", "input_image"):
                    pieces.append("[image]")
                elif kind in ("file", "input_file", "document"):
                    pieces.append("[file]")
                elif kind == "refusal":
                    pieces.append(str(part.get("refusal", "")))
        return "\n".join(p for p in pieces if p)
    return str(content)


def tool_definitions(tools: Sequence[Mapping[str, Any]] | None) -> list[LLMToolDefinition] | None:
    """OpenAI (nested or flat), Anthropic or MCP tool definitions -> LLMToolDefinition."""
    if not tools:
        return None
    definitions = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")
        spec = function if isinstance(function, Mapping) else tool
        name = spec.get("name") or tool.get("type") or "tool"
        # `inputSchema`: MCP tools, and the Vercel AI SDK's (AI SDK 5+, also in
        # `gen_ai.tool.definitions` from @ai-sdk/otel)
        schema = spec.get("parameters", spec.get("input_schema", spec.get("inputSchema", {})))
        definitions.append(
            LLMToolDefinition(
                name=str(name),
                description=spec.get("description") or "",
                parameters=schema if schema is not None else {},
            )
        )
    return definitions


def _openai_tool_call(call: Mapping[str, Any], index: int) -> LLMToolCall:
    function = call.get("function") or {}
    return LLMToolCall(
        id=str(call.get("id") or f"call_{index}"),
        name=str(function.get("name") or call.get("name") or "unknown"),
        parameters=function.get("arguments", call.get("arguments", "{}")),
    )


def _assistant_outputs(message: Mapping[str, Any], counter: list[int]) -> list[LLMOutput]:
    outputs: list[LLMOutput] = []
    content = message.get("content")
    if isinstance(content, list):
        # Anthropic blocks keep their order: text, tool_use, text ...
        for block in content:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                counter[0] += 1
                call = LLMToolCall(
                    id=str(block.get("id") or f"call_{counter[0]}"),
                    name=str(block.get("name") or "unknown"),
                    parameters=block.get("input", {}),
                )
                outputs.append(LLMOutput(type="tool_call", content=call))
            elif block.get("type") in ("thinking", "redacted_thinking", "refusal"):
                continue  # reasoning is not the answer; a refusal is kept apart (_refusal)
            else:
                text = text_of(block)
                if text:
                    outputs.append(LLMOutput(type="text", content=text))
    else:
        text = text_of(content)
        if text:
            outputs.append(LLMOutput(type="text", content=text))
    for call in message.get("tool_calls") or []:
        counter[0] += 1
        outputs.append(LLMOutput(type="tool_call", content=_openai_tool_call(call, counter[0])))
    function_call = message.get("function_call")
    if isinstance(function_call, Mapping):
        # Legacy function calling has no call ids: its result names the function instead.
        call = _openai_tool_call(function_call, 0)
        if not function_call.get("id"):
            call.id = call.name
        outputs.append(LLMOutput(type="tool_call", content=call))
    return outputs


def _refusal(message: Mapping[str, Any]) -> str | None:
    """An assistant message's refusal: its `refusal` (OpenAI), or its refusal parts."""
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return refusal
    content = message.get("content")
    if isinstance(content, list):
        parts = [
            str(part.get("refusal") or "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "refusal"
        ]
        return "\n".join(p for p in parts if p) or None
    return None


def _finish_reason(message: Mapping[str, Any]) -> str | None:
    """The finish reason an adapted result put on its assistant message (see
    `evaluation._adapt`): not part of the chat format, kept when present."""
    reason = message.get("finish_reason")
    return reason if isinstance(reason, str) and reason else None


def _input_messages(message: Mapping[str, Any], call_names: dict[str, str]) -> list[LLMInput]:
    role = str(message.get("role") or "user")
    content = message.get("content")
    if role in ("tool", "function"):
        call_id = str(message.get("tool_call_id") or message.get("name") or "")
        response = LLMToolResponse(
            id=call_id,
            response=text_of(content) if not isinstance(content, str) else content,
            name=message.get("name") or call_names.get(call_id),
        )
        return [LLMInput(role="tool", type="tool_response", content=response)]
    if isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    ):
        # Anthropic: tool results travel inside a user message.
        inputs: list[LLMInput] = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                call_id = str(block.get("tool_use_id") or "")
                result = block.get("content")
                text = result if isinstance(result, str) else text_of(result)
                if block.get("is_error"):
                    text = f"[error] {text}"
                response = LLMToolResponse(id=call_id, response=text, name=call_names.get(call_id))
                inputs.append(LLMInput(role="tool", type="tool_response", content=response))
            else:
                text = text_of([block])
                if text:
                    inputs.append(LLMInput(role=role, type="text", content=text))
        return inputs
    return [LLMInput(role=role, type="text", content=text_of(content))]


# --------------------------------------------------------------------------- Anthropic server tools

_SERVER_CALL_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use"})


def _server_result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        kind = str(content.get("type", ""))
        if kind.endswith("_error"):
            return f"[error] {content.get('error_code', 'unknown')}"
        if "stdout" in content or "stderr" in content:
            return (
                f"return code {content.get('return_code')}\n"
                f"stdout:\n{content.get('stdout', '')}\nstderr:\n{content.get('stderr', '')}"
            )
        return json.dumps(
            {k: v for k, v in content.items() if not str(k).startswith("encrypted")},
            ensure_ascii=False,
            default=str,
        )
    if isinstance(content, list):
        lines = []
        for part in content:
            if not isinstance(part, Mapping):
                continue
            if part.get("url"):
                lines.append(f"- {part.get('title') or part['url']} <{part['url']}>")
            else:
                text = text_of([part])
                if text:
                    lines.append(text)
        return "\n".join(lines)
    return ""


def _cited_text(block: Mapping[str, Any]) -> Mapping[str, Any]:
    citations = [c for c in block.get("citations") or [] if isinstance(c, Mapping)]
    sources = [f"- {c.get('title') or c['url']} <{c['url']}>" for c in citations if c.get("url")]
    if not sources:
        return block
    text = str(block.get("text", "")) + "\n\nCited sources:\n" + "\n".join(dict.fromkeys(sources))
    return {"type": "text", "text": text}


def _split_server_tools(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """An Anthropic assistant message holding server-side tool use and its results inline,
    as assistant tool calls followed by user tool results (as for client tools); any other
    message as it is."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return [message]
    result: list[Mapping[str, Any]] = []
    current: list[Any] = []
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind in _SERVER_CALL_BLOCKS:
            name = block.get("name") or "server_tool"
            current.append(
                {
                    "type": "tool_use",
                    "id": block.get("id"),
                    "name": name,
                    "input": block.get("input", {}),
                }
            )
        elif isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result":
            if current:
                result.append({**message, "content": current})
                current = []
            text = _server_result_text(block)
            if block.get("is_error"):
                text = f"[error] {text}"
            result.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": block.get("tool_use_id"),
                            "content": text,
                        }
                    ],
                }
            )
        elif kind == "text" and isinstance(block, Mapping):
            current.append(_cited_text(block))
        else:
            current.append(block)
    if current:
        result.append({**message, "content": current})
    return result


# --------------------------------------------------------------------------- messages


#: The roles a chat message may have (OpenAI's and Anthropic's).
ROLES = ("system", "developer", "user", "assistant", "tool", "function")


#: The JSON Schema of a message `_check_message` accepts: a role, and content (text, parts,
#: or an object) unless it is an assistant message.
CHAT_MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"enum": list(ROLES)},
        "content": {"type": ["string", "array", "object", "null"]},
        "name": {"type": ["string", "null"]},
        "tool_call_id": {"type": ["string", "null"]},
    },
    "if": {"properties": {"role": {"const": "assistant"}}},
    "else": {"required": ["role", "content"]},
}


def _check_message(index: int, message: Mapping[str, Any]) -> None:
    """Raise BadRequestError (a ValueError) naming `messages[index]` and the field when
    the message is not one a chat API would take."""
    role = message.get("role")
    if role is None:
        raise BadRequestError(
            f"messages[{index}].role is missing; give each message a role: one of "
            f"{', '.join(ROLES)}"
        )
    if role not in ROLES:
        raise BadRequestError(
            f"messages[{index}].role is {role!r}, not a chat role; use one of {', '.join(ROLES)}"
        )
    for field in ("name", "tool_call_id"):
        value = message.get(field)
        if value is not None and not isinstance(value, str):
            raise BadRequestError(
                f"messages[{index}].{field} is {type(value).__name__} ({value!r:.40}); it "
                "must be text"
            )
    content = message.get("content")
    if content is None:
        # An assistant message that only calls tools (or refuses) has no content.
        if role == "assistant" and any(
            message.get(field) for field in ("tool_calls", "function_call", "refusal")
        ):
            return
        if "content" not in message and role != "assistant":
            raise BadRequestError(f"messages[{index}].content is missing (role {role!r})")
        return
    if isinstance(content, (str, list, tuple)) or isinstance(content, Mapping):
        return
    raise BadRequestError(
        f"messages[{index}].content is {type(content).__name__} ({content!r:.40}); it must "
        "be text or a list of content parts"
    )


def interactions_from_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    system: str | Sequence[Mapping[str, Any]] | None = None,
) -> list[LLMInteraction]:
    """Each assistant message becomes one interaction whose input is everything before it.

    Anthropic server-side tool use inside an assistant message (`server_tool_use`,
    `mcp_tool_use` and their `*_tool_result` blocks) becomes a tool call and its result,
    as for client tools: the message is split at each result. Text blocks with
    citations get their cited sources appended. An assistant message's `refusal` (or
    refusal parts) becomes the interaction's `refusal`, not text, and a `finish_reason`
    key on it (put there by `Composo.evaluate(result=...)`) its `finish_reason`.
    """
    tools_available = tool_definitions(tools)
    history: list[LLMInput] = []
    if system:
        history.append(LLMInput(role="system", type="text", content=text_of(system)))
    call_names: dict[str, str] = {}
    counter = [0]
    interactions: list[LLMInteraction] = []
    for index, original in enumerate(messages):
        if not isinstance(original, Mapping):
            raise TypeError(
                f"messages[{index}] must be a dict with 'role' and 'content', "
                f"got {type(original).__name__}"
            )
        _check_message(index, original)
        parts = _split_server_tools(original)
        ends = [p for p in parts if p.get("role") == "assistant"][-1:]
        for message in parts:
            if message.get("role") != "assistant":
                history.extend(_input_messages(message, call_names))
                continue
            outputs = _assistant_outputs(message, counter)
            # How the message ended belongs to its last part (after any server tools).
            last = message is ends[0]
            interactions.append(
                LLMInteraction(
                    input_messages=list(history),
                    output_messages=outputs,
                    tools_available=tools_available,
                    refusal=_refusal(message) if last else None,
                    finish_reason=_finish_reason(original) if last else None,
                )
            )
            for output in outputs:
                if isinstance(output.content, LLMToolCall):
                    call_names[output.content.id] = output.content.name
                history.append(LLMInput(role="assistant", type=output.type, content=output.content))
    return interactions
