"""A converted model call in the comparable form of `expected`, and the facets where
it differs from the recording."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.replay.expected import Expected, args, norm
from tracejudge.models import LLMInteraction, LLMToolCall, LLMToolResponse

#: The id the converter gives a tool call recorded without one (convert/_tree.py).
_CONVERTER_ID = re.compile(r"[0-9a-f]{16}:\d+")


def _item(role: str | None, content: Any) -> tuple[Any, ...]:
    if isinstance(content, LLMToolCall):
        return ("call", role or "assistant", content.id, content.name, args(content.parameters))
    if isinstance(content, LLMToolResponse):
        try:
            value = json.loads(content.response)
        except ValueError:
            value = content.response
        text = value if isinstance(value, str) else content.response
        return ("result", content.id, norm(text))
    return ("text", role or "assistant", norm(content))


def observed(call: LLMInteraction) -> dict[str, Any]:
    return {
        "inputs": [_item(m.role, m.content) for m in call.input_messages],
        "outputs": [_item(None, m.content) for m in call.output_messages],
        "usage": (
            (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens)
            if call.usage
            else None
        ),
        "model": call.model,
        "error": call.error,
        "finish_reason": call.finish_reason,
        "refusal": norm(call.refusal) if call.refusal else None,
        "alternatives": [
            [_item(None, m.content) for m in choice] for choice in call.alternatives or []
        ],
        "reasoning": bool(call.reasoning),
        "server_tools": len(call.server_tool_calls or []),
    }


def _without_ids(items: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [item[:2] + item[3:] if item[0] == "call" else item for item in items]


def differences(call: LLMInteraction, want: Expected) -> dict[str, tuple[Any, Any]]:
    """facet -> (observed, expected) where they differ. Facets: error, inputs, outputs,
    output call ids, alternatives, refusal, finish_reason, usage, model, reasoning,
    server_tools."""
    seen = observed(call)
    diffs: dict[str, tuple[Any, Any]] = {}
    if want.error is not None:
        if not seen["error"] or str(want.error) not in seen["error"]:
            diffs["error"] = (seen["error"], want.error)
        if seen["inputs"] != want.inputs:
            diffs["inputs"] = (seen["inputs"], want.inputs)
        return diffs
    if seen["error"]:
        diffs["error"] = (seen["error"], None)
    expected = {
        "inputs": want.inputs,
        "outputs": _without_ids(want.outputs),
        "output call ids": [o[2] for o in want.outputs if o[0] == "call"],
        "alternatives": want.alternatives,
        "refusal": want.refusal,
        "usage": want.usage,
        "model": want.model,
        "reasoning": want.reasoning,
        "server_tools": len(want.server_tools),
    }
    got = dict(seen)
    got["outputs"] = _without_ids(seen["outputs"])
    got["output call ids"] = _recorded_ids(
        [o[2] for o in seen["outputs"] if o[0] == "call"], expected["output call ids"]
    )
    if want.api != "responses" or want.finish_reason == "length":
        expected["finish_reason"] = want.finish_reason  # the Responses API has none
    for facet, value in expected.items():
        if got[facet] != value:
            diffs[facet] = (got[facet], value)
    return diffs


def _recorded_ids(got: list[Any], wanted: list[Any]) -> list[Any]:
    """The converted calls' ids as the wire recorded them: a call the wire gave no id
    (legacy function_call) gets the converter's own, `<span id>:<position>`, to pair its
    result; that is not a recorded id, so it is compared as none."""
    return [
        "" if i < len(wanted) and wanted[i] == "" and _CONVERTER_ID.fullmatch(str(id_)) else id_
        for i, id_ in enumerate(got)
    ]
