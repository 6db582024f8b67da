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
    of all its interactions, and assistant messages of a history it was handed (an earlier
    session's turns, which none of its recorded calls wrote). Its own replies and tool
    call arguments are left out, so that a number it made up once cannot ground itself
    later."""
    written = {
        " ".join(output.content.split())
        for interaction in run.llm
        for output in interaction.output_messages
        if isinstance(output.content, str)
    }
    for turn in run.turns:
        for message in turn.new:
            content = message.content
            if isinstance(content, LLMToolResponse):
                yield content.response
            elif isinstance(content, str) and (
                message.role != "assistant" or " ".join(content.split()) not in written
            ):
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
    markers (`[1]`), URLs, digits inside names (`gpt-4o`), HTTP status codes
    (`500 Internal Server Error`) and small counts (`top 3`, `2 options`, `1st`) are not
    counted. A number that is the sum or the product of two numbers of the inputs ("40"
    for "4" and "multiply that by 10") is grounded as derived, and named so; only pairs
    of the first 40 distinct input numbers, 0 and 1 left out, are tried. The complete
    rules are in `tracejudge.evaluation._checks.numbers`.

    Values not found cannot be verified - score None, with the reason - when the agent's
    sources are incomplete: a built-in tool ran on the provider's side (web search, file
    search, code interpreter, MCP: `server_tool_calls`) and what it returned was never
    recorded, or the results of its own tool calls were not recorded.

    Score: the fraction of distinct stated values that are grounded; None when the final
    answer is empty or states no number, or when values not found cannot be verified.
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
        derived = [(m, how) for m in ungrounded if (how := own.derivation(m)) is not None]
        if derived:
            ungrounded = [m for m in ungrounded if all(m is not d for d, _ in derived)]
        problems = [
            f"{run.where(index)}: {m.kind} {m.text!r} appears in no input or tool result"
            for m in ungrounded
        ]
        grounded = len(stated) - len(ungrounded)
        summary = (
            f"{run.name}: {grounded} of the {plural(len(stated), 'value')} (numbers, dates, "
            "times) stated in its final answer found in its inputs or tool results"
            + (f" ({len(derived)} derived from them)." if derived else ".")
        )
        notes = [f"{m.kind} {m.text!r} is derived from the inputs: {how}" for m, how in derived]
        unverifiable = self._unrecorded_sources(run) if ungrounded else None
        if unverifiable is not None:
            notes.append(f"{unverifiable}, so the values not found cannot be verified")
            return ScoreResponse(score=None, explanation=explain(summary, problems, notes))
        return ScoreResponse(
            score=grounded / len(stated),
            explanation=explain(summary, problems, notes),
            steps=[run.step(index)] if ungrounded else None,
        )

    @staticmethod
    def _unrecorded_sources(run: Run) -> str | None:
        """Why the agent's sources are incomplete, or None when they are complete."""
        server = [c for interaction in run.llm for c in interaction.server_tool_calls or []]
        if server:
            names = ", ".join(dict.fromkeys(c.name for c in server))
            ids = list_ids([c for c in server if c.id])
            return (
                f"the agent's model ran {plural(len(server), 'built-in tool call')} on the "
                f"provider's side ({names}{': ' + ids if ids else ''}), whose results were "
                "not recorded"
            )
        unseen = [o.call for o in call_outcomes(run) if o.status == "unknown"]
        if unseen:
            return (
                f"the results of {plural(len(unseen), 'tool call')} ({list_ids(unseen)}) were "
                "not recorded (the later inputs do not repeat the conversation)"
            )
        return None

    @staticmethod
    def _children_facts(run: Run) -> Facts:
        key = ("grounded_numbers.children", run.agent.id)
        if key not in run.memo:

            def texts() -> Iterator[str]:
                for child in run.child_agents():
                    yield from _own_sources(Run(child, run.trace, run.memo))
                    yield child.final_output or ""

            run.memo[key] = _facts(texts())
        facts: Facts = run.memo[key]
        return facts


grounded_numbers: GroundedNumbers = GroundedNumbers()
