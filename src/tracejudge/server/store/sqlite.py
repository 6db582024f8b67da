"""The SQLite dialect core: one file in WAL mode, for one server process (the default)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tracejudge.server.store._core import SQLCore
from tracejudge.server.store._query import Side
from tracejudge.server.store._search import SearchQuery

__all__ = ["SQLiteCore"]


class SQLiteCore(SQLCore):
    """A SQLite database file (`":memory:"` for a throwaway one).

    One connection, used by one thread at a time. WAL mode lets readers run beside
    the writer; `synchronous=FULL` makes a committed transaction survive a power loss,
    so an answer is never sent for a result that could still be lost. Writers take the
    database lock up front (`BEGIN IMMEDIATE`), which also makes claims exclusive.
    """

    single_process = True
    #: Seconds a write waits for another connection's lock before it fails (and is
    #: retried by the background loops, or answered 503 to a request).
    busy_timeout = 5.0

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        self._connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout
        )
        self._lock = threading.Lock()
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=FULL")
        self._connection.execute("PRAGMA foreign_keys=ON")

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        with self._lock:
            cursor = self._connection.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                yield cursor
            except BaseException:
                cursor.execute("ROLLBACK")
                raise
            else:
                cursor.execute("COMMIT")
            finally:
                cursor.close()

    def is_transient(self, error: BaseException) -> bool:
        """Another connection holds the lock (SQLITE_BUSY, SQLITE_LOCKED)."""
        if not isinstance(error, sqlite3.OperationalError):
            return False
        name = getattr(error, "sqlite_errorname", "") or ""
        text = str(error).lower()
        return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def index(self, cursor: Any, trace_id: str, words: str, *, new: bool = False) -> None:
        # An external-content FTS5 table over trace_docs: a document is taken out of the
        # index with the words it was put in with.
        row = None
        if not new:
            row = self.run(
                cursor, "SELECT id, body FROM trace_docs WHERE trace_id = ?", [trace_id]
            ).fetchone()
        if row is not None:
            doc_id, body = row
            if body == words:
                return
            self.run(
                cursor,
                "INSERT INTO trace_search (trace_search, rowid, body) VALUES ('delete', ?, ?)",
                [doc_id, body],
            )
            if not words:
                self.run(cursor, "DELETE FROM trace_docs WHERE id = ?", [doc_id])
                return
            self.run(cursor, "UPDATE trace_docs SET body = ? WHERE id = ?", [words, doc_id])
        elif not words:
            return
        else:
            doc_id = self.run(
                cursor, "INSERT INTO trace_docs (trace_id, body) VALUES (?, ?)", [trace_id, words]
            ).lastrowid
        self.run(cursor, "INSERT INTO trace_search (rowid, body) VALUES (?, ?)", [doc_id, words])

    def search(self, query: SearchQuery) -> Side:
        # A probe matches the trace's document (it seeks in every word's list: 70 us a
        # trace). One of many traces (a count, the overview's 1,000) looks the document
        # up and tests it against the matching documents' numbers, found once for the
        # statement (`+` keeps SQLite from driving the lookup by them).
        return Side(
            "trace_search JOIN trace_docs d ON d.id = trace_search.rowid",
            "trace_search MATCH ?",
            (query.fts5(),),
            key="d.trace_id",
            unique=True,
            count_table="trace_search",
            probed_many=(
                "trace_docs d",
                "+d.id IN (SELECT rowid FROM trace_search WHERE trace_search MATCH ?)",
            ),
            probe_cost=2.0,
        )

    def __repr__(self) -> str:
        return f"SQLiteCore({self.path!r})"
