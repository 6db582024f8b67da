"""The self-contained HTML report of many scored traces (`tracejudge score --html`).

One file, no external URL: the overview (traces, agents, criteria, a table of scores by
agent name with failing counts, the distribution of each criterion's worst agent scores
as inline SVG) is rendered here; the traces are embedded as compact JSON
(`trace_view.trace_entry`), worst first, and the viewer script (`viewer.js`) lists a
page of them at a time (a filter reaches the rest). Opening a trace draws it as the
server's page of one trace is drawn: the verdict, the agent tree, the timeline and the
model calls. Every text reaches the page through `textContent` or `html.escape`, and the
embedded JSON is escaped so that no text can close its `<script>` element.

Size stays bounded at any number of traces: each trace's data is bounded
(`trace_view`), and model calls are embedded only until `max_bytes` of trace data are
written (worst traces first); later traces keep their verdict and scores and
say that their timeline and messages were left out.

- `write_report(out, summary, entries)`: the whole report, streamed to `out`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from tracejudge.report.page import DOCUMENT_TAIL, document_head, script_json
from tracejudge.report.results import (
    ScoreSummary,
    bars_text,
    format_summary,
    input_sentence,
    usage_sentence,
)

__all__ = ["MAX_BYTES", "write_report"]

#: Bytes of embedded trace data after which model calls' messages are left out.
MAX_BYTES = 24 * 1024 * 1024


def write_report(
    out: TextIO,
    summary: ScoreSummary,
    entries: Iterable[dict[str, Any]],
    *,
    title: str = "tracejudge report",
    max_bytes: int = MAX_BYTES,
    home: str | None = None,
) -> None:
    """Write the report to `out`: the overview from `summary`, then `entries` (from
    `trace_entry`, worst first: the page shows them in this order) as embedded data.
    `home`: the address of a page to link back to, shown above the title.

    Past `max_bytes` of written entries, an entry keeps its verdict and scores but not
    its timeline and messages (see `_without_calls`).
    """
    out.write(document_head(title, home))
    out.write(_overview(summary))
    out.write(
        '<section id="traces"><h2>Traces</h2><div class="controls">'
        '<input id="tj-filter" type="search" placeholder="filter: trace id, agent, criterion, '
        'text" aria-label="filter"> <label><input id="tj-failing" type="checkbox"> failing '
        'only</label> <button id="tj-prev" type="button">previous</button> '
        '<span id="tj-page"></span> <button id="tj-next" type="button">next</button></div>'
        '<div id="tj-list"></div></section>\n'
    )
    out.write('<script type="application/json" id="tj-data">[')
    written = 0
    for number, entry in enumerate(entries):
        if written > max_bytes:
            entry = _without_calls(entry)
        text = script_json(entry)
        written += len(text)
        out.write(("," if number else "") + text + "\n")
    out.write("]</script>\n" + DOCUMENT_TAIL)


def _without_calls(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry without its model calls (their timeline rows and messages): its agents say
    `"steps": [], "calls": null` and it says `"left_out": true`."""
    agents = [{**a, "steps": [], "calls": None} for a in entry["agents"]]
    return {**entry, "agents": agents, "left_out": True}


def _score_class(score: float | None, bar: float) -> str:
    if score is None:
        return "na"
    if score < bar:
        return "bad"
    return "warn" if score < 1.0 else "good"


def _overview(summary: ScoreSummary) -> str:
    e = html.escape
    names = summary.agent_names
    parts = [
        '<section id="overview"><h2>Overview</h2><p class="counts">',
        f"<b>{summary.traces}</b> traces, <b>{len(summary.failing_traces)}</b> failing "
        f"(an agent {e(bars_text(summary))}); <b>{len(names)}</b> agents ({e(', '.join(names))}); "
        f"<b>{len(summary.criteria)}</b> criteria; {summary.findings_count} findings.</p>",
        _cost_line(summary),
        '<div class="charts">',
    ]
    for criterion in summary.criteria:
        parts.append(_histogram(criterion, summary.worst.get(criterion, [])))
    parts.append("</div>")
    parts.append('<table class="summary"><thead><tr><th>agent</th><th>instances</th>')
    parts.append(
        "<th>criterion</th><th>failing</th><th>mean</th><th>median</th><th>min</th>"
        "<th>max</th></tr></thead><tbody>"
    )
    for name in names:
        for criterion in summary.criteria:
            found = summary.stats(name, criterion)
            if found is None:
                continue
            bar = summary.bar_of(criterion)
            values = (found.mean, found.median, found.min, found.max)
            cells = "".join(f'<td class="{_score_class(v, bar)}">{v:.2f}</td>' for v in values)
            failing = "bad" if found.failing else "good"
            parts.append(
                f"<tr><td>{e(name)}</td><td>{summary.instances(name)}</td>"
                f'<td>{e(criterion)}</td><td class="{failing}">{found.failing} of '
                f"{found.scored}</td>{cells}</tr>"
            )
    parts.append("</tbody></table>")
    parts.append(f"<details><summary>Summary as text</summary><pre>{e(format_summary(summary))}")
    parts.append("</pre></details></section>\n")
    return "".join(parts)


