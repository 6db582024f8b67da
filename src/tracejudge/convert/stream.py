"""OTLP read piece by piece: span records in batches, in memory bounded by the largest
piece, not by the input.

`read_otlp_batches(source)` reads a file, a path or a binary stream holding OTLP trace
data (protobuf `ExportTraceServiceRequest`, OTLP/JSON lines, or either gzip-compressed,
in one member or several; told apart by content) and yields `OTLPBatch`es: the span
records and log-record events of one piece, with the warnings that piece gave. A piece
is one OTLP/JSON line, or one `ResourceSpans` of a protobuf request (one `ScopeSpans`,
or a few thousand spans of one, when a `ResourceSpans` is very large). Spans of one
trace may come in several batches: the caller groups them by `trace_id` (the batch CLI
spools them into SQLite) and converts each trace with `traces_from_records`.

JSON lines that are not OTLP (say, `MultiAgentTrace` documents) are handed back as
parsed objects in `OTLPBatch.documents`, for the caller to interpret. An OTLP/JSON file
that is one document spread over several lines is read whole (it has no smaller piece).
Like the decoders it uses, reading never raises on partly broken data (what cannot be
read becomes a warning); only input that is not OTLP at all raises `OTLPDecodeError`.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from tracejudge._protowire import Readable, WireError, WireStream, length_delimited
from tracejudge.convert import _json
from tracejudge.convert._inflate import inflating
from tracejudge.convert._otlp import OTLPDecodeError, decode, decode_protobuf
from tracejudge.convert._records import EventRecord, SpanRecord

__all__ = ["OTLPBatch", "read_otlp_batches"]

#: A protobuf piece larger than this is split further (ResourceSpans -> ScopeSpans -> spans).
_PIECE_BYTES = 8 * 1024 * 1024
#: Spans per batch when one ScopeSpans is split span by span.
_SPANS_PER_BATCH = 2000
# A piece `decode` would first try as OTLP/JSON, or find blank (protobuf bytes may read so).
_JSON_OR_BLANK = re.compile(rb"[ \t\r\n]*(?:[{\[]|\Z)")
_OTLP_LINE = re.compile(rb'^\s*\{\s*"(?:resourceSpans|resource_spans|resourceLogs|resource_logs)"')


@dataclass
class OTLPBatch:
    """What one piece of the input held."""

    spans: list[SpanRecord] = field(default_factory=list)
    #: Log-record events, each with the (trace id, span id) of the span it belongs to.
    events: list[tuple[str, str, EventRecord]] = field(default_factory=list)
    #: JSON values of lines that are not OTLP, with where they are ("line 3").
    documents: list[tuple[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_otlp_batches(source: str | os.PathLike[str] | IO[bytes]) -> Iterator[OTLPBatch]:
    """The batches of a file (a path) or an open binary stream, in input order.

    Raises `OTLPDecodeError` when the input is neither OTLP/JSON (nor other JSON lines)
    nor protobuf, `OSError` when the file cannot be read, and an `ImportError` naming the
    package to install when protobuf is given and `opentelemetry-proto` is missing.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            yield from read_otlp_batches(handle)
        return
    problems: list[str] = []
    buffered = source if isinstance(source, io.BufferedReader) else io.BufferedReader(_Raw(source))
    # Inflated leniently with no cap: the reading holds one piece at a time, however
    # large the whole (a truncated or corrupt gzip ends the data where it breaks, with a
    # warning in `problems`: what came before is read, as a Collector's half-written file is).
    stream = inflating(buffered, None, problems)
    try:
        head = stream.peek(65536)[:65536]
    except OTLPDecodeError as error:  # not even the first gzip member inflates
        yield OTLPBatch(warnings=[str(error)])
        return
    if not head.strip():
        yield OTLPBatch(warnings=problems or ["the input is empty"])
        return
    if _looks_like_json(head):
        yield from _json_batches(stream)
    else:
        yield from _protobuf_batches(stream)
    if problems:
        yield OTLPBatch(warnings=problems)


# --------------------------------------------------------------------------- input


