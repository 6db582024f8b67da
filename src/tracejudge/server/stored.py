"""A stored trace and its answers, read back: the trace parsed and validated fast
(`read_trace`), its newest answer per criterion (`latest_answers`), and the cycle
collector paused while a big one is read and drawn (`collection_paused`). The trace page
and the attribution API read stored traces this way."""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator, Sequence
from typing import Any

from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.server.store import EvaluationRow

__all__ = ["collection_paused", "latest_answers", "read_trace", "repeated_input_text"]

_KEY = '"input_messages":['
_DECODER = json.JSONDecoder()
#: What stands, in the trimmed text, for the previous call's input messages.
_MARK = "0"


def latest_answers(rows: Sequence[EvaluationRow]) -> list[MultiAgentTraceResponse]:
    """The trace's newest answer per criterion, in the order criteria were first scored."""
    latest: dict[str, MultiAgentTraceResponse] = {}
    for row in rows:  # oldest first
        if row.kind == "trace":
            latest[row.criterion] = MultiAgentTraceResponse.model_validate_json(row.response)
    return list(latest.values())


def read_trace(text: str) -> MultiAgentTrace:
    """A stored trace, parsed and validated in time linear in what its calls add to the
    conversation (the trace `from_json` gives).

    A chat agent resends its whole conversation on every call, so a stored trace holds
    each message about as many times as the agent made calls after it: its JSON grows
    with the square of an agent's calls (an agent of 32 calls: 500 copies of 60
    messages). Where a call's input messages start with, character for character, the
    previous call's (`repeated_input_text`), that part is neither parsed nor validated
    again: the previous call's validated messages are shared in front of the new ones.
    """
    trimmed = repeated_input_text(text)
    data = json.loads(trimmed[0] if trimmed is not None else text)
    repeated = _take_marks(data, trimmed[1]) if trimmed is not None else None
    if repeated is None and trimmed is not None:
        data = json.loads(text)  # the trimmed text was not read as expected: read it all
    trace = MultiAgentTrace.model_validate(data)
    if repeated:
        _share_repeated_inputs(trace, repeated, data)
    return trace


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


def _take_marks(data: Any, marks: list[bool]) -> dict[int, int] | None:
    """Drop the marks `repeated_input_text` left in the parsed trace; returns, for each
    trimmed interaction (by id), that it repeats the previous call's input. None when the
    calls found do not match the marks one for one."""
    repeated: dict[int, int] = {}
    k = 0
    for interactions in _raw_interactions(data):
        for item in interactions:
            inputs = item.get("input_messages") if isinstance(item, dict) else None
            if not isinstance(inputs, list):
                continue
            if k >= len(marks):
                return None
            if marks[k]:
                if not inputs or inputs[0] != 0:
                    return None
                item["input_messages"] = inputs[1:]
                repeated[id(item)] = 1
            k += 1
    return repeated if k == len(marks) else None


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


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cycle collector paused while a stored trace is read and drawn: the
    millions of containers that JSON parsing makes hold no cycles, yet each full
    collection walks them all (half the time of a 5,000-span trace's page). Concurrent
    readers never leave it off: the reader that found it on turns it back on when done."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
