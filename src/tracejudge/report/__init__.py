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

The self-contained HTML report will join as `report/html.py`, beside `text.py`.
"""

from __future__ import annotations

from tracejudge.report.text import format_agent_tree, format_results

__all__ = ["format_agent_tree", "format_results"]
