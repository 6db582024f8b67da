"""What the judge reads: a conversation or one agent's run, written out as a transcript.

Both `Composo.evaluate()` (a chat conversation) and `Composo.evaluate_trace()`
(each agent instance of a trace) come here, so a conversation and a trace of
the same exchange read the same way. A transcript shows, in order:

- the tools that were available (name, description, JSON schema), once;
- every message once: system/user/assistant text, tool calls (name, id,
  arguments) and tool results (matched to their call by id); a refusal headed
  as one (`assistant refuses`), and a call that ended unusually (cut off at the
  token limit, stopped by a content filter) said so after its output;
- child agents as calls, with their final output (their own work is judged
  separately);
- which entries are judged, marked `[judged]`; the rest is context.

Each `LLMInteraction` of an agent repeats, as its input, the history before it.
The transcript is linear in the trace: the part of an interaction's input that
repeats what was already written (the previous interaction's input and
outputs) is skipped, so every message is written once, not once per call.
What counts as repeated is decided by `_history.new_messages`, which the
deterministic checks use too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tracejudge.errors import BadRequestError
from tracejudge.evaluation._endings import unusual_ending
from tracejudge.evaluation._history import new_messages, normal_json
from tracejudge.models import (
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
    MultiAgentTrace,
    Step,
    interactions_from_messages,
)

__all__ = [
    "JUDGED_MARK",
    "RenderedContent",
    "conversation_agent",
    "render_conversation",
    "render_agent",
]

#: Suffix on the header of every entry the judge must evaluate.
JUDGED_MARK = "[judged]"
#: How a refusal is headed: the model's refusal, not an answer it wrote.
REFUSAL_ROLE = "assistant refuses"

_EntryKind = Literal["message", "call", "result", "agent", "note"]


@dataclass
class _Entry:
    kind: _EntryKind
    role: str = ""
    text: str = ""
    call: LLMToolCall | None = None
    result: LLMToolResponse | None = None
    child: AgentInstance | None = None
    child_id: str = ""
    #: Produced by the agent being judged (an output of one of its model calls).
    own: bool = False
    #: Index of the model call that produced it (outputs only).
    turn: int = -1
    judged: bool = False


@dataclass
class RenderedContent:
    """A transcript ready for a `JudgeRequest`: the `content` and the `target` phrase.

    `judged` counts the entries marked for evaluation; with none there is
    nothing to judge.
    """

    content: str
    target: str
    judged: int = 0
    entries: int = field(default=0, repr=False)


# --------------------------------------------------------------------------- entries


def _input_entry(message: LLMInput) -> _Entry:
    content = message.content
    if isinstance(content, LLMToolCall):
        return _Entry("call", role=message.role or "assistant", call=content)
    if isinstance(content, LLMToolResponse):
        return _Entry("result", role="tool", result=content)
    return _Entry("message", role=message.role or "user", text=content)


def _entries(agent: AgentInstance, trace: MultiAgentTrace | None) -> list[_Entry]:
    """The agent's interactions as one linear list, repeated history dropped."""
    entries: list[_Entry] = []
    turns = new_messages(agent.llm_interactions)
    turn = 0
    for item in agent.interactions:
        if isinstance(item, str):
            child = trace.agent_instance_by_id.get(item) if trace is not None else None
            entries.append(_Entry("agent", child=child, child_id=item, own=True))
            continue
        added = next(turns)
        # Each model call headed as the page and every explanation name it ("call 2"),
        # so that what the judge cites is what a person finds.
        heading = Step.call_name(turn)
        if not added.complete:
            # The model was not given everything written so far (a fresh or trimmed
            # context): say so, rather than let the transcript suggest continuity.
            count = added.repeated
            shared = (
                f"only {count} {'message' if count == 1 else 'messages'} of the previous "
                "call's context"
                if count
                else "nothing written above"
            )
            heading += f": a new model call whose context repeats {shared}"
        entries.append(_Entry("note", text=heading))
        entries.extend(_input_entry(m) for m in added.new)
        entries.extend(_output_entries(item, turn))
        turn += 1
    return entries


def _output_entries(interaction: LLMInteraction, turn: int) -> list[_Entry]:
    """The call's outputs; a refusal marked as one, and an unusual ending (cut off at the
    token limit, stopped by a content filter) said after them."""
    outputs: list[_Entry] = []
    for output in interaction.output_messages:
        if isinstance(output.content, LLMToolCall):
            outputs.append(_Entry("call", role="assistant", call=output.content, own=True))
        else:
            outputs.append(_Entry("message", role="assistant", text=output.content, own=True))
    if interaction.refusal:
        outputs.append(_Entry("message", role=REFUSAL_ROLE, text=interaction.refusal, own=True))
    if not outputs:
        reason = f" (error: {interaction.error})" if interaction.error else ""
        outputs.append(_Entry("message", role="assistant", text=f"(no output){reason}", own=True))
    for entry in outputs:
        entry.turn = turn
    # Results no later input carries, as the tool spans recorded them: context.
    outputs.extend(_Entry("result", role="tool", result=r) for r in interaction.tool_results or [])
    ending = unusual_ending(interaction)
    if ending:
        outputs.append(_Entry("note", text=f"The model call above was {ending}"))
    return outputs


def _tools(agent: AgentInstance) -> list[LLMToolDefinition]:
    seen: dict[tuple[str, str, str], LLMToolDefinition] = {}
    for interaction in agent.llm_interactions:
        for tool in interaction.tools_available or []:
            key = (tool.name, tool.description, normal_json(tool.parameters))
            seen.setdefault(key, tool)
    return list(seen.values())


