"""The store against SQLite and PostgreSQL: migrations, claims, leases, traces."""

from __future__ import annotations

import json
import threading
import time
import uuid

from tests.server.stored import agent_trace
from tracejudge.server.store import (
    SCHEMA_VERSION,
    AttributionRow,
    EvaluationRow,
    LabelRow,
    SpanBatch,
    TaskRow,
    TraceFilter,
    TraceRow,
    _sql,
    open_store,
)


def _task(kind: str = "reward") -> TaskRow:
    return TaskRow(id=str(uuid.uuid4()), kind=kind, payload="{}")


def test_migrations_apply_once_and_are_recorded(db_url: str) -> None:
    store = open_store(db_url)
    try:
        assert store.migrate() == SCHEMA_VERSION  # a second run applies nothing
    finally:
        store.close()
    again = open_store(db_url)  # reopening a migrated database keeps its data
    again.enqueue(_task())
    assert again.counts()["tasks"] == {"queued": 1}
    again.close()


def test_claims_are_exclusive_between_concurrent_workers(db_url: str) -> None:
    store = open_store(db_url)
    ids = set()
    for _ in range(40):
        task = _task()
        ids.add(task.id)
        store.enqueue(task)
    taken: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while True:
            claimed = store.claim_tasks(name, 3, lease_seconds=60)
            if not claimed:
                return
            with lock:
                taken.extend(t.id for t in claimed)
            for t in claimed:
                assert store.finish_task(t.id, name, status="done", result="{}")

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == sorted(ids)  # every task once, none twice
    assert store.counts()["tasks"] == {"done": 40}
    store.close()


def test_expired_lease_is_taken_over_and_the_old_owner_cannot_finish(db_url: str) -> None:
    store = open_store(db_url)
    task = _task()
    store.enqueue(task)
    (first,) = store.claim_tasks("a", 5, lease_seconds=0.05)
    assert first.attempts == 1 and store.claim_tasks("b", 5, lease_seconds=60) == []
    time.sleep(0.1)
    (second,) = store.claim_tasks("b", 5, lease_seconds=60)
    assert second.id == task.id and second.attempts == 2
    assert not store.finish_task(task.id, "a", status="done", result="{}")
    assert store.finish_task(task.id, "b", status="done", result='{"ok": 1}')
    row = store.get_task(task.id)
    assert row is not None and row.status == "done" and row.result == '{"ok": 1}'
    store.close()


def test_release_orphans_requeues_or_fails_after_max_attempts(tmp_path) -> None:
    store = open_store(str(tmp_path / "x.db"))
    fresh, tired = _task(), _task()
    store.enqueue(fresh)
    store.enqueue(tired)
    for _ in range(3):  # `tired` was interrupted three times
        store.claim_tasks("gone", 5, lease_seconds=0)
    store.release_orphans(max_attempts=3)
    fresh_row, tired_row = store.get_task(fresh.id), store.get_task(tired.id)
    assert fresh_row and tired_row
    assert {fresh_row.status, tired_row.status} == {"failed"}  # both were claimed 3 times
    other = _task()
    store.enqueue(other)
    store.claim_tasks("gone", 5, lease_seconds=60)
    store.release_orphans(max_attempts=3)
    row = store.get_task(other.id)
    assert row and row.status == "queued" and row.worker is None
    store.close()


def test_traces_complete_after_quiet_period_and_late_spans_reopen(db_url: str) -> None:
    store = open_store(db_url)
    store.add_spans([SpanBatch("t1", "json", b'{"resourceSpans": []}', 2, False, {"env": "prod"})])
    store.add_spans([SpanBatch("t2", "json", b"{}", 1, True)])

    def make(trace_id: str) -> TaskRow:
        return TaskRow(id=f"score-{trace_id}", kind="score_trace", payload=json.dumps(trace_id))

    assert store.queue_complete_traces(60, 600, 10, make) == []  # not quiet yet
    time.sleep(0.05)
    assert store.queue_complete_traces(0.01, 600, 10, make) == ["t2"]  # t1 has no root
    assert store.get_task("score-t2") is not None
    store.add_spans([SpanBatch("t1", "protobuf", b"\x0a\x00", 1, True)])
    time.sleep(0.05)
    assert store.queue_complete_traces(0.01, 600, 10, make) == ["t1"]
    batches, count = store.span_batches("t1")
    assert batches == [("json", b'{"resourceSpans": []}'), ("protobuf", b"\x0a\x00")]
    assert count == 3
    trace = store.get_trace("t1")
    assert trace and trace.status == "queued" and trace.tags == {"env": "prod"}
    # Both wait to be scored: the intake's backlog (#32 item 6).
    assert store.backlog_size() == 2
    store.add_spans([SpanBatch("t3", "json", b"{}", 9, True)], max_trace_spans=5)
    assert store.backlog_size() == 2  # too_large: never to be scored
    store.close()


