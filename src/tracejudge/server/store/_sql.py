"""The SQL both stores run. A dialect supplies connections and three spellings.

Statements are written with `?` placeholders; the PostgreSQL store turns them into
`%s`. Claims (`claim_tasks`, `queue_complete_traces`) select their rows with the
dialect's row lock (`FOR UPDATE SKIP LOCKED` on PostgreSQL, nothing on SQLite, whose
`BEGIN IMMEDIATE` already lets one writer in at a time), so several processes
never take the same row.

Text is stored the same on both databases: PostgreSQL cannot hold a NUL in a text
column and neither database can encode a lone surrogate, so every text parameter has
them replaced by U+FFFD (`storable`). The server refuses such text in what clients send
(422 naming the field); this is what keeps text found in ingested spans (an agent's name)
from failing a write. JSON columns hold escaped JSON, which keeps the text exactly.

A failed ingest scoring task fails its trace in the same transaction (when the trace
still waits for it), so a trace is never left `queued` behind a task that ended.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from tracejudge.server.store.base import (
    EvaluationRow,
    JudgeSpendRow,
    SpanBatch,
    TaskRow,
    TraceFilter,
    TracePage,
    TraceRow,
)
from tracejudge.server.store.migrations import MIGRATIONS

__all__ = ["CURSOR_PATTERN", "SQLStore", "InvalidCursorError", "storable"]

#: What neither database stores as text: NUL (PostgreSQL) and lone surrogates (both).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_REPLACEMENT = "\ufffd"
#: Rows deleted per statement by the retention sweep.
_DELETE_BATCH = 500


def storable(text: str) -> str:
    """`text` with NUL and lone surrogates replaced by U+FFFD."""
    if "\x00" not in text and (text.isascii() or not _UNSTORABLE.search(text)):
        return text
    return _UNSTORABLE.sub(_REPLACEMENT, text)


def _param(value: Any) -> Any:
    return storable(value) if isinstance(value, str) else value


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


_TASK_COLUMNS = (
    "id, kind, payload, status, result, error, attempts, worker, lease_until, "
    "created_at, updated_at"
)
_TRACE_COLUMNS = (
    "trace_id, source, status, first_seen, last_span_at, span_count, root_ended, "
    "start_time, root_agent, agents, trace_json, error"
)
_EVALUATION_COLUMNS = (
    "id, trace_id, kind, source, criterion, overall_score, response, tags, created_at, "
    "judge_cost_usd"
)
#: The key of a day's total in judge_spend.
_ALL_CRITERIA = "*"


class InvalidCursorError(ValueError):
    """A pagination cursor that is not a position in the listing."""


#: A cursor: the position after which the next page starts, `<first_seen>:<trace_id>`
#: (the listing's order). Any such position is a valid place to continue from, so the
#: API's schema can say exactly what a cursor is (`CURSOR_PATTERN`).
#: (Digits bounded so that every number the pattern allows is finite.)
_NUMBER = r"[0-9]{1,20}(?:\.[0-9]{1,20})?(?:e[-+]?[0-9]{1,2})?"
CURSOR_PATTERN = f"^{_NUMBER}:"
_CURSOR = re.compile(f"({_NUMBER}):(.*)", re.DOTALL)


def _encode_cursor(first_seen: float, trace_id: str) -> str:
    return f"{first_seen!r}:{trace_id}"


def _decode_cursor(cursor: str) -> tuple[float, str]:
    found = _CURSOR.fullmatch(cursor)
    first_seen = float(found.group(1)) if found else float("nan")
    if found is None or not math.isfinite(first_seen):
        raise InvalidCursorError(
            "cursor is not a position in the listing: pass the `next_cursor` of the previous page"
        )
    return first_seen, found.group(2)


def _task(row: Sequence[Any]) -> TaskRow:
    return TaskRow(*row)


def _trace(row: Sequence[Any]) -> TraceRow:
    (trace_id, source, status, first_seen, last_span_at, span_count, root_ended) = row[:7]
    start_time, root_agent, agents, trace_json, error = row[7:]
    return TraceRow(
        trace_id=trace_id,
        source=source,
        status=status,
        first_seen=first_seen,
        last_span_at=last_span_at,
        span_count=span_count,
        root_ended=bool(root_ended),
        start_time=start_time,
        root_agent=root_agent,
        agents=json.loads(agents or "[]"),
        trace_json=trace_json,
        error=error,
    )


def _criterion_key(criterion: str) -> str:
    return hashlib.sha256(criterion.encode("utf-8")).hexdigest()


def _evaluation(row: Sequence[Any]) -> EvaluationRow:
    id_, trace_id, kind, source, criterion, overall, response, tags, created_at, cost = row
    return EvaluationRow(
        id=id_,
        trace_id=trace_id,
        kind=kind,
        source=source,
        criterion=criterion,
        overall_score=overall,
        response=response,
        tags=json.loads(tags or "{}"),
        created_at=created_at,
        judge_cost_usd=cost,
    )


class SQLStore:
    """The store over a DB-API connection; subclasses give `_transaction` and spellings."""

    #: Row lock for claims (PostgreSQL: " FOR UPDATE SKIP LOCKED").
    lock_rows = ""
    #: The auto-numbered primary key type.
    serial = "INTEGER PRIMARY KEY AUTOINCREMENT"
    single_process = True

    def _transaction(self) -> AbstractContextManager[Any]:  # pragma: no cover - abstract
        """A cursor inside one transaction: committed on success, rolled back on error."""
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        return statement

    def _run(self, cursor: Any, statement: str, params: Sequence[Any] = ()) -> Any:
        cursor.execute(self._sql(statement), tuple(_param(p) for p in params))
        return cursor

    def is_transient(self, error: BaseException) -> bool:
        """Whether `error` says the database is busy or unreachable for now (worth a retry),
        rather than that it refused what it was given."""
        return False

    # ------------------------------------------------------------------ schema

    def migrate(self) -> int:
        with self._transaction() as cursor:
            self._lock_schema(cursor)
            self._run(
                cursor,
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                "description TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)",
            )
        version = 0
        for migration in MIGRATIONS:
            with self._transaction() as cursor:
                self._lock_schema(cursor)
                row = self._run(
                    cursor, "SELECT 1 FROM schema_migrations WHERE version = ?", [migration.version]
                ).fetchone()
                if row is None:
                    for statement in migration.statements:
                        self._run(cursor, statement.replace("{serial}", self.serial))
                    self._run(
                        cursor,
                        "INSERT INTO schema_migrations (version, description, applied_at) "
                        "VALUES (?, ?, ?)",
                        [migration.version, migration.description, time.time()],
                    )
            version = migration.version
        return version

    def _lock_schema(self, cursor: Any) -> None:
        """Keep two processes from applying the same migration at once."""

    # ------------------------------------------------------------------ tasks

    def enqueue(self, task: TaskRow) -> None:
        with self._transaction() as cursor:
            self._insert_task(cursor, task)

    def _insert_task(self, cursor: Any, task: TaskRow) -> None:
        now = time.time()
        self._run(
            cursor,
            f"INSERT INTO tasks ({_TASK_COLUMNS}) VALUES (?, ?, ?, 'queued', NULL, NULL, 0, "
            "NULL, NULL, ?, ?)",
            [task.id, task.kind, task.payload, task.created_at or now, now],
        )

    def claim_tasks(self, worker: str, limit: int, lease_seconds: float) -> list[TaskRow]:
        now = time.time()
        with self._transaction() as cursor:
            rows = self._run(
                cursor,
                f"UPDATE tasks SET status = 'running', worker = ?, lease_until = ?, "
                f"attempts = attempts + 1, updated_at = ? WHERE id IN (SELECT id FROM tasks "
                f"WHERE status = 'queued' OR (status = 'running' AND lease_until < ?) "
                f"ORDER BY created_at LIMIT ?{self.lock_rows}) RETURNING {_TASK_COLUMNS}",
                [worker, now + lease_seconds, now, now, limit],
            ).fetchall()
        return sorted((_task(r) for r in rows), key=lambda t: t.created_at)

    def extend_leases(self, worker: str, task_ids: Sequence[str], lease_seconds: float) -> None:
        if not task_ids:
            return
        marks = ", ".join("?" for _ in task_ids)
        with self._transaction() as cursor:
            self._run(
                cursor,
                f"UPDATE tasks SET lease_until = ? WHERE worker = ? AND status = 'running' "
                f"AND id IN ({marks})",
                [time.time() + lease_seconds, worker, *task_ids],
            )

    def release_orphans(self, max_attempts: int) -> int:
        now = time.time()
        reason = (
            f"the server stopped while this task ran, {max_attempts} times; it is not tried again"
        )
        with self._transaction() as cursor:
            rows = self._run(
                cursor,
                "UPDATE tasks SET status = 'failed', worker = NULL, lease_until = NULL, "
                "updated_at = ?, error = ? WHERE status = 'running' AND attempts >= ? "
                "RETURNING kind, payload",
                [now, reason, max_attempts],
            ).fetchall()
            failed = len(rows)
            for kind, payload in rows:
                self._fail_waiting_trace(cursor, kind, payload, reason)
            requeued = self._run(
                cursor,
                "UPDATE tasks SET status = 'queued', worker = NULL, lease_until = NULL, "
                "updated_at = ? WHERE status = 'running'",
                [now],
            ).rowcount
        return int(failed) + int(requeued)

    def finish_task(
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
        with self._transaction() as cursor:
            owned = self._run(
                cursor,
                "UPDATE tasks SET status = ?, result = ?, error = ?, worker = NULL, "
                "lease_until = NULL, updated_at = ? WHERE id = ? AND worker = ? "
                "AND status = 'running' RETURNING kind, payload",
                [status, result, error, time.time(), task_id, worker],
            ).fetchall()
            if len(owned) != 1:
                return False
            if trace is not None:
                self._update_scored_trace(cursor, trace)
            if trace is not None and replace_source is not None:
                self._run(
                    cursor,
                    "DELETE FROM evaluations WHERE trace_id = ? AND source = ?",
                    [trace.trace_id, replace_source],
                )
            self._insert_evaluations(cursor, evaluations)
            if status == "failed":
                kind, payload = owned[0]
                self._fail_waiting_trace(cursor, kind, payload, error or "its scoring failed")
        return True

    def _fail_waiting_trace(self, cursor: Any, kind: str, payload: str, reason: str) -> None:
        trace_id = _waiting_trace(kind, payload)
        if trace_id is not None:
            self._run(
                cursor,
                "UPDATE traces SET status = 'failed', error = ? "
                "WHERE trace_id = ? AND status = 'queued'",
                [reason, trace_id],
            )

    def get_task(self, task_id: str) -> TaskRow | None:
        with self._transaction() as cursor:
            row = self._run(
                cursor, f"SELECT {_TASK_COLUMNS} FROM tasks WHERE id = ?", [task_id]
            ).fetchone()
        return None if row is None else _task(row)

    def prune(self, older_than: float) -> int:
        with self._transaction() as cursor:
            return int(
                self._run(
                    cursor,
                    "DELETE FROM tasks WHERE status IN ('done', 'failed') AND updated_at < ?",
                    [older_than],
                ).rowcount
            )

    def queue_stats(self) -> tuple[int, float | None]:
        with self._transaction() as cursor:
            count, oldest = self._run(
                cursor, "SELECT COUNT(*), MIN(created_at) FROM tasks WHERE status = 'queued'"
            ).fetchone()
        return int(count), (None if oldest is None else float(oldest))

    def delete_before(self, cutoff: float) -> dict[str, int]:
        deleted = {"traces": 0, "span_batches": 0, "evaluations": 0}
        with self._transaction() as cursor:
            ids = [
                r[0]
                for r in self._run(
                    cursor,
                    "SELECT trace_id FROM traces WHERE last_span_at < ? AND status <> 'queued' "
                    "ORDER BY last_span_at LIMIT ?",
                    [cutoff, _DELETE_BATCH],
                ).fetchall()
            ]
            if ids:
                marks = ", ".join("?" for _ in ids)
                for table in ("trace_tags", "trace_agents"):
                    self._run(cursor, f"DELETE FROM {table} WHERE trace_id IN ({marks})", ids)
                for table in ("span_batches", "evaluations"):
                    deleted[table] += int(
                        self._run(
                            cursor, f"DELETE FROM {table} WHERE trace_id IN ({marks})", ids
                        ).rowcount
                    )
                gone = self._run(cursor, f"DELETE FROM traces WHERE trace_id IN ({marks})", ids)
                deleted["traces"] = int(gone.rowcount)
            # Evaluations not tied to a trace (rewards), or older than their trace.
            deleted["evaluations"] += int(
                self._run(
                    cursor,
                    "DELETE FROM evaluations WHERE id IN (SELECT id FROM evaluations "
                    "WHERE created_at < ? LIMIT ?)",
                    [cutoff, _DELETE_BATCH],
                ).rowcount
            )
        return deleted

    # ------------------------------------------------------------------ traces

    def add_spans(self, batches: Sequence[SpanBatch]) -> None:
        now = time.time()
        # One lock order for every writer (PostgreSQL would otherwise deadlock two
        # requests that carry spans of the same traces in another order).
        ordered = sorted(batches, key=lambda b: b.trace_id)
        with self._transaction() as cursor:
            for batch in ordered:
                self._run(
                    cursor,
                    "INSERT INTO traces (trace_id, source, status, first_seen, last_span_at, "
                    "root_ended, span_count) VALUES (?, 'otlp', 'open', ?, ?, ?, ?) "
                    "ON CONFLICT (trace_id) DO UPDATE SET status = 'open', "
                    "last_span_at = excluded.last_span_at, "
                    "root_ended = CASE WHEN excluded.root_ended = 1 THEN 1 "
                    "ELSE traces.root_ended END, "
                    "span_count = traces.span_count + excluded.span_count",
                    [batch.trace_id, now, now, int(batch.has_root), batch.span_count],
                )
                self._run(
                    cursor,
                    "INSERT INTO span_batches (trace_id, payload, received_at) VALUES (?, ?, ?)",
                    [batch.trace_id, batch.payload, now],
                )
                for key, value in sorted(batch.tags.items()):
                    self._put_tag(cursor, batch.trace_id, key, value)

    def _put_tag(self, cursor: Any, trace_id: str, key: str, value: str) -> None:
        self._run(
            cursor,
            "INSERT INTO trace_tags (trace_id, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (trace_id, key) DO UPDATE SET value = excluded.value",
            [trace_id, key, value],
        )

    def queue_complete_traces(
        self,
        quiet_seconds: float,
        timeout_seconds: float,
        limit: int,
        make_task: Callable[[str], TaskRow],
    ) -> list[str]:
        now = time.time()
        with self._transaction() as cursor:
            rows = self._run(
                cursor,
                "UPDATE traces SET status = 'queued' WHERE trace_id IN (SELECT trace_id "
                "FROM traces WHERE status = 'open' AND ((root_ended = 1 AND last_span_at <= ?) "
                f"OR last_span_at <= ?) ORDER BY last_span_at LIMIT ?{self.lock_rows}) "
                "RETURNING trace_id",
                [now - quiet_seconds, now - timeout_seconds, limit],
            ).fetchall()
            ids = sorted(r[0] for r in rows)
            for trace_id in ids:
                self._insert_task(cursor, make_task(trace_id))
        return ids

    def span_payloads(self, trace_id: str) -> tuple[list[str], int]:
        with self._transaction() as cursor:
            payloads = [
                r[0]
                for r in self._run(
                    cursor,
                    "SELECT payload FROM span_batches WHERE trace_id = ? ORDER BY id",
                    [trace_id],
                ).fetchall()
            ]
            row = self._run(
                cursor, "SELECT span_count FROM traces WHERE trace_id = ?", [trace_id]
            ).fetchone()
        return payloads, (row[0] if row else 0)

    def _update_scored_trace(self, cursor: Any, trace: TraceRow) -> None:
        """Write a converted trace; its status holds only if no span arrived meanwhile
        (otherwise it stays open, to be converted and scored again)."""
        self._run(
            cursor,
            "UPDATE traces SET status = CASE WHEN span_count = ? THEN ? ELSE status END, "
            "start_time = ?, root_agent = ?, agents = ?, trace_json = ?, error = ? "
            "WHERE trace_id = ?",
            [
                trace.span_count,
                trace.status,
                trace.start_time,
                trace.root_agent,
                json.dumps([storable(a) for a in trace.agents]),
                trace.trace_json,
                trace.error,
                trace.trace_id,
            ],
        )
        self._set_agents(cursor, trace)

    def _set_agents(self, cursor: Any, trace: TraceRow) -> None:
        self._run(cursor, "DELETE FROM trace_agents WHERE trace_id = ?", [trace.trace_id])
        for name in sorted({storable(a) for a in trace.agents}):
            self._run(
                cursor,
                "INSERT INTO trace_agents (trace_id, agent_name) VALUES (?, ?)",
                [trace.trace_id, name],
            )

    def save_trace(self, trace: TraceRow, evaluations: Sequence[EvaluationRow] = ()) -> None:
        with self._transaction() as cursor:
            self._run(
                cursor,
                f"INSERT INTO traces ({_TRACE_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (trace_id) DO UPDATE SET "
                "status = excluded.status, last_span_at = excluded.last_span_at, "
                "start_time = excluded.start_time, root_agent = excluded.root_agent, "
                "agents = excluded.agents, trace_json = excluded.trace_json, "
                "error = excluded.error",
                [
                    trace.trace_id,
                    trace.source,
                    trace.status,
                    trace.first_seen,
                    trace.last_span_at,
                    trace.span_count,
                    int(trace.root_ended),
                    trace.start_time,
                    trace.root_agent,
                    json.dumps([storable(a) for a in trace.agents]),
                    trace.trace_json,
                    trace.error,
                ],
            )
            self._set_agents(cursor, trace)
            for key, value in sorted(trace.tags.items()):
                self._put_tag(cursor, trace.trace_id, key, value)
            self._insert_evaluations(cursor, evaluations)

    def save_evaluations(self, evaluations: Sequence[EvaluationRow]) -> None:
        if evaluations:
            with self._transaction() as cursor:
                self._insert_evaluations(cursor, evaluations)

    def _insert_evaluations(self, cursor: Any, evaluations: Sequence[EvaluationRow]) -> None:
        for e in evaluations:
            self._run(
                cursor,
                f"INSERT INTO evaluations ({_EVALUATION_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    e.id,
                    e.trace_id,
                    e.kind,
                    e.source,
                    e.criterion,
                    e.overall_score,
                    e.response,
                    json.dumps(e.tags),
                    e.created_at,
                    e.judge_cost_usd,
                ],
            )

    def get_trace(self, trace_id: str) -> TraceRow | None:
        with self._transaction() as cursor:
            row = self._run(
                cursor, f"SELECT {_TRACE_COLUMNS} FROM traces WHERE trace_id = ?", [trace_id]
            ).fetchone()
            if row is None:
                return None
            trace = _trace(row)
            self._decorate(cursor, [trace])
        return trace

    def _decorate(self, cursor: Any, traces: list[TraceRow]) -> None:
        """Fill each trace's tags and latest score per criterion."""
        if not traces:
            return
        by_id = {t.trace_id: t for t in traces}
        marks = ", ".join("?" for _ in by_id)
        ids = list(by_id)
        for trace_id, key, value in self._run(
            cursor, f"SELECT trace_id, key, value FROM trace_tags WHERE trace_id IN ({marks})", ids
        ).fetchall():
            by_id[trace_id].tags[key] = value
        for trace_id, criterion, overall, cost in self._run(
            cursor,
            "SELECT trace_id, criterion, overall_score, judge_cost_usd FROM evaluations "
            f"WHERE trace_id IN ({marks}) ORDER BY created_at, id",
            ids,
        ).fetchall():
            trace = by_id[trace_id]
            trace.scores[criterion] = overall
            if cost is not None:
                trace.judge_cost_usd = (trace.judge_cost_usd or 0.0) + cost

    def list_traces(self, where: TraceFilter, limit: int, cursor: str | None) -> TracePage:
        conditions: list[str] = []
        params: list[Any] = []
        if where.tag is not None:
            conditions.append(
                "EXISTS (SELECT 1 FROM trace_tags g WHERE g.trace_id = traces.trace_id "
                "AND g.key = ? AND g.value = ?)"
            )
            params.extend(where.tag)
        if where.agent is not None:
            conditions.append(
                "EXISTS (SELECT 1 FROM trace_agents a WHERE a.trace_id = traces.trace_id "
                "AND a.agent_name = ?)"
            )
            params.append(where.agent)
        if where.score_below is not None:
            conditions.append(
                "EXISTS (SELECT 1 FROM evaluations e WHERE e.trace_id = traces.trace_id "
                "AND e.overall_score < ?)"
            )
            params.append(where.score_below)
        if where.status is not None:
            conditions.append("status = ?")
            params.append(where.status)
        if where.since is not None:
            conditions.append("first_seen >= ?")
            params.append(where.since)
        if where.until is not None:
            conditions.append("first_seen < ?")
            params.append(where.until)
        if cursor is not None:
            first_seen, trace_id = _decode_cursor(cursor)
            conditions.append("(first_seen < ? OR (first_seen = ? AND trace_id < ?))")
            params.extend([first_seen, first_seen, trace_id])
        clause = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        with self._transaction() as db:
            rows = self._run(
                db,
                f"SELECT {_TRACE_COLUMNS} FROM traces{clause} "
                "ORDER BY first_seen DESC, trace_id DESC LIMIT ?",
                [*params, limit + 1],
            ).fetchall()
            traces = [_trace(r) for r in rows[:limit]]
            self._decorate(db, traces)
        more = len(rows) > limit
        last = traces[-1] if traces else None
        next_cursor = _encode_cursor(last.first_seen, last.trace_id) if more and last else None
        return TracePage(traces=traces, cursor=next_cursor)

    def evaluations_of(self, trace_id: str) -> list[EvaluationRow]:
        with self._transaction() as cursor:
            rows = self._run(
                cursor,
                f"SELECT {_EVALUATION_COLUMNS} FROM evaluations WHERE trace_id = ? "
                "ORDER BY created_at, id",
                [trace_id],
            ).fetchall()
        return [_evaluation(r) for r in rows]

    def counts(self) -> dict[str, Any]:
        with self._transaction() as cursor:
            tasks = dict(
                self._run(cursor, "SELECT status, COUNT(*) FROM tasks GROUP BY status").fetchall()
            )
            traces = dict(
                self._run(cursor, "SELECT status, COUNT(*) FROM traces GROUP BY status").fetchall()
            )
            evaluations = self._run(cursor, "SELECT COUNT(*) FROM evaluations").fetchone()[0]
        return {"tasks": tasks, "traces": traces, "evaluations": evaluations}

    # ------------------------------------------------------------------ judge spending

    def add_judge_spend(
        self, day: str, criterion: str, cost_usd: float, tokens: int, calls: int
    ) -> None:
        now = time.time()
        # The day's total first, then the criterion: one lock order for every writer.
        rows = sorted([(_ALL_CRITERIA, ""), (_criterion_key(criterion), criterion)])
        with self._transaction() as cursor:
            for key, text in rows:
                self._run(
                    cursor,
                    "INSERT INTO judge_spend (day, criterion_key, criterion, cost_usd, tokens, "
                    "calls, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (day, criterion_key) DO UPDATE SET "
                    "cost_usd = judge_spend.cost_usd + excluded.cost_usd, "
                    "tokens = judge_spend.tokens + excluded.tokens, "
                    "calls = judge_spend.calls + excluded.calls, "
                    "updated_at = excluded.updated_at",
                    [day, key, text, float(cost_usd), int(tokens), int(calls), now],
                )

    def judge_spend(self, day: str, criterion: str) -> tuple[JudgeSpendRow, JudgeSpendRow]:
        key = _criterion_key(criterion)
        with self._transaction() as cursor:
            rows = self._run(
                cursor,
                "SELECT criterion_key, cost_usd, tokens, calls FROM judge_spend "
                "WHERE day = ? AND criterion_key IN (?, ?)",
                [day, _ALL_CRITERIA, key],
            ).fetchall()
        found = {k: JudgeSpendRow(float(c), int(t), int(n)) for k, c, t, n in rows}
        return found.get(_ALL_CRITERIA, JudgeSpendRow()), found.get(key, JudgeSpendRow())
