"""The labels repository: people's labels on agent instances of stored traces, and the
latest attribution stored per trace (migration 5's tables).

Labels page newest first by (created_at, id), the cursor naming the last one shown.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

from tracejudge.server.store._core import SQLCore, where_clause
from tracejudge.server.store.base import AttributionRow, LabelPage, LabelRow

__all__ = ["Attributions", "LabelCursorError", "Labels"]

_LABEL_COLUMNS = (
    "id, trace_id, agent, agent_instance_id, criterion, stance, who, created_at, verdict, "
    "score, judge_score, bar, note"
)


class LabelCursorError(ValueError):
    """A labels cursor this server did not hand out."""


def _encode(created_at: float, label_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([created_at, label_id]).encode()).decode()


def _decode(cursor: str) -> tuple[float, str]:
    try:
        created_at, label_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(created_at), str(label_id)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise LabelCursorError(
            "cursor is not one this server handed out: pass the `next_cursor` of the previous page"
        ) from exc


def _label(row: Sequence[Any]) -> LabelRow:
    return LabelRow(*row)


class Labels:
    """People's labels through `core`."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    def save(self, label: LabelRow) -> None:
        """Insert `label`, or replace the one with its id (same trace, agent instance,
        criterion and person)."""
        values = [
            label.id,
            label.trace_id,
            label.agent,
            label.agent_instance_id,
            label.criterion,
            label.stance,
            label.who,
            label.created_at,
            label.verdict,
            label.score,
            label.judge_score,
            label.bar,
            label.note,
        ]
        updated = [c.strip() for c in _LABEL_COLUMNS.split(",")][1:]
        with self.core.transaction() as cursor:
            self.core.run(
                cursor,
                f"INSERT INTO human_labels ({_LABEL_COLUMNS}) VALUES "
                f"({', '.join('?' for _ in values)}) ON CONFLICT (id) DO UPDATE SET "
                + ", ".join(f"{c} = excluded.{c}" for c in updated),
                values,
            )

    def page(self, trace_id: str | None, limit: int, cursor: str | None) -> LabelPage:
        """Labels newest first (of one trace when `trace_id` is given), a page at a time."""
        conditions: list[str] = []
        params: list[Any] = []
        if trace_id is not None:
            conditions.append("trace_id = ?")
            params.append(trace_id)
        if cursor is not None:
            created_at, label_id = _decode(cursor)
            conditions.append("(created_at < ? OR (created_at = ? AND id < ?))")
            params.extend([created_at, created_at, label_id])
        with self.core.transaction() as db:
            rows = self.core.run(
                db,
                f"SELECT {_LABEL_COLUMNS} FROM human_labels{where_clause(conditions)} "
                "ORDER BY created_at DESC, id DESC LIMIT ?",
                [*params, limit + 1],
            ).fetchall()
        labels = [_label(r) for r in rows[:limit]]
        more = len(rows) > limit and labels
        return LabelPage(
            labels=labels,
            cursor=_encode(labels[-1].created_at, labels[-1].id) if more else None,
        )

    def all(self, trace_id: str | None = None) -> list[LabelRow]:
        """Every label (of one trace when `trace_id` is given), oldest first."""
        clause, params = ("WHERE trace_id = ? ", [trace_id]) if trace_id is not None else ("", [])
        with self.core.transaction() as db:
            rows = self.core.run(
                db,
                f"SELECT {_LABEL_COLUMNS} FROM human_labels {clause}ORDER BY created_at, id",
                params,
            ).fetchall()
        return [_label(r) for r in rows]


class Attributions:
    """The latest attribution made with a judge method, per trace, through `core`."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    def save(self, row: AttributionRow) -> None:
        """Keep `row` as its trace's latest attribution."""
        with self.core.transaction() as cursor:
            self.core.run(
                cursor,
                "INSERT INTO attributions (trace_id, methods, body, created_at) VALUES "
                "(?, ?, ?, ?) ON CONFLICT (trace_id) DO UPDATE SET methods = excluded.methods, "
                "body = excluded.body, created_at = excluded.created_at",
                [row.trace_id, json.dumps(row.methods), row.body, row.created_at],
            )

    def latest(self, trace_id: str) -> AttributionRow | None:
        with self.core.transaction() as cursor:
            found = self.core.run(
                cursor,
                "SELECT trace_id, methods, body, created_at FROM attributions WHERE trace_id = ?",
                [trace_id],
            ).fetchone()
        if found is None:
            return None
        return AttributionRow(found[0], json.loads(found[1]), found[2], found[3])