def test_a_trace_past_the_span_limit_is_kept_too_large_without_its_spans(db_url: str) -> None:
    store = open_store(db_url)
    store.add_spans([SpanBatch("big", "protobuf", b"\x0a\x00", 3, True)], max_trace_spans=5)
    store.add_spans([SpanBatch("small", "json", b"{}", 5, True)], max_trace_spans=5)
    assert store.span_batches("big") == ([("protobuf", b"\x0a\x00")], 3)
    not_kept = store.add_spans(
        [SpanBatch("big", "protobuf", b"\x0a\x01", 3, False)], max_trace_spans=5
    )
    assert not_kept == {"big": 3}
    row = store.get_trace("big")
    assert row and row.status == "too_large" and row.span_count == 6
    assert "more than 5 spans" in str(row.error) and "--max-trace-spans" in str(row.error)
    assert store.span_batches("big") == ([], 6)  # what came before is deleted
    store.add_spans([SpanBatch("big", "json", b"{}", 2, False)], max_trace_spans=5)
    row = store.get_trace("big")
    assert row and row.status == "too_large" and row.span_count == 8  # counted, not kept
    assert store.span_batches("big") == ([], 8)
    time.sleep(0.05)
    # Never queued for scoring; a trace at the limit is.
    assert store.queue_complete_traces(0.01, 0.01, 10, _ingest_task) == ["small"]
    assert [
        t.trace_id for t in store.list_traces(TraceFilter(status="too_large"), 10, None).traces
    ] == ["big"]
    store.close()


def test_span_batches_of_earlier_schemas_stay_readable(db_url: str, monkeypatch) -> None:
    """A database written before version 6 (span batches as OTLP/JSON text) migrates and
    its batches read back as OTLP/JSON, next to the batches written after."""
    from tracejudge.server.store import _sql, migrations

    before = tuple(m for m in migrations.MIGRATIONS if m.version < 6)
    monkeypatch.setattr(_sql, "MIGRATIONS", before)
    old = open_store(db_url)
    assert old.migrate() == before[-1].version
    old_text = '{"resourceSpans":[{"scopeSpans":[{"spans":[]}]}],"note":"caf\u00e9 é"}'
    with old._transaction() as cursor:  # what the intake of those versions wrote
        old._run(
            cursor,
            "INSERT INTO traces (trace_id, source, status, first_seen, last_span_at, "
            "root_ended, span_count) VALUES ('t', 'otlp', 'open', 1, 1, 1, 2)",
        )
        old._run(
            cursor,
            "INSERT INTO span_batches (trace_id, payload, received_at) VALUES ('t', ?, 1)",
            [old_text],
        )
    old.close()
    monkeypatch.undo()
    store = open_store(db_url)
    assert store.migrate() == SCHEMA_VERSION
    store.add_spans([SpanBatch("t", "protobuf", b"\x0a\x00", 1, False)])
    batches, count = store.span_batches("t")
    assert batches == [("json", old_text.encode("utf-8")), ("protobuf", b"\x0a\x00")]
    assert count == 3
    store.close()


def _ingest_task(trace_id: str) -> TaskRow:
    payload = json.dumps({"trace_id": trace_id, "source": "ingest"})
    return TaskRow(id=f"score-{trace_id}", kind="score_trace", payload=payload)


def test_nul_and_lone_surrogates_are_stored_alike_on_both_stores(db_url: str) -> None:
    """PostgreSQL cannot hold NUL in text, neither store a lone surrogate: both keep U+FFFD
    in their place, in the columns, the agents list and the list's agent keys."""
    store = open_store(db_url)
    row = TraceRow(
        trace_id="t-odd",
        source="api",
        status="scored",
        first_seen=time.time(),
        last_span_at=time.time(),
        root_agent="ro\x00ot",
        agents=["ro\x00ot", "wri\ud800ter", "wri\x00ter"],
        tags={"te\x00am": "\udfffa"},
        # the list's agent keys come from the trace itself
        trace_json=agent_trace(["ro\x00ot", "wri\x00ter"]).to_json(),
    )
    store.save_trace(row)
    stored = store.get_trace("t-odd")
    assert stored is not None
    assert stored.root_agent == "ro\ufffdot"
    # the agents list read from the trace follows the same rule
    assert stored.agents == ["ro\ufffdot", "wri\ufffdter"]
    assert stored.tags == {"te\ufffdam": "\ufffda"}
    found = store.list_traces(TraceFilter(agent="wri\ufffdter"), 10, None).traces
    assert [t.trace_id for t in found] == ["t-odd"]
    assert store.get_trace("t\x00odd") is None and store.get_task("\ud800") is None
    store.close()


