"""The contract between deterministic checks and the evaluator.

A check is any object with a `name` and an `evaluate(trace)` method that
scores agent instances without a judge model. The evaluator treats its answer
exactly like the per-instance answers of a judged criterion: summary
statistics per agent name, `overall_score`, explanation.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tracejudge.models import MultiAgentTrace, ScoreResponse

__all__ = ["TraceCheck"]


@runtime_checkable
class TraceCheck(Protocol):
    """A criterion computed from the trace itself."""

    #: Shown as the `criterion` of the evaluation result.
    name: str

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        """Score keyed by agent instance id; None (or a missing id) means not applicable."""
        ...
