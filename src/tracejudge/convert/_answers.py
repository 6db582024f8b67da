"""Each agent's answer, and the answer the user got.

An agent span's own recorded output is that agent's answer (`AgentInstance.output`), at
the keys the producers' rows declare (`Convention.answer_keys`: pydantic-ai's
`final_result`, OpenInference's `output.value` on AGENT spans, `gen_ai.output.messages`
on `invoke_agent` spans, OpenLLMetry's `traceloop.entity.output` / `gen_ai.task.output`
on workflows, CrewAI's crew result ...), read here by their form: the text, an object's
output field (or the `raw` answer of CrewAI's task outputs), or the last message. A
graph's recorded output is its final state: the answer is its last message.

An agent whose run ended with its tools' results (no text after them, each result
recorded by its tool span) answers with those results (`tool_answer`).

An agent that handed its work off to an agent it ran itself (Google ADK's
`transfer_to_agent` to a sub-agent) answers with that agent's answer.

An agent whose answer is its last model call's text, where that text holds the answer as
one field among others (DSPy's `[[ ## reasoning ## ]] ... [[ ## answer ## ]] ...`
sections), answers with the field: the module that made the call records what it parsed
out of the text as its JSON output, and the nearest enclosing step (below the agent's own
span) whose output is a JSON object with exactly one answer-like field (`answer`,
`output`, ...) holding text that the call's text holds but is not, says which part is the
answer (`field_answer`). Where the text is the field's whole value, nothing changes.

An agent that made no model call of its own (a workflow wrapper, the implicit root, a
user's `AgentTracer("app")`, a graph) and recorded no output answers with its last
child that answered, skipping routing decisions: a router's `{"next": "FINISH"}` says
where the work went, not what the user was told.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tracejudge.convert import _json
from tracejudge.convert._common import (
    PART_TEXT,
    PART_TOOL_CALL,
    PART_TOOL_RESPONSE,
    as_str,
    parts_message,
)
from tracejudge.convert._records import SpanRecord
from tracejudge.convert.conventions import ANSWER_KEYS
from tracejudge.models import AgentInstance, is_routing_decision

__all__ = ["recorded_output", "tool_answer", "field_answer", "fill_answers"]

_MAX_JSON_CHARS = 2_000_000  # larger recorded outputs are not parsed (they are states)
_OUTPUT_KEYS = ("output", "final_output", "answer", "result", "outputs")


#: The keys of `ANSWER_KEYS`, to see at once whether a span has any.
_ANSWER_KEY_NAMES = frozenset(key for key, _ in ANSWER_KEYS)


def recorded_output(span: SpanRecord) -> str | None:
    """The answer the span's own attributes record, or None: at the keys the rows of the
    table declare (`Convention.answer_keys`)."""
    attrs = span.attributes
    if attrs.keys().isdisjoint(_ANSWER_KEY_NAMES):
        return None  # (most spans: no answer key at all)
    for key, form in ANSWER_KEYS:
        value = attrs.get(key)
        if value is None:  # most keys asked about
            continue
        if form == "messages":
            text = _output_messages_text(value)
        else:
            text = _answer_text(value, parse=form == "json")
        if text:
            return text
    return None


#: Recorded outputs that are JSON text (or plain text), where a step records what it
#: parsed out of a model call's text.
_PARSED_OUTPUT_KEYS = tuple(key for key, form in ANSWER_KEYS if form == "json")


def _output_messages_text(value: Any) -> str | None:
    if value is None:
        return None
    messages = _loads(value) if isinstance(value, str) else value
    if isinstance(messages, str):
        # Plain text, not JSON messages: OpenLIT's `@openlit.trace` writes the function's
        # return value there.
        return messages.strip() or None
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        texts = _texts(message)
        text = "\n".join(t for t in texts if t)
        if text:
            return text
    return None


def _texts(message: Any) -> list[str]:
    """The texts `parts_message` reads in a message; for the usual shape (text, tool call
    and tool result parts, not a tool's message) without making its tool calls and
    results, which an answer's text does not need."""
    if type(message) is dict:
        parts = message.get("parts")
        role = message.get("role")
        if type(parts) is list and (role is None or (type(role) is str and role.lower() != "tool")):
            texts: list[str] = []
            for part in parts:
                if type(part) is not dict:
                    break
                kind = part.get("type")
                if kind == PART_TEXT:
                    content = part.get("content", part.get("text"))
                    if type(content) is not str:
                        break
                    texts.append(content)
                elif kind != PART_TOOL_CALL and kind != PART_TOOL_RESPONSE:
                    break
            else:
                return texts
    return parts_message(message, "", [])[1]


def _loads(text: str) -> Any:
    stripped = text.strip()
    if len(stripped) > _MAX_JSON_CHARS or not stripped.startswith(("{", "[", '"')):
        return text
    try:
        return _json.loads(stripped)
    except (ValueError, RecursionError):
        return text


def _answer_text(value: Any, *, parse: bool) -> str | None:
    """Text out of a recorded output: a plain string, or JSON holding messages or an
    output field; None for structures that hold no answer."""
    if value is None:  # most keys asked about (and `isinstance` against an ABC is slow)
        return None
    if isinstance(value, str) and parse:
        value = _loads(value)
    if isinstance(value, str):
        return value or None
    if isinstance(value, Mapping):
        raw = value.get("raw")  # CrewAI's TaskOutput / CrewOutput: the parsed answer
        if isinstance(raw, str) and raw:
            return raw
        messages = value.get("messages")
        if isinstance(messages, list) and messages:
            return _message_text(messages[-1])
        for key in _OUTPUT_KEYS:
            if key in value:
                return _answer_text(value[key], parse=False)
        return None
    return None


def _message_text(message: Any) -> str | None:
    """The text of a message in LangChain's serialised forms or OpenAI's."""
    if isinstance(message, str):
        return message or None
    if not isinstance(message, Mapping):
        return None
    for wrapper in ("kwargs", "data"):  # {"lc": 1, "kwargs": {...}}, {"type", "data": {...}}
        inner = message.get(wrapper)
        if isinstance(inner, Mapping) and "content" in inner:
            message = inner
            break
    content = message.get("content")
    if isinstance(content, str):
        return content or None
    if isinstance(content, Sequence):
        texts = [
            as_str(part.get("text")) if isinstance(part, Mapping) else as_str(part)
            for part in content
        ]
        return "\n".join(t for t in texts if t) or None
    return None


def field_answer(text: str, enclosing: Iterable[SpanRecord]) -> str | None:
    """The answer a model call's `text` holds as one field among others: the value of the
    one answer-like field of the first of the `enclosing` steps (nearest first) whose
    recorded output is a JSON object with exactly one, when that value is text that
    `text` holds but is not; None otherwise."""
    whole = text.strip()
    for record in enclosing:
        for key in _PARSED_OUTPUT_KEYS:
            raw = record.attributes.get(key)
            value = _loads(raw) if isinstance(raw, str) else raw
            if not isinstance(value, Mapping):
                continue
            fields = [name for name in _OUTPUT_KEYS if name in value]
            if len(fields) != 1:
                continue
            answer = value[fields[0]]
            if isinstance(answer, str) and answer.strip() and answer.strip() != whole:
                if answer.strip() in whole:
                    return answer.strip()
    return None


def tool_answer(agent: AgentInstance, *, failed: bool) -> str | None:
    """The answer of an agent whose run ended with its tools' results (the Agents SDK's
    `tool_use_behavior="stop_on_first_tool"`, LangChain's `return_direct` tools): its last
    item is a model call that wrote no text and made tool calls whose results the tool
    spans recorded (`tool_results`), and neither its span failed nor did it hand off.
    None for any other agent."""
    if failed or agent.handoff is not None or not agent.interactions:
        return None
    last = agent.interactions[-1]
    if isinstance(last, str) or not last.tool_calls or last.output_text.strip():
        return None
    results = {result.id: result.response for result in last.tool_results or []}
    if not all(call.id in results for call in last.tool_calls):
        return None
    return "\n\n".join(results[call.id] for call in last.tool_calls) or None


def fill_answers(
    instances: Mapping[str, AgentInstance], root_id: str, recorded: Mapping[str, str]
) -> None:
    """Set `output` on every agent that recorded one, and on every agent without a model
    call of its own from its last child that answered (children first)."""
    done: set[str] = set()
    path: set[str] = set()  # the agents being visited: a cycle stops here

    def visit(agent_id: str) -> None:
        agent = instances.get(agent_id)
        if agent is None or agent_id in done or agent_id in path:
            return
        children = agent.child_ids
        path.add(agent_id)
        for child in children:
            visit(child)
        path.discard(agent_id)
        done.add(agent_id)
        if agent_id in recorded:
            agent.output = recorded[agent_id]
            return
        if agent.handoff:  # handed off to an agent it ran (ADK's transfer to a sub-agent)
            for child in reversed(children):
                child_agent = instances.get(child)
                if child_agent is not None and child_agent.name == agent.handoff:
                    agent.output = child_agent.final_output
                    return
        if len(children) < len(agent.interactions):
            return  # a model call of its own (an item that is not a child id)
        for child in reversed(children):
            child_agent = instances.get(child)
            answer = child_agent.final_output if child_agent is not None else None
            if answer and not is_routing_decision(answer):
                agent.output = answer
                return

    visit(root_id)
    for agent_id in instances:
        visit(agent_id)
