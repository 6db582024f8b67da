"""Judge-call caches: the same prompt to the same judge with the same parameters is asked once.

Keys are SHA-256 digests of (judge name, model, messages, parameters); values are the
JSON-ready verdict fields. Only successful verdicts are stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, Union, runtime_checkable

__all__ = [
    "JudgeCache",
    "MemoryCache",
    "SQLiteCache",
    "CacheOption",
    "DEFAULT_MAX_ENTRIES",
    "cache_key",
    "make_cache",
]

logger = logging.getLogger("tracejudge.judges")

_T = TypeVar("_T")

#: The newest verdicts an SQLiteCache keeps by default (about 1.7 KB each on disk).
DEFAULT_MAX_ENTRIES = 50_000
# How long a file that another process keeps locked is left alone before it is tried again.
_REST_AFTER_LOCK = 30.0
_COLUMNS = {"key", "value", "created_at"}


@runtime_checkable
class JudgeCache(Protocol):
    """Where verdicts are kept between identical judge calls. Implementations must be
    thread-safe; `get` answers None on a miss."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class MemoryCache:
    """A bounded in-process LRU cache (the default; lost when the process ends)."""

    def __init__(self, max_entries: int = 4096) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._entries: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                return None
            self._entries.move_to_end(key)
        # Stored as JSON so a caller mutating a verdict's `raw` cannot change the cache.
        entry: dict[str, Any] = json.loads(value)
        return entry

    def set(self, key: str, value: dict[str, Any]) -> None:
        encoded = json.dumps(value)
        with self._lock:
            self._entries[key] = encoded
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def close(self) -> None:
        """Nothing to release; entries stay for the next use."""

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


class _SchemaError(Exception):
    """The file holds a `judge_cache` table that this version did not write."""


def _is_lock(error: BaseException) -> bool:
    """Whether an sqlite3 error means another connection holds the lock (try again later)."""
    name = getattr(error, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return True
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error).lower()


class SQLiteCache:
    """A cache in an SQLite file, shared by judges and processes that name the same path.

    The file and its table are created on first use. The cache is an optimisation, never a
    reason for an evaluation to fail: when the file cannot be used (corrupt, truncated, a
    table of another shape, a read-only place) one warning is logged and verdicts are kept
    in memory for the rest of the process; an entry that does not decode is a miss. When
    another process holds the lock for more than `lock_timeout` seconds, the call goes on
    without the file (the verdict is kept in memory) and the file is left alone for 30 s.

    At most `max_entries` verdicts are kept in the file; the oldest go first.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        lock_timeout: float = 1.0,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        if lock_timeout <= 0:
            raise ValueError(f"lock_timeout must be positive, got {lock_timeout}")
        self.path = Path(path)
        self.max_entries = int(max_entries)
        self.lock_timeout = float(lock_timeout)
        # Verdicts the file could not take, and every verdict once the file is broken.
        self._memory = MemoryCache()
        self._connection: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._broken = False
        self._resting_until = 0.0
        self._warned = False

    # ----------------------------------------------------------------- JudgeCache

    def get(self, key: str) -> dict[str, Any] | None:
        remembered = self._memory.get(key)
        if remembered is not None:
            return remembered
        row = self._use(lambda connection: _select(connection, key))
        if row is None:
            return None
        try:
            value = json.loads(row)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            self._fault(f"an entry does not decode: {row[:80]!r}", broken=False)
            return None
        return value

    def set(self, key: str, value: dict[str, Any]) -> None:
        encoded = json.dumps(value)
        if self._use(lambda connection: self._insert(connection, key, encoded)) is None:
            self._memory.set(key, value)

    def close(self) -> None:
        """Close the file; the next use opens it again. What is held in memory stays."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None

    def __len__(self) -> int:
        """The number of verdicts in the file (0 when it cannot be read)."""
        count = self._use(
            lambda connection: connection.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0]
        )
        return int(count or 0)

    # ----------------------------------------------------------------- the file

    def _use(self, action: Callable[[sqlite3.Connection], _T]) -> _T | None:
        """`action(connection)` under the lock, or None when the file is not usable now."""
        if self._broken or time.monotonic() < self._resting_until:
            return None
        if not self._lock.acquire(timeout=self.lock_timeout):
            # Another thread has been waiting on the file's lock all this time.
            self._fault("it stayed locked", broken=False, rest=True)
            return None
        try:
            if self._broken or time.monotonic() < self._resting_until:
                return None  # decided while this thread waited for the lock
            return action(self._connect())
        except sqlite3.Error as error:
            if _is_lock(error):
                self._fault(
                    f"another process held its lock for over {self.lock_timeout:g}s",
                    broken=False,
                    rest=True,
                )
            else:
                self._fault(f"{type(error).__name__}: {error}", broken=True)
            return None
        except (_SchemaError, OSError) as error:
            self._fault(str(error) or type(error).__name__, broken=True)
            return None
        finally:
            self._lock.release()

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None and self._pid != os.getpid():
            # A connection opened before fork() must not be used (or closed) in the child.
            self._connection = None
        if self._connection is None:
            self._pid = os.getpid()
            if not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            # One connection guarded by a lock: sqlite3 objects are not safe to share
            # across threads on their own, and the sync client may call from several.
            connection = sqlite3.connect(
                self.path, timeout=self.lock_timeout, check_same_thread=False
            )
            try:
                _prepare(connection)
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection

    def _insert(self, connection: sqlite3.Connection, key: str, encoded: str) -> bool:
        with connection:  # one transaction: committed, or rolled back on error
            connection.execute(
                "INSERT OR REPLACE INTO judge_cache (key, value, created_at) VALUES (?, ?, ?)",
                (key, encoded, time.time()),
            )
            # A replaced key gets a new rowid, so rowids run from oldest to newest. Replaced
            # keys leave gaps: this keeps at most (not always exactly) max_entries.
            connection.execute(
                "DELETE FROM judge_cache WHERE rowid <= (SELECT MAX(rowid) FROM judge_cache) - ?",
                (self.max_entries,),
            )
        return True

    def _fault(self, what: str, *, broken: bool, rest: bool = False) -> None:
        if broken:
            self._broken = True
            if self._connection is not None and self._pid == os.getpid():
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
            self._connection = None
        if rest:
            self._resting_until = time.monotonic() + _REST_AFTER_LOCK
        # One warning per cache: a broken file would otherwise log on every judge call.
        if self._warned:
            logger.debug("judge cache %s: %s", self.path, what)
            return
        self._warned = True
        if broken:
            then = "verdicts are kept in memory for the rest of this process"
        elif rest:
            then = f"verdicts are kept in memory, and the file tried again in {_REST_AFTER_LOCK:g}s"
        else:
            then = "the entry is ignored and asked for again"
        logger.warning("judge cache %s is not usable (%s); %s", self.path, what, then)


