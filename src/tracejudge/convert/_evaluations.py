"""Evaluation results a trace carries: GenAI `gen_ai.evaluation.result` events.

tracejudge writes its scores back onto traces as these events (see
`tracejudge.evaluation.events`), and other evaluators write them too; reading them
back puts each on the agent it judges (`AgentInstance.evaluations`). An event is a span
event or a log record tied to a span; it belongs to the agent whose span it is on, or
to the nearest agent above that span (the model call it judges, or the short span the
events travel on).
"""

from __future__ import annotations

import math

from tracejudge import semconv
from tracejudge.convert._common import as_str
from tracejudge.convert._records import EventRecord
from tracejudge.models import RecordedEvaluation

__all__ = ["is_evaluation", "recorded_evaluation"]


def is_evaluation(event: EventRecord) -> bool:
    """Whether the event is a GenAI evaluation result."""
    return event.name == semconv.EVENT_EVALUATION_RESULT


def _score(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def recorded_evaluation(event: EventRecord) -> RecordedEvaluation | None:
    """The result an evaluation event records, or None when it names no evaluation
    (`gen_ai.evaluation.name` is required by the conventions)."""
    attrs = event.attributes
    name = as_str(attrs.get(semconv.GEN_AI_EVALUATION_NAME))
    if not name:
        return None
    return RecordedEvaluation(
        name=name,
        score=_score(attrs.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE)),
        label=as_str(attrs.get(semconv.GEN_AI_EVALUATION_SCORE_LABEL)),
        explanation=as_str(attrs.get(semconv.GEN_AI_EVALUATION_EXPLANATION)),
        response_id=as_str(attrs.get(semconv.GEN_AI_RESPONSE_ID)),
        error_type=as_str(attrs.get(semconv.ERROR_TYPE)),
    )


def judged_instance(event: EventRecord) -> str | None:
    """The agent instance id the event names itself (tracejudge writes it), or None."""
    return as_str(event.attributes.get(semconv.TRACEJUDGE_AGENT_INSTANCE_ID))
