"""The SQLite dialect core: one file in WAL mode, for one server process (the default)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tracejudge.server.store._core import SQLCore, StoreFullError, StoreOutageError
from tracejudge.server.store._query import Side
from tracejudge.server.store._search import SearchQuery

__all__ = ["SQLiteCore"]

#: How the C library says ENOSPC, where SQLite passes it on (a disk I/O error on the WAL).
_NO_SPACE = "no space left"
#: Bytes freed on a full disk after which writes are taken to work again.
_ROOM = 1 << 20


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
        super().__init__()
        self.path = os.fspath(path)
        self._free_when_full = 0
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        self._connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout
        )
        self._lock = threading.Lock()
        self._busy_ms = int(self.busy_timeout * 1000)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=FULL")
        self._connection.execute("PRAGMA foreign_keys=ON")

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        # One wait for both locks (this connection's, then the file's), so that a call
        # behind others waiting on a locked file fails after the busy timeout too.
        deadline = time.monotonic() + self.busy_timeout
        if not self._lock.acquire(timeout=self.busy_timeout):
            raise self._locked()
        try:
            self._wait_until(deadline)
            cursor = self._connection.cursor()
            try:
                cursor.execute("BEGIN IMMEDIATE")
                yield cursor
                cursor.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (a full disk) leaves the transaction open: end it, or
                # every later BEGIN fails. SQLite may have rolled back already.
                if self._connection.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        cursor.execute("ROLLBACK")
                raise
            finally:
                cursor.close()
        finally:
            self._lock.release()

    def _wait_until(self, deadline: float) -> None:
        """Let SQLite wait for the file's lock until `deadline` at most (the full busy
        timeout when this connection's lock came at once: no statement then)."""
        full = int(self.busy_timeout * 1000)
        left = int((deadline - time.monotonic()) * 1000)
        wait = full if left > full - 50 else max(1, left)
        if wait != self._busy_ms:
            self._connection.execute(f"PRAGMA busy_timeout = {wait}")
            self._busy_ms = wait

    def _locked(self) -> StoreOutageError:
        return StoreOutageError(
            f"the SQLite file {self.path} stayed locked (by another process, or a long "
            f"write of this one) past the busy timeout ({self.busy_timeout:g} s)"
        )

    def _free_bytes(self) -> int:
        try:
            found = os.statvfs(os.path.dirname(os.path.abspath(self.path)))
        except OSError:
            return 0
        return found.f_bavail * found.f_frsize

    def _failed(self, error: StoreOutageError) -> None:
        if isinstance(error, StoreFullError):
            self._free_when_full = self._free_bytes()
        super()._failed(error)

    def _room_again(self) -> bool:
        # A write that fits in the WAL's old space works on a disk still full: room is
        # there again only once space was freed on the file's device.
        return self._free_bytes() > self._free_when_full + _ROOM

    def _outage_of(self, error: BaseException) -> StoreOutageError | None:
        """Locked past the busy timeout (SQLITE_BUSY, SQLITE_LOCKED), out of space
        (SQLITE_FULL), or the file cannot be written or read (SQLITE_IOERR,
        SQLITE_CANTOPEN, SQLITE_READONLY)."""
        if not isinstance(error, sqlite3.OperationalError):
            return None
        name = getattr(error, "sqlite_errorname", "") or ""
        text = str(error).lower()
        where = f"the SQLite file {self.path}"
        if name.startswith("SQLITE_FULL") or "disk is full" in text or _NO_SPACE in text:
            return StoreFullError(
                f"no space left on the device of {where}: free space there (the server "
                "takes writes again by itself once there is)"
            )
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
            return self._locked()
        if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY")):
            return StoreOutageError(f"{where} cannot be written or read now ({text})")
        return None

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
