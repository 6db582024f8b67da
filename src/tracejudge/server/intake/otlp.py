"""OTLP/HTTP trace intake: `POST /v1/traces`, as the OTLP exporters and the Collector send it.

Only the HTTP side lives here: the content types (binary protobuf,
`application/x-protobuf`, and OTLP/JSON, `application/json`), the encodings (gzip or
none), the size limit, and the answers. Reading the request is the converter's
(`tracejudge.convert.split`): the body inflated (linear in its size, bounded), its spans
split by trace under the converter's one rule for ids, each trace's part kept as OTLP in
the request's own encoding, which is what is stored and what scoring reads back. That
work runs in a worker thread (`offload`), never on the event loop.

Every answer is in the request's encoding: an `ExportTraceServiceResponse`, with
`partial_success` counting the spans rejected and saying why; errors as the OTLP/HTTP
specification has them, a `google.rpc.Status` (400 for data that cannot be decoded, 413
for a body, or an inflated body, over `--max-body-bytes`, 429 past the rate limit, 415
for another content type or encoding, 503 with `Retry-After` while the backlog of
traces waiting to be scored is at `--max-backlog-traces`, see `backlog`, or while the
store is unavailable, see `app`). Ingest never waits on the judge: scoring happens once
the trace is complete (see `scoring`). A trace past `--max-trace-spans` is kept as
too_large, without its spans (see `store.traces.add_spans`): none of them, those
acknowledged before included, and it is not scored; the answer says so in
`partial_success`, its spans in the request counted as rejected.

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

import functools
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Scope

from tracejudge._protowire import length_delimited, varint
from tracejudge.convert import OTLPDecodeError
from tracejudge.convert.split import OTLPSplit, OTLPTooLargeError, TracePart, split_otlp
from tracejudge.server.api.metrics import metrics_of
from tracejudge.server.http import jsonbody
from tracejudge.server.http.errors import ApiError, BodyTooLargeError, error_response
from tracejudge.server.http.operation import (
    ERROR_TEXT,
    INTAKE_UNAVAILABLE_TEXT,
    ApiRoute,
    Operation,
    ref,
)
from tracejudge.server.store import SpanBatch
from tracejudge.server.work.context import context_of, in_thread

__all__ = ["routes", "PATH", "error_answer", "batches"]

PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
#: A trace's tags and its resource attributes: at most this many of each, each key and
#: value cut to this many characters.
_MAX_TAGS = 16
_TAG_LENGTH = 64
_MAX_RESOURCE = 32
_RESOURCE_LENGTH = 256
#: gRPC codes for the HTTP statuses the intake answers with.
_GRPC_CODES = {400: 3, 413: 8, 415: 3, 429: 8, 500: 13, 503: 14}


def _cut(attributes: dict[str, str], most: int, length: int) -> dict[str, str]:
    """At most `most` attributes, each key and value cut to `length` characters (a later
    value of a cut key replaces an earlier one)."""
    kept: dict[str, str] = {}
    for key, value in attributes.items():
        name = key[:length]
        if name and (name in kept or len(kept) < most):
            kept[name] = value[:length]
    return kept


def _seconds(nanoseconds: int | None) -> float | None:
    return None if nanoseconds is None else nanoseconds / 1e9


def _batch(part: TracePart) -> SpanBatch:
    return SpanBatch(
        trace_id=part.trace_id,
        encoding=part.encoding,
        payload=part.payload,
        span_count=part.span_count,
        has_root=part.has_root,
        tags=_cut(part.tags, _MAX_TAGS, _TAG_LENGTH),
        resource=_cut(part.resource, _MAX_RESOURCE, _RESOURCE_LENGTH),
        start=_seconds(part.start),
        end=_seconds(part.end),
    )


def batches(split: OTLPSplit) -> list[SpanBatch]:
    """What the store keeps of a split request: each trace's part as it came, with its
    tags, resource attributes and times."""
    return [_batch(part) for part in split.parts]


# --------------------------------------------------------------------------- answers


def _is_protobuf(media: str) -> bool:
    """Whether answers go out in protobuf: for every request but an OTLP/JSON one."""
    return media != JSON


def _media(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def _status(code: int, message: str, protobuf: bool) -> bytes:
    """A `google.rpc.Status` (code, message), encoded by hand: two fields are all it has."""
    if not protobuf:
        return json.dumps({"code": code, "message": message}).encode()
    return b"\x08" + varint(code) + length_delimited(2, message.encode())


def _error(
    status: int, message: str, protobuf: bool, headers: dict[str, str] | None = None
) -> Response:
    body = _status(_GRPC_CODES.get(status, 2), message, protobuf)
    return Response(
        body, status_code=status, media_type=PROTOBUF if protobuf else JSON, headers=headers
    )


def error_answer(scope: Scope, error: ApiError) -> ASGIApp:
    """The answer to a request the limits refuse (413, 429): for OTLP, a `google.rpc.Status`
    in the request's encoding, as exporters read it; for any other path, the JSON one."""
    if scope.get("path") != PATH:
        return error_response(error)
    content_type = next((v for k, v in scope.get("headers", ()) if k == b"content-type"), b"")
    protobuf = _is_protobuf(_media(content_type.decode("latin-1")))
    return _error(error.status, error.detail, protobuf, error.headers)


