"""The evaluations repository on SQLite and PostgreSQL: answers kept in order beside their
trace (or alone, for a scored chat), the list's columns refreshed from the latest answer
per criterion in the same transaction, and a re-score replacing one source's answers."""

from __future__ import annotations

import uuid

from tests.server.stored import agent_trace, answer, stored
from tracejudge.server.store import EvaluationRow, Store, TaskRow, TraceFilter, open_store

NAMES = ["planner", "writer"]


def _row(
    trace_id: str | None, criterion: str, score: float, at: float, **fields: object
) -> EvaluationRow:
    response = answer(agent_trace(NAMES), criterion, {"planner": 1.0, "writer": score})
    return EvaluationRow(
        id=str(uuid.uuid4()),
        kind="trace" if trace_id else "reward",
        criterion=criterion,
        response=response.model_dump_json(),
        overall_score=response.overall_score,
        created_at=at,
        trace_id=trace_id,
        **fields,  # type: ignore[arg-type]
    )


def _failing(store: Store) -> set[str]:
    return {t.trace_id for t in store.lists.page(TraceFilter(verdict="failed"), 10, None).traces}


def test_answers_are_kept_in_order_and_the_latest_per_criterion_is_listed(db_url: str) -> None:
    store = open_store(db_url)
    try:
        trace, _ = stored("t1", agent_trace(NAMES))
        store.traces.save(trace)
        assert store.evaluations.of_trace("t1") == []
        first = _row("t1", "helpful", 0.2, 1000.0, tags={"run": "1"})
        store.evaluations.save([first])
        listed = store.traces.get("t1")
        assert listed is not None and listed.worst_score == 0.2 and listed.verdict == "failed"
        assert _failing(store) == {"t1"}
        # A later answer to the same criterion is what the list shows; the first is kept.
        second = _row("t1", "helpful", 0.9, 1001.0, judge_cost_usd=0.25)
        store.evaluations.save([second])
        kept = store.evaluations.of_trace("t1")
        assert [e.id for e in kept] == [first.id, second.id]
        assert kept[0].tags == {"run": "1"} and kept[1].judge_cost_usd == 0.25
        listed = store.traces.get("t1")
        assert listed is not None and listed.verdict == "passed" and listed.worst_score == 0.9
        assert listed.scores == {"helpful": second.overall_score}
        assert _failing(store) == set()
        # A chat's answer (no trace) is kept too, and touches no trace.
        store.evaluations.save([_row(None, "helpful", 0.1, 1002.0)])
        assert store.counts()["evaluations"] == 3
        assert [e.id for e in store.evaluations.of_trace("t1")] == [first.id, second.id]
    finally:
        store.close()


def test_a_rescore_replaces_the_answers_of_its_source(db_url: str) -> None:
    store = open_store(db_url)
    try:
        trace, _ = stored("t1", agent_trace(NAMES))
        store.traces.save(trace, [_row("t1", "helpful", 0.1, 1000.0, source="ingest")])
        store.evaluations.save([_row("t1", "manual", 0.9, 1000.5, source="api")])
        store.tasks.enqueue(TaskRow(id="rescore", kind="trace", payload="{}"))
        (task,) = store.tasks.claim("w", 1, lease_seconds=60)
        again = _row("t1", "helpful", 0.8, 1001.0, source="ingest")
        assert store.tasks.finish(
            task.id,
            "w",
            status="done",
            result="{}",
            evaluations=[again],
            trace=trace,
            replace_source="ingest",
        )
        kept = {(e.criterion, e.source, e.overall_score) for e in store.evaluations.of_trace("t1")}
        assert kept == {
            ("manual", "api", _row(None, "manual", 0.9, 0).overall_score),
            ("helpful", "ingest", again.overall_score),
        }
        assert _failing(store) == set()  # the failing answer it replaced is gone from the list
    finally:
        store.close()
