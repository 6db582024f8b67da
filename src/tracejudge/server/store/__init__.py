"""Where the server keeps tasks, spans, traces, evaluations, people's labels and
attributions.

`open_store(url)` picks the dialect from the URL: a file path or `sqlite:///path`
(SQLite, the default), or `postgresql://...` (PostgreSQL, for several replicas), and
returns a `Store`: that dialect core with a repository per area (`store.tasks`,
`store.traces`, `store.lists`, `store.evaluations`, `store.labels`,
`store.attributions`, `store.spend`, `store.runs`, `store.rules`, `store.decisions`,
`store.sessions`).

Beside the repositories, what the store keeps of a trace: its stored text
(`trace_text`), what the list shows of it (`digest`), and a stored trace read back with
its answers (`stored`).
"""

from __future__ import annotations

import logging

from tracejudge.errors import ConfigurationError
from tracejudge.models import PriceTable
from tracejudge.server.store._core import Outage, SQLCore, StoreFullError, StoreOutageError
from tracejudge.server.store._query import InvalidCursorError
from tracejudge.server.store._search import SearchQuery, SearchQueryError
from tracejudge.server.store._store import Store
from tracejudge.server.store.base import (
    SORT_KEYS,
    TRACE_STATUSES,
    VERDICTS,
    AttributionRow,
    EvaluationRow,
    JudgeSpendRow,
    LabelPage,
    LabelRow,
    Overview,
    OverviewRow,
    SpanBatch,
    SpanEncoding,
    TaskRow,
    TraceFilter,
    TraceOrder,
    TracePage,
    TraceRow,
    too_large_reason,
)
from tracejudge.server.store.labels import LabelCursorError
from tracejudge.server.store.migrations import SCHEMA_VERSION
from tracejudge.server.store.rules import RuleDecisionRow, RuleRow, RuleSourceError, RuleTally
from tracejudge.server.store.runs import (
    RUN_SOURCE,
    RunCursorError,
    RunPage,
    RunResultRow,
    RunRow,
)
from tracejudge.server.store.sessions import (
    SessionEvaluationRow,
    SessionPage,
    SessionRow,
    worst_verdict,
)

__all__ = [
    "AttributionRow",
    "Outage",
    "SQLCore",
    "StoreFullError",
    "StoreOutageError",
    "EvaluationRow",
    "InvalidCursorError",
    "JudgeSpendRow",
    "Overview",
    "OverviewRow",
    "LabelCursorError",
    "LabelPage",
    "LabelRow",
    "SCHEMA_VERSION",
    "SORT_KEYS",
    "SearchQuery",
    "SearchQueryError",
    "SpanBatch",
    "SpanEncoding",
    "Store",
    "TRACE_STATUSES",
    "TaskRow",
    "TraceFilter",
    "TraceOrder",
    "TracePage",
    "TraceRow",
    "VERDICTS",
    "open_store",
    "too_large_reason",
    "describe_store",
    "StoreUnavailableError",
    "RuleDecisionRow",
    "RuleRow",
    "RuleSourceError",
    "RuleTally",
    "SessionEvaluationRow",
    "SessionPage",
    "SessionRow",
    "worst_verdict",
    "RUN_SOURCE",
    "RunCursorError",
    "RunPage",
    "RunResultRow",
    "RunRow",
]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
logger = logging.getLogger("tracejudge.server")


class StoreUnavailableError(ConfigurationError):
    """The database cannot be reached or opened (the message is one line: where, why,
    what to check)."""


def _unavailable(url: str, error: Exception) -> StoreUnavailableError:
    why = " ".join(str(error).split()) or type(error).__name__
    return StoreUnavailableError(
        f"cannot open the store, {describe_store(url)}: {why}; check --db (or "
        "TRACEJUDGE_DB) and that the database is running and reachable"
    )


def open_store(url: str, *, prices: PriceTable | None = None) -> Store:
    """The store at `url`, migrated to the current schema, every stored trace digested
    (the list's columns of traces stored by an earlier version are computed now, once).
    `prices` prices the agents' model calls (the shipped table by default).
    `StoreUnavailableError` when the database cannot be connected to or opened."""
    core: SQLCore
    if url.startswith(_POSTGRES_SCHEMES):
        from tracejudge.server.store.postgres import PostgresCore

        try:
            core = PostgresCore(url)
        except Exception as error:
            if type(error).__name__ != "OperationalError":  # psycopg's, not a bug here
                raise
            raise _unavailable(url, error) from error
    else:
        import sqlite3

        from tracejudge.server.store.sqlite import SQLiteCore

        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else url
        try:
            core = SQLiteCore(path)
        except sqlite3.OperationalError as error:
            raise _unavailable(url, error) from error
    store = Store(core)
    store.prices = prices
    try:
        store.migrate()
    except StoreOutageError as error:
        store.close()
        raise _unavailable(url, error) from error
    try:
        done = store.traces.digest_pending()
    except StoreOutageError as error:  # a full disk: the server starts, and says so
        logger.warning(
            "tracejudge: the list's columns of some stored traces could not be computed "
            "now (%s); they are when the traces are scored, or at the next start",
            error.reason,
        )
        done = 0
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
