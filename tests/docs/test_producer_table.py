"""The documentation's producer table ("Agent frameworks") is generated from
`tests/fixtures/frameworks/producers.py` and covers exactly the producers recorded in
tests/fixtures/frameworks, so it cannot drift from what the tests read."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.frameworks import producers
from tests.fixtures.frameworks.programs import PROGRAMS

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"


def _recorded() -> set[tuple[str, str]]:
    found = set()
    for path in FRAMEWORKS.glob("*.meta.json"):
        meta = json.loads(path.read_text(encoding="utf-8"))
        found.add((PROGRAMS[meta["program"]].framework, meta["instrumentation"]))
    return found


def test_every_recorded_producer_has_a_row_and_every_row_a_recording() -> None:
    rows = {
        (row.framework, instrumentation)
        for row in producers.PRODUCERS
        for instrumentation in row.instrumentations
    }
    recorded = _recorded()
    assert recorded - rows == set(), "recorded producers without a row"
    assert rows - recorded == set(), "rows without a recording"


def test_the_page_table_is_the_generated_one() -> None:
    text = producers.PAGE.read_text(encoding="utf-8")
    table = producers.page_table(text)
    assert table is not None, f"{producers.PAGE} lost its producers markers"
    assert table == producers.render(), (
        "the producer table of docs/guides/frameworks.md is stale: "
        "python tests/fixtures/frameworks/producers.py --write"
    )
