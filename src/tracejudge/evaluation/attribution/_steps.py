"""A trace's steps in the order they ran: every agent's model calls, numbered from 0.

A step has two names (see `tracejudge.models._attribution`): the agent's own model call
index (`Step.interaction`, how the checks point) and its `index` in the whole trace. The
order is the tree's (depth first, a child's calls where its parent ran it; instances no
other refers to last), then by start time when every call recorded one, the tree's order
breaking ties: agents that ran side by side interleave as they ran.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tracejudge.models import AgentInstance, LLMInteraction, MultiAgentTrace, Step

#: A step a judge cites by its number, not already followed by what the page calls it.
_CITED_STEP = re.compile(r"\b(step|STEP|Step) (\d+)\b(?! \()")

__all__ = ["StepRef", "TraceSteps", "trace_steps"]


@dataclass(frozen=True)
class StepRef:
    """One step: the `index`-th model call of the trace, the `interaction`-th of `agent`."""

    index: int
    agent: AgentInstance
    interaction: int
    call: LLMInteraction


class TraceSteps(Sequence[StepRef]):
    """The steps of one trace, with the lookups attribution needs."""

    def __init__(self, trace: MultiAgentTrace, steps: list[StepRef]) -> None:
        self.trace = trace
        self._steps = steps
        self._by_place = {(s.agent.id, s.interaction): s for s in steps}
        self._names = {agent.name.casefold(): agent for agent in trace.iter_agents()}

    def __len__(self) -> int:
        return len(self._steps)

    def __getitem__(self, index: int) -> StepRef:  # type: ignore[override]  # no slices
        return self._steps[index]

    def __iter__(self) -> Iterator[StepRef]:
        return iter(self._steps)

    def at(self, agent_id: str, interaction: int) -> StepRef | None:
        """The step of the agent's `interaction`-th model call, or None."""
        return self._by_place.get((agent_id, interaction))

    def get(self, index: int) -> StepRef | None:
        """The step numbered `index`, or None when there is none."""
        return self._steps[index] if 0 <= index < len(self._steps) else None

    def named_calls(self, text: str) -> str:
        """`text`, a judge's, with each step it cites by number ("step 4", "STEP 4") also
        named as the page names it: "step 4 (researcher call 2)"."""

        def named(match: re.Match[str]) -> str:
            step = self.get(int(match.group(2)))
            if step is None:
                return match.group(0)
            return f"{match.group(0)} ({step.agent.name} {Step.call_name(step.interaction)})"

        return _CITED_STEP.sub(named, text)

    def agent_named(self, name: str) -> AgentInstance | None:
        """The first instance (tree order) of the agent called `name` (case ignored)."""
        return self._names.get(name.strip().casefold())


def _tree_order(trace: MultiAgentTrace) -> list[tuple[AgentInstance, int, LLMInteraction]]:
    placed: list[tuple[AgentInstance, int, LLMInteraction]] = []
    seen: set[str] = set()

    def walk(root: AgentInstance) -> None:
        # Iterative: a deep tree of agents must not hit the recursion limit.
        stack: list[tuple[AgentInstance, int, int]] = [(root, 0, 0)]
        seen.add(root.id)
        while stack:
            agent, position, count = stack.pop()
            items = agent.interactions
            while position < len(items):
                item = items[position]
                position += 1
                if isinstance(item, LLMInteraction):
                    placed.append((agent, count, item))
                    count += 1
                    continue
                child = trace.agent_instance_by_id.get(item)
                if child is not None and child.id not in seen:
                    seen.add(child.id)
                    stack.append((agent, position, count))
                    stack.append((child, 0, 0))
                    break

    walk(trace.root)
    for agent in trace.iter_agents():
        if agent.id not in seen:
            walk(agent)
    return placed


def trace_steps(trace: MultiAgentTrace) -> TraceSteps:
    """The trace's steps in the order they ran (see the module's docstring)."""
    placed = _tree_order(trace)
    if placed and all(call.start_time is not None for _, _, call in placed):
        placed = sorted(placed, key=lambda item: item[2].start_time or 0.0)  # stable
    steps = [
        StepRef(index=i, agent=agent, interaction=n, call=call)
        for i, (agent, n, call) in enumerate(placed)
    ]
    return TraceSteps(trace, steps)
