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
import functools
import importlib
import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tracejudge import semconv
from tracejudge._protowire import WireError, WireStream
from tracejudge.convert import _json
from tracejudge.convert._errors import OTLPDecodeError
from tracejudge.convert._ids import SPAN_ID_BYTES, TRACE_ID_BYTES, json_id_bytes, valid_id
from tracejudge.convert._inflate import inflating
from tracejudge.convert._records import (
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    EventRecord,
    SpanRecord,
)
from tracejudge.convert._source import Opener

try:  # the `speed` extra: OTLP/JSON lines of the usual shape decoded into Structs
    from tracejudge.convert import _otlp_structs as _structs
except ImportError:  # pragma: no cover - without msgspec, every line is read as plain JSON
    _structs = None  # type: ignore[assignment]  # the module, else None

__all__ = [
    "MAX_INFLATED_BYTES",
    "OTLPDecodeError",
    "decode",
    "decode_logs",
    "decode_protobuf",
    "decode_stream",
]

PlacedEvent = tuple[str, str, EventRecord]

_STATUS_BY_CODE = {0: STATUS_UNSET, 1: STATUS_OK, 2: STATUS_ERROR}
_KIND_NAMES = {0: None, 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_SPAN_START = re.compile(r'\{\s*"(?:traceId|trace_id)"\s*:')

#: The most bytes a gzip input is inflated to (a small file can inflate without bound);
#: what lies beyond is not read, and a warning says so.
MAX_INFLATED_BYTES = 256 * 1024 * 1024


# --------------------------------------------------------------------------- input

_WHITESPACE = b" \t\r\n"


def decode(
    data: bytes | str, *, max_inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[list[SpanRecord], list[PlacedEvent], list[str]]:
    """(spans, log-record events with the span they belong to, warnings). Gzip input is
    inflated to at most `max_inflated_bytes`."""
    if isinstance(data, str):
        if not data.strip():
            return [], [], []
        return _decode_json(data, [])
    return decode_stream(lambda: io.BytesIO(data), max_inflated_bytes=max_inflated_bytes)


def decode_stream(
    opener: Opener, *, max_inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[list[SpanRecord], list[PlacedEvent], list[str]]:
    """`decode` for input read as a stream (`opener` opens it from its start, and may be
    called twice). OTLP/JSON lines and protobuf are read a line or a span at a time; only
    a JSON document spread over several lines is read whole."""
    warnings: list[str] = []
    with opener() as raw:
        stream = inflating(raw, max_inflated_bytes, warnings)
        if not stream.peek(1)[:1].isspace() and stream.peek(1)[:1] not in (b"{", b"["):
            return _decode_protobuf_stream(stream, warnings), [], warnings
        first, newlines = _skip_whitespace(stream)
        if first is None:
            return [], [], warnings
        problem: OTLPDecodeError | None = None
        if first in b"{[":
            try:
                return _decode_json_stream(stream, newlines, warnings)
            except OTLPDecodeError as json_error:
                problem = json_error
    # Protobuf may start with bytes that read as whitespace ("\n" is field 1, length
    # delimited), even as "\n{" (length 123): read it again from its start as that.
    warnings = []
    with opener() as raw:
        try:
            spans = _decode_protobuf_stream(inflating(raw, max_inflated_bytes, warnings), warnings)
        except OTLPDecodeError:
            if problem is None:
                raise
            raise problem from None
    return spans, [], warnings


def decode_logs(
    data: bytes | str, *, max_inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[list[PlacedEvent], list[str]]:
    """OTLP log data (protobuf `ExportLogsServiceRequest` or OTLP/JSON): the records tied
    to a span, as events of that span, and warnings. Gzip input is inflated to at most
    `max_inflated_bytes`."""
    if isinstance(data, bytes):
        return decode_logs_stream(lambda: io.BytesIO(data), max_inflated_bytes=max_inflated_bytes)
    if not data.strip():
        return [], []
    _, events, warnings = _decode_json(data, [])
    return events, warnings


def decode_logs_stream(
    opener: Opener, *, max_inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[list[PlacedEvent], list[str]]:
    """`decode_logs` for input read as a stream. Log data is read whole once inflated
    (it is optional, and its protobuf is one message)."""
    warnings: list[str] = []
    with opener() as raw:
        data = inflating(raw, max_inflated_bytes, warnings).read()
    if not data.strip():
        return [], warnings
    if data.lstrip()[:1] not in (b"{", b"["):
        return _decode_protobuf_logs(data, warnings), warnings
    _, events, warnings = _decode_json(data.decode("utf-8", errors="replace"), warnings)
    return events, warnings


def _skip_whitespace(stream: io.BufferedReader) -> tuple[int | None, int]:
    """Consume leading whitespace: (the first other byte, not consumed, or None at the
    end; the number of line breaks skipped)."""
    newlines = 0
    while True:
        ahead = stream.peek(1)
        if not ahead:
            return None, newlines
        kept = ahead.lstrip(_WHITESPACE)
        skipped = len(ahead) - len(kept)
        newlines += ahead[:skipped].count(b"\n")
        stream.read(skipped)
        if kept:
            return kept[0], newlines


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


# Where spans lie in an ExportTraceServiceRequest: field 1 (ResourceSpans), then its
# field 2 (ScopeSpans), then its field 2 (Span). Everything else is skipped unread.
_SPAN_PATH = (1, 2, 2)
#: A ResourceSpans or ScopeSpans up to this size is read into memory and parsed with one
#: call (the fast path); a larger one is walked field by field, one span in memory.
_WHOLE_BYTES = 8 * 1024 * 1024


class _ProtobufReader:
    """Reads the spans of a protobuf ExportTraceServiceRequest from a stream.

    Each ResourceSpans (or, in a very large one, each ScopeSpans) is parsed with one call
    when it parses cleanly. When it does not, or holds a field its schema does not know,
    it is walked field by field instead (the one wire reader, `_protowire`), one span in
    memory at a time: a span that does not parse is skipped (its length is known); a
    framing that breaks ends the reading with what was read before it. Both ways read
    the same spans. (They differ only where protobuf itself has a say: in a ScopeSpans
    that parses cleanly its `scope` applies to all of its spans, as protobuf reads it;
    walked, a span takes the scope before it.)
    """

    def __init__(
        self, stream: io.BufferedReader | io.BytesIO, types: tuple[Any, Any, Any, Any], unknown: Any
    ) -> None:
        self.wire = WireStream(stream)
        self.unknown_fields = unknown  # google.protobuf's UnknownFieldSet
        # ResourceSpans, ScopeSpans, Span, InstrumentationScope
        self.resource_type, self.scopes_type, self.span_type, self.scope_type = types
        self.spans: list[SpanRecord] = []
        self.broken = 0
        self.bad_ids = 0  # spans that break the id rule (`_ids`), skipped
        self.resources = 0
        self.scope: str | None = None  # the instrumentation scope of the ScopeSpans read
        self.scope_version: str | None = None  # and its version

    def message(self, depth: int, length: int | None) -> None:
        """Read the fields of a message at `depth` on the span path, `length` bytes long
        (None: to the end of the stream)."""
        for number, size in self.wire.fields(length):
            self.field(depth, number, size)

    def field(self, depth: int, number: int, size: int) -> None:
        if depth == 2 and number == 1:  # ScopeSpans.scope: its name goes on the spans
            scope = self.parse(self.scope_type, size)
            self.scope = (scope.name or None) if scope is not None else None
            self.scope_version = (scope.version or None) if scope is not None else None
        elif number != _SPAN_PATH[depth]:
            self.wire.skip(size)
        elif depth < len(_SPAN_PATH) - 1:
            self.resources += depth == 0
            if size > _WHOLE_BYTES:
                self.walk(depth, size)
                return
            wire = self.wire
            payload = wire.stream.read(size)
            if len(payload) == size and self.whole(depth, payload):
                wire.offset += size
                return
            outer, wire.stream = wire.stream, io.BytesIO(payload)
            try:
                self.walk(depth, size)
            except WireError as error:
                # The copy ends where the message does: a field cut off by its end runs past
                # the message, as the walk of the stream itself finds it.
                if len(payload) == size and str(error).startswith("it ends inside"):
                    raise WireError("a field runs past its message") from None
                raise
            finally:
                wire.stream = outer
        else:
            span = self.parse(self.span_type, size)
            if span is None:
                self.broken += 1
            elif _ids_ok(span):
                self.spans.append(_pb_span(span, self.scope, self.scope_version))
            else:
                self.bad_ids += 1

    def whole(self, depth: int, payload: bytes) -> bool:
        """Take the spans of a ResourceSpans (depth 0) or ScopeSpans (depth 1) when it
        parses whole with no unknown field (groups, which the walk rejects, would be
        one); False, having taken none, when it does not."""
        message = (self.resource_type if depth == 0 else self.scopes_type)()
        try:
            message.ParseFromString(payload)
        except Exception:  # DecodeError and friends: the walk finds what reads
            return False
        scopes = message.scope_spans if depth == 0 else (message,)
        unknown = self.unknown_fields
        if unknown(message) or (depth == 0 and any(unknown(s) for s in scopes)):
            return False
        spans = self.spans
        for scope_spans in scopes:
            scope = scope_spans.scope
            name, version = scope.name or None, scope.version or None
            kept = [_pb_span(span, name, version) for span in scope_spans.spans if _ids_ok(span)]
            self.bad_ids += len(scope_spans.spans) - len(kept)
            spans.extend(kept)
        return True

    def walk(self, depth: int, size: int) -> None:
        """The next `size` bytes, a ResourceSpans or ScopeSpans, read field by field."""
        if depth == 1:
            self.scope = self.scope_version = None
        self.message(depth + 1, size)

    def parse(self, message_type: Any, size: int) -> Any | None:
        """The next `size` bytes as a `message_type`, or None when they do not parse."""
        payload = self.wire.read(size)
        if len(payload) < size:
            self.broken += 1
            raise WireError("it ends inside a span")
        message = message_type()
        try:
            message.ParseFromString(payload)
        except Exception:  # DecodeError and friends: this message only
            return None
        return message


@functools.cache
def _protobuf_types() -> tuple[tuple[Any, Any, Any, Any], Any]:
    """(ResourceSpans, ScopeSpans, Span, InstrumentationScope), and UnknownFieldSet."""
    _proto("opentelemetry.proto.collector.trace.v1.trace_service_pb2")  # the request's schema
    trace_pb2 = _proto("opentelemetry.proto.trace.v1.trace_pb2")
    common_pb2 = _proto("opentelemetry.proto.common.v1.common_pb2")
    types = (
        trace_pb2.ResourceSpans,
        trace_pb2.ScopeSpans,
        trace_pb2.Span,
        common_pb2.InstrumentationScope,
    )
    return types, _proto("google.protobuf.unknown_fields").UnknownFieldSet


def decode_protobuf(data: bytes) -> tuple[list[SpanRecord], list[str]]:
    """(spans, warnings) of a protobuf ExportTraceServiceRequest, not compressed: what
    `decode` gives for it, unless it could be read as OTLP/JSON (starts, after bytes
    that read as whitespace, with "{" or "[") or is blank, which `decode` tries first."""
    warnings: list[str] = []
    return _decode_protobuf_stream(io.BytesIO(data), warnings), warnings


def _decode_protobuf_stream(
    stream: io.BufferedReader | io.BytesIO, warnings: list[str]
) -> list[SpanRecord]:
    types, unknown = _protobuf_types()
    reader = _ProtobufReader(stream, types, unknown)
    try:
        reader.message(0, None)
    except WireError as problem:
        if not reader.spans:
            raise OTLPDecodeError(
                "not OTLP trace data: protobuf ExportTraceServiceRequest does not parse "
                f"({problem})"
            ) from None
        warnings.append(
            f"OTLP protobuf input is truncated or corrupt ({problem}); read "
            f"{len(reader.spans)} spans, skipped {reader.broken} unreadable parts"
        )
    else:
        if not reader.resources:
            read = reader.wire.offset
            raise OTLPDecodeError(
                f"not OTLP trace data: the bytes hold no resource spans ({read} bytes)"
            )
        if reader.broken:
            warnings.append(
                f"OTLP protobuf input is corrupt: {reader.broken} spans do not parse; skipped"
            )
    if reader.bad_ids:
        warnings.append(_BAD_IDS.format(count=reader.bad_ids))
    return reader.spans


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
    attributes = {}
    for kv in key_values:
        value = kv.value
        # Most values are non-empty strings: one access tells (the kinds are a oneof).
        text = value.string_value
        attributes[kv.key] = text if text else _pb_value(value)
    return attributes


def _seconds(nanos: int) -> float | None:
    return nanos / 1e9 if nanos > 0 else None


_BAD_IDS = (
    "{count} spans have no valid trace_id (16 bytes, not all zero) or span_id (8 bytes, "
    "not all zero); skipped"
)


def _ids_ok(span: Any) -> bool:
    return valid_id(span.trace_id, TRACE_ID_BYTES) and valid_id(span.span_id, SPAN_ID_BYTES)


def _pb_span(span: Any, scope: str | None = None, version: str | None = None) -> SpanRecord:
    status = span.status
    events = span.events
    return SpanRecord(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=parent.hex() if valid_id(parent := span.parent_span_id, SPAN_ID_BYTES) else None,
        name=span.name,
        start_ns=span.start_time_unix_nano or None,
        end_ns=span.end_time_unix_nano or None,
        status=_STATUS_BY_CODE.get(status.code, STATUS_UNSET),
        status_message=status.message or None,
        kind=_KIND_NAMES.get(span.kind),
        attributes=_pb_attributes(span.attributes),
        events=[
            EventRecord(
                name=event.name,
                time=_seconds(event.time_unix_nano),
                attributes=_pb_attributes(event.attributes),
            )
            for event in events
        ]
        if events
        else [],
        scope=scope,
        scope_version=version,
        links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in links)
        if (links := span.links)
        else (),
    )


# --------------------------------------------------------------------------- JSON


def _decode_json(
    text: str, warnings: list[str]
) -> tuple[list[SpanRecord], list[PlacedEvent], list[str]]:
    """OTLP/JSON held whole in memory: one document, or one per line."""
    documents: list[tuple[str, Any]] = []
    typed = _typed(text)
    if typed is not None:
        whole: Any = typed
        documents = [("document", typed)]
    else:
        try:
            whole = _json.loads(text)
        except (ValueError, RecursionError):
            whole = None
            documents = list(_line_documents(enumerate(text.splitlines(), start=1), warnings))
        else:
            documents = list(_whole_documents(whole))
    spans, events, otlp_documents = _read_documents(documents, warnings)
    if otlp_documents == 0:
        if whole is None:
            salvaged = _salvage_json_spans(text, warnings)
            if salvaged:
                return salvaged, events, warnings
        raise OTLPDecodeError(
            "not OTLP trace data: no JSON object with resourceSpans or resourceLogs found"
        )
    return spans, events, warnings


def _decode_json_stream(
    stream: io.BufferedReader, skipped_lines: int, warnings: list[str]
) -> tuple[list[SpanRecord], list[PlacedEvent], list[str]]:
    """OTLP/JSON from a stream, a line at a time when its first line is a document of its
    own (the Collector's file exporter writes one request per line); else read whole."""
    first_line = stream.readline()
    try:
        first = _typed(first_line) or _json.loads(first_line)
    except (ValueError, RecursionError):
        data = first_line + stream.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise OTLPDecodeError("not OTLP/JSON: the data is not UTF-8 text") from None
        return _decode_json(text, warnings)
    numbered = enumerate(stream, start=skipped_lines + 2)
    following = next(((n, line) for n, line in numbered if line.strip()), None)
    if following is None:
        documents: Iterable[tuple[str, Any]] = _whole_documents(first)
    else:
        documents = _chain(
            (f"line {skipped_lines + 1}", first),
            _line_documents(_chain(following, numbered), warnings),
        )
    spans, events, otlp_documents = _read_documents(documents, warnings)
    if otlp_documents == 0:
        raise OTLPDecodeError(
            "not OTLP trace data: no JSON object with resourceSpans or resourceLogs found"
        )
    return spans, events, warnings


def _chain(first: Any, rest: Iterable[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def _whole_documents(whole: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(whole, list):
        yield from ((f"item {i}", item) for i, item in enumerate(whole))
    else:
        yield ("document", whole)


def _line_documents(
    lines: Iterable[tuple[int, str | bytes]], warnings: list[str]
) -> Iterator[tuple[str, Any]]:
    """(where, document) for each line that is JSON; the others are counted in warnings."""
    bad_lines = 0
    for number, line in lines:
        if not line.strip():
            continue
        typed = _typed(line)
        if typed is not None:
            yield (f"line {number}", typed)
            continue
        try:
            yield (f"line {number}", _json.loads(line))
        except (ValueError, RecursionError) as exc:
            bad_lines += 1
            if bad_lines <= 5:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "unreadable"
                warnings.append(f"OTLP/JSON line {number} is not JSON ({reason}); skipped")
    if bad_lines > 5:
        warnings.append(f"OTLP/JSON: {bad_lines} lines in all are not JSON; skipped")


def _read_documents(
    documents: Iterable[tuple[str, Any]], warnings: list[str]
) -> tuple[list[SpanRecord], list[PlacedEvent], int]:
    """(spans, placed log events, number of OTLP documents) of OTLP/JSON documents."""
    spans: list[SpanRecord] = []
    events: list[PlacedEvent] = []
    otlp_documents = 0
    for where, document in documents:
        if _structs is not None and type(document) is _structs.Request:
            otlp_documents += 1
            _typed_spans(document, where, warnings, spans)
            continue
        if not _json.is_mapping(document):
            warnings.append(f"OTLP/JSON {where} is not an object; skipped")
            continue
        resource_spans = _get(document, "resourceSpans", "resource_spans")
        resource_logs = _get(document, "resourceLogs", "resource_logs")
        if resource_spans is None and resource_logs is None:
            warnings.append(f"OTLP/JSON {where} holds neither resourceSpans nor resourceLogs")
            continue
        otlp_documents += 1
        for scope in _children(resource_spans, "scopeSpans", "scope_spans"):
            scope_info = _get(scope, "scope")
            scope_name = _get(scope_info, "name")
            scope_version = _get(scope_info, "version")
            if not (isinstance(scope_name, str) and scope_name):
                scope_name = None
            if not (isinstance(scope_version, str) and scope_version):
                scope_version = None
            for raw in _list(_get(scope, "spans")):
                span = _guarded(_json_span, raw, where, warnings)
                if span is not None:
                    span.scope = scope_name
                    span.scope_version = scope_version
                    spans.append(span)
        for scope in _children(resource_logs, "scopeLogs", "scope_logs"):
            for raw in _list(_get(scope, "logRecords", "log_records")):
                placed = _guarded(_json_log, raw, where, warnings)
                if placed is not None:
                    events.append(placed)
    return spans, events, otlp_documents


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
    if not _json.is_mapping(mapping):
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


#: The all-zero id of each size (invalid).
_ZERO_IDS = {TRACE_ID_BYTES: bytes(TRACE_ID_BYTES), SPAN_ID_BYTES: bytes(SPAN_ID_BYTES)}


def _json_id(value: Any, size: int) -> str | None:
    """An OTLP/JSON id (hex, or base64 as protobuf's json_format writes it) as hex; None
    when it breaks the id rule (`_ids`): such a span is skipped, a parent is missing."""
    if type(value) is str and len(value) == size * 2:  # the usual hex: no copy
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raw = json_id_bytes(value, size)
        else:
            # Lower-case hex of `size` bytes (none skipped as whitespace) is its own hex:
            # kept, without making it again.
            if len(raw) == size and (value.islower() or value.isdigit()):
                return value if raw != _ZERO_IDS[size] else None
    else:
        raw = json_id_bytes(value, size)
    return raw.hex() if valid_id(raw, size) else None


def _json_int(value: Any) -> int:
    if type(value) is str:  # as OTLP/JSON writes 64-bit integers
        try:
            return int(value)
        except (ValueError, OverflowError):
            return 0
    if type(value) is int:
        return value
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
    if type(value) is str:  # (as OTLP/JSON writes them: `_json_int`'s first case, inline)
        try:
            nanos = int(value)
        except (ValueError, OverflowError):
            return None
    else:
        nanos = _json_int(value)
    return nanos if nanos > 0 else None


def _json_value(value: Any) -> Any:
    """An OTLP/JSON AnyValue (camelCase or snake_case keys) as a plain value."""
    if not _json.is_mapping(value):
        return value
    # The scalar kinds, first present key wins (written out: this runs for every attribute).
    if "stringValue" in value:
        return value["stringValue"]
    if "string_value" in value:
        return value["string_value"]
    if "boolValue" in value:
        return value["boolValue"]
    if "bool_value" in value:
        return value["bool_value"]
    if "intValue" in value:
        return _json_int(value["intValue"])
    if "int_value" in value:
        return _json_int(value["int_value"])
    if "doubleValue" in value:
        return value["doubleValue"]
    if "double_value" in value:
        return value["double_value"]
    array = _get(value, "arrayValue", "array_value")
    if array is not None:
        return [_json_value(v) for v in _list(_get(array, "values"))]
    kvlist = _get(value, "kvlistValue", "kvlist_value")
    if kvlist is not None:
        return _json_attributes(_get(kvlist, "values"))
    return _json_bytes(_get(value, "bytesValue", "bytes_value"))


def _json_bytes(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return base64.b64decode(raw)
        except (binascii.Error, ValueError):
            return raw
    return None


def _json_attributes(values: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for item in _list(values):
        if type(item) is dict:  # the usual shape, read without the generic helpers
            key = item.get("key")
            if type(key) is str:
                value = item.get("value")
                if type(value) is dict and "stringValue" in value:
                    attributes[key] = value["stringValue"]
                else:
                    attributes[key] = _json_value(value)
                continue
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
    if not _json.is_mapping(raw):
        return None
    trace_id, span_id = _json_ids(raw)
    if trace_id is None or span_id is None:
        warnings.append(f"OTLP/JSON {where}: a span without trace or span id; skipped")
        return None
    status = _get(raw, "status")
    status_name = _json_enum(_get(status, "code"), _STATUS_BY_CODE, "STATUS_CODE_")
    events = []
    for event in _list(_get(raw, "events")):
        if _json.is_mapping(event):
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
        links=_json_links(_get(raw, "links")),
    )


def _json_links(raw: Any) -> tuple[tuple[str, str], ...]:
    """(trace id, span id) of each OTLP/JSON span link that has both."""
    if not raw:
        return ()
    found = []
    for link in _list(raw):
        if _json.is_mapping(link):
            trace_id, span_id = _json_ids(link)
            if trace_id is not None and span_id is not None:
                found.append((trace_id, span_id))
    return tuple(found)


def _json_log(raw: Any, where: str, warnings: list[str]) -> PlacedEvent | None:
    if not _json.is_mapping(raw):
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


# --------------------------------------------------------------------------- JSON, typed
# The usual OTLP/JSON line decoded into `_otlp_structs` Structs (with msgspec) is read
# here, as the plain path above reads the same line decoded into dicts, with the same
# result: the Structs hold only the shape whose reading is the same.


def _typed(data: str | bytes) -> Any:
    """`data` as an `_otlp_structs.Request`, or None (no msgspec, or another shape)."""
    return _structs.decode(data) if _structs is not None else None


def _id_once(raw: Any, size: int, read: dict[str, str | None]) -> str | None:
    """`_json_id` of an id, one written as text (the usual id) read once per request."""
    if type(raw) is not str:
        return _json_id(raw, size)
    if raw in read:
        return read[raw]
    found = read[raw] = _json_id(raw, size)
    return found


def _typed_spans(request: Any, where: str, warnings: list[str], spans: list[SpanRecord]) -> None:
    # The trace ids and parent ids read in this request: its spans share a few trace ids,
    # and siblings their parent's id (each read once).
    trace_ids: dict[str, str | None] = {}
    parent_ids: dict[str, str | None] = {}
    for resource in request.resourceSpans:
        for scope_spans in resource.scopeSpans:
            scope = scope_spans.scope
            name = scope.name if scope is not None else None
            scope_name = name if isinstance(name, str) and name else None
            version = scope.version if scope is not None else None
            scope_version = version if isinstance(version, str) and version else None
            for raw in scope_spans.spans:
                try:
                    span = _typed_span(
                        raw, where, warnings, scope_name, scope_version, trace_ids, parent_ids
                    )
                except RecursionError:  # values nested deeper than Python recurses
                    warnings.append(
                        f"OTLP/JSON {where}: a span or log record nested too deeply; skipped"
                    )
                    continue
                if span is not None:
                    spans.append(span)


def _typed_span(
    raw: Any,
    where: str,
    warnings: list[str],
    scope: str | None,
    scope_version: str | None,
    trace_ids: dict[str, str | None],
    parent_ids: dict[str, str | None],
) -> SpanRecord | None:
    trace_id = _id_once(raw.traceId, 16, trace_ids)
    span_id = _json_id(raw.spanId, 8)
    if trace_id is None or span_id is None:
        warnings.append(f"OTLP/JSON {where}: a span without trace or span id; skipped")
        return None
    status = raw.status
    if status is None:
        status_name, message = STATUS_UNSET, None
    else:
        code = status.code
        if code is None:  # (`{}`: most spans, whose status is unset)
            status_name = STATUS_UNSET
        else:
            status_name = _json_enum(code, _STATUS_BY_CODE, "STATUS_CODE_") or STATUS_UNSET
        message = status.message
    kind = raw.kind
    name = raw.name
    parent_id = _id_once(raw.parentSpanId, 8, parent_ids)
    # The fields in their order, not by keyword: a keyword call of the dataclass's
    # `__init__` took three times as long (`SpanRecord`'s field order is tested).
    return SpanRecord(
        trace_id,
        span_id,
        parent_id,
        name if type(name) is str else str(name or ""),
        _json_nanos(raw.startTimeUnixNano),  # start_ns
        _json_nanos(raw.endTimeUnixNano),  # end_ns
        status_name,
        message if isinstance(message, str) and message else None,  # status_message
        _KIND_NAMES.get(kind) if type(kind) is int else _json_enum(kind, _KIND_NAMES, "SPAN_KIND_"),
        _typed_attributes(raw.attributes),
        [  # events
            EventRecord(
                str(event.name or ""),
                _seconds(_json_int(event.timeUnixNano)),
                _typed_attributes(event.attributes),
            )
            for event in raw.events
        ],
        scope,
        scope_version,
        tuple(  # links
            (trace_id, span_id)
            for link in raw.links
            if (trace_id := _json_id(link.traceId, 16)) is not None
            and (span_id := _json_id(link.spanId, 8)) is not None
        )
        if raw.links
        else (),
    )


def _typed_attributes(key_values: list[Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    unset = _structs.UNSET
    for key_value in key_values:
        key = key_value.key
        if type(key) is str:
            value = key_value.value
            if value is not None:
                text = value.stringValue
                if text is not unset:
                    attributes[key] = text
                    continue
            attributes[key] = _typed_value(value)
    return attributes


def _typed_value(value: Any) -> Any:
    """`_json_value` of an `_otlp_structs.AnyValue` (or None)."""
    if value is None:
        return None
    unset = _structs.UNSET
    if value.stringValue is not unset:
        return value.stringValue
    if value.boolValue is not unset:
        return value.boolValue
    if value.intValue is not unset:
        return _json_int(value.intValue)
    if value.doubleValue is not unset:
        return value.doubleValue
    if value.arrayValue is not None:
        return [_json_value(v) for v in _list(_get(value.arrayValue, "values"))]
    if value.kvlistValue is not None:
        return _json_attributes(_get(value.kvlistValue, "values"))
    return _json_bytes(value.bytesValue)
