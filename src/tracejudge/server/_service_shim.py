"""TEMPORARY: an adapter with the contract of `tracejudge.evaluation.service.EvaluationService`.

The lead is writing `evaluation/service.py` (LAYOUT.md: THE evaluation path). Until it
lands, this module gives the server the same four methods over `Evaluator`. Delete it
once `tracejudge.evaluation.service` exists, and import `EvaluationService` from there
(only `tracejudge.server.app` imports this module).
"""

from __future__ import annotations

from collections.abc import Sequence

from tracejudge import checks
from tracejudge.errors import BadRequestError
from tracejudge.evaluation import (
    Evaluator,
    TraceCheck,
    conversation_agent,
    validate_criteria,
)
from tracejudge.judges import Judge
from tracejudge.models import (
    EvaluationResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    RewardRequest,
    TraceRewardRequest,
)

__all__ = ["EvaluationService"]


def _named_check(name: str) -> TraceCheck:
    for check in checks.ALL:
        if check.name == name:
            return check
    known = ", ".join(c.name for c in checks.ALL)
    raise BadRequestError(
        f"evaluator_name {name!r} is not known here; this server knows the checks {known} "
        "(or send evaluation_criteria with the criterion's text)"
    )


class EvaluationService:
    """Wire requests in, wire answers out, through one `Evaluator`."""

    def __init__(self, judge: Judge | None = None, *, max_concurrency: int = 16) -> None:
        self.judge = judge
        self._evaluator = Evaluator(judge, max_concurrency=max_concurrency)

    def _criterion(self, request: RewardRequest | TraceRewardRequest) -> str | TraceCheck:
        if request.evaluation_criteria is not None:
            checked, _ = validate_criteria(request.evaluation_criteria)
            return checked[0]
        assert request.evaluator_name is not None
        return _named_check(request.evaluator_name)

    async def evaluate(self, request: RewardRequest) -> EvaluationResponse:
        criterion = self._criterion(request)
        agent = conversation_agent(request.messages, system=request.system, tools=request.tools)
        self._evaluator.require_conversation(agent)
        self._evaluator.require_judge([criterion])
        return await self._evaluator.score_conversation(
            agent,
            criterion,
            evaluate_latest=request.evaluate_latest,
            clean_explanation=request.explanation_cleaning == "end_user",
        )

    async def evaluate_trace(self, request: TraceRewardRequest) -> MultiAgentTraceResponse:
        criterion = self._criterion(request)
        self._evaluator.require_judge([criterion])
        return await self._evaluator.score_trace(request.trace, criterion)

    async def score_trace(
        self, trace: MultiAgentTrace, criteria: Sequence[str | TraceCheck]
    ) -> list[MultiAgentTraceResponse]:
        return await self._evaluator.evaluate_trace(trace, list(criteria))

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()
