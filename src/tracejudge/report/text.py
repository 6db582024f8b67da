"""Plain-text reports of a scored trace: the score table, its legend, the findings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracejudge.models import AgentInstance, MultiAgentTrace, MultiAgentTraceResponse

#: A criterion is its own column label when it is one word of at most this length.
_MAX_LABEL = 18


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def format_agent_tree(trace: MultiAgentTrace) -> str:
    """One line per agent, depth first: its name, model and tool calls, and its parent.

    Example line: ``  researcher  3 LLM calls, 3 tool calls, child of planner``.
    """
    lines = []
    agents = list(trace.iter_agents())
    width = max([11, *(len(agent.name) for agent in agents)])
    for agent in agents:
        parent = trace.parent_of(agent.id)
        tool_calls = sum(len(i.tool_calls) for i in agent.llm_interactions)
        llm_calls = len(agent.llm_interactions)
        lines.append(
            f"  {agent.name:<{width}} {_count(llm_calls, 'LLM call')}, "
            f"{_count(tool_calls, 'tool call')}" + (f", child of {parent.name}" if parent else "")
        )
    return "\n".join(lines)


def _labels(responses: Sequence[MultiAgentTraceResponse]) -> tuple[list[str], list[str]]:
    """Short column labels, and a legend line for each criterion too long to be one.

    A check's name is its label (``budgets(max_tokens=10)`` -> ``budgets``, with the
    settings in the legend); a natural-language criterion becomes ``criterion1``, ...
    """
    labels: list[str] = []
    legend: list[str] = []
    for response in responses:
        name = response.criterion.split("(", 1)[0] or "criterion"
        if len(name) <= _MAX_LABEL and " " not in name:
            labels.append(name)
            if name != response.criterion:  # a check with settings: show them
                legend.append(f"{name}: {response.criterion}")
        else:
            labels.append(f"criterion{sum(label.startswith('criterion') for label in labels) + 1}")
            legend.append(f"{labels[-1]}: {response.criterion}")
    return labels, legend


def _findings(
    trace: MultiAgentTrace, responses: Sequence[MultiAgentTraceResponse], labels: Sequence[str]
) -> list[str]:
    """Every agent result scored below 1.0, in full, labelled with its criterion."""
    findings = []
    for response, label in zip(responses, labels, strict=True):
        for agent in trace.iter_agents():
            result = response.results_by_agent_name.get(agent.name)
            detail = result.results_by_agent_instance_id.get(agent.id) if result else None
            if detail is None or detail.score is None or detail.score >= 1.0:
                continue
            explanation = detail.explanation.replace("\n", "\n    ")
            if not explanation.startswith(agent.name):
                explanation = f"{agent.name}: {explanation}"
            findings.append(f"- [{label}] {explanation}")
    return findings


def _not_evaluated(response: MultiAgentTraceResponse, agent: AgentInstance) -> str | None:
    """Why `agent` was not evaluated on `response`'s criterion (None: it was, or n/a)."""
    result = response.results_by_agent_name.get(agent.name)
    detail = result.results_by_agent_instance_id.get(agent.id) if result is not None else None
    return detail.not_evaluated if detail is not None else None


def format_results(trace: MultiAgentTrace, responses: Sequence[MultiAgentTraceResponse]) -> str:
    """A table of agents x criteria, the overall row, then every finding below 1.0 in full.

    `responses` are the answers for `trace`, one per criterion, in column order. A
    score the criterion did not give (not applicable to that agent) shows as ``n/a``; one
    that could not be judged (the judge failed) as ``n/e``, with the reason below.
    """
    labels, legend = _labels(responses)
    agents = list(trace.iter_agents())
    width = max([len(a.name) for a in agents] + [7]) + 2
    lines = [" " * width + "  ".join(f"{label:>5}" for label in labels)]

    def cells(scores: Sequence[float | str | None]) -> str:
        shown = [v if isinstance(v, str) else "n/a" if v is None else f"{v:.2f}" for v in scores]
        return "  ".join(
            f"{v:>{max(len(label), 5)}}" for v, label in zip(shown, labels, strict=True)
        )

    reasons: dict[str, list[str]] = {}  # why not evaluated -> the criteria's labels

    def cell(response: MultiAgentTraceResponse, label: str, agent: AgentInstance) -> Any:
        why = _not_evaluated(response, agent)
        if why is None:
            return response.agent_scores.get(agent.id)
        if label not in (named := reasons.setdefault(why, [])):
            named.append(label)
        return "n/e"

    for agent in agents:
        row = [cell(r, label, agent) for r, label in zip(responses, labels, strict=True)]
        lines.append(f"{agent.name:<{width}}" + cells(row))
    lines.append(f"{'overall':<{width}}" + cells([r.overall_score for r in responses]))
    if legend:
        lines += ["", *legend]
    for why, named in reasons.items():
        lines.append(f"n/e = not evaluated ({', '.join(named)}): {why}")
    findings = _findings(trace, responses, labels)
    if findings:
        lines += ["", "Findings:", *findings]
    return "\n".join(lines)
