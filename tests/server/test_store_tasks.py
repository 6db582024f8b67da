"""The tasks repository on SQLite and PostgreSQL: claims exclusive between workers,
leases taken over when they expire, orphans given back, a failed scoring task failing its
trace."""

from __future__ import annotations

import json
import threading
import time
import uuid

from tracejudge.server.store import (
    SpanBatch,
    TaskRow,
    open_store,
)


def _task(kind: str = "reward") -> TaskRow:
    return TaskRow(id=str(uuid.uuid4()), kind=kind, payload="{}")


def test_claims_are_exclusive_between_concurrent_workers(db_url: str) -> None:
    store = open_store(db_url)
    ids = set()
    for _ in range(40):
        task = _task()
        ids.add(task.id)
        store.tasks.enqueue(task)
    taken: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while True:
            claimed = store.tasks.claim(name, 3, lease_seconds=60)
            if not claimed:
                return
            with lock:
                taken.extend(t.id for t in claimed)
            for t in claimed:
                assert store.tasks.finish(t.id, name, status="done", result="{}")

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
    store.tasks.enqueue(task)
    (first,) = store.tasks.claim("a", 5, lease_seconds=0.05)
    assert first.attempts == 1 and store.tasks.claim("b", 5, lease_seconds=60) == []
    time.sleep(0.1)
    (second,) = store.tasks.claim("b", 5, lease_seconds=60)
    assert second.id == task.id and second.attempts == 2
    assert not store.tasks.finish(task.id, "a", status="done", result="{}")
    assert store.tasks.finish(task.id, "b", status="done", result='{"ok": 1}')
    row = store.tasks.get(task.id)
    assert row is not None and row.status == "done" and row.result == '{"ok": 1}'
    store.close()


def test_release_orphans_requeues_or_fails_after_max_attempts(tmp_path) -> None:
    store = open_store(str(tmp_path / "x.db"))
    fresh, tired = _task(), _task()
    store.tasks.enqueue(fresh)
    store.tasks.enqueue(tired)
    for _ in range(3):  # `tired` was interrupted three times
        store.tasks.claim("gone", 5, lease_seconds=0)
    store.tasks.release_orphans(max_attempts=3)
    fresh_row, tired_row = store.tasks.get(fresh.id), store.tasks.get(tired.id)
    assert fresh_row and tired_row
    assert {fresh_row.status, tired_row.status} == {"failed"}  # both were claimed 3 times
    other = _task()
    store.tasks.enqueue(other)
    store.tasks.claim("gone", 5, lease_seconds=60)
    store.tasks.release_orphans(max_attempts=3)
    row = store.tasks.get(other.id)
    assert row and row.status == "queued" and row.worker is None
    store.close()


def _ingest_task(trace_id: str) -> TaskRow:
    payload = json.dumps({"trace_id": trace_id, "source": "ingest"})
    return TaskRow(id=f"score-{trace_id}", kind="score_trace", payload=payload)


def test_a_failed_ingest_task_fails_its_waiting_trace(db_url: str) -> None:
    store = open_store(db_url)
    for trace_id in ("t-a", "t-b"):
        store.traces.add_spans([SpanBatch(trace_id, "json", b"{}", 1, True)])
    time.sleep(0.05)
    assert store.traces.queue_complete(0.01, 600, 10, _ingest_task) == ["t-a", "t-b"]
    claimed = {t.id: t for t in store.tasks.claim("w", 5, lease_seconds=60)}
    assert store.tasks.finish("score-t-a", "w", status="failed", error="the judge failed")
    assert store.tasks.finish("score-t-b", "w", status="done", result="{}")
    failed, untouched = store.traces.get("t-a"), store.traces.get("t-b")
    assert failed and failed.status == "failed" and failed.error == "the judge failed"
    assert untouched and untouched.status == "queued"  # done without a summary: as before
    assert set(claimed) == {"score-t-a", "score-t-b"}
    store.close()


def test_released_orphans_past_their_attempts_fail_their_traces(tmp_path) -> None:
    store = open_store(str(tmp_path / "x.db"))
    store.traces.add_spans([SpanBatch("t-o", "json", b"{}", 1, True)])
    time.sleep(0.05)
    store.traces.queue_complete(0.01, 600, 10, _ingest_task)
    store.tasks.claim("gone", 5, lease_seconds=0)
    store.tasks.release_orphans(max_attempts=1)
    trace = store.traces.get("t-o")
    assert trace and trace.status == "failed" and "stopped while this task ran" in str(trace.error)
    store.close()


def test_an_extended_lease_is_not_taken_over(db_url: str) -> None:
    store = open_store(db_url)
    try:
        for _ in range(2):
            store.tasks.enqueue(_task())
        claimed = store.tasks.claim("a", 2, lease_seconds=0.05)
        kept, lapsed = claimed
        store.tasks.extend_leases("a", [kept.id], lease_seconds=60)
        store.tasks.extend_leases("b", [lapsed.id], lease_seconds=60)  # not b's: no effect
        time.sleep(0.1)
        assert [t.id for t in store.tasks.claim("b", 5, lease_seconds=60)] == [lapsed.id]
        assert store.tasks.finish(kept.id, "a", status="done", result="{}")
    finally:
        store.close()


def test_prune_deletes_only_finished_tasks_older_than_the_cutoff(db_url: str) -> None:
    store = open_store(db_url)
    try:
        tasks = [_task() for _ in range(4)]
        for task in tasks:
            store.tasks.enqueue(task)
        done, failed, running, _queued = store.tasks.claim("w", 3, lease_seconds=60) + [tasks[3]]
        store.tasks.finish(done.id, "w", status="done", result="{}")
        store.tasks.finish(failed.id, "w", status="failed", error="no")
        assert store.tasks.prune(time.time() - 3600) == 0  # finished too recently
        assert store.tasks.prune(time.time() + 1) == 2
        assert store.tasks.get(done.id) is None and store.tasks.get(failed.id) is None
        left = store.tasks.get(running.id)
        assert left is not None and left.status == "running"
        assert store.tasks.queue_stats()[0] == 1
    finally:
        store.close()
