"""The evaluations repository: each criterion's answer, kept beside its trace (or alone,
for a scored chat). Saving answers refreshes their traces' digests in the same
transaction, so the list always shows the latest answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tracejudge.server.store._core import SQLCore
from tracejudge.server.store._digests import Digests
from tracejudge.server.store.base import EvaluationRow

__all__ = ["Evaluations"]

_COLUMNS = (
    "id, trace_id, kind, source, criterion, overall_score, response, tags, created_at, "
    "judge_cost_usd"
)


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


class Evaluations:
    """Evaluations through `core`; `digests` keeps their traces' list columns current."""

    def __init__(self, core: SQLCore, digests: Digests) -> None:
        self.core = core
        self.digests = digests

    def save(self, evaluations: Sequence[EvaluationRow]) -> None:
        """Store answers (one transaction) and refresh the digests of their traces."""
        if evaluations:
            with self.core.transaction() as cursor:
                self.insert(cursor, evaluations)
                self.digests.refresh_all(cursor, {e.trace_id for e in evaluations if e.trace_id})

    def of_trace(self, trace_id: str) -> list[EvaluationRow]:
        """A trace's answers, oldest first."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                f"SELECT {_COLUMNS} FROM evaluations WHERE trace_id = ? ORDER BY created_at, id",
                [trace_id],
            ).fetchall()
        return [_evaluation(r) for r in rows]

    def insert(self, cursor: Any, evaluations: Sequence[EvaluationRow]) -> None:
        """Insert answers in the caller's transaction (their digests are the caller's)."""
        self.core.run_many(
            cursor,
            f"INSERT INTO evaluations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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

    def delete_source(self, cursor: Any, trace_id: str, source: str) -> None:
        """Take out a trace's answers of one source (a re-score replaces them)."""
        self.core.run(
            cursor,
            "DELETE FROM evaluations WHERE trace_id = ? AND source = ?",
            [trace_id, source],
        )
