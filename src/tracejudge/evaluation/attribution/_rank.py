"""Candidates for a cause, from every method, merged and ranked into `Cause`s.

The methods each give candidates in their own order. `rank` keeps the groups in order
(the deterministic findings with their steps, those without a step, then the judge
methods in the order picked, then agents that failed a judged criterion), merges a
candidate that points where an earlier one does (same agent, same model call) into it
(its evidence noted, the higher confidence kept), and marks a deterministic finding that
may follow from an earlier one in the same line of agents (the same agent, or one above
or below it in the tree) as its consequence, at a lower confidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tracejudge.models import AttributionMethod, Cause, MultiAgentTrace, Step

__all__ = ["Candidate", "rank"]

#: A consequence is less likely the cause than the finding it may follow from.
CONSEQUENCE_FACTOR = 0.6


@dataclass
class Candidate:
    """A cause before ranking."""

    agent_id: str
    agent_name: str
    method: AttributionMethod
    evidence: str
    confidence: float
    step: Step | None = None
    index: int | None = None
    criteria: list[str] = field(default_factory=list)
    fix: str | None = None
    outcome_changes: bool | None = None
    #: Whether a consequence can be told for it (deterministic findings with a step).
    chained: bool = False

    @property
    def place(self) -> tuple[str, int | None]:
        return (self.agent_id, self.step.interaction if self.step is not None else None)


def _parents(trace: MultiAgentTrace) -> dict[str, str]:
    """Each child agent's parent id, as `trace.parent_of` finds it (the first agent that
    lists it), read once: `parent_of` scans every agent, and a trace of thousands of
    agents has a failing agent in tens of them."""
    parents: dict[str, str] = {}
    for agent in trace.agent_instance_by_id.values():
        for child in agent.child_ids:
            parents.setdefault(child, agent.id)
    return parents


def _lineage(trace: MultiAgentTrace, agent_id: str, parents: dict[str, str]) -> set[str]:
    """The agent, its ancestors and its descendants."""
    found = {agent_id}
    parent = parents.get(agent_id)
    while parent is not None and parent not in found:
        found.add(parent)
        parent = parents.get(parent)
    stack = [agent_id]
    while stack:
        agent = trace.agent_instance_by_id.get(stack.pop())
        for child in agent.child_ids if agent is not None else ():
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _merge(into: Candidate, other: Candidate) -> None:
    if other.method == into.method:
        for criterion in other.criteria:
            if criterion not in into.criteria:
                into.criteria.append(criterion)
        if other.evidence and other.evidence not in into.evidence:
            into.evidence = f"{into.evidence}\n{other.evidence}".strip()
    else:
        into.evidence = f"{into.evidence}\nAlso found by {other.method}: {other.evidence}".strip()
    into.confidence = max(into.confidence, other.confidence)
    if into.step is not None and other.step is not None and into.step.tool_call_id is None:
        into.step = other.step  # the more exact pointer (with its tool call)
    into.fix = into.fix or other.fix
    if into.outcome_changes is None:
        into.outcome_changes = other.outcome_changes


def rank(trace: MultiAgentTrace, groups: Iterable[Iterable[Candidate]]) -> list[Cause]:
    """The candidates of `groups`, in order, merged and ranked (see the module's docstring)."""
    kept: list[Candidate] = []
    by_place: dict[tuple[str, int | None], Candidate] = {}
    for group in groups:
        for candidate in group:
            earlier = by_place.get(candidate.place)
            if earlier is not None:
                _merge(earlier, candidate)
                continue
            by_place[candidate.place] = candidate
            kept.append(candidate)
    causes: list[Cause] = []
    lineages: dict[str, set[str]] = {}
    parents: dict[str, str] | None = None
    for position, candidate in enumerate(kept, start=1):
        consequence_of = None
        confidence = candidate.confidence
        if candidate.chained and candidate.index is not None:
            for earlier_rank, earlier in enumerate(kept[: position - 1], start=1):
                if not earlier.chained or earlier.index is None or earlier.index > candidate.index:
                    continue
                lineage = lineages.get(candidate.agent_id)
                if lineage is None:
                    parents = _parents(trace) if parents is None else parents
                    lineage = _lineage(trace, candidate.agent_id, parents)
                    lineages[candidate.agent_id] = lineage
                if earlier.agent_id in lineage:
                    consequence_of = earlier_rank
                    confidence *= CONSEQUENCE_FACTOR
                    break
        causes.append(
            Cause(
                rank=position,
                agent_name=candidate.agent_name,
                agent_instance_id=candidate.agent_id,
                step=candidate.step,
                index=candidate.index,
                method=candidate.method,
                criteria=candidate.criteria,
                evidence=candidate.evidence,
                confidence=round(min(1.0, max(0.0, confidence)), 4),
                consequence_of=consequence_of,
                fix=candidate.fix,
                outcome_changes=candidate.outcome_changes,
            )
        )
    return causes
