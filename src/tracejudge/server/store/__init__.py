"""Where the server keeps tasks, spans, traces and evaluations.

`open_store(url)` picks the implementation from the URL: a file path or
`sqlite:///path` (SQLite, the default), or `postgresql://...` (PostgreSQL, for
several replicas). Both sit behind the `Store` interface.
"""

from __future__ import annotations

from tracejudge.server.store._sql import CURSOR_PATTERN, InvalidCursorError
from tracejudge.server.store.base import (
    EvaluationRow,
    JudgeSpendRow,
    SpanBatch,
    Store,
    TaskRow,
    TraceFilter,
    TracePage,
    TraceRow,
)
from tracejudge.server.store.migrations import SCHEMA_VERSION

__all__ = [
    "CURSOR_PATTERN",
    "EvaluationRow",
    "InvalidCursorError",
    "JudgeSpendRow",
    "SCHEMA_VERSION",
    "SpanBatch",
    "Store",
    "TaskRow",
    "TraceFilter",
    "TracePage",
    "TraceRow",
    "open_store",
    "describe_store",
]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(url: str) -> Store:
    """The store at `url`, migrated to the current schema."""
    store: Store
    if url.startswith(_POSTGRES_SCHEMES):
        from tracejudge.server.store.postgres import PostgresStore

        store = PostgresStore(url)
    else:
        from tracejudge.server.store.sqlite import SQLiteStore

        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else url
        store = SQLiteStore(path)
    store.migrate()
    return store


def describe_store(url: str) -> str:
    """Where the store is, for messages: never the password of a PostgreSQL URL."""
    if url.startswith(_POSTGRES_SCHEMES):
        scheme, _, rest = url.partition("://")
        host = rest.rsplit("@", 1)[-1]
        return f"PostgreSQL at {scheme}://{host}"
    path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else url
    return f"SQLite file {path}"
