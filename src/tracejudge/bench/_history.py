"""A group chat's history (Who&When, MP-Bench) as a `MultiAgentTrace`.

One agent instance per speaker (its `name`, else its `role` without a parenthesis:
Who&When's "Orchestrator (-> WebSurfer)" is the Orchestrator), under a root
"group_chat" instance that runs them and calls no model itself. History entry i is one
model call of its speaker: its output is the entry's text; its inputs are the entries
said since that speaker's previous turn (all earlier ones for its first), as user
messages. Each call's start and end time is i (seconds from 0: the records have no
times), so the trace's step order is the history's and step i is entry i. A person's
turn (role "human" or "user" and no `name`: Who&When's task statement) is given, not
generated: its call's inputs include its own text, so no check takes what the person said
(the task's numbers) for something the agents invented.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tracejudge.models import (
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    MultiAgentTrace,
)

__all__ = ["ROOT", "history_trace", "speaker"]

#: The id and name of the root instance that runs the chat.
ROOT = "group_chat"
_PARENTHESIS = re.compile(r"\s*\(.*\)\s*$")


def speaker(entry: Mapping[str, Any]) -> str:
    """Who said a history entry: its `name`, else its `role` without a parenthesis."""
    name = entry.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    role = entry.get("role")
    role = role.strip() if isinstance(role, str) else ""
    return _PARENTHESIS.sub("", role) or role or "unknown"


def _is_person(entry: Mapping[str, Any]) -> bool:
    name = entry.get("name")
    role = entry.get("role")
    unnamed = not (isinstance(name, str) and name.strip())
    return unnamed and isinstance(role, str) and role.strip().casefold() in ("human", "user")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def history_trace(
    history: Sequence[Mapping[str, Any]], *, trace_id: str | None = None
) -> MultiAgentTrace:
    """The trace of a chat `history` (see the module's docstring)."""
    agents: dict[str, AgentInstance] = {}
    last_turn: dict[str, int] = {}
    texts = [_text(entry.get("content")) for entry in history]
    root_id = ROOT
    names = {speaker(entry) for entry in history}
    while root_id in names:
        root_id = f"_{root_id}"
    root = AgentInstance(id=root_id, name=ROOT)
    for index, entry in enumerate(history):
        name = speaker(entry)
        agent = agents.get(name)
        if agent is None:
            agent = agents[name] = AgentInstance(id=name, name=name)
            root.interactions.append(name)
        since = last_turn.get(name, -1) + 1
        last_turn[name] = index
        said = texts[since : index + 1] if _is_person(entry) else texts[since:index]
        agent.interactions.append(
            LLMInteraction(
                input_messages=[LLMInput(role="user", content=t) for t in said],
                output_messages=[LLMOutput(type="text", content=texts[index])],
                start_time=float(index),
                end_time=float(index),
            )
        )
    return MultiAgentTrace(
        root_agent_instance_id=root_id,
        agent_instance_by_id={root_id: root, **agents},
        trace_id=trace_id,
    )
