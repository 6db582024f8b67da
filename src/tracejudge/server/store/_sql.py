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

What the list reads of a trace is written beside it whenever it is converted or scored
(`_digest`, from `tracejudge.server.digest`, in the same transaction): its columns, its
latest score per criterion and agent instance (`agent_scores`), its agents' case-folded
names, its full-text document. Listing reads only those (see `_query`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from tracejudge import semconv
from tracejudge.models import PriceTable
from tracejudge.server.digest import DIGEST_VERSION, TraceDigest, digest, settled_verdict
from tracejudge.server.store._labels import LabelsSQL
from tracejudge.server.store._query import SORT_COLUMNS as _SORT_COLUMNS
from tracejudge.server.store._query import (
    Conditions,
    Cursor,
    InvalidCursorError,
    Side,
    agent_key,
    conditions,
    keyset,
    order_by,
    probes_pay,
)
from tracejudge.server.store._search import SearchQuery, index_words
from tracejudge.server.store.base import (
    EvaluationRow,
    JudgeSpendRow,
    Overview,
    OverviewRow,
    SpanBatch,
    SpanEncoding,
    TaskRow,
    TraceFilter,
    TraceOrder,
    TracePage,
    TraceRow,
    too_large_reason,
)
from tracejudge.server.store.migrations import MIGRATIONS

__all__ = ["SQLStore", "InvalidCursorError", "storable"]

#: What neither database stores as text: NUL (PostgreSQL) and lone surrogates (both).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_REPLACEMENT = "\ufffd"
#: What is kept of a trace beside its row (its full-text document apart), for retention.
_TRACE_SIDE_TABLES = (
    "trace_tags",
    "trace_resource",
    "agent_scores",
    "trace_agent_keys",
    "trace_criteria",
    "attributions",
    "human_labels",
)
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


logger = logging.getLogger("tracejudge.server")

_TASK_COLUMNS = (
    "id, kind, payload, status, result, error, attempts, worker, lease_until, "
    "created_at, updated_at"
)
_TRACE_COLUMNS = (
    "trace_id, source, status, first_seen, last_span_at, span_count, root_ended, "
    "start_time, root_agent, agents, trace_json, error"
)
#: What a list reads of each trace: everything but its JSON.
_LISTED_COLUMNS = (
    "traces.trace_id, source, status, first_seen, last_span_at, span_count, root_ended, "
    "start_time, root_agent, agents, NULL, error, end_time, duration, agent_count, "
    "model_calls, input_tokens, output_tokens, cost, models, worst_score, worst_agent, "
    "worst_criterion, failing_agents, failing_pairs, verdict, service"
)
_FULL_COLUMNS = _LISTED_COLUMNS.replace("NULL", "trace_json", 1)
_EVALUATION_COLUMNS = (
    "id, trace_id, kind, source, criterion, overall_score, response, tags, created_at, "
    "judge_cost_usd"
)
#: The key of a day's total in judge_spend.
_ALL_CRITERIA = "*"


def _task(row: Sequence[Any]) -> TaskRow:
    return TaskRow(*row)


def _trace(row: Sequence[Any]) -> TraceRow:
    (trace_id, source, status, first_seen, last_span_at, span_count, root_ended) = row[:7]
    start_time, root_agent, agents, trace_json, error = row[7:12]
    (end_time, duration, agent_count, model_calls, input_tokens, output_tokens, cost) = row[12:19]
    models, worst_score, worst_agent, worst_criterion, failing_agents = row[19:24]
    failing_pairs, verdict, service = row[24:27]
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
        end_time=end_time,
        duration=duration,
        agent_count=agent_count,
        model_calls=model_calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
        models=json.loads(models or "[]"),
        worst_score=worst_score,
        worst_agent=worst_agent,
        worst_criterion=worst_criterion,
        failing_agents=failing_agents,
        failing_pairs=failing_pairs,
        verdict=verdict,
        service=service,
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


def _where(conditions: Sequence[str]) -> str:
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


def _overview_row(name: str, criterion: str, values: list[tuple[float, int, int]]) -> OverviewRow:
    """Statistics of one agent name and criterion from (score, instances, failing)."""
    values.sort()
    scored = sum(count for _, count, _ in values)

    def nth(n: int) -> float:  # the n-th smallest score, from 0
        for score, count, _ in values:
            if n < count:
                return score
            n -= count
        raise IndexError(n)

    middle = (nth((scored - 1) // 2) + nth(scored // 2)) / 2
    return OverviewRow(
        agent_name=name,
        criterion=criterion,
        scored=scored,
        failing=sum(failing for _, _, failing in values),
        mean=sum(score * count for score, count, _ in values) / scored,
        median=middle,
        min=values[0][0],
        max=values[-1][0],
    )


class SQLStore(LabelsSQL):
    """The store over a DB-API connection; subclasses give `_transaction` and spellings."""

    #: Row lock for claims (PostgreSQL: " FOR UPDATE SKIP LOCKED").
    lock_rows = ""
    #: The auto-numbered primary key type.
    serial = "INTEGER PRIMARY KEY AUTOINCREMENT"
    #: The type of a bytes column.
    blob = "BLOB"
    #: The migrations' dialect, and the collation of text compared by code point.
    dialect = "sqlite"
    key_collation = ""
    clustered = " WITHOUT ROWID"
    single_process = True
    #: Whether the store chooses how a list joins its side tables (SQLite's planner has no
    #: statistics unless ANALYZE ran; PostgreSQL's planner has them, and chooses).
    picks_joins = True
    #: What the agents' model calls cost (None: the shipped table).
    prices: PriceTable | None = None

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

    def _run_many(self, cursor: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for many rows (PostgreSQL pipelines them: one round trip)."""
        if rows:
            cursor.executemany(self._sql(statement), [tuple(_param(p) for p in r) for r in rows])

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
                    for statement in migration.for_dialect(self.dialect):
                        statement = statement.replace("{serial}", self.serial)
                        statement = statement.replace("{blob}", self.blob)
                        statement = statement.replace("{clustered}", self.clustered)
                        self._run(cursor, statement.replace("{key}", self.key_collation))
                    self._run(
                        cursor,
                        "INSERT INTO schema_migrations (version, description, applied_at) "
                        "VALUES (?, ?, ?)",
                        [migration.version, migration.description, time.time()],
                    )
            version = max(version, migration.version)
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
            if trace is not None and trace.source == "otlp":
                self._update_scored_trace(cursor, trace)
            elif trace is not None:  # a trace posted for evaluation in the background
                self._save_trace(cursor, trace)
            if trace is not None and replace_source is not None:
                self._run(
                    cursor,
                    "DELETE FROM evaluations WHERE trace_id = ? AND source = ?",
                    [trace.trace_id, replace_source],
                )
            self._insert_evaluations(cursor, evaluations)
            touched = {e.trace_id for e in evaluations if e.trace_id is not None}
            self._digest_all(cursor, touched | ({trace.trace_id} if trace else set()))
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

    def backlog_size(self) -> int:
        # Added for the intake's backpressure (#32 item 6): one indexed count.
        with self._transaction() as cursor:
            (count,) = self._run(
                cursor, "SELECT COUNT(*) FROM traces WHERE status IN ('open', 'queued')"
            ).fetchone()
        return int(count)

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
                for trace_id in ids:  # its full-text document, the dialect's way
                    self._index(cursor, trace_id, "")
                for table in _TRACE_SIDE_TABLES:
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

    def add_spans(
        self, batches: Sequence[SpanBatch], max_trace_spans: int | None = None
    ) -> dict[str, int]:
        now = time.time()
        rejected: dict[str, int] = {}
        # One lock order for every writer (PostgreSQL would otherwise deadlock two
        # requests that carry spans of the same traces in another order).
        ordered = sorted(batches, key=lambda b: b.trace_id)
        with self._transaction() as cursor:
            for batch in ordered:
                start = batch.start if batch.start is not None else now
                count, status = self._run(
                    cursor,
                    "INSERT INTO traces (trace_id, source, status, first_seen, last_span_at, "
                    "root_ended, span_count, start_time, end_time, duration, service) "
                    "VALUES (?, 'otlp', 'open', ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (trace_id) DO UPDATE SET "
                    "status = CASE WHEN traces.status = 'too_large' THEN 'too_large' "
                    "ELSE 'open' END, "
                    "last_span_at = excluded.last_span_at, "
                    "root_ended = CASE WHEN excluded.root_ended = 1 THEN 1 "
                    "ELSE traces.root_ended END, "
                    "span_count = traces.span_count + excluded.span_count, "
                    "start_time = CASE WHEN traces.start_time IS NULL OR "
                    "excluded.start_time < traces.start_time THEN excluded.start_time "
                    "ELSE traces.start_time END, "
                    "end_time = CASE WHEN traces.end_time IS NULL OR "
                    "excluded.end_time > traces.end_time THEN excluded.end_time "
                    "ELSE traces.end_time END, "
                    "service = COALESCE(traces.service, excluded.service) "
                    "RETURNING span_count, status",
                    [
                        batch.trace_id,
                        now,
                        now,
                        int(batch.has_root),
                        batch.span_count,
                        start,
                        batch.end,
                        None if batch.end is None else max(0.0, batch.end - start),
                        batch.resource.get(semconv.SERVICE_NAME),
                    ],
                ).fetchone()
                self._run(
                    cursor,
                    "UPDATE traces SET duration = end_time - start_time "
                    "WHERE trace_id = ? AND end_time IS NOT NULL",
                    [batch.trace_id],
                )
                if status == "too_large":  # counted, not kept
                    rejected[batch.trace_id] = rejected.get(batch.trace_id, 0) + batch.span_count
                    continue
                if max_trace_spans is not None and count > max_trace_spans:
                    self._run(
                        cursor,
                        "UPDATE traces SET status = 'too_large', error = ?, verdict = 'unscored' "
                        "WHERE trace_id = ?",
                        [too_large_reason(max_trace_spans), batch.trace_id],
                    )
                    self._run(
                        cursor, "DELETE FROM span_batches WHERE trace_id = ?", [batch.trace_id]
                    )
                    rejected[batch.trace_id] = rejected.get(batch.trace_id, 0) + batch.span_count
                    continue
                self._run(
                    cursor,
                    "INSERT INTO span_batches (trace_id, payload, encoding, body, received_at) "
                    "VALUES (?, '', ?, ?, ?)",
                    [batch.trace_id, batch.encoding, batch.payload, now],
                )
                self._put_pairs(cursor, "trace_tags", batch.trace_id, batch.tags)
                self._put_pairs(cursor, "trace_resource", batch.trace_id, batch.resource)
        return rejected

    def _put_pairs(self, cursor: Any, table: str, trace_id: str, pairs: dict[str, str]) -> None:
        """Set keys of a trace's tags or resource attributes (`table`), in key order."""
        self._run_many(
            cursor,
            f"INSERT INTO {table} (trace_id, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (trace_id, key) DO UPDATE SET value = excluded.value",
            [(trace_id, key, value) for key, value in sorted(pairs.items())],
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

    def span_batches(self, trace_id: str) -> tuple[list[tuple[SpanEncoding, bytes]], int]:
        with self._transaction() as cursor:
            rows = self._run(
                cursor,
                "SELECT encoding, body, payload FROM span_batches WHERE trace_id = ? ORDER BY id",
                [trace_id],
            ).fetchall()
            row = self._run(
                cursor, "SELECT span_count FROM traces WHERE trace_id = ?", [trace_id]
            ).fetchone()
        # Rows of schema versions before 6 have no encoding: their payload is OTLP/JSON text.
        batches: list[tuple[SpanEncoding, bytes]] = [
            (encoding, bytes(body)) if encoding else ("json", payload.encode("utf-8"))
            for encoding, body, payload in rows
        ]
        return batches, (row[0] if row else 0)

    def _update_scored_trace(self, cursor: Any, trace: TraceRow) -> None:
        """Write a converted trace; its status (and error) hold only if no span arrived
        meanwhile (otherwise it stays open, to be converted and scored again, or
        too_large, with the reason)."""
        self._run(
            cursor,
            "UPDATE traces SET status = CASE WHEN span_count = ? THEN ? ELSE status END, "
            "error = CASE WHEN span_count = ? THEN ? ELSE error END, "
            "root_agent = ?, agents = ?, trace_json = ? WHERE trace_id = ?",
            [
                trace.span_count,
                trace.status,
                trace.span_count,
                trace.error,
                trace.root_agent,
                json.dumps([storable(a) for a in trace.agents]),
                trace.trace_json,
                trace.trace_id,
            ],
        )

    def save_trace(self, trace: TraceRow, evaluations: Sequence[EvaluationRow] = ()) -> None:
        self.save_traces([(trace, evaluations)])

    def save_traces(self, items: Sequence[tuple[TraceRow, Sequence[EvaluationRow]]]) -> None:
        with self._transaction() as cursor:
            ids = [trace.trace_id for trace, _ in items]
            stored: set[str] = set()
            for first in range(0, len(ids), 500):
                chunk = ids[first : first + 500]
                marks = ", ".join("?" for _ in chunk)
                stored.update(
                    r[0]
                    for r in self._run(
                        cursor, f"SELECT trace_id FROM traces WHERE trace_id IN ({marks})", chunk
                    ).fetchall()
                )
            with self._pipelined(cursor):
                for trace, evaluations in items:
                    self._save_trace(cursor, trace)
                    self._insert_evaluations(cursor, evaluations)
                    if trace.trace_id in stored:  # its answers so far count too: read them
                        self._digest(cursor, trace.trace_id)
                    else:  # all there is to know is at hand: no read, no wait
                        self._digest_new(cursor, trace, evaluations)

    def _digest_new(
        self, cursor: Any, trace: TraceRow, evaluations: Sequence[EvaluationRow]
    ) -> None:
        latest: dict[str, str] = {}
        for e in sorted(evaluations, key=lambda e: (e.created_at, e.id)):
            if e.kind == "trace" and e.trace_id == trace.trace_id:
                latest[e.criterion] = e.response
        start = trace.start_time if trace.start_time is not None else trace.first_seen
        found = self._digested(trace.trace_id, trace.trace_json, list(latest.values()))
        found.verdict = settled_verdict(found.verdict, trace.status)
        self._write_digest(cursor, trace.trace_id, found, start, None, new=True)

    def _save_trace(self, cursor: Any, trace: TraceRow) -> None:
        """Insert or replace a trace posted for evaluation (its start time stays the
        earliest one known)."""
        self._run(
            cursor,
            f"INSERT INTO traces ({_TRACE_COLUMNS}) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (trace_id) DO UPDATE SET "
            "status = excluded.status, last_span_at = excluded.last_span_at, "
            "start_time = CASE WHEN traces.start_time IS NULL OR "
            "excluded.start_time < traces.start_time THEN excluded.start_time "
            "ELSE traces.start_time END, root_agent = excluded.root_agent, "
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
                trace.start_time if trace.start_time is not None else trace.first_seen,
                trace.root_agent,
                json.dumps([storable(a) for a in trace.agents]),
                trace.trace_json,
                trace.error,
            ],
        )
        self._put_pairs(cursor, "trace_tags", trace.trace_id, trace.tags)
        self._put_pairs(cursor, "trace_resource", trace.trace_id, trace.resource)

    def save_evaluations(self, evaluations: Sequence[EvaluationRow]) -> None:
        if evaluations:
            with self._transaction() as cursor:
                self._insert_evaluations(cursor, evaluations)
                self._digest_all(cursor, {e.trace_id for e in evaluations if e.trace_id})

    def _insert_evaluations(self, cursor: Any, evaluations: Sequence[EvaluationRow]) -> None:
        self._run_many(
            cursor,
            f"INSERT INTO evaluations ({_EVALUATION_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
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
                )
                for e in evaluations
            ],
        )

    # ------------------------------------------------------------------ digests

    def _digest_all(self, cursor: Any, trace_ids: Iterable[str]) -> None:
        for trace_id in sorted(trace_ids):
            self._digest(cursor, trace_id)

    def _digest(self, cursor: Any, trace_id: str) -> None:
        """Compute and write what the list reads of a trace (see the module docstring)."""
        row = self._run(
            cursor,
            "SELECT trace_json, start_time, end_time, status FROM traces WHERE trace_id = ?",
            [trace_id],
        ).fetchone()
        if row is None:
            return  # evaluations of a trace that is not stored (a chat's trace_id)
        trace_json, start_time, end_time, status = row
        latest: dict[str, str] = {}
        for criterion, response in self._run(
            cursor,
            "SELECT criterion, response FROM evaluations WHERE trace_id = ? AND kind = 'trace' "
            "ORDER BY created_at, id",
            [trace_id],
        ).fetchall():
            latest[criterion] = response
        found = self._digested(trace_id, trace_json, list(latest.values()))
        found.verdict = settled_verdict(found.verdict, status)
        self._write_digest(cursor, trace_id, found, start_time, end_time)

    def _digested(self, trace_id: str, trace_json: str | None, responses: list[str]) -> TraceDigest:
        try:
            return digest(trace_json, responses, self.prices)
        except ValueError:
            # Not a trace or answers this server wrote: keep it listed, with nothing computed.
            logger.warning("tracejudge: trace %s cannot be digested", trace_id, exc_info=True)
            return TraceDigest()

    def _write_digest(
        self,
        cursor: Any,
        trace_id: str,
        found: TraceDigest,
        start_time: float | None,
        end_time: float | None,
        *,
        new: bool = False,
    ) -> None:
        """Write a digest; `new`: the trace was stored in this transaction, so it has no
        agents, scores or document to take out first."""
        starts = [t for t in (start_time, found.start_time) if t is not None]
        ends = [t for t in (end_time, found.end_time) if t is not None]
        start = min(starts) if starts else None
        end = max(ends) if ends else None
        self._run(
            cursor,
            "UPDATE traces SET start_time = ?, end_time = ?, duration = ?, agent_count = ?, "
            "model_calls = ?, input_tokens = ?, output_tokens = ?, tokens = ?, cost = ?, "
            "models = ?, worst_score = ?, worst_agent = ?, worst_criterion = ?, "
            "failing_agents = ?, failing_pairs = ?, verdict = ?, digested = ?, "
            "agents = COALESCE(?, agents) WHERE trace_id = ?",
            [
                start,
                end,
                max(0.0, end - start) if start is not None and end is not None else None,
                len(found.agents),
                found.model_calls,
                found.input_tokens,
                found.output_tokens,
                found.input_tokens + found.output_tokens,
                found.cost,
                json.dumps(found.models),
                found.worst_score,
                found.worst_agent,
                found.worst_criterion,
                found.failing_agents,
                found.failing_pairs,
                found.verdict,
                DIGEST_VERSION,
                json.dumps([storable(a) for a in found.agents]) if found.agents else None,
                trace_id,
            ],
        )
        if found.agents:
            if not new:
                self._run(cursor, "DELETE FROM trace_agent_keys WHERE trace_id = ?", [trace_id])
            worst: dict[str, float | None] = {agent_key(name): None for name in found.agents}
            for score in found.scores:
                if score.score is not None and score.state == "scored":
                    key = agent_key(score.agent_name)
                    known = worst.get(key)
                    worst[key] = score.score if known is None else min(known, score.score)
            self._run_many(
                cursor,
                "INSERT INTO trace_agent_keys (trace_id, agent_key, worst_score) VALUES (?, ?, ?)",
                [(trace_id, key, value) for key, value in sorted(worst.items())],
            )
            self._run_many(
                cursor,
                "INSERT INTO agent_names (agent_key) VALUES (?) ON CONFLICT DO NOTHING",
                [(key,) for key in sorted(worst)],
            )
        if not new:
            self._run(cursor, "DELETE FROM agent_scores WHERE trace_id = ?", [trace_id])
            self._run(cursor, "DELETE FROM trace_criteria WHERE trace_id = ?", [trace_id])
        by_criterion: dict[str, list[float]] = {}
        failing: dict[str, int] = {}
        for score in found.scores:
            by_criterion.setdefault(score.criterion, [])
            failing[score.criterion] = failing.get(score.criterion, 0) + int(score.failing)
            if score.score is not None and score.state == "scored":
                by_criterion[score.criterion].append(score.score)
        self._run_many(
            cursor,
            "INSERT INTO trace_criteria (trace_id, criterion, worst_score, failing) "
            "VALUES (?, ?, ?, ?)",
            [
                (trace_id, criterion, min(given) if given else None, failing[criterion])
                for criterion, given in sorted(by_criterion.items())
            ],
        )
        self._run_many(
            cursor,
            "INSERT INTO agent_scores (trace_id, criterion, agent_instance_id, agent_name, "
            "agent_key, score, fail_under, failing, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    trace_id,
                    score.criterion,
                    score.agent_instance_id,
                    score.agent_name,
                    agent_key(score.agent_name),
                    score.score,
                    score.fail_under,
                    int(score.failing),
                    score.state,
                )
                for score in found.scores
            ],
        )
        self._index(cursor, trace_id, index_words(found.text), new=new)

    def _pipelined(self, cursor: Any) -> AbstractContextManager[Any]:
        """Statements sent without waiting for each answer, where the driver can
        (PostgreSQL's pipeline mode); a read still waits for its own."""
        return contextlib.nullcontext()

    def _index(  # pragma: no cover
        self, cursor: Any, trace_id: str, words: str, *, new: bool = False
    ) -> None:
        """Put the trace's words in the full-text index (none: take it out); `new`: the
        trace has no document yet."""
        raise NotImplementedError

    def _searching(self, cursor: Any) -> None:
        """Set up the transaction for reading the full-text index (nothing on SQLite)."""

    def _search(self, query: SearchQuery) -> Side:  # pragma: no cover
        """The traces that match `query`, as a condition on the full-text index."""
        raise NotImplementedError

    def digest_pending(self, batch: int = 200) -> int:
        done = 0
        while True:
            with self._transaction() as cursor:
                ids = [
                    r[0]
                    for r in self._run(
                        cursor,
                        "SELECT trace_id FROM traces WHERE digested < ? ORDER BY trace_id "
                        f"LIMIT ?{self.lock_rows}",
                        [DIGEST_VERSION, batch],
                    ).fetchall()
                ]
                self._digest_all(cursor, ids)
            done += len(ids)
            if len(ids) < batch:
                return done

    # ------------------------------------------------------------------ reading

    def get_trace(self, trace_id: str) -> TraceRow | None:
        with self._transaction() as cursor:
            row = self._run(
                cursor, f"SELECT {_FULL_COLUMNS} FROM traces WHERE trace_id = ?", [trace_id]
            ).fetchone()
            if row is None:
                return None
            trace = _trace(row)
            self._decorate(cursor, [trace])
        return trace

    def _decorate(self, cursor: Any, traces: list[TraceRow]) -> None:
        """Fill each trace's tags, resource attributes and latest score per criterion."""
        if not traces:
            return
        by_id = {t.trace_id: t for t in traces}
        marks = ", ".join("?" for _ in by_id)
        ids = list(by_id)
        for trace_id, key, value in self._run(
            cursor, f"SELECT trace_id, key, value FROM trace_tags WHERE trace_id IN ({marks})", ids
        ).fetchall():
            by_id[trace_id].tags[key] = value
        for trace_id, key, value in self._run(
            cursor,
            f"SELECT trace_id, key, value FROM trace_resource WHERE trace_id IN ({marks})",
            ids,
        ).fetchall():
            by_id[trace_id].resource[key] = value
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

    def list_traces(
        self,
        where: TraceFilter,
        limit: int,
        cursor: str | None,
        order: TraceOrder | None = None,
    ) -> TracePage:
        order = order or TraceOrder()
        start = Cursor.decode(cursor, order) if cursor is not None else None
        backwards = start is not None and start.backwards
        column = _SORT_COLUMNS[order.sort]
        with self._transaction() as db:
            if where.q is not None:
                self._searching(db)
            found = self._conditions(db, where)
            total = self._count(db, found)
            probe = self._probes(db, found, order, total, limit, backwards)
            paged, params = found.sql(probe=probe, few=True)  # a page's walk
            if start is not None:
                condition, values = keyset(start)
                paged.append(condition)
                params.extend(values)
            rows = (
                self._run(
                    db,
                    f"SELECT {_LISTED_COLUMNS}, {column} FROM traces{_where(paged)} "
                    f"ORDER BY {order_by(order, backwards=backwards)} LIMIT ?",
                    [*params, limit + 1],
                ).fetchall()
                if total
                else []
            )
            more = len(rows) > limit
            rows = rows[:limit]
            if backwards:
                rows.reverse()
            traces = [_trace(r) for r in rows]
            self._decorate(db, traces)
        if start is None:
            offset = 0
        elif backwards:
            offset = max(0, start.offset - len(rows))
        else:
            offset = start.offset
        following = previous = None
        if rows and (more if not backwards else True):
            last = rows[-1]
            following = Cursor(order, last[-1], last[0], False, offset + len(rows)).encode()
        if rows and (more if backwards else start is not None):
            first = rows[0]
            previous = Cursor(order, first[-1], first[0], True, offset).encode()
        if backwards and not more:
            offset = 0  # the first page, however many rows came or went meanwhile
        return TracePage(
            traces=traces, cursor=following, total=total, previous=previous, offset=offset
        )

    def _conditions(self, db: Any, where: TraceFilter) -> Conditions:
        def names(low: str, high: str | None) -> list[str]:
            bound, values = (
                ("agent_key >= ?", [low])
                if high is None
                else (
                    "agent_key >= ? AND agent_key < ?",
                    [low, high],
                )
            )
            return [
                r[0]
                for r in self._run(
                    db, f"SELECT agent_key FROM agent_names WHERE {bound}", values
                ).fetchall()
            ]

        return conditions(where, self._search, names)

    def _count(self, db: Any, found: Conditions) -> int:
        """How many traces the conditions keep (where this store picks the joins, it
        picks them on the way: see `Conditions.drive`)."""
        if not found.parts:
            return self._stored(db)
        side = found.only_side()
        if side is not None:  # count them where they are
            return int(self._run(db, side.count(), side.params).fetchone()[0])
        sides = found.sides()
        if self.picks_joins and len(found.parts) > 1 and sides:
            # start from the side with the fewest rows (each counted on its index)
            found.drive(
                {n: int(self._run(db, s.count(), s.params).fetchone()[0]) for n, s in sides}
            )
        sql, params = found.sql(probe=not self.picks_joins)
        total = self._run(db, f"SELECT COUNT(*) FROM traces{_where(sql)}", params).fetchone()
        return int(total[0])

    def _stored(self, db: Any) -> int:
        """How many traces are stored."""
        return int(self._run(db, "SELECT COUNT(*) FROM traces").fetchone()[0])

    def _probes(
        self,
        db: Any,
        found: Conditions,
        order: TraceOrder,
        total: int,
        wanted: int,
        backwards: bool = False,
    ) -> bool:
        """Whether to probe the side tables per trace (`EXISTS`) rather than read them
        as sets, to read `wanted` of the `total` traces in `order`."""
        if not self.picks_joins:
            return True  # semi-joins (anti-joins for NOT EXISTS) the planner orders itself
        if backwards or not found.sides():
            return False
        return probes_pay(order, total, self._stored(db), wanted)

    def overview(self, where: TraceFilter, limit: int, total: int | None = None) -> Overview:
        newest = TraceOrder()
        with self._transaction() as db:
            if where.q is not None:
                self._searching(db)
            kept = self._conditions(db, where)
            if total is None:  # else the caller counted them (the list page, with its page)
                total = self._count(db, kept)
            found, params = kept.sql(probe=self._probes(db, kept, newest, total, limit))
            picked = (
                f"SELECT traces.trace_id FROM traces{_where(found)} "
                f"ORDER BY {order_by(newest)} LIMIT ?"
            )
            covered = min(total, limit)
            # How many instances got each score (scores repeat: a check's are a few
            # fractions, a judge's ten grades), from which the statistics are exact.
            counted = self._run(
                db,
                f"WITH picked AS ({picked}) SELECT s.agent_name, s.criterion, s.score, "
                "COUNT(*), SUM(s.failing) FROM agent_scores s JOIN picked p "
                "ON p.trace_id = s.trace_id WHERE s.score IS NOT NULL "
                "GROUP BY s.agent_name, s.criterion, s.score",
                [*params, limit],
            ).fetchall()
        groups: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
        for name, criterion, score, count, failing in counted:
            groups.setdefault((name, criterion), []).append(
                (float(score), int(count), int(failing or 0))
            )
        listed = [
            _overview_row(name, criterion, values) for (name, criterion), values in groups.items()
        ]
        listed.sort(key=lambda r: (-r.failing, r.agent_name, r.criterion))
        return Overview(rows=listed, traces=int(covered))

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
