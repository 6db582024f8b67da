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
into `agent.llm_interactions` written `llm_interactions[i]` (0-based; followed by
`(interactions[j])`, the position in the wire list `agent.interactions`, where
child agents make the two differ), and the tool call id. An agent's own LLM
interactions are what it is scored on; its child agents are scored separately,
as agents of their own. One fault is flagged by one check: a call that
`tool_arguments` rejects, or that the agent never saw the result of because it
stopped there (`final_answer`), is not counted again by `tool_results`.

Built-in checks (instances; `budgets` and `loops_with` build configured ones):

* `tool_arguments` - calls name an available tool; arguments are JSON that fit its schema.
* `tool_results`   - every call got a result; results that are errors are counted.
* `loops`          - the same call repeated after it succeeded (or made 3 times), or the
  same reply repeated: the agent is stuck.
* `grounded_numbers` - numbers, dates and times in the final answer appear in the inputs.
* `final_answer`   - the agent ended with a non-empty answer, not a tool call or a refusal.
* `budgets(max_tokens=..., max_seconds=...)` - token and time budgets per agent.

Writing your own: `@check` turns `fn(agent) -> float | bool | (float, str) |
ScoreResponse | None` into a check (`fn(trace)` scores the whole trace), and
`from_reward` turns an `@osmosis_reward` function into one; a decorated reward
function is also a check by itself.
"""

from __future__ import annotations

import bisect
import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tracejudge.evaluation import _checks_schema, _checks_text
from tracejudge.evaluation._check import TraceCheck
from tracejudge.evaluation._checks_numbers import Facts, mentions
from tracejudge.evaluation._checks_text import short as _short
from tracejudge.evaluation._checks_user import (
    FunctionCheck,
    RewardCheck,
    Score,
    as_check,
    check,
    from_reward,
    is_check,
)
from tracejudge.evaluation._history import Turn, new_messages
from tracejudge.models import (
    AgentInstance,
    LLMInteraction,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
    MultiAgentTrace,
    ScoreResponse,
)

__all__ = [
    "TraceCheck",
    "AgentCheck",
    "FunctionCheck",
    "RewardCheck",
    "Score",
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
#: At most this many tool call ids are named in one note.
_MAX_NAMED_IDS = 5

_NOT_RECORDED = (
    "no message content was recorded for its LLM interactions (content capture off?), so "
    "there is nothing to check"
)


# --------------------------------------------------------------------------- shared helpers


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


def _ids(calls: Sequence[LLMToolCall]) -> str:
    named = ", ".join(c.id for c in calls[:_MAX_NAMED_IDS])
    return named + (
        f" and {len(calls) - _MAX_NAMED_IDS} more" if len(calls) > _MAX_NAMED_IDS else ""
    )


class _Run:
    """One agent instance as the built-in checks read it.

    `memo` is shared by the runs of one `evaluate(trace)` call, for what a check derives
    from several agents (a subtree's sources, a child's time span).
    """

    def __init__(self, agent: AgentInstance, trace: MultiAgentTrace, memo: dict[Any, Any]) -> None:
        self.agent = agent
        self.trace = trace
        self.memo = memo
        self.name = agent.name
        #: The agent's LLM interactions, and where each sits in `agent.interactions`.
        self.llm: list[LLMInteraction] = []
        self.positions: list[int] = []
        for position, item in enumerate(agent.interactions):
            if isinstance(item, LLMInteraction):
                self.llm.append(item)
                self.positions.append(position)
        last = agent.interactions[-1] if agent.interactions else None
        #: The child agent that ran after the agent's last LLM interaction (a hand-off).
        self.handed_off_to: str | None = last if isinstance(last, str) else None

    def where(self, index: int, call: LLMToolCall | None = None) -> str:
        """'researcher llm_interactions[2], tool call call_7 (search)'."""
        place = f"{self.name} llm_interactions[{index}]"
        if self.positions[index] != index:
            place += f" (interactions[{self.positions[index]}])"
        if call is not None:
            place += f", tool call {call.id} ({call.name})"
        return place

    @property
    def recorded(self) -> bool:
        """Whether any message content was recorded (instrumentations may record none)."""
        return any(i.input_messages or i.output_messages for i in self.llm)

    @functools.cached_property
    def turns(self) -> list[Turn]:
        """Per interaction, the input messages it added to the previous interaction's inputs
        and outputs (`_history.new_messages`, as the judge's transcript reads them). Chat
        agents resend the whole conversation on every call; reading only what is new keeps
        checks linear."""
        return list(new_messages(self.llm))

    def child_agents(self, agent: AgentInstance | None = None) -> Iterator[AgentInstance]:
        """The agent's descendants, each once, depth first."""
        seen = {self.agent.id}
        stack = list(reversed((agent or self.agent).child_ids))
        while stack:
            child_id = stack.pop()
            child = self.trace.agent_instance_by_id.get(child_id)
            if child is None or child_id in seen:
                continue
            seen.add(child_id)
            yield child
            stack.extend(reversed(child.child_ids))

    @functools.cached_property
    def outcomes(self) -> list[_CallOutcome]:
        return _call_outcomes(self)


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


class _BuiltinCheck(AgentCheck):
    """An AgentCheck that reads agents through `_Run`."""

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        memo: dict[Any, Any] = {}
        return {agent.id: self._score(_Run(agent, trace, memo)) for agent in trace.iter_agents()}

    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        return self._score(_Run(agent, trace, {}))

    @abstractmethod
    def _score(self, run: _Run) -> ScoreResponse | None: ...


# --------------------------------------------------------------------------- tool calls

#: A hosted tool entry under which a server offers tools the trace does not list by name.
_TOOL_SERVERS = frozenset({"mcp"})


def _tool_problem(
    call: LLMToolCall,
    tools: dict[str, LLMToolDefinition],
    fallback: dict[str, LLMToolDefinition],
) -> str | None:
    """Why a call is invalid, or None. `tools` are the interaction's (availability is
    checked only when there are some); `fallback` the agent's other interactions' tools,
    for the schema where the interaction recorded none."""
    tool = tools.get(call.name) or tools.get(f"{call.name}_preview")
    if tools and tool is None and not (_TOOL_SERVERS & tools.keys()):
        available = ", ".join(sorted(tools))
        return f"names tool {call.name!r}, which was not available (available: {available})"
    raw = call.parameters
    try:
        arguments: Any = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return f"arguments are not valid JSON ({exc}): {_short(raw, 60)!r}"
    if arguments is None:
        arguments = {}  # "null": no arguments
    if not isinstance(arguments, dict):
        kind = _checks_schema._type_name(arguments)
        return f"arguments are a JSON {kind}, not an object: {_short(raw, 60)!r}"
    tool = tool or (None if tools else fallback.get(call.name))
    schema = tool.schema_dict() if tool is not None else None
    if schema is None:
        return None  # no usable schema: nothing more to check against
    errors = _checks_schema.validate(arguments, schema)
    if errors:
        return "arguments do not match the tool's schema: " + "; ".join(errors)
    return None


@dataclass(frozen=True)
class _CallOutcome:
    index: int
    call: LLMToolCall
    #: invalid: the call itself is invalid (tool_arguments' finding); ok / error: it got a
    #: result that is / is not an error; missing: no result although the agent went on;
    #: unanswered: a call in the agent's last interaction (it stopped or handed off there;
    #: final_answer's concern); unknown: the later inputs do not repeat the conversation
    #: (not even the call), so whether a result came cannot be told.
    status: Literal["invalid", "ok", "error", "missing", "unanswered", "unknown"]
    detail: str = ""
    result_index: int | None = None
    #: ok only: the result found nothing (an empty list, "No results").
    empty: bool = False

    @property
    def counted(self) -> bool:
        """Whether tool_results judges this call."""
        return self.status in ("ok", "error", "missing")


@dataclass
class _Appearances:
    """Where later inputs carry tool results and replay the agent's calls, by call id."""

    #: call id -> the interactions whose inputs carry a result for it (ascending), and
    #: those results.
    results: dict[str, tuple[list[int], list[LLMToolResponse]]] = field(default_factory=dict)
    #: call id -> the last interaction whose inputs replay the call.
    replays: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, run: _Run) -> _Appearances:
        seen = cls()
        for j, turn in enumerate(run.turns):
            for message in (*turn.replayed, *turn.new):
                content = message.content
                if isinstance(content, LLMToolResponse):
                    where, responses = seen.results.setdefault(content.id, ([], []))
                    where.append(j)
                    responses.append(content)
                elif isinstance(content, LLMToolCall):
                    seen.replays[content.id] = j
        return seen

    def result_after(self, call_id: str, index: int) -> tuple[int, LLMToolResponse] | None:
        """The first result for the call in the inputs of an interaction after `index`."""
        where, responses = self.results.get(call_id, ([], []))
        k = bisect.bisect_right(where, index)  # ids may be reused: take the next one
        return (where[k], responses[k]) if k < len(where) else None

    def replayed_after(self, call_id: str, index: int) -> bool:
        return self.replays.get(call_id, -1) > index


