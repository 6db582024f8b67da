"""Say what is missing: a model-call span that recorded its input but not its output.

An interaction without output cannot be judged, so the converter names the
instrumentation that wrote the span and, where one is known, the fix.
"""

from __future__ import annotations

from tracejudge.convert._common import Extraction
from tracejudge.convert._records import SpanRecord

__all__ = ["output_missing", "no_output_warning", "KNOWN_FIXES"]

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
