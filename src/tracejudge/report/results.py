"""Scored traces as result lines, and the summary of many of them.

A result line is the JSON object `tracejudge score --out` writes, one per trace and
criterion::

    {"trace_id": "4bf92f35...", "source": "traces.jsonl", "criterion": "loops",
     "overall_score": 0.5, "fail_under": 1.0, "failing_agents": 1,
     "worst_agent": {"agent_name": "researcher", "agent_instance_id": "...", "score": 0.0},
     "explanation": "...",
     "agents": {"<instance id>": {"name": "researcher", "score": 0.0,
                                 "explanation": "...", "steps": [{"interaction": 2}]}}}

(`score` is null where the criterion does not apply to that agent; `steps` is there when
the finding points at model calls; `"not_evaluated": "<reason>"` when no judgement could
be made. A judged criterion's line, and each of its judged agents, carry `"usage"`: the
judge's calls, `input_tokens` (`cached_input_tokens` of them read from the provider's
prompt cache, `cache_write_tokens` written to it), `output_tokens` and `cost_usd` (null
when the judge's model has no price); a check's line has none.) An agent fails a
criterion when its score is below the line's `fail_under`
(see `tracejudge.models.TraceVerdict`); a trace fails when any of its agents fails any
criterion. The summary is made from result lines, so that lines read back from an
earlier run (`--resume`) count the same as new ones. It keeps every score (a few floats
per agent and criterion) but only the worst findings, so it stays small at any number of
traces.
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tracejudge.models import (
    JUDGED_BAR,
    JudgeUsage,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    fails,
)

__all__ = [
    "CriterionStats",
    "Finding",
    "ScoreSummary",
    "format_summary",
    "format_usage",
    "input_sentence",
    "line_usage",
    "result_lines",
    "trace_name",
    "usage_of",
    "usage_sentence",
    "usd",
]

#: How many findings (agent scores below the bar) the summary keeps, worst first.
MAX_FINDINGS = 20
#: How many distinct reasons for "not evaluated" the summary keeps.
MAX_REASONS = 10


def line_usage(usage: JudgeUsage) -> dict[str, Any]:
    """The judge usage as a result line holds it (`cost_usd` always there, null when
    unknown)."""
    return {**usage.model_dump(), "cost_usd": usage.cost_usd}


def usage_of(line: Mapping[str, Any]) -> JudgeUsage | None:
    """The judge usage of a result line (or of one agent of it), None when it has none."""
    found = line.get("usage")
    if not isinstance(found, Mapping):
        return None
    try:
        return JudgeUsage.model_validate(found)
    except ValidationError:
        return None


def trace_name(trace_id: str, source: str | None = None) -> str:
    """A trace as every command's text names it: by its file where it was read from one,
    and its id ("runs.jsonl, trace 4bf92f35..."); an id made from the file
    ("bad.json:line1") already names it."""
    if not source or trace_id.startswith((source, Path(source).name)):
        return f"trace {trace_id}"
    return f"{source}, trace {trace_id}"


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
            entry: dict[str, Any] = {
                "name": agent.name,
                "score": detail.score if detail is not None else None,
                "explanation": detail.explanation if detail is not None else "",
            }
            if detail is not None and detail.steps:
                entry["steps"] = [s.model_dump() for s in detail.steps]
            if detail is not None and detail.not_evaluated is not None:
                entry["not_evaluated"] = detail.not_evaluated
            if detail is not None and detail.usage is not None:
                entry["usage"] = line_usage(detail.usage)
            agents[agent.id] = entry
        line: dict[str, Any] = {"trace_id": trace_id}
        if source is not None:
            line["source"] = source
        worst = response.worst_agent
        line.update(
            criterion=response.criterion,
            overall_score=response.overall_score,
            fail_under=response.bar(),
            failing_agents=len(response.failing()),
            worst_agent=worst.model_dump() if worst is not None else None,
            explanation=response.explanation,
            agents=agents,
        )
        if response.usage is not None:
            line["usage"] = line_usage(response.usage)
        lines.append(line)
    return lines


def line_bar(line: Mapping[str, Any], fail_under: float | None = None) -> float:
    """The bar a result line's agents are held to: `fail_under` when given, else the
    line's own (lines written before bars were recorded: the judged criteria's)."""
    if fail_under is not None:
        return fail_under
    bar = line.get("fail_under")
    return float(bar) if isinstance(bar, (int, float)) else JUDGED_BAR


@dataclass(frozen=True)
class Finding:
    """An agent's score below the bar, with what the criterion said."""

    score: float
    trace_id: str
    criterion: str
    agent: str
    explanation: str
    agent_instance_id: str = ""
    steps: tuple[Mapping[str, Any], ...] = ()
    #: The file the trace was read from, when it was read from one.
    source: str | None = None


