"""Two runs compared, row by row, with a gate that does not flap.

For each agent name and criterion: each run's pass rate and mean score, pass^k (every
repeat of a row passed), pass@k (at least one did) and its flaky rows (repeats that
disagree); then the paired comparison over the rows both runs have (a row's verdict is
its share of passing repeats): the mean difference of pass rate and of score with a
percentile bootstrap interval (pairs resampled together), the exact sign test of the rows
that got worse against those that got better (McNemar's exact test when there is one
repeat), the rows that regressed and improved, and the hard breaks (a row that passed in
every one of at least `hard_break_repeats` repeats and now fails in every one).

The verdict (`GatePolicy`): **regressed** when the drop in pass rate is significant
(p < `level`) and at least `min_effect`; **improved** the same way up; **inconclusive**
when fewer than `min_rows` rows are paired, or the drop is at least `min_effect` but not
significant (more rows or repeats would tell); else **unchanged**. Inconclusive is never
a failure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from tracejudge import _stats
from tracejudge.experiments.record import RowResult, StoredRun

__all__ = ["Comparison", "CriterionComparison", "GatePolicy", "RunSide", "compare_runs"]

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive"]
GateResult = Literal["fail", "pass", "inconclusive"]


@dataclass(frozen=True)
class GatePolicy:
    """When a drop counts: significant at `level` and at least `min_effect` (a share of
    rows, 0..1); fewer than `min_rows` paired rows is inconclusive; a hard break needs
    `hard_break_repeats` repeats of the row in both runs. The bootstrap draws `resamples`
    from `seed`."""

    level: float = 0.05
    min_effect: float = 0.05
    min_rows: int = 10
    hard_break_repeats: int = 3
    resamples: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.level < 1:
            raise ValueError(f"level must be between 0 and 1, got {self.level}")
        if not 0 <= self.min_effect <= 1:
            raise ValueError(f"min_effect must be between 0 and 1, got {self.min_effect}")


@dataclass(frozen=True)
class RunSide:
    """One run's figures for one agent and criterion."""

    rows: int
    pass_rate: float | None
    mean_score: float | None
    repeats: int
    pass_all_k: float | None  # pass^k: rows where every repeat passed
    pass_any_k: float | None  # pass@k: rows where at least one repeat passed
    flaky_rows: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CriterionComparison:
    """The comparison of one agent on one criterion."""

    agent: str
    criterion: str
    baseline: RunSide
    candidate: RunSide
    paired_rows: int
    pass_rate_difference: float | None
    pass_rate_interval: tuple[float, float] | None
    score_difference: float | None
    score_interval: tuple[float, float] | None
    worse: int
    better: int
    p_value: float
    verdict: Verdict
    reason: str
    regressed_rows: list[str]
    improved_rows: list[str]
    hard_breaks: list[str]


