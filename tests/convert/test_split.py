"""The split of one OTLP request by trace (what the server's intake stores): every span
kept once, in its trace's part, in the request's encoding; the converter reads the parts
as it reads the request; one id rule for both."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracejudge import semconv
from tracejudge.convert import OTLPDecodeError, traces_from_otlp
from tracejudge.convert._otlp import decode
from tracejudge.convert.split import OTLPTooLargeError, inflate_gzip, split_otlp

from ._helpers import FIXTURES


def _recorded_request(traces: int = 3, spans_per_trace: int = 4) -> ExportTraceServiceRequest:
    """A request the OTel SDK's own encoder makes, of spans recorded by the real SDK:
    `traces` traces of a root and its children, under two instrumentation scopes."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "checkout", "deployment.environment": "ci"})
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agents = provider.get_tracer("agents")
    models = provider.get_tracer("models", "1.2")
    for number in range(traces):
        with agents.start_as_current_span(f"invoke_agent run{number}"):
            for child in range(spans_per_trace - 1):
                with models.start_as_current_span(f"chat {child}") as span:
                    span.set_attribute("gen_ai.request.model", "gpt-4.1-mini")
    evaluator = provider.get_tracer(semconv.EVALUATION_SCOPE)
    with evaluator.start_as_current_span("gen_ai.evaluation"):
        pass
    provider.shutdown()
    return encode_spans(exporter.get_finished_spans())


def _span_ids(data: bytes) -> dict[str, set[str]]:
    spans, _, _ = decode(data)
    found: dict[str, set[str]] = {}
    for span in spans:
        found.setdefault(span.trace_id, set()).add(span.span_id)
    return found


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_every_span_lands_once_in_its_traces_part(encoding: str) -> None:
    request = _recorded_request()
    body = (
        request.SerializeToString()
        if encoding == "protobuf"
        else MessageToJson(request).encode()  # protobuf's json_format: base64 ids
    )
    split = split_otlp(body, encoding)  # type: ignore[arg-type]
    # The evaluation-scope span is accepted and left out; no span is rejected.
    assert (split.ignored, split.rejected, split.accepted) == (1, 0, 12)
    assert len(split.parts) == 3
    everything = _span_ids(request.SerializeToString())
    for part in split.parts:
        assert part.encoding == encoding and part.span_count == 4 and part.has_root
        assert part.resource["service.name"] == "checkout"
        # The part is OTLP the converter reads: this trace's spans, all of them, only them.
        assert _span_ids(part.payload) == {part.trace_id: everything[part.trace_id]}
    assert {p.trace_id for p in split.parts} == set(everything) - {
        t
        for t, ids in everything.items()
        if len(ids) == 1  # the evaluation span's trace
    }


def test_a_protobuf_part_is_cut_from_the_requests_own_bytes() -> None:
    request = _recorded_request(traces=1)
    (part,) = split_otlp(request.SerializeToString(), "protobuf").parts
    parsed = ExportTraceServiceRequest.FromString(part.payload)
    (resource_spans,) = parsed.resource_spans
    assert resource_spans.resource == request.resource_spans[0].resource
    scopes = {s.scope.name: s for s in resource_spans.scope_spans}
    assert set(scopes) == {"agents", "models"}
    assert scopes["models"].scope.version == "1.2"
    original = {
        s.span_id: s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
    }
    for scope_spans in resource_spans.scope_spans:
        for span in scope_spans.spans:
            assert span == original[span.span_id]  # byte for byte the same span


def test_parts_convert_to_the_traces_the_whole_request_gives() -> None:
    body = (FIXTURES / "openllmetry.pb").read_bytes()
    whole = {t.root.name: t.to_json() for t in traces_from_otlp(body)}
    parts = split_otlp(body, "protobuf").parts
    rebuilt = {}
    for part in parts:
        for trace in traces_from_otlp(part.payload):
            rebuilt[trace.root.name] = trace.to_json()
    assert rebuilt == whole and whole
    # The same through OTLP/JSON lines of the fixture, and the stored parts together (a
    # trace sent in several requests is stored as several parts, read back as one input).
    for line in (FIXTURES / "openllmetry.jsonl").read_bytes().splitlines():
        if line.strip():
            for part in split_otlp(line, "json").parts:
                assert traces_from_otlp(part.payload).has_llm_interactions or part.span_count


