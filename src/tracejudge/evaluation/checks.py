"""Deterministic trace checks: criteria scored from the trace itself, with no judge model.

Many agent failures are visible in the trace: a call to a tool that was not
offered, arguments that break the tool's schema, a tool that answered with an
error, the same call made again and again, a number in the answer that no
input contained, an empty last answer. These checks find them in milliseconds,
offline, with no API key, and pass in `criteria=[...]` next to judged criteria::

    from tracejudge import Composo, checks

    result = Composo().evaluate_trace(trace, criteria=[checks.tool_arguments, checks.loops])
    scores = checks.tool_results.evaluate(trace)  # {agent_instance_id: ScoreResponse | None}

Every check scores each agent instance of the trace on its own (0..1, or None
when it does not apply, e.g. tool checks on an agent that made no tool call),
with an explanation that points at the interaction: the agent's name, the index
into `agent.llm_interactions` written `llm_interactions[i]` (0-based), and the
tool call id. An agent's own LLM interactions are what it is scored on; its
child agents are scored separately, as agents of their own.

Built-in checks (instances; `budgets` and `loops_with` build configured ones):

* `tool_arguments` - calls name an available tool; arguments are JSON that fit its schema.
* `tool_results`   - every call got a result; results that are errors are counted.
* `loops`          - the same call or the same reply made `max_repeats` (3) times or more.
* `grounded_numbers` - numbers, dates and times in the final answer appear in the inputs.
* `final_answer`   - the agent ended with a non-empty answer, not a tool call or a refusal.
* `budgets(max_tokens=..., max_seconds=...)` - token and wall-time budgets per agent.

Writing your own: `@check` turns `fn(agent) -> float | bool | (float, str) |
ScoreResponse | None` into a check (`@check(scope="trace")` for `fn(trace)`),
and `from_reward` turns an `@osmosis_reward` function into one.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from tracejudge.evaluation import _checks_schema, _checks_text
from tracejudge.evaluation._check import TraceCheck
from tracejudge.evaluation._checks_numbers import Facts, mentions
from tracejudge.models import (
    AgentInstance,
    LLMInteraction,
    LLMToolCall,
    LLMToolResponse,
    MultiAgentTrace,
    ScoreResponse,
)

__all__ = [
    "TraceCheck",
    "AgentCheck",
    "FunctionCheck",
    "RewardCheck",
    "ToolArguments",
    "ToolResults",
    "Loops",
    "GroundedNumbers",
    "FinalAnswer",
    "Budgets",
    "tool_arguments",
    "tool_results",
    "loops",
    "loops_with",
    "grounded_numbers",
    "final_answer",
    "budgets",
    "check",
    "from_reward",
    "as_check",
    "is_check",
    "ALL",
]

#: At most this many problems are listed in one explanation; the rest are counted.
MAX_LISTED_PROBLEMS = 20

Score = float | bool | tuple[float | bool | None, str] | ScoreResponse | None


# --------------------------------------------------------------------------- shared helpers


def _where(agent: AgentInstance, index: int, call: LLMToolCall | None = None) -> str:
    """'researcher llm_interactions[2], tool call call_7 (search)'."""
    place = f"{agent.name} llm_interactions[{index}]"
    if call is not None:
        place += f", tool call {call.id} ({call.name})"
    return place


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _explain(summary: str, problems: Sequence[str] = (), notes: Sequence[str] = ()) -> str:
    lines = [summary]
    lines.extend(f"- {p}" for p in problems[:MAX_LISTED_PROBLEMS])
    if len(problems) > MAX_LISTED_PROBLEMS:
        lines.append(f"- ... and {len(problems) - MAX_LISTED_PROBLEMS} more")
    lines.extend(f"Note: {n}" for n in notes)
    return "\n".join(lines)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _indexes(indexes: Iterable[int]) -> str:
    return ", ".join(f"[{i}]" for i in indexes)


def _last_is_child(agent: AgentInstance) -> str | None:
    """The id of the child agent that ran after the agent's last LLM interaction, if any."""
    last = agent.interactions[-1] if agent.interactions else None
    return last if isinstance(last, str) else None


