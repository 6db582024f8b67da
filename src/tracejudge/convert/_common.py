"""What the convention modules share: the result of reading one span, and the
helpers that turn loosely typed attribute values into wire-model messages.

The rules of CONVENTIONS.md §4 live here: tool arguments and responses become
JSON strings, `None` values and index gaps are tolerated, `tool_call` and
`tool_calls` finish reasons are the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.convert import _json
from tracejudge.convert._construct import build
from tracejudge.convert._json import is_mapping
from tracejudge.convert._memo import REMEMBERED_TOOLS, ConversionMemo
from tracejudge.models import (
    LLMInput,
    LLMOutput,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
    TokenUsage,
    text_of,
    to_json_string,
    tool_definitions,
)

# Message part types of the GenAI semconv message schema (also OpenLLMetry 0.55+).
PART_TEXT = "text"
PART_TOOL_CALL = "tool_call"
PART_TOOL_RESPONSE = "tool_call_response"
PART_REFUSAL = "refusal"
REASONING_PARTS = frozenset({"reasoning", "thinking", "redacted_thinking"})
_MEDIA_PARTS = {"uri": "[file]", "blob": "[file]", "file": "[file]", "image": "[image]"}

FINISH_TOOL_CALLS = "tool_calls"

#: Responses API output items of built-in tools the provider runs itself -> tool name.
#: The client never sends their results back, so no result is expected.
SERVER_TOOL_ITEMS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "mcp_call": "mcp",
    "mcp_list_tools": "mcp",
    "image_generation_call": "image_generation",
}
#: The name of a built-in tool that ran but whose kind the span did not record.
UNRECORDED_SERVER_TOOL = "server_tool"


@dataclass
class Extraction:
    """What one LLM span says about its model call.

    `call_aliases` maps Responses API item ids (`fc_…`) to call ids (`call_…`)
    where the span's raw request shows both; `has_content` is False when the
    span carries no messages at all (content capture off).

    `outputs` is the first choice, the answer the program used; `alternatives` the
    other choices (`n` > 1), never mixed into it. `refusal` is the model's refusal
    text, kept apart from the answer; `reasoning` the reasoning (summary) texts;
    `server_tools` the built-in tools the provider ran itself (web search, file search,
    code interpreter, MCP), whose results the client never sees. `finish_reasons`
    holds the first choice's reason first.
    """

    inputs: list[LLMInput] = field(default_factory=list)
    outputs: list[LLMOutput] = field(default_factory=list)
    tools: list[LLMToolDefinition] | None = None
    model: str | None = None
    usage: TokenUsage | None = None
    finish_reasons: list[str] = field(default_factory=list)
    call_aliases: dict[str, str] = field(default_factory=dict)
    has_content: bool = False
    warnings: list[str] = field(default_factory=list)
    alternatives: list[list[LLMOutput]] = field(default_factory=list)
    refusal: str | None = None
    reasoning: list[str] = field(default_factory=list)
    server_tools: list[LLMToolCall] = field(default_factory=list)
    #: The record holds the response of a call whose request is recorded on the model-call
    #: span before it (same parent, same scope): logfire's streamed responses. The walk
    #: joins the two records into one call (see `_merge`).
    response_apart: bool = False
    #: Set by the tree walk for a call without content: how the producer's content
    #: capture is turned on (None: unknown), and for a call in no convention tracejudge
    #: reads, the attribute keys that may hold its messages (else None).
    content_setting: str | None = None
    unread_keys: list[str] | None = None
    _choices: int = 0

    def add_choice(
        self,
        texts: Sequence[str],
        calls: Sequence[LLMToolCall],
        *,
        refusal: Sequence[str] = (),
        reasoning: Sequence[str] = (),
        finish: str | None = None,
        same_choice: bool = False,
    ) -> None:
        """Add one choice of the answer (or, with `same_choice`, more of the first one:
        a Responses API answer recorded as several messages)."""
        outputs = message_outputs(texts, calls)
        if self._choices and not same_choice:
            self.alternatives.append(outputs)
        else:
            self.outputs.extend(outputs)
            refused = "\n".join(t for t in refusal if t) if refusal else ""
            if refused:
                self.refusal = f"{self.refusal}\n{refused}" if self.refusal else refused
            if reasoning:  # (rare: the generators cost more than the rest when empty)
                self.reasoning.extend(t for t in reasoning if t)
        self._choices = max(self._choices, 1) if same_choice else self._choices + 1
        if finish and finish not in self.finish_reasons:
            self.finish_reasons.append(finish)


# --------------------------------------------------------------------------- values


def load_json(value: Any, what: str, warnings: list[str]) -> Any:
    """A JSON-string attribute parsed, a structured one as is; None (and a warning) when
    it is a string that is not JSON."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        try:
            return _json.loads(value)
        except json.JSONDecodeError as exc:
            warnings.append(f"{what}: not JSON ({exc.msg} at {exc.pos}); skipped")
            return None
        except (ValueError, RecursionError) as exc:
            warnings.append(f"{what}: not readable JSON ({type(exc).__name__}); skipped")
            return None
    return value


