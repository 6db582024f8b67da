"""Every decoder keeps the instrumentation scope's version beside its name
(`SpanRecord.scope_version`): `tracejudge inspect` shows which release of a producer
wrote a trace."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracejudge.convert import _otlp
from tracejudge.convert._otlp import decode
from tracejudge.convert._records import span_record

from ._helpers import FIXTURES

LANGGRAPH = FIXTURES / "frameworks" / "langgraph_openinference"
SCOPE = ("openinference.instrumentation.langchain", "0.1.80")


def _scopes(data: bytes) -> set[tuple[str | None, str | None]]:
    records, _, _ = decode(data)
    return {(record.scope, record.scope_version) for record in records}


@pytest.mark.parametrize("suffix", [".pb", ".jsonl"])
def test_otlp_spans_carry_their_scope_version(suffix: str) -> None:
    assert _scopes(LANGGRAPH.with_suffix(suffix).read_bytes()) == {SCOPE}


def test_plain_json_path_reads_the_version_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_otlp, "_structs", None)
    assert _scopes(LANGGRAPH.with_suffix(".jsonl").read_bytes()) == {SCOPE}


def test_a_scope_without_version_gives_none() -> None:
    # tracejudge's own tracer names no version.
    scopes = dict(_scopes((FIXTURES / "openllmetry.pb").read_bytes()))
    assert scopes["tracejudge.tracing"] is None
    assert scopes["opentelemetry.instrumentation.openai.v1"] == "0.62.4"


def test_sdk_spans_carry_their_scope_version() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("my.instrumentation", "1.2.3").start_as_current_span("s"):
        pass
    with provider.get_tracer("unversioned").start_as_current_span("t"):
        pass
    records = [span_record(span) for span in exporter.get_finished_spans()]
    assert [(r.scope, r.scope_version) for r in records] == [
        ("my.instrumentation", "1.2.3"),
        ("unversioned", None),
    ]
