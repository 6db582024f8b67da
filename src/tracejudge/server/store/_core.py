"""The dialect core: what differs between SQLite and PostgreSQL, and how a statement runs.

Every repository (tasks, traces, evaluations, labels, spend) writes its statements once,
with `?` placeholders, and runs them through a `SQLCore`: `transaction()` gives a cursor
inside one transaction, `run()` executes a statement (the PostgreSQL core turns `?` into
`%s`). The core supplies the few spellings that differ: the row lock of claims
(`FOR UPDATE SKIP LOCKED` on PostgreSQL, nothing on SQLite, whose `BEGIN IMMEDIATE`
already lets one writer in at a time, so several processes never take the same row), the
migrations' types, and the full-text index.

Text is stored the same on both databases: PostgreSQL cannot hold a NUL in a text
column and neither database can encode a lone surrogate, so every text parameter has
them replaced by U+FFFD (`storable`). The server refuses such text in what clients send
(422 naming the field); this is what keeps text found in ingested spans (an agent's name)
from failing a write. JSON columns hold escaped JSON, which keeps the text exactly.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from tracejudge.server.store._query import Side
from tracejudge.server.store._search import SearchQuery
from tracejudge.server.store.migrations import MIGRATIONS

__all__ = ["SQLCore", "storable", "where_clause"]

#: What neither database stores as text: NUL (PostgreSQL) and lone surrogates (both).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_REPLACEMENT = "\ufffd"


def storable(text: str) -> str:
    """`text` with NUL and lone surrogates replaced by U+FFFD."""
    if "\x00" not in text and (text.isascii() or not _UNSTORABLE.search(text)):
        return text
    return _UNSTORABLE.sub(_REPLACEMENT, text)


def _param(value: Any) -> Any:
    return storable(value) if isinstance(value, str) else value


def where_clause(conditions: Sequence[str]) -> str:
    """A WHERE clause of all `conditions` (none: no clause)."""
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


class SQLCore:
    """A database behind a DB-API connection; the dialects give `transaction` and the
    spellings below."""

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
    #: True when only one server process uses the database (SQLite): at start, tasks left
    #: running by a killed process can be taken back at once instead of after their lease.
    single_process = True
    #: Whether the store chooses how a list joins its side tables (SQLite's planner has no
    #: statistics unless ANALYZE ran; PostgreSQL's planner has them, and chooses).
    picks_joins = True

    def transaction(self) -> AbstractContextManager[Any]:  # pragma: no cover - abstract
        """A cursor inside one transaction: committed on success, rolled back on error."""
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def is_transient(self, error: BaseException) -> bool:
        """Whether `error` says the database is busy or unreachable for now (worth a retry),
        rather than that it refused what it was given."""
        return False

    def sql(self, statement: str) -> str:
        """`statement` in the driver's placeholder style."""
        return statement

    def run(self, cursor: Any, statement: str, params: Sequence[Any] = ()) -> Any:
        cursor.execute(self.sql(statement), tuple(_param(p) for p in params))
        return cursor

    def run_many(self, cursor: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for many rows (PostgreSQL pipelines them: one round trip)."""
        if rows:
            cursor.executemany(self.sql(statement), [tuple(_param(p) for p in r) for r in rows])

    def pipelined(self, cursor: Any) -> AbstractContextManager[Any]:
        """Statements sent without waiting for each answer, where the driver can
        (PostgreSQL's pipeline mode); a read still waits for its own."""
        return contextlib.nullcontext()

    # ------------------------------------------------------------------ full-text index

    def index(  # pragma: no cover - the dialect's
        self, cursor: Any, trace_id: str, words: str, *, new: bool = False
    ) -> None:
        """Put the trace's words in the full-text index (none: take it out); `new`: the
        trace has no document yet."""
        raise NotImplementedError

    def searching(self, cursor: Any) -> None:
        """Set up the transaction for reading the full-text index (nothing on SQLite)."""

    def search(self, query: SearchQuery) -> Side:  # pragma: no cover - the dialect's
        """The traces that match `query`, as a condition on the full-text index."""
        raise NotImplementedError

    # ------------------------------------------------------------------ schema

    def migrate(self) -> int:
        """Apply the schema migrations not applied yet; return the schema version."""
        with self.transaction() as cursor:
            self.lock_schema(cursor)
            self.run(
                cursor,
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                "description TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)",
            )
        version = 0
        for migration in MIGRATIONS:
            with self.transaction() as cursor:
                self.lock_schema(cursor)
                row = self.run(
                    cursor, "SELECT 1 FROM schema_migrations WHERE version = ?", [migration.version]
                ).fetchone()
                if row is None:
                    for statement in migration.for_dialect(self.dialect):
                        self.run(cursor, self._spelled(statement))
                    self.run(
                        cursor,
                        "INSERT INTO schema_migrations (version, description, applied_at) "
                        "VALUES (?, ?, ?)",
                        [migration.version, migration.description, time.time()],
                    )
            version = max(version, migration.version)
        return version

    def _spelled(self, statement: str) -> str:
        """A migration's statement with this dialect's types."""
        statement = statement.replace("{serial}", self.serial)
        statement = statement.replace("{blob}", self.blob)
        statement = statement.replace("{clustered}", self.clustered)
        return statement.replace("{key}", self.key_collation)

    def lock_schema(self, cursor: Any) -> None:
        """Keep two processes from applying the same migration at once."""