def _span(trace_id: str, span_id: str, parent: str | None = None) -> dict:
    span = {"traceId": trace_id, "spanId": span_id, "name": "s"}
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def _document(*spans: dict) -> bytes:
    return json.dumps(
        {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "x"}, "spans": list(spans)}]}]}
    ).encode()


def test_one_id_rule_for_the_split_and_the_converter() -> None:
    good_trace, good_span = "ab" * 16, "cd" * 8
    body = _document(
        _span(good_trace, good_span),
        _span("00" * 16, good_span),  # all-zero trace id
        _span(good_trace, "00" * 8),  # all-zero span id
        _span("abc", good_span),  # malformed
        _span(good_trace.upper(), "ef" * 8, parent="00" * 8),  # upper case; zero parent: root
    )
    split = split_otlp(body, "json")
    assert split.rejected == 3 and "no valid traceId" in split.reasons[0]
    (part,) = split.parts
    assert part.trace_id == good_trace and part.span_count == 2 and part.has_root
    # The converter reads the same spans and skips the same ones, saying so.
    spans, _, warnings = decode(body)
    assert sorted(s.span_id for s in spans) == ["cd" * 8, "ef" * 8]
    assert all(s.trace_id == good_trace for s in spans)
    assert sum("without trace or span id" in w for w in warnings) == 3


def test_protobuf_spans_with_bad_ids_are_rejected_by_both_readers() -> None:
    request = _recorded_request(traces=1)
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[0].trace_id = bytes(16)
    split = split_otlp(request.SerializeToString(), "protobuf")
    assert split.rejected == 1 and "trace_id (16 bytes" in split.reasons[0]
    records, _, warnings = decode(request.SerializeToString())
    assert len(records) == split.accepted + split.ignored  # the decoder keeps evaluations
    assert any("no valid trace_id" in w for w in warnings)


def test_gzip_of_many_members_inflates_whole_and_bounded() -> None:
    request = _recorded_request().SerializeToString()
    members = b"".join(gzip.compress(request[i : i + 100]) for i in range(0, len(request), 100))
    body = members + b"\x00" * 16 + gzip.compress(b"")  # padding, then an empty member
    assert inflate_gzip(body, 1 << 20) == request
    assert split_otlp(body, "protobuf", gzipped=True, max_bytes=1 << 20).accepted == 12
    with pytest.raises(OTLPTooLargeError):
        split_otlp(body, "protobuf", gzipped=True, max_bytes=len(request) - 1)
    with pytest.raises(OTLPDecodeError, match="truncated"):
        inflate_gzip(members[:-5], 1 << 20)
    with pytest.raises(OTLPDecodeError, match="not valid gzip"):
        inflate_gzip(members + b"garbage!", 1 << 20)
    # 20,000 empty members: each costs its own bytes, not the rest of the body's.
    empty = gzip.compress(b"") * 20_000
    assert inflate_gzip(empty, 10) == b""


def test_unreadable_requests_raise_with_the_reason() -> None:
    with pytest.raises(OTLPDecodeError, match="runs past its message"):
        split_otlp(b"\x0a\x7f\x00", "protobuf")
    with pytest.raises(OTLPDecodeError, match="not JSON"):
        split_otlp(b"{not json", "json")
    with pytest.raises(OTLPDecodeError, match="nested too deeply"):
        split_otlp(b"[" * 5000 + b"]" * 5000, "json")
    with pytest.raises(OTLPDecodeError, match="not an OTLP/JSON"):
        split_otlp(b"[1, 2]", "json")
    with pytest.raises(OTLPTooLargeError):
        split_otlp(b"{}" * 10, "json", max_bytes=5)
    # An empty request is a request with nothing in it.
    assert split_otlp(b"", "protobuf").parts == []


