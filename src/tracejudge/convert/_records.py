"""The converter's own span record, and adapters from SDK spans and log records.

Every input (SDK `ReadableSpan`s, OTLP protobuf, OTLP/JSON) is normalised into
`SpanRecord`s first, so the tree walk and the convention modules see one shape:
hex ids, times in Unix seconds (None when unknown or still running), plain
attribute dicts whose values may be structured (OTLP kvlist/array values become
dicts/lists).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracejudge import semconv

__all__ = [
    "EventRecord",
    "SpanRecord",
    "attach_events",
    "describe",
    "hex_id",
    "log_event",
    "moved",
    "span_record",
]

STATUS_UNSET = "UNSET"
STATUS_OK = "OK"
STATUS_ERROR = "ERROR"


@dataclass(slots=True)
class EventRecord:
    """A span event, or a log record attached to the span it was emitted in.

    `body` is only set for log records (span events have none).
    """

    name: str
    time: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    body: Any = None


@dataclass(slots=True)
class SpanRecord:
    """One span, as the converter sees it."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None = None  # Unix nanoseconds; None when unknown
    end_ns: int | None = None  # None while the span is still running
    status: str = STATUS_UNSET
    status_message: str | None = None
    kind: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[EventRecord] = field(default_factory=list)
    #: The name of the instrumentation scope (library) that recorded the span, or None.
    scope: str | None = None
    #: The version of that instrumentation scope, or None when not recorded.
    scope_version: str | None = None
    #: The spans this span links to, as (trace id, span id): a framework that starts a
    #: new trace for each message it passes (AutoGen's runtime) ties them by links.
    links: tuple[tuple[str, str], ...] = ()

    @property
    def start(self) -> float | None:
        """Start time in Unix seconds."""
        return self.start_ns / 1e9 if self.start_ns is not None else None

    @property
    def end(self) -> float | None:
        """End time in Unix seconds; None while running."""
        return self.end_ns / 1e9 if self.end_ns is not None else None

    @property
    def running(self) -> bool:
        return self.end_ns is None


