"""OTLP protobuf is read two ways: a ResourceSpans (or ScopeSpans) that parses cleanly is
parsed with one call, anything else is walked field by field. Both read the same spans
and give the same warnings, on intact and on broken input."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from tracejudge.convert import _otlp
from tracejudge.convert._otlp import OTLPDecodeError, decode
from tracejudge.convert.stream import read_otlp_batches

from ._helpers import FIXTURES

pytest.importorskip("opentelemetry.proto")
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope  # noqa: E402
from opentelemetry.proto.trace.v1.trace_pb2 import Span  # noqa: E402


def _fixtures() -> list[Path]:
    found = sorted(FIXTURES.glob("*.pb")) + sorted((FIXTURES / "frameworks").glob("*.pb"))
    return [p for p in found if not p.name.endswith(".logs.pb")]


def _decoded(data: bytes) -> object:
    try:
        return decode(data)
    except OTLPDecodeError as error:
        return str(error)


def _broken(rng: random.Random, data: bytes) -> bytes:
    """`data` truncated, with bytes changed, or with a piece cut out."""
    changed = bytearray(data)
    roll = rng.random()
    if roll < 0.4:
        return bytes(changed[: rng.randrange(len(changed))])
    if roll < 0.8:
        for _ in range(rng.randrange(1, 6)):
            changed[rng.randrange(len(changed))] = rng.randrange(256)
        return bytes(changed)
    start = rng.randrange(len(changed))
    del changed[start : start + rng.randrange(1, 200)]
    return bytes(changed)


@pytest.mark.parametrize("whole_bytes", [0, 2000])
def test_parsed_whole_or_walked_every_fixture_reads_alike(
    monkeypatch: pytest.MonkeyPatch, whole_bytes: int
) -> None:
    inputs = []
    for path in _fixtures():
        # Seeded per fixture: a fixture added later does not change the others' inputs.
        rng = random.Random(f"13:{path.name}")
        data = path.read_bytes()
        inputs += [data] + [_broken(rng, data) for _ in range(12)]
    assert len(inputs) > 300
    whole = [_decoded(data) for data in inputs]
    assert any(not isinstance(found, str) and found[2] for found in whole)  # some warn
    # 0: every ResourceSpans walked; 2000: large ones walked, their ScopeSpans parsed whole
    monkeypatch.setattr(_otlp, "_WHOLE_BYTES", whole_bytes)
    for data, expected in zip(inputs, whole, strict=True):
        # (compared as reprs: the AI SDK 4 records unknown usage as NaN, never equal to itself)
        assert repr(_decoded(data)) == repr(expected)


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128  # a one-byte length
    return bytes([number << 3 | 2, len(payload)]) + payload


def _span(name: str) -> bytes:
    span = Span(trace_id=b"t" * 16, span_id=name.encode() * 8, name=name)
    return span.SerializeToString()


def test_a_group_field_is_walked_and_reported_not_skipped() -> None:
    # protobuf parses (and keeps) an unknown group; the walk stops at it, as it always has
    scope = InstrumentationScope(name="lib").SerializeToString()
    resource_spans = _field(2, _field(1, scope) + _field(2, _span("a")) + b"\x1b\x1c")
    spans, _, warnings = decode(_field(1, resource_spans) + _field(1, b""))
    assert [(s.name, s.scope) for s in spans] == [("a", "lib")]
    assert warnings == [
        "OTLP protobuf input is truncated or corrupt (wire type 3 at byte 45); read 1 spans, "
        "skipped 0 unreadable parts"
    ]


def test_a_scope_after_its_spans_names_them_all_as_protobuf_reads_it() -> None:
    scope = InstrumentationScope(name="lib").SerializeToString()
    data = _field(1, _field(2, _field(2, _span("a")) + _field(1, scope) + _field(2, _span("b"))))
    spans, _, warnings = decode(data)
    assert [(s.name, s.scope) for s in spans] == [("a", "lib"), ("b", "lib")]
    assert warnings == []


@pytest.mark.parametrize("extra", [0, 1])
def test_streamed_pieces_that_start_like_json_are_read_as_decode_reads_them(extra: int) -> None:
    # a ResourceSpans 123 bytes long is framed as "\n{": `decode` tries it as JSON first
    span = Span(trace_id=b"\xff" * 16, span_id=b"\xfe" * 8, name="a").SerializeToString()
    payload = _field(2, _field(2, span))
    payload = _field(1, b"n" * (123 - len(payload) - 2 + extra)) + payload
    request = _field(1, payload)
    assert request.startswith(b"\n{") == (extra == 0)
    (batch,) = read_otlp_batches(io.BytesIO(request))
    spans, _, warnings = decode(request)
    assert [s.name for s in batch.spans] == [s.name for s in spans] == ["a"]
    assert batch.spans == spans and batch.warnings == warnings
