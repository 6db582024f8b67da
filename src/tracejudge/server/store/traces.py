"""The traces repository: ingested spans, traces posted for evaluation, their completion
and retention.

Spans arrive in batches (`add_spans`); a trace quiet long enough is queued for scoring
with its task in one transaction (`queue_complete`). A trace written here has its digest
(the list's columns) written in the same transaction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from tracejudge import semconv
from tracejudge.server.store._core import SQLCore, storable
from tracejudge.server.store._digests import Digests
from tracejudge.server.store._task_rows import insert_task
from tracejudge.server.store.base import (
    EvaluationRow,
    SpanBatch,
    SpanEncoding,
    TaskRow,
    TraceRow,
    too_large_reason,
)
from tracejudge.server.store.evaluations import Evaluations

__all__ = ["Traces", "LISTED_COLUMNS", "decorate", "trace_row"]

_COLUMNS = (
    "trace_id, source, status, first_seen, last_span_at, span_count, root_ended, "
    "start_time, root_agent, agents, trace_json, error"
)
#: What a list reads of each trace: everything but its JSON.
LISTED_COLUMNS = (
    "traces.trace_id, source, status, first_seen, last_span_at, span_count, root_ended, "
    "start_time, root_agent, agents, NULL, error, end_time, duration, agent_count, "
    "model_calls, input_tokens, output_tokens, cost, models, worst_score, worst_agent, "
    "worst_criterion, failing_agents, failing_pairs, verdict, service"
)
_FULL_COLUMNS = LISTED_COLUMNS.replace("NULL", "trace_json", 1)
#: What is kept of a trace beside its row (its full-text document apart), for retention.
SIDE_TABLES = (
    "trace_tags",
    "trace_resource",
    "agent_scores",
    "trace_agent_keys",
    "trace_criteria",
    "attributions",
    "human_labels",
    "trace_rules",
    "trace_sessions",
    "trend_marks",  # what the trace added to the trends (the trends themselves stay)
)
#: Rows deleted per statement by the retention sweep.
_DELETE_BATCH = 500
#: The statement that stores one batch's trace row (opened, or reopened and widened).
_UPSERT_SPANS = (
    "INSERT INTO traces (trace_id, source, status, first_seen, last_span_at, "
    "root_ended, span_count, start_time, end_time, duration, service) "
    "VALUES (?, 'otlp', 'open', ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (trace_id) DO UPDATE SET "
    "status = CASE WHEN traces.status = 'too_large' THEN 'too_large' ELSE 'open' END, "
    "last_span_at = excluded.last_span_at, "
    "root_ended = CASE WHEN excluded.root_ended = 1 THEN 1 ELSE traces.root_ended END, "
    "span_count = traces.span_count + excluded.span_count, "
    "start_time = CASE WHEN traces.start_time IS NULL OR "
    "excluded.start_time < traces.start_time THEN excluded.start_time "
    "ELSE traces.start_time END, "
    "end_time = CASE WHEN traces.end_time IS NULL OR "
    "excluded.end_time > traces.end_time THEN excluded.end_time "
    "ELSE traces.end_time END, "
    "service = COALESCE(traces.service, excluded.service) "
    "RETURNING span_count, status"
)


def trace_row(row: Sequence[Any]) -> TraceRow:
    """A trace from a row of `LISTED_COLUMNS` (or the full columns)."""
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


def decorate(core: SQLCore, cursor: Any, traces: list[TraceRow]) -> None:
    """Fill each trace's tags, resource attributes, latest score per criterion and judge
    cost."""
    if not traces:
        return
    by_id = {t.trace_id: t for t in traces}
    marks = ", ".join("?" for _ in by_id)
    ids = list(by_id)
    for trace_id, key, value in core.run(
        cursor, f"SELECT trace_id, key, value FROM trace_tags WHERE trace_id IN ({marks})", ids
    ).fetchall():
        by_id[trace_id].tags[key] = value
    for trace_id, key, value in core.run(
        cursor, f"SELECT trace_id, key, value FROM trace_resource WHERE trace_id IN ({marks})", ids
    ).fetchall():
        by_id[trace_id].resource[key] = value
    for trace_id, criterion, overall, cost in core.run(
        cursor,
        "SELECT trace_id, criterion, overall_score, judge_cost_usd FROM evaluations "
        f"WHERE trace_id IN ({marks}) ORDER BY created_at, id",
        ids,
    ).fetchall():
        trace = by_id[trace_id]
        trace.scores[criterion] = overall
        if cost is not None:
            trace.judge_cost_usd = (trace.judge_cost_usd or 0.0) + cost


class Traces:
    """Traces through `core`, their digests by `digests`, their answers by `evaluations`."""

    def __init__(self, core: SQLCore, digests: Digests, evaluations: Evaluations) -> None:
        self.core = core
        self.digests = digests
        self.evaluations = evaluations

    # ------------------------------------------------------------------ ingest

    def add_spans(
        self, batches: Sequence[SpanBatch], max_trace_spans: int | None = None
    ) -> dict[str, int]:
        """Store span batches; their traces are (re)opened and their quiet period restarts.
        A trace whose span count passes `max_trace_spans` becomes too_large (verdict
        unscored): its batches are deleted, later ones are counted and not kept. Returns,
        per trace, the spans of `batches` not kept (none: an empty dict)."""
        now = time.time()
        rejected: dict[str, int] = {}
        # One lock order for every writer (PostgreSQL would otherwise deadlock two
        # requests that carry spans of the same traces in another order).
        ordered = sorted(batches, key=lambda b: b.trace_id)
        with self.core.transaction() as cursor:
            for batch in ordered:
                if not self._add_batch(cursor, batch, now, max_trace_spans):
                    rejected[batch.trace_id] = rejected.get(batch.trace_id, 0) + batch.span_count
        return rejected

    def _add_batch(
        self, cursor: Any, batch: SpanBatch, now: float, max_trace_spans: int | None
    ) -> bool:
        """Store one batch; False when its spans are not kept (its trace is too_large)."""
        start = batch.start if batch.start is not None else now
        count, status = self.core.run(
            cursor,
            _UPSERT_SPANS,
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
        self.core.run(
            cursor,
            "UPDATE traces SET duration = end_time - start_time "
            "WHERE trace_id = ? AND end_time IS NOT NULL",
            [batch.trace_id],
        )
        if status == "too_large":
            return False  # counted, not kept
        if max_trace_spans is not None and count > max_trace_spans:
            # Never to be scored: its verdict is unscored, not pending (see digest).
            self.core.run(
                cursor,
                "UPDATE traces SET status = 'too_large', error = ?, verdict = 'unscored' "
                "WHERE trace_id = ?",
                [too_large_reason(max_trace_spans), batch.trace_id],
            )
            self.core.run(cursor, "DELETE FROM span_batches WHERE trace_id = ?", [batch.trace_id])
            return False
        self.core.run(
            cursor,
            "INSERT INTO span_batches (trace_id, payload, encoding, body, received_at) "
            "VALUES (?, '', ?, ?, ?)",
            [batch.trace_id, batch.encoding, batch.payload, now],
        )
        self._put_pairs(cursor, "trace_tags", batch.trace_id, batch.tags)
        self._put_pairs(cursor, "trace_resource", batch.trace_id, batch.resource)
        return True

    def _put_pairs(self, cursor: Any, table: str, trace_id: str, pairs: dict[str, str]) -> None:
        """Set keys of a trace's tags or resource attributes (`table`), in key order."""
        self.core.run_many(
            cursor,
            f"INSERT INTO {table} (trace_id, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (trace_id, key) DO UPDATE SET value = excluded.value",
            [(trace_id, key, value) for key, value in sorted(pairs.items())],
        )

    def queue_complete(
        self,
        quiet_seconds: float,
        timeout_seconds: float,
        limit: int,
        make_task: Callable[[str], TaskRow],
    ) -> list[str]:
        """Mark traces complete (root ended and quiet for `quiet_seconds`, or quiet for
        `timeout_seconds` without a root) and enqueue `make_task(trace_id)` for each, in the
        same transaction. Returns their ids."""
        now = time.time()
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                "UPDATE traces SET status = 'queued' WHERE trace_id IN (SELECT trace_id "
                "FROM traces WHERE status = 'open' AND ((root_ended = 1 AND last_span_at <= ?) "
                f"OR last_span_at <= ?) ORDER BY last_span_at LIMIT ?{self.core.lock_rows}) "
                "RETURNING trace_id",
                [now - quiet_seconds, now - timeout_seconds, limit],
            ).fetchall()
            ids = sorted(r[0] for r in rows)
            for trace_id in ids:
                insert_task(self.core, cursor, make_task(trace_id))
        return ids

    def backlog_size(self) -> int:
        """How many traces are stored and not scored yet (status open or queued): the
        intake's backpressure (#32 item 6) counts them with this one indexed query."""
        with self.core.transaction() as cursor:
            (count,) = self.core.run(
                cursor, "SELECT COUNT(*) FROM traces WHERE status IN ('open', 'queued')"
            ).fetchone()
        return int(count)

    def span_batches(self, trace_id: str) -> tuple[list[tuple[SpanEncoding, bytes]], int]:
        """The trace's span batches in arrival order, each (encoding, OTLP bytes), and its
        span count."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                "SELECT encoding, body, payload FROM span_batches WHERE trace_id = ? ORDER BY id",
                [trace_id],
            ).fetchall()
            row = self.core.run(
                cursor, "SELECT span_count FROM traces WHERE trace_id = ?", [trace_id]
            ).fetchone()
        # Rows of schema versions before 6 have no encoding: their payload is OTLP/JSON text.
        batches: list[tuple[SpanEncoding, bytes]] = [
            (encoding, bytes(body)) if encoding else ("json", payload.encode("utf-8"))
            for encoding, body, payload in rows
        ]
        return batches, (row[0] if row else 0)

    # ------------------------------------------------------------------ writes in a transaction

    def write_converted(self, cursor: Any, trace: TraceRow) -> None:
        """Write an ingested trace as converted; its status (and error) hold only if no span
        arrived meanwhile (otherwise it stays open, to be converted and scored again, or
        too_large, with the reason)."""
        self.core.run(
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

    def write_posted(self, cursor: Any, trace: TraceRow) -> None:
        """Insert or replace a trace posted for evaluation (its start time stays the
        earliest one known)."""
        self.core.run(
            cursor,
            f"INSERT INTO traces ({_COLUMNS}) VALUES "
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

    def fail_waiting(self, cursor: Any, trace_id: str, reason: str) -> None:
        """Fail a trace still queued for a scoring task that ended without scoring it."""
        self.core.run(
            cursor,
            "UPDATE traces SET status = 'failed', error = ? "
            "WHERE trace_id = ? AND status = 'queued'",
            [reason, trace_id],
        )

    # ------------------------------------------------------------------ posted traces

    def save(self, trace: TraceRow, evaluations: Sequence[EvaluationRow] = ()) -> None:
        """Insert or replace a trace posted for evaluation, with its evaluations."""
        self.save_many([(trace, evaluations)])

    def save_many(self, items: Sequence[tuple[TraceRow, Sequence[EvaluationRow]]]) -> None:
        """`save` for many traces in one transaction (imports, benchmarks)."""
        with self.core.transaction() as cursor:
            stored = self._stored_ids(cursor, [trace.trace_id for trace, _ in items])
            with self.core.pipelined(cursor):
                for trace, evaluations in items:
                    self.write_posted(cursor, trace)
                    self.evaluations.insert(cursor, evaluations)
                    if trace.trace_id in stored:  # its answers so far count too: read them
                        self.digests.refresh(cursor, trace.trace_id)
                    else:  # all there is to know is at hand: no read, no wait
                        self.digests.write_new(cursor, trace, evaluations)

    def _stored_ids(self, cursor: Any, ids: list[str]) -> set[str]:
        """Which of `ids` are stored already."""
        stored: set[str] = set()
        for first in range(0, len(ids), 500):
            chunk = ids[first : first + 500]
            marks = ", ".join("?" for _ in chunk)
            stored.update(
                r[0]
                for r in self.core.run(
                    cursor, f"SELECT trace_id FROM traces WHERE trace_id IN ({marks})", chunk
                ).fetchall()
            )
        return stored

    # ------------------------------------------------------------------ reading

    def get(self, trace_id: str) -> TraceRow | None:
        """A stored trace with its JSON, tags, resource and latest scores (None: unknown)."""
        with self.core.transaction() as cursor:
            row = self.core.run(
                cursor, f"SELECT {_FULL_COLUMNS} FROM traces WHERE trace_id = ?", [trace_id]
            ).fetchone()
            if row is None:
                return None
            trace = trace_row(row)
            decorate(self.core, cursor, [trace])
        return trace

    def digest_pending(self, batch: int = 200) -> int:
        """Compute the list's columns of traces stored before this version (or whose
        digest is older); returns how many were done."""
        return self.digests.pending(batch)

    # ------------------------------------------------------------------ retention

    def delete_before(self, cutoff: float) -> dict[str, int]:
        """Delete up to a batch of traces last active before `cutoff` (not those queued for
        scoring), with their span batches, tags and evaluations, and evaluations created
        before it. Returns the rows deleted per table; call again while any is non-zero."""
        deleted = {"traces": 0, "span_batches": 0, "evaluations": 0}
        with self.core.transaction() as cursor:
            ids = [
                r[0]
                for r in self.core.run(
                    cursor,
                    "SELECT trace_id FROM traces WHERE last_span_at < ? AND status <> 'queued' "
                    "ORDER BY last_span_at LIMIT ?",
                    [cutoff, _DELETE_BATCH],
                ).fetchall()
            ]
            if ids:
                deleted.update(self._delete_traces(cursor, ids))
            # Evaluations not tied to a trace (rewards), or older than their trace.
            deleted["evaluations"] += int(
                self.core.run(
                    cursor,
                    "DELETE FROM evaluations WHERE id IN (SELECT id FROM evaluations "
                    "WHERE created_at < ? LIMIT ?)",
                    [cutoff, _DELETE_BATCH],
                ).rowcount
            )
        return deleted

    def _delete_traces(self, cursor: Any, ids: list[str]) -> dict[str, int]:
        """Delete traces with everything kept of them; rows deleted per table."""
        marks = ", ".join("?" for _ in ids)
        for trace_id in ids:  # its full-text document, the dialect's way
            self.core.index(cursor, trace_id, "")
        for table in SIDE_TABLES:
            self.core.run(cursor, f"DELETE FROM {table} WHERE trace_id IN ({marks})", ids)
        deleted = {
            table: int(
                self.core.run(
                    cursor, f"DELETE FROM {table} WHERE trace_id IN ({marks})", ids
                ).rowcount
            )
            for table in ("span_batches", "evaluations")
        }
        gone = self.core.run(cursor, f"DELETE FROM traces WHERE trace_id IN ({marks})", ids)
        deleted["traces"] = int(gone.rowcount)
        return deleted
