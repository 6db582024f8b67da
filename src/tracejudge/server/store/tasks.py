"""The tasks repository: the persistent queue of background work, with leases.

A worker claims tasks (the oldest first; on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so
replicas split them), extends its leases while it works, and finishes a task only while
it still owns it. A failed ingest scoring task fails its trace in the same transaction
(when the trace still waits for it), so a trace is never left `queued` behind a task that
ended.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from tracejudge.server.store._core import SQLCore
from tracejudge.server.store._digests import Digests
from tracejudge.server.store._task_rows import TASK_COLUMNS, insert_task, task_row
from tracejudge.server.store.base import EvaluationRow, TaskRow, TraceRow
from tracejudge.server.store.traces import Traces

__all__ = ["Tasks"]


def _waiting_trace(kind: str, payload: str) -> str | None:
    """The trace an ingest `score_trace` task is for (that trace is `queued` until it ends)."""
    if kind != "score_trace":
        return None
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("source", "ingest") != "ingest":
        return None
    trace_id = data.get("trace_id")
    return trace_id if isinstance(trace_id, str) else None


class Tasks:
    """Tasks through `core`; finishing one writes its trace (`traces`), its answers and
    their digests (`digests`) in the same transaction."""

    def __init__(self, core: SQLCore, traces: Traces, digests: Digests) -> None:
        self.core = core
        self.traces = traces
        self.digests = digests

    def enqueue(self, task: TaskRow) -> None:
        with self.core.transaction() as cursor:
            insert_task(self.core, cursor, task)

    def claim(self, worker: str, limit: int, lease_seconds: float) -> list[TaskRow]:
        """Take up to `limit` pending tasks, or running ones whose lease expired, oldest
        first; each becomes running, owned by `worker` until the lease ends."""
        now = time.time()
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                f"UPDATE tasks SET status = 'running', worker = ?, lease_until = ?, "
                f"attempts = attempts + 1, updated_at = ? WHERE id IN (SELECT id FROM tasks "
                f"WHERE status = 'queued' OR (status = 'running' AND lease_until < ?) "
                f"ORDER BY created_at LIMIT ?{self.core.lock_rows}) RETURNING {TASK_COLUMNS}",
                [worker, now + lease_seconds, now, now, limit],
            ).fetchall()
        return sorted((task_row(r) for r in rows), key=lambda t: t.created_at)

    def extend_leases(self, worker: str, task_ids: Sequence[str], lease_seconds: float) -> None:
        if not task_ids:
            return
        marks = ", ".join("?" for _ in task_ids)
        with self.core.transaction() as cursor:
            self.core.run(
                cursor,
                f"UPDATE tasks SET lease_until = ? WHERE worker = ? AND status = 'running' "
                f"AND id IN ({marks})",
                [time.time() + lease_seconds, worker, *task_ids],
            )

    def release_orphans(self, max_attempts: int) -> int:
        """Give back every running task (its process is gone): pending again, or failed
        when it was already tried `max_attempts` times. Single-process stores only."""
        now = time.time()
        reason = (
            f"the server stopped while this task ran, {max_attempts} times; it is not tried again"
        )
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                "UPDATE tasks SET status = 'failed', worker = NULL, lease_until = NULL, "
                "updated_at = ?, error = ? WHERE status = 'running' AND attempts >= ? "
                "RETURNING kind, payload",
                [now, reason, max_attempts],
            ).fetchall()
            for kind, payload in rows:
                self._fail_waiting_trace(cursor, kind, payload, reason)
            requeued = self.core.run(
                cursor,
                "UPDATE tasks SET status = 'queued', worker = NULL, lease_until = NULL, "
                "updated_at = ? WHERE status = 'running'",
                [now],
            ).rowcount
        return len(rows) + int(requeued)

    def finish(
        self,
        task_id: str,
        worker: str,
        *,
        status: str,
        result: str | None = None,
        error: str | None = None,
        evaluations: Sequence[EvaluationRow] = (),
        trace: TraceRow | None = None,
        replace_source: str | None = None,
    ) -> bool:
        """Record the outcome (and the evaluations, and the converted trace) if `worker`
        still owns the task; False when it does not (its lease was taken over). A failed
        ingest `score_trace` task fails its trace too, when the trace is still queued."""
        with self.core.transaction() as cursor:
            owned = self.core.run(
                cursor,
                "UPDATE tasks SET status = ?, result = ?, error = ?, worker = NULL, "
                "lease_until = NULL, updated_at = ? WHERE id = ? AND worker = ? "
                "AND status = 'running' RETURNING kind, payload",
                [status, result, error, time.time(), task_id, worker],
            ).fetchall()
            if len(owned) != 1:
                return False
            self._write_outcome(cursor, evaluations, trace, replace_source)
            if status == "failed":
                kind, payload = owned[0]
                self._fail_waiting_trace(cursor, kind, payload, error or "its scoring failed")
        return True

    def give_back(self, task_id: str, worker: str) -> bool:
        """Queue a task `worker` still owns again, its attempt not counted: its handler
        met a store outage, not a fault of the task's own. False when not owned."""
        with self.core.transaction() as cursor:
            given = self.core.run(
                cursor,
                "UPDATE tasks SET status = 'queued', worker = NULL, lease_until = NULL, "
                "attempts = attempts - 1, updated_at = ? WHERE id = ? AND worker = ? "
                "AND status = 'running'",
                [time.time(), task_id, worker],
            ).rowcount
        return int(given) == 1

    def _write_outcome(
        self,
        cursor: Any,
        evaluations: Sequence[EvaluationRow],
        trace: TraceRow | None,
        replace_source: str | None,
    ) -> None:
        """A finished task's trace and answers, and the digests they change."""
        if trace is not None and trace.source == "otlp":
            self.traces.write_converted(cursor, trace)
        elif trace is not None:  # a trace posted for evaluation in the background
            self.traces.write_posted(cursor, trace)
        if trace is not None and replace_source is not None:
            self.traces.evaluations.delete_source(cursor, trace.trace_id, replace_source)
        self.traces.evaluations.insert(cursor, evaluations)
        touched = {e.trace_id for e in evaluations if e.trace_id is not None}
        self.digests.refresh_all(cursor, touched | ({trace.trace_id} if trace else set()))

    def _fail_waiting_trace(self, cursor: Any, kind: str, payload: str, reason: str) -> None:
        trace_id = _waiting_trace(kind, payload)
        if trace_id is not None:
            self.traces.fail_waiting(cursor, trace_id, reason)

    def get(self, task_id: str) -> TaskRow | None:
        with self.core.transaction() as cursor:
            row = self.core.run(
                cursor, f"SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?", [task_id]
            ).fetchone()
        return None if row is None else task_row(row)

    def prune(self, older_than: float) -> int:
        """Delete finished tasks last updated before `older_than`."""
        with self.core.transaction() as cursor:
            return int(
                self.core.run(
                    cursor,
                    "DELETE FROM tasks WHERE status IN ('done', 'failed') AND updated_at < ?",
                    [older_than],
                ).rowcount
            )

    def queue_stats(self) -> tuple[int, float | None]:
        """How many tasks are queued, and when the oldest of them was created."""
        with self.core.transaction() as cursor:
            count, oldest = self.core.run(
                cursor, "SELECT COUNT(*), MIN(created_at) FROM tasks WHERE status = 'queued'"
            ).fetchone()
        return int(count), (None if oldest is None else float(oldest))
