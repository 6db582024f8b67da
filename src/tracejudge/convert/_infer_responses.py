"""A streamed call's response recorded apart from its request, found with no row.

Some instrumentations record a streamed model call twice: a span for the request, ended
when the stream is handed back (its input, no output), and, once the stream has been read,
a record of the response (logfire's "streaming response" log: the same input again, and
the output). Read as they are, one call counts twice, the first without an answer. A
row may say which records are responses (`Extraction.response_apart`); this phase finds
them by their shape, for every producer:

a model-call record that has an output and takes no time (a point in time: written when
the stream ended, not around any work), after a record of the same parent and the same
instrumentation scope that has no output and the same input messages (any input, when
the response records none), is that request's response. It is marked as one
(`response_apart`), and the walk joins the two into one call (`_merge`).
"""

from __future__ import annotations

from tracejudge.convert._common import Extraction
from tracejudge.convert._records import STATUS_ERROR, SpanRecord

__all__ = ["mark_responses_apart"]


def mark_responses_apart(readable: list[tuple[SpanRecord, Extraction]]) -> None:
    """Mark the records of `readable` (in start order) that are the responses of an
    earlier request record (see the module's docstring)."""
    pending: dict[tuple[str | None, str | None], list[Extraction]] = {}
    for span, extraction in readable:
        place = (span.parent_id, span.scope)
        if not extraction.outputs and not extraction.response_apart:
            if extraction.inputs and span.status != STATUS_ERROR:
                pending.setdefault(place, []).append(extraction)
            continue
        instant = span.start_ns is not None and span.end_ns == span.start_ns
        if not (instant or extraction.response_apart):
            continue  # it took time: a call of its own
        requests = pending.get(place, [])
        for position in range(len(requests) - 1, -1, -1):  # the latest first
            if not extraction.inputs or requests[position].inputs == extraction.inputs:
                del requests[position]
                extraction.response_apart = True  # (or a row said so: its request is taken)
                break
