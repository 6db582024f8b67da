"""One agent instance as the built-in checks read it (`Run`), and their base class
(`BuiltinCheck`), which builds one `Run` per agent.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any

from tracejudge.evaluation._checks.base import AgentCheck
from tracejudge.evaluation._history import Turn, new_messages
from tracejudge.models import (
    AgentInstance,
    LLMInteraction,
    LLMToolCall,
    MultiAgentTrace,
    ScoreResponse,
    Step,
)

__all__ = ["Run", "BuiltinCheck"]


class Run:
    """One agent instance as the built-in checks read it.

    `memo` is shared by the runs of one `evaluate(trace)` call, for what a check derives
    from several agents (a subtree's sources, a child's time span) or once per agent (its
    tool calls' outcomes, `calls.call_outcomes`).
    """

    def __init__(self, agent: AgentInstance, trace: MultiAgentTrace, memo: dict[Any, Any]) -> None:
        self.agent = agent
        self.trace = trace
        self.memo = memo
        self.name = agent.name
        #: The agent's LLM interactions, and where each sits in `agent.interactions`.
        self.llm: list[LLMInteraction] = []
        self.positions: list[int] = []
        for position, item in enumerate(agent.interactions):
            if isinstance(item, LLMInteraction):
                self.llm.append(item)
                self.positions.append(position)
        last = agent.interactions[-1] if agent.interactions else None
        #: The child agent that ran after the agent's last LLM interaction (a hand-off).
        self.handed_off_to: str | None = last if isinstance(last, str) else None

    def where(self, index: int, call: LLMToolCall | None = None) -> str:
        """'researcher call 3, tool call call_7 (search)': the agent's model call as the
        page and every other text a person reads count it, from 1 (`Step.label`; the JSON
        keeps `llm_interactions[2]`, in the result's `steps`)."""
        return f"{self.name} {self.step(index, call).label()}"

    @staticmethod
    def step(index: int, call: LLMToolCall | None = None) -> Step:
        """The step `where(index, call)` names, as data (what a finding points to)."""
        if call is None:
            return Step(interaction=index)
        return Step(interaction=index, tool_call_id=call.id, tool_name=call.name)

    @property
    def recorded(self) -> bool:
        """Whether any message content was recorded (instrumentations may record none)."""
        return any(i.input_messages or i.output_messages for i in self.llm)

    @functools.cached_property
    def turns(self) -> list[Turn]:
        """Per interaction, the input messages it added to the previous interaction's inputs
        and outputs (`_history.new_messages`, as the judge's transcript reads them). Chat
        agents resend the whole conversation on every call; reading only what is new keeps
        checks linear."""
        return list(new_messages(self.llm))

    def child_agents(self, agent: AgentInstance | None = None) -> Iterator[AgentInstance]:
        """The agent's descendants, each once, depth first."""
        seen = {self.agent.id}
        stack = list(reversed((agent or self.agent).child_ids))
        while stack:
            child_id = stack.pop()
            child = self.trace.agent_instance_by_id.get(child_id)
            if child is None or child_id in seen:
                continue
            seen.add(child_id)
            yield child
            stack.extend(reversed(child.child_ids))


class BuiltinCheck(AgentCheck):
    """An AgentCheck that reads agents through `Run`."""

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        memo: dict[Any, Any] = {}
        return {agent.id: self._score(Run(agent, trace, memo)) for agent in trace.iter_agents()}

    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        return self._score(Run(agent, trace, {}))

    @abstractmethod
    def _score(self, run: Run) -> ScoreResponse | None: ...