class _CountingInflaters:
    """`zlib` as `split` uses it, counting the bytes handed to every inflater and the
    bytes each keeps as `unused_data` (what a quadratic multi-member inflater copies)."""

    def __init__(self) -> None:
        self.fed = 0
        self.copied = 0
        self.members = 0
        self.error = zlib.error

    def decompressobj(self, wbits: int) -> object:
        counter = self
        inner = zlib.decompressobj(wbits=wbits)
        counter.members += 1

        class Inflater:
            def decompress(self, data: bytes, max_length: int = 0) -> bytes:
                counter.fed += len(data)
                out = inner.decompress(data, max_length)
                counter.copied += len(inner.unused_data)
                return out

            def __getattr__(self, name: str) -> object:
                return getattr(inner, name)

        return Inflater()


@pytest.mark.parametrize(
    "members", [2_000, pytest.param(200_000, marks=pytest.mark.heavy("200,000 gzip members"))]
)
def test_many_gzip_members_inflate_in_work_linear_in_the_body(monkeypatch, members) -> None:
    """The intake's own gunzip (#22 item 2) handed each member's inflater the whole rest of
    the body, which copied it again as `unused_data`: 200,000 empty members (3.8 MiB)
    cost about 4e11 bytes of copying and held the event loop 14 s. Each member's inflater
    is now handed a few hundred bytes: the work is a constant times the body's size, the
    same for 2,000 members as for 200,000."""
    from tracejudge.convert import _inflate

    last = _recorded_request().SerializeToString()
    body = gzip.compress(b"", mtime=0) * members + gzip.compress(last, mtime=0)
    counting = _CountingInflaters()
    monkeypatch.setattr(_inflate, "zlib", counting)
    assert split_otlp(body, "protobuf", gzipped=True, max_bytes=1 << 20).accepted == 12
    assert counting.members == members + 1
    assert counting.fed + counting.copied <= 64 * len(body)


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_each_part_carries_its_tags_resource_and_times(encoding: str) -> None:
    """Tags (`tracejudge.tags.*` on the resource or any span, of any scalar type), the
    other resource attributes, and the earliest start and latest end, per trace."""
    exporter = InMemorySpanExporter()
    resource = Resource.create(
        {"service.name": "checkout", "host.cores": 8, "tracejudge.tags.team": "search"}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agents")
    with tracer.start_as_current_span("root", start_time=1_000) as root:
        root.set_attribute("tracejudge.tags.run", 7)
        with tracer.start_as_current_span("child", start_time=2_000, end_on_exit=False) as child:
            child.set_attribute("tracejudge.tags.canary", True)
            child.set_attribute("tracejudge.tags.team", "ranking")  # a span's replaces
            child.set_attribute("tracejudge.tags.ratio", 0.5)
            child.set_attribute("other", "x")
        child.end(end_time=9_000)
        root.end(end_time=5_000)
    with tracer.start_as_current_span("alone", start_time=3_000, end_on_exit=False) as alone:
        alone.end(end_time=4_000)
    provider.shutdown()
    request = encode_spans(exporter.get_finished_spans())
    body = (
        request.SerializeToString() if encoding == "protobuf" else MessageToJson(request).encode()
    )
    parts = {p.span_count: p for p in split_otlp(body, encoding).parts}  # type: ignore[arg-type]
    tagged, untagged = parts[2], parts[1]
    assert tagged.tags == {"team": "ranking", "run": "7", "canary": "true", "ratio": "0.5"}
    assert (tagged.start, tagged.end) == (1_000, 9_000)
    assert tagged.resource["service.name"] == "checkout"
    assert tagged.resource["host.cores"] == "8"
    assert not any(key.startswith("tracejudge.tags.") for key in tagged.resource)
    assert untagged.tags == {"team": "search"}  # the resource's own
    assert (untagged.start, untagged.end) == (3_000, 4_000)
