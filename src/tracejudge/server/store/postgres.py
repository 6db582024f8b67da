"""The PostgreSQL dialect core: several server replicas share one database and one queue.

Claims lock the rows they take with `FOR UPDATE SKIP LOCKED`, so replicas split
the pending tasks and the completed traces between them without a coordinator and
without waiting on each other. A task left running by a replica that died is taken
over by another once its lease ends.

The pool survives the database going away: a connection that fails is closed and not
counted any more, the idle ones opened before the failure are dropped with it (a restart
broke them all), a new one is opened on demand, and a connection attempt is bounded by
`connect_timeout`, so a call during an outage fails at once (`StoreOutageError`) and the
first call after it works.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tracejudge.errors import MissingDependencyError
from tracejudge.server.store._core import SQLCore, StoreFullError, StoreOutageError
from tracejudge.server.store._query import Side
from tracejudge.server.store._search import SearchQuery

__all__ = ["PostgresCore"]

#: An arbitrary constant: the advisory lock that serialises migrations across replicas.
_MIGRATION_LOCK = 7_263_849_101


class PostgresCore(SQLCore):
    """A PostgreSQL database at `dsn` (`postgresql://user@host:port/db`), through a
    small pool of `pool_size` connections."""

    lock_rows = " FOR UPDATE SKIP LOCKED"
    serial = "BIGSERIAL PRIMARY KEY"
    blob = "BYTEA"
    dialect = "postgres"
    key_collation = ' COLLATE "C"'
    clustered = ""
    single_process = False
    picks_joins = False

    #: Seconds a connection attempt may take (an address that drops packets).
    connect_timeout = 5
    #: Seconds a call waits for a pooled connection when all are in use.
    pool_wait = 30.0

    def __init__(self, dsn: str, *, pool_size: int = 8) -> None:
        super().__init__()
        try:
            import psycopg
        except ImportError as error:
            raise MissingDependencyError("psycopg", "postgres", "a PostgreSQL store") from error
        self.dsn = dsn
        self._psycopg = psycopg
        self._pool: queue.LifoQueue[tuple[int, Any]] = queue.LifoQueue()
        self._size = pool_size
        self._opened = 0
        self._guard = threading.Lock()
        #: Bumped when a connection breaks: pooled connections of an older generation
        #: were opened before the failure, and are dropped rather than tried.
        self._generation = 0
        self._closed = False
        # Connect once now, so that a wrong DSN fails at start rather than on first use.
        self._opened = 1
        self._pool.put(self._open_counted())

    def _connect(self) -> Any:
        """A new connection, counted in `_opened` by the caller, which takes it back if
        this fails."""
        connection = self._psycopg.connect(
            self.dsn, autocommit=False, connect_timeout=self.connect_timeout
        )
        try:
            # Plans made for the values given, every time: psycopg prepares a statement
            # run five times, and PostgreSQL may then keep one generic plan for it, which
            # a search for a rare phrase makes and a search for a common word then takes
            # (0.05 s against 0.8 s at 100,000 traces). Planning a list's query: ~1 ms.
            connection.execute("SET plan_cache_mode = force_custom_plan")
            connection.commit()
        except BaseException:
            connection.close()
            raise
        return connection

    def _checkout(self) -> tuple[int, Any]:
        """A pooled connection of the current generation, or a new one while fewer than
        the pool's size are open, or the next one given back (within `pool_wait`)."""
        while True:
            try:
                generation, connection = self._pool.get_nowait()
            except queue.Empty:
                with self._guard:
                    opening = self._opened < self._size
                    if opening:
                        self._opened += 1
                if opening:
                    return self._open_counted()
                try:
                    generation, connection = self._pool.get(timeout=self.pool_wait)
                except queue.Empty:
                    raise StoreOutageError(
                        f"all {self._size} PostgreSQL connections stayed busy for "
                        f"{self.pool_wait:g} s"
                    ) from None
            if generation == self._generation and not connection.closed:
                return generation, connection
            self._discard(connection)  # opened before the database went away

    def _open_counted(self) -> tuple[int, Any]:
        """A new connection already counted in `_opened`: the count is taken back when
        connecting fails (it once was not: after 8 failures every call waited for ever)."""
        generation = self._generation
        try:
            return generation, self._connect()
        except BaseException:
            with self._guard:
                self._opened -= 1
            raise

    def _discard(self, connection: Any) -> None:
        with self._guard:
            self._opened -= 1
        with contextlib.suppress(Exception):
            connection.close()

    def sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        generation, connection = self._checkout()
        broken = False
        try:
            with connection.transaction(), connection.cursor() as cursor:
                yield cursor
        except self._psycopg.OperationalError:
            broken = True
            raise
        finally:
            dead = connection.closed or connection.broken
            if dead:  # the database went away: the idle connections went with it
                self._generation = max(self._generation, generation + 1)
            if broken or dead:
                self._discard(connection)
            else:
                self._pool.put((generation, connection))

    def _outage_of(self, error: BaseException) -> StoreOutageError | None:
        """A lost or refused connection, a shutdown, a serialisation failure or a lock
        timeout (psycopg's OperationalError and its subclasses); out of space (SQLSTATE
        53100, or the server's ENOSPC)."""
        if not isinstance(error, self._psycopg.OperationalError):
            return None
        text = " ".join(str(error).split())
        if getattr(error, "sqlstate", None) == "53100" or "no space left" in text.lower():
            return StoreFullError(
                "no space left on PostgreSQL's disk: free space there (the server takes "
                "writes again by itself once there is)"
            )
        return StoreOutageError(f"PostgreSQL cannot take calls now ({text[:200]})")

    def pipelined(self, cursor: Any) -> Any:
        return cursor.connection.pipeline()

    def index(self, cursor: Any, trace_id: str, words: str, *, new: bool = False) -> None:
        if not words:
            self.run(cursor, "DELETE FROM trace_docs WHERE trace_id = ?", [trace_id])
            return
        self.run(
            cursor,
            "INSERT INTO trace_docs (trace_id, document) VALUES (?, to_tsvector('simple', ?)) "
            "ON CONFLICT (trace_id) DO UPDATE SET document = excluded.document",
            [trace_id, words],
        )

    def searching(self, cursor: Any) -> None:
        # A search reads the GIN index. With words every trace holds ("booking reference
        # ZX050000", where only the number is rare) the planner prices the index's long
        # lists above a sequential scan of every document (40 ms, against 3 ms).
        cursor.execute("SET LOCAL enable_seqscan = off")

    def search(self, query: SearchQuery) -> Side:
        condition, params = query.tsquery()
        return Side("trace_docs", f"document @@ {condition}", tuple(params), unique=True)

    def lock_schema(self, cursor: Any) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._pool.get_nowait()[1].close()
            except queue.Empty:
                return

    def __repr__(self) -> str:
        return "PostgresCore(<dsn>)"  # the DSN may hold a password
