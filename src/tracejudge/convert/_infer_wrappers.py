"""Model-call spans that record no call: the steps around and before the one that does.

An instrumentation that records a framework's methods may record, as model calls, the
framework's steps on the way to one call: a method that builds the request and sends
nothing, and an outer method that calls the method that sends it (LlamaIndex's
`_prepare_chat_with_tools` and its two nested `astream_chat`, under OpenInference's
generic LLM kind). Read as calls, one call counts as three. This phase, for every
producer, drops a span read as a model call when:

- it records nothing of a call: no messages, no answer, no token count, no finish
  reason, and it did not fail (a failed call records no answer, and is a call);
- a model-call span of the same instrumentation that records the call's content lies
  below it (the outer method), or is or lies below the span right after it under the
  same parent (the method that built the request, then the one that sent it).

A producer that records no content on any call (content capture off) has no call with
content to point to: its calls stay calls.
"""

from __future__ import annotations

from tracejudge.convert._agents import agent_above
from tracejudge.convert._common import Extraction
from tracejudge.convert._records import STATUS_ERROR, SpanRecord

__all__ = ["empty_steps"]


def empty_steps(readable: list[tuple[SpanRecord, Extraction]], spans: list[SpanRecord]) -> set[str]:
    """The span ids of `readable`'s calls that record no call (see the module's docstring);
    `spans` are the trace's, in start order."""
    empty = [span for span, extraction in readable if _records_nothing(span, extraction)]
    if not empty:
        return set()
    recorded = [span for span, extraction in readable if extraction.has_content]
    if not recorded:
        return set()
    by_id = {span.span_id: span for span in spans}
    next_sibling: dict[str, str] = {}
    last_child: dict[str | None, str] = {}
    for span in spans:
        before = last_child.get(span.parent_id)
        if before is not None:
            next_sibling[before] = span.span_id
        last_child[span.parent_id] = span.span_id
    found: set[str] = set()
    for span in empty:
        after = next_sibling.get(span.span_id)
        places = (span.span_id,) if after is None else (span.span_id, after)
        if any(
            call.scope == span.scope
            and (call.span_id == after or agent_above(call, by_id, places) is not None)
            for call in recorded
        ):
            found.add(span.span_id)
    return found


def _records_nothing(span: SpanRecord, extraction: Extraction) -> bool:
    return (
        not extraction.has_content
        and not extraction.outputs
        and extraction.usage is None
        and not extraction.finish_reasons
        and span.status != STATUS_ERROR
    )
