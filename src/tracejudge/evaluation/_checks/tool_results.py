"""The `tool_results` check: every tool call got a result, and it is not an error."""

from __future__ import annotations

from collections.abc import Sequence

from tracejudge.evaluation._checks.calls import CallOutcome, call_outcomes
from tracejudge.evaluation._checks.explain import explain, list_ids, plural
from tracejudge.evaluation._checks.run import BuiltinCheck, Run
from tracejudge.models import ScoreResponse, Step

__all__ = ["ToolResults", "tool_results"]


class ToolResults(BuiltinCheck):
    """Every tool call got a result, and the result is not an error.

    A call's result is the tool response with the same id in the inputs of a later
    interaction of the same agent, else the one its tool span recorded
    (`LLMInteraction.tool_results`: an agent's last calls, or inputs that do not repeat
    the conversation). Errors are JSON error objects (`{"error": ...}`,
    `"status": 500`, `"success": false`, MCP `isError`, Anthropic `is_error`), tracebacks,
    results that start with an error line (`ValueError: ...`, `Error: ...`) and HTTP error
    statuses (`404 Not Found`, `HTTP 503`). Not counted, each noted: calls that
    `tool_arguments` rejects (their error result is that fault's consequence), calls in the
    agent's last interaction whose result was not recorded (it stopped or handed off
    there: `final_answer` judges that),
    and calls whose later inputs do not repeat the conversation at all (an instrumentation
    that records only the first message), where a result cannot be looked for.

    Score: the fraction of counted calls with a non-error result; None without any.
    """

    name = "tool_results"

    def _score(self, run: Run) -> ScoreResponse | None:
        outcomes = call_outcomes(run)
        counted = [o for o in outcomes if o.counted]
        notes = self._notes(outcomes)
        if not counted:
            if not outcomes:
                return None
            return ScoreResponse(
                score=None,
                explanation=explain(f"{run.name}: no tool call to judge here.", (), notes),
            )
        problems = []
        steps = [run.step(o.index, o.call) for o in counted if o.status in ("missing", "error")]
        for o in counted:
            if o.status == "missing":
                problems.append(f"{run.where(o.index, o.call)}: no result ({o.detail})")
            elif o.status == "error":
                where = (
                    "recorded by its tool span"
                    if o.result_index is None or o.result_index == o.index
                    else f"in {Step.call_name(o.result_index)}"
                )
                problems.append(
                    f"{run.where(o.index, o.call)}: the result ({where}) is an error: {o.detail}"
                )
        ok = sum(1 for o in counted if o.status == "ok")
        errors = sum(1 for o in counted if o.status == "error")
        missing = len(counted) - ok - errors
        summary = (
            f"{run.name}: {ok} of {plural(len(counted), 'tool call')} got a result that is "
            f"not an error ({plural(errors, 'error')}, {missing} without a result)."
        )
        return ScoreResponse(
            score=ok / len(counted),
            explanation=explain(summary, problems, notes),
            steps=steps or None,
        )

    @staticmethod
    def _notes(outcomes: Sequence[CallOutcome]) -> list[str]:
        reasons = {
            "invalid": "the call itself is invalid (see tool_arguments)",
            "unanswered": "made in the agent's last interaction, no result recorded (see "
            "final_answer)",
            "unknown": "the later inputs do not repeat the conversation, so no result can be "
            "looked for",
        }
        notes = []
        for status, reason in reasons.items():
            calls = [o.call for o in outcomes if o.status == status]
            if calls:
                notes.append(
                    f"not counted: {plural(len(calls), 'call')} ({list_ids(calls)}): {reason}"
                )
        return notes


tool_results: ToolResults = ToolResults()
