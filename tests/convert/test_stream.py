"""`read_otlp_batches`: OTLP read piece by piece gives the traces a whole read gives."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from tracejudge.convert import (
    OTLPDecodeError,
    read_otlp_batches,
    stream,
    traces_from_otlp,
    traces_from_records,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"
SOURCES = ["openllmetry.jsonl", "openllmetry.pb", "genai_semconv_events.jsonl", "openinference.pb"]


def _convert(source) -> list:
    spans, events, warnings = [], [], []
    for batch in read_otlp_batches(source):
        spans += batch.spans
        events += batch.events
        warnings += batch.warnings
    return traces_from_records(spans, events, warnings=warnings)


@pytest.mark.parametrize("name", SOURCES)
def test_streamed_equals_whole(name: str) -> None:
    path = FIXTURES / name
    assert _convert(path) == traces_from_otlp(path)
    # gzip of two members (a Collector appending), through a plain binary stream
    data = gzip.compress(path.read_bytes())
    assert _convert(io.BytesIO(data + data)) == traces_from_otlp(data + data)


def test_large_protobuf_pieces_are_split_down_to_spans(monkeypatch) -> None:
    monkeypatch.setattr(stream, "_PIECE_BYTES", 64)
    monkeypatch.setattr(stream, "_SPANS_PER_BATCH", 2)
    path = FIXTURES / "openllmetry.pb"
    batches = list(read_otlp_batches(path))
    assert len(batches) >= 4 and all(len(b.spans) <= 2 for b in batches)
    assert _convert(path) == traces_from_otlp(path)


def test_json_lines_that_are_not_otlp_come_back_as_documents() -> None:
    data = b'{"resourceSpans": []}\n{"a": 1}\n[{"b": 2}]\nnot json\n'
    batches = list(read_otlp_batches(io.BytesIO(data)))
    documents = [d for b in batches for d in b.documents]
    assert documents == [("line 2", {"a": 1}), ("line 3, item 0", {"b": 2})]
    assert any("line 4 is not JSON" in w for b in batches for w in b.warnings)


def test_truncated_gzip_keeps_what_came_before_and_garbage_raises() -> None:
    path = FIXTURES / "openllmetry.jsonl"
    data = gzip.compress(path.read_bytes())
    batches = list(read_otlp_batches(io.BytesIO(data + data[: len(data) - 20])))
    assert any("is truncated; read what it holds" in w for b in batches for w in b.warnings)
    assert _convert(io.BytesIO(data + data[:-20])) == traces_from_otlp(path)
    with pytest.raises(OTLPDecodeError):
        list(read_otlp_batches(io.BytesIO(b"\x00\x01garbage")))