def _agent_name(trace: MultiAgentTrace, agent_id: str) -> str:
    agent = trace.agent_instance_by_id.get(agent_id)
    return agent.name if agent is not None else agent_id


class AgentCheck(ABC):
    """Base of the built-in checks: a TraceCheck that scores each agent instance on its own.

    Subclass it and implement `score_agent`; `evaluate` calls it for every agent
    instance of the trace.
    """

    name: str = "check"

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        """Score keyed by agent instance id; None where the check does not apply."""
        return {agent.id: self.score_agent(agent, trace) for agent in trace.iter_agents()}

    @abstractmethod
    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        """Score one agent instance, or None when the check does not apply to it."""

    def __repr__(self) -> str:
        return f"<check {self.name}>"


# --------------------------------------------------------------------------- tool outcomes


@dataclass(frozen=True)
class _CallOutcome:
    index: int
    call: LLMToolCall
    #: ok: a result that is not an error; error: an error result; missing: no result;
    #: delegated: the agent's last call, after which a child agent ran (its result was
    #: never shown to this agent's model, so it cannot be judged here).
    status: Literal["ok", "error", "missing", "delegated"]
    detail: str = ""
    result_index: int | None = None


def _call_outcomes(agent: AgentInstance) -> list[_CallOutcome]:
    interactions = agent.llm_interactions
    # The first later interaction whose inputs carry a result for each call id.
    first_result: dict[str, list[tuple[int, LLMToolResponse]]] = {}
    for j, interaction in enumerate(interactions):
        for message in interaction.input_messages:
            if isinstance(message.content, LLMToolResponse):
                first_result.setdefault(message.content.id, []).append((j, message.content))
    last = len(interactions) - 1
    delegated_to = _last_is_child(agent)
    outcomes: list[_CallOutcome] = []
    for i, interaction in enumerate(interactions):
        for call in interaction.tool_calls:
            found = next(((j, r) for j, r in first_result.get(call.id, []) if j > i), None)
            if found is None:
                if i < last:
                    outcomes.append(
                        _CallOutcome(i, call, "missing", "no result in any later interaction")
                    )
                elif delegated_to is not None:
                    outcomes.append(
                        _CallOutcome(
                            i, call, "delegated", f"child agent {delegated_to} ran after it"
                        )
                    )
                else:
                    outcomes.append(
                        _CallOutcome(
                            i,
                            call,
                            "missing",
                            "the agent stopped after this call; no result was recorded",
                        )
                    )
                continue
            j, response = found
            reason = _checks_text.tool_error(response.response)
            if reason:
                outcomes.append(_CallOutcome(i, call, "error", reason, j))
            else:
                outcomes.append(_CallOutcome(i, call, "ok", "", j))
    return outcomes


# --------------------------------------------------------------------------- tool_arguments


class ToolArguments(AgentCheck):
    """Every tool call names a tool offered in that interaction, with arguments that are a
    JSON object valid against the tool's JSON schema.

    Score: the fraction of the agent's tool calls that are valid; None when it made none.
    Where an interaction recorded no tools (`tools_available` empty or missing, e.g. an
    instrumentation that does not capture them), availability is not checked for its calls
    and the explanation says so; their arguments must still be a JSON object. An empty
    argument string counts as `{}`.
    """

    name = "tool_arguments"

    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        total = 0
        problems: list[str] = []
        unrecorded: list[int] = []
        for index, interaction in enumerate(agent.llm_interactions):
            calls = interaction.tool_calls
            if not calls:
                continue
            tools = {tool.name: tool for tool in interaction.tools_available or []}
            if not tools:
                unrecorded.append(index)
            for call in calls:
                total += 1
                problem = self._problem(call, tools)
                if problem:
                    problems.append(f"{_where(agent, index, call)}: {problem}")
        if total == 0:
            return None
        notes = []
        if unrecorded:
            notes.append(
                f"no tools were recorded for llm_interactions{_indexes(unrecorded)}; "
                "whether their tools were available was not checked"
            )
        valid = total - len(problems)
        summary = f"{agent.name}: {valid} of {_plural(total, 'tool call')} valid."
        return ScoreResponse(score=valid / total, explanation=_explain(summary, problems, notes))

    @staticmethod
    def _problem(call: LLMToolCall, tools: dict[str, Any]) -> str | None:
        tool = tools.get(call.name)
        if tools and tool is None:
            available = ", ".join(sorted(tools))
            return f"names tool {call.name!r}, which was not available (available: {available})"
        raw = call.parameters
        if not raw.strip():
            arguments: Any = {}
        else:
            try:
                arguments = json.loads(raw)
            except ValueError as exc:
                return f"arguments are not valid JSON ({exc}): {_short(raw, 60)!r}"
        if not isinstance(arguments, dict):
            kind = _checks_schema._type_name(arguments)
            return f"arguments are a JSON {kind}, not an object: {_short(raw, 60)!r}"
        if tool is None:
            return None
        schema = tool.schema_dict()
        if schema is None:
            return None  # no usable schema: nothing more to check against
        errors = _checks_schema.validate(arguments, schema)
        if errors:
            return "arguments do not match the tool's schema: " + "; ".join(errors)
        return None