# --------------------------------------------------------------------------- writing


def _agent_label(agent: AgentInstance) -> str:
    return f'"{agent.name}" (instance {agent.id})'


def _write(entries: list[_Entry], tools: list[LLMToolDefinition], heading: Iterable[str]) -> str:
    lines: list[str] = [line for line in heading if line]
    if tools:
        lines.append("")
        lines.append("TOOLS AVAILABLE")
        for tool in tools:
            description = f": {tool.description}" if tool.description else ""
            lines.append(f"- {tool.name}{description}")
            lines.append(f"  parameters: {tool.parameters}")
    lines.append("")
    lines.append("TRANSCRIPT")
    call_names: dict[str, str] = {}
    number = 0
    for entry in entries:
        mark = f" {JUDGED_MARK}" if entry.judged else ""
        if entry.kind == "note":
            lines.append("")
            lines.append(f"--- {entry.text} ---")
            continue
        number += 1
        lines.append("")
        if entry.kind == "message":
            lines.append(f"[{number}] {entry.role}{mark}:")
            lines.append(entry.text if entry.text else "(empty)")
        elif entry.kind == "call" and entry.call is not None:
            call = entry.call
            call_names[call.id] = call.name
            lines.append(f"[{number}] {entry.role}{mark} calls tool {call.name} (id {call.id}):")
            lines.append(f"arguments: {call.parameters}")
        elif entry.kind == "result" and entry.result is not None:
            result = entry.result
            name = result.name or call_names.get(result.id)
            if name is None:
                label = f"id {result.id}, no matching call above"
            elif result.id in call_names:
                label = f"{name}, id {result.id}"
            else:
                label = f"{name}, id {result.id}, no matching call above"
            lines.append(f"[{number}] tool result ({label}){mark}:")
            lines.append(result.response if result.response else "(empty)")
        elif entry.kind == "agent":
            if entry.child is None:
                lines.append(f"[{number}] calls sub-agent instance {entry.child_id}{mark}:")
                lines.append("(this agent instance is not in the trace)")
            else:
                output = entry.child.final_output
                lines.append(
                    f"[{number}] calls sub-agent {_agent_label(entry.child)}{mark}; "
                    "its final output:"
                )
                lines.append(output if output else "(no text output)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- public


def conversation_agent(
    messages: Sequence[Mapping[str, Any]],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    name: str = "assistant",
    id: str = "conversation",
) -> AgentInstance:
    """A chat conversation (OpenAI or Anthropic messages) as a one-agent run, read as
    `AgentInstance.from_chat_session` reads it (Anthropic server-side tool blocks become
    tool calls and results, so the judge sees them).

    Raises `BadRequestError` when a message is not a dict.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise BadRequestError(
            f"messages must be a list of dicts with 'role' and 'content', got "
            f"{type(messages).__name__}"
        )
    try:
        interactions = interactions_from_messages(messages, tools=tools, system=system)
    except TypeError as exc:
        raise BadRequestError(str(exc)) from exc
    return AgentInstance(id=id, name=name, interactions=list(interactions))


def render_conversation(agent: AgentInstance, *, evaluate_latest: bool = True) -> RenderedContent:
    """A conversation (see `conversation_agent`) for the judge.

    With `evaluate_latest` the assistant's latest response is judged: everything it
    produced after the last user message (its tool calls and its answer), the rest
    being context. Otherwise every assistant response is judged.
    """
    entries = _entries(agent, None)
    own = [e for e in entries if e.own]
    if evaluate_latest:
        last_user = max(
            (i for i, e in enumerate(entries) if e.kind == "message" and e.role == "user"),
            default=-1,
        )
        latest = [e for e in entries[last_user + 1 :] if e.own]
        if not latest and own:
            latest = [e for e in own if e.turn == own[-1].turn]
        for entry in latest:
            entry.judged = True
        target = f"the assistant's latest response (the entries marked {JUDGED_MARK})"
    else:
        for entry in own:
            entry.judged = True
        target = f"every assistant response (the entries marked {JUDGED_MARK})"
    judged = sum(e.judged for e in entries)
    heading = [
        "A conversation between a user and an AI assistant.",
        f"The entries marked {JUDGED_MARK} are evaluated; the other entries are context.",
    ]
    content = _write(entries, _tools(agent), heading)
    return RenderedContent(content=content, target=target, judged=judged, entries=len(entries))


def render_agent(trace: MultiAgentTrace, agent_id: str) -> RenderedContent:
    """One agent instance of a trace for the judge: its own model calls and child-agent calls
    are judged; its children appear only as calls with their final outputs."""
    agent = trace.agent_instance_by_id[agent_id]
    entries = _entries(agent, trace)
    for entry in entries:
        entry.judged = entry.own
    parent = trace.parent_of(agent_id)
    heading = [
        f"The run of agent {_agent_label(agent)} within a multi-agent trace"
        + (f", called by agent {_agent_label(parent)}." if parent is not None else "."),
        f"Its own messages, tool calls and sub-agent calls are marked {JUDGED_MARK}; "
        "sub-agents' own work is judged separately.",
    ]
    content = _write(entries, _tools(agent), heading)
    target = f"the agent {_agent_label(agent)}, whose actions are the entries marked {JUDGED_MARK}"
    judged = sum(e.judged for e in entries)
    return RenderedContent(content=content, target=target, judged=judged, entries=len(entries))
