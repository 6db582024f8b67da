"""Model-call spans that hold only text (issue #30, pattern 4): a phase of the walk that
applies to every producer.

Some producers record the tool calls a model made only on the tool runs' own spans: the
model-call span holds the text the model wrote (or nothing, for a call that answered with
tool calls only), and each `execute_tool` span records its call's id, arguments and
result. AG2 1.0's `TelemetryMiddleware` does so (its `chat` span records output only
when the model wrote text, and a call's input only the turn's user text); so does any
instrumentation run with content capture off on the model client but not on the tools.
Such a run is a call of the model call that made it, joined by parent, time order and
call id:

* a run with a call id that none of its agent's calls shows (its agent: the one whose
  span encloses the run, and whose model calls alone it is compared with) is a call of
  that agent's last model call started before the run, when that call was offered the
  tool (or records no tools offered); the call joins that call's output, its result the
  call's `tool_results`;
* a call a later input shows but no output does (the call finished for tool calls and
  recorded none: OpenLLMetry's LlamaIndex chat spans write each call as an empty part)
  joins the output of the call that made it; its result stays where the later input
  has it.

No producer row is needed: the runs come from whichever row reads the tool spans (the
GenAI row reads `execute_tool` spans), the calls from the model-call spans.
"""

from __future__ import annotations

from tracejudge.convert._common import FINISH_TOOL_CALLS
from tracejudge.convert._construct import build
from tracejudge.convert._tools import ToolRun, response_to
from tracejudge.models import LLMInteraction, LLMOutput, LLMToolCall

__all__ = ["join_unrecorded_calls"]


def join_unrecorded_calls(interactions: list[LLMInteraction], runs: list[ToolRun]) -> None:
    """A tool run with a call id that none of the agent's interactions shows (the model
    call recorded no output: content capture off, or a producer that writes calls only
    on its tool spans) is a call of the interaction that made it: the agent's last one
    that started before the run. The call joins that interaction's output, its result
    the interaction's `tool_results`."""
    for tool_run in runs:
        if tool_run.used or not tool_run.call_id or tool_run.start_ns is None:
            continue
        maker = _last_started_before(interactions, tool_run.start_ns)
        if maker is None or any(c.id == tool_run.call_id for c in maker.tool_calls):
            continue
        if not _offered(maker, tool_run.name):
            continue
        tool_run.used = True
        call = _add_call(maker, tool_run)
        if tool_run.result is not None:
            response = response_to(call, tool_run.result)
            maker.tool_results = [*(maker.tool_results or []), response]
    _join_calls_seen_in_history(interactions, runs)


def _offered(maker: LLMInteraction, name: str) -> bool:
    """Whether the model could have called the tool `name`: one its call was offered, or
    any, when its call records no tools. A run of another name is the framework's own
    (Google ADK's `execute_tool (merged tools)` around parallel calls), not a call."""
    offered = maker.tools_available
    return not offered or any(tool.name == name for tool in offered)


def _last_started_before(
    interactions: list[LLMInteraction], start_ns: int
) -> LLMInteraction | None:
    """The last of the agent's interactions (in order) that started before `start_ns`."""
    maker = None
    for interaction in interactions:
        start = interaction.start_time
        if start is not None and start * 1e9 <= start_ns:
            maker = interaction
    return maker


def _join_calls_seen_in_history(interactions: list[LLMInteraction], runs: list[ToolRun]) -> None:
    """A call that a later input shows (the conversation handed back) but no output does:
    the interaction that made it finished for tool calls and recorded none (OpenLLMetry's
    LlamaIndex chat spans write each call as an empty part). The run that names its call
    id joins the output of the agent's last interaction started before the run, when that
    interaction finished for tool calls; its result stays where the later input has it."""
    made = {c.id for interaction in interactions for c in interaction.tool_calls}
    for tool_run in runs:
        if not tool_run.used or not tool_run.call_id or tool_run.start_ns is None:
            continue
        if tool_run.call_id in made:
            continue
        maker = _last_started_before(interactions, tool_run.start_ns)
        if maker is None or maker.finish_reason != FINISH_TOOL_CALLS:
            continue
        shown = (m.content for m in maker.input_messages)
        if any(isinstance(c, LLMToolCall) and c.id == tool_run.call_id for c in shown):
            continue
        made.add(_add_call(maker, tool_run).id)


def _add_call(maker: LLMInteraction, tool_run: ToolRun) -> LLMToolCall:
    """The call a tool run records, added to the output of the interaction that made it.
    Built without validation: a run's name, id and arguments are text already
    (`_tools.run`), as validation would leave them."""
    arguments = tool_run.arguments or "{}"
    item = {"id": tool_run.call_id, "name": tool_run.name, "parameters": arguments}
    call = build(LLMToolCall, item)
    maker.output_messages.append(build(LLMOutput, {"type": "tool_call", "content": call}))
    return call
