"""Answers: scores, per-criterion and per-trace evaluation results, judge usage, task status."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from tracejudge.models._base import WireModel
from tracejudge.models._verdict import JUDGED_BAR, Failure, ScoredAgent, Step, fails

__all__ = [
    "AgentTraceResult",
    "EvaluationResponse",
    "ExplorationRead",
    "ExplorationRecord",
    "JudgeUsage",
    "MultiAgentTraceResponse",
    "ScoreResponse",
    "ScoreStatus",
    "SummaryStatistics",
    "TaskResponse",
    "TaskStatus",
    "TraceVerdict",
    "VerdictStatus",
]


class JudgeUsage(WireModel):
    """What scoring cost: judge calls, cache hits, tokens and wall time; and, where the
    provider reports them, the prompt tokens read from its prompt cache
    (`cached_input_tokens`, counted in `input_tokens` too) and written to it
    (`cache_write_tokens`), and the dollars (`cost_usd`, None when the judge's model has
    no price: `tracejudge.models.PriceTable`)."""

    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    latency_seconds: float = 0.0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None

    _omit_when_none = frozenset({"cost_usd"})

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return JudgeUsage(
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            latency_seconds=self.latency_seconds + other.latency_seconds,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=sum(costs) if costs else None,
        )


class ExplorationRead(WireModel):
    """One tool call of an exploring judge: the tool, its arguments, the tokens it read
    (about; 0 for a call that failed) and why it failed, if it did."""

    tool: str
    arguments: Any = None
    tokens: int = 0
    error: str | None = None

    _omit_when_none = frozenset({"error"})


class ExplorationRecord(WireModel):
    """What an exploring judge read of material too long to show whole: why it explored,
    its budget (`max_input_tokens`) and the largest request it sent, its rounds (model
    calls), every read, and the tokens they held together."""

    reason: str
    max_input_tokens: int
    rounds: int = 0
    reads: list[ExplorationRead] = Field(default_factory=list)
    tokens_read: int = 0
    largest_request_tokens: int = 0


ScoreStatus = Literal["scored", "not_applicable", "not_evaluated"]


class ScoreResponse(WireModel):
    """A score in 0..1 (None: the criterion does not apply) with its explanation.

    tracejudge adds `steps` (where in the agent the finding points: the checks know),
    `not_evaluated` (why no judgement could be made, say a budget ran out: the score is
    then None but the criterion is not "not applicable"; see `status`) and `exploration`
    (what the judge read when the material was too long to show whole).
    """

    score: float | None = None
    explanation: str
    cleaned_explanation: str | None = None
    usage: JudgeUsage | None = None
    steps: list[Step] | None = None
    not_evaluated: str | None = None
    exploration: ExplorationRecord | None = None

    _omit_when_none = frozenset(
        {"cleaned_explanation", "usage", "steps", "not_evaluated", "exploration"}
    )

    @property
    def status(self) -> ScoreStatus:
        """scored, not_applicable (score None) or not_evaluated (with its reason)."""
        if self.not_evaluated is not None:
            return "not_evaluated"
        return "not_applicable" if self.score is None else "scored"

    @model_validator(mode="after")
    def _not_evaluated_has_no_score(self) -> ScoreResponse:
        if self.not_evaluated is not None and self.score is not None:
            raise ValueError("a result that was not evaluated has no score: leave score null")
        return self

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

    _omit_when_none = frozenset(
        {"cleaned_explanation", "usage", "steps", "not_evaluated", "exploration", "criterion"}
    )


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
    `overall_score` (mean of the non-null agent scores) and `explanation`; and the
    verdict per agent (`tracejudge.models._verdict` says what failing means):
    `fail_under` (the bar), `worst_agent` (the lowest-scoring instance) and
    `failing_agents` (how many instances scored below the bar).
    """

    request_id: str
    results_by_agent_name: dict[str, AgentTraceResult]
    agent_scores: dict[str, float | None] = Field(default_factory=dict)
    overall_score: float | None = None
    explanation: str = ""
    criterion: str = ""
    usage: JudgeUsage | None = None
    fail_under: float | None = None
    worst_agent: ScoredAgent | None = None
    failing_agents: int | None = None

    _omit_when_none = frozenset({"usage", "fail_under", "worst_agent", "failing_agents"})

    def bar(self, fail_under: float | None = None) -> float:
        """The bar an agent's score is held to: `fail_under` when given, else this
        answer's own, else the judged criteria's default."""
        if fail_under is not None:
            return fail_under
        return self.fail_under if self.fail_under is not None else JUDGED_BAR

    def failing(self, fail_under: float | None = None) -> list[ScoredAgent]:
        """The instances below the bar, worst first (tree order among equals)."""
        bar = self.bar(fail_under)
        found = [
            ScoredAgent(agent_name=result.agent_name, agent_instance_id=instance_id, score=score)
            for result in self.results_by_agent_name.values()
            for instance_id, answer in result.results_by_agent_instance_id.items()
            if answer is not None and (score := answer.score) is not None and fails(score, bar)
        ]
        return sorted(found, key=lambda agent: agent.score)

    def scores_by_agent_name(self) -> dict[str, float | None]:
        """Agent name -> its score, for printing (`agent_scores` is keyed by instance id).
        A name with several instances gets its worst instance's score, as the verdict
        reads it; None when none of them got a score. In the order of
        `results_by_agent_name` (the trace's, root first)."""
        found: dict[str, float | None] = {}
        for result in self.results_by_agent_name.values():
            scores = [
                answer.score
                for answer in result.results_by_agent_instance_id.values()
                if answer is not None and answer.score is not None
            ]
            found[result.agent_name] = min(scores) if scores else None
        return found

    def __str__(self) -> str:
        return self.model_dump_json(indent=2)


