"""smolagents: its chat roles `tool-call` and `tool-response`, and unknown roles.

smolagents (recorded by `openinference-instrumentation-smolagents`) writes the tool calls
an agent made earlier as a message of role `tool-call` whose text is ``Calling tools:\\n``
and a Python literal list of ``{'id', 'type', 'function': {'name', 'arguments'}}``, and
each result as a message of role `tool-response` whose text is ``Observation:\\n<result>``
(or ``Call id: call_1\\nObservation:\\n<result>``). They become
assistant tool calls and tool results; a result without an id takes the id of the
oldest call before it that has no result yet. Any other role that is not a chat role
is kept as it is, with a warning.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from tracejudge.convert._common import as_str, tool_call, tool_response
from tracejudge.models import LLMInput, LLMToolCall, LLMToolResponse

__all__ = ["map_roles", "KNOWN_ROLES"]

TOOL_CALL_ROLE = "tool-call"
TOOL_RESPONSE_ROLE = "tool-response"
#: Chat roles every convention module reads as they are.
KNOWN_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function", "model"})

_CALLS_PREFIX = re.compile(r"^\s*Calling tools:\s*", re.IGNORECASE)
_CALL_ID = re.compile(r"^\s*Call id:\s*(\S+)\s*", re.IGNORECASE)
_OBSERVATION = re.compile(r"^\s*Observation:\s*\n?", re.IGNORECASE)
_MAX_LITERAL_CHARS = 200_000


def _calls(text: str) -> list[LLMToolCall] | None:
    """The tool calls of a `tool-call` message, or None when the text is not a call list."""
    body = _CALLS_PREFIX.sub("", text, count=1)
    if len(body) > _MAX_LITERAL_CHARS:
        return None
    try:
        parsed = ast.literal_eval(body.strip())
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        return None
    items = parsed if isinstance(parsed, list) else [parsed]
    calls = []
    for item in items:
        if not isinstance(item, Mapping):
            return None
        function = item.get("function")
        spec = function if isinstance(function, Mapping) else item
        calls.append(tool_call(item.get("id"), spec.get("name"), spec.get("arguments")))
    return calls


def _response(text: str) -> LLMToolResponse:
    call_id = None
    match = _CALL_ID.match(text)
    if match:
        call_id = match.group(1)
        text = text[match.end() :]
    return tool_response(call_id, _OBSERVATION.sub("", text, count=1))


def map_roles(inputs: list[LLMInput], what: str, warnings: list[str]) -> list[LLMInput]:
    """`inputs` with smolagents' tool roles as tool calls and results; a warning for each
    other unknown role (kept as is)."""
    if all(item.role in KNOWN_ROLES for item in inputs):
        return inputs
    mapped: list[LLMInput] = []
    pending: list[LLMToolCall] = []
    unknown: set[str] = set()
    for item in inputs:
        text = item.content if isinstance(item.content, str) else None
        if item.role == TOOL_CALL_ROLE and text is not None:
            calls = _calls(text)
            if calls is not None:
                for call in calls:
                    mapped.append(LLMInput(role="assistant", type="tool_call", content=call))
                pending.extend(calls)
                continue
        if item.role == TOOL_RESPONSE_ROLE and text is not None:
            response = _response(text)
            match = next((c for c in pending if response.id and c.id == response.id), None)
            if match is None and not response.id and pending:
                match = pending[0]
                response.id = match.id
            if match is not None:
                pending.remove(match)
                response.name = match.name
            mapped.append(LLMInput(role="tool", type="tool_response", content=response))
            continue
        if item.role not in KNOWN_ROLES:
            unknown.add(item.role)
        mapped.append(item)
    for role in sorted(unknown):
        warnings.append(
            f"{what}: message role {as_str(role)!r} is not a chat role tracejudge knows; "
            "kept as it is"
        )
    return mapped
