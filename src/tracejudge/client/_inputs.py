"""What the clients accept, turned into what the evaluation service takes.

`evaluate()` accepts chat messages or a Responses API `input`, a provider's answer as
`result`, a system prompt and tools in OpenAI or Anthropic form; `evaluate_trace()`
accepts a `MultiAgentTrace`, an `AgentTracer`, or the trace as a dict or JSON text.
Every problem raises `BadRequestError` naming the argument and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from tracejudge.errors import BadRequestError
from tracejudge.evaluation import adapt_input, adapt_result, as_plain
from tracejudge.models import MultiAgentTrace, text_of

__all__ = ["Conversation", "conversation", "coerce_trace", "evaluate_latest_flag"]


def coerce_trace(trace: Any) -> MultiAgentTrace:
    """A MultiAgentTrace from what `evaluate_trace` accepts."""
    if isinstance(trace, MultiAgentTrace):
        return trace
    if trace is None:
        raise BadRequestError("trace is required: pass a MultiAgentTrace or tracer.trace")
    try:
        if isinstance(trace, (str, bytes)):
            return MultiAgentTrace.from_json(trace)
        if isinstance(trace, Mapping):
            return MultiAgentTrace.model_validate(dict(trace))
        inner = getattr(trace, "trace", None)
        if inner is not None and not callable(getattr(trace, "model_dump", None)):
            return coerce_trace(inner)
        if hasattr(type(trace), "trace"):
            raise BadRequestError(
                f"the {type(trace).__name__} holds no trace yet: read `tracer.trace` after "
                "model calls were made inside `with AgentTracer(...)`"
            )
        dumped = as_plain(trace)
        if isinstance(dumped, Mapping):
            return MultiAgentTrace.model_validate(dict(dumped))
    except ValidationError as exc:
        raise BadRequestError(f"trace is not a valid MultiAgentTrace: {exc}") from exc
    raise BadRequestError(
        f"trace is a {type(trace).__name__}: pass a MultiAgentTrace, an AgentTracer (its "
        "`.trace`), or the trace as a dict in wire form"
    )


@dataclass(frozen=True)
class Conversation:
    """What `evaluate()` judges: chat messages, system prompt and tools, result appended."""

    messages: list[dict[str, Any]]
    system: str | None
    tools: list[dict[str, Any]] | None


def _plain_list(value: Any, what: str) -> list[dict[str, Any]]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise BadRequestError(
            f"{what} must be a list of dicts, got {type(value).__name__}"
            + (
                ' (wrap a single message in a list: [{"role": "user", "content": "..."}])'
                if isinstance(value, Mapping)
                else ""
            )
        )
    items: list[dict[str, Any]] = []
    for index, raw in enumerate(value):
        item = as_plain(raw)
        if not isinstance(item, Mapping):
            raise BadRequestError(
                f"{what}[{index}] is a {type(raw).__name__}; each must be a dict"
                + (" with 'role' and 'content'" if what == "messages" else "")
            )
        items.append(dict(item))
    return items


def conversation(
    *, messages: Any, input: Any, result: Any, system: Any, tools: Any
) -> Conversation:
    """The conversation `evaluate()` was given, `result` appended to it."""
    if messages is not None and input is not None:
        raise BadRequestError(
            "pass either messages= (chat messages) or input= (the Responses API input), not both"
        )
    discovered: list[dict[str, Any]] = []
    if messages is not None:
        chat = _plain_list(messages, "messages")
    elif input is not None:
        adapted_input = adapt_input(input)
        chat, discovered = adapted_input.messages, list(adapted_input.discovered_tools)
    else:
        raise BadRequestError(
            "messages= is required: the conversation to evaluate, e.g. "
            '[{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}] '
            "(or input= with the Responses API input)"
        )
    declared = _plain_list(tools, "tools") if tools is not None else None
    if system is not None and not isinstance(system, str):
        system = text_of(as_plain(system))
    if result is not None:
        adapted = adapt_result(result)
        chat.extend(adapted.messages)
        if declared is None and adapted.tools:
            declared = list(adapted.tools)
        discovered.extend(adapted.discovered_tools)
        if system is None:
            system = adapted.system
    if discovered:
        declared = (declared or []) + discovered
    return Conversation(chat, system or None, declared or None)


def evaluate_latest_flag(value: Any) -> bool:
    """`evaluate_latest` as given to `evaluate()`: None means the default, True."""
    if value is None:
        return True
    if not isinstance(value, bool):
        raise BadRequestError(f"evaluate_latest must be True, False or None, got {value!r}")
    return value
