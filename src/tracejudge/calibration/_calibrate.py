"""Calibrating a judge against people's labels: judge what they labelled, then compare.

Each label names a trace, an agent and a criterion. The judge (through the evaluation
service, exactly as `evaluate_trace` would judge that agent) scores the same agent on the
same criterion, `samples` times; an agent name with several instances in the trace gets
the lowest of their scores (the agent fails when any instance fails). Both verdicts are
pass/fail against the criterion's bar (`fail_under`, else 1.0 for a check and 0.5 for a
judged criterion); graded labels (`score`) are compared as scores too. Labels whose trace
or agent is not there, or that the judge did not score (not applicable, not evaluated),
are kept in `rows` with the reason and left out of the statistics.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

from tracejudge import _stats
from tracejudge.calibration._agreement import (
    cohen_kappa,
    confusion_matrix,
    krippendorff_alpha,
    percent_agreement,
    precision_recall,
)
from tracejudge.calibration._bands import describe
from tracejudge.errors import BadRequestError
from tracejudge.models import (
    CalibrationItem,
    CalibrationReport,
    Confusion,
    CriterionAgreement,
    Estimate,
    HumanLabel,
    JudgeUsage,
    LabelStats,
    LabelVerdict,
    MultiAgentTrace,
    Repeatability,
    default_bar,
)

__all__ = ["acalibrate", "calibrate"]

LABELS: tuple[LabelVerdict, ...] = ("pass", "fail")
_VALUE = {"pass": 1.0, "fail": 0.0}


def _criterion(text: str) -> Any:
    """A check or ready-made criterion by name, else the text itself (judged)."""
    from tracejudge.evaluation.service import named_evaluator

    try:
        return named_evaluator(text)
    except BadRequestError:
        return text


def _index(
    traces: Mapping[str, MultiAgentTrace] | Iterable[MultiAgentTrace],
) -> dict[str, MultiAgentTrace]:
    if isinstance(traces, Mapping):
        found = dict(traces)
        for trace in traces.values():
            if trace.trace_id:
                found.setdefault(trace.trace_id, trace)
        return found
    found = {}
    for trace in traces:
        if not trace.trace_id:
            raise BadRequestError(
                "a trace without trace_id cannot be matched to labels; pass traces as a "
                "mapping {trace id: trace}"
            )
        found[trace.trace_id] = trace
    return found


def _instances(trace: MultiAgentTrace, label: HumanLabel) -> list[str]:
    if label.agent_instance_id:
        agent = trace.agent_instance_by_id.get(label.agent_instance_id)
        if agent is None or (label.agent and agent.name != label.agent):
            return []
        return [agent.id]
    return [a.id for a in trace.iter_agents() if a.name == label.agent]


def _estimate(statistic: Any, n: int, resamples: int, seed: int, value: float | None) -> Estimate:
    if value is None or n == 0:
        return Estimate(value=value, n=n)
    interval = _stats.bootstrap_interval(statistic, n, resamples=resamples, seed=seed)
    low, high = interval if interval is not None else (None, None)
    return Estimate(value=value, low=low, high=high, n=n)


async def acalibrate(
    labels: Sequence[HumanLabel] | str | PathLike[str],
    *,
    traces: Mapping[str, MultiAgentTrace] | Iterable[MultiAgentTrace],
    judge: Any = None,
    samples: int = 1,
    fail_under: float | None = None,
    resamples: int = 1000,
    seed: int = 0,
    concurrency: int = 8,
) -> CalibrationReport:
    """How far `judge` (a spec such as "openai:gpt-4.1-mini", a `Judge`, or an
    `EvaluationService`) agrees with `labels` (`HumanLabel`s, or the path of a labels
    file) on `traces` (a mapping of trace id to trace, or traces that carry their
    `trace_id`). `samples` > 1 judges every item that many
    times (a judge built here from a spec then caches nothing) and reports repeatability."""
    from tracejudge.evaluation.service import EvaluationService
    from tracejudge.evaluation.settings import EvaluationSettings, build_service

    if samples < 1:
        raise BadRequestError(f"samples must be at least 1, got {samples}")
    if isinstance(labels, (str, PathLike)):
        from tracejudge.calibration._labels import read_labels

        labels = read_labels(labels)
    notes: list[str] = []
    owned = None
    if isinstance(judge, EvaluationService):
        service = judge
    else:
        if samples > 1 and getattr(judge, "cache", None) is not None:
            notes.append(
                "the judge caches its verdicts, so repeated samples may be copies of the first; "
                "build it with cache=False to measure its noise"
            )
        settings = EvaluationSettings(
            judge=judge, cache=False if samples > 1 else None, fail_under=fail_under
        )
        # A spec is built here (and closed here); None is no judge, not the environment's.
        service = (
            build_service(settings) if judge is not None else build_service(settings, judge=None)
        )
        owned = service if isinstance(judge, str) else None
    try:
        return await _calibrate(
            service,
            list(labels),
            _index(traces),
            samples,
            fail_under,
            resamples,
            seed,
            concurrency,
            notes,
        )
    finally:
        if owned is not None:
            await owned.aclose()


async def _calibrate(
    service: Any,
    labels: list[HumanLabel],
    traces: dict[str, MultiAgentTrace],
    samples: int,
    fail_under: float | None,
    resamples: int,
    seed: int,
    concurrency: int,
    notes: list[str],
) -> CalibrationReport:
    criteria = {label.criterion: _criterion(label.criterion) for label in labels}
    service.require_judge([c for c in criteria.values() if isinstance(c, str)])
    limit = asyncio.Semaphore(max(1, concurrency))
    usage = JudgeUsage()
    judged: dict[tuple[str, tuple[str, ...], str], list[tuple[float | None, str]]] = {}

    async def judge_item(key: tuple[str, tuple[str, ...], str]) -> None:
        nonlocal usage
        trace_id, instances, criterion = key
        trace = traces[trace_id]
        runs: list[tuple[float | None, str]] = []
        for _ in range(samples):
            scores, why = [], ""
            for instance in instances:
                async with limit:
                    result = await service.score_agent(trace, instance, criteria[criterion])
                if result is not None and result.usage is not None:
                    usage = usage + result.usage
                if result is None:
                    why = "the criterion does not apply to this agent"
                elif result.not_evaluated is not None:
                    why = f"not evaluated: {result.not_evaluated}"
                elif result.score is None:
                    why = f"not applicable: {result.explanation}"
                else:
                    scores.append(result.score)
                    why = result.explanation
            runs.append((min(scores) if scores else None, why))
        judged[key] = runs

    keys: dict[int, tuple[str, tuple[str, ...], str]] = {}
    rows: list[CalibrationItem] = []
    for position, label in enumerate(labels):
        trace = traces.get(label.trace_id)
        instances = _instances(trace, label) if trace is not None else []
        if trace is not None and instances:
            keys[position] = (label.trace_id, tuple(instances), label.criterion)
    await asyncio.gather(*(judge_item(k) for k in dict.fromkeys(keys.values())))

    for position, label in enumerate(labels):
        criterion = criteria[label.criterion]
        bar = fail_under if fail_under is not None else default_bar(not isinstance(criterion, str))
        row = CalibrationItem(
            trace_id=label.trace_id,
            agent=label.agent or "",
            agent_instance_id=label.agent_instance_id or "",
            criterion=label.criterion,
            who=label.who,
            human=label.verdict_at(bar),
            human_score=label.score,
        )
        key = keys.get(position)
        if label.trace_id not in traces:
            row.skipped = f"trace {label.trace_id!r} is not among the traces given"
        elif key is None:
            row.skipped = f"the trace has no agent {label.agent_instance_id or label.agent!r}"
        else:
            runs = judged[key]
            row.agent_instance_id = ",".join(key[1])
            row.agent = row.agent or traces[label.trace_id].agent_instance_by_id[key[1][0]].name
            row.judge_scores = [score for score, _ in runs]
            row.explanation = runs[0][1]
            first = runs[0][0]
            if first is None:
                row.skipped = f"the judge gave no score ({runs[0][1]})"
            else:
                row.judge = "fail" if first < bar else "pass"
        rows.append(row)
    return _report(service, rows, samples, resamples, seed, notes, usage, fail_under, criteria)


def _report(
    service: Any,
    rows: list[CalibrationItem],
    samples: int,
    resamples: int,
    seed: int,
    notes: list[str],
    usage: JudgeUsage,
    fail_under: float | None,
    criteria: Mapping[str, Any],
) -> CalibrationReport:
    used = [r for r in rows if r.skipped is None and r.judge is not None]
    human = [r.human for r in used]
    judge = [r.judge for r in used if r.judge is not None]  # (all of them: `used`)
    n = len(used)

    def pick(sample: Sequence[int]) -> tuple[list[LabelVerdict], list[LabelVerdict]]:
        return [human[i] for i in sample], [judge[i] for i in sample]

    def alpha_of(h: Sequence[str], j: Sequence[str]) -> float | None:
        return krippendorff_alpha([[_VALUE[x] for x in h], [_VALUE[x] for x in j]], "nominal")

    agreement = _estimate(
        lambda s: percent_agreement(*pick(s)), n, resamples, seed, percent_agreement(human, judge)
    )
    kappa = _estimate(
        lambda s: cohen_kappa(*pick(s)), n, resamples, seed, cohen_kappa(human, judge)
    )
    alpha = _estimate(lambda s: alpha_of(*pick(s)), n, resamples, seed, alpha_of(human, judge))
    graded = [r for r in used if r.human_score is not None and r.judge_scores[0] is not None]
    spearman = alpha_interval = None
    if graded:
        # (each of them a score: `graded`)
        hs = [h for r in graded if (h := r.human_score) is not None]
        js = [j for r in graded if (j := r.judge_scores[0]) is not None]

        def rho(sample: Sequence[int]) -> float | None:
            return _stats.spearman([hs[i] for i in sample], [js[i] for i in sample])

        def interval_alpha(sample: Sequence[int]) -> float | None:
            return krippendorff_alpha(
                [[hs[i] for i in sample], [js[i] for i in sample]], "interval"
            )

        m = len(graded)
        spearman = _estimate(rho, m, resamples, seed, rho(range(m)))
        alpha_interval = _estimate(interval_alpha, m, resamples, seed, interval_alpha(range(m)))
    band, band_text, cautions = describe(kappa)
    report = CalibrationReport(
        judge=str(getattr(service.judge, "name", service.judge)) if service.judge else None,
        items=n,
        skipped=len(rows) - n,
        agreement=agreement,
        kappa=kappa,
        alpha=alpha,
        graded_items=len(graded),
        spearman=spearman,
        alpha_interval=alpha_interval,
        human_alpha=_human_alpha(rows, resamples, seed),
        confusion=Confusion(matrix=confusion_matrix(human, judge, LABELS)),
        per_label=[
            LabelStats(label=label, precision=p, recall=r, f1=f, support=s)
            for label, (p, r, f, s) in zip(
                LABELS, precision_recall(human, judge, LABELS), strict=True
            )
        ],
        band=band,
        band_text=band_text,
        by_criterion=_by_criterion(used),
        repeatability=_repeatability(rows, samples, fail_under, criteria) if samples > 1 else None,
        notes=[*notes, *cautions],
        usage=usage,
        resamples=resamples,
        seed=seed,
        rows=rows,
    )
    if report.skipped:
        report.notes.append(f"{report.skipped} labels left out (see rows[].skipped)")
    return report


def _by_criterion(used: Sequence[CalibrationItem]) -> list[CriterionAgreement]:
    found = []
    for criterion in dict.fromkeys(r.criterion for r in used):
        mine = [r for r in used if r.criterion == criterion]
        h, j = [r.human for r in mine], [r.judge for r in mine]
        found.append(
            CriterionAgreement(
                criterion=criterion,
                items=len(mine),
                agreement=percent_agreement(h, j),
                kappa=cohen_kappa(h, j),
            )
        )
    return found


def _human_alpha(rows: Sequence[CalibrationItem], resamples: int, seed: int) -> Estimate | None:
    """Krippendorff's alpha among the people, over items that two or more labelled."""
    by_item: dict[tuple[str, str, str], dict[str, str]] = {}
    for number, row in enumerate(rows):
        key = (row.trace_id, row.agent_instance_id or row.agent, row.criterion)
        by_item.setdefault(key, {})[row.who or f"unnamed {number}"] = row.human
    shared = [votes for votes in by_item.values() if len(votes) >= 2]
    if not shared:
        return None
    people = sorted({who for votes in shared for who in votes})

    def alpha(sample: Sequence[int]) -> float | None:
        data = [[_VALUE[shared[i][w]] if w in shared[i] else None for i in sample] for w in people]
        return krippendorff_alpha(data, "nominal")

    return _estimate(alpha, len(shared), resamples, seed, alpha(range(len(shared))))


