"""A trace's stored text: written with each call's repeat of the previous call's input left
out (`stored_text`), read back as the trace (`read_trace`) or as its whole JSON
(`trace_data`).

A chat agent resends its whole conversation on every call, so a trace's JSON holds each
message about as many times as the agent made calls after it: it grows with the square of
an agent's calls (20,000 spans of 100-call agents: 325 MB, of which 20 MB is new). The
stored text leaves those repeats out: where a call's `input_messages` start, character for
character, with the previous call's (the previous in the text's order), they are written
as one `0` in front of the new messages, and the text starts with `{"shared_inputs":1,`
so that a reader that does not know this form fails on that key instead of misreading
it. Texts stored before (the plain `to_json`) are still read: their repeats are found as
they are read. The trace model, and every JSON the server answers with, are the whole
trace as `MultiAgentTrace.to_json` writes it.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from tracejudge.models import MultiAgentTrace

orjson: ModuleType | None
try:
    import orjson
except ImportError:  # the server's extra brings it; without it, json
    orjson = None

__all__ = ["read_trace", "repeated_input_text", "stored_text", "trace_data"]

_KEY = '"input_messages":['
_DECODER = json.JSONDecoder()
#: What stands, in a trimmed text, for the previous call's input messages.
_MARK = "0"
#: How a stored text with its repeats left out starts (the plain JSON's `{` replaced).
_HEAD = '{"shared_inputs":1,'
_FORM_KEY = "shared_inputs"


def stored_text(trace: MultiAgentTrace) -> str:
    """The text the store keeps for `trace`: its JSON with each call's repeat of the
    previous call's input messages left out (the JSON itself when nothing repeats)."""
    text = trace.to_json()
    trimmed = repeated_input_text(text)
    return text if trimmed is None else _HEAD + trimmed[0][1:]


def read_trace(text: str) -> MultiAgentTrace:
    """A stored trace (either form), parsed and validated in time linear in what its
    calls add to the conversation: the trace `MultiAgentTrace.from_json` gives of its
    whole JSON, each call's repeat of the previous call's messages shared, not copied."""
    if text.startswith(_HEAD):
        data = _parsed(text)
        del data[_FORM_KEY]
        repeated = _take_marks(data)
    else:
        trimmed = repeated_input_text(text)
        data = _parsed(trimmed[0] if trimmed is not None else text)
        repeated = _take_marks(data, trimmed[1]) if trimmed is not None else None
        if repeated is None and trimmed is not None:
            data = json.loads(text)  # the trimmed text was not read as expected: read it all
    trace = MultiAgentTrace.model_validate(data)
    if repeated:
        _share_repeated_inputs(trace, repeated, data)
    return trace


def trace_data(text: str) -> dict[str, Any]:
    """A stored trace's whole JSON, parsed (what `json.loads(trace.to_json())` gives): the
    left-out repeats put back (as the same objects, not copies)."""
    data: dict[str, Any] = _parsed(text)
    if not text.startswith(_HEAD):
        return data
    del data[_FORM_KEY]
    previous: list[Any] = []
    for interactions in _raw_interactions(data):
        for item in interactions:
            inputs = item.get("input_messages") if isinstance(item, dict) else None
            if not isinstance(inputs, list):
                continue
            if _marked(inputs):
                inputs = item["input_messages"] = previous + inputs[1:]
            previous = inputs
    return data