def _call_outcomes(run: _Run) -> list[_CallOutcome]:
    agent_tools: dict[str, LLMToolDefinition] = {}
    for interaction in run.llm:
        for tool in interaction.tools_available or []:
            agent_tools.setdefault(tool.name, tool)
    seen: _Appearances | None = None
    last = len(run.llm) - 1
    outcomes: list[_CallOutcome] = []
    for i, interaction in enumerate(run.llm):
        calls = interaction.tool_calls
        if not calls:
            continue
        tools = {tool.name: tool for tool in interaction.tools_available or []}
        for call in calls:
            problem = _tool_problem(call, tools, agent_tools)
            if problem:
                outcomes.append(_CallOutcome(i, call, "invalid", problem))
                continue
            if i == last:
                detail = (
                    f"child agent {run.handed_off_to} ran after it"
                    if run.handed_off_to
                    else "the agent stopped after this call"
                )
                outcomes.append(_CallOutcome(i, call, "unanswered", detail))
                continue
            seen = seen or _Appearances.of(run)
            found = seen.result_after(call.id, i)
            if found is None:
                if seen.replayed_after(call.id, i):
                    detail = "the agent went on without it"
                    outcomes.append(_CallOutcome(i, call, "missing", detail))
                else:
                    detail = "the later inputs do not repeat the conversation"
                    outcomes.append(_CallOutcome(i, call, "unknown", detail))
                continue
            j, response = found
            reason = _checks_text.tool_error(response.response)
            if reason:
                outcomes.append(_CallOutcome(i, call, "error", reason, j))
            else:
                empty = _checks_text.empty_result(response.response)
                outcomes.append(_CallOutcome(i, call, "ok", "", j, empty))
    return outcomes