def as_str(value: Any) -> str | None:
    """A scalar as a string; None for None, containers and empty strings."""
    if type(value) is str:  # the usual case, without the (slow) Mapping ABC check
        return value or None
    if value is None or isinstance(value, (Mapping, list, tuple)):
        return None
    text = str(value)
    return text or None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return int(number)


def text_value(value: Any) -> str:
    """Message content as text: strings kept, part lists joined (see `models.text_of`), and
    a JSON object that is not a part (a structured answer: Genkit's `output: {schema}`, a
    producer writing the model's JSON answer parsed) as its JSON text, not as no text."""
    if isinstance(value, str):
        return value
    if is_mapping(value) and value and not _PART_KEYS.intersection(value):
        return to_json_string(value)
    try:
        return text_of(value)
    except Exception:  # arbitrary attribute data: never let a shape error escape
        return to_json_string(value)


#: The keys of a content part (`{"type": "text", "text": ...}`), which an answer object is not.
_PART_KEYS = frozenset({"type", "text", "content"})


_FINISH_ALIASES = {
    "tool_call": FINISH_TOOL_CALLS,
    "function_call": FINISH_TOOL_CALLS,
    "tool_use": FINISH_TOOL_CALLS,  # Anthropic
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "max_output_tokens": "length",  # Responses API `incomplete_details.reason`
    # the OpenAI .NET client's names (`ToolCalls`), as Semantic Kernel .NET writes them
    "toolcalls": FINISH_TOOL_CALLS,
    "functioncall": FINISH_TOOL_CALLS,
    "contentfilter": "content_filter",
    "tool-calls": FINISH_TOOL_CALLS,  # the Vercel AI SDK (also its gen_ai.* keys)
    "content-filter": "content_filter",
}


#: A client enum's repr written as the reason (`FinishReason.TOOL_CALLS` from Semantic
#: Kernel, `FinishReason.ToolCalls` from OpenLIT's Together spans): its member's name.
_ENUM_REPR = re.compile(r"[A-Z][A-Za-z]*\.([A-Za-z_]+)")
_CAMEL_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def finish_reason(value: Any) -> str | None:
    """One finish reason, in OpenAI's words: `tool_call` (OpenLLMetry), `function_call`,
    Anthropic's `tool_use` and the Vercel AI SDK's `tool-calls` are `tool_calls`;
    `end_turn` and `stop_sequence` are `stop`; `max_tokens` is `length`; the AI SDK's
    `content-filter` is `content_filter`. Others (`refusal`) are kept. A client enum's
    repr (`FinishReason.ToolCalls`) is read as its member's name, and the OpenAI .NET
    client's names (`ToolCalls`) as OpenAI's."""
    if type(value) is str:  # (a producer writes a few reasons: each read once)
        known = _READ_REASONS.get(value)
        if known is None:
            known = _finish_reason(value)
            if len(_READ_REASONS) < _READ_REASONS_CAP:
                _READ_REASONS[value] = known
        return known or None  # ("": no reason)
    return _finish_reason(value) or None


