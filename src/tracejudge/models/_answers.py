"""Answers: scores, per-criterion and per-trace evaluation results, judge usage, task status."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator

from tracejudge.models._base import WireModel

__all__ = [
    "AgentTraceResult",
    "EvaluationResponse",
    "JudgeUsage",
    "MultiAgentTraceResponse",
    "ScoreResponse",
    "SummaryStatistics",
    "TaskResponse",
    "TaskStatus",
]


class JudgeUsage(WireModel):
    """What scoring cost: judge calls, cache hits, tokens and wall time."""

    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    latency_seconds: float = 0.0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            latency_seconds=self.latency_seconds + other.latency_seconds,
        )


class ScoreResponse(WireModel):
    """A score in 0..1 (None: the criterion does not apply) with its explanation."""

    score: float | None = None
    explanation: str
    cleaned_explanation: str | None = None
    usage: JudgeUsage | None = None

    _omit_when_none = frozenset({"cleaned_explanation", "usage"})

    @field_validator("score")
    @classmethod
    def _score_in_range(cls, value: float | None) -> float | None:
        if value is None or math.isnan(value):
            return None
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"score must be between 0 and 1 or null, got {value}")
        return value


class EvaluationResponse(ScoreResponse):
    """The answer of `Composo.evaluate()` for one criterion."""

    criterion: str | None = None

    _omit_when_none = frozenset({"cleaned_explanation", "usage", "criterion"})


class SummaryStatistics(WireModel):
    """Median, min, max and population standard deviation of the non-null scores of one
    agent name's instances; all None when none of them got a score."""

    median: float | None = None
    min: float | None = None
    max: float | None = None
    std: float | None = None

    @classmethod
    def of(cls, scores: Sequence[float | None]) -> SummaryStatistics:
        """Statistics of the scores that are not None (population std)."""
        values = [s for s in scores if s is not None]
        if not values:
            return cls()
        return cls(
            median=statistics.median(values),
            min=min(values),
            max=max(values),
            std=statistics.pstdev(values),
        )


class AgentTraceResult(WireModel):
    """The results of one criterion for every instance of one agent name: each instance's
    `ScoreResponse` by instance id (None where the criterion does not apply), and their
    `summary_statistics`."""

    agent_name: str
    results_by_agent_instance_id: dict[str, ScoreResponse | None]
    summary_statistics: SummaryStatistics | None = None


class MultiAgentTraceResponse(WireModel):
    """The answer of `Composo.evaluate_trace()` for one criterion.

    Carries the wire fields (`request_id`, `results_by_agent_name`) and the
    seed SDK's flat fields: `agent_scores` (agent instance id -> score),
    `overall_score` (mean of the non-null agent scores) and `explanation`.
    """

    request_id: str
    results_by_agent_name: dict[str, AgentTraceResult]
    agent_scores: dict[str, float | None] = Field(default_factory=dict)
    overall_score: float | None = None
    explanation: str = ""
    criterion: str = ""
    usage: JudgeUsage | None = None

    _omit_when_none = frozenset({"usage"})

    def __str__(self) -> str:
        return self.model_dump_json(indent=2)


TaskStatus = Literal["queued", "running", "done", "failed"]


#: The words servers of an earlier version used, read as today's.
_OLD_TASK_STATUSES = {"pending": "queued", "succeeded": "done"}


class TaskResponse(WireModel):
    """Status of a background evaluation: queued, running, done (with `result`) or
    failed (with `error`)."""

    task_id: str
    status: TaskStatus

    @field_validator("status", mode="before")
    @classmethod
    def _today_s_words(cls, value: Any) -> Any:
        return _OLD_TASK_STATUSES.get(value, value) if isinstance(value, str) else value

    result: dict[str, Any] | list[dict[str, Any]] | None = None
    error: str | None = None
