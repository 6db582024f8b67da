"""The `budgets` check: token and time budgets per agent instance."""

from __future__ import annotations

from collections.abc import Iterable

from tracejudge.evaluation._checks.explain import list_calls
from tracejudge.evaluation._checks.run import BuiltinCheck, Run
from tracejudge.models import AgentInstance, ScoreResponse

__all__ = ["Budgets", "budgets"]


def _span(agents: Iterable[AgentInstance]) -> tuple[float, float] | None:
    """The earliest start and latest end of the agents' LLM interactions."""
    starts: list[float] = []
    ends: list[float] = []
    for agent in agents:
        for interaction in agent.llm_interactions:
            if interaction.start_time is not None:
                starts.append(interaction.start_time)
            if interaction.end_time is not None:
                ends.append(interaction.end_time)
    return (min(starts), max(ends)) if starts and ends else None


def _covered(intervals: Iterable[tuple[float, float]]) -> float:
    """The total length of the union of intervals."""
    total = 0.0
    end = float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def _verdict(
    ratio: float, scores: list[float], lines: list[str], used: str, budget: str, culprit: str
) -> None:
    """Score one budget from used / budget, with a line saying why."""
    if ratio <= 1.0:
        scores.append(1.0)
        lines.append(f"{used}, within {budget}.")
    else:
        scores.append(1.0 / ratio)
        lines.append(f"{used}, over its budget of {budget} ({culprit}).")


class Budgets(BuiltinCheck):
    """Token and time budgets per agent instance.

    Counted per agent, over its own LLM interactions (child agents are agents of their own,
    checked against the same budget separately). Tokens: the sum of `usage.total_tokens`
    (input + output where the total is missing). Time: from its first interaction's
    `start_time` to its last interaction's `end_time`, less the time its child agents ran
    in between - the agent's own model calls, tool runs and code.

    Score per budget: 1.0 within it, else budget / used (2x over: 0.5); with both budgets,
    the lower of the two. None when the data a budget needs is missing (no usage, or no
    timings, recorded).
    """

    def __init__(self, max_tokens: int | None = None, max_seconds: float | None = None) -> None:
        if max_tokens is None and max_seconds is None:
            raise ValueError("checks.budgets needs max_tokens, max_seconds or both")
        for label, value in (("max_tokens", max_tokens), ("max_seconds", max_seconds)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
            ):
                raise ValueError(f"{label} must be a positive number, got {value!r}")
        self.max_tokens = max_tokens
        self.max_seconds = max_seconds
        parts = []
        if max_tokens is not None:
            parts.append(f"max_tokens={max_tokens}")
        if max_seconds is not None:
            parts.append(f"max_seconds={max_seconds:g}")
        self.name = f"budgets({', '.join(parts)})"

    def _score(self, run: Run) -> ScoreResponse | None:
        if not run.llm:
            return None
        scores: list[float] = []
        lines: list[str] = []
        if self.max_tokens is not None:
            self._tokens(run, self.max_tokens, scores, lines)
        if self.max_seconds is not None:
            self._seconds(run, self.max_seconds, scores, lines)
        return ScoreResponse(score=min(scores) if scores else None, explanation=" ".join(lines))

    @staticmethod
    def _tokens(run: Run, budget: int, scores: list[float], lines: list[str]) -> None:
        used: dict[int, int] = {}
        for index, interaction in enumerate(run.llm):
            usage = interaction.usage
            if usage is not None:
                used[index] = usage.total_tokens or (usage.input_tokens + usage.output_tokens)
        if not used:
            lines.append(f"{run.name}: no token usage recorded; token budget not checked.")
            return
        total = sum(used.values())
        missing = [i for i in range(len(run.llm)) if i not in used]
        gap = f" (at least: no usage recorded for {list_calls(missing)})" if missing else ""
        biggest = max(used, key=lambda i: used[i])
        _verdict(
            total / budget,
            scores,
            lines,
            f"{run.name} used {total} tokens{gap}",
            f"{budget}",
            f"the largest call: {run.where(biggest)}, {used[biggest]} tokens",
        )

    @staticmethod
    def _seconds(run: Run, budget: float, scores: list[float], lines: list[str]) -> None:
        own = _span([run.agent])
        if own is None:
            lines.append(f"{run.name}: no timings recorded; time budget not checked.")
            return
        start, end = own
        children = []
        for child_id in dict.fromkeys(run.agent.child_ids):
            key = ("budgets.span", child_id)
            if key not in run.memo:
                child = run.trace.agent_instance_by_id.get(child_id)
                subtree = [child, *run.child_agents(child)] if child is not None else []
                run.memo[key] = _span(subtree)
            if run.memo[key] is not None:
                c_start, c_end = run.memo[key]
                if c_end > start and c_start < end:
                    children.append((max(c_start, start), min(c_end, end)))
        in_children = _covered(children)
        elapsed = max(0.0, end - start - in_children)
        detail = (
            f" ({end - start:.3f} s in all, {in_children:.3f} s of it in child agents)"
            if in_children
            else ""
        )
        durations = [i.duration_seconds or 0.0 for i in run.llm]
        slowest = max(range(len(durations)), key=lambda i: durations[i])
        _verdict(
            elapsed / budget,
            scores,
            lines,
            f"{run.name} took {elapsed:.3f} s{detail}",
            f"{budget:g} s",
            f"the slowest call: {run.where(slowest)}, {durations[slowest]:.3f} s",
        )


def budgets(max_tokens: int | None = None, max_seconds: float | None = None) -> Budgets:
    """A check of per-agent token and time budgets (see `Budgets`)."""
    return Budgets(max_tokens=max_tokens, max_seconds=max_seconds)
