"""An evaluation result as recorded on a trace (a GenAI `gen_ai.evaluation.result` event)."""

from __future__ import annotations

from pydantic import ConfigDict

from tracejudge.models._base import WireModel

__all__ = ["LABEL_FAIL", "LABEL_NOT_APPLICABLE", "LABEL_PASS", "RecordedEvaluation"]

#: The labels tracejudge writes: pass / fail against the threshold, or not applicable.
LABEL_PASS = "pass"
LABEL_FAIL = "fail"
LABEL_NOT_APPLICABLE = "not applicable"


class RecordedEvaluation(WireModel):
    """One evaluation of one agent (or model call) that a trace carries: what any
    evaluator, tracejudge among them, wrote as a `gen_ai.evaluation.result` event.

    `name` is the criterion or check; `score` is None when the event had no numeric
    score (a not-applicable result, or a label-only evaluator); `error_type` is set when
    the evaluation itself failed.
    """

    model_config = ConfigDict(extra="forbid")
    _omit_when_none = frozenset({"label", "explanation", "response_id", "error_type"})

    name: str
    score: float | None = None
    label: str | None = None
    explanation: str | None = None
    response_id: str | None = None
    error_type: str | None = None
