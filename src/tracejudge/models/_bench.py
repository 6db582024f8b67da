"""The attribution benchmark's results (`tracejudge bench attribution`): per item, and per
split and method with bootstrap intervals, cost and time.

Steps are compared as whole numbers: the step index the attribution ranks first must
equal a labelled one (a prediction of step 10 for a true step 1 is wrong; Who&When's own
scorer, which counts the true number appearing anywhere in the prediction, is not used).
`within_k` allows a distance of at most `k`. nDCG@k ranks the distinct steps of the
causes against the labelled steps (binary relevance): with one labelled step it is
1/log2(1 + its rank) when it is in the first k, else 0.
"""

from __future__ import annotations

from pydantic import Field

from tracejudge.models._answers import JudgeUsage
from tracejudge.models._base import WireModel
from tracejudge.models._estimate import Estimate

__all__ = ["BenchItemResult", "BenchReport", "BenchRow"]


class BenchItemResult(WireModel):
    """One labelled trace attributed by one method."""

    item: str
    split: str
    method: str
    true_agents: list[str] = Field(default_factory=list)
    true_steps: list[int] = Field(default_factory=list)
    predicted_agent: str | None = None
    predicted_step: int | None = None
    ranked_steps: list[int] = Field(default_factory=list)
    agent_correct: bool | None = None
    step_correct: bool | None = None
    within_k: bool | None = None
    ndcg: float | None = None
    seconds: float = 0.0
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    error: str | None = None

    _omit_when_none = frozenset({"error"})


class BenchRow(WireModel):
    """The results of one method on one split (or on all of them: split "all")."""

    split: str
    method: str
    items: int
    answered: int
    errors: int = 0
    agent_accuracy: Estimate
    step_accuracy: Estimate
    step_within_k: Estimate
    ndcg: Estimate
    seconds_per_trace: float
    input_tokens_per_trace: float
    output_tokens_per_trace: float
    cost_per_trace_usd: float | None = None
    judge_calls: int = 0


class BenchReport(WireModel):
    """A benchmark run: its settings, one row per (split, method), every item's result."""

    judge: str | None = None
    methods: list[str]
    k: int
    ndcg_k: int
    resamples: int
    seed: int
    ground_truth: bool = True
    rows: list[BenchRow] = Field(default_factory=list)
    items: list[BenchItemResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
