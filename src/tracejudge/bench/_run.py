"""Running the benchmark: every item attributed by every method, then the rows.

Each (item, method) is one `EvaluationService.attribute` call with the item's outcome and
`failed=True` (every item failed), only that method, timed; a judge error leaves the item
unanswered (wrong) with the error kept, and so does a judgement not evaluated (over the
judge's input budget, past the cost cap), with the reason. Rows are per split and method
(and "all" over the splits when there are several): agent accuracy, step accuracy
(exact), within ±k, nDCG@k, each the mean over the items that carry that label with a
percentile bootstrap 95% interval (`resamples`, `seed`: the same seed gives the same
intervals), and per trace the seconds, judge tokens and dollars (None when no verdict had
a price: an unpriced model, or no judge call).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from tracejudge import _stats
from tracejudge.bench._items import BenchItem
from tracejudge.bench._metrics import score_item
from tracejudge.errors import ComposoError
from tracejudge.models import BenchItemResult, BenchReport, BenchRow, Estimate

__all__ = ["estimate", "rows_of", "run_bench"]


def estimate(values: Sequence[float], *, resamples: int, seed: int) -> Estimate:
    """The mean of `values` with its bootstrap interval."""
    if not values:
        return Estimate(value=None, n=0)
    interval = _stats.bootstrap_interval(
        lambda sample: _stats.mean([values[i] for i in sample]),
        len(values),
        resamples=resamples,
        seed=seed,
    )
    low, high = interval if interval is not None else (None, None)
    return Estimate(value=_stats.mean(values), low=low, high=high, n=len(values))


def _flags(results: Sequence[BenchItemResult], field: str) -> list[float]:
    return [float(v) for r in results if (v := getattr(r, field)) is not None]


def _row(
    split: str, method: str, results: Sequence[BenchItemResult], resamples: int, seed: int
) -> BenchRow:
    n = len(results)
    costs = [r.usage.cost_usd for r in results]
    priced = [c for c in costs if c is not None]
    return BenchRow(
        split=split,
        method=method,
        items=n,
        answered=sum(1 for r in results if r.predicted_agent is not None),
        errors=sum(1 for r in results if r.error),
        agent_accuracy=estimate(_flags(results, "agent_correct"), resamples=resamples, seed=seed),
        step_accuracy=estimate(_flags(results, "step_correct"), resamples=resamples, seed=seed),
        step_within_k=estimate(_flags(results, "within_k"), resamples=resamples, seed=seed),
        ndcg=estimate(_flags(results, "ndcg"), resamples=resamples, seed=seed),
        seconds_per_trace=sum(r.seconds for r in results) / n if n else 0.0,
        input_tokens_per_trace=sum(r.usage.input_tokens for r in results) / n if n else 0.0,
        output_tokens_per_trace=sum(r.usage.output_tokens for r in results) / n if n else 0.0,
        cost_per_trace_usd=sum(priced) / n if n and priced else None,
        judge_calls=sum(r.usage.calls for r in results),
    )


def rows_of(
    results: Sequence[BenchItemResult], methods: Sequence[str], *, resamples: int, seed: int
) -> list[BenchRow]:
    """The rows of `results`: per split (in order of first appearance) and method."""
    splits = list(dict.fromkeys(r.split for r in results))
    groups = [(s, [r for r in results if r.split == s]) for s in splits]
    if len(splits) > 1:
        groups.append(("all", list(results)))
    return [
        _row(split, method, [r for r in group if r.method == method], resamples, seed)
        for split, group in groups
        for method in methods
    ]


async def run_bench(
    service: Any,
    items: Sequence[BenchItem],
    methods: Sequence[str],
    *,
    k: int = 1,
    ndcg_k: int = 5,
    resamples: int = _stats.DEFAULT_RESAMPLES,
    seed: int = 0,
    concurrency: int = 4,
    max_step_chars: int = 3000,
    ground_truth: bool = True,
    on_done: Callable[[], None] | None = None,
) -> BenchReport:
    """Attribute every item with every method through `service` (an `EvaluationService`)."""
    from tracejudge.evaluation.attribution import AttributionRequest

    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(item: BenchItem, method: str) -> BenchItemResult:
        async with limit:
            started = time.perf_counter()
            request = AttributionRequest(
                trace=item.trace,
                methods=[method],
                outcome=item.outcome,
                failed=True,
                max_step_chars=max_step_chars,
            )
            try:
                attribution = await service.attribute(request)
                # A judgement the judge could not make (over its input budget, past the
                # run's cost cap) is an unanswered item like a judge error, said why.
                skipped = [n for n in attribution.notes if ": not evaluated (" in n]
                error = "; ".join(skipped) or None
            except ComposoError as problem:
                attribution, error = None, f"{type(problem).__name__}: {problem}"
            seconds = time.perf_counter() - started
            if on_done is not None:
                on_done()
            return score_item(
                item, method, attribution, k=k, ndcg_k=ndcg_k, seconds=seconds, error=error
            )

    results = list(await asyncio.gather(*(one(i, m) for m in methods for i in items)))
    judge = getattr(service, "judge", None)
    return BenchReport(
        judge=str(getattr(judge, "name", judge)) if judge is not None else None,
        methods=list(methods),
        k=k,
        ndcg_k=ndcg_k,
        resamples=resamples,
        seed=seed,
        ground_truth=ground_truth,
        rows=rows_of(results, methods, resamples=resamples, seed=seed),
        items=results,
    )