# --------------------------------------------------------------------------- tool_results


class ToolResults(AgentCheck):
    """Every tool call got a result, and the result is not an error.

    A call's result is the tool response with the same id in the inputs of a later
    interaction of the same agent. A call in the agent's last interaction has no later
    input: it counts as missing when the agent stopped there, and is left out (not
    counted) when a child agent ran after it, as in a hand-off. Errors are JSON error
    objects (`{"error": ...}`, `"status": 500`, `"success": false`, MCP `isError`),
    tracebacks, results that start with an error line (`ValueError: ...`, `Error: ...`)
    and HTTP error statuses (`404 Not Found`, `HTTP 503`).

    Score: the fraction of counted calls with a non-error result; None without calls.
    """

    name = "tool_results"

    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        outcomes = _call_outcomes(agent)
        counted = [o for o in outcomes if o.status != "delegated"]
        notes = [
            f"{_where(agent, o.index, o.call)} not counted: {o.detail}"
            for o in outcomes
            if o.status == "delegated"
        ]
        if not counted:
            return None
        problems = []
        for outcome in counted:
            if outcome.status == "missing":
                problems.append(
                    f"{_where(agent, outcome.index, outcome.call)}: no result ({outcome.detail})"
                )
            elif outcome.status == "error":
                problems.append(
                    f"{_where(agent, outcome.index, outcome.call)}: the result (in "
                    f"llm_interactions[{outcome.result_index}]) is an error: {outcome.detail}"
                )
        ok = sum(1 for o in counted if o.status == "ok")
        summary = (
            f"{agent.name}: {ok} of {_plural(len(counted), 'tool call')} got a result "
            "that is not an error."
        )
        return ScoreResponse(
            score=ok / len(counted), explanation=_explain(summary, problems, notes)
        )


# --------------------------------------------------------------------------- loops


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


