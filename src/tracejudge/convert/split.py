"""One OTLP/HTTP trace request split by trace, without decoding its spans.

What a receiver of OTLP (the server's `POST /v1/traces`) needs before it stores spans:
the body inflated (`_inflate`, strict: gzip, any number of members, linear in its size
and bounded), its spans grouped by trace id, each group as an OTLP request of its own in
the request's encoding (protobuf stays protobuf, cut from the request's own bytes;
OTLP/JSON stays JSON), which the converter reads back as it reads any OTLP; whether the
group holds a root span; the scalar attributes of its resource, and its tags (attributes named
`tracejudge.tags.<key>` on that resource or on any of its spans); its earliest span
start and latest span end; and the spans rejected, with the reason. The HTTP concerns
(content types, size answers, encodings of the answer) stay with the receiver.

The id rule is OpenTelemetry's: a trace id is 16 bytes and a span id 8, neither all
zero; OTLP/JSON writes them as hex (or base64, as protobuf's `json_format` does). A span
that breaks it is rejected and counted. Spans of the `tracejudge.evaluation` scope
(scores written back onto traces) are counted as ignored, not kept: a pipeline that
sends them back must not reopen a scored trace.

A protobuf request is walked field by field at the byte level (`_protowire.fields`, the
one wire reader): only a span's ids, times and tag attributes are read, everything else
is copied as bytes. A framing error anywhere makes the whole request unreadable
(`OTLPDecodeError`), as a receiver answers 400 to it.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tracejudge import semconv
from tracejudge._protowire import WireError, length_delimited, read_varint
from tracejudge._protowire import fields as _fields
from tracejudge.convert import _json
from tracejudge.convert._errors import OTLPDecodeError, OTLPTooLargeError
from tracejudge.convert._ids import json_id_bytes, valid_id
from tracejudge.convert._inflate import inflate_gzip

__all__ = [
    "OTLPSplit",
    "OTLPTooLargeError",
    "TracePart",
    "inflate_gzip",
    "split_otlp",
    "valid_id",
]

Encoding = Literal["protobuf", "json"]


@dataclass
class TracePart:
    """The spans of one trace in one request, as an OTLP request of their own."""

    trace_id: str
    encoding: Encoding
    #: An ExportTraceServiceRequest: protobuf bytes, or OTLP/JSON text encoded as UTF-8.
    payload: bytes
    span_count: int = 0
    has_root: bool = False
    #: The scalar attributes (strings, booleans, numbers, as text) of the resource of the
    #: trace's first span, but its tags.
    resource: dict[str, str] = field(default_factory=dict)
    #: `tracejudge.tags.<key>` attributes as `<key>`: that resource's, then its spans' (a
    #: later value of a key replaces an earlier one).
    tags: dict[str, str] = field(default_factory=dict)
    #: The earliest span start and the latest span end (Unix nanoseconds; spans that
    #: do not record one are left out).
    start: int | None = None
    end: int | None = None

    def saw(self, start: int, end: int) -> None:
        """Count one span with its times (0: not recorded)."""
        self.span_count += 1
        if start > 0 and (self.start is None or start < self.start):
            self.start = start
        if end > 0 and (self.end is None or end > self.end):
            self.end = end


@dataclass
class OTLPSplit:
    """A request split by trace, and what was left out."""

    parts: list[TracePart] = field(default_factory=list)
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)
    #: Spans of the evaluation scope: accepted, not kept.
    ignored: int = 0

    @property
    def accepted(self) -> int:
        return sum(part.span_count for part in self.parts)


# --------------------------------------------------------------------------- protobuf


_TAG_PREFIX = semconv.TRACEJUDGE_TAG_PREFIX
_TAG_PREFIX_BYTES = _TAG_PREFIX.encode()


def _text(value: Any) -> str | None:
    """An attribute's scalar value as text (strings, numbers, booleans), else None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def _add_tags(tags: dict[str, str], attributes: dict[str, str]) -> None:
    for key, value in attributes.items():
        if key.startswith(_TAG_PREFIX) and len(key) > len(_TAG_PREFIX):
            tags[key[len(_TAG_PREFIX) :]] = value


