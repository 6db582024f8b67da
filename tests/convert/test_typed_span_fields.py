"""The typed OTLP/JSON reader builds `SpanRecord`s by field position (a keyword call of the
dataclass took three times as long): the fields must stay in the order it gives them."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tracejudge.convert._otlp import decode
from tracejudge.convert._records import SpanRecord

pytest.importorskip("msgspec")  # the typed reader needs it


def test_span_record_fields_keep_the_order_the_typed_reader_gives_them() -> None:
    assert [f.name for f in dataclasses.fields(SpanRecord)] == [
        "trace_id",
        "span_id",
        "parent_id",
        "name",
        "start_ns",
        "end_ns",
        "status",
        "status_message",
        "kind",
        "attributes",
        "events",
        "scope",
        "scope_version",
        "links",
    ]


def test_the_typed_reader_fills_each_field_as_the_plain_reader_does() -> None:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "parentSpanId": "00f067aa0ba902b7",
        "name": "chat model",
        "kind": 3,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
        "events": [{"name": "e", "timeUnixNano": "1700000000500000000", "attributes": []}],
        "links": [{"traceId": "1af7651916cd43dd8448eb211c80319c", "spanId": "c7ad6b7169203331"}],
        "status": {"code": 2, "message": "boom"},
    }
    request = {
        "resourceSpans": [
            {"scopeSpans": [{"scope": {"name": "s", "version": "1"}, "spans": [span]}]}
        ]
    }
    typed = decode(json.dumps(request).encode())[0]  # the typed reader (msgspec Structs)
    span["trace_id"] = span.pop("traceId")  # a snake_case key: read by the plain reader
    plain = decode(json.dumps(request).encode())[0]
    assert len(typed) == len(plain) == 1
    assert dataclasses.asdict(typed[0]) == dataclasses.asdict(plain[0])
    assert typed[0].status == "ERROR" and typed[0].links and typed[0].kind == "CLIENT"
