"""Content carried outside the span attributes: log records tied to a span, span events
(with structured values), and `gen_ai.system_instructions`.

The recordings of the events modes hold their content in log records; here the same
records are moved onto their spans as span events, as instrumentations in other
languages write them, and must convert to the same trace.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from tests.convert._helpers import (
    attr,
    canonical,
    dump,
    fixture,
    json_requests,
    json_spans,
    set_attr,
)
from tracejudge import semconv
from tracejudge.convert import _otlp, traces_from_otlp, traces_from_spans
from tracejudge.convert._otlp import decode


def _log_records(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        record
        for request in requests
        for resource in request.get("resourceLogs", [])
        for scope in resource.get("scopeLogs", [])
        for record in scope.get("logRecords", [])
    ]


@pytest.mark.parametrize("name", ["openllmetry_events", "genai_semconv_events"])
def test_log_records_as_span_events_convert_the_same(name: str) -> None:
    requests = json_requests(name)
    spans = {span["spanId"]: span for span in json_spans(requests)}
    for record in _log_records(requests):
        attributes = list(record.get("attributes", []))
        body = record.get("body", {}).get("kvlistValue", {}).get("values", [])
        # A span event has no body: its fields become (structured) attributes.
        event = {
            "timeUnixNano": record.get("timeUnixNano"),
            "name": record["eventName"],
            "attributes": attributes + body,
        }
        spans[record["spanId"]].setdefault("events", []).append(event)
    span_events_only = [r for r in requests if "resourceSpans" in r]
    (trace,) = traces_from_otlp(dump(span_events_only))
    (expected,) = traces_from_otlp(fixture(name, ".jsonl"))
    assert canonical(trace) == canonical(expected)
    assert trace.warnings == []


@pytest.mark.parametrize("name", ["openllmetry_events", "genai_semconv_events"])
def test_sdk_log_records_are_read_with_sdk_spans(name: str) -> None:
    spans, _, _ = decode(fixture(name, ".pb").read_bytes())
    logs = []
    for record in _log_records(json_requests(name)):
        body = record.get("body", {}).get("kvlistValue")
        logs.append(
            SimpleNamespace(  # the fields of an SDK ReadableLogRecord that matter here
                trace_id=int(record["traceId"], 16),
                span_id=int(record["spanId"], 16),
                event_name=record["eventName"],
                timestamp=int(record.get("timeUnixNano", 0)),
                attributes={a["key"]: _plain(a["value"]) for a in record.get("attributes", [])},
                body={v["key"]: _plain(v["value"]) for v in body["values"]} if body else None,
            )
        )
    (trace,) = traces_from_spans(spans, logs=logs)
    (expected,) = traces_from_otlp(fixture(name, ".jsonl"))
    assert trace.to_wire() == expected.to_wire()
    (without_logs,) = traces_from_spans(spans)
    assert not any(i.input_messages for a in without_logs.iter_agents() for i in a.llm_interactions)
    assert any("no message content" in w for w in without_logs.warnings)


def _plain(value: dict[str, Any]) -> Any:
    if not value:
        return None  # an empty AnyValue: the SDK value was None
    kind, inner = next(iter(value.items()))
    if kind == "arrayValue":
        return tuple(_plain(v) for v in inner.get("values", []))
    if kind == "kvlistValue":
        return {v["key"]: _plain(v["value"]) for v in inner.get("values", [])}
    return int(inner) if kind == "intValue" else inner


@pytest.mark.parametrize("as_json", [True, False], ids=["parts", "plain-text"])
def test_system_instructions_become_the_leading_system_message(as_json: bool) -> None:
    requests = json_requests("genai_semconv")
    for span in json_spans(requests):
        raw = attr(span, semconv.GEN_AI_INPUT_MESSAGES)
        if not raw:
            continue
        messages = json.loads(raw)
        if messages[0]["role"] != "system":
            continue
        system = messages.pop(0)
        set_attr(span, semconv.GEN_AI_INPUT_MESSAGES, json.dumps(messages))
        value = json.dumps(system["parts"]) if as_json else system["parts"][0]["content"]
        set_attr(span, semconv.GEN_AI_SYSTEM_INSTRUCTIONS, value)
    (trace,) = traces_from_otlp(dump(requests))
    (expected,) = traces_from_otlp(fixture("genai_semconv", ".jsonl"))
    assert canonical(trace) == canonical(expected)
    assert trace.warnings == []


def test_converter_imports_no_protobuf_until_it_reads_protobuf() -> None:
    code = (
        "import sys, tracejudge.convert as c\n"
        "assert 'google.protobuf' not in sys.modules, 'protobuf imported eagerly'\n"
        "assert 'opentelemetry.sdk' not in sys.modules, 'the SDK imported eagerly'\n"
        f"c.traces_from_otlp({str(fixture('openllmetry', '.jsonl'))!r})\n"
        "assert 'google.protobuf' not in sys.modules, 'protobuf imported for JSON'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_missing_protobuf_support_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry makes the import fail as if opentelemetry-proto were not installed.
    monkeypatch.setitem(
        sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None
    )
    # the types are looked up once per process: look them up again, as a fresh one would
    monkeypatch.setattr(_otlp, "_protobuf_types", _otlp._protobuf_types.__wrapped__)
    with pytest.raises(ImportError, match="pip install opentelemetry-proto"):
        traces_from_otlp(fixture("openllmetry", ".pb"))