def too_large_message(rejected: dict[str, int], max_trace_spans: int) -> str:
    """Why the spans of traces past `--max-trace-spans` were not kept."""
    ids = sorted(rejected)
    named = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    which = "trace" if len(ids) == 1 else "traces"
    return (
        f"{sum(rejected.values()):,} spans of {which} {named} not kept: each such trace has "
        f"more than {max_trace_spans:,} spans (--max-trace-spans), so none of its spans are "
        "kept, those acknowledged before included, and it will not be scored; send the work "
        "as several traces, or raise the server's limit"
    )


def _success(rejected: int, reasons: list[str], protobuf: bool) -> Response:
    """An `ExportTraceServiceResponse`: empty, or `partial_success` (1) with the rejected
    spans (1, int64) and why (2)."""
    message = "; ".join(reasons)
    if protobuf:
        body = b""
        if rejected:
            partial = b"\x08" + varint(rejected) + length_delimited(2, message.encode())
            body = length_delimited(1, partial)
        return Response(body, media_type=PROTOBUF)
    answer: dict[str, Any] = {}
    if rejected:
        answer["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
    return Response(json.dumps(answer), media_type=JSON)


# --------------------------------------------------------------------------- the route


async def traces(request: Request) -> Response:
    context = context_of(request)
    media = _media(request.headers.get("content-type"))
    protobuf = _is_protobuf(media)
    if media not in (PROTOBUF, JSON):
        return _error(
            415,
            f"Content-Type {media or '(none)'!r} is not OTLP/HTTP: send {PROTOBUF} or {JSON}",
            protobuf=False,
        )
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", ""):
        return _error(415, f"Content-Encoding {encoding!r} is not supported: use gzip", protobuf)
    metrics = metrics_of(request)
    if context.backlog is not None and (full := await context.backlog.refusal()):
        if metrics is not None:
            metrics.uploads_refused.labels("backlog_full").inc()
        return _error(full.status, full.detail, protobuf, full.headers)
    limit = context.config.max_body_bytes
    try:
        body = await request.body()
    except BodyTooLargeError as error:  # a body without Content-Length, counted as it came
        return _error(413, error.detail, protobuf)
    read = functools.partial(
        split_otlp,
        body,
        "protobuf" if protobuf else "json",
        gzipped=encoding == "gzip",
        max_bytes=limit,
        loads=jsonbody.loads,
    )
    try:
        split = await context.offload.run(read)
    except OTLPTooLargeError as error:
        return _error(
            413,
            f"{error}, more than this server accepts; send smaller batches (OTLP exporters: "
            "lower the batch size) or raise --max-body-bytes",
            protobuf,
        )
    except OTLPDecodeError as error:
        return _error(400, str(error), protobuf)
    rejected, reasons = split.rejected, list(split.reasons)
    too_large: dict[str, int] = {}
    if split.parts:
        limit = context.config.max_trace_spans
        too_large = await in_thread(context.store.traces.add_spans, batches(split), limit)
        if context.backlog is not None:
            context.backlog.added(len(split.parts))
        if too_large:
            rejected += sum(too_large.values())
            reasons.append(too_large_message(too_large, limit))
    if metrics is not None:
        stored = sum(part.span_count for part in split.parts) - sum(too_large.values())
        metrics.spans_accepted.inc(stored)
        metrics.spans_rejected.labels("invalid").inc(split.rejected)
        metrics.spans_rejected.labels("too_large").inc(sum(too_large.values()))
    return _success(rejected, reasons, protobuf)


_BINARY = {PROTOBUF: {"schema": {"type": "string", "format": "binary"}}}
_OTLP_ERROR = {
    "application/json": {"schema": {"anyOf": [ref("OTLPStatus"), ref("ErrorAnswer")]}},
    **_BINARY,
}

routes = [
    ApiRoute(
        PATH,
        traces,
        methods=["POST"],
        operation=Operation(
            "OTLP/HTTP trace intake (protobuf or JSON, gzip accepted)",
            {
                "200": {
                    "description": "Stored; partialSuccess counts the spans not kept (invalid, "
                    "or of a trace past --max-trace-spans) and says why",
                    "content": {"application/json": {"schema": ref("OTLPExportAnswer")}, **_BINARY},
                },
                # OTLP's own error answers (google.rpc.Status), in the body's encoding
                **{
                    str(code): {"description": ERROR_TEXT[code], "content": _OTLP_ERROR}
                    for code in (400, 413, 415)
                },
                "503": {"description": INTAKE_UNAVAILABLE_TEXT, "content": _OTLP_ERROR},
            },
            body={**_BINARY, "application/json": {"schema": {"type": "object"}}},
            changes=True,
        ),
    )
]
