"""The PostgreSQL dialect core: several server replicas share one database and one queue.

Claims lock the rows they take with `FOR UPDATE SKIP LOCKED`, so replicas split
the pending tasks and the completed traces between them without a coordinator and
without waiting on each other. A task left running by a replica that died is taken
over by another once its lease ends.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tracejudge.errors import MissingDependencyError
from tracejudge.server.store._core import SQLCore
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

    def __init__(self, dsn: str, *, pool_size: int = 8) -> None:
        try:
            import psycopg
        except ImportError as error:
            raise MissingDependencyError("psycopg", "postgres", "a PostgreSQL store") from error
        self.dsn = dsn
        self._psycopg = psycopg
        self._pool: queue.LifoQueue[Any] = queue.LifoQueue()
        self._size = pool_size
        self._opened = 0
        self._closed = False
        # Connect once now, so that a wrong DSN fails at start rather than on first use.
        self._pool.put(self._connect())

    def _connect(self) -> Any:
        self._opened += 1
        connection = self._psycopg.connect(self.dsn, autocommit=False)
        # Plans made for the values given, every time: psycopg prepares a statement run
        # five times, and PostgreSQL may then keep one generic plan for it, which a
        # search for a rare phrase makes and a search for a common word then takes
        # (0.05 s against 0.8 s at 100,000 traces). Planning a list's query takes ~1 ms.
        connection.execute("SET plan_cache_mode = force_custom_plan")
        connection.commit()
        return connection

    def sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        try:
            connection = self._pool.get_nowait()
        except queue.Empty:
            connection = self._connect() if self._opened < self._size else self._pool.get()
        broken = False
        try:
            with connection.transaction(), connection.cursor() as cursor:
                yield cursor
        except self._psycopg.OperationalError:
            broken = True
            raise
        finally:
            if broken or connection.closed:
                self._opened -= 1
                connection.close()
            else:
                self._pool.put(connection)

    def is_transient(self, error: BaseException) -> bool:
        """A lost or refused connection, a serialisation failure, a lock timeout, a
        shutdown: psycopg's OperationalError and its subclasses."""
        return isinstance(error, self._psycopg.OperationalError)

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
                self._pool.get_nowait().close()
            except queue.Empty:
                return

    def __repr__(self) -> str:
        return "PostgresCore(<dsn>)"  # the DSN may hold a password
