"""The HTML report: self-contained, escaped, bounded; in headless Chromium it loads with no
console message, and every trace of its list opens into the trace viewer (verdict first,
a link from each finding to its step)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.batch.conftest import tracejudge
from tests.cdp import Browser
from tests.chromium import keep, needs_chromium
from tracejudge.models import MultiAgentTrace
from tracejudge.report import (
    ScoreSummary,
    render_trace_page,
    result_lines,
    trace_entry,
    write_report,
)


def _hostile_trace(demo_trace: Path) -> MultiAgentTrace:
    """The demo trace with markup in an agent name and a message."""
    data = demo_trace.read_text()
    data = data.replace('"writer"', '"<img src=x onerror=alert(1)>writer"')
    data = data.replace("Lisbon", "Lisbon</script><script>alert(2)</script>", 1)
    return MultiAgentTrace.from_json(data)


def _hostile_pages(demo_trace: Path) -> tuple[str, str]:
    """The hostile trace's page and a batch report holding it."""
    import io

    from tracejudge import checks
    from tracejudge._sync import run
    from tracejudge.evaluation.service import EvaluationService

    trace = _hostile_trace(demo_trace)
    responses = run(EvaluationService().score_trace(trace, list(checks.ALL)))
    page = render_trace_page(trace, responses, trace_id="t1")
    lines = result_lines("t1", trace, responses)
    summary = ScoreSummary()
    summary.add(lines)
    report = io.StringIO()
    write_report(report, summary, [trace_entry("t1", trace, lines)])
    return page, report.getvalue()


def test_the_pages_escape_everything_and_name_no_external_url(demo_trace: Path) -> None:
    page, report = _hostile_pages(demo_trace)
    for html in (page, report):
        assert "<img src=x" not in html and "</script><script>alert" not in html
        # the JSON block and the viewer's script, nothing else
        assert html.count("</script>") == 2
        assert not re.search(r"(src|href)=\"?(https?:)?//", html)
        assert "http://" not in html.split("<script>")[0] and "cdn" not in html.lower()
    # one trace's page is the viewer alone: no batch overview
    assert 'id="overview"' in report and 'id="overview"' not in page
    assert "<svg" not in page


def test_size_stays_bounded_when_model_calls_are_left_out(demo_trace: Path) -> None:
    import io

    trace = MultiAgentTrace.from_json(demo_trace.read_text())
    lines = result_lines("t", trace, [])
    entry = trace_entry("t", trace, lines)
    summary = ScoreSummary()
    small, full = io.StringIO(), io.StringIO()
    write_report(full, summary, [entry] * 200)
    write_report(small, summary, [entry] * 200, max_bytes=10_000)
    assert len(small.getvalue()) < len(full.getvalue()) / 3
    assert small.getvalue().count('"left_out":true') > 150
    # every trace keeps its verdict and scores
    assert small.getvalue().count('"verdict":') == full.getvalue().count('"verdict":') == 200


def _report(tmp_path: Path, demo_trace: Path) -> Path:
    from tests.batch.conftest import FIXTURES

    report = tmp_path / "report.html"
    done = tracejudge(
        "score", str(demo_trace), str(FIXTURES / "openllmetry.jsonl"), "--html", str(report)
    )
    assert done.returncode == 0, done.stderr
    return report


def _trace_ids(report: Path) -> list[str]:
    data = report.read_text().split('id="tj-data">', 1)[1].split("</script>", 1)[0]
    return [entry["id"] for entry in json.loads(data)]


