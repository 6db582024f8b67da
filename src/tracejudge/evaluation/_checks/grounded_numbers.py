"""The `grounded_numbers` check: numbers, dates and times in the final answer appear in
the agent's inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tracejudge.evaluation._checks.calls import call_outcomes
from tracejudge.evaluation._checks.explain import explain, list_ids, plural
from tracejudge.evaluation._checks.numbers import Facts, mentions
from tracejudge.evaluation._checks.run import BuiltinCheck, Run
from tracejudge.models import LLMToolResponse, ScoreResponse

__all__ = ["GroundedNumbers", "grounded_numbers"]


def _own_sources(run: Run) -> Iterator[str]:
    """What the agent's model was given: system, user and tool messages and tool results
    of all its interactions. Its own earlier replies and tool call arguments are left out,
    so that a number it made up once cannot ground itself later."""
    for turn in run.turns:
        for message in turn.new:
            content = message.content
            if isinstance(content, LLMToolResponse):
                yield content.response
            elif isinstance(content, str) and message.role != "assistant":
                yield content
    for interaction in run.llm[:-1]:  # results its tool spans recorded, which it went on with
        for result in interaction.tool_results or []:
            yield result.response


def _facts(texts: Iterable[str]) -> Facts:
    facts = Facts()
    seen: set[str] = set()
    for text in texts:
        if text and text not in seen:
            seen.add(text)
            facts.add(text)
    return facts


class GroundedNumbers(BuiltinCheck):
    """Numbers, dates and times stated in the agent's final answer appear in what it was
    given: its system and user messages and tool results, over all its interactions, and
    what its child agents were given and answered (it ran them; their findings are its
    findings, however its code passed them on).

    The final answer is the text of the agent's last LLM interaction. Matching is tolerant
    (units, thousands separators, trailing zeros, percentages, `k`/`million`, rounding to
    the decimals written, dates and times in common formats); list markers (`1.`), citation
    markers (`[1]`), URLs, digits inside names (`gpt-4o`) and small counts (`top 3`,
    `2 options`, `1st`) are not counted. The complete rules are in
    `tracejudge.evaluation._checks.numbers`.

    Score: the fraction of distinct stated values that are grounded; None when the final
    answer is empty or states no number.
    """

    name = "grounded_numbers"

    def _score(self, run: Run) -> ScoreResponse | None:
        if not run.llm:
            return None
        index = len(run.llm) - 1
        answer = run.llm[index].output_text
        if not answer.strip():
            return None
        stated = mentions(answer)
        if not stated:
            return None
        own = _facts(_own_sources(run))
        ungrounded = [m for m in stated if not own.grounds(m)]
        if ungrounded and run.agent.child_ids:
            children = self._children_facts(run)
            ungrounded = [m for m in ungrounded if not children.grounds(m)]
        problems = [
            f"{run.where(index)}: {m.kind} {m.text!r} appears in no input or tool result"
            for m in ungrounded
        ]
        grounded = len(stated) - len(ungrounded)
        summary = (
            f"{run.name}: {grounded} of the {plural(len(stated), 'value')} (numbers, dates, "
            "times) stated in its final answer found in its inputs or tool results."
        )
        unseen = [o.call for o in call_outcomes(run) if o.status == "unknown"]
        if ungrounded and unseen:
            # The sources are incomplete: what is missing may be in the unrecorded results.
            note = (
                f"the results of {plural(len(unseen), 'tool call')} ({list_ids(unseen)}) were not "
                "recorded (the later inputs do not repeat the conversation), so the values "
                "not found cannot be judged"
            )
            return ScoreResponse(score=None, explanation=explain(summary, problems, [note]))
        return ScoreResponse(score=grounded / len(stated), explanation=explain(summary, problems))

    @staticmethod
    def _children_facts(run: Run) -> Facts:
        key = ("grounded_numbers.children", run.agent.id)
        if key not in run.memo:

            def texts() -> Iterator[str]:
                for child in run.child_agents():
                    yield from _own_sources(Run(child, run.trace, run.memo))
                    yield child.final_output or ""

            run.memo[key] = _facts(texts())
        return run.memo[key]


grounded_numbers: GroundedNumbers = GroundedNumbers()
