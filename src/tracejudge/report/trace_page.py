"""The page of one scored trace: what the server serves at /ui/traces/{id} and what
`tracejudge demo` writes. It holds the trace's viewer data (`trace_view.trace_entry`)
and the viewer script draws it as every trace of the batch report is drawn: the verdict
first, then the agent tree, the timeline and the model calls. No batch overview here:
one trace has no distribution to show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracejudge.models import (
    Attribution,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    PriceTable,
    TraceVerdict,
)
from tracejudge.report.page import DOCUMENT_TAIL, document_head, json_block
from tracejudge.report.results import result_lines
from tracejudge.report.trace_view import trace_entry

__all__ = ["labelling_data", "render_trace_page"]


def render_trace_page(
    trace: MultiAgentTrace,
    responses: Sequence[MultiAgentTraceResponse],
    *,
    trace_id: str = "trace",
    title: str | None = None,
    home: str | None = None,
    prices: PriceTable | None = None,
    labelling: Mapping[str, Any] | None = None,
    attribution: Attribution | None = None,
    preface: str = "",
    spans: Mapping[str, Any] | None = None,
) -> str:
    """A complete, self-contained HTML page for one scored trace (one response per
    criterion). `home`: the address of a page to link back to (the server's list).
    `labelling`: where and as whom a person records labels on the page (the server's
    page; see `labelling_data`), None for a page without them. `attribution`: the
    trace's ranked causes, listed and the most likely step marked on the timeline when
    the trace failed. `preface`: HTML the caller escaped, shown between the title and
    the viewer (the server's: which rules scored the trace, its session). `spans`: the
    trace's own spans (the server's `span_view.span_rows`), each with its attributes and
    events, shown in a section of their own."""
    lines = result_lines(trace_id, trace, responses)
    entry = trace_entry(
        trace_id,
        trace,
        lines,
        verdict=TraceVerdict.of(responses),
        prices=prices,
        attribution=attribution,
    )
    return (
        document_head(title or f"tracejudge: trace {trace_id}", home)
        + preface
        + '<main id="tj-trace"></main>\n'
        + json_block("tj-data", [entry])
        + (json_block("tj-labels", dict(labelling)) if labelling is not None else "")
        + (json_block("tj-spans", dict(spans)) if spans is not None else "")
        + DOCUMENT_TAIL
    )


def labelling_data(
    trace: MultiAgentTrace,
    *,
    post: str,
    who: str | None,
    labels: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """What the viewer's labels section needs: `post`, the address it sends a label to;
    `who`, the person's name when the server knows it (their API key's; None: the page
    asks); `instances`, each agent's instance id in the viewer's order (tree order);
    `labels`, those recorded so far (the API's form)."""
    return {
        "post": post,
        "who": who,
        "instances": [agent.id for agent in trace.iter_agents()],
        "labels": [dict(label) for label in labels],
    }
