"""A model call's span read, and its records made into one `LLMInteraction`.

`read_call` reads a model-call span by the convention that claims it (content inferred
by its shape when the row read none; the chat roles every producer shares normalised);
`interaction` makes the records of one call (see `_merge`) into an interaction, with
the warnings about what the call did not record.
"""

from __future__ import annotations

from tracejudge import semconv
from tracejudge.convert import _merge, _missing, conventions
from tracejudge.convert._common import FINISH_TOOL_CALLS, Extraction, as_str
from tracejudge.convert._construct import build
from tracejudge.convert._infer_content import infer_content
from tracejudge.convert._records import STATUS_ERROR, SpanRecord, describe
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Convention, smolagents
from tracejudge.models import LLMInteraction

__all__ = ["drop_answered_warnings", "error_text", "extract", "interaction", "read_call"]

#: The fields of a converted interaction counted as set (`tool_results` is set later, when
#: a tool span supplies results).
_INTERACTION_GIVEN = frozenset(LLMInteraction.model_fields) - {"tool_results"}
_NO_TOOL_CALL = "finished for tool calls, but no tool call was recorded"


def extract(span: SpanRecord) -> Extraction:
    """Read one span as a model call: by the convention that claims it as one, else by
    the GenAI conventions (a span of no known convention, read as what it looks most like)."""
    view = SpanView(span)
    extraction = conventions.call_reader(view).model_call(view)
    infer_content(view, extraction)
    return _normalised(view, extraction)


def _normalised(view: SpanView, extraction: Extraction) -> Extraction:
    """Rules every producer's calls share, applied after its convention read the call:
    the chat roles (`model` is Gemini's assistant, `developer` OpenAI's newer system,
    `function` the older tool role), and smolagents' tool roles."""
    for item in extraction.inputs:  # (the usual case: chat roles only, no set made)
        if item.role not in _CHAT_ROLES:
            break
    else:
        return extraction
    roles = {item.role for item in extraction.inputs}
    if not roles <= _CHAT_ROLES:
        if not roles.isdisjoint(_ROLE_ALIASES):
            extraction.inputs = [
                item.model_copy(update={"role": _ROLE_ALIASES[item.role]})
                if item.role in _ROLE_ALIASES
                else item
                for item in extraction.inputs
            ]
        extraction.inputs = smolagents.map_roles(
            extraction.inputs, describe(view), extraction.warnings
        )
    return extraction


_ROLE_ALIASES = {"model": "assistant", "developer": "system", "function": "tool"}
_CHAT_ROLES = frozenset({"system", "user", "assistant", "tool"})


def error_text(span: SpanRecord) -> str | None:
    """What went wrong, when the span failed. Only ERROR status is failure."""
    if span.status != STATUS_ERROR:
        return None
    exception = next((e for e in span.events if e.name == semconv.EXCEPTION_EVENT), None)
    exc_attrs = exception.attributes if exception is not None else {}
    kind = as_str(span.attributes.get(semconv.ERROR_TYPE)) or as_str(
        exc_attrs.get(semconv.EXCEPTION_TYPE)
    )
    message = as_str(span.status_message) or as_str(exc_attrs.get(semconv.EXCEPTION_MESSAGE))
    if kind and message and not message.startswith(kind):
        return f"{kind}: {message}"
    return message or kind or "error"


def read_call(view: SpanView, convention: Convention, warnings: list[str]) -> Extraction | None:
    """What the span says about its model call; None (and a warning) when unreadable."""
    try:
        extraction = convention.model_call(view)
        # (only for a call its row read no content of)
        infer_content(view, extraction, events=convention is conventions.UNRECOGNISED)
        extraction = _normalised(view, extraction)
    except Exception as exc:  # attribute data is untrusted: report, never raise
        warnings.append(f"{describe(view)}: unreadable ({type(exc).__name__}: {exc}); skipped")
        return None
    if not extraction.has_content:  # (said in `_interaction`, once the call is merged)
        extraction.content_setting = convention.content_hint(view)
        if convention is conventions.UNRECOGNISED:
            extraction.unread_keys = conventions.UNRECOGNISED.possible_content(view)
    return extraction


def interaction(call: _merge.Call, warnings: list[str], aliases: dict[str, str]) -> LLMInteraction:
    """One interaction from every record of the call (see `_merge`)."""
    primary = call.primary
    span = primary[0]
    extraction = _merge.merge(call)
    if len(call.records) == 1:  # the usual case: one record, the primary
        response_id = call.response_ids.get(span.span_id)
        error = error_text(span) if span.status == STATUS_ERROR else None
    else:
        records = [span, *(record for record, _ in call.records)]
        # (`error_text` gives text exactly for the failed spans)
        error = next((error_text(r) for r in records if r.status == STATUS_ERROR), None)
        response_id = next(
            (found for r in records if (found := call.response_ids.get(r.span_id))), None
        )
    # Built without validation: every part is converter-made (see `_common`); the lists are
    # copied, as validation copied them, so that no extraction shares them.
    interaction = build(
        LLMInteraction,
        {
            "input_messages": list(extraction.inputs),
            "output_messages": list(extraction.outputs),
            "tools_available": None if extraction.tools is None else list(extraction.tools),
            "model": extraction.model,
            "usage": extraction.usage,
            # (a response recorded apart: the call started with its request's span)
            "start_time": call.span.start if primary[1].response_apart else span.start,
            "end_time": span.end,
            "error": error,
            "finish_reason": extraction.finish_reasons[0] if extraction.finish_reasons else None,
            "refusal": extraction.refusal,
            # (most calls have neither: no empty list made for them)
            "alternatives": [list(choice) for choice in extraction.alternatives]
            if extraction.alternatives
            else None,
            "reasoning": "\n\n".join(extraction.reasoning) or None,
            "server_tool_calls": list(extraction.server_tools) if extraction.server_tools else None,
            "tool_results": None,
            "span_id": span.span_id,
            "response_id": response_id or None,
        },
        _INTERACTION_GIVEN,
    )
    warnings.extend(extraction.warnings)
    aliases.update(extraction.call_aliases)
    if not extraction.has_content:
        _missing.no_content_warning(span, extraction, warnings)
    answered = (
        extraction.outputs
        or extraction.refusal
        or extraction.alternatives
        or extraction.server_tools
    )
    if span.running and not answered:
        # No end and no answer: still running (an SDK span read live), or its producer
        # never records an end. A span with its answer and no end time is simply that.
        warnings.append(
            f"{describe(span)}: no end time and no answer recorded: the call is still "
            "running, or its producer records no end"
        )
    elif (
        extraction.has_content
        and FINISH_TOOL_CALLS in extraction.finish_reasons
        and not interaction.tool_calls
        and not extraction.server_tools
    ):
        warnings.append(f"{describe(span)}: {_NO_TOOL_CALL}")
    elif error is None and not span.running and _missing.output_missing(extraction):
        warnings.append(_missing.no_output_warning(span))
    return interaction


def drop_answered_warnings(interactions: list[LLMInteraction], warnings: list[str]) -> None:
    """The tool spans supplied the calls of a call that finished for tool calls without
    recording them: the warning that none was recorded no longer holds."""
    for interaction in interactions:
        if interaction.finish_reason != FINISH_TOOL_CALLS or not interaction.tool_calls:
            continue
        mark = f"({interaction.span_id}): {_NO_TOOL_CALL}"
        warnings[:] = [w for w in warnings if not w.endswith(mark)]
