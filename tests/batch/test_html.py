"""The HTML report: self-contained, escaped, bounded, and it renders in headless Chromium
with no console message, the agent tree on screen."""

from __future__ import annotations

import re
from pathlib import Path

from tests.batch.conftest import tracejudge
from tests.chromium import chromium, keep, needs_chromium
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


def test_the_page_escapes_everything_and_names_no_external_url(demo_trace: Path) -> None:
    from tracejudge import checks
    from tracejudge._sync import run
    from tracejudge.evaluation.service import EvaluationService

    trace = _hostile_trace(demo_trace)
    responses = run(EvaluationService().score_trace(trace, list(checks.ALL)))
    page = render_trace_page(trace, responses, trace_id="t1")
    assert "<img src=x" not in page and "</script><script>alert" not in page
    assert page.count("</script>") == 3  # the two JSON blocks and the script, nothing else
    assert not re.search(r"(src|href)=\"?(https?:)?//", page)
    assert "http://" not in page.split("<script>")[0] and "cdn" not in page.lower()


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
    assert small.getvalue().count('"calls":null') > 150


@needs_chromium
def test_the_report_renders_in_chromium_with_the_tree(tmp_path: Path, demo_trace: Path) -> None:
    from tests.batch.conftest import FIXTURES

    report = tmp_path / "report.html"
    done = tracejudge(
        "score", str(demo_trace), str(FIXTURES / "openllmetry.jsonl"), "--html", str(report)
    )
    assert done.returncode == 0, done.stderr
    dom, console = chromium(report.as_uri(), tmp_path / "profile", "--dump-dom")
    assert console == ""  # no error, no message at all
    # worst first: the demo trace, opened, its tree rendered by the script
    assert dom.index("demo-trace.json") < dom.index("openllmetry")
    for text in (
        'class="agent-name">orchestrator',
        'class="agent-name">researcher',
        "2 of 3 tool calls",
    ):
        assert text in dom
    assert "page 1 of 1 · 2 of 2 traces" in dom
    shot = tmp_path / "report.png"
    chromium(report.as_uri(), tmp_path / "profile", f"--screenshot={shot}")
    assert shot.stat().st_size > 20_000  # a page with content, not a blank one
    keep(shot)  # look at it: mkdir .pytest-artifacts before the run


@needs_chromium
def test_one_trace_page_opens_at_its_tree(tmp_path: Path, demo_trace: Path) -> None:
    from tracejudge import checks
    from tracejudge._sync import run
    from tracejudge.evaluation.service import EvaluationService

    trace = _hostile_trace(demo_trace)
    responses = run(EvaluationService().score_trace(trace, list(checks.ALL)))
    page = tmp_path / "trace.html"
    page.write_text(render_trace_page(trace, responses, trace_id="abc"))
    dom, console = chromium(page.as_uri(), tmp_path / "profile", "--dump-dom")
    assert console == ""  # the hostile texts ran nothing
    assert "&lt;img src=x onerror=alert(1)&gt;writer" in dom
    assert 'id="trace-abc" open=""' in dom
