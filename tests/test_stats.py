"""The plain-Python statistics (`tracejudge._stats`) agree with numpy and scipy."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from tracejudge import _stats


@pytest.mark.parametrize("seed", range(20))
def test_percentile_ranks_and_spearman_match_numpy_and_scipy(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(3, 60)
    x = [rng.choice([0.0, 0.25, 0.5, 1.0]) if seed % 2 else rng.random() for _ in range(n)]
    y = [v + rng.gauss(0, 0.3) for v in x]
    for q in (0, 2.5, 25, 50, 97.5, 100):
        assert _stats.percentile(x, q) == pytest.approx(float(np.percentile(x, q)))
    assert _stats.ranks(x) == pytest.approx(list(rankdata(x)))
    assert _stats.spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)


def test_undefined_statistics_are_none_not_nan() -> None:
    assert _stats.spearman([1, 1, 1], [1, 2, 3]) is None
    assert _stats.mean([]) is None
    assert _stats.bootstrap_interval(lambda s: None, 5) is None


def test_the_bootstrap_is_seeded_and_leaves_undefined_resamples_out() -> None:
    assert _stats.bootstrap_samples(5, 3, seed=1) == _stats.bootstrap_samples(5, 3, seed=1)
    assert _stats.bootstrap_samples(5, 3, seed=1) != _stats.bootstrap_samples(5, 3, seed=2)
    values = [0.0, 1.0, 1.0, 1.0]
    kept = []

    def statistic(sample: list[int]) -> float | None:
        picked = [values[i] for i in sample]
        result = None if len(set(picked)) == 1 else sum(picked) / len(picked)
        if result is not None:
            kept.append(result)
        return result

    interval = _stats.bootstrap_interval(statistic, 4, resamples=300, seed=5)
    assert interval == pytest.approx(tuple(np.percentile(kept, [2.5, 97.5])))
    assert len(kept) < 300


# --------------------------------------------------------------------------- paired tests


@pytest.mark.parametrize("trials", [0, 1, 2, 5, 17, 40, 101])
def test_the_sign_test_is_scipys_binomial_test_exactly(trials: int) -> None:
    from scipy.stats import binomtest

    for successes in range(trials + 1):
        expected = 1.0 if trials == 0 else binomtest(successes, trials, 0.5).pvalue
        assert _stats.sign_test(successes, trials) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_mcnemar_exact_is_the_exact_binomial_of_the_discordant_pairs(seed: int) -> None:
    # statsmodels' mcnemar(table, exact=True) is min(1, 2 * binom.cdf(min(b, c), b + c, .5))
    # of the table's off-diagonal cells; statsmodels is not a test dependency, scipy is.
    from scipy.stats import binom

    rng = random.Random(seed)
    before = [rng.random() < 0.8 for _ in range(rng.randint(10, 120))]
    after = [b if rng.random() < 0.8 else not b for b in before]
    worse = sum(b and not a for b, a in zip(before, after, strict=True))
    better = sum(a and not b for b, a in zip(before, after, strict=True))
    discordant = worse + better
    expected = min(1.0, 2 * binom.cdf(min(worse, better), discordant, 0.5)) if discordant else 1
    assert _stats.mcnemar_exact(worse, better) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_the_paired_bootstrap_interval_agrees_with_scipy_within_monte_carlo_error(
    seed: int,
) -> None:
    from scipy.stats import bootstrap

    rng = random.Random(seed)
    before = [float(rng.random() < 0.7) for _ in range(80)]
    after = [b if rng.random() < 0.75 else 1.0 - b for b in before]
    ours = _stats.paired_difference_interval(before, after, resamples=4000, seed=seed)
    assert ours is not None
    theirs = bootstrap(
        (np.array(before), np.array(after)),
        lambda a, b, axis: np.mean(b - a, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=4000,
        method="percentile",
        random_state=seed,
    ).confidence_interval
    # Each end is a 2.5% quantile of 4000 resamples: its Monte-Carlo standard error is
    # about 0.006 here (the difference's sd ~0.065); both ends agree within 4 of them.
    assert ours[0] == pytest.approx(theirs.low, abs=0.025)
    assert ours[1] == pytest.approx(theirs.high, abs=0.025)
    # and the resampling is of pairs: a constant difference has a zero-width interval
    assert _stats.paired_difference_interval([0.0] * 10, [1.0] * 10) == (1.0, 1.0)


def test_the_paired_tests_name_their_bad_input() -> None:
    with pytest.raises(ValueError, match="successes <= trials"):
        _stats.sign_test(5, 3)
    with pytest.raises(ValueError, match="same length"):
        _stats.paired_difference_interval([1.0], [1.0, 0.0])
