"""Scored traces as result lines, and the summary of many of them.

A result line is the JSON object `tracejudge score --out` writes, one per trace and
criterion::

    {"trace_id": "4bf92f35...", "source": "traces.jsonl", "criterion": "loops",
     "overall_score": 0.5, "explanation": "...",
     "agents": {"<instance id>": {"name": "researcher", "score": 0.5,
                                 "explanation": "..."}}}

(`score` is null where the criterion does not apply to that agent.) The summary is
made from result lines, so that lines read back from an earlier run (`--resume`) count
the same as new ones. It keeps every score (a few floats per agent and criterion) but
only the worst findings, so it stays small at any number of traces.
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse

__all__ = ["Finding", "ScoreSummary", "format_summary", "result_lines"]

#: How many findings (agent scores below the bar) the summary keeps, worst first.
MAX_FINDINGS = 20


def result_lines(
    trace_id: str,
    trace: MultiAgentTrace,
    responses: Sequence[MultiAgentTraceResponse],
    *,
    source: str | None = None,
) -> list[dict[str, Any]]:
    """One result line per response (criterion), agents in tree order."""
    lines = []
    for response in responses:
        agents: dict[str, dict[str, Any]] = {}
        for agent in trace.iter_agents():
            result = response.results_by_agent_name.get(agent.name)
            detail = result.results_by_agent_instance_id.get(agent.id) if result else None
            agents[agent.id] = {
                "name": agent.name,
                "score": detail.score if detail is not None else None,
                "explanation": detail.explanation if detail is not None else "",
            }
        line: dict[str, Any] = {"trace_id": trace_id}
        if source is not None:
            line["source"] = source
        line.update(
            criterion=response.criterion,
            overall_score=response.overall_score,
            explanation=response.explanation,
            agents=agents,
        )
        lines.append(line)
    return lines


@dataclass(frozen=True)
class Finding:
    """An agent's score below the bar, with what the criterion said."""

    score: float
    trace_id: str
    criterion: str
    agent: str
    explanation: str


@dataclass
class _Scores:
    instances: int = 0
    by_criterion: dict[str, list[float]] = field(default_factory=dict)


