"""How far a judge agrees with people (`tracejudge calibrate`): chance-corrected agreement
with intervals, the confusion matrix, precision and recall per label, rank correlation for
graded labels, the band it falls in, and how repeatable the judge is."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tracejudge.models._answers import JudgeUsage
from tracejudge.models._base import WireModel
from tracejudge.models._estimate import Estimate
from tracejudge.models._labels import LabelVerdict

__all__ = [
    "AgreementBand",
    "CalibrationItem",
    "CalibrationReport",
    "Confusion",
    "CriterionAgreement",
    "LabelStats",
    "Repeatability",
]

#: What a level of agreement supports: below 0.4 exploration only, 0.4 to 0.7
#: monitoring, about 0.7 and up gating releases.
AgreementBand = Literal["exploration", "monitoring", "gating"]


def _both_verdicts() -> list[LabelVerdict]:
    return ["pass", "fail"]


class Confusion(WireModel):
    """Counts of (person's verdict, judge's verdict): `matrix[i][j]` is how many items
    people labelled `labels[i]` and the judge `labels[j]`."""

    labels: list[LabelVerdict] = Field(default_factory=_both_verdicts)
    matrix: list[list[int]] = Field(default_factory=lambda: [[0, 0], [0, 0]])


class LabelStats(WireModel):
    """Precision, recall and F1 of the judge for one label, people's labels as the truth;
    `support`: how many items people gave that label (0 where undefined, as sklearn's
    `zero_division=0`)."""

    label: LabelVerdict
    precision: float
    recall: float
    f1: float
    support: int


class Repeatability(WireModel):
    """The judge asked `samples` times per item: `flip_rate` the share of items whose
    verdicts were not all the same, `mean_variance` the mean over items of the variance of
    their scores, `pass_k` the share of items that passed every time (pass^k)."""

    samples: int
    items: int
    flip_rate: float | None = None
    mean_variance: float | None = None
    pass_k: float | None = None


class CriterionAgreement(WireModel):
    """Agreement on the items of one criterion."""

    criterion: str
    items: int
    agreement: float | None = None
    kappa: float | None = None


class CalibrationItem(WireModel):
    """One label and what the judge said of the same (trace, agent, criterion)."""

    trace_id: str
    agent: str
    agent_instance_id: str
    criterion: str
    who: str | None = None
    human: LabelVerdict
    human_score: float | None = None
    judge: LabelVerdict | None = None
    judge_scores: list[float | None] = Field(default_factory=list)
    explanation: str = ""
    skipped: str | None = None

    _omit_when_none = frozenset({"who", "human_score", "judge", "skipped"})


class CalibrationReport(WireModel):
    """A judge measured against people's labels.

    `kappa` (Cohen's) and `alpha` (Krippendorff's, nominal) compare each label with the
    judge's verdict on the same item (pass/fail: a graded label held to the bar); both
    carry a seeded bootstrap 95% interval. Where labels are graded, `spearman` and
    `alpha_interval` compare the scores. `human_alpha`: how far people agree among
    themselves where several labelled one item (the most a judge can be expected to
    reach). `band` places `kappa`: below 0.4 exploration only, 0.4-0.7 monitoring, 0.7 and
    up gating releases; `band_text` says what that supports. `repeatability` is there when
    each item was judged several times.
    """

    judge: str | None = None
    items: int
    skipped: int = 0
    agreement: Estimate
    kappa: Estimate
    alpha: Estimate
    graded_items: int = 0
    spearman: Estimate | None = None
    alpha_interval: Estimate | None = None
    human_alpha: Estimate | None = None
    confusion: Confusion = Field(default_factory=Confusion)
    per_label: list[LabelStats] = Field(default_factory=list)
    band: AgreementBand | None = None
    band_text: str = ""
    by_criterion: list[CriterionAgreement] = Field(default_factory=list)
    repeatability: Repeatability | None = None
    notes: list[str] = Field(default_factory=list)
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    resamples: int = 1000
    seed: int = 0
    rows: list[CalibrationItem] = Field(default_factory=list)

    _omit_when_none = frozenset(
        {"spearman", "alpha_interval", "human_alpha", "band", "repeatability"}
    )