class Loops(AgentCheck):
    """The agent is not stuck: no tool called `max_repeats` times or more with the same
    arguments, and no reply repeated `max_repeats` times or more.

    Arguments are compared as JSON (key order, whitespace and `2.0` vs `2` do not matter);
    replies are the text of interactions that made no tool call, compared with whitespace
    collapsed and case ignored. Parallel calls in one interaction count too.

    Score: the fraction of the agent's actions (tool calls, plus replies without tool
    calls) that are not repeats inside a loop, i.e. 1.0 when nothing repeats `max_repeats`
    times, 1/3 for an agent that made the same call three times and nothing else. None for
    an agent without LLM interactions.
    """

    name = "loops"

    def __init__(self, max_repeats: int = 3) -> None:
        if not isinstance(max_repeats, int) or max_repeats < 2:
            raise ValueError(f"max_repeats must be an integer of at least 2, got {max_repeats!r}")
        self.max_repeats = max_repeats
        if max_repeats != 3:
            self.name = f"loops(max_repeats={max_repeats})"

    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        interactions = agent.llm_interactions
        if not interactions:
            return None
        calls: dict[str, list[tuple[int, LLMToolCall]]] = {}
        replies: dict[str, list[int]] = {}
        shown: dict[str, str] = {}
        actions = 0
        for index, interaction in enumerate(interactions):
            tool_calls = interaction.tool_calls
            for call in tool_calls:
                actions += 1
                calls.setdefault(_call_key(call), []).append((index, call))
            if not tool_calls:
                actions += 1
                text = " ".join(interaction.output_text.split())
                if text:
                    key = text.casefold()
                    replies.setdefault(key, []).append(index)
                    shown.setdefault(key, text)
        problems: list[str] = []
        redundant = 0
        for key, made in calls.items():
            if len(made) >= self.max_repeats:
                redundant += len(made) - 1
                ids = ", ".join(call.id for _, call in made)
                problems.append(
                    f"{agent.name} called {_short(key, 100)} {len(made)} times "
                    f"(llm_interactions{_indexes(sorted({i for i, _ in made}))}; "
                    f"tool calls {ids})"
                )
        for key, indexes in replies.items():
            if len(indexes) >= self.max_repeats:
                redundant += len(indexes) - 1
                problems.append(
                    f"{agent.name} gave the same reply {len(indexes)} times "
                    f"(llm_interactions{_indexes(indexes)}): {_short(shown[key], 80)!r}"
                )
        if not problems:
            summary = (
                f"{agent.name}: no tool call or reply repeated {self.max_repeats} times "
                f"({_plural(actions, 'action')})."
            )
            return ScoreResponse(score=1.0, explanation=summary)
        summary = (
            f"{agent.name} is stuck: {redundant} of its {_plural(actions, 'action')} repeat an "
            "earlier one."
        )
        return ScoreResponse(
            score=1.0 - redundant / actions, explanation=_explain(summary, problems)
        )


def loops_with(max_repeats: int = 3) -> Loops:
    """A `loops` check that flags a call or reply made `max_repeats` times or more."""
    return Loops(max_repeats=max_repeats)


# --------------------------------------------------------------------------- grounded_numbers


def _source_texts(agent: AgentInstance) -> list[str]:
    """What the agent's model was given: system, user and tool messages and tool results
    of all its interactions. Its own earlier replies and tool call arguments are left out,
    so that a number it made up once cannot ground itself later."""
    texts: list[str] = []
    for interaction in agent.llm_interactions:
        for message in interaction.input_messages:
            content = message.content
            if isinstance(content, LLMToolResponse):
                texts.append(content.response)
            elif isinstance(content, str) and message.role != "assistant":
                texts.append(content)
    return texts


class GroundedNumbers(AgentCheck):
    """Numbers, dates and times stated in the agent's final answer appear in what its model
    was given: system and user messages and tool results, over all its interactions.

    The final answer is the text of the agent's last LLM interaction. Matching is tolerant
    (units, thousands separators, trailing zeros, percentages, `k`/`million`, rounding to
    the decimals written, dates and times in common formats); list markers (`1.`), citation
    markers (`[1]`), URLs and digits inside names (`gpt-4o`) are not counted. The complete
    rules are in `tracejudge.evaluation._checks_numbers`.

    Score: the fraction of distinct stated values that are grounded; None when the final
    answer is empty or states no number.
    """

    name = "grounded_numbers"

    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        interactions = agent.llm_interactions
        if not interactions:
            return None
        index = len(interactions) - 1
        answer = interactions[index].output_text
        if not answer.strip():
            return None
        stated = mentions(answer)
        if not stated:
            return None
        facts = Facts.from_texts(_source_texts(agent))
        ungrounded = [m for m in stated if not facts.grounds(m)]
        problems = [
            f"{_where(agent, index)}: {m.kind} {m.text!r} appears in no input or tool result"
            for m in ungrounded
        ]
        grounded = len(stated) - len(ungrounded)
        summary = (
            f"{agent.name}: {grounded} of the {_plural(len(stated), 'value')} (numbers, dates, "
            "times) stated in its final answer found in its inputs or tool results."
        )
        return ScoreResponse(score=grounded / len(stated), explanation=_explain(summary, problems))


# --------------------------------------------------------------------------- final_answer


