"""The `final_answer` check (and `final_answer_with`): the agent ended with a non-empty,
complete answer, not a dangling tool call or a refusal.

Agent frameworks end an agent's work in other ways too: a `final_answer` tool call is the
agent's answer (smolagents), a hand-off passes the work on to another agent (the OpenAI
Agents SDK's `transfer_to_<agent>`, Agent Framework's `handoff_to_<agent>`, Google ADK's
`transfer_to_agent` naming the agent in its arguments: whatever the producer, a hand-off tool
naming an agent that ran in the trace is one), and a router's routing decision (a LangGraph
supervisor's `{"next": "FINISH"}`) says where the work goes, not what the user is told.
"""

from __future__ import annotations

import json
import re

from tracejudge.evaluation._checks.calls import call_outcomes
from tracejudge.evaluation._checks.explain import NOT_RECORDED, plural
from tracejudge.evaluation._checks.numbers import mentions
from tracejudge.evaluation._checks.run import BuiltinCheck, Run
from tracejudge.evaluation._checks.text import declines, refusal, short
from tracejudge.evaluation._endings import refusal_of, unusual_ending
from tracejudge.models import LLMInteraction, LLMToolCall, ScoreResponse, is_routing_decision

#: Answers up to this long that state no value are read whole for a refusal.
_SHORT_ANSWER = 300

_FAILURES = {
    "invalid": "was invalid",
    "error": "returned an error",
    "missing": "got no result",
    "unknown": "left no recorded result",
}

#: Tool names whose call is the agent's answer (smolagents' `final_answer`).
ANSWER_TOOLS = frozenset({"final_answer"})
#: The prefix of the Agents SDK's hand-off tools (`transfer_to_<agent>`).
HANDOFF_PREFIX = "transfer_to_"
#: Hand-off tools: `transfer_to_<agent>`, `handoff_to_<agent>`, `hand_off_to_<agent>`, or
#: (`<agent>` = `agent`) one that names the agent in its arguments.
_HANDOFF_TOOL = re.compile(r"(?:transfer|handoff|hand_off)_to_(.+)", re.IGNORECASE)
#: Finish reasons that mean the answer is not whole: it fails, named.
_CUT_SHORT = frozenset({"length", "content_filter"})

__all__ = ["FinalAnswer", "final_answer", "final_answer_with", "ANSWER_TOOLS", "HANDOFF_PREFIX"]


