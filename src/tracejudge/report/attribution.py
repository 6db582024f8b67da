"""Attributions in plain text: what failed, then the ranked causes (`tracejudge attribute`);
and the attribution benchmark as a text table and a self-contained HTML page.

Example::

    trace 4bf9...: failed (2 failures)
      tool_arguments: agent 'researcher' (r1) scored 0.00, below 1: researcher: 0 of 1 ...
      1. researcher (r1), call 1, tool call call_7 (get_weather)
         checks (tool_arguments), confidence 0.95
         tool_arguments: researcher call 1, tool call call_7 ...
      2. ...
"""

from __future__ import annotations

import html

from tracejudge.models import Attribution, BenchReport, BenchRow, Cause, Estimate

__all__ = ["format_attribution", "format_bench", "format_cause", "render_bench_html"]

#: Characters of a cause's evidence shown in text.
MAX_EVIDENCE = 400


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_cause(cause: Cause) -> list[str]:
    """A cause as indented lines: where, how found, how sure, what shows it."""
    where = f"{cause.rank}. {cause.agent_name} ({cause.agent_instance_id})"
    if cause.step is not None:
        where += f", {cause.step.label()}"
    else:
        where += ", the agent as a whole"
    how = cause.method + (f" ({', '.join(cause.criteria)})" if cause.criteria else "")
    how += f", confidence {cause.confidence:.2f}"
    if cause.consequence_of is not None:
        how += f", may follow from cause {cause.consequence_of}"
    lines = [f"  {where}", f"     {how}"]
    if cause.evidence:
        lines.append(f"     {_short(cause.evidence, MAX_EVIDENCE)}")
    if cause.fix:
        changes = {True: "would avoid the failure", False: "would not avoid it", None: ""}
        lines.append(
            f"     fix: {_short(cause.fix, 200)} {changes[cause.outcome_changes]}".rstrip()
        )
    return lines


def format_attribution(attribution: Attribution, *, name: str | None = None, top: int = 5) -> str:
    """One trace's attribution: its status line, what failed, the first `top` causes."""
    label = name or attribution.trace_id or "trace"
    if not attribution.failed:
        return f"{label}: nothing to attribute ({'; '.join(attribution.notes) or 'did not fail'})"
    count = len(attribution.failures)
    lines = [f"{label}: failed ({count} failure{'s' if count != 1 else ''})"]
    lines.extend(f"  - {_short(line, 200)}" for line in attribution.failures[:10])
    if len(attribution.failures) > 10:
        lines.append(f"  - ... and {len(attribution.failures) - 10} more")
    for cause in attribution.causes[:top]:
        lines.extend(format_cause(cause))
    if len(attribution.causes) > top:
        lines.append(f"  ({len(attribution.causes) - top} more causes; --top N shows more)")
    if attribution.usage.calls:
        cost = attribution.usage.cost_usd
        lines.append(
            f"  judge: {attribution.usage.calls} calls, {attribution.usage.input_tokens} input "
            f"and {attribution.usage.output_tokens} output tokens"
            + (f", ${cost:.4f}" if cost is not None else "")
        )
    lines.extend(f"  note: {note}" for note in attribution.notes)
    return "\n".join(lines)


# --------------------------------------------------------------------------- benchmark


def _pct(estimate: Estimate) -> str:
    if estimate.value is None:
        return "n/a"
    text = f"{estimate.value * 100:.1f}%"
    if estimate.low is not None and estimate.high is not None:
        text += f" [{estimate.low * 100:.1f}, {estimate.high * 100:.1f}]"
    return text


def _cost(row: BenchRow) -> str:
    return f"${row.cost_per_trace_usd:.4f}" if row.cost_per_trace_usd is not None else "-"


_COLUMNS = (
    "split",
    "method",
    "items",
    "agent acc.",
    "step acc.",
    "step ±k",
    "nDCG@k",
    "s/trace",
    "tokens/trace",
    "$/trace",
)


