"""Tool runs recognised by their shape, in a trace no row reads a tool span of.

A producer nobody added may record its tool runs on a framework step that carries the
tool's name and arguments under keys of its own (OpenLLMetry's LlamaIndex `call_tool`
task: `tool.name`, `tool.arguments`, and the call's id and result in the event it
returns). This phase, for every producer, reads a step (a span no row reads as anything
but a step) as a tool run when no span of its trace is a tool run or a hand-off by the
table, and the step carries:

- the tool's name: an attribute whose key's last words are `tool name`;
- its arguments, if recorded: an attribute whose key's last words are `tool` and
  `arguments`, `args`, `kwargs`, `input` or `parameters`;
- its call id and result, if recorded: in the JSON object of its recorded output (an
  attribute whose key has a segment ending in `output`), a key whose last words are
  `tool id` or `call id`, and one whose last word is `output` or `result` (its text, or
  the text under such a key one level down, else its JSON).

An argument whose key names an agent (`_agent_names.names_an_agent`: `to_agent`,
`agent_name`) with a name for value says the tool passed the run to that agent: the run
is also a hand-off to it (AgentWorkflow's `handoff(to_agent, reason)`). So is, in a trace
that records no hand-off, the run of any row whose arguments so name another agent of the
trace (the walk's `sort_out`).

No producer's key is listed: the words are the rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracejudge.convert import _json, _tools
from tracejudge.convert._agent_names import is_name, names_an_agent
from tracejudge.convert._memo import ConversionMemo
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Convention, Kind
from tracejudge.models import to_json_string

__all__ = ["SHAPED_TOOL_RUN", "add_shaped_tool_runs", "handoff_target"]

_SEGMENTS = re.compile(r"[.:/]")
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_ARGUMENT_WORDS = frozenset({"arguments", "args", "kwargs", "input", "parameters"})
_RESULT_WORDS = frozenset({"output", "result"})
_CONTENT_WORDS = frozenset({"output", "result", "content", "text"})
#: A JSON key that may name an agent (`to_agent`, `agent_name`, `agentId`): what
#: `handoff_target` then reads properly.
_AGENT_KEY = re.compile(r"[Aa]gent(?:_?[Nn]ame|_?[Ii][Dd])?\"\s*:")
#: The longest output read for a call id and result.
_MAX_OUTPUT = 1_000_000


class ShapedToolRun(Convention):
    """The reader of a step this phase found to be a tool run. Not a row of the table:
    the walk asks the table first, and only its steps and the spans it leaves are looked at."""

    name = "tool run by its shape"

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        return read_tool_run(span.attributes, span.record.start_ns)


SHAPED_TOOL_RUN = ShapedToolRun()


def add_shaped_tool_runs(
    spans: list[SpanRecord],
    readings: dict[str, tuple[SpanView, Convention, str]],
    memo: ConversionMemo,
) -> None:
    """Add a TOOL_RUN reading (`SHAPED_TOOL_RUN`) for each step of `spans` (one trace's)
    shaped like a tool run (see the module's docstring)."""
    if any(kind in _TOOL_KINDS for _, _, kind in readings.values()):
        return
    for span in spans:
        reading = readings.get(span.span_id)
        if reading is not None and reading[2] is not Kind.STEP:
            continue
        if _tool_name(span.attributes) is not None:
            readings[span.span_id] = (SpanView(span, memo), SHAPED_TOOL_RUN, Kind.TOOL_RUN)


_TOOL_KINDS = (Kind.TOOL_RUN, Kind.HANDOFF)


def read_tool_run(attributes: Mapping[str, Any], start_ns: int | None) -> _tools.ToolRun | None:
    """The tool run a step's attributes record, or None (no tool name)."""
    name = _tool_name(attributes)
    if name is None:
        return None
    arguments = next(
        (
            v
            for k, v in attributes.items()
            if _words(k)[-2:-1] == ["tool"] and _last(k) in _ARGUMENT_WORDS
        ),
        None,
    )
    call_id, result = _output_fields(attributes)
    found = _tools.run(name, call_id, result, arguments, start_ns)
    if found is not None:
        found.handoff_to = handoff_target(arguments)
    return found


def _words(key: str) -> list[str]:
    return [w.lower() for segment in _SEGMENTS.split(key) for w in _WORDS.findall(segment)]


def _last(key: str) -> str | None:
    words = _words(key)
    return words[-1] if words else None


def _tool_name(attributes: Mapping[str, Any]) -> str | None:
    for key, value in attributes.items():
        if isinstance(value, str) and _names_a_tool(key) and value.strip():
            return value.strip()
    return None


#: Whether each attribute key seen names a tool (`_names_a_tool`), remembered.
_NAMES_A_TOOL: dict[str, bool] = {}
_NAMES_A_TOOL_CAP = 4096


def _names_a_tool(key: str) -> bool:
    """Whether the key's last words are `tool name` (asked of every step's keys: cached)."""
    found = _NAMES_A_TOOL.get(key)
    if found is None:
        found = _words(key)[-2:] == ["tool", "name"]
        if len(_NAMES_A_TOOL) < _NAMES_A_TOOL_CAP:  # (full: asked again, never cleared)
            _NAMES_A_TOOL[key] = found
    return found


def _output_fields(attributes: Mapping[str, Any]) -> tuple[str | None, Any]:
    """(call id, result) of the JSON object a step's output records."""
    for key, raw in attributes.items():
        if not isinstance(raw, str) or raw[:1] != "{" or len(raw) > _MAX_OUTPUT:
            continue
        if not any(s.lower().endswith("output") for s in _SEGMENTS.split(key)):
            continue
        try:
            value = _json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(value, Mapping):
            continue
        call_id = next(
            (
                v
                for k, v in value.items()
                if _words(str(k))[-2:] in (["tool", "id"], ["call", "id"])
            ),
            None,
        )
        result = next((v for k, v in value.items() if _last(str(k)) in _RESULT_WORDS), None)
        if isinstance(result, Mapping):
            inner = [v for k, v in result.items() if _last(str(k)) in _CONTENT_WORDS]
            result = next((v for v in inner if isinstance(v, str)), to_json_string(result))
        if call_id is not None or result is not None:
            return (call_id if isinstance(call_id, str) else None), result
    return None, None


def handoff_target(arguments: Any) -> str | None:
    """The agent the arguments pass the run to: the value of a key that names an agent."""
    if isinstance(arguments, str) and _AGENT_KEY.search(arguments) is None:
        return None  # (the usual case: no key that may name an agent)
    try:
        value = _json.loads(arguments) if isinstance(arguments, str) else arguments
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, Mapping):
        return None
    names = {v.strip() for k, v in value.items() if names_an_agent(str(k)) and is_name(v)}
    return names.pop() if len(names) == 1 else None
