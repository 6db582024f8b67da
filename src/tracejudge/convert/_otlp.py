"""OTLP trace data -> span records: protobuf `ExportTraceServiceRequest` bytes, and
OTLP/JSON (one request object per line, as the Collector's file exporter writes,
or one JSON document; hex ids as OTLP/JSON specifies, or base64 ids as protobuf's
`json_format` writes).

Decoding is best effort: a truncated or partly corrupt input yields the spans that
can be read, with warnings; only an input that is not OTLP at all raises
`OTLPDecodeError` here (which `traces_from_otlp` turns into a warning). OTLP/JSON log
records (`resourceLogs`) tied to a span become events of that span, so content that
GenAI instrumentations log separately is read too.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import os
import re
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert._records import (
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    EventRecord,
    SpanRecord,
)

__all__ = ["MAX_INFLATED_BYTES", "OTLPDecodeError", "decode", "decode_logs", "read_source"]

PlacedEvent = tuple[str, str, EventRecord]

_STATUS_BY_CODE = {0: STATUS_UNSET, 1: STATUS_OK, 2: STATUS_ERROR}
_KIND_NAMES = {0: None, 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_SPAN_START = re.compile(r'\{\s*"(?:traceId|trace_id)"\s*:')

#: The most bytes a gzip input is inflated to (a small file can inflate without bound);
#: what lies beyond is not read, and a warning says so.
MAX_INFLATED_BYTES = 256 * 1024 * 1024


class OTLPDecodeError(ValueError):
    """Raised by the decoders here when an input is not OTLP at all (neither protobuf
    `ExportTraceServiceRequest` nor OTLP/JSON). `traces_from_otlp` never lets it out:
    it reports the reason as a warning on its (empty) result. Partly broken input does
    not raise at all: what can be read is converted and the rest reported as warnings."""


# --------------------------------------------------------------------------- input


def read_source(source: bytes | bytearray | memoryview | str | os.PathLike[str]) -> bytes | str:
    """The data: bytes as given, text as given, or a file's bytes for a path."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, os.PathLike):
        with open(source, "rb") as handle:
            return handle.read()
    if isinstance(source, str):
        stripped = source.lstrip()
        if not stripped or stripped.startswith(("{", "[")):
            return source
        if "\n" not in source and len(source) < 4096 and os.path.isfile(source):
            with open(source, "rb") as handle:
                return handle.read()
        raise OTLPDecodeError(
            f"the text is neither OTLP/JSON nor the path of an existing file: {source[:80]!r}"
        )
    raise TypeError(
        f"expected bytes, text or a path of OTLP trace data, got {type(source).__name__}"
    )