def _repeatability(
    rows: Sequence[CalibrationItem],
    samples: int,
    fail_under: float | None,
    criteria: Mapping[str, Any],
) -> Repeatability:
    seen: dict[tuple[str, str, str], list[float]] = {}
    bars: dict[tuple[str, str, str], float] = {}
    for row in rows:
        scores = [s for s in row.judge_scores if s is not None]
        if len(row.judge_scores) == samples and len(scores) == samples:
            key = (row.trace_id, row.agent_instance_id, row.criterion)
            seen[key] = [float(s) for s in scores]
            check = not isinstance(criteria[row.criterion], str)
            bars[key] = fail_under if fail_under is not None else default_bar(check)
    if not seen:
        return Repeatability(samples=samples, items=0)
    passes = {key: [s >= bars[key] for s in scores] for key, scores in seen.items()}
    return Repeatability(
        samples=samples,
        items=len(seen),
        flip_rate=sum(len(set(p)) > 1 for p in passes.values()) / len(seen),
        mean_variance=statistics.fmean(statistics.pvariance(s) for s in seen.values()),
        pass_k=sum(all(p) for p in passes.values()) / len(seen),
    )


def calibrate(
    labels: Sequence[HumanLabel] | str | PathLike[str],
    *,
    traces: Mapping[str, MultiAgentTrace] | Iterable[MultiAgentTrace],
    judge: Any = None,
    samples: int = 1,
    fail_under: float | None = None,
    resamples: int = 1000,
    seed: int = 0,
    concurrency: int = 8,
) -> CalibrationReport:
    """`acalibrate` for code that does not await (a notebook, a script)."""
    from tracejudge import _sync

    return _sync.run(
        acalibrate(
            labels,
            traces=traces,
            judge=judge,
            samples=samples,
            fail_under=fail_under,
            resamples=resamples,
            seed=seed,
            concurrency=concurrency,
        )
    )
