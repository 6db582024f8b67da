"""An agent recorded turn by turn is one agent: its turns are joined into the first.

AG2's classic `autogen.opentelemetry` writes an `invoke_agent` span per reply of an agent
in a conversation: the assistant's turn that asks for a tool, then (after `user_proxy`
ran it) the turn that answers, each a sibling under the conversation. Read as two agents,
the first would end on a tool call no one answered. An agent span is a later turn of an
earlier sibling when both are agents of the same identity (id and name, a name given),
no span of that identity lies between them under that parent, and the later turn's input
messages (`gen_ai.input.messages`) begin with the earlier turn's input and output
messages: it continues that conversation. The later turn is re-parented under the first
(a copy), which runs until the last turn ends; its output comes first among the agent's
recorded outputs, since the agent's answer is its last turn's; it stays a turn whose
messages are its model call's (`_infer_turn_content`).

Only spans that record both message lists as GenAI JSON are joined: turns of an
instrumentation that records neither are left as it wrote them.
"""

from __future__ import annotations

from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._records import SpanRecord, moved
from tracejudge.convert.conventions import Identity

__all__ = ["join_turns"]

#: A message as a turn's conversation is compared: (its role, its parts).
_Message = tuple[Any, Any]


def join_turns(
    spans: list[SpanRecord],
    identities: dict[str, Identity],
    output_spans: dict[str, list[SpanRecord]],
    agent_spans: set[str],
) -> tuple[list[SpanRecord], set[str]]:
    """`spans` (in start order) with each later turn of an agent re-parented under its
    first turn, and dropped from `identities` (its output spans moved to the first turn's
    front), and the span ids of the later turns. `agent_spans` are the span ids read as
    agents (not workflows)."""
    first_turn: dict[str, str] = {}  # later turn's span id -> the agent's first turn
    end: dict[str, int] = {}  # first turn -> the end of its last turn
    # (parent id, identity) -> (the agent's first turn, its latest turn's span)
    latest: dict[tuple[str | None, Identity], tuple[str, SpanRecord]] = {}
    # A turn's conversation so far (its input and output messages) is read only when a
    # later turn of its agent is compared with it: most agents have one turn per parent.
    read: dict[tuple[str, str], list[_Message] | None] = {}  # (span id, key) -> `_messages`
    for span in spans:
        span_id = span.span_id
        if span_id not in agent_spans or span_id not in identities:
            continue
        identity = identities[span_id]
        key = (span.parent_id, identity)
        earlier = latest.get(key)
        first = span_id
        if earlier is not None and identity[1]:
            before = _conversation(earlier[1], read)
            messages = _read(span, semconv.GEN_AI_INPUT_MESSAGES, read) if before else None
            if (
                before is not None
                and messages is not None
                and len(messages) > len(before)
                and messages[: len(before)] == before
            ):
                first = earlier[0]
                first_turn[span_id] = first
                if span.end_ns is not None:
                    end[first] = max(end.get(first, 0), span.end_ns)
        latest[key] = (first, span)
    if not first_turn:
        return spans, set()
    for span_id, first in first_turn.items():
        del identities[span_id]
        output_spans[first] = output_spans.pop(span_id, []) + output_spans.get(first, [])
    return moved(spans, first_turn, end), set(first_turn)


def _conversation(
    span: SpanRecord, read: dict[tuple[str, str], list[_Message] | None]
) -> list[_Message] | None:
    """The span's input then output messages (see `_messages`), or None when it records
    either as no JSON list."""
    messages = _read(span, semconv.GEN_AI_INPUT_MESSAGES, read)
    output = _read(span, semconv.GEN_AI_OUTPUT_MESSAGES, read)
    return None if messages is None or output is None else messages + output


def _read(
    span: SpanRecord, key: str, read: dict[tuple[str, str], list[_Message] | None]
) -> list[_Message] | None:
    """`_messages`, read once per span and key."""
    where = (span.span_id, key)
    if where not in read:
        read[where] = _messages(span, key)
    return read[where]


def _messages(span: SpanRecord, key: str) -> list[_Message] | None:
    """The span's messages under `key`, each as its role and parts (compared by value:
    writing each as canonical JSON to compare took a sixth of AG2's conversions), or None
    when the span records none as a JSON list."""
    raw = span.attributes.get(key)
    if not isinstance(raw, str):
        return None
    try:
        value = _json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not value:
        return None
    messages = []
    for message in value:
        if not isinstance(message, dict):
            return None
        messages.append((message.get("role"), message.get("parts")))
    return messages
