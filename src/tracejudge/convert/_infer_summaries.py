"""Run summaries the catch-all row took for model calls.

The table's last row (`UNRECOGNISED`) reads a span no other row claims as one model call
when it names a model and counts tokens. A framework's run of an agent recorded by an
instrumentation that knows the framework, not its model client, has both too: the
agent's model and the tokens of all its calls (OpenLLMetry's Agno `weather_agent.agent`,
its calls recorded by the openai client's instrumentation below it). Read as a call, the
agent's run counts as one call more, and the calls inside it are placed in no agent.

This phase, for every producer, drops the catch-all's reading of a span when two model calls
or more, read by any other reader (a row that knows the call's format, or its shape), lie
right below it (with no other model-call span between): one call does not hold two calls,
a run of calls does. The span is then what the phases that need no row make of it (an
agent, where an attribute names one). A span read by the catch-all that holds one call
stays a call: the same call recorded twice (Google ADK's `call_llm` around google-genai's
`generate_content`, where no row reads ADK), which the walk merges into one.

A span a row reads as a call is dropped alike when two calls found by their shape
(`_infer_calls`) lie right below it: a program's span onto which a producer wrote a call's
attributes (LiteLLM's callback writes each call's `gen_ai.*` keys onto the span open around
it, and the call itself as `raw_gen_ai_request` below). Two calls of a row below a row's
call are not counted: they are one call recorded again (a request and its streamed
response, two instrumentations of one client), which the walk merges.
"""

from __future__ import annotations

from tracejudge.convert._agents import Readings
from tracejudge.convert._infer_calls import SHAPED
from tracejudge.convert._records import SpanRecord
from tracejudge.convert.conventions import UNRECOGNISED, Convention, Kind

__all__ = ["drop_run_summaries"]


def drop_run_summaries(spans: list[SpanRecord], readings: Readings) -> set[str]:
    """Drop from `readings` the model calls that hold two model calls of another reader
    (see the module's docstring); returns their span ids."""
    calls = {
        span_id: convention
        for span_id, (_, convention, kind) in readings.items()
        if kind is Kind.MODEL_CALL
    }
    # (a run holds two calls; below a row's call, only calls found by their shape count)
    if len(calls) < 3 or not any(c is UNRECOGNISED or c is SHAPED for c in calls.values()):
        return set()
    by_id = {span.span_id: span for span in spans}
    held: dict[str, int] = {}  # call span id -> the calls of another reader right below it
    for span_id, convention in calls.items():
        if convention is UNRECOGNISED:
            continue
        above = _call_above(by_id.get(span_id), by_id, readings)
        if above is not None and _holds(calls[above], convention):
            held[above] = held.get(above, 0) + 1
    found = {span_id for span_id, below in held.items() if below >= 2}
    for span_id in found:
        del readings[span_id]
    return found


def _holds(outer: Convention, inner: Convention) -> bool:
    """Whether a call `inner` reads, right below a call `outer` reads, counts as a call the
    span of `outer` holds: any other reader's below the catch-all's; below a row's call,
    only a call found by its shape (a row's call below a row's call is the same call
    recorded again: a request and its streamed response, two instrumentations of one
    client, which the walk merges)."""
    if outer is UNRECOGNISED:
        return inner is not UNRECOGNISED
    return inner is SHAPED


def _call_above(
    span: SpanRecord | None, by_id: dict[str, SpanRecord], readings: Readings
) -> str | None:
    """The span id of the nearest model-call span above `span`, or None."""
    seen: set[str] = set()
    parent_id = span.parent_id if span is not None else None
    while parent_id and parent_id not in seen:
        seen.add(parent_id)
        reading = readings.get(parent_id)
        if reading is not None and reading[2] is Kind.MODEL_CALL:
            return parent_id
        parent = by_id.get(parent_id)
        parent_id = parent.parent_id if parent is not None else None
    return None
