"""Reports of scored traces, made from the data model alone.

This room reads `tracejudge.models` (and `tracejudge.errors`) and nothing else of
tracejudge: callers convert what they hold (check objects, client answers) into
`MultiAgentTrace` and `MultiAgentTraceResponse` before asking for a report, so the
CLI, the server and the examples can all print the same thing.

- `text`: plain-text tables for a terminal.
  `format_results(trace, responses)`: agents x criteria scores, the overall row, a
  legend for long criteria, then every finding below 1.0.
  `format_agent_tree(trace)`: one line per agent, depth first, with its model and
  tool calls and its parent.

- `inspection`: `format_inspection(inspection)`: what the converter made of each
  trace's spans (`tracejudge inspect`): producers, spans read and ignored with the
  reason, the agent tree, warnings.

- `results`: scored traces as result lines (what `tracejudge score --out` writes), and
  `ScoreSummary` / `format_summary`: many traces' scores by agent name and criterion,
  the worst findings first; `format_usage`: what the judge used per criterion and in
  total (calls, tokens in, cached, out, dollars).
- `attribution`: `format_attribution(attribution)`: what failed and the ranked causes
  (`tracejudge attribute`); `format_bench` / `render_bench_html`: the attribution
  benchmark (`tracejudge bench attribution`) as a table and a self-contained page.
- `calibration`: `format_calibration(report)`: a judge against people's labels.
- `comparison`: `format_comparison(report)` / `render_comparison_html(report)`: two
  experiment runs compared (`tracejudge compare`), from its plain-data form.
- `trace_view`: `trace_entry(trace_id, trace, lines)`: one scored trace as the data the
  trace viewer draws (verdict, the attribution's ranked causes, agent tree, timeline,
  model calls), bounded in size; `responses_of_lines` the answers result lines hold.
- `trace_page`: `render_trace_page(trace, responses)`: the page of one trace (the
  server's /ui/traces/{id}, the demo's report); `labelling_data` what its labels
  section needs on the server.
- `html`: `write_report(out, summary, entries)`: the batch report (`score --html`): the
  overview, then every trace, each opening into the same viewer.
- `page`: what the pages share: the viewer's style and script (`viewer.css`,
  `viewer.js`) and the Content-Security-Policy they run under
  (`content_security_policy`).
"""

from __future__ import annotations

from tracejudge.report.attribution import format_attribution, format_bench, render_bench_html
from tracejudge.report.calibration import format_calibration
from tracejudge.report.comparison import (
    comparison_policy,
    format_comparison,
    render_comparison_html,
)
from tracejudge.report.html import write_report
from tracejudge.report.inspection import format_inspection
from tracejudge.report.page import content_security_policy
from tracejudge.report.results import (
    Finding,
    ScoreSummary,
    format_summary,
    format_usage,
    result_lines,
    trace_name,
    usage_sentence,
    usd,
)
from tracejudge.report.text import format_agent_tree, format_results
from tracejudge.report.trace_page import labelling_data, render_trace_page
from tracejudge.report.trace_view import responses_of_lines, trace_entry

__all__ = [
    "Finding",
    "ScoreSummary",
    "content_security_policy",
    "format_attribution",
    "format_bench",
    "format_calibration",
    "comparison_policy",
    "format_comparison",
    "render_bench_html",
    "render_comparison_html",
    "format_agent_tree",
    "format_inspection",
    "format_results",
    "format_summary",
    "format_usage",
    "labelling_data",
    "render_trace_page",
    "responses_of_lines",
    "result_lines",
    "trace_name",
    "trace_entry",
    "usage_sentence",
    "usd",
    "write_report",
]