# --------------------------------------------------------------------------- tool_arguments


class ToolArguments(_BuiltinCheck):
    """Every tool call names a tool offered in that interaction, with arguments that are a
    JSON object valid against the tool's JSON schema (required fields, types, enums, ...).

    Score: the fraction of the agent's tool calls that are valid; None when it made none.
    Where an interaction recorded no tools (`tools_available` empty or missing, e.g. an
    instrumentation that does not capture them), availability is not checked for its calls
    and the explanation says so; their arguments must still be a JSON object, and fit the
    schema of a tool of that name recorded on the agent's other interactions, if any. An
    empty argument string (or `null`) counts as `{}`; a tool without a schema takes any
    object.
    """

    name = "tool_arguments"

    def _score(self, run: _Run) -> ScoreResponse | None:
        outcomes = run.outcomes
        if not outcomes:
            return None
        problems = [
            f"{run.where(o.index, o.call)}: {o.detail}" for o in outcomes if o.status == "invalid"
        ]
        unrecorded = sorted({o.index for o in outcomes if not run.llm[o.index].tools_available})
        notes = []
        if unrecorded:
            notes.append(
                f"no tools were recorded for llm_interactions{_indexes(unrecorded)}; "
                "whether their tools were available was not checked"
            )
        valid = len(outcomes) - len(problems)
        summary = f"{run.name}: {valid} of {_plural(len(outcomes), 'tool call')} valid."
        return ScoreResponse(
            score=valid / len(outcomes), explanation=_explain(summary, problems, notes)
        )


# --------------------------------------------------------------------------- tool_results