class _Raw(io.RawIOBase):
    """Any binary stream (stdin's buffer, a BytesIO) as the raw stream a BufferedReader
    takes."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        # read1: one underlying read, as much as is there (a pipe need not fill the buffer).
        read = getattr(self._stream, "read1", self._stream.read)
        data = read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _looks_like_json(head: bytes) -> bool:
    stripped = head.lstrip()
    if stripped[:1] not in (b"{", b"["):
        return False
    # Protobuf may start with "\n{" (field 1, 123 bytes long); its ids are random bytes,
    # which UTF-8 rarely accepts. Cut at most 3 bytes of a character split by the peek.
    for cut in range(4):
        try:
            head[: len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


# --------------------------------------------------------------------------- JSON


def _json_batches(stream: io.BufferedReader) -> Iterator[OTLPBatch]:
    number = 0
    first: bytes | None = None
    for line in stream:
        number += 1
        if not line.strip():
            continue
        if first is None:
            first = line
            if not _is_json(line):  # one document over several lines: read it whole
                yield _whole_document(first + stream.read())
                return
        if _OTLP_LINE.match(line):
            yield _decoded(line, f"line {number}")
            continue
        try:
            value = _json.loads(line)
        except (ValueError, RecursionError) as error:
            reason = error.msg if isinstance(error, json.JSONDecodeError) else "unreadable"
            yield OTLPBatch(warnings=[f"line {number} is not JSON ({reason}); skipped"])
            continue
        if isinstance(value, dict) and _is_otlp(value):
            yield _decoded(line, f"line {number}")
        elif isinstance(value, list):
            items = [(f"line {number}, item {i}", item) for i, item in enumerate(value)]
            yield OTLPBatch(documents=items)
        else:
            yield OTLPBatch(documents=[(f"line {number}", value)])


def _whole_document(data: bytes) -> OTLPBatch:
    try:
        value = _json.loads(data)
    except (ValueError, RecursionError):
        return _decoded(data, "document")  # perhaps truncated OTLP: the decoder salvages
    values = value if isinstance(value, list) else [value]
    if any(isinstance(v, dict) and _is_otlp(v) for v in values):
        return _decoded(data, "document")
    if isinstance(value, list):
        return OTLPBatch(documents=[(f"item {i}", v) for i, v in enumerate(value)])
    return OTLPBatch(documents=[("document", value)])


def _is_json(line: bytes) -> bool:
    try:
        _json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _is_otlp(value: dict[str, Any]) -> bool:
    return any(k in value for k in ("resourceSpans", "resource_spans", "resourceLogs"))


def _decoded(data: bytes, where: str) -> OTLPBatch:
    try:
        spans, events, warnings = decode(data)
    except OTLPDecodeError as error:
        if where == "document":
            raise
        return OTLPBatch(warnings=[f"{where}: {error}"])
    prefix = "" if where == "document" else f"{where}: "
    return OTLPBatch(spans=spans, events=events, warnings=[prefix + w for w in warnings])


# --------------------------------------------------------------------------- protobuf


def _protobuf_batches(stream: io.BufferedReader) -> Iterator[OTLPBatch]:
    """ExportTraceServiceRequest read one ResourceSpans (field 1) at a time. Concatenated
    requests are one request to protobuf, so they are read the same way."""
    seen_any = False
    for number, payload_size in _field_headers(stream):
        if number != 1:
            _skip(stream, payload_size)
            continue
        seen_any = True
        if payload_size <= _PIECE_BYTES:
            yield _pb_batch(length_delimited(1, stream.read(payload_size)))
        else:
            yield from _large_resource(_Limited(stream, payload_size))
    if not seen_any:
        raise OTLPDecodeError("not OTLP trace data: no ResourceSpans found in the protobuf input")


def _large_resource(stream: _Limited) -> Iterator[OTLPBatch]:
    """One very large ResourceSpans, ScopeSpans (field 2) by ScopeSpans."""
    for number, size in _field_headers(stream):
        if number != 2:
            _skip(stream, size)  # the resource's attributes: the converter reads none
        elif size <= _PIECE_BYTES:
            yield _pb_batch(length_delimited(1, length_delimited(2, stream.read(size))))
        else:
            yield from _large_scope(_Limited(stream, size))


def _large_scope(stream: _Limited) -> Iterator[OTLPBatch]:
    """One very large ScopeSpans, a few thousand spans (field 2) at a time."""
    scope = b""
    spans: list[bytes] = []
    for number, size in _field_headers(stream):
        if number == 1:
            scope = length_delimited(1, stream.read(size))
        elif number == 2:
            spans.append(length_delimited(2, stream.read(size)))
            if len(spans) >= _SPANS_PER_BATCH:
                yield _pb_batch(length_delimited(1, length_delimited(2, scope + b"".join(spans))))
                spans = []
        else:
            _skip(stream, size)
    if spans:
        yield _pb_batch(length_delimited(1, length_delimited(2, scope + b"".join(spans))))


def _pb_batch(request: bytes) -> OTLPBatch:
    try:
        if _JSON_OR_BLANK.match(request):
            spans, events, warnings = decode(request)
        else:  # what `decode` does with it, without its detection
            (spans, warnings), events = decode_protobuf(request), []
    except OTLPDecodeError as error:
        return OTLPBatch(warnings=[str(error)])
    return OTLPBatch(spans=spans, events=events, warnings=warnings)


class _Limited:
    """The next `size` bytes of a stream, as a stream."""

    def __init__(self, stream: Readable, size: int) -> None:
        self._stream = stream
        self._left = size

    def read(self, size: int) -> bytes:
        data = self._stream.read(min(size, self._left))
        self._left -= len(data)
        return data


def _field_headers(stream: Readable) -> Iterator[tuple[int, int]]:
    """(field number, payload size) of each length-delimited field (`_protowire`'s walk);
    other wire types are skipped. Stops at the end, or where the framing breaks (the rest
    is not OTLP). The caller reads or skips each payload before the next."""
    try:
        yield from WireStream(stream).fields(None)
    except WireError:
        return


def _skip(stream: Readable, size: int) -> None:
    while size > 0:
        chunk = stream.read(min(size, 1 << 20))
        if not chunk:
            return
        size -= len(chunk)
