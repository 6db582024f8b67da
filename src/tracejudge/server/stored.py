"""A stored trace and its answers, read back: the trace validated fast (`read_trace`),
its newest answer per criterion (`latest_answers`), and the cycle collector paused while
a big one is read and drawn (`collection_paused`). The trace page and the attribution
API read stored traces this way."""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator, Sequence
from typing import Any

from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.server.store import EvaluationRow

__all__ = ["collection_paused", "latest_answers", "read_trace"]


def latest_answers(rows: Sequence[EvaluationRow]) -> list[MultiAgentTraceResponse]:
    """The trace's newest answer per criterion, in the order criteria were first scored."""
    latest: dict[str, MultiAgentTraceResponse] = {}
    for row in rows:  # oldest first
        if row.kind == "trace":
            latest[row.criterion] = MultiAgentTraceResponse.model_validate_json(row.response)
    return list(latest.values())


def read_trace(text: str) -> MultiAgentTrace:
    """A stored trace, validated in time linear in what its calls add to the conversation.

    A chat agent resends its whole conversation on every call, so a stored trace holds
    each message about as many times as the agent made calls after it (an agent of 32
    calls: 500 copies of 60 messages), and validating every copy took seconds on a
    5,000-span trace. Where a call's input starts with the previous call's input (exactly:
    the same JSON), only its new messages are validated, and the previous call's
    validated messages are shared in front of them. The trace is the one `from_json`
    gives.
    """
    data = json.loads(text)
    repeated: dict[int, int] = {}  # id of a trimmed interaction -> messages trimmed
    for interactions in _raw_interactions(data):
        previous: list[Any] = []
        for item in interactions:
            inputs = item.get("input_messages") if isinstance(item, dict) else None
            if not isinstance(inputs, list):
                continue
            n = len(previous)
            if 0 < n <= len(inputs) and inputs[:n] == previous:
                item["input_messages"] = inputs[n:]
                repeated[id(item)] = n
            previous = inputs
    trace = MultiAgentTrace.model_validate(data)
    if repeated:
        _share_repeated_inputs(trace, repeated, data)
    return trace


def _raw_interactions(data: Any) -> list[list[Any]]:
    """Each agent's `interactions` list in a trace's parsed JSON (none when it is not a
    trace: validation then says what is wrong)."""
    agents = data.get("agent_instance_by_id") if isinstance(data, dict) else None
    if not isinstance(agents, dict):
        return []
    found = [a.get("interactions") for a in agents.values() if isinstance(a, dict)]
    return [i for i in found if isinstance(i, list)]


def _share_repeated_inputs(
    trace: MultiAgentTrace, repeated: dict[int, int], data: dict[str, Any]
) -> None:
    """Put back, in front of each trimmed call's input, the previous call's messages."""
    for agent_id, agent in trace.agent_instance_by_id.items():
        raw = data["agent_instance_by_id"][agent_id]["interactions"]
        previous: list[Any] = []
        for item, model in zip(raw, agent.interactions, strict=True):
            if isinstance(model, str):
                continue
            n = repeated.get(id(item))
            if n is not None:
                model.input_messages = previous[:n] + model.input_messages
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