class ToolResults(_BuiltinCheck):
    """Every tool call got a result, and the result is not an error.

    A call's result is the tool response with the same id in the inputs of a later
    interaction of the same agent. Errors are JSON error objects (`{"error": ...}`,
    `"status": 500`, `"success": false`, MCP `isError`, Anthropic `is_error`), tracebacks,
    results that start with an error line (`ValueError: ...`, `Error: ...`) and HTTP error
    statuses (`404 Not Found`, `HTTP 503`). Not counted, each noted: calls that
    `tool_arguments` rejects (their error result is that fault's consequence), calls in the
    agent's last interaction (it stopped or handed off there: `final_answer` judges that),
    and calls whose later inputs do not repeat the conversation at all (an instrumentation
    that records only the first message), where a result cannot be looked for.

    Score: the fraction of counted calls with a non-error result; None without any.
    """

    name = "tool_results"

    def _score(self, run: _Run) -> ScoreResponse | None:
        outcomes = run.outcomes
        counted = [o for o in outcomes if o.counted]
        notes = self._notes(outcomes)
        if not counted:
            if not outcomes:
                return None
            return ScoreResponse(
                score=None,
                explanation=_explain(f"{run.name}: no tool call to judge here.", (), notes),
            )
        problems = []
        for o in counted:
            if o.status == "missing":
                problems.append(f"{run.where(o.index, o.call)}: no result ({o.detail})")
            elif o.status == "error":
                problems.append(
                    f"{run.where(o.index, o.call)}: the result (in "
                    f"llm_interactions[{o.result_index}]) is an error: {o.detail}"
                )
        ok = sum(1 for o in counted if o.status == "ok")
        errors = sum(1 for o in counted if o.status == "error")
        missing = len(counted) - ok - errors
        summary = (
            f"{run.name}: {ok} of {_plural(len(counted), 'tool call')} got a result that is "
            f"not an error ({_plural(errors, 'error')}, {missing} without a result)."
        )
        return ScoreResponse(
            score=ok / len(counted), explanation=_explain(summary, problems, notes)
        )

    @staticmethod
    def _notes(outcomes: Sequence[_CallOutcome]) -> list[str]:
        reasons = {
            "invalid": "the call itself is invalid (see tool_arguments)",
            "unanswered": "made in the agent's last interaction (see final_answer)",
            "unknown": "the later inputs do not repeat the conversation, so no result can be "
            "looked for",
        }
        notes = []
        for status, reason in reasons.items():
            calls = [o.call for o in outcomes if o.status == status]
            if calls:
                notes.append(
                    f"not counted: {_plural(len(calls), 'call')} ({_ids(calls)}): {reason}"
                )
        return notes


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


class Loops(_BuiltinCheck):
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

    def _score(self, run: _Run) -> ScoreResponse | None:
        if not run.recorded:
            return None
        status = {id(o.call): o.status for o in run.outcomes}
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
        repeats = 0
        for key, made in calls.items():
            count = sum(1 for *_, repeat in made if repeat)
            if count:
                repeats += count
                why = (
                    "; it had already got a result" if key in answered and not self.polling else ""
                )
                problems.append(
                    f"{run.name} called {_short(key, 100)} {len(made)} times{why} "
                    f"(llm_interactions{_indexes(sorted({i for i, _, _ in made}))}; "
                    f"tool calls {', '.join(c.id for _, c, _ in made)})"
                )
        for key, said in replies.items():
            count = sum(1 for _, repeat in said if repeat)
            if count:
                repeats += count
                problems.append(
                    f"{run.name} gave the same reply {len(said)} times "
                    f"(llm_interactions{_indexes(i for i, _ in said)}): {_short(shown[key])!r}"
                )
        if not problems:
            summary = f"{run.name}: no repeated tool call or reply ({_plural(actions, 'action')})."
            return ScoreResponse(score=1.0, explanation=summary)
        summary = (
            f"{run.name} is stuck: {repeats} of its {_plural(actions, 'action')} "
            f"{'repeats' if repeats == 1 else 'repeat'} an earlier one."
        )
        return ScoreResponse(score=1.0 - repeats / actions, explanation=_explain(summary, problems))


def loops_with(max_repeats: int = 3, *, polling: bool = False) -> Loops:
    """A `loops` check that flags any call or reply made `max_repeats` times or more; with
    `polling=True`, calling a tool again after it succeeded is not a loop by itself."""
    return Loops(max_repeats=max_repeats, polling=polling)


