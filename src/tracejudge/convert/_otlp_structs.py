"""OTLP/JSON trace requests as msgspec Structs: a line decoded straight into these skips
building a dict per object, and reading it skips a lookup per key.

Only the usual shape decodes: camelCase keys (as OTLP/JSON writes them), objects and
lists where the schema has them. A request with a snake_case key (as protobuf's
`json_format` may write), log records, or a value of another type fails to decode, and
is read as plain JSON instead, with the same result. Fields the converter does not read
are not declared (msgspec skips them); values whose type the converter checks itself
are `Any`. The Structs are not tracked by the cyclic collector (`gc=False`): decoded
JSON holds no cycles. Importing this module needs msgspec (the `speed` extra).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Struct

__all__ = ["UNSET", "AnyValue", "Request", "decode"]

#: A key that sends the request to the plain path: no JSON value decodes as this type.
Refused = Annotated[int, msgspec.Meta(ge=1, le=0)]


class AnyValue(Struct, forbid_unknown_fields=True, gc=False):
    # UNSET where the key is absent: a present null is a value (the plain path's `in`).
    # Any other key (a snake_case one) fails: the plain path reads it.
    stringValue: Any = UNSET
    boolValue: Any = UNSET
    intValue: Any = UNSET
    doubleValue: Any = UNSET
    arrayValue: Any = None
    kvlistValue: Any = None
    bytesValue: Any = None


class KeyValue(Struct, forbid_unknown_fields=True, gc=False):
    key: Any = None
    value: AnyValue | None = None


class Event(Struct, gc=False):
    name: Any = None
    timeUnixNano: Any = None
    attributes: list[KeyValue] = []
    time_unix_nano: Refused = 0


class Status(Struct, gc=False):
    code: Any = None
    message: Any = None


class Link(Struct, gc=False):
    traceId: Any = None
    spanId: Any = None
    trace_id: Refused = 0
    span_id: Refused = 0


class Span(Struct, gc=False):
    traceId: Any = None
    spanId: Any = None
    parentSpanId: Any = None
    name: Any = None
    kind: Any = None
    startTimeUnixNano: Any = None
    endTimeUnixNano: Any = None
    attributes: list[KeyValue] = []
    events: list[Event] = []
    links: list[Link] = []
    status: Status | None = None
    trace_id: Refused = 0
    span_id: Refused = 0
    parent_span_id: Refused = 0
    start_time_unix_nano: Refused = 0
    end_time_unix_nano: Refused = 0


class Scope(Struct, gc=False):
    name: Any = None
    version: Any = None


class ScopeSpans(Struct, gc=False):
    scope: Scope | None = None
    spans: list[Span] = []


class ResourceSpans(Struct, gc=False):
    scopeSpans: list[ScopeSpans] = []
    scope_spans: Refused = 0


class Request(Struct, gc=False):
    resourceSpans: list[ResourceSpans]
    resource_spans: Refused = 0
    resourceLogs: Refused = 0
    resource_logs: Refused = 0


_decoder = msgspec.json.Decoder(Request)


def decode(data: str | bytes) -> Request | None:
    """`data` as a Request, or None when it is not one of the usual shape (or not JSON
    msgspec reads): the plain path decides what it is."""
    if isinstance(data, bytes) and not data.isascii():
        # msgspec skips undeclared fields without checking their UTF-8: check it here, so
        # that bytes the plain path rejects are rejected (by the plain path) still.
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        return _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