def test_a_failed_ingest_task_fails_its_waiting_trace(db_url: str) -> None:
    store = open_store(db_url)
    for trace_id in ("t-a", "t-b"):
        store.add_spans([SpanBatch(trace_id, "json", b"{}", 1, True)])
    time.sleep(0.05)
    assert store.queue_complete_traces(0.01, 600, 10, _ingest_task) == ["t-a", "t-b"]
    claimed = {t.id: t for t in store.claim_tasks("w", 5, lease_seconds=60)}
    assert store.finish_task("score-t-a", "w", status="failed", error="the judge failed")
    assert store.finish_task("score-t-b", "w", status="done", result="{}")
    failed, untouched = store.get_trace("t-a"), store.get_trace("t-b")
    assert failed and failed.status == "failed" and failed.error == "the judge failed"
    assert untouched and untouched.status == "queued"  # done without a summary: as before
    assert set(claimed) == {"score-t-a", "score-t-b"}
    store.close()


def test_released_orphans_past_their_attempts_fail_their_traces(tmp_path) -> None:
    store = open_store(str(tmp_path / "x.db"))
    store.add_spans([SpanBatch("t-o", "json", b"{}", 1, True)])
    time.sleep(0.05)
    store.queue_complete_traces(0.01, 600, 10, _ingest_task)
    store.claim_tasks("gone", 5, lease_seconds=0)
    store.release_orphans(max_attempts=1)
    trace = store.get_trace("t-o")
    assert trace and trace.status == "failed" and "stopped while this task ran" in str(trace.error)
    store.close()


def test_retention_deletes_old_traces_with_their_rows(db_url: str) -> None:
    store = open_store(db_url)
    old, new = time.time() - 10 * 86400, time.time()
    for trace_id, when in (("old", old), ("new", new)):
        row = TraceRow(
            trace_id=trace_id,
            source="api",
            status="scored",
            first_seen=when,
            last_span_at=when,
            agents=["a"],
            tags={"k": "v"},
        )
        evaluation = EvaluationRow(
            id=f"e-{trace_id}",
            kind="trace",
            criterion="c",
            response="{}",
            overall_score=1.0,
            created_at=when,
            trace_id=trace_id,
        )
        store.save_trace(row, [evaluation])
    reward = EvaluationRow(
        id="e-reward", kind="reward", criterion="c", response="{}", overall_score=1, created_at=old
    )
    store.save_evaluations([reward])
    for trace_id, when in (("old", old), ("new", new)):
        store.save_label(
            LabelRow(
                id=f"l-{trace_id}",
                trace_id=trace_id,
                agent="a",
                agent_instance_id="a-1",
                criterion="c",
                stance="agree",
                who="ann",
                created_at=when,
            )
        )
        store.save_attribution(AttributionRow(trace_id, ["checks"], "{}", when))
    deleted = store.delete_before(time.time() - 86400)
    assert deleted == {"traces": 1, "span_batches": 0, "evaluations": 2}
    assert store.delete_before(time.time() - 86400) == {
        "traces": 0,
        "span_batches": 0,
        "evaluations": 0,
    }
    assert store.get_trace("old") is None and store.get_trace("new") is not None
    assert [e.id for e in store.evaluations_of("new")] == ["e-new"]
    assert [label.id for label in store.all_labels()] == ["l-new"]
    assert store.latest_attribution("old") is None and store.latest_attribution("new")
    assert store.list_traces(TraceFilter(tags=(("k", "v"),)), 10, None).traces[0].trace_id == "new"
    # what the list kept of the old trace went with it (a search for its agent finds none)
    assert [t.trace_id for t in store.list_traces(TraceFilter(), 10, None).traces] == ["new"]
    with store._transaction() as cursor:  # type: ignore[attr-defined]
        for table in (*_sql._TRACE_SIDE_TABLES, "trace_docs"):
            left = store._run(  # type: ignore[attr-defined]
                cursor, f"SELECT COUNT(*) FROM {table} WHERE trace_id = ?", ["old"]
            ).fetchone()[0]
            assert left == 0, table
    assert store.queue_stats() == (0, None)
    store.enqueue(_task())
    depth, oldest = store.queue_stats()
    assert depth == 1 and oldest is not None and oldest <= time.time()
    store.close()