#: What `finish_reason` made of each text seen ("" for None), at most `_READ_REASONS_CAP`.
_READ_REASONS: dict[str, str] = {}
_READ_REASONS_CAP = 1024


def _finish_reason(value: Any) -> str:
    """`finish_reason`, "" for None."""
    text = as_str(value)
    if text is None:
        return ""
    if "." in text:
        enum = _ENUM_REPR.fullmatch(text)
        if enum is not None:
            text = _CAMEL_WORD.sub("_", enum.group(1))
    text = text.lower()
    return _FINISH_ALIASES.get(text, text)


def finish_reasons(value: Any) -> list[str]:
    """Each finish reason of an attribute value, in OpenAI's words (see `finish_reason`).
    A JSON list written as text (logfire's and Agent Framework's
    `gen_ai.response.finish_reasons`, `'["tool_use"]'`) is read as the list."""
    if value is None:  # (asked of every span, and of several keys in turn)
        return []
    if type(value) is str and value.startswith("["):
        try:
            listed = _json.loads(value)
        except (ValueError, RecursionError):
            listed = None
        if isinstance(listed, list):
            value = listed
    items = value if isinstance(value, (list, tuple)) else (value,)
    return [reason for reason in map(finish_reason, items) if reason]


def usage(
    attrs: Mapping[str, Any],
    input_keys: Sequence[str],
    output_keys: Sequence[str],
    total_keys: Sequence[str],
) -> TokenUsage | None:
    """Token usage from the first present key of each kind; None when none is present."""
    input_tokens = _first_int(attrs, input_keys)
    output_tokens = _first_int(attrs, output_keys)
    total = _first_int(attrs, total_keys)
    if input_tokens is None and output_tokens is None and total is None:
        return None
    input_tokens, output_tokens = input_tokens or 0, output_tokens or 0
    return build(
        TokenUsage,
        {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": total if total is not None else input_tokens + output_tokens,
        },
    )


def _first_int(attrs: Mapping[str, Any], keys: Sequence[str]) -> int | None:
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            number = value if type(value) is int else as_int(value)
            if number is not None:
                return number
    return None


# --------------------------------------------------------------------------- flattened keys


def list_index(segment: str) -> int | None:
    """A key segment as a list index when it is written the one way (`7`, not `07` or `٧`),
    else None: two spellings of one number are two places in the nested form. (For the
    one-pass readers of `_oi_keys` and `_legacy_keys`.)"""
    if segment.isdigit() and segment.isascii() and (segment == "0" or segment[0] != "0"):
        return int(segment)
    return None


def in_order(items: dict[int, Any]) -> list[Any]:
    """The values of a dict by index, in index order."""
    if len(items) == 1:
        return list(items.values())
    return [items[i] for i in sorted(items)]


def indexed(node: Any) -> list[Any]:
    """The values under numeric keys, in index order (gaps skipped)."""
    if node is None:
        return []
    if is_mapping(node):
        keys = [k for k in node if type(k) is str and k.isdigit()]
        if len(keys) > 1:
            keys.sort(key=int)
        return [node[k] for k in keys]
    if isinstance(node, (list, tuple)):
        return list(node)
    return []


# --------------------------------------------------------------------------- messages


# The models below are built without validation (`_construct`): every value is already of
# its field's type (`as_str`, `to_json_string`, `as_int` made it so), and validating tens
# of thousands of messages again was a fifth of the converter's time.


def tool_call(call_id: Any, name: Any, arguments: Any) -> LLMToolCall:
    return build(
        LLMToolCall,
        {
            "id": as_str(call_id) or "",
            "name": as_str(name) or "unknown",
            "parameters": to_json_string(_encoded_once(arguments) if arguments is not None else {}),
        },
    )