def _cells(row: BenchRow) -> list[str]:
    return [
        row.split,
        row.method,
        f"{row.items}" + (f" ({row.errors} errors)" if row.errors else ""),
        _pct(row.agent_accuracy),
        _pct(row.step_accuracy),
        _pct(row.step_within_k),
        _pct(row.ndcg),
        f"{row.seconds_per_trace:.2f}",
        f"{row.input_tokens_per_trace + row.output_tokens_per_trace:.0f}",
        _cost(row),
    ]


def format_bench(report: BenchReport) -> str:
    """The benchmark's rows as a text table, with its settings."""
    rows = [list(_COLUMNS), *(_cells(row) for row in report.rows)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(
        f"k = {report.k} (step ±k), nDCG@{report.ndcg_k}; 95% bootstrap intervals from "
        f"{report.resamples} resamples (seed {report.seed}); steps match as whole numbers; "
        f"judge {report.judge or 'none'}"
        + ("" if report.ground_truth else "; judges not told the correct answer")
    )
    lines.extend(f"warning: {w}" for w in report.warnings[:10])
    return "\n".join(lines)


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1d1d1f}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #d0d0d7;padding:.3em .6em;
text-align:left;vertical-align:top}th{background:#f3f3f6}td.ok{background:#e6f6ea}
td.bad{background:#fde8e8}caption{text-align:left;font-weight:600;margin:.4em 0}
.note{color:#555}
"""


def _escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def _mark(value: bool | None) -> str:
    if value is None:
        return "<td>-</td>"
    return '<td class="ok">yes</td>' if value else '<td class="bad">no</td>'


def render_bench_html(report: BenchReport, *, title: str = "Attribution benchmark") -> str:
    """The benchmark as one self-contained HTML page (no script, no external URL; every
    text escaped): the settings, the rows, then every item's result."""
    head = "".join(f"<th>{_escape(c)}</th>" for c in _COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_escape(c)}</td>" for c in _cells(row)) + "</tr>"
        for row in report.rows
    )
    item_head = "".join(
        f"<th>{c}</th>"
        for c in (
            "item",
            "split",
            "method",
            "true agent",
            "predicted agent",
            "agent",
            "true steps",
            "predicted step",
            "step",
            "±k",
            "nDCG",
            "ranked steps",
            "error",
        )
    )
    items = "".join(
        "<tr>"
        f"<td>{_escape(r.item)}</td><td>{_escape(r.split)}</td><td>{_escape(r.method)}</td>"
        f"<td>{_escape(', '.join(r.true_agents))}</td><td>{_escape(r.predicted_agent or '-')}</td>"
        f"{_mark(r.agent_correct)}<td>{_escape(', '.join(map(str, r.true_steps)))}</td>"
        f"<td>{_escape('-' if r.predicted_step is None else r.predicted_step)}</td>"
        f"{_mark(r.step_correct)}{_mark(r.within_k)}"
        f"<td>{'-' if r.ndcg is None else f'{r.ndcg:.3f}'}</td>"
        f"<td>{_escape(', '.join(map(str, r.ranked_steps[:10])))}</td>"
        f"<td>{_escape(r.error or '')}</td></tr>"
        for r in report.items
    )
    settings = (
        f"judge {_escape(report.judge or 'none')}; methods {_escape(', '.join(report.methods))}; "
        f"k = {report.k}; nDCG@{report.ndcg_k}; 95% bootstrap intervals, {report.resamples} "
        f"resamples, seed {report.seed}; a step is right only when its number equals a "
        "labelled step's"
    )
    warnings = "".join(f"<li>{_escape(w)}</li>" for w in report.warnings)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_escape(title)}</title><style>{_STYLE}</style></head><body>"
        f'<h1>{_escape(title)}</h1><p class="note">{settings}</p>'
        f"<table><caption>By split and method</caption><tr>{head}</tr>{rows}</table>"
        + (f'<ul class="note">{warnings}</ul>' if warnings else "")
        + f"<table><caption>Items</caption><tr>{item_head}</tr>{items}</table>"
        "</body></html>\n"
    )
