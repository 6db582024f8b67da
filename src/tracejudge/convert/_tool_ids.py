"""Tool results matched to their calls across a whole trace (see `join_tool_ids`)."""

from __future__ import annotations

from collections.abc import Iterable

from tracejudge.models import LLMInput, LLMInteraction, LLMToolCall, LLMToolResponse

__all__ = ["join_tool_ids"]


def join_tool_ids(
    agents: Iterable[Iterable[LLMInteraction | str]], aliases: dict[str, str]
) -> None:
    """Match tool results to their calls across the whole trace: each agent's items
    (interactions, and child agents' ids) in order.

    Responses API spans from OpenLLMetry give a tool call the item id (`fc_…`) while
    its result carries the call id (`call_…`); per-message events give results no id
    at all, and some producers record calls without their ids: such a call is given one
    (`<its model call's span id>:<position>`). A follow-up request lists each call just
    before its result (or, chained with `previous_response_id`, only the results of the
    previous answer's calls), so an unmatched result is paired with the oldest unanswered
    call before it: a missing result id is filled in, a different one makes the call id an
    alias to rewrite.
    Finally, results without a tool name take the name of their call.
    """
    # Each interaction's input tool calls and results and its output tool calls, in order,
    # for the interactions that have any: most messages are text, and the conversation
    # repeats in every later input, so the passes below look at these short lists instead
    # of every message again. (Contents are text or tool items: not text is a tool item.)
    joined: list[tuple[list[LLMToolCall | LLMToolResponse], list[LLMToolCall]]] = []
    for items in agents:
        carried: list[LLMToolCall] = []  # the calls the agent's previous answer made
        for item in items:
            if isinstance(item, str):
                continue  # a child agent's id
            inputs = item.input_messages
            tools = [c for m in inputs if not isinstance(c := m.content, str)]
            if tools:
                _pair_results(inputs, tools, carried, aliases)
            carried = [c for m in item.output_messages if not isinstance(c := m.content, str)]
            for position, call in enumerate(carried):
                if not call.id:  # (OpenInference's Haystack spans record none)
                    call.id = f"{item.span_id}:{position}"
            if tools or carried:
                joined.append((tools, carried))
    names: dict[str, str] = {}
    for tools, calls in joined:
        for content in (*tools, *calls):
            if isinstance(content, LLMToolCall):
                if content.id in aliases:  # (assigning a model's field is not cheap)
                    content.id = aliases[content.id]
                names.setdefault(content.id, content.name)
    for tools, _ in joined:
        for content in tools:
            if isinstance(content, LLMToolResponse) and content.name is None:
                name = names.get(content.id)
                if name is not None:
                    content.name = name


def _pair_results(
    inputs: list[LLMInput],
    tools: list[LLMToolCall | LLMToolResponse],
    carried: list[LLMToolCall],
    aliases: dict[str, str],
) -> None:
    """Pair the results in `inputs` (whose tool calls and results are `tools`) with the
    calls before them (see `_join_tool_ids`)."""
    answered = {c.id for c in tools if isinstance(c, LLMToolResponse)}
    if not answered:
        return  # only results are paired (and changed): none here
    call_ids = {c.id for c in tools if isinstance(c, LLMToolCall)}
    if answered <= call_ids and all(answered):
        # The usual case: every result has the id of a call in this input, so each is
        # matched or skipped below, and nothing changes.
        return
    pending = [call for call in carried if call.id not in call_ids]
    # The previous answer's calls, for results with no id in an input that does not show
    # the answer that made them (OpenInference's Haystack spans record its role alone).
    unshown = list(pending)
    for message in inputs:
        content = message.content
        if isinstance(content, str):
            if message.role == "user":
                pending.clear()  # a new user turn: earlier calls went unanswered
        elif isinstance(content, LLMToolCall):
            pending.append(content)
        else:  # a result
            if content.id and _take_call(pending, content.id):
                continue
            if content.id and content.id in call_ids:
                continue
            candidate = _take_unanswered(pending, answered, aliases)
            if candidate is None and not content.id:
                candidate = _take_unanswered(unshown, answered, aliases)
            if candidate is None:
                continue
            unshown = [call for call in unshown if call is not candidate]
            if not content.id:
                content.id = candidate.id
            elif candidate.id:
                aliases[candidate.id] = content.id


def _take_call(pending: list[LLMToolCall], call_id: str) -> bool:
    """Remove the first pending call with this id; whether there was one."""
    for position, call in enumerate(pending):
        if call.id == call_id:
            del pending[position]
            return True
    return False


def _take_unanswered(
    pending: list[LLMToolCall], answered: set[str], aliases: dict[str, str]
) -> LLMToolCall | None:
    """Remove and return the first pending call that no result answers by id."""
    for position, call in enumerate(pending):
        if call.id not in answered and call.id not in aliases:
            del pending[position]
            return call
    return None
