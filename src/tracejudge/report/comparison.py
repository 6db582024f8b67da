"""Two experiment runs compared (`tracejudge compare`), as text and as a page.

Reads the comparison as plain data (`tracejudge.experiments.Comparison.as_dict()`: JSON
types only), so this room needs nothing of the experiments room.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

__all__ = ["comparison_policy", "format_comparison", "render_comparison_html"]

#: Regressions first, then what could not be told, then the rest.
_ORDER = {"regressed": 0, "inconclusive": 1, "improved": 2, "unchanged": 3}


def _sorted(report: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(report["criteria"], key=lambda c: _ORDER[c["verdict"]])


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _interval(interval: Any, percent: bool = True) -> str:
    if not interval:
        return ""
    low, high = interval
    return f" [{low:+.1%}, {high:+.1%}]" if percent else f" [{low:+.3f}, {high:+.3f}]"


def format_comparison(report: dict[str, Any], limit: int = 10) -> str:
    """The comparison (`Comparison.as_dict()`) as text: one block per agent and criterion,
    regressions first."""
    lines = [f"baseline  {report['baseline']}", f"candidate {report['candidate']}", ""]
    level = report["policy"]["level"]
    for item in _sorted(report):
        before, after = item["baseline"], item["candidate"]
        lines.append(f"{item['agent']} / {item['criterion']}: {item['verdict'].upper()}")
        lines.append(f"  {item['reason']}")
        lines.append(
            f"  pass rate {_pct(before['pass_rate'])} -> {_pct(after['pass_rate'])}, "
            f"difference {_pct(item['pass_rate_difference'])}"
            f"{_interval(item['pass_rate_interval'])} ({1 - level:.0%} interval); "
            f"{item['paired_rows']} rows paired, {item['worse']} worse, {item['better']} better"
        )
        lines.append(
            f"  mean score {before['mean_score'] or 0:.3f} -> {after['mean_score'] or 0:.3f}, "
            f"difference {_num(item['score_difference'])}"
            f"{_interval(item['score_interval'], percent=False)}"
        )
        if max(before["repeats"], after["repeats"]) > 1:
            lines.append(
                f"  pass^k {_pct(before['pass_all_k'])} -> {_pct(after['pass_all_k'])}, "
                f"pass@k {_pct(before['pass_any_k'])} -> {_pct(after['pass_any_k'])}, "
                f"flaky rows {len(before['flaky_rows'])} -> {len(after['flaky_rows'])}"
            )
        if item["hard_breaks"]:
            lines.append(f"  hard breaks: {', '.join(item['hard_breaks'][:limit])}")
        if item["regressed_rows"]:
            more = len(item["regressed_rows"]) - limit
            shown = ", ".join(item["regressed_rows"][:limit]) + (f" (+{more})" if more > 0 else "")
            lines.append(f"  regressed rows: {shown}")
        if item["improved_rows"]:
            more = len(item["improved_rows"]) - limit
            shown = ", ".join(item["improved_rows"][:limit]) + (f" (+{more})" if more > 0 else "")
            lines.append(f"  improved rows: {shown}")
        lines.append("")
    latency = report["latency"]
    lines.append(
        f"task seconds per row (mean) {latency['baseline']['mean_seconds'] or 0:.3f} -> "
        f"{latency['candidate']['mean_seconds'] or 0:.3f}"
    )
    cost = report["cost"]
    for key in ("judge_calls", "judge_tokens", "judge_cost_usd"):
        before, after = cost["baseline"].get(key), cost["candidate"].get(key)
        if before is not None or after is not None:
            lines.append(f"{key.replace('_', ' ')} {before} -> {after}")
    errors = report["errors"]
    if errors["baseline"] or errors["candidate"]:
        lines.append(
            f"rows that failed to run or score {errors['baseline']} -> {errors['candidate']} "
            "(left out of the comparison)"
        )
    return "\n".join(lines)


def _e(value: Any) -> str:
    if value is None:
        return ""
    return html.escape(value if isinstance(value, str) else json.dumps(value), quote=True)


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1b1f24}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccd;padding:4px 8px;
vertical-align:top;text-align:left}.regressed{background:#fde2e1}.improved{background:#e1f5e4}
.inconclusive{background:#fff4d6}pre{white-space:pre-wrap;margin:0;max-width:40em}
nav a{margin-right:14px}.gate{font-weight:600}
"""