def _encoded_once(arguments: Any) -> Any:
    """Tool arguments JSON-encoded twice (a JSON string holding an object's JSON text, as
    OpenInference's processor writes the AI SDK's) as the object's JSON text; any other
    value as it is."""
    if type(arguments) is not str or arguments[:1] != '"':
        return arguments
    try:
        inner = _json.loads(arguments)
        if type(inner) is str and inner.lstrip()[:1] == "{" and is_mapping(_json.loads(inner)):
            return inner
    except (ValueError, RecursionError):
        pass
    return arguments


def tool_response(call_id: Any, response: Any, name: Any = None) -> LLMToolResponse:
    return build(
        LLMToolResponse,
        {
            "id": as_str(call_id) or "",
            "response": to_json_string(response if response is not None else ""),
            "name": as_str(name),
        },
    )


def openai_tool_call(call: Any) -> LLMToolCall | None:
    """`{id, function: {name, arguments}}` or `{id, name, arguments}` -> LLMToolCall."""
    if not is_mapping(call):
        return None
    function = call.get("function")
    spec = function if is_mapping(function) else call
    return tool_call(call.get("id") or call.get("call_id"), spec.get("name"), spec.get("arguments"))


def tools(definitions: Any, warnings: list[str], what: str) -> list[LLMToolDefinition] | None:
    """Tool definitions in any OpenAI/Anthropic/semconv shape; None when there are none."""
    if is_mapping(definitions):
        definitions = [definitions]
    if not isinstance(definitions, (list, tuple)):
        return None
    try:
        return tool_definitions([d for d in definitions if is_mapping(d)])
    except Exception as exc:  # a malformed schema must not lose the interaction
        warnings.append(f"{what}: unreadable tool definitions ({exc}); skipped")
        return None


def remembered_tools(
    key: Hashable,
    read: Callable[[list[str]], list[LLMToolDefinition] | None],
    warnings: list[str],
    memo: ConversionMemo,
) -> list[LLMToolDefinition] | None:
    """`read(warnings)`, remembered by `key`: the raw attribute values the definitions are
    read from (None: not remembered). An agent offers the same tools on every call, and
    reading them (parsing each JSON schema, validating the definitions, encoding the
    schema back to a string) was a tenth of the converter's time. Same key, same values:
    each call still gets definitions of its own. Reads that warn are not remembered."""
    remembered = memo.tools
    if key is not None:
        known = remembered.get(key)
        if known is not None:
            return [
                build(LLMToolDefinition, {"name": n, "description": d, "parameters": p})
                for n, d, p in known
            ]
    found: list[str] = []
    definitions = read(found)
    warnings.extend(found)
    if key is not None and definitions is not None and not found:
        if len(remembered) >= REMEMBERED_TOOLS:
            remembered.clear()
        remembered[key] = tuple((t.name, t.description, t.parameters) for t in definitions)
    return definitions


def hashable(value: Any) -> Hashable:
    """`value` when it can be a dict key, else None."""
    try:
        hash(value)
    except TypeError:
        return None
    key: Hashable = value
    return key


def message_inputs(
    role: str,
    texts: Sequence[str],
    calls: Sequence[LLMToolCall],
    responses: Sequence[LLMToolResponse],
) -> list[LLMInput]:
    """One message's items in wire form: its text, then its tool calls and tool results.

    A message of a non-assistant role with nothing in it still counts (as empty
    text), as in `models.interactions_from_messages`; an empty assistant message is dropped.
    """
    items: list[LLMInput] = []
    text = _joined(texts)
    if text or (not calls and not responses and role != "assistant"):
        items.append(build(LLMInput, {"role": role, "type": "text", "content": text}))
    for call in calls:
        item = {"role": role or "assistant", "type": "tool_call", "content": call}
        items.append(build(LLMInput, item))
    for response in responses:
        item = {"role": "tool", "type": "tool_response", "content": response}
        items.append(build(LLMInput, item))
    return items


def _joined(texts: Sequence[str]) -> str:
    """The non-empty texts, a line apart."""
    if len(texts) == 1:  # the usual case, without the generator
        return texts[0] or ""
    if not texts:  # (a message of tool calls or results only)
        return ""
    return "\n".join(t for t in texts if t)