def decode(
    data: bytes | str, *, max_inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[list[SpanRecord], list[PlacedEvent], list[str]]:
    """(spans, log-record events with the span they belong to, warnings). Gzip input is
    inflated to at most `max_inflated_bytes`."""
    warnings: list[str] = []
    if isinstance(data, bytes):
        data = _inflate(data, warnings, max_inflated_bytes)
        if not data.strip():
            return [], [], warnings
        if data.lstrip()[:1] in (b"{", b"["):
            inflate_warnings = list(warnings)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                try:
                    return _decode_json(text, warnings)
                except OTLPDecodeError as json_error:
                    # Protobuf can start with "\n{" too (field 1, length 123).
                    try:
                        spans, pb_warnings = _decode_protobuf(data, inflate_warnings)
                    except OTLPDecodeError:
                        raise json_error from None
                    return spans, [], pb_warnings
        spans, pb_warnings = _decode_protobuf(data, warnings)
        return spans, [], pb_warnings
    if not data.strip():
        return [], [], warnings
    return _decode_json(data, warnings)


def decode_logs(
    data: bytes | str, *, max_inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[list[PlacedEvent], list[str]]:
    """OTLP log data (protobuf `ExportLogsServiceRequest` or OTLP/JSON): the records tied
    to a span, as events of that span, and warnings. Gzip input is inflated to at most
    `max_inflated_bytes`."""
    warnings: list[str] = []
    if isinstance(data, bytes):
        data = _inflate(data, warnings, max_inflated_bytes)
        if not data.strip():
            return [], warnings
        if data.lstrip()[:1] not in (b"{", b"["):
            return _decode_protobuf_logs(data, warnings), warnings
        data = data.decode("utf-8", errors="replace")
    if not data.strip():
        return [], warnings
    _, events, warnings = _decode_json(data, warnings)
    return events, warnings


def _inflate(data: bytes, warnings: list[str], limit: int = MAX_INFLATED_BYTES) -> bytes:
    """`data` uncompressed when it is gzip (every member of it, as `gzip -c a b` or a
    Collector appending to a file writes), cut at `limit` bytes with a warning; other
    data as it is."""
    if data[:2] != b"\x1f\x8b":
        return data
    pieces: list[bytes] = []
    size = members = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        try:
            # max_length 0 would mean "no limit": ask for one byte past the room left.
            piece = inflater.decompress(rest, limit - size + 1)
        except zlib.error as exc:
            if not members:
                raise OTLPDecodeError(f"gzip input that does not inflate: {exc}") from None
            warnings.append(f"gzip member {members + 1} does not inflate ({exc}); ignored")
            break
        if size + len(piece) > limit:
            pieces.append(piece[: limit - size])
            warnings.append(
                f"gzip input inflates to more than {limit} bytes; only the first {limit} were read"
            )
            break
        pieces.append(piece)
        size += len(piece)
        members += 1
        if not inflater.eof:
            warnings.append(f"gzip member {members} is truncated; read what it holds")
            break
        rest = inflater.unused_data.lstrip(b"\x00")  # gzip tools pad with zeros
        if rest and rest[:2] != b"\x1f\x8b":
            warnings.append(f"{len(rest)} bytes after the gzip data are not gzip; ignored")
            break
    return b"".join(pieces)


# --------------------------------------------------------------------------- protobuf


def _proto(module: str) -> Any:
    """A protobuf module of opentelemetry-proto, imported when protobuf is first read."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            "reading OTLP protobuf needs the opentelemetry-proto package: "
            "pip install opentelemetry-proto (or pip install 'tracejudge[proto]')"
        ) from exc


def _decode_protobuf(data: bytes, warnings: list[str]) -> tuple[list[SpanRecord], list[str]]:
    trace_service_pb2 = _proto("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    trace_pb2 = _proto("opentelemetry.proto.trace.v1.trace_pb2")
    DecodeError = _proto("google.protobuf.message").DecodeError  # noqa: N806

    request = trace_service_pb2.ExportTraceServiceRequest()
    spans: list[SpanRecord] = []
    try:
        request.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        # Truncated or corrupt: salvage every span that still parses on its own.
        found, broken = _salvage(data, trace_pb2)
        if not found:
            raise OTLPDecodeError(
                f"not OTLP trace data: protobuf ExportTraceServiceRequest does not parse ({exc})"
            ) from None
        warnings.append(
            f"OTLP protobuf input is truncated or corrupt ({exc}); read {len(found)} spans, "
            f"skipped {broken} unreadable parts"
        )
        spans.extend(_pb_span(span, warnings) for span in found)
        return spans, warnings
    if not request.resource_spans:
        raise OTLPDecodeError(
            "not OTLP trace data: the bytes hold no resource spans "
            f"({len(data)} bytes, starting {data[:8]!r})"
        )
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name or None
            spans.extend(_pb_span(span, warnings, scope) for span in scope_spans.spans)
    return spans, warnings


def _fields(data: bytes) -> Iterator[tuple[int, int, bytes, bool]]:
    """Top-level protobuf fields: (number, wire type, payload, complete). Stops at the
    first field that cannot be read; a truncated last payload is given as incomplete."""
    pos, size = 0, len(data)

    def varint() -> int | None:
        nonlocal pos
        shift = result = 0
        while pos < size and shift < 64:
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
        return None

    while pos < size:
        key = varint()
        if key is None or key >> 3 == 0:
            return
        number, wire = key >> 3, key & 7
        if wire == 0:
            if varint() is None:
                return
            yield number, wire, b"", True
        elif wire == 1 or wire == 5:
            width = 8 if wire == 1 else 4
            complete = pos + width <= size
            yield number, wire, data[pos : pos + width], complete
            pos += width
        elif wire == 2:
            length = varint()
            if length is None:
                return
            payload = data[pos : pos + length]
            yield number, wire, payload, pos + length <= size
            pos += length
        else:
            return  # groups are not used by OTLP: not OTLP from here on


def _salvage(data: bytes, trace_pb2: Any) -> tuple[list[Any], int]:
    """Spans recoverable from a broken ExportTraceServiceRequest, level by level."""
    spans: list[Any] = []
    broken = 0

    def parse(message_type: Any, payload: bytes) -> Any | None:
        message = message_type()
        try:
            message.ParseFromString(payload)
        except Exception:  # DecodeError and friends: fall back to the level below
            return None
        return message

    def walk(payload: bytes, complete: bool, level: int) -> None:
        nonlocal broken
        # level 0: ResourceSpans (field 2: ScopeSpans); level 1: ScopeSpans (field 2: Span)
        message_type = (trace_pb2.ResourceSpans, trace_pb2.ScopeSpans)[level]
        whole = parse(message_type, payload) if complete else None
        if whole is not None:
            if level == 0:
                for scope in whole.scope_spans:
                    spans.extend(scope.spans)
            else:
                spans.extend(whole.spans)
            return
        for number, wire, inner, inner_complete in _fields(payload):
            if number != 2 or wire != 2:
                continue
            if level == 0:
                walk(inner, inner_complete, 1)
            else:
                span = parse(trace_pb2.Span, inner) if inner_complete else None
                if span is not None and span.span_id:
                    spans.append(span)
                else:
                    broken += 1

    for number, wire, payload, complete in _fields(data):
        if number == 1 and wire == 2:
            walk(payload, complete, 0)
        else:
            broken += 1
    return spans, broken


def _decode_protobuf_logs(data: bytes, warnings: list[str]) -> list[PlacedEvent]:
    logs_service_pb2 = _proto("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
    request = logs_service_pb2.ExportLogsServiceRequest()
    try:
        request.ParseFromString(data)
    except Exception as exc:  # DecodeError and friends
        raise OTLPDecodeError(f"not OTLP log data: protobuf does not parse ({exc})") from None
    if not request.resource_logs:
        raise OTLPDecodeError("not OTLP log data: the bytes hold no resource logs")
    events: list[PlacedEvent] = []
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                if not record.trace_id or not record.span_id:
                    continue
                attributes = _pb_attributes(record.attributes)
                name = record.event_name or attributes.get(semconv.EVENT_NAME) or ""
                time = record.time_unix_nano or record.observed_time_unix_nano
                body = _pb_value(record.body) if record.HasField("body") else None
                event = EventRecord(
                    name=str(name), time=_seconds(time), attributes=attributes, body=body
                )
                events.append((record.trace_id.hex(), record.span_id.hex(), event))
    return events


def _pb_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_pb_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _pb_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def _pb_attributes(key_values: Any) -> dict[str, Any]:
    return {kv.key: _pb_value(kv.value) for kv in key_values}


def _seconds(nanos: int) -> float | None:
    return nanos / 1e9 if nanos > 0 else None


def _pb_span(span: Any, warnings: list[str], scope: str | None = None) -> SpanRecord:
    return SpanRecord(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex() or None,
        name=span.name,
        start_ns=span.start_time_unix_nano or None,
        end_ns=span.end_time_unix_nano or None,
        status=_STATUS_BY_CODE.get(span.status.code, STATUS_UNSET),
        status_message=span.status.message or None,
        kind=_KIND_NAMES.get(span.kind),
        attributes=_pb_attributes(span.attributes),
        events=[
            EventRecord(
                name=event.name,
                time=_seconds(event.time_unix_nano),
                attributes=_pb_attributes(event.attributes),
            )
            for event in span.events
        ],
        scope=scope,
    )


# --------------------------------------------------------------------------- JSON


def _decode_json(
    text: str, warnings: list[str]
) -> tuple[list[SpanRecord], list[PlacedEvent], list[str]]:
    documents: list[tuple[str, Any]] = []
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
        bad_lines = 0
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append((f"line {number}", json.loads(line)))
            except (ValueError, RecursionError) as exc:
                bad_lines += 1
                if bad_lines <= 5:
                    reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "unreadable"
                    warnings.append(f"OTLP/JSON line {number} is not JSON ({reason}); skipped")
        if bad_lines > 5:
            warnings.append(f"OTLP/JSON: {bad_lines} lines in all are not JSON; skipped")
    else:
        if isinstance(whole, list):
            documents = [(f"item {i}", item) for i, item in enumerate(whole)]
        else:
            documents = [("document", whole)]

    spans: list[SpanRecord] = []
    events: list[PlacedEvent] = []
    otlp_documents = 0
    for where, document in documents:
        if not isinstance(document, Mapping):
            warnings.append(f"OTLP/JSON {where} is not an object; skipped")
            continue
        resource_spans = _get(document, "resourceSpans", "resource_spans")
        resource_logs = _get(document, "resourceLogs", "resource_logs")
        if resource_spans is None and resource_logs is None:
            warnings.append(f"OTLP/JSON {where} holds neither resourceSpans nor resourceLogs")
            continue
        otlp_documents += 1
        for scope in _children(resource_spans, "scopeSpans", "scope_spans"):
            scope_name = _get(_get(scope, "scope"), "name")
            for raw in _list(_get(scope, "spans")):
                span = _guarded(_json_span, raw, where, warnings)
                if span is not None:
                    if isinstance(scope_name, str) and scope_name:
                        span.scope = scope_name
                    spans.append(span)
        for scope in _children(resource_logs, "scopeLogs", "scope_logs"):
            for raw in _list(_get(scope, "logRecords", "log_records")):
                placed = _guarded(_json_log, raw, where, warnings)
                if placed is not None:
                    events.append(placed)

    if otlp_documents == 0:
        if whole is None:
            salvaged = _salvage_json_spans(text, warnings)
            if salvaged:
                return salvaged, events, warnings
        raise OTLPDecodeError(
            "not OTLP trace data: no JSON object with resourceSpans or resourceLogs found"
        )
    return spans, events, warnings


def _guarded(convert: Any, raw: Any, where: str, warnings: list[str]) -> Any:
    try:
        return convert(raw, where, warnings)
    except RecursionError:  # values nested deeper than Python recurses
        warnings.append(f"OTLP/JSON {where}: a span or log record nested too deeply; skipped")
        return None


def _salvage_json_spans(text: str, warnings: list[str]) -> list[SpanRecord]:
    """Complete span objects from a truncated OTLP/JSON document."""
    decoder = json.JSONDecoder()
    spans: list[SpanRecord] = []
    for match in _SPAN_START.finditer(text):
        try:
            raw, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        span = _guarded(_json_span, raw, "salvaged span", warnings)
        if span is not None:
            spans.append(span)
    if spans:
        warnings.append(f"OTLP/JSON input is truncated; read {len(spans)} complete spans")
    return spans


def _get(mapping: Any, *keys: str) -> Any:
    if not isinstance(mapping, Mapping):
        return None
    for key in keys:
        if key in mapping:
            return mapping[key]
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _children(resources: Any, *keys: str) -> Iterator[Any]:
    for resource in _list(resources):
        yield from _list(_get(resource, *keys))


def _json_id(value: Any, size: int) -> str | None:
    """Hex as OTLP/JSON writes ids, or base64 as protobuf's json_format does."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if len(text) == size * 2:
        try:
            bytes.fromhex(text)
            return text.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size:
        return raw.hex()
    return text.lower()


def _json_int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, (str, float)):
        try:
            return int(value)
        except (ValueError, OverflowError):
            return 0
    return 0


def _json_nanos(value: Any) -> int | None:
    nanos = _json_int(value)
    return nanos if nanos > 0 else None


def _json_value(value: Any) -> Any:
    """An OTLP/JSON AnyValue (camelCase or snake_case keys) as a plain value."""
    if not isinstance(value, Mapping):
        return value
    for key, convert in (
        ("stringValue", None),
        ("string_value", None),
        ("boolValue", None),
        ("bool_value", None),
        ("intValue", _json_int),
        ("int_value", _json_int),
        ("doubleValue", None),
        ("double_value", None),
    ):
        if key in value:
            return convert(value[key]) if convert else value[key]
    array = _get(value, "arrayValue", "array_value")
    if array is not None:
        return [_json_value(v) for v in _list(_get(array, "values"))]
    kvlist = _get(value, "kvlistValue", "kvlist_value")
    if kvlist is not None:
        return _json_attributes(_get(kvlist, "values"))
    raw = _get(value, "bytesValue", "bytes_value")
    if isinstance(raw, str):
        try:
            return base64.b64decode(raw)
        except (binascii.Error, ValueError):
            return raw
    return None


def _json_attributes(values: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for item in _list(values):
        key = _get(item, "key")
        if isinstance(key, str):
            attributes[key] = _json_value(_get(item, "value"))
    return attributes


def _json_enum(value: Any, names: Mapping[int, str | None], prefix: str) -> str | None:
    if isinstance(value, str) and not value.isdigit():
        return value.upper().removeprefix(prefix) or None
    return names.get(_json_int(value))


def _json_ids(raw: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(trace id, span id) of an OTLP/JSON span or log record."""
    return (
        _json_id(_get(raw, "traceId", "trace_id"), 16),
        _json_id(_get(raw, "spanId", "span_id"), 8),
    )


def _json_span(raw: Any, where: str, warnings: list[str]) -> SpanRecord | None:
    if not isinstance(raw, Mapping):
        return None
    trace_id, span_id = _json_ids(raw)
    if trace_id is None or span_id is None:
        warnings.append(f"OTLP/JSON {where}: a span without trace or span id; skipped")
        return None
    status = _get(raw, "status")
    status_name = _json_enum(_get(status, "code"), _STATUS_BY_CODE, "STATUS_CODE_")
    events = []
    for event in _list(_get(raw, "events")):
        if isinstance(event, Mapping):
            events.append(
                EventRecord(
                    name=str(_get(event, "name") or ""),
                    time=_seconds(_json_int(_get(event, "timeUnixNano", "time_unix_nano"))),
                    attributes=_json_attributes(_get(event, "attributes")),
                )
            )
    message = _get(status, "message")
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_json_id(_get(raw, "parentSpanId", "parent_span_id"), 8),
        name=str(_get(raw, "name") or ""),
        start_ns=_json_nanos(_get(raw, "startTimeUnixNano", "start_time_unix_nano")),
        end_ns=_json_nanos(_get(raw, "endTimeUnixNano", "end_time_unix_nano")),
        status=status_name or STATUS_UNSET,
        status_message=message if isinstance(message, str) and message else None,
        kind=_json_enum(_get(raw, "kind"), _KIND_NAMES, "SPAN_KIND_"),
        attributes=_json_attributes(_get(raw, "attributes")),
        events=events,
    )


def _json_log(raw: Any, where: str, warnings: list[str]) -> PlacedEvent | None:
    if not isinstance(raw, Mapping):
        return None
    trace_id, span_id = _json_ids(raw)
    if trace_id is None or span_id is None:
        return None
    attributes = _json_attributes(_get(raw, "attributes"))
    name = _get(raw, "eventName", "event_name") or attributes.get(semconv.EVENT_NAME) or ""
    time = _json_int(_get(raw, "timeUnixNano", "time_unix_nano")) or _json_int(
        _get(raw, "observedTimeUnixNano", "observed_time_unix_nano")
    )
    body = _get(raw, "body")
    event = EventRecord(
        name=str(name),
        time=_seconds(time),
        attributes=attributes,
        body=_json_value(body) if body is not None else None,
    )
    return trace_id, span_id, event
