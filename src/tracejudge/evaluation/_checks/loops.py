"""The `loops` check (and `loops_with`): the agent is not stuck repeating a call or a reply."""

from __future__ import annotations

import json
from typing import Any

from tracejudge.evaluation._checks.calls import call_outcomes
from tracejudge.evaluation._checks.explain import explain, list_calls, plural
from tracejudge.evaluation._checks.run import BuiltinCheck, Run
from tracejudge.evaluation._checks.text import short
from tracejudge.models import LLMToolCall, ScoreResponse

__all__ = ["Loops", "loops", "loops_with"]


def _normalise_json(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return [_normalise_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalise_json(v) for k, v in value.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _call_key(call: LLMToolCall) -> str:
    try:
        arguments = json.loads(call.parameters) if call.parameters.strip() else {}
    except ValueError:
        return f"{call.name} {' '.join(call.parameters.split())}"
    canonical = json.dumps(
        _normalise_json(arguments), sort_keys=True, ensure_ascii=False, separators=(", ", ": ")
    )
    return f"{call.name} {canonical}"


class Loops(BuiltinCheck):
    """The agent is not stuck repeating itself.

    A tool call repeats an earlier one when it has the same tool and arguments (compared as
    JSON: key order, whitespace and `2.0` vs `2` do not matter) and either an earlier such
    call already got a result that is not an error - the agent asked again for what it had
    - or it is the `max_repeats`-th such call or later (3 by default: retrying a failing
    call over and over). A retry after an error is fine; parallel calls in one interaction
    count too. A reply (the text of an interaction without tool calls; whitespace and case
    ignored) repeats when it equals the agent's previous reply, or is the `max_repeats`-th
    equal one.

    With `polling=True` (`loops_with(polling=True)`), for tools that are meant to be asked
    again (status checks), only the `max_repeats` rule applies to calls.

    Score: the fraction of the agent's actions (tool calls, plus replies without tool
    calls) that are not repeats: 1.0 when nothing repeats, 0.5 for the same successful call
    made twice and nothing else. None for an agent without recorded LLM interactions.
    """

    name = "loops"

    def __init__(self, max_repeats: int = 3, *, polling: bool = False) -> None:
        if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 2:
            raise ValueError(f"max_repeats must be an integer of at least 2, got {max_repeats!r}")
        self.max_repeats = max_repeats
        self.polling = polling
        options = [f"max_repeats={max_repeats}"] if max_repeats != 3 else []
        options += ["polling=True"] if polling else []
        if options:
            self.name = f"loops({', '.join(options)})"

    def _score(self, run: Run) -> ScoreResponse | None:
        if not run.recorded:
            return None
        status = {id(o.call): o.status for o in call_outcomes(run)}
        calls: dict[str, list[tuple[int, LLMToolCall, bool]]] = {}
        answered: set[str] = set()  # calls that got a result that is not an error
        replies: dict[str, list[tuple[int, bool]]] = {}
        shown: dict[str, str] = {}
        actions = 0
        previous_reply: str | None = None
        for index, interaction in enumerate(run.llm):
            tool_calls = interaction.tool_calls
            for call in tool_calls:
                actions += 1
                key = _call_key(call)
                made = calls.setdefault(key, [])
                repeat = len(made) + 1 >= self.max_repeats or (key in answered and not self.polling)
                made.append((index, call, repeat))
                if status.get(id(call)) == "ok":
                    answered.add(key)
            if tool_calls:
                previous_reply = None
                continue
            actions += 1
            text = " ".join(interaction.output_text.split())
            if not text:
                continue
            key = text.casefold()
            said = replies.setdefault(key, [])
            said.append((index, key == previous_reply or len(said) + 1 >= self.max_repeats))
            shown.setdefault(key, text)
            previous_reply = key
        problems: list[str] = []
        steps: list[tuple[int, LLMToolCall | None]] = []
        repeats = 0
        for key, made in calls.items():
            count = sum(1 for *_, repeat in made if repeat)
            if count:
                repeats += count
                steps.extend((i, c) for i, c, repeat in made if repeat)
                why = (
                    "; it had already got a result" if key in answered and not self.polling else ""
                )
                problems.append(
                    f"{run.name} called {short(key, 100)} {len(made)} times{why} "
                    f"({list_calls(sorted({i for i, _, _ in made}))}; "
                    f"tool calls {', '.join(c.id for _, c, _ in made)})"
                )
        for key, said in replies.items():
            count = sum(1 for _, repeat in said if repeat)
            if count:
                repeats += count
                steps.extend((i, None) for i, repeat in said if repeat)
                problems.append(
                    f"{run.name} gave the same reply {len(said)} times "
                    f"({list_calls(i for i, _ in said)}): {short(shown[key])!r}"
                )
        if not problems:
            summary = f"{run.name}: no repeated tool call or reply ({plural(actions, 'action')})."
            return ScoreResponse(score=1.0, explanation=summary)
        summary = (
            f"{run.name} is stuck: {repeats} of its {plural(actions, 'action')} "
            f"{'repeats' if repeats == 1 else 'repeat'} an earlier one."
        )
        return ScoreResponse(
            score=1.0 - repeats / actions,
            explanation=explain(summary, problems),
            steps=[run.step(i, c) for i, c in sorted(steps, key=lambda step: step[0])],
        )


def loops_with(max_repeats: int = 3, *, polling: bool = False) -> Loops:
    """A `loops` check that flags any call or reply made `max_repeats` times or more; with
    `polling=True`, calling a tool again after it succeeded is not a loop by itself."""
    return Loops(max_repeats=max_repeats, polling=polling)


loops: Loops = Loops()
