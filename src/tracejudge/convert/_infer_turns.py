"""Agents named only in the events their steps return: turns, for every producer.

A framework that runs its agents' steps side by side, with no span per agent, may name
the agent whose turn it is only in the event a step returns (LlamaIndex's `AgentWorkflow`
steps return `AgentInput(..., current_agent_name='triage')`, recorded as a Python repr or
a JSON object). This phase, for every producer, reads such a step as a turn (`Kind.TURN`:
the agent it names runs the step and its later siblings, up to a turn of another agent;
see `_agents`) when:

- no span of the trace is a turn by the table, no agent span lies below the step's
  parent (a producer that names its agents on spans is read by those; an agent or a
  workflow around the steps, the program's own, names none of them), and no row calls
  the step anything but a step;
- the step's recorded output (an attribute whose key has a segment ending in `output`) is
  a JSON object with a key that names an agent (`_agent_names.names_an_agent`: its last
  words `agent`, `agent name`, `agent id`), or a repr whose `key='value'` fields that
  name an agent name one agent; its value a name (`_agent_names`' rule: short text, not
  JSON, not a generated id). A field nested deeper (an answer that quotes its agent) is
  not read: the event is the step's own;
- the step holds no model call, and one lies below the step's parent, starting after
  the step does (the turn sits beside its agent's calls, not around them).

No producer's key is listed: the words are the rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracejudge.convert import _json
from tracejudge.convert._agent_names import MAX_NAME, is_name, names_an_agent
from tracejudge.convert._memo import ConversionMemo
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Convention, Identity, Kind

__all__ = ["NAMED_TURN", "add_named_turns"]

_SEGMENTS = re.compile(r"[.:/]")
#: A repr's `key='value'` field (Python's repr of a str, without a quote inside).
_REPR_FIELD = re.compile(rf"([A-Za-z_][A-Za-z0-9_]*)='([^'\\\n]{{1,{MAX_NAME}}})'")
#: The longest output read for the agent it names.
_MAX_OUTPUT = 65536


class NamedTurn(Convention):
    """The reader of a step this phase found to be a turn. Not a row of the table: the
    walk asks the table first, and only its steps and the spans it leaves are looked at."""

    name = "agent turn named in a step's output"

    def agent(self, span: SpanView) -> Identity:
        return None, turn_agent(span.attributes) or span.name


NAMED_TURN = NamedTurn()


def add_named_turns(
    spans: list[SpanRecord],
    readings: dict[str, tuple[SpanView, Convention, str]],
    memo: ConversionMemo,
) -> None:
    """Add a TURN reading (`NAMED_TURN`) for each step of `spans` (one trace's, in start
    order) whose output names the agent whose turn it is (see the module's docstring)."""
    if any(kind is Kind.TURN for _, _, kind in readings.values()):
        return
    by_id = {span.span_id: span for span in spans}
    calls = [by_id[s] for s, r in readings.items() if r[2] is Kind.MODEL_CALL and s in by_id]
    around_calls = _around(calls, by_id)
    if not around_calls:
        return
    # (a turn's step sits beside its agent's calls, not around them)
    named = [
        span
        for span in spans
        if span.parent_id in around_calls
        and span.span_id not in around_calls
        and _is_step(span.span_id, readings)
        and turn_agent(span.attributes) is not None
    ]
    if not named:
        return
    around_agents = _around(
        [by_id[s] for s, r in readings.items() if r[2] is Kind.AGENT and s in by_id], by_id
    )
    for span in named:
        if span.parent_id in around_agents:
            continue  # (its producer names the agents beside it on spans)
        if any(_below_after(call, span, by_id) for call in calls):
            readings[span.span_id] = (SpanView(span, memo), NAMED_TURN, Kind.TURN)


def _around(below: list[SpanRecord], by_id: Mapping[str, SpanRecord]) -> set[str]:
    """The span ids of the spans with one of `below` below them."""
    around: set[str] = set()
    for span in below:
        parent_id = span.parent_id
        while parent_id and parent_id not in around:
            around.add(parent_id)
            parent = by_id.get(parent_id)
            parent_id = parent.parent_id if parent is not None else None
    return around


def _is_step(span_id: str, readings: Mapping[str, tuple[SpanView, Convention, str]]) -> bool:
    reading = readings.get(span_id)
    return reading is None or reading[2] is Kind.STEP


def turn_agent(attributes: Mapping[str, Any]) -> str | None:
    """The agent a step's recorded output names, or None."""
    for key, value in attributes.items():
        if not isinstance(value, str) or len(value) > _MAX_OUTPUT or not _is_output(key):
            continue
        if _AGENT_FIELD.search(value) is None:
            continue  # (the usual case: no field whose key may name an agent)
        name = _named_in(value)
        if name is not None:
            return name
    return None


#: A field whose key may name an agent (`agent`, `agent_name`, `agentId`), as a JSON key
#: or a repr's keyword: what `_named_in` then reads properly.
_AGENT_FIELD = re.compile(r"[Aa]gent(?:_?[Nn]ame|_?[Ii][Dd])?(?:\"\s*:|=')")
#: Whether each attribute key seen holds an output (`_is_output`), remembered.
_OUTPUT_KEYS: dict[str, bool] = {}
_OUTPUT_KEYS_CAP = 4096


def _is_output(key: str) -> bool:
    found = _OUTPUT_KEYS.get(key)
    if found is None:
        found = any(segment.lower().endswith("output") for segment in _SEGMENTS.split(key))
        if len(_OUTPUT_KEYS) < _OUTPUT_KEYS_CAP:  # (full: asked again, never cleared)
            _OUTPUT_KEYS[key] = found
    return found


def _named_in(text: str) -> str | None:
    """The one agent a JSON object's keys or a repr's fields name, or None."""
    if text[:1] == "{":
        try:
            value = _json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, Mapping):
            return None
        names = {v.strip() for k, v in value.items() if names_an_agent(str(k)) and is_name(v)}
    else:
        names = {v for k, v in _REPR_FIELD.findall(text) if names_an_agent(k) and is_name(v)}
    return names.pop() if len(names) == 1 else None


def _below_after(call: SpanRecord, step: SpanRecord, by_id: Mapping[str, SpanRecord]) -> bool:
    """Whether `call` lies below the step's parent and starts no earlier than the step."""
    if step.parent_id is None or call.start_ns is None or step.start_ns is None:
        return False
    if call.start_ns < step.start_ns:
        return False
    seen = {call.span_id}
    parent_id = call.parent_id
    while parent_id and parent_id not in seen:
        if parent_id == step.parent_id:
            return True
        seen.add(parent_id)
        parent = by_id.get(parent_id)
        if parent is None:
            return False
        parent_id = parent.parent_id
    return False
