"""The store against SQLite and PostgreSQL: migrations, claims, leases, traces."""

from __future__ import annotations

import json
import threading
import time
import uuid

from tracejudge.server.store import (
    SCHEMA_VERSION,
    SpanBatch,
    TaskRow,
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
    store.add_spans([SpanBatch("t1", '{"resourceSpans": []}', 2, False, {"env": "prod"})])
    store.add_spans([SpanBatch("t2", "{}", 1, True)])

    def make(trace_id: str) -> TaskRow:
        return TaskRow(id=f"score-{trace_id}", kind="score_trace", payload=json.dumps(trace_id))

    assert store.queue_complete_traces(60, 600, 10, make) == []  # not quiet yet
    time.sleep(0.05)
    assert store.queue_complete_traces(0.01, 600, 10, make) == ["t2"]  # t1 has no root
    assert store.get_task("score-t2") is not None
    store.add_spans([SpanBatch("t1", "{}", 1, True)])
    time.sleep(0.05)
    assert store.queue_complete_traces(0.01, 600, 10, make) == ["t1"]
    payloads, count = store.span_payloads("t1")
    assert len(payloads) == 2 and count == 3
    trace = store.get_trace("t1")
    assert trace and trace.status == "queued" and trace.tags == {"env": "prod"}
    store.close()
