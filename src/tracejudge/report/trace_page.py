"""The page of one scored trace: what the server serves at /ui/traces/{id} and what
`tracejudge demo` writes. It holds the trace's viewer data (`trace_view.trace_entry`)
and the viewer script draws it as every trace of the batch report is drawn: the verdict
first, then the agent tree, the timeline and the model calls. No batch overview here:
one trace has no distribution to show.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse, PriceTable, TraceVerdict
from tracejudge.report.page import DOCUMENT_TAIL, document_head, json_block
from tracejudge.report.results import result_lines
from tracejudge.report.trace_view import trace_entry

__all__ = ["render_trace_page"]


def render_trace_page(
    trace: MultiAgentTrace,
    responses: Sequence[MultiAgentTraceResponse],
    *,
    trace_id: str = "trace",
    title: str | None = None,
    home: str | None = None,
    prices: PriceTable | None = None,
) -> str:
    """A complete, self-contained HTML page for one scored trace (one response per
    criterion). `home`: the address of a page to link back to (the server's list)."""
    lines = result_lines(trace_id, trace, responses)
    entry = trace_entry(trace_id, trace, lines, verdict=TraceVerdict.of(responses), prices=prices)
    return (
        document_head(title or f"tracejudge: trace {trace_id}", home)
        + '<main id="tj-trace"></main>\n'
        + json_block("tj-data", [entry])
        + DOCUMENT_TAIL
    )
