"""Leave one convention out: how the converter reads a producer nobody added a row for.

For each row of the conventions table (`tracejudge.convert.conventions.TABLE`), its
recordings (the framework programs of tests/fixtures/frameworks, without the composed
twins, in which the row claims at least one span) are converted twice: with the whole
table, and with that row taken out (`conventions.rows_removed`). Each recording's facts
(tests/fixtures/frameworks/expectations.py: agents, parents and calls, tool calls and
their results, each agent's and the trace's answer, no warning), all written from the
program, are checked on both; the figure is the facts that still hold without the row,
as a fraction of those that hold with it. Per row, and overall (every producer row's
recordings together, a recording counted once per row that claims its spans).

The rows of the standard formats (the GenAI semantic conventions, OpenInference, OpenLLMetry's
indexed keys, and the catch-all for unrecognised model-call spans) are shown apart and left
out of the overall figure: a framework nobody added still writes one of them, and the
figure is how well the converter reads such a framework through them, not how it reads
spans of no format at all.

Targets (issue #30): at least 0.9 overall, no row below 0.6.

    python benchmarks/leave_one_out.py            # the table (well under a minute)
    python benchmarks/leave_one_out.py --misses   # and each fact lost, per recording
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.fixtures.frameworks import expectations  # noqa: E402

from tracejudge.convert import conventions  # noqa: E402
from tracejudge.convert._otlp import decode  # noqa: E402
from tracejudge.convert._view import SpanView  # noqa: E402

#: The rows of standard formats, not of one producer (see the module's docstring).
FORMATS = frozenset(
    c.name
    for c in (
        conventions.GENAI,
        conventions.OPENINFERENCE,
        conventions.LEGACY_OPENLLMETRY,
        conventions.UNRECOGNISED,
    )
)
OVERALL_TARGET = 0.9
ROW_TARGET = 0.6


def rows_claiming(name: str) -> set[str]:
    """The names of the table's rows that claim a span of the recording."""
    records, _, _ = decode((expectations.FIXTURES / f"{name}.pb").read_bytes())
    claimed = set()
    for record in records:
        found = conventions.classify(SpanView(record))
        if found is not None:
            claimed.add(found[0].name)
    return claimed


def held(facts: list[expectations.Fact]) -> set[str]:
    # A fact may repeat (two identical tool calls): number them to keep each.
    seen: dict[str, int] = {}
    kept = set()
    for text, holds in facts:
        seen[text] = seen.get(text, 0) + 1
        if holds:
            kept.add(f"{text} #{seen[text]}")
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list each fact lost")
    args = parser.parse_args()
    began = time.perf_counter()
    names = expectations.recordings()
    claims = {name: rows_claiming(name) for name in names}
    with_row = {name: held(expectations.facts(name, expectations.convert(name))) for name in names}
    print(f"{'row':<26} {'recordings':>10} {'facts':>6} {'kept':>6} {'ratio':>6}")
    total_with = total_kept = 0
    worst: list[tuple[float, str]] = []
    producers = [c for c in conventions.TABLE if c.name not in FORMATS]
    formats = [c for c in conventions.TABLE if c.name in FORMATS]
    for row in producers + formats:
        if row is formats[0]:
            overall = total_kept / total_with if total_with else 1.0
            label = "overall (producer rows)"
            print(f"{label:<26} {'':>10} {total_with:>6} {total_kept:>6} {overall:>6.2f}")
            print("standard formats (not in the overall figure)")
        mine = [name for name in names if row.name in claims[name]]
        if not mine:
            continue
        facts = kept = 0
        lost: list[str] = []
        with conventions.rows_removed(row):
            for name in mine:
                without = held(expectations.facts(name, expectations.convert(name)))
                facts += len(with_row[name])
                kept += len(with_row[name] & without)
                lost += [f"    {name}: {fact}" for fact in sorted(with_row[name] - without)]
        ratio = kept / facts if facts else 1.0
        if row.name not in FORMATS:
            worst.append((ratio, row.name))
            total_with += facts
            total_kept += kept
        print(f"{row.name:<26} {len(mine):>10} {facts:>6} {kept:>6} {ratio:>6.2f}")
        if args.misses:
            print("\n".join(lost))
    lowest, lowest_row = min(worst)
    print(f"\n({len(names)} recordings, {time.perf_counter() - began:.1f} s)")
    print(
        f"target overall >= {OVERALL_TARGET}: {'met' if overall >= OVERALL_TARGET else 'NOT met'}"
        f" ({overall:.2f})"
    )
    print(
        f"target every producer row >= {ROW_TARGET}: {'met' if lowest >= ROW_TARGET else 'NOT met'}"
        f" (lowest {lowest_row} {lowest:.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
