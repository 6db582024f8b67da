"""Inputs for `converter_throughput.py`: the recorded fixtures replicated with new trace ids.

Every trace is a copy of one recorded fixture (tests/fixtures/*.jsonl, real instrumentation
output: OpenLLMetry, OpenInference, the GenAI semconv, their events and legacy modes), with
a fresh trace id. Lines hold the spans of 8 traces, each trace split over two lines, as a
Collector's file exporter interleaves them; spans of one resource and scope share a
`ResourceSpans` in a line. The recorded
conversations are short (about 2 KB per span in OTLP/JSON, 1.5 KB in protobuf).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracejudge._protowire import length_delimited

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
PER_LINE = 8

Triple = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]  # (resource, scope, span)


def templates(paths: list[Path] | None = None) -> list[list[Triple]]:
    """Each fixture's spans (tests/fixtures/*.jsonl, or `paths`) as (resource, scope, span)
    triples."""
    found = []
    shared: dict[str, dict[str, Any]] = {}  # one object per distinct resource or scope
    for path in paths if paths is not None else sorted(FIXTURES.glob("*.jsonl")):
        spans: list[Triple] = []
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            for resource in json.loads(line).get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        pair = (resource.get("resource", {}), scope.get("scope", {}))
                        r, s = (shared.setdefault(json.dumps(x, sort_keys=True), x) for x in pair)
                        spans.append((r, s, span))
        if spans:
            found.append(spans)
    return found


def traces(spans: int) -> Iterator[list[Triple]]:
    """Traces (lists of triples with fresh trace ids) holding about `spans` spans."""
    found = templates()
    made = number = 0
    while made < spans:
        template = found[number % len(found)]
        number += 1
        trace_id = f"{number:032x}"
        yield [(r, s, {**span, "traceId": trace_id}) for r, s, span in template]
        made += len(template)


def _request(spans: list[Triple]) -> dict[str, Any]:
    """One request: spans grouped by resource and scope, as an SDK's exporter batches them."""
    resources: dict[int, tuple[dict[str, Any], dict[int, tuple[dict[str, Any], list[Any]]]]] = {}
    for resource, scope, span in spans:
        scopes = resources.setdefault(id(resource), (resource, {}))[1]
        scopes.setdefault(id(scope), (scope, []))[1].append(span)
    return {
        "resourceSpans": [
            {
                "resource": resource,
                "scopeSpans": [{"scope": s, "spans": found} for s, found in scopes.values()],
            }
            for resource, scopes in resources.values()
        ]
    }


def requests(spans: int) -> Iterator[dict[str, Any]]:
    """OTLP/JSON requests (as dicts), two per group of `PER_LINE` traces."""
    group: list[list[Triple]] = []
    for trace in traces(spans):
        group.append(trace)
        if len(group) == PER_LINE:
            yield from _halves(group)
            group = []
    if group:
        yield from _halves(group)


def _halves(group: list[list[Triple]]) -> Iterator[dict[str, Any]]:
    firsts: list[Triple] = []
    seconds: list[Triple] = []
    for trace in group:
        half = len(trace) // 2
        firsts += trace[:half]
        seconds += trace[half:]
    yield _request(firsts)
    yield _request(seconds)


def producers() -> dict[str, list[Path]]:
    """The framework recordings (tests/fixtures/frameworks, without composed twins) of each
    producer, as `<instrumentation>` (`<instrumentation> (<api>)` for a recording made on
    another API than the program's default), as OTLP/JSON files."""
    found: dict[str, list[Path]] = {}
    for path in sorted((FIXTURES / "frameworks").glob("*.meta.json")):
        meta = json.loads(path.read_text(encoding="utf-8"))
        if meta["composed"]:
            continue
        api = meta["options"].get("api")
        label = meta["instrumentation"] + (f" ({api})" if api else "")
        found.setdefault(label, []).append(path.with_name(f"{meta['recording']}.jsonl"))
    return found


def write_json_traces(path: Path, recordings: list[Path], count: int) -> int:
    """Write `count` traces, copies of the recordings' (OTLP/JSON files) in turn with fresh
    trace ids, as OTLP/JSON lines: `PER_LINE` traces a line pair, as `write_json`. Return
    the number of spans."""
    found = templates(recordings)
    spans = 0
    with open(path, "w", encoding="utf-8") as out:
        group: list[list[Triple]] = []
        for number in range(1, count + 1):
            template = found[(number - 1) % len(found)]
            group.append([(r, s, {**span, "traceId": f"{number:032x}"}) for r, s, span in template])
            spans += len(template)
            if len(group) == PER_LINE or number == count:
                for request in _halves(group):
                    out.write(json.dumps(request, separators=(",", ":")))
                    out.write("\n")
                group = []
    return spans


def write_json(path: Path, spans: int) -> int:
    """Write OTLP/JSON lines; return the file's size in bytes."""
    with open(path, "w", encoding="utf-8") as out:
        for request in requests(spans):
            out.write(json.dumps(request, separators=(",", ":")))
            out.write("\n")
    return path.stat().st_size


def _b64(hex_id: Any) -> Any:
    return base64.b64encode(bytes.fromhex(hex_id)).decode() if isinstance(hex_id, str) else hex_id


def write_protobuf(path: Path, spans: int) -> int:
    """Write the same traces as protobuf, in the same requests as the JSON lines (spans of
    one resource and scope share a `ResourceSpans`): each template span serialized once,
    the trace id patched per copy; the requests written one after the other (which
    protobuf reads as one request). Return the size in bytes."""
    from google.protobuf import json_format
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    placeholder = b"\xfe\xed" * 8
    encoded: dict[int, bytes] = {}  # id of a resource or scope dict -> its message

    def message(value: dict[str, Any], kind: Any) -> bytes:
        if id(value) not in encoded:
            encoded[id(value)] = json_format.ParseDict(value, kind()).SerializeToString()
        return encoded[id(value)]

    found = []  # per template: (resource, scope, span bytes with the placeholder trace id)
    for template in templates():
        triples = []
        for resource, scope, span in template:
            span = {k: _b64(v) if k.endswith("Id") else v for k, v in span.items()}
            span["traceId"] = base64.b64encode(placeholder).decode()
            span_bytes = json_format.ParseDict(span, Span()).SerializeToString()
            message(resource, Resource), message(scope, InstrumentationScope)
            triples.append((resource, scope, span_bytes))
        found.append(triples)

    def request(batch: dict[str, Any]) -> bytes:
        return b"".join(
            length_delimited(
                1,
                length_delimited(1, encoded[id(resources["resource"])])
                + b"".join(
                    length_delimited(
                        2,
                        length_delimited(1, encoded[id(scopes["scope"])])
                        + b"".join(length_delimited(2, span) for span in scopes["spans"]),
                    )
                    for scopes in resources["scopeSpans"]
                ),
            )
            for resources in batch["resourceSpans"]
        )

    with open(path, "wb") as out:
        group: list[list[Any]] = []
        made = number = 0
        while made < spans:
            template = found[number % len(found)]
            number += 1  # the trace id, as `traces` gives it
            trace_id = number.to_bytes(16, "big")
            group.append([(r, s, b.replace(placeholder, trace_id)) for r, s, b in template])
            made += len(template)
            if len(group) == PER_LINE or made >= spans:
                for half in _halves(group):
                    out.write(request(half))
                group = []
    return path.stat().st_size
