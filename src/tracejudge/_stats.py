"""Small statistics in plain Python, shared by the attribution benchmark, calibration and
the comparison of experiment runs.

No numpy or scipy (they are not dependencies of tracejudge): a seeded percentile
bootstrap, percentiles interpolated as numpy's default ("linear") does, average ranks and
Spearman's rho as scipy computes them; the exact sign test (scipy.stats.binomtest with
p = 1/2), McNemar's exact test on paired pass/fail (statsmodels' `mcnemar(exact=True)`)
and a paired bootstrap interval. The tests check each against those libraries.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

__all__ = [
    "bootstrap_interval",
    "bootstrap_samples",
    "mcnemar_exact",
    "paired_difference_interval",
    "mean",
    "pearson",
    "percentile",
    "ranks",
    "sign_test",
    "spearman",
]

#: Bootstrap resamples unless told otherwise.
DEFAULT_RESAMPLES = 1000


def mean(values: Sequence[float]) -> float | None:
    """The mean, or None for no values."""
    return math.fsum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float:
    """The `q`-th percentile (0..100) of `values`, interpolated linearly between the two
    nearest ranks (numpy.percentile's default)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    fraction = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * fraction


def bootstrap_samples(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> list[list[int]]:
    """`resamples` lists of `n` item indexes drawn with replacement, from `seed`: the same
    seed gives the same resamples (so a reference implementation can be run on them)."""
    rng = random.Random(seed)
    return [[rng.randrange(n) for _ in range(n)] for _ in range(resamples)] if n else []


def bootstrap_interval(
    statistic: Callable[[Sequence[int]], float | None],
    n: int,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of `statistic` (a function of item indexes) over
    `n` items. Resamples where the statistic is undefined (None or NaN, say Cohen's kappa
    of a resample where every label is the same) are left out; None when no resample
    gives a value."""
    values = []
    for sample in bootstrap_samples(n, resamples, seed):
        value = statistic(sample)
        if value is not None and not math.isnan(value):
            values.append(value)
    if not values:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    return percentile(values, tail), percentile(values, 100.0 - tail)


def ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, ties sharing their average rank (scipy.stats.rankdata's "average")."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        average = (start + end) / 2.0 + 1.0
        for position in range(start, end + 1):
            result[order[position]] = average
        start = end + 1
    return result


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's correlation; None when either side does not vary (or too few points)."""
    if len(x) != len(y) or len(x) < 2:
        return None
    mx, my = math.fsum(x) / len(x), math.fsum(y) / len(y)
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson's correlation of the average ranks); None when undefined."""
    if len(x) != len(y):
        raise ValueError("spearman needs two sequences of the same length")
    return pearson(ranks(x), ranks(y))


def sign_test(successes: int, trials: int) -> float:
    """The exact two-sided p-value of `successes` out of `trials` under a fair coin
    (scipy.stats.binomtest(successes, trials, 0.5).pvalue): twice the smaller tail,
    at most 1; 1.0 for no trials. Computed with whole numbers, so exact."""
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return 1.0
    smaller = min(successes, trials - successes)
    tail = sum(math.comb(trials, k) for k in range(smaller + 1))
    return min(1.0, (2 * tail) / (1 << trials))  # whole numbers: exact for any size


def mcnemar_exact(worse: int, better: int) -> float:
    """McNemar's exact test of paired pass/fail: `worse` pairs passed before and failed
    after, `better` the other way round (the discordant pairs; the concordant ones do not
    count). The sign test of one against the other."""
    return sign_test(worse, worse + better)


def paired_difference_interval(
    before: Sequence[float],
    after: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean of `after[i] - before[i]`: the pairs
    (the same row in two runs) are resampled together. None for no pairs."""
    if len(before) != len(after):
        raise ValueError("a paired difference needs two sequences of the same length")
    differences = [b - a for a, b in zip(before, after, strict=True)]
    return bootstrap_interval(
        lambda sample: math.fsum(differences[i] for i in sample) / len(sample),
        len(differences),
        resamples=resamples,
        seed=seed,
        level=level,
    )
