"""Tool spans: the result of a tool call where the model's later input lacks it.

Tool runs are recorded as `execute_tool` spans (`gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`; pydantic-ai, the Agents SDK
under OpenLLMetry, LangChain under OpenLLMetry) and as OpenInference TOOL spans
(`tool.name`, `input.value`, `output.value`). They never make interactions: they only
supply what the model-call spans miss.

Tool runs are matched to calls by call id, else by tool name and order within the
agent. Where a later model call of the same agent shows a tool call in its input but not
its result, the result is put right after the call; an empty result in an input is
completed. Where no later input carries a call's result at all (an agent's last calls:
smolagents' `final_answer`, a hand-off, a tool whose result ended the run; or inputs
that do not repeat the conversation), the result goes into the calling interaction's
`tool_results`, which the checks and the judge read like a later input's result.

A run that no recorded call claims is a call no model-call span recorded: the walk's
phases join it to the call that made it, by call id and time order
(`_infer_unrecorded_calls`) or by the model's text (`_infer_tool_calls`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracejudge.convert import _json
from tracejudge.convert._common import as_str
from tracejudge.convert._construct import build
from tracejudge.models import (
    LLMInput,
    LLMInteraction,
    LLMToolCall,
    LLMToolResponse,
    to_json_string,
)

__all__ = ["ToolRun", "response_to", "run", "supply_results"]

_MAX_JSON_CHARS = 2_000_000  # larger results are kept as recorded


@dataclass
class ToolRun:
    """One tool execution, as a tool span records it."""

    name: str
    call_id: str | None
    result: str | None
    used: bool = False
    #: the arguments as the tool span records them (JSON text), and when it started: for a
    #: call no model-call span recorded (see `_infer_unrecorded_calls`)
    arguments: str | None = None
    start_ns: int | None = None
    #: The agent the run handed off to, for a framework's hand-off tool (LlamaIndex's
    #: `handoff`): the run is also the hand-off.
    handoff_to: str | None = None


def run(
    name: Any, call_id: Any, result: Any, arguments: Any = None, start_ns: int | None = None
) -> ToolRun | None:
    """The tool run of a tool span's recorded name, call id, result and arguments (as the
    span's convention reads them), or None when it names no tool."""
    name = as_str(name)
    if name is None:
        return None
    text = None if result is None else _result_text(to_json_string(result))
    given = None if arguments is None else to_json_string(arguments)
    return ToolRun(name, as_str(call_id), text, arguments=given, start_ns=start_ns)


def _result_text(text: str) -> str:
    """A LangChain tool message's content (`{"output": {"lc": 1, "kwargs": {"content":
    ...}}}` from OpenLLMetry, `{"type": "tool", "data": {"content": ...}}` from
    OpenInference), else the text as recorded."""
    stripped = text.strip()
    if not stripped.startswith("{") or len(stripped) > _MAX_JSON_CHARS:
        return text
    try:
        value: Any = _json.loads(stripped)
    except (ValueError, RecursionError):
        return text
    if isinstance(value, Mapping) and isinstance(value.get("output"), Mapping):
        value = value["output"]
    if not isinstance(value, Mapping):
        return text
    for wrapper in ("kwargs", "data"):
        inner = value.get(wrapper)
        content = inner.get("content") if isinstance(inner, Mapping) else None
        if isinstance(content, str):
            if value.get("type") == "tool" or "ToolMessage" in str(value.get("id")):
                return content
    return text


def _take(runs: list[ToolRun], call: LLMToolCall, call_ids: set[str]) -> ToolRun | None:
    """The run of `call`: by call id, else the first unused run of the same tool that
    names no call id, else (a call recorded without its id, as Gemini's answers have
    them: the converter gave it one) one whose call id no call of the agent has."""
    for run in runs:
        if not run.used and run.call_id and run.call_id == call.id:
            run.used = True
            if run.result is None:
                _result_from_twin(runs, run)
            return run
    for run in runs:
        if not run.used and run.call_id is None and run.name == call.name:
            run.used = True
            return run
    for run in runs:
        if not run.used and run.name == call.name and run.call_id not in call_ids:
            run.used = True
            return run
    return None


def _result_from_twin(runs: list[ToolRun], found: ToolRun) -> None:
    """A run found by its call id that records no result takes the result of an unused
    run of the same tool that names no call id: one execution recorded twice, by the
    framework's span (the id) and an instrumentation's (the result): AutoGen's own
    `execute_tool` span and OpenInference's TOOL span around the same call. Of several,
    the one that started nearest to it (parallel runs of one tool are told apart so)."""
    twins = [
        twin
        for twin in runs
        if not twin.used and twin.call_id is None and twin.name == found.name and twin.result
    ]
    if not twins:
        return
    start = found.start_ns
    twin = min(twins, key=lambda t: abs((t.start_ns or 0) - start)) if start else twins[0]
    twin.used = True
    found.result = twin.result


def _match_runs(interactions: list[LLMInteraction], runs: list[ToolRun]) -> dict[str, ToolRun]:
    """Call id -> its tool run, for every call the agent's interactions show, matched in
    the order the calls were made (a call first seen in an input, as history handed
    over, is matched where it is first seen)."""
    matched: dict[str, ToolRun] = {}
    every: list[list[str | LLMToolCall | LLMToolResponse]] = [
        [m.content for m in interaction.input_messages]
        + [m.content for m in interaction.output_messages]
        for interaction in interactions
    ]
    call_ids = {c.id for calls in every for c in calls if isinstance(c, LLMToolCall)}
    for calls in every:
        for call in calls:
            if isinstance(call, LLMToolCall) and call.id and call.id not in matched:
                run = _take(runs, call, call_ids)
                if run is not None:
                    matched[call.id] = run
    return matched


def supply_results(interactions: list[LLMInteraction], runs: list[ToolRun]) -> None:
    """Complete one agent's interactions (in order) from its tool runs (in order).

    A later input that shows a call without its result gets the result right after the
    call; a result without text gets the text. A call whose result no later input of
    the agent carries (its last calls, or inputs that do not repeat the conversation)
    gets it in its interaction's `tool_results`.
    """
    if not runs:
        return
    matched = _match_runs(interactions, runs)
    if not matched:
        return
    answered: set[str] = set()
    for interaction in interactions:
        for message in interaction.input_messages:
            if isinstance(message.content, LLMToolResponse) and message.content.id:
                answered.add(message.content.id)
    for interaction in interactions:
        inputs = interaction.input_messages
        position = 0
        while position < len(inputs):
            content = inputs[position].content
            position += 1
            if isinstance(content, LLMToolResponse) and not content.response and content.id:
                run = matched.get(content.id)
                if run is not None and run.result:
                    content.response = run.result
                continue
            if not isinstance(content, LLMToolCall) or content.id in answered:
                continue
            run = matched.get(content.id)
            if run is None or run.result is None:
                continue
            response = response_to(content, run.result)
            item = {"role": "tool", "type": "tool_response", "content": response}
            inputs.insert(position, build(LLMInput, item))
            answered.add(content.id)
            position += 1
    for interaction in interactions:
        recorded = []
        for call in interaction.tool_calls:
            run = matched.get(call.id)
            if call.id in answered or run is None or run.result is None:
                continue
            recorded.append(response_to(call, run.result))
            answered.add(call.id)
        if recorded:
            interaction.tool_results = recorded


def response_to(call: LLMToolCall, result: str) -> LLMToolResponse:
    """The result of `call` a tool run recorded. Built without validation: the run's
    result is text already (`run`), the call's id and name are a call's."""
    return build(LLMToolResponse, {"id": call.id, "response": result, "name": call.name})