class FinalAnswer(AgentCheck):
    """The agent ended with a non-empty answer: not a dangling tool call, not empty, and
    not a refusal or apology when nothing it tried failed.

    The final answer is the agent's last LLM interaction. It fails (0.0) when it asks for a
    tool (and no child agent ran after it - a hand-off is not scored: None), when its text
    is empty, or when it refuses or apologises ("I'm sorry", "I cannot", "unable to") while
    the agent had tools and none of its tool calls failed. A refusal after a failed tool
    call, or from an agent that had no tools, is left to a judge (1.0, noted).

    Score: 1.0 or 0.0; None for an agent without LLM interactions.
    """

    name = "final_answer"

    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        interactions = agent.llm_interactions
        if not interactions:
            return None
        index = len(interactions) - 1
        last = interactions[index]
        where = _where(agent, index)
        if last.tool_calls:
            child = _last_is_child(agent)
            if child is not None:
                name = _agent_name(trace, child)
                return ScoreResponse(
                    score=None,
                    explanation=f"{where}: {agent.name} handed off to {name} ({child}) with "
                    f"tool call {last.tool_calls[0].id}; its answer is scored there.",
                )
            ids = ", ".join(f"{c.id} ({c.name})" for c in last.tool_calls)
            return ScoreResponse(
                score=0.0,
                explanation=f"{where}: {agent.name} ended with a tool call it never saw the "
                f"result of (tool call {ids}) instead of an answer.",
            )
        answer = last.output_text
        if not answer.strip():
            why = f" (the model call failed: {_short(last.error, 100)})" if last.error else ""
            return ScoreResponse(
                score=0.0, explanation=f"{where}: {agent.name}'s final answer is empty{why}."
            )
        phrase = _checks_text.refusal(answer)
        if phrase:
            outcomes = _call_outcomes(agent)
            failed = [o for o in outcomes if o.status in ("error", "missing")]
            had_tools = any(i.tools_available for i in interactions) or bool(outcomes)
            if had_tools and not failed:
                tried = (
                    f"all {_plural(len(outcomes), 'tool call')} succeeded"
                    if outcomes
                    else "it had tools but called none"
                )
                return ScoreResponse(
                    score=0.0,
                    explanation=f"{where}: {agent.name}'s final answer refuses or apologises "
                    f"({phrase!r}) although {tried}: {_short(answer, 120)!r}",
                )
            reason = (
                f"after a failed tool call ({_where(agent, failed[0].index, failed[0].call)})"
                if failed
                else "and it had no tools"
            )
            return ScoreResponse(
                score=1.0,
                explanation=f"{where}: {agent.name} answered, apologising ({phrase!r}) "
                f"{reason}; whether that is right is left to a judge.",
            )
        return ScoreResponse(
            score=1.0,
            explanation=f"{where}: {agent.name} ended with an answer: {_short(answer, 120)!r}",
        )


# --------------------------------------------------------------------------- budgets


