"""Calibration: does this judge agree with my people?

- `read_labels(path)` / `write_labels(path, labels)`: the labels file, JSON lines of
  `tracejudge.models.HumanLabel` (trace id, agent and/or instance id, criterion, verdict
  pass/fail and/or score, note, who, when).
- `calibrate(labels, traces=..., judge=...)` (and `acalibrate`): the judge scores what
  people labelled, through the evaluation service; the answer, a
  `tracejudge.models.CalibrationReport`, holds Cohen's kappa and Krippendorff's alpha with
  seeded bootstrap intervals, the confusion matrix, precision and recall per label,
  Spearman for graded labels, the band (below 0.4 exploration only, 0.4-0.7 monitoring,
  0.7 and up gating releases) and, with `samples=k`, flip rate, variance and pass^k.
- `cohen_kappa`, `krippendorff_alpha`, `confusion_matrix`, `precision_recall`,
  `percent_agreement`: the statistics, plain Python, checked against scikit-learn and the
  `krippendorff` package.

`tracejudge calibrate LABELS --traces INPUT... --judge SPEC` runs it from the shell.
"""

from __future__ import annotations

from tracejudge.calibration._agreement import (
    cohen_kappa,
    confusion_matrix,
    krippendorff_alpha,
    percent_agreement,
    precision_recall,
)
from tracejudge.calibration._bands import BANDS, band_of
from tracejudge.calibration._calibrate import acalibrate, calibrate
from tracejudge.calibration._labels import read_labels, write_labels

__all__ = [
    "BANDS",
    "acalibrate",
    "band_of",
    "calibrate",
    "cohen_kappa",
    "confusion_matrix",
    "krippendorff_alpha",
    "percent_agreement",
    "precision_recall",
    "read_labels",
    "write_labels",
]