@dataclass(frozen=True)
class CriterionStats:
    """One agent name on one criterion over many traces: how many instances were scored
    and failed, and the mean, median, min and max of their scores."""

    scored: int
    failing: int
    mean: float
    median: float
    min: float
    max: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "scored": self.scored,
            "failing": self.failing,
            "mean": self.mean,
            "median": self.median,
            "min": self.min,
            "max": self.max,
        }


@dataclass
class _Scores:
    instances: int = 0
    by_criterion: dict[str, list[float]] = field(default_factory=dict)
    failing: dict[str, int] = field(default_factory=dict)


class ScoreSummary:
    """Scores of many traces by agent name and criterion, and the worst findings.

    `bar`: when given, every agent score below it is a finding and fails its trace (what
    `--fail-under` sets); None holds each criterion to its own bar (the line's
    `fail_under`).
    """

    def __init__(self, bar: float | None = None) -> None:
        self.bar = bar
        self.criteria: list[str] = []
        self.trace_ids: set[str] = set()
        self.failing_traces: set[str] = set()
        self.findings_count = 0
        self.not_evaluated = 0
        #: Why agent results were not evaluated: reason -> count (the first MAX_REASONS).
        self.not_evaluated_reasons: dict[str, int] = {}
        #: The judge's usage over every line, and per criterion (judged criteria only).
        self.usage = JudgeUsage()
        self.usage_by_criterion: dict[str, JudgeUsage] = {}
        #: Lines whose judge calls have no cost (the judge's model has no price).
        self.unpriced = 0
        #: The judge's input budget per judgement and where it comes from (set by the
        #: caller that knows the judge; None: not known).
        self.judge_budget: tuple[int, str] | None = None
        #: Judgements that called the judge, their input tokens in all, the largest.
        self.judgements = 0
        self.judgement_input_tokens = 0
        self.largest_judgement_input = 0
        self.overall: dict[str, list[float]] = {}
        #: criterion -> each trace's worst agent score on it (what the charts show).
        self.worst: dict[str, list[float]] = {}
        self.bars: dict[str, float] = {}
        self._agents: dict[str, _Scores] = {}
        self._instances: set[tuple[str, str]] = set()
        self._findings: list[tuple[float, int, Finding]] = []  # a heap of the worst

    @property
    def traces(self) -> int:
        return len(self.trace_ids)

    @property
    def agent_names(self) -> list[str]:
        return list(self._agents)

    def bar_of(self, criterion: str) -> float:
        """The bar the criterion's scores are held to in this summary."""
        if self.bar is not None:
            return self.bar
        return self.bars.get(criterion, JUDGED_BAR)

    def add(self, lines: Iterable[Mapping[str, Any]]) -> None:
        """Count result lines (of one trace or several)."""
        for line in lines:
            trace_id = str(line["trace_id"])
            criterion = str(line["criterion"])
            bar = line_bar(line, self.bar)
            self.trace_ids.add(trace_id)
            if criterion not in self.criteria:
                self.criteria.append(criterion)
            self.bars.setdefault(criterion, line_bar(line))
            overall = line.get("overall_score")
            if overall is not None:
                self.overall.setdefault(criterion, []).append(float(overall))
            usage = usage_of(line)
            if usage is not None:
                self.usage = self.usage + usage
                known = self.usage_by_criterion.get(criterion, JudgeUsage())
                self.usage_by_criterion[criterion] = known + usage
                if usage.calls and usage.cost_usd is None:
                    self.unpriced += 1
            lowest: float | None = None
            for instance_id, agent in (line.get("agents") or {}).items():
                name = str(agent.get("name"))
                scores = self._agents.setdefault(name, _Scores())
                if (trace_id, instance_id) not in self._instances:
                    self._instances.add((trace_id, instance_id))
                    scores.instances += 1
                self._count_judgement(agent)
                reason = agent.get("not_evaluated")
                if reason is not None:
                    self.not_evaluated += 1
                    reason = str(reason)
                    if reason in self.not_evaluated_reasons:
                        self.not_evaluated_reasons[reason] += 1
                    elif len(self.not_evaluated_reasons) < MAX_REASONS:
                        self.not_evaluated_reasons[reason] = 1
                score = agent.get("score")
                if score is None:
                    continue
                score = float(score)
                lowest = score if lowest is None else min(lowest, score)
                scores.by_criterion.setdefault(criterion, []).append(score)
                if fails(score, bar):
                    scores.failing[criterion] = scores.failing.get(criterion, 0) + 1
                    self.failing_traces.add(trace_id)
                    self._found(
                        Finding(
                            score,
                            trace_id,
                            criterion,
                            name,
                            str(agent.get("explanation") or ""),
                            agent_instance_id=str(instance_id),
                            steps=tuple(agent.get("steps") or ()),
                            source=line.get("source"),
                        )
                    )
            if lowest is not None:
                self.worst.setdefault(criterion, []).append(lowest)

    def _count_judgement(self, agent: Mapping[str, Any]) -> None:
        """Count one agent's judgement's input tokens (a judgement that called the judge)."""
        usage = usage_of(agent)
        if usage is None or not usage.calls:
            return
        self.judgements += 1
        self.judgement_input_tokens += usage.input_tokens
        self.largest_judgement_input = max(self.largest_judgement_input, usage.input_tokens)

    def _found(self, finding: Finding) -> None:
        self.findings_count += 1
        # Keep the MAX_FINDINGS lowest scores: a max-heap by score, via negation.
        item = (-finding.score, -self.findings_count, finding)
        if len(self._findings) < MAX_FINDINGS:
            heapq.heappush(self._findings, item)
        elif item[:2] > self._findings[0][:2]:
            heapq.heapreplace(self._findings, item)

    @property
    def findings(self) -> list[Finding]:
        """The worst findings kept, lowest score first (earliest first among equals)."""
        return [f for _, _, f in sorted(self._findings, key=lambda i: (-i[0], -i[1]))]

    def stats(self, agent: str, criterion: str) -> CriterionStats | None:
        """An agent name's scores on a criterion (failing count, mean, median, min, max),
        or None when it got none."""
        found = self._agents[agent]
        scores = found.by_criterion.get(criterion)
        if not scores:
            return None
        return CriterionStats(
            scored=len(scores),
            failing=found.failing.get(criterion, 0),
            mean=statistics.fmean(scores),
            median=statistics.median(scores),
            min=min(scores),
            max=max(scores),
        )

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
                    criteria[criterion] = found.as_dict()
            agents[name] = {"instances": self.instances(name), "criteria": criteria}
        return {
            "traces": self.traces,
            "failing_traces": len(self.failing_traces),
            "bar": self.bar,
            "bars": {c: self.bar_of(c) for c in self.criteria},
            "criteria": list(self.criteria),
            "agents": agents,
            "findings": self.findings_count,
            "not_evaluated": self.not_evaluated,
            "not_evaluated_reasons": dict(self.not_evaluated_reasons),
            "judge_input": {
                "budget_tokens": self.judge_budget[0] if self.judge_budget else None,
                "budget_source": self.judge_budget[1] if self.judge_budget else None,
                "judgements": self.judgements,
                "mean_tokens": round(self.judgement_input_tokens / max(1, self.judgements)),
                "largest_tokens": self.largest_judgement_input,
            },
            "judge_usage": {
                "total": line_usage(self.usage),
                "by_criterion": {c: line_usage(u) for c, u in self.usage_by_criterion.items()},
                "unpriced_lines": self.unpriced,
            },
            "worst_findings": [
                {
                    "trace_id": f.trace_id,
                    "criterion": f.criterion,
                    "agent": f.agent,
                    "agent_instance_id": f.agent_instance_id,
                    "score": f.score,
                    "explanation": f.explanation,
                    "steps": list(f.steps),
                }
                for f in self.findings
            ],
        }


