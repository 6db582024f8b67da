"""Agreement statistics in plain Python: Cohen's kappa, Krippendorff's alpha, the confusion
matrix, precision and recall per label.

Each is written to give what the reference implementation gives (the tests compare them
on generated data): scikit-learn's `cohen_kappa_score`, `confusion_matrix` and
`precision_recall_fscore_support(..., zero_division=0)`, and the `krippendorff`
package's `alpha` (nominal, ordinal, interval and ratio levels, missing values allowed).
Where a statistic is undefined (kappa when both raters use one and the same label; alpha
when the data hold a single value) the answer is None, not NaN.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Literal

__all__ = [
    "Level",
    "cohen_kappa",
    "confusion_matrix",
    "krippendorff_alpha",
    "percent_agreement",
    "precision_recall",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]


def percent_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """The share of items on which both raters agree."""
    if not a:
        return None
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (unweighted)."""
    n = len(a)
    if n != len(b):
        raise ValueError("cohen_kappa needs two label lists of the same length")
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected == 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def confusion_matrix(
    truth: Sequence[Hashable], predicted: Sequence[Hashable], labels: Sequence[Hashable]
) -> list[list[int]]:
    """`matrix[i][j]`: items with true label `labels[i]` predicted `labels[j]`."""
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for t, p in zip(truth, predicted, strict=True):
        if t in index and p in index:
            matrix[index[t]][index[p]] += 1
    return matrix


def precision_recall(
    truth: Sequence[Hashable], predicted: Sequence[Hashable], labels: Sequence[Hashable]
) -> list[tuple[float, float, float, int]]:
    """Per label: (precision, recall, F1, support); 0.0 where a ratio is undefined."""
    found = []
    for label in labels:
        hit = sum(t == label and p == label for t, p in zip(truth, predicted, strict=True))
        said = sum(p == label for p in predicted)
        support = sum(t == label for t in truth)
        precision = hit / said if said else 0.0
        recall = hit / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        found.append((precision, recall, f1, support))
    return found


def _distance(
    level: Level, values: list[float], counts: dict[float, float]
) -> Callable[[float, float], float]:
    """The squared difference function of a level of measurement."""
    if level == "nominal":
        return lambda c, k: 0.0 if c == k else 1.0
    if level == "interval":
        return lambda c, k: (c - k) ** 2
    if level == "ratio":
        return lambda c, k: 0.0 if c + k == 0 else ((c - k) / (c + k)) ** 2
    # ordinal: the values' ranks, weighted by how often each value was given
    position = {v: i for i, v in enumerate(values)}
    cumulative = [0.0]
    for v in values:
        cumulative.append(cumulative[-1] + counts[v])

    def ordinal(c: float, k: float) -> float:
        low, high = sorted((position[c], position[k]))
        between = cumulative[high + 1] - cumulative[low]
        return (between - (counts[c] + counts[k]) / 2.0) ** 2

    return ordinal


def krippendorff_alpha(
    data: Sequence[Sequence[float | None]], level: Level = "nominal"
) -> float | None:
    """Krippendorff's alpha of `data`, one row per rater and one column per item (None:
    that rater did not rate that item). Items rated by fewer than two raters are left out."""
    if not data:
        return None
    items = len(data[0])
    if any(len(row) != items for row in data):
        raise ValueError("every rater's row must have one value per item")
    coincidence: dict[tuple[float, float], float] = {}
    for column in range(items):
        present = [value for row in data if (value := row[column]) is not None]
        m = len(present)
        if m < 2:
            continue
        for i, c in enumerate(present):
            for j, k in enumerate(present):
                if i != j:
                    key = (float(c), float(k))
                    coincidence[key] = coincidence.get(key, 0.0) + 1.0 / (m - 1)
    totals: dict[float, float] = {}
    for (c, _), weight in coincidence.items():
        totals[c] = totals.get(c, 0.0) + weight
    n = sum(totals.values())
    values = sorted(totals)
    if len(values) < 2 or n <= 1:
        return None
    delta = _distance(level, values, totals)
    observed = sum(weight * delta(c, k) for (c, k), weight in coincidence.items())
    expected = sum(totals[c] * totals[k] * delta(c, k) for c in values for k in values)
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected
