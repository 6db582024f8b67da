"""The runs repository: experiment runs stored on the server (migration 9's tables).

A run is its record (what identifies it: name, git commit, models, params, times, cost;
JSON text) and its row results, one per row and repeat (JSON text, in the order the run
gave them), each naming the trace it scored. A row's trace is stored with the traces (the
trace list shows it, tagged with the run) and the answers it was scored with (source
"run"), in the transaction that stores its result. Storing a run, a result or a row's
answers again replaces them, so an upload that is retried stores each once. Runs page
newest first by (created_at, id), the cursor naming the last one shown.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.server.store._core import SQLCore, where_clause
from tracejudge.server.store._digests import Digests
from tracejudge.server.store.base import EvaluationRow, TraceRow
from tracejudge.server.store.evaluations import Evaluations
from tracejudge.server.store.traces import Traces

__all__ = ["RUN_SOURCE", "RunCursorError", "RunPage", "RunResultRow", "RunRow", "Runs"]

#: The source of a run's traces and of the answers stored with them.
RUN_SOURCE = "run"


@dataclass
class RunRow:
    """A stored run: `record` is the run's record as JSON text; `results` counts the row
    results stored (filled by reads)."""

    id: str
    name: str
    record: str
    created_at: float
    results: int = 0


@dataclass
class RunResultRow:
    """One row result of a run (one row, one repeat): `result` is the result as JSON text;
    `position` its place in the run."""

    run_id: str
    row_id: str
    repeat: int
    position: int
    result: str
    trace_id: str | None = None


@dataclass
class RunPage:
    """One page of runs, newest first; `cursor` reads the next page (None: last page)."""

    runs: list[RunRow] = field(default_factory=list)
    cursor: str | None = None


class RunCursorError(ValueError):
    """A runs cursor this server did not hand out."""


def _encode(created_at: float, run_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([created_at, run_id]).encode()).decode()


def _decode(cursor: str) -> tuple[float, str]:
    try:
        created_at, run_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(created_at), str(run_id)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise RunCursorError(
            "cursor is not one this server handed out: pass the `next_cursor` of the previous page"
        ) from exc


_RUN = (
    "r.id, r.name, r.record, r.created_at, "
    "(SELECT COUNT(*) FROM run_results x WHERE x.run_id = r.id)"
)


def _run(row: Sequence[Any]) -> RunRow:
    return RunRow(str(row[0]), str(row[1]), str(row[2]), float(row[3]), int(row[4]))


class Runs:
    """Experiment runs through `core`; a row's trace and answers go to `traces` and
    `evaluations` in the same transaction, `digests` keeping the list's columns."""

    def __init__(
        self, core: SQLCore, traces: Traces, evaluations: Evaluations, digests: Digests
    ) -> None:
        self.core = core
        self.traces = traces
        self.evaluations = evaluations
        self.digests = digests

    def save(self, run: RunRow) -> None:
        """Insert `run`, or replace the record of the run with its id (its time and its
        results stay)."""
        with self.core.transaction() as cursor:
            self.core.run(
                cursor,
                "INSERT INTO runs (id, name, record, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET name = excluded.name, record = excluded.record",
                [run.id, run.name, run.record, run.created_at],
            )

    def add_results(
        self,
        results: Sequence[RunResultRow],
        traces: Sequence[tuple[TraceRow, Sequence[EvaluationRow]]] = (),
    ) -> None:
        """Store row results (each replacing the one of its run, row and repeat), and the
        rows' traces with their answers (each trace's answers from a run replaced)."""
        if not results and not traces:
            return
        with self.core.transaction() as cursor:
            for trace, evaluations in sorted(traces, key=lambda item: item[0].trace_id):
                self.evaluations.delete_source(cursor, trace.trace_id, RUN_SOURCE)
                self.traces.write_posted(cursor, trace)
                self.evaluations.insert(cursor, evaluations)
                self.digests.refresh(cursor, trace.trace_id)
            if not results:
                return
            self.core.run_many(
                cursor,
                "INSERT INTO run_results (run_id, row_id, repeat_index, position, trace_id, "
                "result) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, row_id, repeat_index) "
                "DO UPDATE SET position = excluded.position, trace_id = excluded.trace_id, "
                "result = excluded.result",
                [(r.run_id, r.row_id, r.repeat, r.position, r.trace_id, r.result) for r in results],
            )

    def get(self, run_id: str) -> RunRow | None:
        """The run `run_id` (None: unknown)."""
        with self.core.transaction() as cursor:
            found = self.core.run(
                cursor, f"SELECT {_RUN} FROM runs r WHERE r.id = ?", [run_id]
            ).fetchone()
        return _run(found) if found is not None else None

    def latest_named(self, name: str) -> RunRow | None:
        """The newest run called `name` (None: none is)."""
        page = self.page(1, None, name=name)
        return page.runs[0] if page.runs else None

    def results(self, run_id: str) -> list[RunResultRow]:
        """The run's row results in the run's order."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                "SELECT run_id, row_id, repeat_index, position, result, trace_id "
                "FROM run_results WHERE run_id = ? ORDER BY position, row_id, repeat_index",
                [run_id],
            ).fetchall()
        return [RunResultRow(str(r[0]), str(r[1]), int(r[2]), int(r[3]), r[4], r[5]) for r in rows]

    def page(self, limit: int, cursor: str | None, *, name: str | None = None) -> RunPage:
        """Runs newest first (those called `name` when given), a page at a time."""
        conditions: list[str] = []
        params: list[Any] = []
        if name is not None:
            conditions.append("r.name = ?")
            params.append(name)
        if cursor is not None:
            created_at, run_id = _decode(cursor)
            conditions.append("(r.created_at < ? OR (r.created_at = ? AND r.id < ?))")
            params.extend([created_at, created_at, run_id])
        with self.core.transaction() as db:
            rows = self.core.run(
                db,
                f"SELECT {_RUN} FROM runs r{where_clause(conditions)} "
                "ORDER BY r.created_at DESC, r.id DESC LIMIT ?",
                [*params, limit + 1],
            ).fetchall()
        runs = [_run(r) for r in rows[:limit]]
        more = len(rows) > limit and runs
        return RunPage(runs, _encode(runs[-1].created_at, runs[-1].id) if more else None)