class ScoreSummary:
    """Scores of many traces by agent name and criterion, and the worst findings.

    `bar`: an agent or overall score below it is a finding and the trace fails.
    """

    def __init__(self, bar: float = 1.0) -> None:
        self.bar = bar
        self.criteria: list[str] = []
        self.trace_ids: set[str] = set()
        self.failing_traces: set[str] = set()
        self.findings_count = 0
        self.overall: dict[str, list[float]] = {}
        self._agents: dict[str, _Scores] = {}
        self._instances: set[tuple[str, str]] = set()
        self._findings: list[Finding] = []  # a heap of the worst, by negated order

    @property
    def traces(self) -> int:
        return len(self.trace_ids)

    @property
    def agent_names(self) -> list[str]:
        return list(self._agents)

    def add(self, lines: Iterable[Mapping[str, Any]]) -> None:
        """Count result lines (of one trace or several)."""
        for line in lines:
            trace_id = str(line["trace_id"])
            criterion = str(line["criterion"])
            self.trace_ids.add(trace_id)
            if criterion not in self.criteria:
                self.criteria.append(criterion)
            overall = line.get("overall_score")
            if overall is not None:
                self.overall.setdefault(criterion, []).append(float(overall))
                if overall < self.bar:
                    self.failing_traces.add(trace_id)
            for instance_id, agent in (line.get("agents") or {}).items():
                name = str(agent.get("name"))
                scores = self._agents.setdefault(name, _Scores())
                if (trace_id, instance_id) not in self._instances:
                    self._instances.add((trace_id, instance_id))
                    scores.instances += 1
                score = agent.get("score")
                if score is None:
                    continue
                scores.by_criterion.setdefault(criterion, []).append(float(score))
                if score < self.bar:
                    self._found(Finding(score, trace_id, criterion, name, agent["explanation"]))

    def _found(self, finding: Finding) -> None:
        self.findings_count += 1
        # Keep the MAX_FINDINGS lowest scores: a max-heap by score, via negation.
        item = (-finding.score, self.findings_count, finding)
        if len(self._findings) < MAX_FINDINGS:
            heapq.heappush(self._findings, item)
        elif item[0] > self._findings[0][0]:
            heapq.heapreplace(self._findings, item)

    @property
    def findings(self) -> list[Finding]:
        """The worst findings kept, lowest score first (earliest first among equals)."""
        return [f for _, _, f in sorted(self._findings, key=lambda i: (-i[0], i[1]))]

    def stats(self, agent: str, criterion: str) -> tuple[float, float, float] | None:
        """(median, min, max) of an agent name's scores on a criterion, or None."""
        scores = self._agents[agent].by_criterion.get(criterion)
        if not scores:
            return None
        return statistics.median(scores), min(scores), max(scores)

    def instances(self, agent: str) -> int:
        return self._agents[agent].instances

    def as_dict(self) -> dict[str, Any]:
        """The summary as plain data (what `--json` prints)."""
        agents: dict[str, Any] = {}
        for name in self._agents:
            criteria = {}
            for criterion in self.criteria:
                found = self.stats(name, criterion)
                if found is not None:
                    criteria[criterion] = dict(zip(("median", "min", "max"), found, strict=True))
            agents[name] = {"instances": self.instances(name), "criteria": criteria}
        return {
            "traces": self.traces,
            "failing_traces": len(self.failing_traces),
            "bar": self.bar,
            "criteria": list(self.criteria),
            "agents": agents,
            "findings": self.findings_count,
            "worst_findings": [
                {
                    "trace_id": f.trace_id,
                    "criterion": f.criterion,
                    "agent": f.agent,
                    "score": f.score,
                    "explanation": f.explanation,
                }
                for f in self.findings
            ],
        }


def format_summary(summary: ScoreSummary) -> str:
    """The findings below the bar first (the worst, with their explanation), then a table
    of agent names x criteria: instances, and median / min / max of their scores."""
    lines: list[str] = []
    findings = summary.findings
    if findings:
        lines.append(
            f"Findings below {summary.bar:g} (worst {len(findings)} of {summary.findings_count}):"
        )
        for f in findings:
            explanation = " ".join(f.explanation.split())
            if len(explanation) > 300:
                explanation = explanation[:297] + "..."
            lines.append(
                f"- {f.score:.2f} [{f.criterion}] {f.agent} in trace {f.trace_id}: {explanation}"
            )
        lines.append("")
    names = summary.agent_names
    if not names:
        lines.append("No agent was scored.")
        return "\n".join(lines)
    agent_width = max([len(n) for n in names] + [5]) + 2
    criterion_width = max([len(_label(c)) for c in summary.criteria] + [9]) + 2
    lines.append(
        f"{'agent':<{agent_width}}{'instances':>9}  {'criterion':<{criterion_width}}"
        f"{'median':>7}{'min':>7}{'max':>7}"
    )
    for name in names:
        first = True
        for criterion in summary.criteria:
            found = summary.stats(name, criterion)
            if found is None:
                continue
            head = (
                f"{name:<{agent_width}}{summary.instances(name):>9}"
                if first
                else " " * (agent_width + 9)
            )
            first = False
            median, low, high = found
            lines.append(
                f"{head}  {_label(criterion):<{criterion_width}}"
                f"{median:>7.2f}{low:>7.2f}{high:>7.2f}"
            )
        if first:
            lines.append(f"{name:<{agent_width}}{summary.instances(name):>9}  (no scores)")
    lines.append("")
    lines.append(
        f"{summary.traces} traces, {len(summary.failing_traces)} with a score below {summary.bar:g}"
    )
    return "\n".join(lines)


def _label(criterion: str) -> str:
    return criterion if len(criterion) <= 40 else criterion[:37] + "..."