def _prepare(connection: sqlite3.Connection) -> None:
    """Make the file ready: WAL if it can be had, the table, and a check of its shape."""
    try:
        connection.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as error:
        # Another process is setting up the same new file at this moment. WAL only lets
        # readers and a writer overlap; the default journal is just as correct.
        if not _is_lock(error):
            raise
    connection.execute(
        "CREATE TABLE IF NOT EXISTS judge_cache ("
        "key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL NOT NULL)"
    )
    connection.commit()
    columns = {row[1] for row in connection.execute("PRAGMA table_info(judge_cache)")}
    if not _COLUMNS <= columns:
        raise _SchemaError(
            f"its judge_cache table has the columns {sorted(columns)}, not "
            f"{sorted(_COLUMNS)}: a file written by something else?"
        )


def _select(connection: sqlite3.Connection, key: str) -> str | None:
    row = connection.execute("SELECT value FROM judge_cache WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    return row[0] if isinstance(row[0], str) else repr(row[0])


#: What a judge's `cache=` accepts: None (a fresh MemoryCache), False (no cache), a path
#: (an SQLiteCache in that file), or any JudgeCache.
CacheOption = Union[JudgeCache, str, "os.PathLike[str]", bool, None]


def make_cache(option: CacheOption) -> JudgeCache | None:
    """The cache a `cache=` option names; None when caching is off."""
    if option is None or option is True:
        return MemoryCache()
    if option is False:
        return None
    if isinstance(option, (str, os.PathLike)):
        return SQLiteCache(option)
    if isinstance(option, JudgeCache):
        return option
    raise TypeError(
        "cache must be None (in memory), False (off), a file path (SQLite) or an object "
        f"with get/set/close, got {type(option).__name__}"
    )


def cache_key(judge_name: str, model: str, messages: Any, parameters: dict[str, Any]) -> str:
    """A stable digest of everything that decides a judge's answer."""
    material = json.dumps(
        {"judge": judge_name, "model": model, "messages": messages, "parameters": parameters},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()
