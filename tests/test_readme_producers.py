"""The README's producer table is generated from `tests/fixtures/frameworks/producers.py`
and covers exactly the producers recorded in tests/fixtures/frameworks, so it cannot
drift from what the tests read."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.frameworks import producers
from tests.fixtures.frameworks.programs import PROGRAMS

FRAMEWORKS = Path(__file__).resolve().parent / "fixtures" / "frameworks"


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
    assert recorded - rows == set(), "recorded producers without a README row"
    assert rows - recorded == set(), "README rows without a recording"


def test_the_readme_table_is_the_generated_one() -> None:
    text = producers.README.read_text(encoding="utf-8")
    table = producers.readme_table(text)
    assert table is not None, "README.md lost its producers markers"
    assert table == producers.render(), (
        "README.md's producer table is stale: python tests/fixtures/frameworks/producers.py --write"
    )
