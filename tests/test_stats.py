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