def bars_text(summary: ScoreSummary) -> str:
    """How the summary holds scores: 'below 0.5', or 'below its bar (checks 1, ...)'."""
    if summary.bar is not None:
        return f"below {summary.bar:g}"
    bars = sorted({summary.bar_of(c) for c in summary.criteria})
    if len(bars) == 1:
        return f"below {bars[0]:g}"
    return "below their criterion's bar (" + ", ".join(f"{b:g}" for b in bars) + ")"


def format_summary(summary: ScoreSummary) -> str:
    """The failing agents first (the worst, with their explanation), then a table of
    agent names x criteria: instances, failing, and mean / median / min / max of their
    scores; then how many traces fail."""
    lines: list[str] = []
    findings = summary.findings
    if findings:
        lines.append(
            f"Failing agents, {bars_text(summary)} "
            f"(worst {len(findings)} of {summary.findings_count}):"
        )
        for f in findings:
            explanation = " ".join(f.explanation.split())
            if len(explanation) > 300:
                explanation = explanation[:297] + "..."
            lines.append(
                f"- {f.score:.2f} [{f.criterion}] {f.agent} in "
                f"{trace_name(f.trace_id, f.source)}: {explanation}"
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
        f"{'failing':>9}{'mean':>7}{'median':>7}{'min':>7}{'max':>7}"
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
            failing = f"{found.failing}/{found.scored}"
            lines.append(
                f"{head}  {_label(criterion):<{criterion_width}}{failing:>9}"
                f"{found.mean:>7.2f}{found.median:>7.2f}{found.min:>7.2f}{found.max:>7.2f}"
            )
        if first:
            lines.append(f"{name:<{agent_width}}{summary.instances(name):>9}  (no scores)")
    lines.append("")
    usage = format_usage(summary)
    if usage:
        lines.extend([usage, ""])
    inputs = input_sentence(summary)
    if inputs:
        lines.extend([inputs, ""])
    tail = (
        f"{summary.traces} traces, {len(summary.failing_traces)} failing "
        f"(an agent {bars_text(summary)})"
    )
    if summary.not_evaluated:
        tail += (
            f"; {summary.not_evaluated} agent results not evaluated (left out of the figures): "
            + _reasons(summary)
        )
    lines.append(tail)
    return "\n".join(lines)


def input_sentence(summary: ScoreSummary) -> str:
    """The judge's input budget per judgement and how much the judgements held ("" when
    no judge was used)."""
    if summary.judge_budget is None and not summary.judgements:
        return ""
    text = ""
    if summary.judge_budget is not None:
        budget, source = summary.judge_budget
        text = f"Judge input budget: {budget:,} tokens per judgement ({source})"
    if summary.judgements:
        mean = summary.judgement_input_tokens / summary.judgements
        largest = summary.largest_judgement_input
        held = (
            f"{summary.judgements:,} judgement{'s' if summary.judgements != 1 else ''} held "
            f"{mean:,.0f} input tokens on average, "
            f"{largest:,} at most"
        )
        if summary.judge_budget is not None:
            held += f" ({largest / summary.judge_budget[0]:.0%} of the budget)"
        text = f"{text}; {held}" if text else held[0].upper() + held[1:]
    return text + "."


def _reasons(summary: ScoreSummary) -> str:
    reasons = summary.not_evaluated_reasons
    if len(reasons) == 1:
        return next(iter(reasons))
    return "; ".join(f"{reason} ({count})" for reason, count in reasons.items())


def usd(dollars: float | None) -> str:
    """Dollars for people (`$1.50`, `$0.0042`); "n/a" when unknown."""
    if dollars is None or not math.isfinite(dollars):
        return "n/a"
    if dollars == 0:
        return "$0.00"
    if abs(dollars) >= 1:
        return f"${dollars:,.2f}"
    decimals = max(2, 1 - math.floor(math.log10(abs(dollars))))
    text = f"{dollars:.{decimals}f}"
    while text.endswith("0") and len(text.split(".")[1]) > 2:
        text = text[:-1]
    return f"${text}"


def usage_sentence(usage: JudgeUsage) -> str:
    """One line: calls, tokens in (cached), out, and dollars."""
    calls = f"{usage.calls:,} judge call{'s' if usage.calls != 1 else ''}"
    if usage.cached_calls:
        calls += f" ({usage.cached_calls:,} more answered from the judge's cache)"
    return (
        f"{calls}, {usage.input_tokens:,} tokens in ({usage.cached_input_tokens:,} cached), "
        f"{usage.output_tokens:,} out, "
        + (usd(usage.cost_usd) if usage.cost_usd is not None else "cost unknown")
    )


def format_usage(summary: ScoreSummary) -> str:
    """What the judge used, per criterion and in total: calls, tokens in, cached, out,
    dollars (empty when nothing was judged)."""
    by_criterion = summary.usage_by_criterion
    if not by_criterion:
        return ""
    width = max([len(_label(c)) for c in by_criterion] + [11]) + 2
    lines = [
        f"{'judge usage':<{width}}{'calls':>8}{'tokens in':>14}{'cached':>14}"
        f"{'tokens out':>12}{'cost':>11}"
    ]
    rows = [*by_criterion.items(), ("total", summary.usage)]
    for criterion, usage in rows:
        lines.append(
            f"{_label(criterion):<{width}}{usage.calls:>8,}{usage.input_tokens:>14,}"
            f"{usage.cached_input_tokens:>14,}{usage.output_tokens:>12,}"
            f"{usd(usage.cost_usd):>11}"
        )
    if summary.unpriced:
        lines.append(
            f"(cost unknown for {summary.unpriced} results: the judge's model has no price; "
            "tracejudge score --judge-prices FILE gives one)"
        )
    return "\n".join(lines)


def _label(criterion: str) -> str:
    return criterion if len(criterion) <= 40 else criterion[:37] + "..."
