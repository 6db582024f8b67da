"""OTLP/HTTP trace intake: `POST /v1/traces`, as the OTLP exporters and the Collector send it.

Accepts binary protobuf (`application/x-protobuf`) and OTLP/JSON
(`application/json`), gzip-compressed or not. The spans are split by trace and stored
as they arrive, one OTLP/JSON request per trace and request (what the shared
converter reads back later); the answer is an `ExportTraceServiceResponse` in the
request's encoding, with `partial_success` counting the spans that were rejected
(no valid trace or span id) and why. Errors follow the OTLP/HTTP specification: a
`google.rpc.Status` body in the request's encoding, 400 for data that cannot be
decoded, 415 for another content type or encoding. Ingest never waits on the judge:
scoring happens once the trace is complete (see `scoring`).

A trace's resource attributes (the SDK's `telemetry.sdk.*`, `service.name`, `host.*`,
`process.*`, and what OTEL_RESOURCE_ATTRIBUTES adds) are stored as such, apart from its
tags: what the user set, as attributes named `tracejudge.tags.<key>` on any span or on the
resource (`OTEL_RESOURCE_ATTRIBUTES=tracejudge.tags.team=search`), stored as `<key>`.
The earliest span start and the latest span end are kept too: the trace's start time
and duration before it is converted.

Spans of the `tracejudge.evaluation` scope (scores written back onto traces, by this
server or by a client) are accepted and not stored: a pipeline that sends them back
here must not make a scored trace look incomplete and score it again.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tracejudge import semconv
from tracejudge._protowire import length_delimited, varint
from tracejudge.server import jsonbody
from tracejudge.server.context import context_of, in_thread
from tracejudge.server.errors import BodyTooLargeError
from tracejudge.server.store import SpanBatch

__all__ = ["routes", "split_json", "split_protobuf", "Split"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
#: A trace's tags and its resource attributes: at most this many of each, each key and
#: value cut to this many characters.
_MAX_TAGS = 16
_TAG_LENGTH = 64
_MAX_RESOURCE = 32
_RESOURCE_LENGTH = 256


class OTLPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class _Trace:
    """The spans of one trace in one request, grouped by resource and scope."""

    groups: dict[tuple[int, int], list[Any]] = field(default_factory=dict)
    span_count: int = 0
    has_root: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    resource: dict[str, str] = field(default_factory=dict)
    start: int | None = None  # Unix nanoseconds
    end: int | None = None

    def saw(self, start: int, end: int, attributes: Iterable[tuple[str, Any]]) -> None:
        """Count one span: its times (0: not recorded) and its tag attributes."""
        self.span_count += 1
        if start > 0 and (self.start is None or start < self.start):
            self.start = start
        if end > 0 and (self.end is None or end > self.end):
            self.end = end
        _add_tags(self.tags, attributes)


@dataclass
class Split:
    """A request split by trace: one batch per trace, and what was rejected."""

    batches: list[SpanBatch]
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)
    #: Spans accepted but not stored: written-back evaluation results.
    ignored: int = 0

    @property
    def accepted(self) -> int:
        return sum(b.span_count for b in self.batches)


def _text(value: Any) -> str | None:
    """An attribute's value as text (strings, numbers, booleans), else None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def _add_tags(tags: dict[str, str], attributes: Iterable[tuple[str, Any]]) -> None:
    """Add the `tracejudge.tags.*` attributes to `tags`, without the prefix."""
    prefix = semconv.TRACEJUDGE_TAG_PREFIX
    for key, value in attributes:
        if not key.startswith(prefix) or len(key) == len(prefix):
            continue
        text = _text(value)
        name = key[len(prefix) :][:_TAG_LENGTH]
        if text is not None and (name in tags or len(tags) < _MAX_TAGS):
            tags[name] = text[:_TAG_LENGTH]


