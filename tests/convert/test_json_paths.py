"""OTLP/JSON lines of the usual shape are decoded into msgspec Structs (`_otlp_structs`),
every other line into dicts; both read the same spans with the same warnings, whatever
the values hold."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tracejudge.convert import _otlp
from tracejudge.convert._otlp import OTLPDecodeError, decode

from ._helpers import FIXTURES

pytest.importorskip("msgspec")
from tracejudge.convert import _otlp_structs  # noqa: E402

_VALUES: list[Any] = [
    None,
    True,
    0,
    -3,
    2**70,
    1.5,
    "",
    "x",
    "SPAN_KIND_CLIENT",
    "2",
    "AAEC",
    "0af7651916cd43dd8448eb211c80319c",
    [],
    [1, "a"],
    {},
    {"values": [{"stringValue": "s"}, {"intValue": "7"}, 3]},
    {"stringValue": None},
    {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}},
    {"arrayValue": None, "bytesValue": "AAEC"},
]
_SNAKE = {"traceId": "trace_id", "stringValue": "string_value", "scopeSpans": "scope_spans"}


def _fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.jsonl")) + sorted((FIXTURES / "frameworks").glob("*.jsonl"))


def _mutated(rng: random.Random, node: Any, rate: float) -> Any:
    """`node` with a few values replaced by values of other types, or keys renamed."""
    if rng.random() < rate:
        return rng.choice(_VALUES)
    if isinstance(node, dict):
        changed = {}
        for key, value in node.items():
            if rng.random() < rate / 2:
                continue  # a key left out
            if key in _SNAKE and rng.random() < rate:
                key = _SNAKE[key]
            changed[key] = _mutated(rng, value, rate)
        return changed
    if isinstance(node, list):
        return [_mutated(rng, v, rate) for v in node]
    return node


def _decoded(data: bytes) -> Any:
    try:
        return decode(data)
    except OTLPDecodeError as error:
        return str(error)


def _inputs() -> list[bytes]:
    rng = random.Random(13)
    found = []
    for path in _fixtures():
        data = path.read_bytes()
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        found.append(data)
        for _ in range(8):
            rate = rng.choice([0.0005, 0.002, 0.01])
            changed = [json.dumps(_mutated(rng, line, rate)) for line in lines]
            found.append("\n".join(changed).encode())
            found.append(changed[0].encode())  # one line: the "document" path
    return found


@pytest.mark.heavy("every fixture line read both ways")
def test_structs_and_dicts_read_every_line_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = _inputs()
    typed = [_decoded(data) for data in inputs]
    monkeypatch.setattr(_otlp, "_structs", None)
    plain = [_decoded(data) for data in inputs]
    assert len(inputs) > 300
    assert sum(t == p for t, p in zip(typed, plain, strict=True)) == len(inputs)
    assert sum(isinstance(t, tuple) and bool(t[2]) for t in typed) > 10  # some warn


def test_lines_of_another_shape_are_left_to_the_plain_path() -> None:
    line = json.loads(next(p for p in _fixtures() if p.name == "openllmetry.jsonl").read_text())
    assert _otlp_structs.decode(json.dumps(line)) is not None
    span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    for key, value in [("trace_id", "00"), ("attributes", None), ("events", {})]:
        changed = json.loads(json.dumps(line))
        changed["resourceSpans"][0]["scopeSpans"][0]["spans"][0] = {**span, key: value}
        assert _otlp_structs.decode(json.dumps(changed)) is None
    # msgspec would skip an undeclared field without reading its UTF-8
    raw = json.dumps({**line, "resource": "\u00e9"}, ensure_ascii=False).encode()
    assert _otlp_structs.decode(raw.replace(b"\xc3\xa9", b"\xff")) is None
