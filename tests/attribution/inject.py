"""Plant one fault at a known agent and step in a converted trace (a framework recording).

Each planter edits a copy of a clean `MultiAgentTrace` the way the fault would have shown
in the recorded spans, and answers where it planted it: the agent instance and its model
call index (`Step.interaction`), or None when the trace offers no place for that fault.

- `bad_arguments`: a tool call's arguments break the tool's schema (a required property
  dropped, a property of the wrong type), or are not JSON at all.
- `tool_error`: a tool call's result becomes an error the agent went on from.
- `invented_number`: an agent's final answer states a number nothing gave it.
- `loop`: the agent calls a tool again for what it already has (or says its reply again).
- `cut_off`: an agent's final answer is cut off at the token limit.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tracejudge.models import (
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    LLMToolResponse,
    MultiAgentTrace,
    is_routing_decision,
)


@dataclass(frozen=True)
class Planted:
    """A trace with one planted fault, and where it is."""

    kind: str
    trace: MultiAgentTrace
    agent_id: str
    interaction: int


def _copy(trace: MultiAgentTrace) -> MultiAgentTrace:
    return MultiAgentTrace.model_validate_json(trace.to_json())


def _calls(
    trace: MultiAgentTrace,
) -> Iterator[tuple[AgentInstance, int, LLMInteraction, LLMToolCall]]:
    for agent in trace.iter_agents():
        for index, interaction in enumerate(agent.llm_interactions):
            for call in interaction.tool_calls:
                yield agent, index, interaction, call


def _replace_call(trace: MultiAgentTrace, call_id: str, parameters: str) -> None:
    """The call's arguments, wherever the trace shows the call (its output, later inputs)."""
    for agent in trace.iter_agents():
        for interaction in agent.llm_interactions:
            for message in (*interaction.input_messages, *interaction.output_messages):
                if isinstance(message.content, LLMToolCall) and message.content.id == call_id:
                    message.content.parameters = parameters


def _results(trace: MultiAgentTrace, call_id: str) -> list[LLMToolResponse]:
    found = []
    for agent in trace.iter_agents():
        for interaction in agent.llm_interactions:
            for message in interaction.input_messages:
                if isinstance(message.content, LLMToolResponse) and message.content.id == call_id:
                    found.append(message.content)
            found.extend(r for r in interaction.tool_results or [] if r.id == call_id)
    return found


def _schema(interaction: LLMInteraction, name: str) -> dict[str, Any] | None:
    for tool in interaction.tools_available or []:
        if tool.name == name:
            return tool.schema_dict()
    return None


def _broken(arguments: dict[str, Any], schema: dict[str, Any] | None) -> str:
    """Arguments that break `schema`: a required property dropped, else one mistyped,
    else text that is not JSON."""
    properties = (schema or {}).get("properties") or {}
    required = [key for key in (schema or {}).get("required") or [] if key in arguments]
    if required:
        return json.dumps({k: v for k, v in arguments.items() if k != required[0]})
    for key, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind in ("string", "integer", "number", "boolean", "array", "object"):
            wrong = 12345 if kind in ("string", "boolean", "array", "object") else "many"
            return json.dumps({**arguments, key: wrong})
    return '{"' + next(iter(arguments), "query") + '": '


def bad_arguments(trace: MultiAgentTrace, rng: random.Random) -> Planted | None:
    trace = _copy(trace)
    spots = []
    for agent, index, interaction, call in _calls(trace):
        try:
            arguments = json.loads(call.parameters or "{}")
        except ValueError:
            continue
        if isinstance(arguments, dict) and interaction.input_messages:
            spots.append((agent, index, interaction, call, arguments))
    if not spots:
        return None
    agent, index, interaction, call, arguments = rng.choice(spots)
    _replace_call(trace, call.id, _broken(arguments, _schema(interaction, call.name)))
    return Planted("bad_arguments", trace, agent.id, index)


ERRORS = [
    json.dumps({"error": "upstream timeout"}),
    "Traceback (most recent call last):\n  File \"tool.py\", line 9\nKeyError: 'id'",
    "HTTP 503 Service Unavailable",
    "Error: the service is unavailable",
]


def tool_error(trace: MultiAgentTrace, rng: random.Random) -> Planted | None:
    trace = _copy(trace)
    # Calls whose result came back to the agent that made them (not a hand-off's).
    spots = [
        (agent, index, call)
        for agent, index, interaction, call in _calls(trace)
        if _ok_result_later(agent, index, call) is not None
        or any(r.id == call.id for r in interaction.tool_results or [])
    ]
    if not spots:
        return None
    agent, index, call = rng.choice(spots)
    error = rng.choice(ERRORS)
    for result in _results(trace, call.id):
        result.response = error
    return Planted("tool_error", trace, agent.id, index)