def _resource(attributes: Iterable[tuple[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """A resource's (attributes, tags): its tag attributes apart from the rest."""
    resource: dict[str, str] = {}
    tags: dict[str, str] = {}
    listed = list(attributes)
    _add_tags(tags, listed)
    for key, value in listed:
        text = _text(value)
        if key.startswith(semconv.TRACEJUDGE_TAG_PREFIX) or not key or text is None:
            continue
        if len(resource) < _MAX_RESOURCE:
            resource[key[:_RESOURCE_LENGTH]] = text[:_RESOURCE_LENGTH]
    return resource, tags


def _seconds(nanoseconds: int | None) -> float | None:
    return None if nanoseconds is None else nanoseconds / 1e9


def _batches(
    traces: dict[str, _Trace], resources: list[Any], scopes: dict[tuple[int, int], Any]
) -> list[SpanBatch]:
    batches = []
    for trace_id, found in traces.items():
        by_resource: dict[int, list[dict[str, Any]]] = {}
        for (r, s), spans in found.groups.items():
            entry: dict[str, Any] = {"spans": spans}
            if scopes.get((r, s)) is not None:
                entry["scope"] = scopes[(r, s)]
            by_resource.setdefault(r, []).append(entry)
        resource_spans = []
        for r, scope_spans in by_resource.items():
            item: dict[str, Any] = {"scopeSpans": scope_spans}
            if resources[r] is not None:
                item["resource"] = resources[r]
            resource_spans.append(item)
        payload = json.dumps({"resourceSpans": resource_spans}, separators=(",", ":"))
        batches.append(
            SpanBatch(
                trace_id,
                payload,
                found.span_count,
                found.has_root,
                found.tags,
                resource=found.resource,
                start=_seconds(found.start),
                end=_seconds(found.end),
            )
        )
    return batches


# --------------------------------------------------------------------------- JSON


def _hex_id(value: Any, size: int) -> str | None:
    """An id as lowercase hex: OTLP/JSON writes hex; protobuf's json_format, base64."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) == size * 2:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raw = b""
        if raw:
            return None if raw == bytes(size) else raw.hex()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == size and raw != bytes(size) else None


_JSON_SCALARS = (
    ("stringValue", "string_value"),
    ("boolValue", "bool_value"),
    ("intValue", "int_value"),
    ("doubleValue", "double_value"),
)


def _json_attributes(attributes: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(key, value) of OTLP/JSON attributes named `prefix...` whose value is a scalar (ints
    are written as strings in OTLP/JSON, and stay so)."""
    if not isinstance(attributes, list):
        return
    for item in attributes:
        if (
            isinstance(item, dict)
            and str(item.get("key", "")).startswith(prefix)
            and isinstance(value := item.get("value"), dict)
        ):
            for camel, snake in _JSON_SCALARS:
                found = value.get(camel, value.get(snake))
                if found is not None:
                    yield str(item.get("key", "")), found
                    break


def _json_time(value: Any) -> int:
    """A span time in Unix nanoseconds (OTLP/JSON writes them as strings), 0 if unread."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _listed(value: Any, *keys: str) -> list[Any]:
    for key in keys:
        found = value.get(key) if isinstance(value, dict) else None
        if isinstance(found, list):
            return found
    return []


def split_json(document: Any) -> Split:
    """Split an OTLP/JSON `ExportTraceServiceRequest` by trace."""
    if not isinstance(document, dict):
        raise OTLPError(400, "the body is not an OTLP/JSON ExportTraceServiceRequest object")
    traces: dict[str, _Trace] = {}
    resources: list[Any] = []
    scopes: dict[tuple[int, int], Any] = {}
    split = Split(batches=[])
    for r, resource_spans in enumerate(_listed(document, "resourceSpans", "resource_spans")):
        resource = resource_spans.get("resource") if isinstance(resource_spans, dict) else None
        resources.append(resource)
        attributes, tags = _resource(
            _json_attributes(resource.get("attributes")) if isinstance(resource, dict) else ()
        )
        for s, scope_spans in enumerate(_listed(resource_spans, "scopeSpans", "scope_spans")):
            scopes[(r, s)] = scope_spans.get("scope") if isinstance(scope_spans, dict) else None
            scope = scopes[(r, s)]
            if isinstance(scope, dict) and scope.get("name") == semconv.EVALUATION_SCOPE:
                split.ignored += len(_listed(scope_spans, "spans"))
                continue
            for span in _listed(scope_spans, "spans"):
                trace_id = (
                    _hex_id(span.get("traceId", span.get("trace_id")), 16)
                    if isinstance(span, dict)
                    else None
                )
                span_id = (
                    _hex_id(span.get("spanId", span.get("span_id")), 8)
                    if isinstance(span, dict)
                    else None
                )
                if trace_id is None or span_id is None:
                    split.rejected += 1
                    continue
                found = traces.setdefault(
                    trace_id, _Trace(tags=dict(tags), resource=dict(attributes))
                )
                found.groups.setdefault((r, s), []).append(span)
                found.saw(
                    _json_time(span.get("startTimeUnixNano", span.get("start_time_unix_nano"))),
                    _json_time(span.get("endTimeUnixNano", span.get("end_time_unix_nano"))),
                    _json_attributes(span.get("attributes"), semconv.TRACEJUDGE_TAG_PREFIX),
                )
                parent = span.get("parentSpanId", span.get("parent_span_id"))
                if _hex_id(parent, 8) is None:
                    found.has_root = True
    if split.rejected:
        split.reasons.append(f"{split.rejected} spans have no valid traceId or spanId")
    split.batches = _batches(traces, resources, scopes)
    return split


# --------------------------------------------------------------------------- protobuf


def _proto_classes() -> tuple[Any, Any, Any]:
    try:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError:
        raise OTLPError(
            415,
            "this server cannot read protobuf (pip install 'tracejudge[server]' adds "
            "opentelemetry-proto); send OTLP/JSON (Content-Type: application/json) instead",
        ) from None
    return (
        trace_service_pb2.ExportTraceServiceRequest,
        trace_service_pb2.ExportTraceServiceResponse,
        MessageToDict,
    )


def _proto_attributes(attributes: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(key, value) of protobuf attributes named `prefix...` whose value is a scalar."""
    for kv in attributes:
        if not kv.key.startswith(prefix):
            continue
        kind = kv.value.WhichOneof("value")
        if kind in ("string_value", "bool_value", "int_value", "double_value"):
            yield kv.key, getattr(kv.value, kind)


def split_protobuf(body: bytes) -> Split:
    """Split a protobuf `ExportTraceServiceRequest` by trace."""
    request_class, _, to_dict = _proto_classes()
    try:
        request = request_class.FromString(body)
    except Exception as exc:  # google.protobuf's DecodeError, and anything else it raises
        raise OTLPError(
            400, f"the body is not a protobuf ExportTraceServiceRequest ({exc})"
        ) from None
    traces: dict[str, _Trace] = {}
    resources: list[Any] = []
    scopes: dict[tuple[int, int], Any] = {}
    split = Split(batches=[])
    for r, resource_spans in enumerate(request.resource_spans):
        has_resource = resource_spans.HasField("resource")
        resources.append(to_dict(resource_spans.resource) if has_resource else None)
        attributes, tags = _resource(_proto_attributes(resource_spans.resource.attributes))
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            scopes[(r, s)] = to_dict(scope_spans.scope) if scope_spans.HasField("scope") else None
            if scope_spans.scope.name == semconv.EVALUATION_SCOPE:
                split.ignored += len(scope_spans.spans)
                continue
            for span in scope_spans.spans:
                trace_id, span_id = bytes(span.trace_id), bytes(span.span_id)
                if (
                    len(trace_id) != 16
                    or trace_id == bytes(16)
                    or len(span_id) != 8
                    or span_id == bytes(8)
                ):
                    split.rejected += 1
                    continue
                found = traces.setdefault(
                    trace_id.hex(), _Trace(tags=dict(tags), resource=dict(attributes))
                )
                found.groups.setdefault((r, s), []).append(to_dict(span))
                found.saw(
                    span.start_time_unix_nano,
                    span.end_time_unix_nano,
                    _proto_attributes(span.attributes, semconv.TRACEJUDGE_TAG_PREFIX),
                )
                parent = bytes(span.parent_span_id)
                if len(parent) != 8 or parent == bytes(8):
                    found.has_root = True
    if split.rejected:
        split.reasons.append(f"{split.rejected} spans have no valid trace_id or span_id")
    split.batches = _batches(traces, resources, scopes)
    return split


# --------------------------------------------------------------------------- answers


def _status(code: int, message: str, protobuf: bool) -> bytes:
    """A `google.rpc.Status` (code, message), encoded by hand: two fields are all it has."""
    if not protobuf:
        return json.dumps({"code": code, "message": message}).encode()
    text = message.encode()
    return b"\x08" + varint(code) + length_delimited(2, text)


#: gRPC codes for the HTTP statuses the intake answers with.
_GRPC_CODES = {400: 3, 413: 8, 415: 3, 500: 13}


def _error(status: int, message: str, protobuf: bool) -> Response:
    body = _status(_GRPC_CODES.get(status, 2), message, protobuf)
    return Response(body, status_code=status, media_type=PROTOBUF if protobuf else JSON)


def _success(split: Split, protobuf: bool) -> Response:
    message = "; ".join(split.reasons)
    if protobuf:
        _, response_class, _ = _proto_classes()
        response = response_class()
        if split.rejected:
            response.partial_success.rejected_spans = split.rejected
            response.partial_success.error_message = message
        return Response(response.SerializeToString(), media_type=PROTOBUF)
    body: dict[str, Any] = {}
    if split.rejected:
        body["partialSuccess"] = {"rejectedSpans": str(split.rejected), "errorMessage": message}
    return Response(json.dumps(body), media_type=JSON)


def _inflate(body: bytes, limit: int) -> bytes:
    """Gunzip (every member) to at most `limit` bytes; 413 past it, 400 for bad gzip."""
    out = bytearray()
    data = body
    try:
        while data:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += inflater.decompress(data, limit + 1 - len(out))
            if len(out) > limit:
                raise BodyTooLargeError(limit)
            if inflater.unconsumed_tail:
                raise BodyTooLargeError(limit)
            data = inflater.unused_data
            if not inflater.eof:
                raise OTLPError(400, "the gzip body is truncated")
    except zlib.error as exc:
        raise OTLPError(400, f"the body is not valid gzip ({exc})") from None
    return bytes(out)


async def traces(request: Request) -> Response:
    context = context_of(request)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    protobuf = media != JSON
    if media not in (PROTOBUF, JSON):
        return _error(
            415,
            f"Content-Type {media or '(none)'!r} is not OTLP/HTTP: send {PROTOBUF} or {JSON}",
            protobuf=False,
        )
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", ""):
        return _error(415, f"Content-Encoding {encoding!r} is not supported: use gzip", protobuf)
    body = await request.body()
    try:
        if encoding == "gzip":
            body = _inflate(body, context.config.max_body_bytes)
        if protobuf:
            split = split_protobuf(body)
        else:
            try:
                document = jsonbody.loads(body)
            except (ValueError, UnicodeDecodeError) as exc:
                raise OTLPError(400, f"the body is not JSON ({exc})") from None
            split = split_json(document)
    except OTLPError as error:
        return _error(error.status, error.message, protobuf)
    if split.batches:
        await in_thread(context.store.add_spans, split.batches)
    return _success(split, protobuf)


routes = [Route("/v1/traces", traces, methods=["POST"])]
