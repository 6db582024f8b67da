"""People's labels and stored attributions in the store, on SQLite and PostgreSQL:
migration 5 applied (also to a database migrated before it), a label recorded again
replaced, pages newest first by cursor, a trace's labels apart from the others."""

from __future__ import annotations

import sqlite3

import pytest

from tracejudge.server.store import (
    SCHEMA_VERSION,
    AttributionRow,
    LabelCursorError,
    LabelRow,
    open_store,
)
from tracejudge.server.store.migrations import MIGRATIONS


def _label(n: int, trace: str = "t1", who: str = "ana", **fields: object) -> LabelRow:
    values: dict[str, object] = dict(
        id=f"{trace}-{n}-{who}",
        trace_id=trace,
        agent="writer",
        agent_instance_id=f"w{n}",
        criterion="final_answer",
        stance="agree",
        who=who,
        created_at=1000.0 + n,
        verdict="fail",
        judge_score=0.0,
        bar=1.0,
    )
    values.update(fields)
    return LabelRow(**values)  # type: ignore[arg-type]


def test_labels_are_kept_replaced_and_paged_newest_first(db_url: str) -> None:
    store = open_store(db_url)
    try:
        for n in range(5):
            store.labels.save(_label(n))
        store.labels.save(_label(9, trace="t2"))
        # the same (trace, agent, criterion, person) again: replaced, not added
        store.labels.save(
            _label(2, stance="score", verdict=None, score=0.25, note="half", created_at=2000.0)
        )
        every = store.labels.all()
        assert len(every) == 6
        assert [lbl.id for lbl in every][-1] == "t1-2-ana"  # oldest first: replaced is newest
        replaced = next(lbl for lbl in every if lbl.id == "t1-2-ana")
        assert (replaced.stance, replaced.verdict, replaced.score, replaced.note) == (
            "score",
            None,
            0.25,
            "half",
        )
        assert [lbl.trace_id for lbl in store.labels.all("t2")] == ["t2"]
        first = store.labels.page("t1", 2, None)
        assert [lbl.id for lbl in first.labels] == ["t1-2-ana", "t1-4-ana"]
        second = store.labels.page("t1", 2, first.cursor)
        assert [lbl.id for lbl in second.labels] == ["t1-3-ana", "t1-1-ana"]
        third = store.labels.page("t1", 2, second.cursor)
        assert [lbl.id for lbl in third.labels] == ["t1-0-ana"] and third.cursor is None
        assert len(store.labels.page(None, 50, None).labels) == 6
        with pytest.raises(LabelCursorError, match="next_cursor"):
            store.labels.page(None, 2, "not-a-cursor")
    finally:
        store.close()


def test_a_trace_keeps_its_latest_attribution(db_url: str) -> None:
    store = open_store(db_url)
    try:
        assert store.attributions.latest("t1") is None
        store.attributions.save(AttributionRow("t1", ["checks"], '{"failed": true}', 1.0))
        store.attributions.save(
            AttributionRow("t1", ["checks", "all_at_once"], '{"failed": false}', 2.0)
        )
        found = store.attributions.latest("t1")
        assert found == AttributionRow("t1", ["checks", "all_at_once"], '{"failed": false}', 2.0)
    finally:
        store.close()


def test_the_labels_migration_applies_to_a_database_of_an_earlier_schema(tmp_path) -> None:
    """A database migrated by the code before labels (versions up to 3) gets migration 5
    on the next start, its data kept; the schema version is the highest applied."""
    path = tmp_path / "old.db"
    connection = sqlite3.connect(path)
    connection.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT "
        "NULL, applied_at DOUBLE PRECISION NOT NULL)"
    )
    for migration in MIGRATIONS:
        if migration.version <= 3:
            for statement in migration.statements:
                connection.execute(statement.replace("{serial}", "INTEGER PRIMARY KEY"))
            connection.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, 0)",
                (migration.version, migration.description),
            )
    connection.commit()
    connection.close()
    store = open_store(str(path))
    try:
        assert store.migrate() == SCHEMA_VERSION == max(m.version for m in MIGRATIONS)
        store.labels.save(_label(1))
        assert len(store.labels.all()) == 1
    finally:
        store.close()