class _Named(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def span_id(self) -> str: ...


def describe(span: _Named) -> str:
    """How a warning names a span (a record, or a view of one)."""
    return f"span {span.name!r} ({span.span_id})"


def moved(
    spans: list[SpanRecord], new_parent: Mapping[str, str], new_end: Mapping[str, int]
) -> list[SpanRecord]:
    """`spans` with those named in `new_parent` re-parented (copies), and those named in
    `new_end` running until then when that is later than their own end (a span that
    gained steps ends when its last step does)."""
    result = []
    for span in spans:
        changes: dict[str, Any] = {}
        if span.span_id in new_parent:
            changes["parent_id"] = new_parent[span.span_id]
        end = new_end.get(span.span_id)
        if end is not None and span.end_ns is not None and end > span.end_ns:
            changes["end_ns"] = end
        result.append(dataclasses.replace(span, **changes) if changes else span)
    return result


def hex_id(value: Any, width: int) -> str | None:
    """An id as lower-case hex: ints are formatted, bytes hexed, strings kept."""
    if value is None:
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"{value:0{width}x}" if value else None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex() or None
    text = str(value).strip().lower()
    return text or None


def _nanos(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _nanos_to_seconds(value: Any) -> float | None:
    nanos = _nanos(value)
    return nanos / 1e9 if nanos is not None else None


def _plain(value: Any) -> Any:
    # SDK attribute values are str/bool/int/float or tuples of them; log bodies may nest.
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


_SCALARS = frozenset({str, int, float, bool})


def _attributes(value: Any) -> dict[str, Any]:
    if not value:
        return {}
    # `items()` of the SDK's read-only view is its dict's own (a copy with `dict()` goes
    # key by key); most values are scalars, kept as they are without `_plain`'s checks.
    items = value.items() if isinstance(value, Mapping) else None
    if items is None:
        try:
            items = dict(value).items()
        except (TypeError, ValueError):
            return {}
    scalars = _SCALARS
    return {
        k if type(k) is str else str(k): v if type(v) in scalars else _plain(v) for k, v in items
    }


def span_record(span: Any) -> SpanRecord:
    """A `SpanRecord` from an SDK `ReadableSpan` (or anything shaped like one).

    Raises `TypeError`/`AttributeError` when the object has no span context; the
    caller skips it and reports a warning.
    """
    if isinstance(span, SpanRecord):
        # A copy: attaching log records must not change the caller's records.
        return dataclasses.replace(span, events=list(span.events))
    context = (
        span.context if getattr(span, "context", None) is not None else span.get_span_context()
    )
    trace_id = hex_id(context.trace_id, 32)
    span_id = hex_id(context.span_id, 16)
    if trace_id is None or span_id is None:
        raise ValueError("span has an invalid span context")
    parent = getattr(span, "parent", None)
    parent_id = hex_id(parent.span_id, 16) if parent is not None else None
    status = getattr(span, "status", None)
    status_code = getattr(getattr(status, "status_code", None), "name", STATUS_UNSET)
    kind = getattr(getattr(span, "kind", None), "name", None)
    scope = getattr(span, "instrumentation_scope", None)
    events = [
        EventRecord(
            name=str(getattr(event, "name", "")),
            time=_nanos_to_seconds(getattr(event, "timestamp", None)),
            attributes=_attributes(getattr(event, "attributes", None)),
        )
        for event in (getattr(span, "events", None) or ())
    ]
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id,
        name=str(getattr(span, "name", "") or ""),
        start_ns=_nanos(getattr(span, "start_time", None)),
        end_ns=_nanos(getattr(span, "end_time", None)),
        status=str(status_code),
        status_message=getattr(status, "description", None),
        kind=kind,
        attributes=_attributes(getattr(span, "attributes", None)),
        events=events,
        scope=getattr(scope, "name", None) or None,
        scope_version=getattr(scope, "version", None) or None,
        links=_links(getattr(span, "links", None)),
    )


def _links(links: Any) -> tuple[tuple[str, str], ...]:
    """The (trace id, span id) of each of an SDK span's links with a valid context."""
    if not links:
        return ()
    found = []
    for link in links:
        context = getattr(link, "context", None)
        trace_id = hex_id(getattr(context, "trace_id", None), 32)
        span_id = hex_id(getattr(context, "span_id", None), 16)
        if trace_id is not None and span_id is not None:
            found.append((trace_id, span_id))
    return tuple(found)


def log_event(record: Any) -> tuple[str, str, EventRecord] | None:
    """(trace id, span id, event) from an SDK log record (`LogData` or `ReadableLogRecord`).

    Returns None for a log record emitted outside any span: it cannot be placed.
    """
    record = getattr(record, "log_record", record)
    trace_id = hex_id(getattr(record, "trace_id", None), 32)
    span_id = hex_id(getattr(record, "span_id", None), 16)
    if trace_id is None or span_id is None:
        return None
    attributes = _attributes(getattr(record, "attributes", None))
    name = getattr(record, "event_name", None) or attributes.get(semconv.EVENT_NAME) or ""
    event = EventRecord(
        name=str(name),
        time=_nanos_to_seconds(getattr(record, "timestamp", None)),
        attributes=attributes,
        body=_plain(getattr(record, "body", None)),
    )
    return trace_id, span_id, event


def attach_events(
    spans: Iterable[SpanRecord], events: Iterable[tuple[str, str, EventRecord]]
) -> int:
    """Append log-record events to their spans; returns how many found no span."""
    events = list(events)
    if not events:
        return 0
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    unplaced = 0
    for trace_id, span_id, event in events:
        span = by_id.get((trace_id, span_id))
        if span is None:
            unplaced += 1
        else:
            span.events.append(event)
    return unplaced
