"""Hostile inputs for the server tests: OTLP traces with odd agent names, deep JSON."""

from __future__ import annotations

import gzip
import json
import secrets
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openllmetry.jsonl"
OTLP_JSON = {"Content-Type": "application/json"}


def otlp_trace(writer_name: str = "writer", trace_id: str | None = None) -> tuple[str, str]:
    """The recorded three-agent OpenLLMetry run as one OTLP/JSON request, its writer agent
    renamed to `writer_name` (any text: a NUL, a lone surrogate) and under a fresh trace
    id. Returns (trace_id, body); the body escapes what it must (`json.dumps`)."""
    document: dict[str, Any] = json.loads(FIXTURE.read_text().splitlines()[0])
    trace_id = trace_id or secrets.token_hex(16)
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                span["traceId"] = trace_id
                if span["name"] == "invoke_agent writer":
                    span["name"] = f"invoke_agent {writer_name}"
                for attribute in span.get("attributes", []):
                    if attribute["key"] == "gen_ai.agent.name" and (
                        attribute["value"].get("stringValue") == "writer"
                    ):
                        attribute["value"]["stringValue"] = writer_name
    return trace_id, json.dumps(document)


def nested(depth: int, leaf: Any = 1) -> Any:
    """A JSON value `depth` lists deep."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def deep_json(depth: int) -> bytes:
    """`depth` nested lists as JSON text, made without recursion."""
    return b"[" * depth + b"1" + b"]" * depth


def gzip_bomb(members: int = 200_000, last: bytes = b"") -> bytes:
    """`members` empty gzip members (20 bytes each: 200,000 make 3.8 MiB, under the body
    limit) and then one member holding `last`: what a quadratic multi-member inflater
    spends seconds on, and what inflates to `last` alone."""
    return gzip.compress(b"", mtime=0) * members + gzip.compress(last, mtime=0)


def otlp_protobuf(
    spans: int,
    trace_id: bytes | None = None,
    *,
    text: str = "hi",
    root: bytes | None = None,
    first_id: int = 0,
    with_root: bool = True,
) -> bytes:
    """One protobuf ExportTraceServiceRequest of one trace: an agent span (`root`, its span
    id) and `spans - 1` model calls under it (OTel GenAI attributes), each asked `text`.
    One trace in several requests: the same `trace_id` and `root`, the root in one
    only (`with_root=False` then makes `spans` model calls), and each request's
    `first_id` past the last one's span ids (they are `first_id + 1` on)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    def attribute(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    trace = trace_id or secrets.token_bytes(16)
    root = root or secrets.token_bytes(8)
    start = 1_700_000_000 * 10**9
    asked = json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])
    answered = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])
    items = []
    if with_root:
        items.append(
            Span(
                trace_id=trace,
                span_id=root,
                name="invoke_agent orchestrator",
                start_time_unix_nano=start,
                end_time_unix_nano=start + spans * 1000 + 1000,
                attributes=[
                    attribute("gen_ai.operation.name", "invoke_agent"),
                    attribute("gen_ai.agent.name", "orchestrator"),
                ],
            )
        )
    for n in range(first_id, first_id + spans - len(items)):
        items.append(
            Span(
                trace_id=trace,
                span_id=(n + 1).to_bytes(8, "big"),
                parent_span_id=root,
                name="chat gpt-4.1-mini",
                start_time_unix_nano=start + n * 1000,
                end_time_unix_nano=start + n * 1000 + 900,
                attributes=[
                    attribute("gen_ai.operation.name", "chat"),
                    attribute("gen_ai.request.model", "gpt-4.1-mini"),
                    attribute("gen_ai.input.messages", asked),
                    attribute("gen_ai.output.messages", answered),
                ],
            )
        )
    resource = ResourceSpans(scope_spans=[ScopeSpans(spans=items)])
    return ExportTraceServiceRequest(resource_spans=[resource]).SerializeToString()