def _resource_parts(attributes: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A resource's (attributes, tags): its tag attributes apart from the rest."""
    tags: dict[str, str] = {}
    _add_tags(tags, attributes)
    rest = {k: v for k, v in attributes.items() if not k.startswith(_TAG_PREFIX)}
    return rest, tags


def _pb_any(data: bytes, start: int, end: int) -> str | None:
    """An AnyValue's scalar (1 string, 2 bool, 3 int64, 4 double) as text, else None."""
    for number, wire, a, b in _fields(data, start, end):
        if number == 1 and wire == 2:
            return data[a:b].decode("utf-8", "replace")
        if number == 2 and wire == 0:
            return _text(bool(read_varint(data, a, b)[0]))
        if number == 3 and wire == 0:
            value = read_varint(data, a, b)[0]
            return str(value - (1 << 64) if value >= 1 << 63 else value)
        if number == 4 and wire == 1:
            return str(struct.unpack_from("<d", data, a)[0])
    return None


def _pb_attributes(
    data: bytes, start: int, end: int, field_number: int = 1, prefix: bytes = b""
) -> dict[str, str]:
    """The scalar attributes (KeyValue{1 key, 2 AnyValue}, field `field_number`) of the
    message in data[start:end] whose key starts with `prefix`, as text."""
    found: dict[str, str] = {}
    for number, wire, a, b in _fields(data, start, end):
        if number != field_number or wire != 2:
            continue
        key: str | None = None
        value: str | None = None
        for n, w, c, d in _fields(data, a, b):
            if n == 1 and w == 2:
                if not data.startswith(prefix, c, d):
                    break
                key = data[c:d].decode("utf-8", "replace")
            elif n == 2 and w == 2:
                value = _pb_any(data, c, d)
        if key and value is not None:
            found[key] = value
    return found


def _pb_scope_name(data: bytes, start: int, end: int) -> str:
    for number, wire, a, b in _fields(data, start, end):
        if number == 1 and wire == 2:
            return data[a:b].decode("utf-8", "replace")
    return ""


@dataclass
class _Group:
    """One trace's spans under one resource and scope: their bytes, framed."""

    spans: list[bytes] = field(default_factory=list)


@dataclass
class _Found:
    part: TracePart
    # (resource index, scope index) -> span fields, in request order
    groups: dict[tuple[int, int], _Group] = field(default_factory=dict)


def _split_protobuf(data: bytes, split: OTLPSplit) -> None:
    found: dict[str, _Found] = {}
    # Per resource: its framing without its scope_spans (resource, schema_url); per scope:
    # its framing without its spans (scope, schema_url).
    resource_heads: list[bytes] = []
    scope_heads: dict[tuple[int, int], bytes] = {}
    resources: list[dict[str, str]] = []
    bad_ids = 0
    for number, wire, a, b in _fields(data, 0, len(data)):
        if number != 1 or wire != 2:
            continue
        r = len(resource_heads)
        head: list[bytes] = []
        attributes: dict[str, str] = {}
        scopes = 0
        for n, w, c, d in _fields(data, a, b):
            if n == 2 and w == 2:  # ScopeSpans
                s = scopes
                scopes += 1
                scope_head: list[bytes] = []
                evaluation = False
                for m, x, e, f in _fields(data, c, d):
                    if m == 1 and x == 2:
                        scope_head.append(length_delimited(1, data[e:f]))
                        evaluation = _pb_scope_name(data, e, f) == semconv.EVALUATION_SCOPE
                    elif m == 2 and x == 2:
                        if evaluation:
                            split.ignored += 1
                            continue
                        read = _pb_span(data, e, f)
                        if not (valid_id(read.trace, 16) and valid_id(read.span, 8)):
                            bad_ids += 1
                            continue
                        key = read.trace.hex()
                        entry = found.get(key)
                        if entry is None:
                            rest, tags = _resource_parts(attributes)
                            part = TracePart(key, "protobuf", b"", resource=rest, tags=tags)
                            entry = found[key] = _Found(part)
                        group = entry.groups.setdefault((r, s), _Group())
                        group.spans.append(length_delimited(2, data[e:f]))
                        entry.part.saw(read.start, read.end)
                        entry.part.has_root = entry.part.has_root or read.root
                        if read.tags:
                            _add_tags(entry.part.tags, read.tags)
                    elif x == 2:
                        scope_head.append(length_delimited(m, data[e:f]))
                scope_heads[(r, s)] = b"".join(scope_head)
            elif n == 1 and w == 2:  # Resource
                attributes.update(_pb_attributes(data, c, d))
                head.append(length_delimited(1, data[c:d]))
            elif w == 2:
                head.append(length_delimited(n, data[c:d]))
        resource_heads.append(b"".join(head))
        resources.append(attributes)
    if bad_ids:
        split.rejected += bad_ids
        split.reasons.append(
            f"{bad_ids} spans have no valid trace_id (16 bytes, not all zero) or span_id "
            "(8 bytes, not all zero)"
        )
    for entry in found.values():
        by_resource: dict[int, list[bytes]] = {}
        for (r, s), group in entry.groups.items():
            scope_spans = scope_heads.get((r, s), b"") + b"".join(group.spans)
            by_resource.setdefault(r, []).append(length_delimited(2, scope_spans))
        entry.part.payload = b"".join(
            length_delimited(1, resource_heads[r] + b"".join(pieces))
            for r, pieces in by_resource.items()
        )
        split.parts.append(entry.part)


@dataclass
class _SpanRead:
    trace: bytes
    span: bytes
    root: bool
    start: int
    end: int
    tags: dict[str, str]


def _pb_span(data: bytes, start: int, end: int) -> _SpanRead:
    """A Span's trace_id (1), span_id (2), whether it is a root (no valid parent, 4), its
    start and end (7, 8: fixed64 nanoseconds) and its tag attributes (9)."""
    trace = span = parent = b""
    began = ended = 0
    for number, wire, a, b in _fields(data, start, end):
        if wire == 2:
            if number == 1:
                trace = data[a:b]
            elif number == 2:
                span = data[a:b]
            elif number == 4:
                parent = data[a:b]
        elif wire == 1 and number in (7, 8):
            value = int.from_bytes(data[a:b], "little")
            if number == 7:
                began = value
            else:
                ended = value
    # Most spans have no tag: a byte search skips walking their attributes.
    tags = (
        _pb_attributes(data, start, end, 9, _TAG_PREFIX_BYTES)
        if data.find(_TAG_PREFIX_BYTES, start, end) >= 0
        else {}
    )
    return _SpanRead(trace, span, not valid_id(parent, 8), began, ended, tags)


# --------------------------------------------------------------------------- JSON


def _listed(value: Any, *keys: str) -> list[Any]:
    if isinstance(value, dict):
        for key in keys:
            found = value.get(key)
            if isinstance(found, list):
                return found
    return []


_JSON_SCALARS = (
    ("stringValue", "string_value"),
    ("boolValue", "bool_value"),
    ("intValue", "int_value"),
    ("doubleValue", "double_value"),
)


def _json_attributes(attributes: Any, prefix: str = "") -> dict[str, str]:
    """The scalar OTLP/JSON attributes named `prefix...`, as text (ints are written as
    strings in OTLP/JSON, and stay so)."""
    found: dict[str, str] = {}
    if not isinstance(attributes, list):
        return found
    for item in attributes:
        if not isinstance(item, dict) or not isinstance(value := item.get("value"), dict):
            continue
        key = item.get("key")
        if not isinstance(key, str) or not key or not key.startswith(prefix):
            continue
        for camel, snake in _JSON_SCALARS:
            text = _text(value.get(camel, value.get(snake)))
            if text is not None:
                found[key] = text
                break
    return found


def _json_time(value: Any) -> int:
    """A span time in Unix nanoseconds (OTLP/JSON writes them as strings), 0 if unread."""
    if isinstance(value, bool):
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _split_json(document: Any, split: OTLPSplit) -> None:
    if not isinstance(document, dict):
        raise OTLPDecodeError("the body is not an OTLP/JSON ExportTraceServiceRequest object")
    found: dict[str, tuple[TracePart, dict[int, dict[int, list[Any]]]]] = {}
    resources = _listed(document, "resourceSpans", "resource_spans")
    bad_ids = 0
    for r, resource_spans in enumerate(resources):
        resource = resource_spans.get("resource") if isinstance(resource_spans, dict) else None
        attributes = _json_attributes(_get(resource, "attributes"))
        for s, scope_spans in enumerate(_listed(resource_spans, "scopeSpans", "scope_spans")):
            scope = scope_spans.get("scope") if isinstance(scope_spans, dict) else None
            spans = _listed(scope_spans, "spans")
            if isinstance(scope, dict) and scope.get("name") == semconv.EVALUATION_SCOPE:
                split.ignored += len(spans)
                continue
            for span in spans:
                trace = json_id_bytes(_get(span, "traceId", "trace_id"), 16)
                span_id = json_id_bytes(_get(span, "spanId", "span_id"), 8)
                if not (valid_id(trace, 16) and valid_id(span_id, 8)):
                    bad_ids += 1
                    continue
                key = trace.hex()
                if key not in found:
                    rest, tags = _resource_parts(attributes)
                    found[key] = (TracePart(key, "json", b"", resource=rest, tags=tags), {})
                part, groups = found[key]
                groups.setdefault(r, {}).setdefault(s, []).append(span)
                part.saw(
                    _json_time(_get(span, "startTimeUnixNano", "start_time_unix_nano")),
                    _json_time(_get(span, "endTimeUnixNano", "end_time_unix_nano")),
                )
                _add_tags(part.tags, _json_attributes(_get(span, "attributes"), _TAG_PREFIX))
                parent = json_id_bytes(_get(span, "parentSpanId", "parent_span_id"), 8)
                part.has_root = part.has_root or not valid_id(parent, 8)
    if bad_ids:
        split.rejected += bad_ids
        split.reasons.append(
            f"{bad_ids} spans have no valid traceId (32 hex digits, not all zero) or spanId "
            "(16 hex digits, not all zero)"
        )
    for part, groups in found.values():
        resource_spans_out = []
        for r, scopes in groups.items():
            original = resources[r]
            scope_spans_out = []
            for s, spans in scopes.items():
                scope_spans = _listed(original, "scopeSpans", "scope_spans")[s]
                entry = {k: v for k, v in scope_spans.items() if k != "spans"}
                entry["spans"] = spans
                scope_spans_out.append(entry)
            item = {k: v for k, v in original.items() if k not in ("scopeSpans", "scope_spans")}
            item["scopeSpans"] = scope_spans_out
            resource_spans_out.append(item)
        text = json.dumps({"resourceSpans": resource_spans_out}, separators=(",", ":"))
        part.payload = text.encode("utf-8")
        split.parts.append(part)


def _get(value: Any, *keys: str) -> Any:
    if isinstance(value, dict):
        for key in keys:
            if key in value:
                return value[key]
    return None


# --------------------------------------------------------------------------- entry


def split_otlp(
    body: bytes,
    encoding: Encoding,
    *,
    gzipped: bool = False,
    max_bytes: int | None = None,
    loads: Callable[[bytes], Any] = _json.loads,
) -> OTLPSplit:
    """`body` (an ExportTraceServiceRequest in `encoding`, gzip-compressed when
    `gzipped`) split by trace; OTLP/JSON parsed by `loads` (a receiver's own, that
    refuses what it does not read, with a `ValueError`).

    Raises `OTLPTooLargeError` when the body inflates past `max_bytes`, and
    `OTLPDecodeError` naming the problem when it is not readable OTLP (bad gzip, bad
    protobuf framing, JSON that does not parse, is nested too deep, or is not an object).
    """
    if gzipped:
        body = inflate_gzip(body, max_bytes if max_bytes is not None else len(body) * 1024)
    elif max_bytes is not None and len(body) > max_bytes:
        raise OTLPTooLargeError(max_bytes)
    split = OTLPSplit()
    if encoding == "protobuf":
        try:
            _split_protobuf(body, split)
        except WireError as error:
            raise OTLPDecodeError(f"the protobuf body does not parse: {error}") from None
        return split
    try:
        document = loads(body)
    except RecursionError:
        raise OTLPDecodeError("the JSON body is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise OTLPDecodeError(f"the body is not JSON ({error})") from None
    _split_json(document, split)
    return split
