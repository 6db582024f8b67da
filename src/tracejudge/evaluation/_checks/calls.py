"""What became of each tool call of an agent: invalid, answered (ok or an error), without a
result, or unknown. `tool_arguments`, `tool_results`, `loops`, `grounded_numbers` and
`final_answer` all read it, so that one fault is flagged by one check.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from tracejudge.evaluation._checks.run import Run
from tracejudge.evaluation._checks.schema import type_name, validate
from tracejudge.evaluation._checks.text import empty_result, short, tool_error
from tracejudge.models import LLMToolCall, LLMToolDefinition, LLMToolResponse

__all__ = ["CallOutcome", "call_outcomes"]

#: A hosted tool entry under which a server offers tools the trace does not list by name.
_TOOL_SERVERS = frozenset({"mcp"})


def _tool_problem(
    call: LLMToolCall,
    tools: dict[str, LLMToolDefinition],
    fallback: dict[str, LLMToolDefinition],
    children: frozenset[str] = frozenset(),
    *,
    arguments_known: bool = True,
) -> str | None:
    """Why a call is invalid, or None. `tools` are the interaction's (availability is
    checked only when there are some); `fallback` the agent's other interactions' tools,
    for the schema where the interaction recorded none; `children` the names of the child
    agents the agent ran, which it may call as tools (smolagents' managed agents, which
    OpenInference leaves out of the recorded tools). Without `arguments_known` only the
    tool's availability is checked."""
    tool = tools.get(call.name) or tools.get(f"{call.name}_preview")
    known = call.name in children or bool(_TOOL_SERVERS & tools.keys())
    if tools and tool is None and not known:
        available = ", ".join(sorted(tools))
        return f"names tool {call.name!r}, which was not available (available: {available})"
    if not arguments_known:
        return None
    raw = call.parameters
    try:
        arguments: Any = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return f"arguments are not valid JSON ({exc}): {short(raw, 60)!r}"
    if arguments is None:
        arguments = {}  # "null": no arguments
    if not isinstance(arguments, dict):
        kind = type_name(arguments)
        return f"arguments are a JSON {kind}, not an object: {short(raw, 60)!r}"
    tool = tool or (None if tools else fallback.get(call.name))
    schema = tool.schema_dict() if tool is not None else None
    if schema is None:
        return None  # no usable schema: nothing more to check against
    errors = validate(arguments, schema)
    if errors:
        return "arguments do not match the tool's schema: " + "; ".join(errors)
    return None


@dataclass(frozen=True)
class CallOutcome:
    index: int
    call: LLMToolCall
    #: invalid: the call itself is invalid (tool_arguments' finding); ok / error: it got a
    #: result that is / is not an error (in a later input, or recorded by a tool span in
    #: `LLMInteraction.tool_results`); missing: no result although the agent went on;
    #: unanswered: a call in the agent's last interaction without a recorded result (it
    #: stopped or handed off there; final_answer's concern); unknown: the later inputs do
    #: not repeat the conversation (not even the call), so whether a result came cannot
    #: be told.
    status: Literal["invalid", "ok", "error", "missing", "unanswered", "unknown"]
    detail: str = ""
    result_index: int | None = None
    #: ok only: the result found nothing (an empty list, "No results").
    empty: bool = False

    @property
    def counted(self) -> bool:
        """Whether tool_results judges this call."""
        return self.status in ("ok", "error", "missing")


@dataclass
class _Appearances:
    """Where later inputs carry tool results and replay the agent's calls, by call id."""

    #: call id -> the interactions whose inputs carry a result for it (ascending), and
    #: those results.
    results: dict[str, tuple[list[int], list[LLMToolResponse]]] = field(default_factory=dict)
    #: call id -> the last interaction whose inputs replay the call.
    replays: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, run: Run) -> _Appearances:
        seen = cls()
        for j, turn in enumerate(run.turns):
            for message in (*turn.replayed, *turn.new):
                content = message.content
                if isinstance(content, LLMToolResponse):
                    where, responses = seen.results.setdefault(content.id, ([], []))
                    where.append(j)
                    responses.append(content)
                elif isinstance(content, LLMToolCall):
                    seen.replays[content.id] = j
        return seen

    def result_after(self, call_id: str, index: int) -> tuple[int, LLMToolResponse] | None:
        """The first result for the call in the inputs of an interaction after `index`."""
        where, responses = self.results.get(call_id, ([], []))
        k = bisect.bisect_right(where, index)  # ids may be reused: take the next one
        return (where[k], responses[k]) if k < len(where) else None

    def replayed_after(self, call_id: str, index: int) -> bool:
        return self.replays.get(call_id, -1) > index


def _find_outcomes(run: Run) -> list[CallOutcome]:
    agent_tools: dict[str, LLMToolDefinition] = {}
    for interaction in run.llm:
        for tool in interaction.tools_available or []:
            agent_tools.setdefault(tool.name, tool)
    children = frozenset(
        child.name
        for child_id in run.agent.child_ids
        if (child := run.trace.agent_instance_by_id.get(child_id)) is not None
    )
    seen: _Appearances | None = None
    last = len(run.llm) - 1
    outcomes: list[CallOutcome] = []
    for i, interaction in enumerate(run.llm):
        calls = interaction.tool_calls
        if not calls:
            continue
        tools = {tool.name: tool for tool in interaction.tools_available or []}
        # Results the tool spans recorded where no later input carries them.
        recorded = {result.id: result for result in interaction.tool_results or []}
        # A call made where no message was recorded (content capture off) is known from its
        # tool span; with no arguments there (`{}`), they were not recorded, not empty.
        unrecorded = not interaction.input_messages
        for call in calls:
            known = not (unrecorded and call.parameters == "{}")
            problem = _tool_problem(call, tools, agent_tools, children, arguments_known=known)
            if problem:
                outcomes.append(CallOutcome(i, call, "invalid", problem))
                continue
            found: tuple[int, LLMToolResponse] | None = None
            if i != last:
                seen = seen or _Appearances.of(run)
                found = seen.result_after(call.id, i)
            if found is None and call.id in recorded:
                found = (i, recorded[call.id])
            if found is None and i == last:
                detail = (
                    f"child agent {run.handed_off_to} ran after it"
                    if run.handed_off_to
                    else "the agent stopped after this call"
                )
                outcomes.append(CallOutcome(i, call, "unanswered", detail))
                continue
            if found is None:
                seen = seen or _Appearances.of(run)
                if seen.replayed_after(call.id, i):
                    detail = "the agent went on without it"
                    outcomes.append(CallOutcome(i, call, "missing", detail))
                else:
                    detail = "the later inputs do not repeat the conversation"
                    outcomes.append(CallOutcome(i, call, "unknown", detail))
                continue
            j, response = found
            reason = tool_error(response.response)
            if reason:
                outcomes.append(CallOutcome(i, call, "error", reason, j))
            else:
                empty = empty_result(response.response)
                outcomes.append(CallOutcome(i, call, "ok", "", j, empty))
    return outcomes


def call_outcomes(run: Run) -> list[CallOutcome]:
    """The outcome of each of the agent's tool calls, in order; worked out once per agent
    and `evaluate(trace)` call (kept in `run.memo`)."""
    key = ("calls.outcomes", id(run.agent))
    if key not in run.memo:
        run.memo[key] = _find_outcomes(run)
    outcomes: list[CallOutcome] = run.memo[key]
    return outcomes