def _answering(trace: MultiAgentTrace) -> list[tuple[AgentInstance, int, LLMInteraction]]:
    """Agents whose last model call answers in text (no tool call, not a routing decision)."""
    found = []
    for agent in trace.iter_agents():
        calls = agent.llm_interactions
        if not calls:
            continue
        last = calls[-1]
        text = last.output_text
        if text.strip() and not last.tool_calls and not is_routing_decision(text):
            found.append((agent, len(calls) - 1, last))
    return found


def invented_number(trace: MultiAgentTrace, rng: random.Random) -> Planted | None:
    trace = _copy(trace)
    spots = _answering(trace)
    if not spots:
        return None
    agent, index, last = rng.choice(spots)
    claim = rng.choice(
        [
            " It was exactly 7,319.5 units.",
            " Attendance reached 48,213 people.",
            " The measured value was 913.27 ppm.",
        ]
    )
    for output in last.output_messages:
        if isinstance(output.content, str) and output.content.strip():
            output.content = output.content.rstrip() + claim
            break
    if agent.output is not None:
        agent.output = last.output_text
    return Planted("invented_number", trace, agent.id, index)


def cut_off(trace: MultiAgentTrace, rng: random.Random) -> Planted | None:
    trace = _copy(trace)
    spots = _answering(trace)
    if not spots:
        return None
    agent, index, last = rng.choice(spots)
    last.finish_reason = "length"
    for output in last.output_messages:
        if isinstance(output.content, str) and len(output.content) > 1:
            output.content = output.content[: max(1, len(output.content) // 2)]
    return Planted("cut_off", trace, agent.id, index)


def _ok_result_later(agent: AgentInstance, index: int, call: LLMToolCall) -> int | None:
    """The index of the agent's first model call after `index` whose inputs carry the
    call's result."""
    for later, interaction in enumerate(agent.llm_interactions):
        if later <= index:
            continue
        for message in interaction.input_messages:
            if isinstance(message.content, LLMToolResponse) and message.content.id == call.id:
                return later
    return None


def _insert_after(agent: AgentInstance, index: int, interaction: LLMInteraction) -> None:
    """`interaction` as the agent's model call `index + 1` (child ids stay where they are)."""
    seen = -1
    for position, item in enumerate(agent.interactions):
        if isinstance(item, LLMInteraction):
            seen += 1
            if seen == index:
                agent.interactions.insert(position + 1, interaction)
                return
    raise AssertionError("no such model call")


def loop(trace: MultiAgentTrace, rng: random.Random) -> Planted | None:
    """The agent calls the same tool with the same arguments again right after its result
    came back (it asked again for what it had); where no call got a result later, the agent
    says its last text reply once more."""
    trace = _copy(trace)
    spots = []
    for agent, index, _, call in _calls(trace):
        later = _ok_result_later(agent, index, call)
        if later is not None and not call.name.startswith("transfer_to_"):
            spots.append((agent, later, call))
    if spots:
        agent, later, call = rng.choice(spots)
        original = agent.llm_interactions[later]
        again = LLMToolCall(id=f"{call.id}_again", name=call.name, parameters=call.parameters)
        (result,) = [
            m.content
            for m in original.input_messages
            if isinstance(m.content, LLMToolResponse) and m.content.id == call.id
        ][:1]
        repeat = original.model_copy(
            update={
                "output_messages": [LLMOutput(type="tool_call", content=again)],
                "finish_reason": "tool_calls",
                "tool_results": None,
                "end_time": original.start_time,
            },
            deep=True,
        )
        original.input_messages = [
            *original.input_messages,
            LLMInput(role="assistant", type="tool_call", content=again),
            LLMInput(
                role="tool",
                type="tool_call_response",
                content=LLMToolResponse(id=again.id, response=result.response, name=result.name),
            ),
        ]
        _replace_position(agent, later, repeat)
        return Planted("loop", trace, agent.id, later)
    texts = [
        (agent, index, interaction)
        for agent in trace.iter_agents()
        for index, interaction in enumerate(agent.llm_interactions)
        if interaction.output_text.strip() and not interaction.tool_calls
    ]
    if not texts:
        return None
    agent, index, interaction = rng.choice(texts)
    repeat = interaction.model_copy(
        update={
            "input_messages": [
                *interaction.input_messages,
                LLMInput(role="assistant", content=interaction.output_text),
                LLMInput(role="user", content="Please go on."),
            ]
        },
        deep=True,
    )
    _insert_after(agent, index, repeat)
    return Planted("loop", trace, agent.id, index + 1)


def _replace_position(agent: AgentInstance, index: int, before: LLMInteraction) -> None:
    """`before` as the agent's model call `index`, the one there moving to `index + 1`."""
    seen = -1
    for position, item in enumerate(agent.interactions):
        if isinstance(item, LLMInteraction):
            seen += 1
            if seen == index:
                agent.interactions.insert(position, before)
                return
    raise AssertionError("no such model call")


PLANTERS: dict[str, Callable[[MultiAgentTrace, random.Random], Planted | None]] = {
    "bad_arguments": bad_arguments,
    "tool_error": tool_error,
    "invented_number": invented_number,
    "loop": loop,
    "cut_off": cut_off,
}