def _cost_line(summary: ScoreSummary) -> str:
    """The judge's calls, tokens and dollars over the report, and how many results were
    not evaluated (empty when nothing was judged)."""
    inputs = input_sentence(summary)
    budget = f'<p class="cost" id="tj-input">{html.escape(inputs)}</p>' if inputs else ""
    if not summary.usage_by_criterion and not summary.not_evaluated:
        return budget
    e = html.escape
    text = ""
    if summary.usage_by_criterion:
        text = f"{e(usage_sentence(summary.usage))}."
        if summary.unpriced:
            text += f" Cost unknown for {summary.unpriced} results (no price for the model)."
    if summary.not_evaluated:
        reasons = "; ".join(summary.not_evaluated_reasons)
        text += (
            f' <span class="na">{summary.not_evaluated} agent results not evaluated '
            f"({e(reasons)}), left out of the figures.</span>"
        )
    return f'<p class="cost" id="tj-cost">{text.strip()}</p>{budget}'


def _histogram(criterion: str, scores: Sequence[float], bins: int = 10) -> str:
    """An inline SVG bar chart of the traces' worst agent scores in `bins` bins over 0..1:
    each bar's count written above it, the count axis ticked (0, half, most) and the
    score axis ticked every 0.2, both axes named."""
    counts = [0] * bins
    for score in scores:
        counts[min(int(score * bins), bins - 1)] += 1
    top = max(counts) or 1
    left, bar, gap, plot_top, base = 34, 20, 2, 14, 94  # the plot: x from left, y to base
    width, height = left + bins * (bar + gap) + 14, 128
    span = base - plot_top
    parts = [
        f'<line class="axis" x1="{left - 2}" y1="{base}" x2="{width - 6}" y2="{base}" '
        'stroke="#666"/>',
        f'<line class="axis" x1="{left - 2}" y1="{plot_top}" x2="{left - 2}" y2="{base}" '
        'stroke="#666"/>',
    ]
    for tick in sorted({0, top // 2, top}):
        y = base - round(span * tick / top)
        parts.append(
            f'<text class="ytick" x="{left - 5}" y="{y + 3}" font-size="9" '
            f'text-anchor="end">{tick}</text>'
            f'<line x1="{left - 5}" y1="{y}" x2="{left - 2}" y2="{y}" stroke="#666"/>'
        )
    for i, count in enumerate(counts):
        h = round(span * count / top)
        x = left + i * (bar + gap)
        low, high = i / bins, (i + 1) / bins
        colour = "#c0392b" if high <= 0.5 else "#d68910" if high < 1 else "#1e8449"
        parts.append(
            f'<rect x="{x}" y="{base - h}" width="{bar}" height="{h}" '
            f'fill="{colour}"><title>{low:.1f}–{high:.1f}: {count}</title></rect>'
        )
        if count:
            parts.append(
                f'<text class="count" x="{x + bar / 2:g}" y="{base - h - 2}" font-size="9" '
                f'text-anchor="middle">{count}</text>'
            )
    for step in range(0, bins + 1, 2):
        at = left + step * (bar + gap) - gap / 2
        parts.append(
            f'<text class="xtick" x="{at:g}" y="{base + 11}" font-size="9" '
            f'text-anchor="middle">{step / bins:.1f}</text>'
            f'<line x1="{at:g}" y1="{base}" x2="{at:g}" y2="{base + 3}" stroke="#666"/>'
        )
    parts.append(
        f'<text x="{left + bins * (bar + gap) / 2:g}" y="{height - 4}" font-size="9" '
        'text-anchor="middle">worst agent score</text>'
        f'<text x="8" y="{(plot_top + base) / 2:g}" font-size="9" text-anchor="middle" '
        f'transform="rotate(-90 8 {(plot_top + base) / 2:g})">traces</text>'
    )
    e = html.escape
    return (
        f'<figure class="chart"><svg width="{width}" height="{height}" role="img" '
        f'aria-label="{e(criterion)}: distribution of worst agent scores">{"".join(parts)}'
        f"</svg><figcaption>{e(criterion)} ({len(scores)})</figcaption></figure>"
    )
