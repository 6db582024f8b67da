"""Every recorded cassette, replayed through the real clients under each instrumentation,
converts to the model call the recording shows: messages by role, tool calls with
arguments and ids, tool results by id, answer text, other choices, refusal, finish
reason, reasoning, built-in tools, usage, model, errors.

Each setup runs `drive.py` in its own process (instrumenting patches the clients for
good), the three in parallel, forked from one process that imported the clients. What an
instrumentation never records is listed in NEVER_RECORDED, with the reason; everything
else must match. Needs the cassette folder (`shared/cassettes`, or
$TRACEJUDGE_CASSETTES) and the instrumentations of the test extra.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.compare import differences
from tests.replay.expected import expected
from tests.replay.replayed import NEVER_RECORDED, SETUPS, gap, load_cassette, recorded_spans
from tracejudge.convert import traces_from_spans

# the session's replay (three processes) is made once, on one worker
pytestmark = pytest.mark.xdist_group("cassettes")


@pytest.mark.parametrize("setup", list(SETUPS))
def test_every_cassette_converts_to_what_was_recorded(setup: str, replayed: Path) -> None:
    manifest, by_trace = recorded_spans(replayed, setup)
    problems, gaps_seen = [], set()
    for trace_id, entry in manifest.items():
        name = entry["cassette"]
        cassette = load_cassette(name)
        want = expected(cassette.exchanges[entry["index"]])
        where = f"{name}#{entry['index']}"
        traces = traces_from_spans(by_trace.get(trace_id, []))
        calls = [c for t in traces for a in t.iter_agents() for c in a.llm_interactions]
        if len(calls) != 1:
            if gap(setup, name, "calls") and not calls:
                gaps_seen.add(("calls", name))
                continue
            problems.append(f"{where}: {len(calls)} interactions for one call")
            continue
        warnings = [w for t in traces for w in t.warnings]
        if warnings and not any(gap(setup, name, f) for f in ("outputs", "calls")):
            problems.append(f"{where}: warnings {warnings}")
        for facet, (got, wanted) in differences(calls[0], want).items():
            if gap(setup, name, facet):
                gaps_seen.add((facet, name))
                continue
            problems.append(f"{where} {facet}:\n  got  {got!r:.400}\n  want {wanted!r:.400}")
    assert not problems, f"{len(problems)} differences under {setup}:\n" + "\n".join(problems)
    # Every listed gap still shows: a fixed instrumentation must leave the list.
    listed = {(f, p) for (s, p, f) in NEVER_RECORDED if s == setup}
    unseen = {(f, p) for f, p in listed if not any(f == g and p in n for g, n in gaps_seen)}
    assert not unseen, f"listed as never recorded under {setup}, but recorded now: {unseen}"
