"""A temporary SQLite file that holds a batch input, grouped by trace.

`tracejudge score` reads its inputs once, piece by piece, into the spool: span records
and log-record events under their trace id, MultiAgentTrace documents under a key of
their own. Then it takes the traces out one at a time, so memory holds the largest
trace, not the input. Traces tied by span links (AutoGen's runtime starts one per
message of a run) are taken out together, as one trace, under the first one's key. The
report's per-trace data waits here too until the end, when the HTML report is written
worst first.

Records are pickled: the spool is written and read by this process only, in a private
temporary directory, and deleted with it.
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
from collections.abc import Iterator
from typing import Any

from tracejudge.convert import ConversionMemo, EventRecord, OTLPBatch, SpanRecord

__all__ = ["Spool"]

_SPAN, _EVENT, _DOCUMENT, _LINE = 0, 1, 2, 3


class Spool:
    """The spool file `spool.sqlite` in `directory`."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        #: What the converter learns of the input's attribute keys, shared by its traces
        #: (each converted alone, from `load`)
        self.memo = ConversionMemo()
        self._db = sqlite3.connect(os.path.join(directory, "spool.sqlite"))
        # A scratch file: no journal, no fsync. Losing it to a crash loses nothing.
        self._db.executescript(
            """
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE TABLE items (seq INTEGER PRIMARY KEY, key TEXT NOT NULL,
                                kind INTEGER NOT NULL, source TEXT, data BLOB NOT NULL);
            CREATE TABLE entries (key TEXT PRIMARY KEY, worst REAL, seq INTEGER,
                                  data TEXT NOT NULL);
            """
        )
        self._indexed = False
        # Trace id -> a trace id it is linked to, first seen first (a union-find forest
        # over the linked traces only: most inputs have none).
        self._linked: dict[str, str] = {}
        self._members: dict[str, list[str]] = {}

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ input

    def add_batch(self, source: str, batch: OTLPBatch) -> None:
        for span in batch.spans:
            for linked_trace, _ in span.links:
                if linked_trace != span.trace_id:
                    self._link(span.trace_id, linked_trace)
        rows: list[tuple[str, int, str, bytes]] = [
            (span.trace_id, _SPAN, source, pickle.dumps(span, pickle.HIGHEST_PROTOCOL))
            for span in batch.spans
        ]
        rows += [
            (event[0], _EVENT, source, pickle.dumps(event, pickle.HIGHEST_PROTOCOL))
            for event in batch.events
        ]
        self._insert(rows)

    def _top(self, trace_id: str) -> str:
        while trace_id in self._linked:
            trace_id = self._linked[trace_id]
        return trace_id

    def _link(self, first: str, second: str) -> None:
        a, b = self._top(first), self._top(second)
        if a != b:
            self._linked[b] = a

    def add_document(self, key: str, source: str, document: Any) -> None:
        """A MultiAgentTrace document (its JSON value), to be scored under `key`."""
        self._insert([(key, _DOCUMENT, source, json.dumps(document).encode())])

    def add_line(self, line: dict[str, Any]) -> None:
        """A result line of an earlier run (`--resume`), kept for the report."""
        self._insert([(str(line["trace_id"]), _LINE, None, json.dumps(line).encode())])

    def _insert(self, rows: list[Any]) -> None:
        if rows:
            self._db.executemany(
                "INSERT INTO items (key, kind, source, data) VALUES (?, ?, ?, ?)", rows
            )

    # ------------------------------------------------------------------ output

    def _index(self) -> None:
        if not self._indexed:
            self._db.execute("CREATE INDEX items_by_key ON items (key, seq)")
            self._indexed = True

    def keys(self) -> list[tuple[str, str]]:
        """(key, source of its first item) of every trace, in order of first appearance;
        linked traces are one, under the key of the first of them to appear."""
        self._index()
        rows = self._db.execute(
            "SELECT key, source, MIN(seq) AS first FROM items WHERE kind != ? "
            "GROUP BY key ORDER BY first",
            (_LINE,),
        )
        keys: list[tuple[str, str]] = []
        first_of: dict[str, str] = {}  # a group of linked traces -> its first key
        self._members = {}
        for key, source, _ in rows:
            first = first_of.setdefault(self._top(key), key)
            if first == key:
                keys.append((key, source))
            else:
                self._members.setdefault(first, [first]).append(key)
        return keys

    def shared(self) -> list[tuple[str, list[str]]]:
        """(trace id, the inputs its spans came from, in order read) of every trace whose
        spans came from more than one input: `keys` takes each as one trace."""
        self._index()
        rows = self._db.execute(
            "SELECT key, source FROM items WHERE kind != ? AND source IS NOT NULL "
            "GROUP BY key, source ORDER BY key, MIN(seq)",
            (_LINE,),
        )
        by_key: dict[str, list[str]] = {}
        for key, source in rows:
            by_key.setdefault(key, []).append(source)
        return [(key, sources) for key, sources in by_key.items() if len(sources) > 1]

    def load(self, key: str) -> tuple[list[SpanRecord], list[tuple[str, str, EventRecord]], Any]:
        """(span records, events, the MultiAgentTrace document or None) under `key`."""
        self._index()
        spans: list[SpanRecord] = []
        events: list[tuple[str, str, EventRecord]] = []
        document = None
        members = self._members.get(key, [key])
        marks = ", ".join("?" * len(members))
        for kind, data in self._db.execute(
            f"SELECT kind, data FROM items WHERE key IN ({marks}) AND kind != ? ORDER BY seq",
            (*members, _LINE),
        ):
            if kind == _SPAN:
                spans.append(pickle.loads(data))
            elif kind == _EVENT:
                events.append(pickle.loads(data))
            else:
                document = json.loads(data)
        return spans, events, document

    def lines(self, key: str) -> list[dict[str, Any]]:
        """The result lines of an earlier run kept under `key`."""
        self._index()
        rows = self._db.execute(
            "SELECT data FROM items WHERE key = ? AND kind = ? ORDER BY seq", (key, _LINE)
        )
        return [json.loads(data) for (data,) in rows]

    # ------------------------------------------------------------------ report entries

    def add_entry(self, key: str, worst: float | None, entry: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO entries (key, worst, seq, data) VALUES "
            "(?, ?, (SELECT COUNT(*) FROM entries), ?)",
            (key, worst, json.dumps(entry, separators=(",", ":"))),
        )

    def entries_worst_first(self) -> Iterator[dict[str, Any]]:
        """The report entries, lowest score first (unscored last), then in order added."""
        rows = self._db.execute("SELECT data FROM entries ORDER BY worst IS NULL, worst, seq")
        for (data,) in rows:
            yield json.loads(data)
