"""A stored trace's spans as its page shows them: each span's own name, kind, timing,
status, instrumentation, attributes and events (what Phoenix and Langfuse users look for:
a model call's and a tool run's own input and output as their spans recorded them, not
only as the converted trace's messages).

Read from the trace's stored OTLP batches with the converter's one wire reader, in tree
order (each span after its parent, siblings by start time), and bounded: at most
`MAX_SPANS` spans, each value cut at `MAX_VALUE` characters, `MAX_CHARS` in all (the page
says how many spans were left out).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

from tracejudge.convert import SpanRecord, read_otlp_batches
from tracejudge.server.store import SpanEncoding

__all__ = ["MAX_SPANS", "span_rows"]

MAX_SPANS = 2_000
MAX_VALUE = 4_000
MAX_CHARS = 2_000_000


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _records(batches: Sequence[tuple[SpanEncoding, bytes]]) -> list[SpanRecord]:
    records: list[SpanRecord] = []
    for encoding, separator in (("protobuf", b""), ("json", b"\n")):
        data = separator.join(payload for kind, payload in batches if kind == encoding)
        if data:
            for batch in read_otlp_batches(io.BytesIO(data)):
                records.extend(batch.spans)
    return records


def _tree_order(records: list[SpanRecord]) -> list[tuple[SpanRecord, int]]:
    """Each span after its parent (depth first), siblings by start; orphans as roots."""
    ids = {r.span_id for r in records}
    children: dict[str | None, list[SpanRecord]] = {}
    for record in records:
        parent = record.parent_id if record.parent_id in ids else None
        children.setdefault(parent, []).append(record)
    for siblings in children.values():
        siblings.sort(key=lambda r: (r.start_ns is None, r.start_ns or 0))
    ordered: list[tuple[SpanRecord, int]] = []
    stack = [(r, 0) for r in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        record, depth = stack.pop()
        if record.span_id in seen:  # a cycle of parents: each span once
            continue
        seen.add(record.span_id)
        ordered.append((record, depth))
        stack.extend((c, depth + 1) for c in reversed(children.get(record.span_id, [])))
    return ordered


def span_rows(batches: Sequence[tuple[SpanEncoding, bytes]]) -> dict[str, Any]:
    """`{"spans": [{"id", "parent", "depth", "name", "kind", "scope", "status", "t0",
    "dur" (milliseconds; t0 from the first span's start), "attrs": [[key, value]],
    "events": [[name, [[key, value]]]]}], "left_out": n}`."""
    ordered = _tree_order(_records(batches))
    starts = [r.start_ns for r, _ in ordered if r.start_ns is not None]
    first = min(starts) if starts else None
    rows: list[dict[str, Any]] = []
    used = 0
    for record, depth in ordered:
        if len(rows) >= MAX_SPANS or used >= MAX_CHARS:
            break
        attrs = [[key, _value(value)] for key, value in sorted(record.attributes.items())]
        events = [
            [event.name, [[k, _value(v)] for k, v in sorted(event.attributes.items())]]
            for event in record.events
        ]
        row: dict[str, Any] = {
            "id": record.span_id,
            "parent": record.parent_id,
            "depth": depth,
            "name": record.name,
            "kind": record.kind,
            "scope": record.scope,
            "status": record.status,
            "attrs": attrs,
            "events": events,
        }
        if record.start_ns is not None and first is not None:
            row["t0"] = (record.start_ns - first) / 1e6
            if record.end_ns is not None:
                row["dur"] = (record.end_ns - record.start_ns) / 1e6
        used += sum(len(k) + len(v) for k, v in attrs) + len(json.dumps(events))
        rows.append(row)
    return {"spans": rows, "left_out": len(ordered) - len(rows)}