def _parsed(text: str) -> Any:
    """JSON text parsed: by orjson when installed (0.09 s for a 20 MB stored trace against
    0.15 s), else, and for what orjson refuses (a NaN, a number past 64 bits), by json,
    which says what is wrong when it is not JSON."""
    if orjson is not None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def repeated_input_text(text: str) -> tuple[str, list[bool]] | None:
    """The trace's JSON with each call's repeated input left out, and, for each call's
    `input_messages` in the order they are written, whether it was; None when nothing
    repeats or the text is not laid out as `MultiAgentTrace.to_json` writes it.

    Where a call's `input_messages` array starts with the previous one's elements (the
    same characters, followed by `,` or `]`), those are replaced by one `0`. The text is
    compared, not parsed: the work is linear in the new messages, plus a byte comparison
    of the repeated ones. A key counts only where a `{` or `,` comes before its quote
    (inside a JSON string every quote follows a backslash).
    """
    pieces: list[str] = []
    marks: list[bool] = []
    copied = 0  # text before this is in `pieces`
    previous = ""  # the previous call's elements, as text
    at = text.find(_KEY)
    try:
        while at != -1:
            if at == 0 or text[at - 1] not in "{,":
                at = text.find(_KEY, at + 1)
                continue
            start = at + len(_KEY)  # the first element
            repeats = (
                previous != ""
                and text.startswith(previous, start)
                and text[start + len(previous)] in ",]"
            )
            if repeats:
                rest = start + len(previous)
                end = _array_end(text, rest + 1) if text[rest] == "," else rest
                pieces.append(text[copied:start])
                pieces.append(_MARK)
                copied = rest
            else:
                end = _array_end(text, start)
            marks.append(repeats)
            previous = text[start:end]
            at = text.find(_KEY, end)
    except (ValueError, IndexError):
        return None  # not JSON as expected: the plain parse says what is wrong
    if not any(marks):
        return None
    pieces.append(text[copied:])
    return "".join(pieces), marks


def _array_end(text: str, at: int) -> int:
    """Where the elements of a compact JSON array that go on at `at` end (the index of
    its closing `]`)."""
    if text[at] == "]":
        return at
    while True:
        _, at = _DECODER.raw_decode(text, at)
        if text[at] == "]":
            return at
        if text[at] != ",":
            raise ValueError(f"not a compact JSON array at {at}")
        at += 1


def _marked(inputs: list[Any]) -> bool:
    """Whether a call's parsed input messages start with the mark of a left-out repeat
    (the number 0: no message is a number)."""
    return bool(inputs) and type(inputs[0]) is int and inputs[0] == 0


def _take_marks(data: Any, marks: list[bool] | None = None) -> dict[int, int] | None:
    """Drop the marks of left-out repeats from a parsed trace; returns, for each trimmed
    interaction (by id), that it repeats the previous call's input. With `marks` (what
    `repeated_input_text` found, call by call): None when the calls found do not match
    them one for one."""
    repeated: dict[int, int] = {}
    k = 0
    for interactions in _raw_interactions(data):
        for item in interactions:
            inputs = item.get("input_messages") if isinstance(item, dict) else None
            if not isinstance(inputs, list):
                continue
            if marks is not None:
                if k >= len(marks):
                    return None
                if marks[k] and not _marked(inputs):
                    return None
            if _marked(inputs) and (marks is None or marks[k]):
                item["input_messages"] = inputs[1:]
                repeated[id(item)] = 1
            k += 1
    return repeated if marks is None or k == len(marks) else None


def _raw_interactions(data: Any) -> list[list[Any]]:
    """Each agent's `interactions` list in a trace's parsed JSON, in the text's order (none
    when it is not a trace: validation then says what is wrong)."""
    agents = data.get("agent_instance_by_id") if isinstance(data, dict) else None
    if not isinstance(agents, dict):
        return []
    found = [a.get("interactions") for a in agents.values() if isinstance(a, dict)]
    return [i for i in found if isinstance(i, list)]


def _share_repeated_inputs(
    trace: MultiAgentTrace, repeated: dict[int, int], data: dict[str, Any]
) -> None:
    """Put back, in front of each trimmed call's input, the previous call's messages (the
    previous in the text's order, which may be another agent's)."""
    previous: list[Any] = []
    for agent_id, agent in trace.agent_instance_by_id.items():
        raw = data["agent_instance_by_id"][agent_id]["interactions"]
        for item, model in zip(raw, agent.interactions, strict=True):
            if isinstance(model, str):
                continue
            if id(item) in repeated:
                model.input_messages = previous + model.input_messages
            previous = model.input_messages