class Budgets(AgentCheck):
    """Token and wall-time budgets per agent instance.

    Counted per agent: its own LLM interactions only (child agents are agents of their
    own and are checked against the same budget separately). Tokens are the sum of
    `usage.total_tokens` (input + output where the total is missing); wall time runs from
    its first interaction's `start_time` to its last interaction's `end_time`.

    Score per budget: 1.0 within it, else budget / used (2x over: 0.5); with both budgets,
    the lower of the two. None when the data a budget needs is missing (no usage, or no
    timings, recorded).
    """

    def __init__(self, max_tokens: int | None = None, max_seconds: float | None = None) -> None:
        if max_tokens is None and max_seconds is None:
            raise ValueError("checks.budgets needs max_tokens, max_seconds or both")
        for label, value in (("max_tokens", max_tokens), ("max_seconds", max_seconds)):
            if value is not None and (isinstance(value, bool) or not value > 0):
                raise ValueError(f"{label} must be a positive number, got {value!r}")
        self.max_tokens = max_tokens
        self.max_seconds = max_seconds
        parts = []
        if max_tokens is not None:
            parts.append(f"max_tokens={max_tokens}")
        if max_seconds is not None:
            parts.append(f"max_seconds={max_seconds:g}")
        self.name = f"budgets({', '.join(parts)})"

    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        interactions = agent.llm_interactions
        if not interactions:
            return None
        scores: list[float] = []
        lines: list[str] = []
        if self.max_tokens is not None:
            self._tokens(agent, interactions, scores, lines)
        if self.max_seconds is not None:
            self._seconds(agent, interactions, scores, lines)
        if not scores:
            return ScoreResponse(score=None, explanation=" ".join(lines))
        return ScoreResponse(score=min(scores), explanation=" ".join(lines))

    def _tokens(
        self,
        agent: AgentInstance,
        interactions: list[LLMInteraction],
        scores: list[float],
        lines: list[str],
    ) -> None:
        assert self.max_tokens is not None
        used = 0
        missing: list[int] = []
        for index, interaction in enumerate(interactions):
            usage = interaction.usage
            if usage is None:
                missing.append(index)
                continue
            used += usage.total_tokens or (usage.input_tokens + usage.output_tokens)
        if len(missing) == len(interactions):
            lines.append(f"{agent.name}: no token usage recorded; token budget not checked.")
            return
        gap = (
            f" (at least: no usage recorded for llm_interactions{_indexes(missing)})"
            if missing
            else ""
        )
        if used <= self.max_tokens:
            scores.append(1.0)
            lines.append(f"{agent.name} used {used} tokens{gap}, within {self.max_tokens}.")
        else:
            scores.append(self.max_tokens / used)
            biggest = max(
                (i for i in range(len(interactions)) if interactions[i].usage is not None),
                key=lambda i: interactions[i].usage.total_tokens,  # type: ignore[union-attr]
            )
            lines.append(
                f"{agent.name} used {used} tokens{gap}, over its budget of {self.max_tokens} "
                f"(the largest call: {_where(agent, biggest)})."
            )

    def _seconds(
        self,
        agent: AgentInstance,
        interactions: list[LLMInteraction],
        scores: list[float],
        lines: list[str],
    ) -> None:
        assert self.max_seconds is not None
        starts = [i.start_time for i in interactions if i.start_time is not None]
        ends = [i.end_time for i in interactions if i.end_time is not None]
        if not starts or not ends:
            lines.append(f"{agent.name}: no timings recorded; time budget not checked.")
            return
        elapsed = max(0.0, max(ends) - min(starts))
        if elapsed <= self.max_seconds:
            scores.append(1.0)
            lines.append(f"{agent.name} took {elapsed:.3f} s, within {self.max_seconds:g} s.")
        else:
            scores.append(self.max_seconds / elapsed)
            durations = [(i.duration_seconds or 0.0, n) for n, i in enumerate(interactions)]
            slowest = max(durations)[1]
            lines.append(
                f"{agent.name} took {elapsed:.3f} s, over its budget of {self.max_seconds:g} s "
                f"(the slowest call: {_where(agent, slowest)}, "
                f"{durations[slowest][0]:.3f} s)."
            )


def budgets(max_tokens: int | None = None, max_seconds: float | None = None) -> Budgets:
    """A check of per-agent token and wall-time budgets (see `Budgets`)."""
    return Budgets(max_tokens=max_tokens, max_seconds=max_seconds)


# --------------------------------------------------------------------------- user checks


def _to_score(value: Any, name: str, where: str) -> ScoreResponse | None:
    """What a user's check or reward returned, as a ScoreResponse."""
    if value is None or isinstance(value, ScoreResponse):
        return value
    explanation = None
    if isinstance(value, tuple):
        if len(value) != 2 or not isinstance(value[1], str):
            raise TypeError(
                f"check {name!r} returned a tuple for {where}; expected (score, explanation)"
            )
        value, explanation = value
        if value is None:
            return ScoreResponse(score=None, explanation=explanation)
    if isinstance(value, bool):
        score = 1.0 if value else 0.0
    elif isinstance(value, (int, float)):
        score = float(value)
    else:
        raise TypeError(
            f"check {name!r} returned {type(value).__name__} for {where}; expected a float in "
            "0..1, a bool, (score, explanation), a ScoreResponse or None"
        )
    if math.isnan(score):
        return ScoreResponse(score=None, explanation=explanation or f"{name}: not a number")
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"check {name!r} returned {score} for {where}; scores must be in 0..1")
    return ScoreResponse(score=score, explanation=explanation or f"{name}: {score:g} ({where})")


