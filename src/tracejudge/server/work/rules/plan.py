"""What the rules decide for one complete trace: the criteria it is scored against, each
one's bar, and each matching rule's outcome with its reason.

`plan_scoring(facts, rules, checks)` is pure: the same trace and rules give the same plan
on every replica. For each enabled rule whose filter keeps the trace, the trace is in the
rule's sample (`sampled`, from the trace id) or not: in it, the rule's judge criteria are
added (`scored`); out of it, they are not (`sampled_out`, saying so). The checks run on
every trace unless a matching rule samples them (`sample_checks`) and none of those rules
picked the trace. When several rules ask for the same criterion, it is scored once and held
to the highest of their bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracejudge.evaluation import TraceCheck
from tracejudge.server.work.rules.model import RuleBody, TraceFacts
from tracejudge.server.work.rules.sampling import sampled

__all__ = ["ActiveRule", "Decision", "ScoringPlan", "plan_scoring"]


@dataclass(frozen=True)
class ActiveRule:
    """A stored rule: its body and its revision."""

    body: RuleBody
    revision: int = 1

    @property
    def name(self) -> str:
        return self.body.name


@dataclass
class Decision:
    """What one rule decided for the trace."""

    rule: str
    revision: int
    outcome: str  # scored, sampled_out, over_budget
    reason: str


@dataclass
class ScoringPlan:
    """The criteria (in order), each criterion's bar where a rule set one, which rule asked
    for each judge criterion first (its cost is that rule's), and the decisions."""

    criteria: list[str | TraceCheck] = field(default_factory=list)
    bars: dict[str, float] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    #: The rules that scored the trace (their session criteria may judge its session).
    scored: list[ActiveRule] = field(default_factory=list)

    def drop_rule(self, rule: str, reason: str) -> None:
        """Leave out what only `rule` asked for (its budget is spent), saying why."""
        for decision in self.decisions:
            if decision.rule == rule:
                decision.outcome, decision.reason = "over_budget", reason
        dropped = {c.text for r in self.scored if r.name == rule for c in r.body.criteria}
        self.scored = [r for r in self.scored if r.name != rule]
        others = {c.text for r in self.scored for c in r.body.criteria}
        for text in dropped:  # held to the bars of the rules still asking for it
            self.bars.pop(text, None)
            for kept in self.scored:
                for asked in kept.body.criteria:
                    if asked.text == text:
                        _raise_bar(self.bars, text, asked.bar)
        self.criteria = [c for c in self.criteria if not isinstance(c, str) or c in others]
        self.owners = {c: r for c, r in self.owners.items() if c in others}
        for criterion in list(self.owners):
            if self.owners[criterion] == rule:
                owner = next(r.name for r in self.scored if criterion in _texts(r.body))
                self.owners[criterion] = owner

    @property
    def judged(self) -> bool:
        return any(isinstance(c, str) for c in self.criteria)


def _texts(rule: RuleBody) -> set[str]:
    return {c.text for c in rule.criteria}


def _percent(rate: float) -> str:
    return f"{rate * 100:.3g}%"


def _raise_bar(bars: dict[str, float], criterion: str, bar: float | None) -> None:
    if bar is not None:
        bars[criterion] = max(bar, bars.get(criterion, bar))


def plan_scoring(
    facts: TraceFacts, rules: Sequence[ActiveRule], checks: Sequence[TraceCheck]
) -> ScoringPlan:
    """The plan for one trace (see the module's docstring)."""
    plan = ScoringPlan()
    texts: list[str] = []
    samplers: list[bool] = []  # of the matching rules that sample the checks: picked?
    for rule in rules:
        body = rule.body
        if not body.enabled or not body.filter.matches(facts):
            continue
        # A rule with no judge criteria to sample (check bars, session criteria: those are
        # sampled by session id) keeps every trace its filter keeps.
        samples = bool(body.criteria) or body.sample_checks
        picked = sampled(facts.trace_id, body.sample_rate) if samples else True
        if body.sample_checks:
            samplers.append(picked)
        if picked or not body.sample_checks:
            for name, bar in body.check_bars.items():
                _raise_bar(plan.bars, name, bar)
        if not picked:
            ran = "; its checks ran" if body.check_bars and not body.sample_checks else ""
            plan.decisions.append(
                Decision(
                    body.name,
                    rule.revision,
                    "sampled_out",
                    f"not in the rule's {_percent(body.sample_rate)} sample (decided from the "
                    f"trace id, as every replica decides){ran}",
                )
            )
            continue
        plan.scored.append(rule)
        for criterion in body.criteria:
            if criterion.text not in texts:
                texts.append(criterion.text)
                plan.owners[criterion.text] = body.name
            _raise_bar(plan.bars, criterion.text, criterion.bar)
        judged = f"{len(body.criteria)} judge criteria" if body.criteria else "its checks"
        sample = ""
        if samples and body.sample_rate < 1:
            sample = f" (in its {_percent(body.sample_rate)} sample)"
        if body.session_criteria:
            sample += "; its session criteria judge the sessions its sample picks"
        plan.decisions.append(
            Decision(body.name, rule.revision, "scored", f"scored with {judged}{sample}")
        )
    run_checks = not samplers or any(samplers)
    plan.criteria = [*texts, *(checks if run_checks else ())]
    return plan
