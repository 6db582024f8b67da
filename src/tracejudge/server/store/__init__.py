"""Where the server keeps tasks, spans, traces and evaluations.

`open_store(url)` picks the implementation from the URL: a file path or
`sqlite:///path` (SQLite, the default), or `postgresql://...` (PostgreSQL, for
several replicas). Both sit behind the `Store` interface.
"""

from __future__ import annotations

import logging

from tracejudge.models import PriceTable
from tracejudge.server.store._search import SearchQuery, SearchQueryError
from tracejudge.server.store._sql import InvalidCursorError
from tracejudge.server.store.base import (
    SORT_KEYS,
    TRACE_STATUSES,
    VERDICTS,
    EvaluationRow,
    JudgeSpendRow,
    Overview,
    OverviewRow,
    SpanBatch,
    Store,
    TaskRow,
    TraceFilter,
    TraceOrder,
    TracePage,
    TraceRow,
)
from tracejudge.server.store.migrations import SCHEMA_VERSION

__all__ = [
    "EvaluationRow",
    "InvalidCursorError",
    "JudgeSpendRow",
    "Overview",
    "OverviewRow",
    "SCHEMA_VERSION",
    "SORT_KEYS",
    "SearchQuery",
    "SearchQueryError",
    "SpanBatch",
    "Store",
    "TRACE_STATUSES",
    "TaskRow",
    "TraceFilter",
    "TraceOrder",
    "TracePage",
    "TraceRow",
    "VERDICTS",
    "open_store",
    "describe_store",
]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
logger = logging.getLogger("tracejudge.server")


def open_store(url: str, *, prices: PriceTable | None = None) -> Store:
    """The store at `url`, migrated to the current schema, every stored trace digested
    (the list's columns of traces stored by an earlier version are computed now, once).
    `prices` prices the agents' model calls (the shipped table by default)."""
    store: Store
    if url.startswith(_POSTGRES_SCHEMES):
        from tracejudge.server.store.postgres import PostgresStore

        store = PostgresStore(url)
    else:
        from tracejudge.server.store.sqlite import SQLiteStore

        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else url
        store = SQLiteStore(path)
    store.prices = prices
    store.migrate()
    done = store.digest_pending()
    if done:
        logger.info("tracejudge: computed the list's columns of %d stored traces", done)
    return store


def describe_store(url: str) -> str:
    """Where the store is, for messages: never the password of a PostgreSQL URL."""
    if url.startswith(_POSTGRES_SCHEMES):
        scheme, _, rest = url.partition("://")
        host = rest.rsplit("@", 1)[-1]
        return f"PostgreSQL at {scheme}://{host}"
    path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else url
    return f"SQLite file {path}"
