"""Trace pages drawn before, kept by what they were drawn from.

A trace's page at the span cap (20,000 spans) takes about a second of CPU to draw (read
the stored trace, validate it, lay out its 10 MB of data): on a busy machine, several
seconds of wall time for every view. Each page drawn is kept, encoded, under the digest
of everything it was drawn from (`page_key`: the stored trace, its answers, its labels,
its stored attribution, who is viewing), so a second view of an unchanged trace is sent
as it is, and any change (a new answer, a label, a trace converted again) draws anew.
At most `max_bytes` of pages are kept, the least recently viewed dropped first; a page
over half of that is not kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from tracejudge.server.store import AttributionRow, EvaluationRow, TraceRow

__all__ = ["DEFAULT_MAX_BYTES", "PageCache", "page_key"]

#: Six pages of 20,000-span traces.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


class PageCache:
    """Encoded pages by key, at most `max_bytes` of them (not thread-safe: used from the
    event loop only)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._pages: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0

    def get(self, key: str) -> bytes | None:
        page = self._pages.get(key)
        if page is not None:
            self._pages.move_to_end(key)
        return page

    def put(self, key: str, page: bytes) -> None:
        if len(page) > self.max_bytes // 2:
            return
        old = self._pages.pop(key, None)
        self._bytes -= len(old) if old is not None else 0
        self._pages[key] = page
        self._bytes += len(page)
        while self._bytes > self.max_bytes:
            _, dropped = self._pages.popitem(last=False)
            self._bytes -= len(dropped)

    @property
    def size(self) -> int:
        """The bytes of the pages kept."""
        return self._bytes


def page_key(
    row: TraceRow,
    evaluations: Sequence[EvaluationRow],
    labels: Sequence[dict[str, Any]],
    who: str | None,
    stored: AttributionRow | None,
    preface: str = "",
) -> str:
    """The digest of everything a trace's page is drawn from (20 ms for a 20 MB stored
    trace: run it off the event loop)."""
    digest = hashlib.blake2b(digest_size=20)

    def add(text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)

    add(repr(dataclasses.replace(row, trace_json=None)))  # every field but the trace
    add(row.trace_json or "")
    for e in evaluations:
        add(repr(e))
    add(json.dumps(list(labels), sort_keys=True, default=str))
    add("\0" if who is None else who)
    add(repr(stored))
    add(preface)  # the rules' decisions and the session, drawn above the trace
    return digest.hexdigest()
