"""The agreement statistics give what the reference implementations give, on generated
data: scikit-learn's kappa, confusion matrix and precision/recall, the `krippendorff`
package's alpha at every level of measurement, with missing values."""

from __future__ import annotations

import random
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

from tracejudge import calibration

LABELS = ["pass", "fail"]


def _pair(seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    n = rng.randint(2, 150)
    rate = rng.random()
    truth = [rng.choice(LABELS) if rng.random() < 0.8 else "pass" for _ in range(n)]
    judged = [t if rng.random() < rate else rng.choice(LABELS) for t in truth]
    return truth, judged


@pytest.mark.parametrize("seed", range(40))
def test_kappa_confusion_and_precision_recall_match_scikit_learn(seed: int) -> None:
    truth, judged = _pair(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = cohen_kappa_score(truth, judged)
    mine = calibration.cohen_kappa(truth, judged)
    if np.isnan(reference):
        assert mine is None
    else:
        assert mine == pytest.approx(reference, abs=1e-12)
    assert (
        calibration.confusion_matrix(truth, judged, LABELS)
        == confusion_matrix(truth, judged, labels=LABELS).tolist()
    )
    precision, recall, f1, support = precision_recall_fscore_support(
        truth, judged, labels=LABELS, zero_division=0
    )
    mine_pr = calibration.precision_recall(truth, judged, LABELS)
    assert [m[0] for m in mine_pr] == pytest.approx(list(precision))
    assert [m[1] for m in mine_pr] == pytest.approx(list(recall))
    assert [m[2] for m in mine_pr] == pytest.approx(list(f1))
    assert [m[3] for m in mine_pr] == list(support)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", range(15))
def test_alpha_matches_the_krippendorff_package(level: str, seed: int) -> None:
    rng = random.Random(seed * 7 + len(level))
    raters, items = rng.randint(2, 5), rng.randint(3, 80)
    scale = (
        [0.0, 0.25, 0.5, 0.75, 1.0] if level in ("interval", "ratio") and seed % 2 else [1, 2, 3, 4]
    )
    truth = [rng.choice(scale) for _ in range(items)]
    data = [
        [
            None if rng.random() < 0.15 else (t if rng.random() < 0.7 else rng.choice(scale))
            for t in truth
        ]
        for _ in range(raters)
    ]
    array = np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            reference = krippendorff.alpha(reliability_data=array, level_of_measurement=level)
        except ValueError:
            reference = float("nan")
    mine = calibration.krippendorff_alpha(data, level)  # type: ignore[arg-type]
    if np.isnan(reference):
        assert mine is None
    else:
        assert mine == pytest.approx(reference, abs=1e-9)


def test_undefined_agreement_is_none() -> None:
    assert calibration.cohen_kappa(["pass"] * 5, ["pass"] * 5) is None
    assert calibration.krippendorff_alpha([[1, 1, 1], [1, 1, 1]]) is None
    assert calibration.krippendorff_alpha([[1, None], [None, 2]]) is None
    assert calibration.cohen_kappa(["pass", "fail"], ["fail", "pass"]) == pytest.approx(-1.0)


@pytest.mark.parametrize(
    ("value", "band"),
    [
        (0.1, "exploration"),
        (0.39, "exploration"),
        (0.4, "monitoring"),
        (0.69, "monitoring"),
        (0.7, "gating"),
        (0.95, "gating"),
    ],
)
def test_bands(value: float, band: str) -> None:
    assert calibration.band_of(value)[0] == band