# --------------------------------------------------------------------------- grounded_numbers


def _own_sources(run: _Run) -> Iterator[str]:
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


def _facts(texts: Iterable[str]) -> Facts:
    facts = Facts()
    seen: set[str] = set()
    for text in texts:
        if text and text not in seen:
            seen.add(text)
            facts.add(text)
    return facts


class GroundedNumbers(_BuiltinCheck):
    """Numbers, dates and times stated in the agent's final answer appear in what it was
    given: its system and user messages and tool results, over all its interactions, and
    what its child agents were given and answered (it ran them; their findings are its
    findings, however its code passed them on).

    The final answer is the text of the agent's last LLM interaction. Matching is tolerant
    (units, thousands separators, trailing zeros, percentages, `k`/`million`, rounding to
    the decimals written, dates and times in common formats); list markers (`1.`), citation
    markers (`[1]`), URLs, digits inside names (`gpt-4o`) and small counts (`top 3`,
    `2 options`, `1st`) are not counted. The complete rules are in
    `tracejudge.evaluation._checks_numbers`.

    Score: the fraction of distinct stated values that are grounded; None when the final
    answer is empty or states no number.
    """

    name = "grounded_numbers"

    def _score(self, run: _Run) -> ScoreResponse | None:
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
            f"{run.name}: {grounded} of the {_plural(len(stated), 'value')} (numbers, dates, "
            "times) stated in its final answer found in its inputs or tool results."
        )
        unseen = [o.call for o in run.outcomes if o.status == "unknown"]
        if ungrounded and unseen:
            # The sources are incomplete: what is missing may be in the unrecorded results.
            note = (
                f"the results of {_plural(len(unseen), 'tool call')} ({_ids(unseen)}) were not "
                "recorded (the later inputs do not repeat the conversation), so the values "
                "not found cannot be judged"
            )
            return ScoreResponse(score=None, explanation=_explain(summary, problems, [note]))
        return ScoreResponse(score=grounded / len(stated), explanation=_explain(summary, problems))

    @staticmethod
    def _children_facts(run: _Run) -> Facts:
        key = ("grounded_numbers.children", run.agent.id)
        if key not in run.memo:

            def texts() -> Iterator[str]:
                for child in run.child_agents():
                    yield from _own_sources(_Run(child, run.trace, run.memo))
                    yield child.final_output or ""

            run.memo[key] = _facts(texts())
        return run.memo[key]


# --------------------------------------------------------------------------- final_answer


#: Answers up to this long that state no value are read whole for a refusal.
_SHORT_ANSWER = 300

_FAILURES = {
    "invalid": "was invalid",
    "error": "returned an error",
    "missing": "got no result",
    "unknown": "left no recorded result",
}