def _wants_trace(fn: Callable[..., Any]) -> bool:
    """Whether a per-agent check function takes the trace as a second argument."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.name == "trace" for p in parameters):
        return True
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


class FunctionCheck:
    """A check made from a plain function by `@check`; calling it calls the function.

    scope="agent": `fn(agent)` (or `fn(agent, trace)`) is called for every agent instance.
    scope="trace": `fn(trace)` is called once and its score given to the root agent instance.
    """

    def __init__(
        self,
        fn: Callable[..., Score],
        *,
        name: str | None = None,
        scope: Literal["agent", "trace"] = "agent",
    ) -> None:
        if scope not in ("agent", "trace"):
            raise ValueError(f"scope must be 'agent' or 'trace', got {scope!r}")
        if not callable(fn):
            raise TypeError(f"@check needs a function, got {type(fn).__name__}")
        # First, so that attributes copied from the function cannot replace ours.
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]
        self.fn = fn
        self.name: str = name or getattr(fn, "__name__", type(fn).__name__)
        self.scope = scope
        self._pass_trace = scope == "agent" and _wants_trace(fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        """Score keyed by agent instance id (only the root's for scope="trace")."""
        if self.scope == "trace":
            where = f"the trace (root agent {trace.root.name})"
            return {trace.root_agent_instance_id: self._run(where, trace)}
        results: dict[str, ScoreResponse | None] = {}
        for agent in trace.iter_agents():
            where = f"agent {agent.name} ({agent.id})"
            args = (agent, trace) if self._pass_trace else (agent,)
            results[agent.id] = self._run(where, *args)
        return results

    def _run(self, where: str, *args: Any) -> ScoreResponse | None:
        try:
            value = self.fn(*args)
        except Exception as exc:
            raise RuntimeError(
                f"check {self.name!r} raised {type(exc).__name__} on {where}: {exc}"
            ) from exc
        return _to_score(value, self.name, where)

    def __repr__(self) -> str:
        return f"<check {self.name} (scope={self.scope})>"


@overload
def check(fn: Callable[..., Score], /) -> FunctionCheck: ...


@overload
def check(
    *, name: str | None = None, scope: Literal["agent", "trace"] = "agent"
) -> Callable[[Callable[..., Score]], FunctionCheck]: ...


def check(
    fn: Callable[..., Score] | None = None,
    /,
    *,
    name: str | None = None,
    scope: Literal["agent", "trace"] = "agent",
) -> FunctionCheck | Callable[[Callable[..., Score]], FunctionCheck]:
    """Turn a function into a check usable in `criteria=[...]`; it stays callable as before.

    `@check` / `@check(name=...)`: `fn(agent: AgentInstance)` (optionally `fn(agent, trace)`)
    scores each agent instance. `@check(scope="trace")`: `fn(trace: MultiAgentTrace)` scores
    the whole trace, reported on the root agent instance. The function returns a float in
    0..1, a bool (1.0/0.0), `(score, explanation)`, a `ScoreResponse`, or None (does not
    apply). An exception it raises is re-raised as RuntimeError naming the check and agent.
    """
    if fn is not None:
        return FunctionCheck(fn, name=name, scope=scope)

    def decorate(function: Callable[..., Score]) -> FunctionCheck:
        return FunctionCheck(function, name=name, scope=scope)

    return decorate


# --------------------------------------------------------------------------- rewards


GroundTruth = str | None | Callable[[AgentInstance], str | None]


class RewardCheck:
    """An `@osmosis_reward` function used as a check (see `from_reward`)."""

    def __init__(
        self,
        fn: Callable[..., float],
        ground_truth: GroundTruth = None,
        *,
        name: str | None = None,
        scope: Literal["agent", "trace"] = "agent",
    ) -> None:
        if scope not in ("agent", "trace"):
            raise ValueError(f"scope must be 'agent' or 'trace', got {scope!r}")
        if not callable(fn):
            raise TypeError(f"from_reward needs a reward function, got {type(fn).__name__}")
        self.fn = fn
        self.ground_truth = ground_truth
        self.scope = scope
        self.name: str = name or getattr(fn, "__name__", "reward")

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        """Score keyed by agent instance id: the reward of each agent's final output."""
        agents = [trace.root] if self.scope == "trace" else list(trace.iter_agents())
        return {agent.id: self._score(agent, trace) for agent in agents}

    def _score(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        solution = agent.final_output
        if solution is None:
            return None  # no answer to reward
        truth = self.ground_truth(agent) if callable(self.ground_truth) else self.ground_truth
        extra_info = {"agent": agent, "trace": trace}
        where = f"agent {agent.name} ({agent.id})"
        try:
            value = self.fn(solution, truth, extra_info)
        except Exception as exc:
            hint = (
                "; no ground truth was given: use checks.from_reward(fn, ground_truth=...)"
                if truth is None
                else ""
            )
            raise RuntimeError(
                f"reward {self.name!r} raised {type(exc).__name__} on {where}: {exc}{hint}"
            ) from exc
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(
                f"reward {self.name!r} returned {type(value).__name__} on {where}; expected a float"
            )
        reward = float(value)
        if math.isnan(reward):
            return ScoreResponse(score=None, explanation=f"reward {self.name} returned NaN")
        score = min(1.0, max(0.0, reward))
        clipped = f", clipped to {score:g}" if score != reward else ""
        truth_text = "" if truth is None else f" against ground truth {_short(truth, 60)!r}"
        return ScoreResponse(
            score=score,
            explanation=f"reward {self.name} = {reward:g}{clipped} for {agent.name}'s final "
            f"output{truth_text}.",
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<reward check {self.name}>"


def from_reward(
    fn: Callable[..., float],
    ground_truth: GroundTruth = None,
    *,
    name: str | None = None,
    scope: Literal["agent", "trace"] = "agent",
) -> RewardCheck:
    """Use a reward function `fn(solution_str, ground_truth, extra_info=None, **kwargs) ->
    float` (such as an `@osmosis_reward` one) as a check.

    Each agent instance (scope="agent") or the root only (scope="trace") is scored with
    `solution_str` = its final output (`AgentInstance.final_output`; None - not scored -
    when it has none), `ground_truth` = the given string, or `ground_truth(agent)` when a
    function is given, and `extra_info` = `{"agent": agent, "trace": trace}`. Rewards are
    clipped to 0..1. An `@osmosis_reward` function placed directly in `criteria` is the
    same as `from_reward(fn)`, with no ground truth (None).
    """
    return RewardCheck(fn, ground_truth, name=name, scope=scope)


def is_check(obj: object) -> bool:
    """Whether `obj` is scored as a check (rather than sent to a judge) in `criteria`."""
    return not isinstance(obj, str) and isinstance(obj, TraceCheck)


def as_check(obj: object) -> TraceCheck:
    """`obj` as a TraceCheck: checks and `@osmosis_reward` functions; TypeError otherwise."""
    if getattr(obj, "__osmosis_reward__", False) and callable(obj):
        return from_reward(obj)  # type: ignore[arg-type]
    if is_check(obj):
        return obj  # type: ignore[return-value]
    if callable(obj):
        raise TypeError(
            f"{getattr(obj, '__name__', obj)!r} is a plain function, not a check: decorate it "
            "with @checks.check (fn(agent) -> score) or @osmosis_reward"
        )
    raise TypeError(f"{type(obj).__name__} is not a check (needs a name and evaluate(trace))")


# --------------------------------------------------------------------------- instances

tool_arguments: ToolArguments = ToolArguments()
tool_results: ToolResults = ToolResults()
loops: Loops = Loops()
grounded_numbers: GroundedNumbers = GroundedNumbers()
final_answer: FinalAnswer = FinalAnswer()

#: The built-in checks that need no configuration (`budgets` needs limits).
ALL: tuple[AgentCheck, ...] = (tool_arguments, tool_results, loops, grounded_numbers, final_answer)
