"""The batch report's histograms (#35): each bar's count written over it, the count axis
ticked (0, half, most) and the score axis every 0.2, both named; the report opened in
headless Chromium, its charts kept as a screenshot."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cdp import Browser
from tests.chromium import keep, needs_chromium
from tracejudge.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _empty_answer(path: Path, n: int) -> Path:
    agent = {
        "id": f"a{n}",
        "name": "helper",
        "interactions": [
            {
                "input_messages": [{"role": "user", "content": "What is 2 + 2?"}],
                "output_messages": [{"content": ""}],
            }
        ],
    }
    path.write_text(
        json.dumps({"root_agent_instance_id": f"a{n}", "agent_instance_by_id": {f"a{n}": agent}})
    )
    return path


def _chart(page: str, criterion: str) -> str:
    charts = re.findall(r'<figure class="chart">.*?</figure>', page, flags=re.S)
    (chart,) = [c for c in charts if f"<figcaption>{criterion} (" in c]
    return chart


def _report(tmp_path: Path) -> Path:
    inputs = [str(FIXTURES / "openllmetry.jsonl")]  # one clean trace: final_answer 1.0
    inputs += [str(_empty_answer(tmp_path / f"empty{n}.json", n)) for n in range(3)]  # 0.0
    out = tmp_path / "report.html"
    assert main(["score", *inputs, "--check", "final_answer", "--html", str(out), "-q"]) == 0
    return out


def test_each_bar_has_its_count_and_both_axes_have_ticks(tmp_path: Path) -> None:
    chart = _chart(_report(tmp_path).read_text(), "final_answer")
    counts = [int(c) for c in re.findall(r'<text class="count"[^>]*>(\d+)</text>', chart)]
    assert counts == [3, 1]  # three traces in the lowest bin, one in the highest
    xticks = re.findall(r'<text class="xtick"[^>]*>([\d.]+)</text>', chart)
    assert xticks == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    yticks = [int(t) for t in re.findall(r'<text class="ytick"[^>]*>(\d+)</text>', chart)]
    assert yticks == [0, 1, 3]  # 0, half the tallest (rounded down), the tallest
    assert ">worst agent score</text>" in chart and ">traces</text>" in chart


@needs_chromium
def test_the_report_s_charts_in_chromium(tmp_path: Path) -> None:
    report = _report(tmp_path)
    with Browser(tmp_path / "profile") as tab:
        tab.load(report.as_uri())
        assert tab.console == []
        drawn = tab.evaluate(
            "Array.from(document.querySelectorAll('figure.chart text.count'),t=>"
            "{var b=t.getBBox();return b.width>0&&b.height>0;})"
        )
        assert drawn and all(drawn)  # the counts are drawn, not only in the markup
        shot = tab.screenshot(tmp_path / "report-histograms.png")
        keep(shot)
    assert shot.stat().st_size > 10_000
