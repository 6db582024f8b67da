"""Tool calls written as text: a phase of the walk that applies to every producer.

Some agents call tools without a tool call on the wire. A ReAct loop writes the tool's
name and arguments into the model's text (DSPy's `next_tool_name` / `next_tool_args`); a
code agent writes Python that the framework executes, calling tools and managed agents as
functions (smolagents' `CodeAgent`). The model-call span then holds only text, but the
tool (or the managed agent) ran with a span of its own. Such a run is a tool call of the
agent that wrote it:

* a tool run that no recorded call claims (by id or by name: see `_tools`) is a call of
  the agent's last model call started before the run, when that call's text names the
  tool and it made no tool call on the wire; its arguments and result are the run's;
* a child agent started after a model call whose text calls it by name (`name(`) is a
  tool call of that model call, with the arguments the code passes (when they are
  literals) and the child's answer as its result.

The call takes the id of the call a later input of the agent shows for that step (a code
agent's history records the executed code as one call, e.g. `python_interpreter`, whose
result is the code's output), so that the result the model saw joins it; otherwise an id
of its own (`text-<span id>`). No producer row is needed: the runs come from whichever row
reads the tool spans, the text from the model-call spans.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping

from tracejudge.convert._tools import ToolRun
from tracejudge.models import (
    AgentInstance,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    LLMToolResponse,
    to_json_string,
)

__all__ = ["TEXT_CALL_PREFIX", "join_text_calls", "join_agent_calls"]

#: The id prefix of a call made in text that no later input names.
TEXT_CALL_PREFIX = "text-"
#: Code in a model's text: `<code>...</code>` (smolagents; the closing tag may be cut off by
#: a stop sequence), or a fenced Python block.
_CODE_BLOCKS = re.compile(r"<code>(.*?)(?:</code>|\Z)|```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_MAX_CODE_CHARS = 100_000


def join_text_calls(
    interactions: list[LLMInteraction], runs: list[tuple[str, int | None, ToolRun]]
) -> None:
    """One agent's tool runs (span id, start, run) that no call claimed become calls of
    the model calls (the agent's `interactions`, in order) whose text wrote them."""
    made: set[int] = set()  # ids of the interactions given calls here
    for span_id, start_ns, run in runs:
        if run.used or start_ns is None:
            continue
        writer = _writer(interactions, start_ns, run.name, made)
        if writer is None:
            continue
        run.used = True
        arguments = run.arguments
        if arguments is None:
            found = _code_arguments(_text(writer), run.name)
            arguments = found if found is not None else "{}"
        _add_call(interactions, writer, span_id, run.name, arguments, run.result)
        made.add(id(writer))


def join_agent_calls(instances: Mapping[str, AgentInstance]) -> None:
    """Child agents run from a model call's code (a code agent's managed agents) become
    tool calls of that model call, their answers its results."""
    for agent in instances.values():
        if not any(isinstance(item, str) for item in agent.interactions):
            continue
        interactions = agent.llm_interactions
        writer: LLMInteraction | None = None
        for item in agent.interactions:
            if isinstance(item, LLMInteraction):
                writer = item
                continue
            child = instances.get(item)
            if writer is None or child is None:
                continue
            if any(call.name == child.name for call in writer.tool_calls):
                continue  # a call on the wire (or a tool span) already names it
            if any(not _written(call, interactions) for call in writer.tool_calls):
                continue  # the model called tools on the wire: the child is not one
            text = _text(writer)
            if text is None or not _names_call(text, child.name):
                continue
            arguments = _code_arguments(text, child.name) or "{}"
            _add_call(interactions, writer, child.id, child.name, arguments, child.final_output)


def _written(call: LLMToolCall, interactions: list[LLMInteraction]) -> bool:
    """Whether `call` is one this phase made from text: an id of its own, or the id of the
    step a later input records under another name (see `_history_id`)."""
    if call.id.startswith(TEXT_CALL_PREFIX):
        return True
    return any(
        isinstance(m.content, LLMToolCall)
        and m.content.id == call.id
        and m.content.name != call.name
        for interaction in interactions
        for m in interaction.input_messages
    )


def _writer(
    interactions: list[LLMInteraction], start_ns: int, name: str, made: set[int]
) -> LLMInteraction | None:
    """The agent's last model call started before `start_ns`, when its text names the
    tool and it called no tool on the wire (calls added here do not count)."""
    last = None
    for interaction in interactions:
        start = interaction.start_time
        if start is not None and start * 1e9 <= start_ns:
            last = interaction
    if last is None or (last.tool_calls and id(last) not in made):
        return None
    text = _text(last)
    if text is None or not re.search(rf"\b{re.escape(name)}\b", text):
        return None
    return last


def _add_call(
    interactions: list[LLMInteraction],
    writer: LLMInteraction,
    source_id: str,
    name: str,
    arguments: str,
    result: str | None,
) -> None:
    """Add the call to `writer`'s output; its result to `tool_results`, unless a later
    input already carries it (under the id the call takes from that input)."""
    call_id = _history_id(interactions, writer, name) or f"{TEXT_CALL_PREFIX}{source_id}"
    call = LLMToolCall(id=call_id, name=name, parameters=to_json_string(arguments))
    # In the order the text calls them (a managed agent is joined after the tools its code
    # also ran, which were joined earlier): before the first call written later.
    text = _text(writer) or ""
    here = _position(text, name)
    outputs = writer.output_messages
    at = next(
        (
            i
            for i, message in enumerate(outputs)
            if isinstance(message.content, LLMToolCall)
            and _position(text, message.content.name) > here
            and _written(message.content, interactions)
        ),
        len(outputs),
    )
    outputs.insert(at, LLMOutput(type="tool_call", content=call))
    if result is None or _answered(interactions, call_id):
        return
    response = LLMToolResponse(id=call_id, response=result, name=name)
    results = [*(writer.tool_results or []), response]
    writer.tool_results = sorted(results, key=lambda r: _position(text, r.name or ""))


def _history_id(
    interactions: list[LLMInteraction], writer: LLMInteraction, name: str
) -> str | None:
    """The id of the call the agent's next model call shows in its input for this step: a
    call no output made, whose arguments (the code executed) name the tool, and that no
    call of `writer` took yet."""
    position = next((i for i, x in enumerate(interactions) if x is writer), None)
    if position is None or position + 1 >= len(interactions):
        return None
    made = {c.id for x in interactions for c in x.tool_calls}
    for message in interactions[position + 1].input_messages:
        content = message.content
        if (
            isinstance(content, LLMToolCall)
            and content.id
            and content.id not in made
            and re.search(rf"\b{re.escape(name)}\b", content.parameters)
        ):
            return content.id
    return None


def _answered(interactions: list[LLMInteraction], call_id: str) -> bool:
    return any(
        isinstance(m.content, LLMToolResponse) and m.content.id == call_id
        for interaction in interactions
        for m in interaction.input_messages
    )


def _text(interaction: LLMInteraction) -> str | None:
    texts = [m.content for m in interaction.output_messages if isinstance(m.content, str)]
    return "\n".join(texts) if texts else None


def _position(text: str, name: str) -> int:
    """Where the text first calls (else names) `name`; past the end when it does not."""
    found = re.search(rf"\b{re.escape(name)}\s*\(", text) or re.search(
        rf"\b{re.escape(name)}\b", text
    )
    return found.start() if found is not None else len(text)


def _names_call(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\s*\(", text) is not None


def _code_arguments(text: str | None, name: str) -> str | None:
    """The literal arguments of the first call to `name` in the text's code (keyword
    arguments by name, positional ones as `args`), as JSON; None when none is found."""
    if text is None:
        return None
    for call in _calls_to(text, name):
        named: dict[str, object] = {}
        try:
            for keyword in call.keywords:
                if keyword.arg is None:
                    raise ValueError("**kwargs")
                named[keyword.arg] = ast.literal_eval(keyword.value)
            positional = [ast.literal_eval(arg) for arg in call.args]
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
        if positional:
            named = {"args": positional, **named}
        return json.dumps(named, ensure_ascii=False)
    return None


def _calls_to(text: str, name: str) -> Iterator[ast.Call]:
    for block in _code_blocks(text):
        try:
            tree = ast.parse(block)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _callee(node.func) == name:
                yield node


def _code_blocks(text: str) -> Iterator[str]:
    if len(text) > _MAX_CODE_CHARS:
        return
    found = False
    for match in _CODE_BLOCKS.finditer(text):
        found = True
        yield match.group(1) if match.group(1) is not None else match.group(2)
    if not found:
        yield text


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None