def comparison_policy() -> str:
    """The Content-Security-Policy of the comparison page: its own style, nothing else
    (no script, no external URL, no form, no frame around it)."""
    digest = base64.b64encode(hashlib.sha256(_STYLE.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    )


def _trace(trace_id: str | None, trace_href: str | None) -> str:
    if not trace_id:
        return "trace -"
    if trace_href is None:
        return f"trace {_e(trace_id)}"
    href = trace_href.format(trace_id=quote(trace_id, safe=""))
    return f"<a href='{_e(href)}'>trace {_e(trace_id)}</a>"


def _side(side: dict[str, Any] | None, trace_href: str | None = None) -> str:
    if side is None:
        return "<td>not in this run</td>"
    verdicts = "".join(
        f"<li>{_e(s['agent'])} / {_e(s['criterion'])}: "
        f"{'passed' if s['passed'] else 'failed' if s['passed'] is False else '-'}"
        f"{' - ' + _e(s['explanation']) if s['explanation'] else ''}</li>"
        for s in side["scores"]
    )
    text = side["error"] if side["error"] else side["output"]
    return (
        f"<td><pre>{_e(text)}</pre><ul>{verdicts}</ul>"
        f"<small>{_trace(side['trace_id'], trace_href)}</small></td>"
    )


def _gate(report: dict[str, Any]) -> str:
    gate = report.get("gate")
    if not gate:
        return ""
    said = {
        "fail": "REGRESSION: a significant drop of at least the minimum effect",
        "inconclusive": "INCONCLUSIVE: not enough evidence either way; not a failure",
        "pass": "no regression",
    }[gate["result"]]
    reasons = "".join(f"<li>{_e(r)}</li>" for r in gate.get("reasons") or [])
    return f"<p class='gate {_e(gate['result'])}'>{_e(said)}</p><ul>{reasons}</ul>"


def render_comparison_html(
    report: dict[str, Any],
    *,
    title: str = "Run comparison",
    trace_href: str | None = None,
    nav: Sequence[tuple[str, str]] = (),
) -> str:
    """The comparison as one self-contained page (no script, no external URL, every text
    escaped): the gate's result when the report has one, each agent and criterion,
    regressions first, then every changed row with the two runs' outputs and verdicts
    side by side. `trace_href` (with `{trace_id}`) makes each trace a link; `nav` is
    (label, address) links above the title."""
    head = (
        "<tr><th>agent</th><th>criterion</th><th>verdict</th><th>pass rate</th>"
        "<th>difference (interval)</th><th>worse / better</th><th>p</th><th>why</th></tr>"
    )
    rows = "".join(
        f"<tr class='{c['verdict']}'><td>{_e(c['agent'])}</td><td>{_e(c['criterion'])}</td>"
        f"<td>{c['verdict']}</td>"
        f"<td>{_pct(c['baseline']['pass_rate'])} &rarr; {_pct(c['candidate']['pass_rate'])}</td>"
        f"<td>{_pct(c['pass_rate_difference'])}{_e(_interval(c['pass_rate_interval']))}</td>"
        f"<td>{c['worse']} / {c['better']}</td><td>{c['p_value']:.3g}</td>"
        f"<td>{_e(c['reason'])}</td></tr>"
        for c in _sorted(report)
    )
    regressed = {r for c in report["criteria"] for r in c["regressed_rows"]}
    changed = sorted(report.get("rows", {}).items(), key=lambda kv: (kv[0] not in regressed, kv[0]))
    row_html = "".join(
        f"<tr class='{'regressed' if row in regressed else 'improved'}'><td>{_e(row)}</td>"
        f"<td><pre>{_e(detail['input'])}</pre></td><td><pre>{_e(detail['expected'])}</pre></td>"
        f"{_side(detail['baseline'], trace_href)}{_side(detail['candidate'], trace_href)}</tr>"
        for row, detail in changed
    )
    links = "".join(f"<a href='{_e(href)}'>{_e(label)}</a>" for label, href in nav)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>"
        + (f"<nav>{links}</nav>" if links else "")
        + f"<h1>{_e(title)}</h1><p>baseline {_e(report['baseline'])}<br>"
        f"candidate {_e(report['candidate'])}</p>{_gate(report)}"
        f"<table>{head}{rows}</table>"
        f"<h2>Rows that changed ({len(changed)})</h2>"
        "<table><tr><th>row</th><th>input</th><th>expected</th><th>baseline</th>"
        f"<th>candidate</th></tr>{row_html}</table></body></html>"
    )
