"""The rules and sessions repositories on SQLite and PostgreSQL: rules made, changed (their
revision up), owned by the file, deleted; decisions replaced per trace and rule, counted,
deleted with their traces; spend added per day; the stored traces a rule has not decided
for, newest first; sessions linked once, their traces in start order, their worst
verdict, paged by latest activity; one session judgement waiting at a time."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.server.stored import agent_trace, answer, stored
from tracejudge.server.store import (
    RuleDecisionRow,
    RuleSourceError,
    SessionEvaluationRow,
    open_store,
)


def _decision(trace_id: str, rule: str, outcome: str, revision: int = 1) -> RuleDecisionRow:
    return RuleDecisionRow(trace_id, rule, outcome, f"{outcome} because", revision, time.time())


def test_rules_their_decisions_and_spend(db_url: str) -> None:
    store = open_store(db_url)
    try:
        made = store.rules.create("cites", '{"name": "cites"}')
        assert made is not None and (made.source, made.revision) == ("api", 1)
        assert store.rules.create("cites", "{}") is None
        changed = store.rules.update("cites", '{"name": "cites", "sample_rate": 0.5}')
        assert changed is not None and changed.revision == 2
        assert store.rules.update("nothing", "{}") is None
        # the file's rules: added, changed, and gone when the file no longer has them
        store.rules.load_file([("from-file", '{"v": 1}'), ("cites", '{"v": "file"}')])
        assert {r.name: r.source for r in store.rules.all()} == {
            "cites": "file",
            "from-file": "file",
        }
        store.rules.load_file([("from-file", '{"v": 1}'), ("cites", '{"v": "file"}')])
        assert store.rules.get("from-file").revision == 1  # unchanged: same revision
        with pytest.raises(RuleSourceError):
            store.rules.update("from-file", "{}")
        with pytest.raises(RuleSourceError):
            store.rules.delete("cites")
        store.rules.load_file([("from-file", '{"v": 2}')])
        assert [(r.name, r.revision) for r in store.rules.all()] == [("from-file", 2)]
        assert store.rules.create("api-one", "{}") is not None
        assert store.rules.delete("api-one") and not store.rules.delete("api-one")

        # decisions: one per trace and rule, the latest kept
        store.decisions.decide(
            [_decision("t1", "a", "queued"), _decision("t2", "a", "sampled_out")]
        )
        store.decisions.decide(
            [_decision("t1", "a", "scored", 2), _decision("t1", "b", "over_budget")]
        )
        assert [(d.rule, d.outcome, d.revision) for d in store.decisions.of_trace("t1")] == [
            ("a", "scored", 2),
            ("b", "over_budget", 1),
        ]
        tallies = store.decisions.tallies()
        assert (tallies["a"].scored, tallies["a"].sampled_out) == (1, 1)
        assert tallies["b"].over_budget == 1

        store.rules.add_spend("2026-12-06", "a", 0.25, 1000)
        store.rules.add_spend("2026-12-06", "a", 0.5, 500)
        store.rules.add_spend("2026-12-07", "a", 9.0, 9)
        assert store.rules.spent("2026-12-06") == {"a": (0.75, 1500)}
    finally:
        store.close()


def test_a_rules_undecided_traces_newest_first_and_decisions_go_with_their_trace(
    db_url: str,
) -> None:
    store = open_store(db_url)
    try:
        for n in range(5):
            trace = agent_trace(["orchestrator", "writer"], start=1_700_000_000.0 + n)
            row, rows = stored(f"t{n}", trace, [answer(trace, "c", {"writer": 0.9})])
            row.resource = {"service.name": "checkout"}
            store.traces.save(row, rows)
        store.decisions.decide([_decision("t3", "r", "scored")])
        first = store.decisions.undecided("r", None, None, None, 2)
        assert [t.trace_id for t in first] == ["t4", "t2"]
        assert first[0].resource == {"service.name": "checkout"}
        last = first[-1]
        rest = store.decisions.undecided("r", None, None, (last.start_time, last.trace_id), 10)
        assert [t.trace_id for t in rest] == ["t1", "t0"]
        window = store.decisions.undecided("r", 1_700_000_001.0, 1_700_000_003.0, None, 10)
        assert [t.trace_id for t in window] == ["t2", "t1"]
        # retention deletes a trace's decisions and session with it
        store.sessions.link("t0", "s", "u", 1.0)
        store.decisions.decide([_decision("t0", "r", "scored")])
        store.traces.delete_before(time.time() + 1)
        assert store.decisions.of_trace("t0") == []
        assert store.sessions.of_trace("t0") == (None, None)
        assert store.sessions.prune(0.5) == 0  # active after the cutoff
        assert store.sessions.prune(2.0) == 1 and store.sessions.get("s") is None
    finally:
        store.close()


def test_sessions_their_traces_in_order_worst_verdict_and_pages(db_url: str) -> None:
    store = open_store(db_url)
    try:
        verdicts = {"a1": 0.9, "a2": 0.2, "a3": 0.8}  # a2 fails
        for n, (trace_id, score) in enumerate(verdicts.items()):
            trace = agent_trace(["orchestrator", "writer"], start=1_700_000_100.0 - n)
            row, rows = stored(trace_id, trace, [answer(trace, "c", {"writer": score})])
            store.traces.save(row, rows)
            store.sessions.link(trace_id, "session-a", "ann", 1_700_000_100.0 - n)
        trace = agent_trace(["orchestrator"], start=1_700_000_500.0)
        row, rows = stored("b1", trace, [answer(trace, "c", {"orchestrator": 0.9})])
        store.traces.save(row, rows)
        store.sessions.link("b1", "session-b", "bob", 1_700_000_500.0)
        store.sessions.link("b1", "session-b", "bob", 1_700_000_500.0)  # linked once
        store.sessions.link("loner", None, "carol", 1.0)  # a user, no session

        found = store.sessions.get("session-a")
        assert found is not None
        session, traces = found
        assert [t.trace_id for t in traces] == ["a3", "a2", "a1"]  # start order
        assert (session.user_id, session.traces, session.verdict) == ("ann", 3, "failed")
        assert session.first_start == pytest.approx(1_700_000_098.0)
        assert store.sessions.get("nothing") is None
        assert store.sessions.of_trace("loner") == (None, "carol")

        first = store.sessions.page(None, 1, None)
        assert [(s.session_id, s.traces, s.verdict) for s in first.sessions] == [
            ("session-b", 1, "passed")
        ]
        second = store.sessions.page(None, 1, first.cursor)
        assert [s.session_id for s in second.sessions] == ["session-a"]
        assert second.cursor is None
        assert [s.session_id for s in store.sessions.page("ann", 10, None).sessions] == [
            "session-a"
        ]

        # one judgement waits at a time; once started, the next turn may queue another
        assert store.sessions.claim_judging("session-a")
        assert not store.sessions.claim_judging("session-a")
        store.sessions.judging_started("session-a")
        assert store.sessions.claim_judging("session-a")
        store.sessions.save_evaluations(
            [SessionEvaluationRow("e1", "session-a", "c", "{}", 0.5, 3, None, 10.0)]
        )
        assert [e.turns for e in store.sessions.evaluations("session-a")] == [3]
    finally:
        store.close()


def test_replicas_loading_the_same_rules_file_at_once_store_it_once(db_url: str) -> None:
    stores = [open_store(db_url) for _ in range(2)]
    rules = [(f"rule-{n}", f'{{"n": {n}}}') for n in range(20)]
    failed: list[BaseException] = []

    def load(store: object) -> None:
        try:
            store.rules.load_file(rules)  # type: ignore[attr-defined]
        except BaseException as error:  # noqa: BLE001 - reported below
            failed.append(error)

    try:
        threads = [threading.Thread(target=load, args=(s,)) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failed == []
        assert {(r.name, r.revision) for r in stores[0].rules.all()} == {
            (name, 1) for name, _ in rules
        }
    finally:
        for store in stores:
            store.close()


def test_retention_forgets_the_sessions_whose_traces_went(tmp_path: Path) -> None:
    import anyio

    from tracejudge.server.work.retention import Pruner

    store = open_store(str(tmp_path / "db"))
    try:
        old = agent_trace(["orchestrator"], start=1_000.0)
        row, rows = stored("old", old, [answer(old, "c", {"orchestrator": 0.9})], seen=1_000.0)
        store.traces.save(row, rows)
        store.sessions.link("old", "gone-session", "ann", 1_000.0)
        store.sessions.save_evaluations(
            [SessionEvaluationRow("e", "gone-session", "c", "{}", 0.9, 1, None, 1_000.0)]
        )
        fresh = agent_trace(["orchestrator"])
        row, rows = stored("new", fresh, [], seen=time.time())
        store.traces.save(row, rows)
        store.sessions.link("new", "live-session", "ann", time.time())
        pruner = Pruner(store, task_retention_seconds=3600, retain_seconds=86_400)
        totals = anyio.run(pruner.prune_once)
        assert totals["traces"] == 1 and totals["sessions"] == 1
        assert store.sessions.get("gone-session") is None
        assert store.sessions.evaluations("gone-session") == []
        assert store.sessions.get("live-session") is not None
    finally:
        store.close()