class FinalAnswer(_BuiltinCheck):
    """The agent ended with a non-empty answer: not a dangling tool call, not empty, and
    not a refusal or apology when the tools it called succeeded.

    The final answer is the agent's last LLM interaction. It fails (0.0) when it asks for a
    tool (unless a child agent ran after it: a hand-off is not scored, None), when its text
    is empty, or when it refuses or apologises ("I'm sorry", "I cannot", "unable to") -
    in its first sentence, or anywhere in a short answer that states no value, not in a
    caveat after a real answer - although the agent called tools and every call it made
    got a result that is neither an error nor empty. Other refusals (after a failed or
    empty tool result, or from an agent that called no tool) are left to a judge: 1.0,
    noted.

    Score: 1.0 or 0.0; None for an agent without LLM interactions, or whose last
    interaction recorded no message content.
    """

    name = "final_answer"

    def _score(self, run: _Run) -> ScoreResponse | None:
        if not run.llm:
            return None
        index = len(run.llm) - 1
        last = run.llm[index]
        where = run.where(index)
        if not last.input_messages and not last.output_messages and not last.error:
            return ScoreResponse(score=None, explanation=f"{where}: {_NOT_RECORDED}.")
        if last.tool_calls:
            return self._ends_with_call(run, where, last.tool_calls)
        answer = last.output_text
        if not answer.strip():
            why = f" (the model call failed: {_short(last.error, 100)})" if last.error else ""
            return ScoreResponse(
                score=0.0, explanation=f"{where}: {run.name}'s final answer is empty{why}."
            )
        phrase = _checks_text.refusal(answer)
        if not phrase and len(answer) <= _SHORT_ANSWER and not mentions(answer):
            # A short answer with no data in it refuses wherever it says so ("Thanks for
            # asking. I'm sorry, but I can't help with that.").
            phrase = _checks_text.refusal(answer, anywhere=True)
        if phrase:
            return self._refusal(run, where, answer, phrase)
        return ScoreResponse(
            score=1.0,
            explanation=f"{where}: {run.name} ended with an answer: {_short(answer, 120)!r}",
        )

    @staticmethod
    def _ends_with_call(run: _Run, where: str, calls: list[LLMToolCall]) -> ScoreResponse:
        child = run.handed_off_to
        if child is not None:
            agent = run.trace.agent_instance_by_id.get(child)
            name = agent.name if agent is not None else child
            return ScoreResponse(
                score=None,
                explanation=f"{where}: {run.name} handed off to {name} ({child}) with "
                f"tool call {calls[0].id}; its answer is scored there.",
            )
        ids = ", ".join(f"{c.id} ({c.name})" for c in calls)
        return ScoreResponse(
            score=0.0,
            explanation=f"{where}: {run.name} ended with a tool call it never saw the "
            f"result of (tool call {ids}) instead of an answer.",
        )

    @staticmethod
    def _refusal(run: _Run, where: str, answer: str, phrase: str) -> ScoreResponse:
        outcomes = [o for o in run.outcomes if o.status != "unanswered"]
        failed = [o for o in outcomes if o.status != "ok" or o.empty]
        if outcomes and not failed:
            return ScoreResponse(
                score=0.0,
                explanation=f"{where}: {run.name}'s final answer refuses or apologises "
                f"({phrase!r}) although all {_plural(len(outcomes), 'tool call')} "
                f"succeeded: {_short(answer, 120)!r}",
            )
        if failed:
            o = failed[0]
            what = "found nothing" if o.status == "ok" else _FAILURES[o.status]
            reason = f"after tool call {o.call.id} ({o.call.name}) {what}"
        else:
            reason = "without calling a tool"
        return ScoreResponse(
            score=1.0,
            explanation=f"{where}: {run.name} answered, apologising ({phrase!r}) {reason}; "
            "whether that is right is left to a judge.",
        )


# --------------------------------------------------------------------------- budgets


def _span(agents: Iterable[AgentInstance]) -> tuple[float, float] | None:
    """The earliest start and latest end of the agents' LLM interactions."""
    starts: list[float] = []
    ends: list[float] = []
    for agent in agents:
        for interaction in agent.llm_interactions:
            if interaction.start_time is not None:
                starts.append(interaction.start_time)
            if interaction.end_time is not None:
                ends.append(interaction.end_time)
    return (min(starts), max(ends)) if starts and ends else None


def _covered(intervals: Iterable[tuple[float, float]]) -> float:
    """The total length of the union of intervals."""
    total = 0.0
    end = float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def _verdict(
    ratio: float, scores: list[float], lines: list[str], used: str, budget: str, culprit: str
) -> None:
    """Score one budget from used / budget, with a line saying why."""
    if ratio <= 1.0:
        scores.append(1.0)
        lines.append(f"{used}, within {budget}.")
    else:
        scores.append(1.0 / ratio)
        lines.append(f"{used}, over its budget of {budget} ({culprit}).")