VerdictStatus = Literal["passed", "failed", "unscored"]


class TraceVerdict(WireModel):
    """A trace's verdict over all its criteria (see this module's docstring).

    `status`: failed (some pair is below its bar), passed (something was scored and
    nothing failed), unscored (nothing got a score: every pair was not applicable or not
    evaluated). `failing_agents` counts distinct instances that failed at least one
    criterion; `scored`, `not_applicable` and `not_evaluated` count pairs.
    """

    status: VerdictStatus
    worst_score: float | None = None
    worst: ScoredAgent | None = None
    worst_criterion: str | None = None
    failing_agents: int = 0
    failures: list[Failure] = Field(default_factory=list)
    scored: int = 0
    not_applicable: int = 0
    not_evaluated: int = 0

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @classmethod
    def of(
        cls, responses: Sequence[MultiAgentTraceResponse], *, fail_under: float | None = None
    ) -> TraceVerdict:
        """The verdict of a trace's answers (one per criterion). `fail_under` replaces each
        answer's own bar."""
        failures: list[tuple[float, int, Failure]] = []
        failing: set[str] = set()
        worst: tuple[float, ScoredAgent, str] | None = None
        scored = not_applicable = not_evaluated = 0
        for response in responses:
            bar = response.bar(fail_under)
            for result in response.results_by_agent_name.values():
                for instance_id, answer in result.results_by_agent_instance_id.items():
                    if answer is not None and answer.not_evaluated is not None:
                        not_evaluated += 1
                        continue
                    if answer is None or answer.score is None:
                        not_applicable += 1
                        continue
                    scored += 1
                    score = answer.score
                    if worst is None or score < worst[0]:
                        agent = ScoredAgent(
                            agent_name=result.agent_name,
                            agent_instance_id=instance_id,
                            score=score,
                        )
                        worst = (score, agent, response.criterion)
                    if fails(score, bar):
                        failing.add(instance_id)
                        failure = Failure(
                            criterion=response.criterion,
                            agent_name=result.agent_name,
                            agent_instance_id=instance_id,
                            score=score,
                            fail_under=bar,
                            explanation=answer.explanation,
                            steps=list(answer.steps or ()),
                        )
                        failures.append((score, len(failures), failure))
        status: VerdictStatus = "failed" if failures else "passed" if scored else "unscored"
        return cls(
            status=status,
            worst_score=worst[0] if worst else None,
            worst=worst[1] if worst else None,
            worst_criterion=worst[2] if worst else None,
            failing_agents=len(failing),
            failures=[f for _, _, f in sorted(failures, key=lambda item: item[:2])],
            scored=scored,
            not_applicable=not_applicable,
            not_evaluated=not_evaluated,
        )


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