class FinalAnswer(BuiltinCheck):
    """The agent ended with a non-empty answer: not a dangling tool call, not empty, and
    not a refusal or apology when the tools it called succeeded.

    The final answer is the agent's last LLM interaction, or the answer of a `final_answer`
    tool call made there, or the results of the tool calls made there when the run ended
    with them as its answer (`tool_use_behavior="stop_on_first_tool"`, `return_direct`:
    each result recorded by its tool span, and the agent's recorded answer). It fails
    (0.0) when it asks for another tool (unless it hands off: a child agent ran after it,
    the tool is `transfer_to_<agent>` and that agent ran in the trace, or a hand-off span
    recorded it (`AgentInstance.handoff`, whatever the tool's name); a hand-off is not
    scored, None), when its text is empty, or when it refuses or apologises ("I'm sorry",
    "I cannot", "unable to") - in its first sentence, or anywhere in a short answer that
    states no value, not in a caveat after a real answer - although the agent called
    tools and every call it made got a result that is neither an error nor empty (its
    `final_answer` call aside).

    A refusal written as text (`text.declines`: an answer made only of refusal, apology
    and courtesy sentences, such as "I'm sorry, but I can't help with that request.",
    "I'm unable to assist with this.", "I cannot provide medical advice; please consult
    a doctor.", "As an AI, I can't browse the web.") fails too when the agent called no
    tool. Not refusals: an apology followed by an answer, a refusal that turns to content
    ("I can't give advice, but generally ..."), a refusal for now or on a condition ("I
    can't proceed without your order number"), and reports that something was not found
    ("I couldn't find any results"). After a tool call that failed or found nothing,
    refusals and apologies are fair and left to a judge: 1.0, noted; so is an apology
    that is not a refusal from an agent that called no tool.
    `final_answer_with(plain_text_refusals=False)` turns the reading of written refusals
    off (only the model's marked refusals, and apologies after tools that succeeded,
    fail).

    A routing decision (`{"next": "writer"}`) is not an answer: None, scored where the
    work went.

    A marked refusal - the model's `refusal` (OpenAI), or a call that finished with reason
    `refusal` (Anthropic) - fails wherever it comes, named: "the agent refused: ...". An
    answer cut off at the token limit (finish reason `length`) or stopped by a content
    filter (`content_filter`) fails, named. For an agent whose correct behaviour is to
    refuse (a guardrail, a policy agent), `final_answer_with(allow_refusal=True)` scores
    refusals, marked or written, 1.0 (noted); the other rules hold.

    Score: 1.0 or 0.0; None for an agent without LLM interactions, or whose last
    interaction recorded no message content.
    """

    name = "final_answer"

    def __init__(self, *, allow_refusal: bool = False, plain_text_refusals: bool = True) -> None:
        for option, value in (
            ("allow_refusal", allow_refusal),
            ("plain_text_refusals", plain_text_refusals),
        ):
            if not isinstance(value, bool):
                raise ValueError(f"{option} must be True or False, got {value!r}")
        self.allow_refusal = allow_refusal
        self.plain_text_refusals = plain_text_refusals
        changed = [
            f"{option}={value}"
            for option, value, default in (
                ("allow_refusal", allow_refusal, False),
                ("plain_text_refusals", plain_text_refusals, True),
            )
            if value != default
        ]
        if changed:
            self.name = f"final_answer({', '.join(changed)})"

    def _score(self, run: Run) -> ScoreResponse | None:
        result = self._score_ending(run)
        if result is None or result.score is None or result.score >= 1.0:
            return result
        # A failing ending is the agent's last model call (and its dangling tool call).
        index = len(run.llm) - 1
        calls = run.llm[index].tool_calls
        step = run.step(index, calls[-1] if calls else None)
        return result.model_copy(update={"steps": [step]})

    def _score_ending(self, run: Run) -> ScoreResponse | None:
        if not run.llm:
            return None
        index = len(run.llm) - 1
        last = run.llm[index]
        where = run.where(index)
        if not last.input_messages and not last.output_messages and not last.error:
            return ScoreResponse(score=None, explanation=f"{where}: {NOT_RECORDED}.")
        ending = self._ending(run, where, last)
        if ending is not None:
            return ending
        answer_call = next((c for c in last.tool_calls if c.name in ANSWER_TOOLS), None)
        answer: str | None
        if answer_call is not None:
            answer = _answer_of(answer_call)
        elif last.tool_calls:
            answer = _tool_answer(run.agent.output, last)
            if answer is None:
                return self._ends_with_call(run, where, last.tool_calls)
        else:
            answer = last.output_text
        if is_routing_decision(answer):
            return ScoreResponse(
                score=None,
                explanation=f"{where}: {run.name} ended with a routing decision "
                f"{short(answer, 80)!r}, not an answer; the answer is scored where the work "
                "went.",
            )
        if not answer.strip():
            return self._empty(run, where, last)
        phrase = refusal(answer)
        if not phrase and len(answer) <= _SHORT_ANSWER and not mentions(answer):
            # A short answer with no data in it refuses wherever it says so ("Thanks for
            # asking. I'm sorry, but I can't help with that.").
            phrase = refusal(answer, anywhere=True)
        declined = declines(answer) if self.plain_text_refusals else None
        if (phrase or declined) and self.allow_refusal:
            return ScoreResponse(
                score=1.0,
                explanation=f"{where}: {run.name} answered, refusing or apologising "
                f"({declined or phrase!r}), which allow_refusal permits: {short(answer, 120)!r}",
            )
        if phrase or declined:
            return self._refusal(run, where, answer, declined or phrase or "", declined is not None)
        unusual = unusual_ending(last)
        return ScoreResponse(
            score=1.0,
            explanation=f"{where}: {run.name} ended with an answer: {short(answer, 120)!r}"
            + (f" (the model call was {unusual})" if unusual else ""),
        )

    def _ending(self, run: Run, where: str, last: LLMInteraction) -> ScoreResponse | None:
        """A score for a call that refused or was cut short; None for any other call."""
        refused = refusal_of(last)
        if refused is not None:
            said = f": {short(refused, 120)!r}" if refused.strip() else " (no text)"
            if self.allow_refusal:
                return ScoreResponse(
                    score=1.0,
                    explanation=f"{where}: the agent refused{said}, which allow_refusal permits.",
                )
            return ScoreResponse(
                score=0.0,
                explanation=f"{where}: the agent refused{said} ({run.name}'s last model call "
                "returned a refusal, not an answer).",
            )
        if last.finish_reason not in _CUT_SHORT:
            return None
        answer = last.output_text
        calls = last.tool_calls
        if calls:
            wrote = f" in tool call {calls[-1].id} ({calls[-1].name})"
        elif answer.strip():
            wrote = f": {short(answer, 120)!r}"
        else:
            wrote = " before it wrote anything"
        return ScoreResponse(
            score=0.0,
            explanation=f"{where}: {run.name}'s final answer was {unusual_ending(last)}{wrote}.",
        )

    @staticmethod
    def _empty(run: Run, where: str, last: LLMInteraction) -> ScoreResponse:
        """An empty answer: a failed call, output not recorded, or nothing said."""
        written = last.usage.output_tokens if last.usage is not None else 0
        if last.error:
            why = f" (the model call failed: {short(last.error, 100)})"
        elif last.finish_reason == "tool_calls" and not last.tool_calls:
            why = " (its last model call finished for tool calls, but recorded none)"
        elif unusual_ending(last):
            why = f" (the model call was {unusual_ending(last)})"
        elif not last.output_messages and written > 0:
            # An empty answer still costs a token or two, and some instrumentations do not
            # record streamed output at all: the trace cannot tell these apart, so say both.
            why = (
                f"; the model reported {plural(written, 'output token')}, so if more was "
                "said, the instrumentation did not record it"
            )
        else:
            why = ""
        return ScoreResponse(
            score=0.0, explanation=f"{where}: {run.name}'s final answer is empty{why}."
        )

    @staticmethod
    def _ends_with_call(run: Run, where: str, calls: list[LLMToolCall]) -> ScoreResponse:
        child = run.handed_off_to
        names = {agent.name for agent in run.trace.agent_instance_by_id.values()} - {run.name}
        handoff, target = next(
            ((c, found) for c in calls if (found := _handoff_target(c, names)) is not None),
            (None, None),
        )
        if handoff is None and any(_HANDOFF_TOOL.fullmatch(c.name) for c in calls):
            # A hand-off tool whose target the trace does not record (its arguments were
            # not read): the agent that ran next took the work on.
            target = _next_agent(run)
            handoff = next(c for c in calls if _HANDOFF_TOOL.fullmatch(c.name))
            handoff = handoff if target is not None else None
        if child is None and handoff is not None:
            return ScoreResponse(
                score=None,
                explanation=f"{where}: {run.name} handed off to {target} with tool call "
                f"{handoff.id} ({handoff.name}); its answer is scored there.",
            )
        if child is None and run.agent.handoff is not None:
            target = run.agent.handoff or "another agent"
            ids = ", ".join(f"{c.id} ({c.name})" for c in calls)
            return ScoreResponse(
                score=None,
                explanation=f"{where}: {run.name} handed off to {target} (a hand-off span "
                f"recorded it) with tool call {ids}; its answer is scored there.",
            )
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
    def _refusal(run: Run, where: str, answer: str, phrase: str, declined: bool) -> ScoreResponse:
        """A refusal or apology: it fails after tools that all succeeded, and, when it is
        a refusal written as text (`declined`), from an agent that called no tool."""
        outcomes = [
            o
            for o in call_outcomes(run)
            if o.status != "unanswered" and o.call.name not in ANSWER_TOOLS
        ]
        failed = [o for o in outcomes if o.status != "ok" or o.empty]
        if outcomes and not failed:
            return ScoreResponse(
                score=0.0,
                explanation=f"{where}: {run.name}'s final answer refuses or apologises "
                f"({phrase!r}) although all {plural(len(outcomes), 'tool call')} "
                f"succeeded: {short(answer, 120)!r}",
            )
        if declined and not outcomes:
            return ScoreResponse(
                score=0.0,
                explanation=f"{where}: {run.name}'s final answer is a refusal ({phrase!r}), "
                f"not an answer: {short(answer, 120)!r} (if refusing is this agent's job, "
                "use final_answer_with(allow_refusal=True))",
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


def _tool_answer(output: str | None, last: LLMInteraction) -> str | None:
    """The agent's answer when its run ended with its tools' results, which its recorded
    answer is (`tool_use_behavior="stop_on_first_tool"`, `return_direct`; see
    `AgentInstance.output`); else None."""
    results = {result.id: result.response for result in last.tool_results or []}
    if output is None or not all(call.id in results for call in last.tool_calls):
        return None
    return output if output == "\n\n".join(results[c.id] for c in last.tool_calls) else None


def _handoff_target(call: LLMToolCall, agents: set[str]) -> str | None:
    """The agent a hand-off tool call passes the work to, when it is one of `agents`: named
    in the tool's name (`transfer_to_weather`), else in its arguments (`transfer_to_agent`
    with `{"agent_name": "weather"}`); None for any other call."""
    matched = _HANDOFF_TOOL.fullmatch(call.name)
    if matched is None:
        return None
    if matched.group(1) in agents:
        return matched.group(1)
    try:
        arguments = json.loads(call.parameters)
    except ValueError:
        return None
    values = arguments.values() if isinstance(arguments, dict) else ()
    return next((v for v in values if isinstance(v, str) and v in agents), None)


def _next_agent(run: Run) -> str | None:
    """The name of the agent (other than the run's own) whose first model call started
    first after the run's last one ended; None when none did."""
    ended = run.llm[-1].end_time or run.llm[-1].start_time
    if ended is None:
        return None
    later = [
        (first.start_time, agent.name)
        for agent in run.trace.agent_instance_by_id.values()
        if agent.name != run.name and agent.llm_interactions
        for first in agent.llm_interactions[:1]
        if first.start_time is not None and first.start_time >= ended
    ]
    return min(later)[1] if later else None


def _answer_of(call: LLMToolCall) -> str:
    """The answer a `final_answer` tool call gives: its `answer` argument (or its only
    argument), else its arguments as they are."""
    try:
        arguments = json.loads(call.parameters)
    except ValueError:
        return call.parameters
    if isinstance(arguments, dict):
        value = arguments.get(
            "answer", next(iter(arguments.values())) if len(arguments) == 1 else None
        )
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value)
    return call.parameters


def final_answer_with(
    *, allow_refusal: bool = False, plain_text_refusals: bool = True
) -> FinalAnswer:
    """A `final_answer` check; with `allow_refusal=True`, for agents whose correct behaviour
    is to refuse, a refusal (marked by the model, or written) is a proper answer; with
    `plain_text_refusals=False`, a refusal written as text by an agent that called no tool
    is left to a judge (1.0, noted), as the model's marked refusals still fail."""
    return FinalAnswer(allow_refusal=allow_refusal, plain_text_refusals=plain_text_refusals)


final_answer: FinalAnswer = FinalAnswer()
