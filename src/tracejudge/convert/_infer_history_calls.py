"""Tool calls a call made that only the agent's next input records: a phase of the walk that
applies to every producer.

A model call that finished for tool calls may record none in its answer (LiteLLM's GenAI
output messages write a tool-call answer as an empty message, `"parts": []`), with no tool
span to supply them (a program that runs its tools untraced). The agent's next call hands
the conversation back: its input repeats the inputs of the call that made the calls, then
shows the assistant's message with them (ids, names, arguments), then their results.

Such calls join the answer of the call that made them when its agent's later calls'
inputs start with that call's inputs and go on with tool calls (the calls up to the next
message that is no tool call), all the same ones: calls made side by side from one
prompt, each followed up apart, show different calls, and none is given. Nothing is read
from a later call whose inputs do not repeat the maker's (another conversation), and a
call is given to one maker only.

Where no next input shows them (the call is its agent's last, or a trace of its own), the
call's span may still name them under indexed keys of the legacy `function_call` shape
(`<prefix>.completion.<i>.function_call.name` / `.arguments`, which LiteLLM writes beside
its GenAI messages): one call per index, with no id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracejudge.convert._common import FINISH_TOOL_CALLS, tool_call
from tracejudge.convert._construct import build
from tracejudge.models import LLMInput, LLMInteraction, LLMOutput, LLMToolCall

__all__ = ["join_calls_from_history", "join_calls_from_keys"]

#: (an index of at most 6 digits: a longer one names no call, and `int` refuses 4,300)
_FUNCTION_CALL_KEY = re.compile(r"(?:.*\.)?completion\.(\d{1,6})\.function_call\.(name|arguments)")


#: How many of the agent's next calls are read for a call's follow-up (each is compared
#: message by message: all of an agent's calls would be quadratic in them).
_FOLLOW_UPS = 8


def join_calls_from_history(interactions: list[LLMInteraction]) -> None:
    """Give each of the agent's `interactions` (in order) that finished for tool calls and
    records none the calls its later interactions' inputs show after its own inputs, when
    they all show the same ones (calls made side by side from one prompt, each followed
    up apart, show different ones: none is given) and no other call was given them."""
    given: set[str] = set()  # the ids of the calls given so far
    for position, maker in enumerate(interactions):
        if maker.finish_reason != FINISH_TOOL_CALLS or maker.tool_calls:
            continue
        shown = [
            calls
            for later in interactions[position + 1 : position + 1 + _FOLLOW_UPS]
            if (calls := _calls_after(maker.input_messages, later.input_messages))
        ]
        if not shown or len({tuple(map(_call_key, calls)) for calls in shown}) != 1:
            continue
        if any(call.id and call.id in given for call in shown[0]):
            continue
        for call in shown[0]:
            given.add(call.id)
            item = build(LLMOutput, {"type": "tool_call", "content": call})
            maker.output_messages.append(item)


def _call_key(call: LLMToolCall) -> tuple[str, str, str]:
    return call.id, call.name, call.parameters


def _calls_after(made: list[LLMInput], later: list[LLMInput]) -> list[LLMToolCall]:
    """The tool calls `later` shows right after repeating `made` (none when it does not)."""
    if not made or len(later) <= len(made):
        return []
    if any(_key(a) != _key(b) for a, b in zip(made, later[: len(made)], strict=True)):
        return []
    calls = []
    for message in later[len(made) :]:
        if not isinstance(message.content, LLMToolCall):
            break
        calls.append(message.content)
    return calls


def _key(message: LLMInput) -> tuple[str, object]:
    content = message.content
    return message.role, content if isinstance(content, str) else content.model_dump_json()


def join_calls_from_keys(
    interactions: list[LLMInteraction], attributes: Mapping[str, Mapping[str, Any]]
) -> None:
    """Give each of `interactions` that finished for tool calls and records none the calls
    its span's indexed `function_call` keys name (`attributes`: by span id)."""
    for interaction in interactions:
        if interaction.finish_reason != FINISH_TOOL_CALLS or interaction.tool_calls:
            continue
        found: dict[int, dict[str, Any]] = {}
        for key, value in attributes.get(interaction.span_id or "", {}).items():
            match = _FUNCTION_CALL_KEY.fullmatch(key)
            if match is not None:
                found.setdefault(int(match.group(1)), {})[match.group(2)] = value
        for _, named in sorted(found.items()):
            if named.get("name"):
                call = tool_call(None, named["name"], named.get("arguments"))
                item = build(LLMOutput, {"type": "tool_call", "content": call})
                interaction.output_messages.append(item)
