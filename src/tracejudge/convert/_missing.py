"""Say what is missing: a model-call span that recorded its input but not its output, or
no messages at all.

An interaction without output cannot be judged, so the converter names the
instrumentation that wrote the span and, where one is known, the fix. A call without
messages is told apart from a call whose messages are in a convention tracejudge does not
read: "turn content capture on" is said only for the first.
"""

from __future__ import annotations

from tracejudge.convert._common import Extraction
from tracejudge.convert._records import SpanRecord

__all__ = ["output_missing", "no_output_warning", "no_content_warning", "KNOWN_FIXES"]

#: Instrumentation scope -> what records the output instead.
KNOWN_FIXES: dict[str, str] = {
    "opentelemetry.instrumentation.openai_agents": (
        "the OpenAI Agents SDK's OpenLLMetry instrumentation records no output, usage or "
        "tools in Chat Completions mode (set_default_openai_api('chat_completions')): use "
        "the Responses API (the SDK's default), or OpenInference's "
        "openinference-instrumentation-openai-agents, or also instrument the openai client "
        "(ComposoTracer.init(instruments='openai')), whose span supplies the output"
    ),
}


def output_missing(extraction: Extraction) -> bool:
    """Whether the call's input was recorded and nothing of its answer: no output, no
    finish reason, no refusal (a refused or filtered answer is an answer)."""
    return bool(extraction.inputs) and not (
        extraction.outputs
        or extraction.finish_reasons
        or extraction.refusal
        or extraction.alternatives
        or extraction.server_tools
    )


def no_output_warning(span: SpanRecord) -> str:
    """The warning for a model-call span with input messages and no output."""
    scope = span.scope or "an unnamed instrumentation"
    fix = KNOWN_FIXES.get(span.scope or "")
    text = (
        f"span {span.name!r} ({span.span_id}): the model call's input was recorded but not "
        f"its output (instrumentation {scope})"
    )
    return f"{text}; {fix}" if fix else f"{text}; the interaction has no output to judge"


def no_content_warning(span: SpanRecord, extraction: Extraction, warnings: list[str]) -> None:
    """Add to `warnings` what a model-call span without messages lacks: content capture
    was off (naming the setting that turns it on), or (once per instrumentation) its
    messages are in a convention tracejudge does not read."""
    scope = span.scope or "an unnamed instrumentation"
    what = f"span {span.name!r} ({span.span_id})"
    if extraction.unread_keys is None:
        setting = extraction.content_setting
        how = f"; turn content capture on: {setting}" if setting else ""
        warnings.append(f"{what}: no message content recorded by {scope}{how}")
        return
    start = f"{scope}: model calls in a span convention tracejudge does not read"
    if any(warning.startswith(start) for warning in warnings):
        return
    keys = extraction.unread_keys
    held = (
        f"attributes that may hold them: {', '.join(keys[:8])}" + (" ..." if len(keys) > 8 else "")
        if keys
        else "the spans hold no message attributes"
    )
    warnings.append(
        f"{start} (first: {what}); kept as calls with their model and usage, without "
        f"messages ({held}); `tracejudge inspect` shows each span"
    )