@needs_chromium
def test_the_report_lists_worst_first_and_opens_the_first_into_the_viewer(
    tmp_path: Path, demo_trace: Path
) -> None:
    report = _report(tmp_path, demo_trace)
    with Browser(tmp_path / "profile") as tab:
        tab.load(report.as_uri())
        assert tab.console == []  # no error, no message at all
        summaries = tab.evaluate(
            "Array.from(document.querySelectorAll('.trace>summary'),s=>s.textContent)"
        )
        assert "demo-trace.json" in summaries[0] and "openllmetry" in summaries[1]
        assert tab.evaluate("document.getElementById('tj-page').textContent") == (
            "page 1 of 1 · 2 of 2 traces"
        )
        # the worst trace is open, drawn by the viewer: its verdict, tree and timeline
        first = ".trace[open] .view"
        headings = tab.evaluate(
            f"Array.from(document.querySelectorAll('{first} h2'),h=>h.textContent)"
        )
        assert headings == ["Verdict", "Attribution", "Agents", "Timeline", "Model calls"]
        # the deterministic attribution: the malformed hotel search (the researcher's first
        # call) first, named in the list and marked on the open trace's timeline
        assert "· cause: researcher, call 1" in summaries[0]
        marked = tab.evaluate(
            f"Array.from(document.querySelectorAll('{first} .tl-row.attributed .tl-label'),"
            "l=>l.textContent)"
        )
        assert marked == ["◆1✕call 1", "◆1✕tool search_hotels [call_h1]"]
        names_of_causes = tab.evaluate(
            f"Array.from(document.querySelectorAll('{first} .causes>li>a:first-child'),"
            "a=>a.textContent)"
        )
        assert names_of_causes == ["researcher", "writer"]
        assert tab.evaluate(f"document.querySelector('{first} .status').textContent") == (
            "FAILED: 2 failing findings in 2 agents"
        )
        names = tab.evaluate(
            f"Array.from(document.querySelectorAll('{first} .agent-name'),n=>n.textContent)"
        )
        assert names == ["orchestrator", "researcher", "writer"]
        assert "2 of 3 tool calls" in tab.evaluate(f"document.querySelector('{first}').textContent")
        # the overview stays on the report: the scores table and the charts
        assert tab.evaluate("document.querySelectorAll('#overview svg').length") > 0
        # the second trace opens into the same view when clicked
        tab.click(".trace:not([open])>summary")
        opened = "document.querySelectorAll('.trace[open] .view').length === 2"
        assert tab.wait_until(opened) is True
        shot = tab.screenshot(tmp_path / "report.png", full_page=True)
    assert shot.stat().st_size > 20_000  # a page with content, not a blank one
    keep(shot)


@needs_chromium
def test_a_link_to_a_trace_s_step_opens_the_trace_at_that_step(
    tmp_path: Path, demo_trace: Path
) -> None:
    report = _report(tmp_path, demo_trace)
    worst, other = _trace_ids(report)
    with Browser(tmp_path / "profile") as tab:
        # the second trace, addressed by its fragment: opened and scrolled to, verdict on top
        tab.load(f"{report.as_uri()}#trace-{other}")
        assert tab.evaluate(f"document.getElementById('trace-{other}').open") is True
        verdict = tab.evaluate(
            f"document.querySelector('[id=\"trace-{other}\"] .status').getBoundingClientRect().top"
        )
        assert 0 <= verdict < 900
        # a finding's link in the worst trace: its step unfolds, on screen
        tab.load(report.as_uri())
        link = ".trace[open] .finding .where a"
        anchor = tab.evaluate(f"document.querySelector('{link}').dataset.anchor")
        assert anchor == f"trace-{worst}/step-1-0"
        tab.click(link)
        step = f"document.getElementById({json.dumps(anchor)})"
        assert tab.evaluate(f"{step}.open") is True
        top = tab.evaluate(f"{step}.getBoundingClientRect().top")
        assert 0 <= top < 900
        assert "max_price" in tab.evaluate(f"{step}.querySelector('.msg.flagged').textContent")
        # the same link typed into the address bar, and a malformed one: no script error
        tab.load(f"{report.as_uri()}#{anchor}")
        assert tab.evaluate(f"{step}.open") is True
        tab.load(f"{report.as_uri()}#trace-%E0%A4%A")
        assert tab.evaluate("document.querySelectorAll('.trace').length") == 2
        assert tab.console == []


@needs_chromium
def test_hostile_text_runs_nothing_on_either_page(tmp_path: Path, demo_trace: Path) -> None:
    page, report = _hostile_pages(demo_trace)
    with Browser(tmp_path / "profile") as tab:
        for name, html in (("trace.html", page), ("report.html", report)):
            path = tmp_path / name
            path.write_text(html)
            tab.load(path.as_uri())
            tab.evaluate("document.querySelectorAll('details').forEach(d=>d.open=true)")
            assert tab.evaluate("document.querySelectorAll('img,script[src]').length") == 0
            names = tab.evaluate(
                "Array.from(document.querySelectorAll('.agent-name'),n=>n.textContent)"
            )
            assert "<img src=x onerror=alert(1)>writer" in names
        assert tab.console == []  # the hostile texts ran nothing