class Budgets(_BuiltinCheck):
    """Token and time budgets per agent instance.

    Counted per agent, over its own LLM interactions (child agents are agents of their own,
    checked against the same budget separately). Tokens: the sum of `usage.total_tokens`
    (input + output where the total is missing). Time: from its first interaction's
    `start_time` to its last interaction's `end_time`, less the time its child agents ran
    in between - the agent's own model calls, tool runs and code.

    Score per budget: 1.0 within it, else budget / used (2x over: 0.5); with both budgets,
    the lower of the two. None when the data a budget needs is missing (no usage, or no
    timings, recorded).
    """

    def __init__(self, max_tokens: int | None = None, max_seconds: float | None = None) -> None:
        if max_tokens is None and max_seconds is None:
            raise ValueError("checks.budgets needs max_tokens, max_seconds or both")
        for label, value in (("max_tokens", max_tokens), ("max_seconds", max_seconds)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
            ):
                raise ValueError(f"{label} must be a positive number, got {value!r}")
        self.max_tokens = max_tokens
        self.max_seconds = max_seconds
        parts = []
        if max_tokens is not None:
            parts.append(f"max_tokens={max_tokens}")
        if max_seconds is not None:
            parts.append(f"max_seconds={max_seconds:g}")
        self.name = f"budgets({', '.join(parts)})"

    def _score(self, run: _Run) -> ScoreResponse | None:
        if not run.llm:
            return None
        scores: list[float] = []
        lines: list[str] = []
        if self.max_tokens is not None:
            self._tokens(run, self.max_tokens, scores, lines)
        if self.max_seconds is not None:
            self._seconds(run, self.max_seconds, scores, lines)
        return ScoreResponse(score=min(scores) if scores else None, explanation=" ".join(lines))

    @staticmethod
    def _tokens(run: _Run, budget: int, scores: list[float], lines: list[str]) -> None:
        used: dict[int, int] = {}
        for index, interaction in enumerate(run.llm):
            usage = interaction.usage
            if usage is not None:
                used[index] = usage.total_tokens or (usage.input_tokens + usage.output_tokens)
        if not used:
            lines.append(f"{run.name}: no token usage recorded; token budget not checked.")
            return
        total = sum(used.values())
        missing = [i for i in range(len(run.llm)) if i not in used]
        gap = (
            f" (at least: no usage recorded for llm_interactions{_indexes(missing)})"
            if missing
            else ""
        )
        biggest = max(used, key=lambda i: used[i])
        _verdict(
            total / budget,
            scores,
            lines,
            f"{run.name} used {total} tokens{gap}",
            f"{budget}",
            f"the largest call: {run.where(biggest)}, {used[biggest]} tokens",
        )

    @staticmethod
    def _seconds(run: _Run, budget: float, scores: list[float], lines: list[str]) -> None:
        own = _span([run.agent])
        if own is None:
            lines.append(f"{run.name}: no timings recorded; time budget not checked.")
            return
        start, end = own
        children = []
        for child_id in dict.fromkeys(run.agent.child_ids):
            key = ("budgets.span", child_id)
            if key not in run.memo:
                child = run.trace.agent_instance_by_id.get(child_id)
                subtree = [child, *run.child_agents(child)] if child is not None else []
                run.memo[key] = _span(subtree)
            if run.memo[key] is not None:
                c_start, c_end = run.memo[key]
                if c_end > start and c_start < end:
                    children.append((max(c_start, start), min(c_end, end)))
        in_children = _covered(children)
        elapsed = max(0.0, end - start - in_children)
        detail = (
            f" ({end - start:.3f} s in all, {in_children:.3f} s of it in child agents)"
            if in_children
            else ""
        )
        durations = [i.duration_seconds or 0.0 for i in run.llm]
        slowest = max(range(len(durations)), key=lambda i: durations[i])
        _verdict(
            elapsed / budget,
            scores,
            lines,
            f"{run.name} took {elapsed:.3f} s{detail}",
            f"{budget:g} s",
            f"the slowest call: {run.where(slowest)}, {durations[slowest]:.3f} s",
        )


def budgets(max_tokens: int | None = None, max_seconds: float | None = None) -> Budgets:
    """A check of per-agent token and time budgets (see `Budgets`)."""
    return Budgets(max_tokens=max_tokens, max_seconds=max_seconds)


# --------------------------------------------------------------------------- instances

tool_arguments: ToolArguments = ToolArguments()
tool_results: ToolResults = ToolResults()
loops: Loops = Loops()
grounded_numbers: GroundedNumbers = GroundedNumbers()
final_answer: FinalAnswer = FinalAnswer()

#: The built-in checks that need no configuration (`budgets` needs limits).
ALL: tuple[AgentCheck, ...] = (tool_arguments, tool_results, loops, grounded_numbers, final_answer)