@dataclass(frozen=True)
class Comparison:
    """Two runs compared (see the module's docstring)."""

    baseline: str
    candidate: str
    policy: GatePolicy
    criteria: list[CriterionComparison]
    cost: dict[str, Any]
    latency: dict[str, Any]
    errors: dict[str, int]
    #: The rows that regressed or improved somewhere: their input and expected output, and
    #: each run's output, trace id and verdicts (of the first repeat), to show side by side.
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)

    def gate(self, *, hard_breaks: bool = False) -> tuple[GateResult, list[str]]:
        """fail (a regression, or with `hard_breaks` a hard break), else inconclusive
        (something could not be told), else pass; with the reasons."""
        failures = [
            f"{c.agent} / {c.criterion}: {c.reason}"
            for c in self.criteria
            if c.verdict == "regressed"
        ]
        if hard_breaks:
            failures += [
                f"{c.agent} / {c.criterion}: hard break on rows {', '.join(c.hard_breaks[:10])}"
                for c in self.criteria
                if c.hard_breaks
            ]
        if failures:
            return "fail", failures
        unsure = [
            f"{c.agent} / {c.criterion}: {c.reason}"
            for c in self.criteria
            if c.verdict == "inconclusive"
        ]
        return ("inconclusive", unsure) if unsure else ("pass", [])

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _verdicts(
    results: Iterable[RowResult],
) -> dict[tuple[str, str], dict[str, list[tuple[bool, float]]]]:
    """(agent, criterion) -> row id -> each repeat's (passed, score), scored ones only."""
    found: dict[tuple[str, str], dict[str, list[tuple[bool, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for result in results:
        if result.error is not None:
            continue
        for score in result.scores:
            if score.passed is None or score.score is None:
                continue
            found[score.agent, score.criterion][result.id].append((score.passed, score.score))
    return found


def _share(values: list[tuple[bool, float]]) -> float:
    return sum(passed for passed, _ in values) / len(values)


def _side(rows: dict[str, list[tuple[bool, float]]]) -> RunSide:
    if not rows:
        return RunSide(0, None, None, 0, None, None)
    shares = [_share(v) for v in rows.values()]
    scores = [_stats.mean([s for _, s in v]) or 0.0 for v in rows.values()]
    return RunSide(
        rows=len(rows),
        pass_rate=_stats.mean(shares),
        mean_score=_stats.mean(scores),
        repeats=max(len(v) for v in rows.values()),
        pass_all_k=_stats.mean([float(all(p for p, _ in v)) for v in rows.values()]),
        pass_any_k=_stats.mean([float(any(p for p, _ in v)) for v in rows.values()]),
        flaky_rows=sorted(i for i, v in rows.items() if len({p for p, _ in v}) > 1),
    )


def _compare_one(
    agent: str,
    criterion: str,
    before: dict[str, list[tuple[bool, float]]],
    after: dict[str, list[tuple[bool, float]]],
    policy: GatePolicy,
) -> CriterionComparison:
    paired = [row for row in before if row in after]
    shares = [(_share(before[r]), _share(after[r])) for r in paired]
    means = [
        (
            _stats.mean([s for _, s in before[r]]) or 0.0,
            _stats.mean([s for _, s in after[r]]) or 0.0,
        )
        for r in paired
    ]
    changes = {r: b - a for r, (a, b) in zip(paired, shares, strict=True)}
    worse = sum(d < 0 for d in changes.values())
    better = sum(d > 0 for d in changes.values())
    p_value = _stats.sign_test(worse, worse + better)
    difference = _stats.mean(list(changes.values()))
    interval = score_interval = None
    score_difference = None
    if paired:
        interval = _stats.paired_difference_interval(
            [a for a, _ in shares],
            [b for _, b in shares],
            resamples=policy.resamples,
            seed=policy.seed,
            level=1 - policy.level,
        )
        score_difference = _stats.mean([b - a for a, b in means])
        score_interval = _stats.paired_difference_interval(
            [a for a, _ in means],
            [b for _, b in means],
            resamples=policy.resamples,
            seed=policy.seed,
            level=1 - policy.level,
        )
    verdict, reason = _verdict(len(paired), difference, p_value, policy)
    hard = [
        r
        for r in paired
        if min(len(before[r]), len(after[r])) >= policy.hard_break_repeats
        and all(p for p, _ in before[r])
        and not any(p for p, _ in after[r])
    ]
    return CriterionComparison(
        agent=agent,
        criterion=criterion,
        baseline=_side(before),
        candidate=_side(after),
        paired_rows=len(paired),
        pass_rate_difference=difference,
        pass_rate_interval=interval,
        score_difference=score_difference,
        score_interval=score_interval,
        worse=worse,
        better=better,
        p_value=p_value,
        verdict=verdict,
        reason=reason,
        regressed_rows=sorted((r for r in paired if changes[r] < 0), key=lambda r: changes[r]),
        improved_rows=sorted((r for r in paired if changes[r] > 0), key=lambda r: -changes[r]),
        hard_breaks=hard,
    )


def _verdict(
    paired: int, difference: float | None, p_value: float, policy: GatePolicy
) -> tuple[Verdict, str]:
    if paired < policy.min_rows or difference is None:
        return "inconclusive", (
            f"only {paired} row{'' if paired == 1 else 's'} in both runs; at least "
            f"{policy.min_rows} are needed to tell"
        )
    change = f"pass rate {difference:+.1%} (p = {p_value:.3g})"
    significant = p_value < policy.level
    large = abs(difference) >= policy.min_effect and not math.isclose(difference, 0.0)
    if significant and large:
        return ("regressed" if difference < 0 else "improved"), change
    if difference <= -policy.min_effect:
        return "inconclusive", (
            f"{change}: a drop of at least {policy.min_effect:.0%}, not significant at "
            f"{policy.level}; more rows or repeats would tell"
        )
    return "unchanged", change


def _row_side(result: RowResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        "output": result.output,
        "error": result.error,
        "trace_id": result.trace_id,
        "seconds": result.seconds,
        "scores": [asdict(score) for score in result.scores],
    }


def _changed_rows(
    criteria: list[CriterionComparison], baseline: StoredRun, candidate: StoredRun
) -> dict[str, dict[str, Any]]:
    changed = {r for c in criteria for r in (*c.regressed_rows, *c.improved_rows)}
    first_before = {r.id: r for r in reversed(baseline.results) if r.id in changed}
    first_after = {r.id: r for r in reversed(candidate.results) if r.id in changed}
    found: dict[str, dict[str, Any]] = {}
    for row in sorted(changed):
        either = first_after.get(row) or first_before.get(row)
        found[row] = {
            "input": either.input if either else None,
            "expected": either.expected if either else None,
            "baseline": _row_side(first_before.get(row)),
            "candidate": _row_side(first_after.get(row)),
        }
    return found


def _cost(run: StoredRun) -> dict[str, Any]:
    return dict(run.record.cost)


def _latency(results: list[RowResult]) -> dict[str, float | None]:
    seconds = [r.seconds for r in results]
    return {
        "mean_seconds": _stats.mean(seconds),
        "p50_seconds": _stats.percentile(seconds, 50) if seconds else None,
        "p95_seconds": _stats.percentile(seconds, 95) if seconds else None,
    }


def _delta(before: Any, after: Any) -> Any:
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        return after - before
    return None


def compare_runs(
    baseline: StoredRun, candidate: StoredRun, policy: GatePolicy | None = None
) -> Comparison:
    """Compare `candidate` with `baseline` (see the module's docstring)."""
    policy = policy or GatePolicy()
    before = _verdicts(baseline.results)
    after = _verdicts(candidate.results)
    keys = list(before) + [k for k in after if k not in before]
    criteria = [
        _compare_one(
            agent,
            criterion,
            before.get((agent, criterion), {}),
            after.get((agent, criterion), {}),
            policy,
        )
        for agent, criterion in keys
    ]
    cost_before, cost_after = _cost(baseline), _cost(candidate)
    latency_before, latency_after = _latency(baseline.results), _latency(candidate.results)
    return Comparison(
        baseline=baseline.where,
        candidate=candidate.where,
        policy=policy,
        criteria=criteria,
        cost={
            "baseline": cost_before,
            "candidate": cost_after,
            "delta": {k: _delta(cost_before.get(k), v) for k, v in cost_after.items()},
        },
        latency={
            "baseline": latency_before,
            "candidate": latency_after,
            "delta": {k: _delta(latency_before[k], v) for k, v in latency_after.items()},
        },
        errors={
            "baseline": sum(r.error is not None for r in baseline.results),
            "candidate": sum(r.error is not None for r in candidate.results),
        },
        rows=_changed_rows(criteria, baseline, candidate),
    )
