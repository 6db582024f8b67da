"""Judge-call caches: the same prompt to the same judge with the same parameters is asked once.

Keys are SHA-256 digests of (judge name, model, messages, parameters); values are the
JSON-ready verdict fields. Only successful verdicts are stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol, Union, runtime_checkable

__all__ = ["JudgeCache", "MemoryCache", "SQLiteCache", "CacheOption", "cache_key", "make_cache"]


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
        return json.loads(value)

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


class SQLiteCache:
    """A cache in an SQLite file, shared by judges and processes that name the same path.

    The file and its table are created on first use.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            # One connection guarded by a lock: sqlite3 objects are not safe to share
            # across threads on their own, and the sync client may call from several.
            connection = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS judge_cache ("
                "key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL NOT NULL)"
            )
            connection.commit()
            self._connection = connection
        return self._connection

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = (
                self._connect()
                .execute("SELECT value FROM judge_cache WHERE key = ?", (key,))
                .fetchone()
            )
        return json.loads(row[0]) if row else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        encoded = json.dumps(value)
        with self._lock:
            connection = self._connect()
            connection.execute(
                "INSERT OR REPLACE INTO judge_cache (key, value, created_at) VALUES (?, ?, ?)",
                (key, encoded, time.time()),
            )
            connection.commit()

    def close(self) -> None:
        """Close the file; the next use opens it again."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


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
