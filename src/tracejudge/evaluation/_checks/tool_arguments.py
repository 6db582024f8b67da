"""The `tool_arguments` check: tool calls name an available tool, with arguments that fit
its schema.
"""

from __future__ import annotations

from tracejudge.evaluation._checks.calls import call_outcomes
from tracejudge.evaluation._checks.explain import explain, list_calls, plural
from tracejudge.evaluation._checks.run import BuiltinCheck, Run
from tracejudge.models import ScoreResponse

__all__ = ["ToolArguments", "tool_arguments"]


class ToolArguments(BuiltinCheck):
    """Every tool call names a tool offered in that interaction, with arguments that are a
    JSON object valid against the tool's JSON schema (required fields, types, enums, ...).

    Score: the fraction of the agent's tool calls that are valid; None when it made none.
    Where an interaction recorded no tools (`tools_available` empty or missing, e.g. an
    instrumentation that does not capture them), availability is not checked for its calls
    and the explanation says so; their arguments must still be a JSON object, and fit the
    schema of a tool of that name recorded on the agent's other interactions, if any. A
    call named after a child agent the agent ran is a call to that agent (smolagents'
    managed agents, which OpenInference leaves out of the recorded tools): available. An
    empty argument string (or `null`) counts as `{}`; a tool without a schema takes any
    object.
    """

    name = "tool_arguments"

    def _score(self, run: Run) -> ScoreResponse | None:
        outcomes = call_outcomes(run)
        if not outcomes:
            return None
        invalid = [o for o in outcomes if o.status == "invalid"]
        problems = [f"{run.where(o.index, o.call)}: {o.detail}" for o in invalid]
        unrecorded = sorted({o.index for o in outcomes if not run.llm[o.index].tools_available})
        notes = []
        if unrecorded:
            notes.append(
                f"no tools were recorded for {list_calls(unrecorded)}; "
                "whether their tools were available was not checked"
            )
        valid = len(outcomes) - len(problems)
        summary = f"{run.name}: {valid} of {plural(len(outcomes), 'tool call')} valid."
        return ScoreResponse(
            score=valid / len(outcomes),
            explanation=explain(summary, problems, notes),
            steps=[run.step(o.index, o.call) for o in invalid] or None,
        )


tool_arguments: ToolArguments = ToolArguments()