def message_outputs(texts: Sequence[str], calls: Sequence[LLMToolCall]) -> list[LLMOutput]:
    items: list[LLMOutput] = []
    text = _joined(texts)
    if text:
        items.append(build(LLMOutput, {"type": "text", "content": text}))
    for call in calls:
        items.append(build(LLMOutput, {"type": "tool_call", "content": call}))
    return items


def openai_message(message: Any) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]:
    """An OpenAI-style message dict -> (role, texts, tool calls, tool results).

    Reads `role`, `content` (string or parts), `tool_calls`, `function_call`, and for
    role `tool` the `tool_call_id` (or `id`, as log-record bodies have it).
    """
    if not is_mapping(message):
        return "user", [text_value(message)] if message is not None else [], [], []
    role = (as_str(message.get("role")) or "user").lower()
    content = message.get("content")
    raw_calls = message.get("tool_calls")
    calls = [c for c in map(openai_tool_call, indexed(raw_calls)) if c] if raw_calls else []
    raw_function_call = message.get("function_call")
    if raw_function_call is not None:
        function_call = openai_tool_call(raw_function_call)
        if function_call is not None:
            calls.append(function_call)
    if role in ("tool", "function"):
        call_id = message.get("tool_call_id") or message.get("id")
        response = tool_response(call_id, text_value(content), message.get("name"))
        return "tool", [], [], [response]
    return role, [text_value(content)] if content is not None else [], calls, []


def openai_message_inputs(message: Any) -> list[LLMInput]:
    return message_inputs(*openai_message(message))


def parts_message(
    message: Any, what: str, warnings: list[str], apart: dict[str, list[str]] | None = None
) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]:
    """A semconv message `{role, parts: [...]}` -> (role, texts, tool calls, tool results).

    A message without `parts` is read as an OpenAI-style message. Reasoning parts are
    left out; with `apart` (for outputs) they go to `apart["reasoning"]` and refusal
    parts to `apart["refusal"]` instead of the texts.
    """
    if not is_mapping(message):
        warnings.append(f"{what}: a message is not an object; skipped")
        return "user", [], [], []
    parts = message.get("parts")
    if parts is None:
        return openai_message(message)
    role = (as_str(message.get("role")) or "user").lower()
    texts: list[str] = []
    calls: list[LLMToolCall] = []
    responses: list[LLMToolResponse] = []
    for part in parts if isinstance(parts, (list, tuple)) else [parts]:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not is_mapping(part):
            continue
        kind = as_str(part.get("type")) or PART_TEXT
        if kind == PART_TEXT:  # the usual part first
            texts.append(text_value(part.get("content", part.get("text"))))
        elif kind == PART_TOOL_CALL:
            calls.append(tool_call(part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == PART_TOOL_RESPONSE:
            result = part["response"] if "response" in part else part.get("result")
            if isinstance(result, list) and all(
                is_mapping(block) and block.get("type") == PART_TEXT for block in result
            ):
                result = text_value(result)  # Anthropic text blocks: the result is their text
            responses.append(tool_response(part.get("id"), result, part.get("name")))
        elif kind in REASONING_PARTS:
            if apart is not None:
                apart.setdefault("reasoning", []).append(text_value(part.get("content")))
        elif kind == PART_REFUSAL and apart is not None:
            apart.setdefault("refusal", []).append(text_value(part.get("content")))
        elif kind in _MEDIA_PARTS:
            modality = as_str(part.get("modality"))
            texts.append(f"[{modality}]" if modality else _MEDIA_PARTS[kind])
        else:
            texts.append(text_value(part.get("content", part.get("text"))))
    if role == "tool" and not responses and texts:
        # A tool message whose parts are plain text: the result of an unnamed call.
        call_id = message.get("tool_call_id") or message.get("id")
        responses.append(tool_response(call_id, "\n".join(texts)))
        texts = []
    return role, texts, calls, responses
