"""Tool spans: the result of a tool call where the model's later input lacks it.

Tool runs are recorded as `execute_tool` spans (`gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`; pydantic-ai, the Agents SDK
under OpenLLMetry, LangChain under OpenLLMetry) and as OpenInference TOOL spans
(`tool.name`, `input.value`, `output.value`). They never make interactions: they only
supply what the model-call spans miss.

Where a later model call of the same agent shows a tool call in its input but not its
result, the result from the matching tool span is put right after the call (matched by
call id, else by tool name and order within the agent); a result in an input that has
no id, or an empty one, is completed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracejudge import semconv
from tracejudge.convert._common import as_str
from tracejudge.convert._records import SpanRecord
from tracejudge.models import LLMInput, LLMInteraction, LLMToolCall, LLMToolResponse, to_json_string

__all__ = ["ToolRun", "tool_run", "supply_results"]


@dataclass
class ToolRun:
    """One tool execution, as a tool span records it."""

    name: str
    call_id: str | None
    result: str | None
    used: bool = False


def tool_run(span: SpanRecord) -> ToolRun | None:
    """The tool run a span records, or None when it is not a tool span with a tool name."""
    attrs = span.attributes
    if attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OPERATION_EXECUTE_TOOL:
        name = as_str(attrs.get(semconv.GEN_AI_TOOL_NAME))
        result = attrs.get(semconv.GEN_AI_TOOL_CALL_RESULT)
        call_id = as_str(attrs.get(semconv.GEN_AI_TOOL_CALL_ID))
    elif attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OPENINFERENCE_KIND_TOOL:
        name = as_str(attrs.get(semconv.TOOL_NAME))
        result = attrs.get(semconv.OUTPUT_VALUE)
        call_id = as_str(attrs.get(semconv.GEN_AI_TOOL_CALL_ID))
    else:
        return None
    if name is None:
        return None
    text = None if result is None else to_json_string(result)
    return ToolRun(name=name, call_id=call_id, result=text)


def _take(runs: list[ToolRun], call: LLMToolCall) -> ToolRun | None:
    """The run of `call`: by call id, else the first unused run of the same tool."""
    for run in runs:
        if not run.used and run.call_id and run.call_id == call.id:
            run.used = True
            return run
    for run in runs:
        if not run.used and run.call_id is None and run.name == call.name:
            run.used = True
            return run
    return None


def supply_results(interactions: list[LLMInteraction], runs: list[ToolRun]) -> None:
    """Complete one agent's interactions (in order) from its tool runs (in order)."""
    if not runs:
        return
    answered: set[str] = set()
    for interaction in interactions:
        for message in interaction.input_messages:
            if isinstance(message.content, LLMToolResponse) and message.content.id:
                answered.add(message.content.id)
    seen_calls: set[str] = set()
    for interaction in interactions:
        inputs = interaction.input_messages
        position = 0
        while position < len(inputs):
            content = inputs[position].content
            position += 1
            if not isinstance(content, LLMToolCall) or not content.id:
                continue
            if content.id in answered:
                if content.id not in seen_calls:
                    _take(runs, content)  # keep the order-matching in step
                seen_calls.add(content.id)
                continue
            run = _take(runs, content)
            seen_calls.add(content.id)
            if run is None or run.result is None:
                continue
            response = LLMToolResponse(id=content.id, response=run.result, name=content.name)
            inputs.insert(position, LLMInput(role="tool", type="tool_response", content=response))
            answered.add(content.id)
            position += 1
        for message in inputs:
            content = message.content
            if isinstance(content, LLMToolResponse) and not content.response and content.id:
                run = next((r for r in runs if r.call_id == content.id and r.result), None)
                if run is not None and run.result is not None:
                    content.response = run.result
