"""A session as one conversation for the judge: its traces' turns in order.

Each trace of a session is one turn: what the user asked (the last user message of the
trace's first model call) and what the agents answered (the text of its root agent's last
model call; of the last call in the trace when the root made none). `session_trace` writes
the turns as one chat agent, `session`, whose every call carries the conversation so far,
as a chat application records it: the judge reads the turns in order, and a session longer
than the judge's input budget is explored (or marked not evaluated), as any long agent is.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracejudge.models import (
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    MultiAgentTrace,
)

__all__ = ["SESSION_AGENT", "session_trace", "turn_of"]

#: The name of the agent a session-level criterion scores.
SESSION_AGENT = "session"


def _texts(contents: Sequence[object]) -> str:
    return "\n".join(c for c in contents if isinstance(c, str) and c.strip())


def turn_of(trace: MultiAgentTrace) -> tuple[str, str] | None:
    """(what the user asked, what the agents answered) in one trace; None when it holds
    neither."""
    calls = [call for agent in trace.iter_agents() for call in agent.llm_interactions]
    if not calls:
        return None
    first = calls[0]
    asked = [m.content for m in first.input_messages if m.role == "user"]
    question = _texts(asked[-1:])
    own = trace.root.llm_interactions
    last = own[-1] if own else calls[-1]
    answer = _texts([m.content for m in last.output_messages])
    if not question and not answer:
        return None
    return question, answer


def session_trace(turns: Sequence[MultiAgentTrace]) -> MultiAgentTrace | None:
    """The session's turns as one chat agent's calls (None: no turn holds a message)."""
    history: list[LLMInput] = []
    calls: list[LLMInteraction | str] = []
    for trace in turns:
        turn = turn_of(trace)
        if turn is None:
            continue
        question, answer = turn
        history.append(LLMInput(role="user", content=question or "(no question recorded)"))
        calls.append(
            LLMInteraction(
                input_messages=list(history),
                output_messages=[LLMOutput(content=answer or "(no answer recorded)")],
            )
        )
        history.append(LLMInput(role="assistant", content=answer or "(no answer recorded)"))
    if not calls:
        return None
    agent = AgentInstance(id=SESSION_AGENT, name=SESSION_AGENT, interactions=calls)
    return MultiAgentTrace(
        root_agent_instance_id=SESSION_AGENT, agent_instance_by_id={SESSION_AGENT: agent}
    )
