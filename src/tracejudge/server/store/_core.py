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
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from tracejudge.server.store._query import Side
from tracejudge.server.store._search import SearchQuery
from tracejudge.server.store.migrations import MIGRATIONS

__all__ = [
    "Outage",
    "SQLCore",
    "StoreFullError",
    "StoreOutageError",
    "storable",
    "where_clause",
]

logger = logging.getLogger("tracejudge.server")

#: Seconds without a failed write, after space ran out, before writes count as working.
_FULL_QUIET = 3.0
#: The statements that write (a transaction that ran one and committed shows that writes
#: work again after the disk was full).
_WRITES = ("INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "DROP")


class StoreOutageError(RuntimeError):
    """The database cannot take this call now (unreachable, restarting, locked, out of
    space): nothing was written; try again after `retry_after` seconds. The message says
    why, without the database's address or password."""

    retry_after = 5

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StoreFullError(StoreOutageError):
    """The database's disk is full: no write succeeds until space is freed."""

    retry_after = 30


@dataclass(frozen=True)
class Outage:
    """What the core knows of the database's trouble: since when (monotonic seconds) its
    calls fail, why, and whether its writes fail for want of space."""

    since: float
    reason: str
    full: bool


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

    def __init__(self) -> None:
        self._outage: Outage | None = None
        self._full: Outage | None = None
        self._last_full = 0.0
        self._local = threading.local()

    def _transaction(self) -> AbstractContextManager[Any]:  # pragma: no cover - abstract
        """The dialect's transaction: a cursor, committed on success, rolled back on error."""
        raise NotImplementedError

    def _outage_of(self, error: BaseException) -> StoreOutageError | None:
        """The outage `error` means (None: it is not one: a bug, or refused input)."""
        return None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor inside one transaction: committed on success, rolled back on error;
        `StoreOutageError` when the database cannot take it now."""
        self._local.wrote = False
        self._local.at_commit = {}
        try:
            with self._transaction() as cursor:
                yield cursor
                for action in self._local.at_commit.values():
                    action(cursor)
        except StoreOutageError as error:
            self._failed(error)
            raise
        except Exception as error:
            outage = self._outage_of(error)
            if outage is None:
                raise
            self._failed(outage)
            raise outage from error
        self._worked(wrote=self._local.wrote)

    def at_commit(self, name: str, action: Callable[[Any], None]) -> None:
        """Run `action(cursor)` once at the end of the current transaction, before it
        commits (the trends' rollups: their rows written last, in one order, so that two
        writers never wait on each other's rows in opposite orders). `name` registers it
        once however often it is asked."""
        self._local.at_commit.setdefault(name, action)

    def _failed(self, error: StoreOutageError) -> None:
        now = time.monotonic()
        full = isinstance(error, StoreFullError)
        if self._outage is None and not (full and self._full is not None):  # said once
            logger.warning("tracejudge: the store cannot take calls: %s", error.reason)
        since = self._outage.since if self._outage is not None else now
        self._outage = Outage(since, error.reason, full)
        if full:
            self._last_full = now
            if self._full is None:
                self._full = self._outage

    def _worked(self, *, wrote: bool) -> None:
        if self._outage is not None and not self._outage.full:
            logger.warning(
                "tracejudge: the store takes calls again, after %.1f s",
                time.monotonic() - self._outage.since,
            )
        self._outage = None
        if wrote and self._full is not None and self._room_again():
            logger.warning("tracejudge: the store takes writes again (space was freed)")
            self._full = None

    def _room_again(self) -> bool:
        """After writes failed for want of space, whether one that worked says there is
        room again: a small write may fit in space the database had kept (a WAL
        segment's) while larger ones still fail, so only once none failed for a while."""
        return time.monotonic() - self._last_full > _FULL_QUIET

    def outage(self) -> Outage | None:
        """The database's trouble now: its calls fail (since when, why), or its writes
        failed for want of space and none has worked since. None: it works."""
        return self._outage or self._full

    def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def is_transient(self, error: BaseException) -> bool:
        """Whether `error` says the database is busy, unreachable or full for now (worth a
        retry), rather than that it refused what it was given."""
        return isinstance(error, StoreOutageError) or self._outage_of(error) is not None

    def sql(self, statement: str) -> str:
        """`statement` in the driver's placeholder style."""
        return statement

    def run(self, cursor: Any, statement: str, params: Sequence[Any] = ()) -> Any:
        cursor.execute(self.sql(statement), tuple(_param(p) for p in params))
        # A statement that changed rows wrote (-1: the driver cannot tell yet).
        if cursor.rowcount != 0 and statement.lstrip()[:6].upper().startswith(_WRITES):
            self._local.wrote = True
        return cursor

    def run_many(self, cursor: Any, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for many rows (PostgreSQL pipelines them: one round trip)."""
        if rows:
            self._local.wrote = True
            cursor.executemany(self.sql(statement), [tuple(_param(p) for p in r) for r in rows])

    def probe_write(self) -> None:
        """Write one row (the latest migration's, unchanged): `StoreOutageError` while
        writes fail; when it works, a full disk is known to have room again."""
        with self.transaction() as cursor:
            self.run(
                cursor,
                "UPDATE schema_migrations SET applied_at = applied_at WHERE version = "
                "(SELECT MAX(version) FROM schema_migrations)",
            )

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
