"""A stored trace and its answers, read back: the trace parsed and validated fast
(`read_trace`, from `trace_text`), its newest answer per criterion (`latest_answers`), and the cycle
collector paused while a big one is read and drawn (`collection_paused`). The trace page
and the attribution API read stored traces this way."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence

from tracejudge.models import MultiAgentTraceResponse
from tracejudge.server.store import EvaluationRow
from tracejudge.server.store.trace_text import read_trace, repeated_input_text

__all__ = ["collection_paused", "latest_answers", "read_trace", "repeated_input_text"]


def latest_answers(rows: Sequence[EvaluationRow]) -> list[MultiAgentTraceResponse]:
    """The trace's newest answer per criterion, in the order criteria were first scored."""
    latest: dict[str, MultiAgentTraceResponse] = {}
    for row in rows:  # oldest first
        if row.kind == "trace":
            latest[row.criterion] = MultiAgentTraceResponse.model_validate_json(row.response)
    return list(latest.values())


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cycle collector paused while a stored trace is read and drawn: the
    millions of containers that JSON parsing makes hold no cycles, yet each full
    collection walks them all (half the time of a 5,000-span trace's page). Concurrent
    readers never leave it off: the reader that found it on turns it back on when done."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
