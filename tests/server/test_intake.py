"""The intake under hostile input, against a real server (uvicorn on loopback, in a thread):
nothing heavy runs on the event loop, ids follow the converter's one rule, every answer
is in the request's encoding (413 and 429 included), a trace past the span limit is kept
as too_large, and span batches stored by earlier versions are still scored.

"While the intake works" is observed from outside: a request's body is streamed and the
moment its last byte is sent is noted; `/health` is then asked again and again, one
request at a time, until that request is answered. An event loop held by the work (as
the quadratic gunzip held it for 14 s) answers no `/health` in between but the one
queued behind it; a free loop answers one after the other.
"""

from __future__ import annotations

import gzip
import json
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.server.harness import InProcessServer, wait_for
from tests.server.hostile import OTLP_JSON, gzip_bomb, otlp_protobuf, otlp_trace
from tracejudge.convert import traces_from_otlp
from tracejudge.server.store import open_store
from tracejudge.testing import ScriptedLLMServer

PROTOBUF = {"Content-Type": "application/x-protobuf"}
#: /health answers that must come while a request is in flight. A held loop answers at
#: most the one queued behind the work (and one more while the result is stored).
HEALTH_ANSWERS = 10


@pytest.fixture
def start(
    tmp_path: Path, judge_model: ScriptedLLMServer, start_server: Callable[..., InProcessServer]
) -> Callable[..., InProcessServer]:
    """Start a server on a fresh SQLite file with more flags; stopped after the test."""
    count = iter(range(1000))

    def make(*args: str, db: str | None = None) -> InProcessServer:
        return start_server(
            db or str(tmp_path / f"tracejudge-{next(count)}.db"),
            judge=judge_model,
            args=["--trace-quiet-seconds", "0.2", "--rate-limit", "0", *args],
        )

    return make


def _streamed(body: bytes, sent: threading.Event) -> Iterator[bytes]:
    """The body in pieces; `sent` is set once its last byte went out."""
    for start in range(0, len(body), 1 << 16):
        yield body[start : start + (1 << 16)]
    sent.set()


def health_while(
    server: InProcessServer, requests: Sequence[tuple[str, bytes, dict[str, str]]]
) -> tuple[list[httpx.Response], int]:
    """Send `requests` (path, body, headers) at once, each from a thread of its own, and
    ask /health one request at a time until all are answered: (their answers, the /health
    answers that came after every body was sent and before the last answer)."""
    answers: list[httpx.Response | None] = [None] * len(requests)
    sent = [threading.Event() for _ in requests]

    def send(number: int) -> None:
        path, body, headers = requests[number]
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=300) as http:
            answers[number] = http.post(
                path, content=_streamed(body, sent[number]), headers=headers
            )

    threads = [threading.Thread(target=send, args=(n,)) for n in range(len(requests))]
    for thread in threads:
        thread.start()
    for event in sent:
        assert event.wait(60), "a request body was not sent"
    healthy = 0
    with httpx.Client(base_url=server.url, timeout=300) as http:
        while any(thread.is_alive() for thread in threads):
            assert http.get("/health").status_code == 200
            healthy += any(answer is None for answer in answers)
    for thread in threads:
        thread.join()
    assert all(answer is not None for answer in answers)
    return [a for a in answers if a is not None], healthy


def _traces(server: InProcessServer, **params: str) -> list[dict]:
    with server.client() as http:
        return http.get("/api/v1/traces", params=params).json()["traces"]


# --------------------------------------------------------------------------- the event loop


def test_health_answers_while_a_gzip_bomb_is_inflated(start) -> None:
    server = start()
    trace_id = secrets.token_bytes(16)
    bomb = gzip_bomb(200_000, last=otlp_protobuf(3, trace_id))  # 3.8 MiB, 200,001 members
    headers = {**PROTOBUF, "Content-Encoding": "gzip"}
    (answer,), healthy = health_while(server, [("/v1/traces", bomb, headers)])
    assert answer.status_code == 200, answer.content
    assert answer.headers["content-type"] == "application/x-protobuf"
    assert healthy >= HEALTH_ANSWERS
    # The bomb was inflated whole: the request at its end is stored.
    (stored,) = wait_for(lambda: _traces(server, status="scored"))
    assert stored["trace_id"] == trace_id.hex() and stored["span_count"] == 3


def test_health_answers_while_bombs_wait_for_the_one_parse_thread(start) -> None:
    server = start("--parse-threads", "1")
    headers = {**PROTOBUF, "Content-Encoding": "gzip"}
    bombs = [("/v1/traces", gzip_bomb(100_000, last=otlp_protobuf(2)), headers)] * 3
    answers, healthy = health_while(server, bombs)
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert healthy >= HEALTH_ANSWERS


def test_health_answers_while_a_10_mib_reward_is_evaluated(start) -> None:
    server = start()
    messages = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"word{n} " * 250}
        for n in range(4_800)
    ]
    body = json.dumps({"messages": messages, "evaluation_criteria": "Reward accuracy"}).encode()
    assert 10 * 2**20 <= len(body) < 16 * 2**20
    (answer,), healthy = health_while(server, [("/api/v1/evals/reward", body, OTLP_JSON)])
    assert answer.status_code == 200, answer.text
    assert "explanation" in answer.json()
    assert healthy >= HEALTH_ANSWERS


# --------------------------------------------------------------------------- ids and answers


def _recorded(spans: int = 4) -> ExportTraceServiceRequest:
    """A request of spans recorded by the real OTel SDK, encoded by its exporter's encoder."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agents")
    with tracer.start_as_current_span("invoke_agent orchestrator"):
        for n in range(spans - 1):
            with tracer.start_as_current_span(f"chat {n}"):
                pass
    provider.shutdown()
    return encode_spans(exporter.get_finished_spans())


def test_ids_are_judged_by_the_converters_rule_in_both_encodings(start) -> None:
    from google.protobuf.json_format import MessageToDict

    server = start()
    request = _recorded(spans=6)
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[1].trace_id = bytes(16)  # all zero
    spans[2].span_id = bytes(8)  # all zero
    spans[3].trace_id = spans[3].trace_id[:15]  # malformed: 15 bytes
    protobuf = request.SerializeToString()
    document = MessageToDict(request)  # ids in base64, as protobuf's json_format writes
    document_spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    document_spans[4]["traceId"] = bytes(spans[4].trace_id).hex()  # hex, as OTLP/JSON has it
    document_spans[5]["spanId"] = "not-an-id"
    as_json = json.dumps(document).encode()
    with server.client() as http:
        answer = http.post("/v1/traces", content=protobuf, headers=PROTOBUF)
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/x-protobuf"
        response = ExportTraceServiceResponse.FromString(answer.content)
        assert response.partial_success.rejected_spans == 3
        assert "trace_id (16 bytes, not all zero)" in response.partial_success.error_message
        answer = http.post("/v1/traces", content=as_json, headers=OTLP_JSON)
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
        partial = answer.json()["partialSuccess"]
        assert (
            partial["rejectedSpans"] == "4" and "traceId (32 hex digits" in partial["errorMessage"]
        )
    # The converter reads the same bytes and keeps the same spans: what was stored.
    kept = traces_from_otlp(protobuf).spans_read + traces_from_otlp(as_json).spans_read
    assert kept == 3 + 2
    (stored,) = wait_for(lambda: _traces(server, status="unscorable"))
    assert stored["span_count"] == kept


def test_every_refusal_of_a_protobuf_request_is_protobuf(start) -> None:
    server = start("--max-body-bytes", str(1 << 20))
    big = otlp_protobuf(4_000)  # about 1.3 MiB
    assert len(big) > 1 << 20

    def status(answer: httpx.Response, code: int) -> str:
        assert answer.status_code == code, answer.content
        assert answer.headers["content-type"] == "application/x-protobuf"
        found = status_pb2.Status.FromString(answer.content)
        assert found.code == 8  # RESOURCE_EXHAUSTED
        return found.message

    with server.client() as http:
        # By Content-Length, refused before the body is read.
        message = status(http.post("/v1/traces", content=big, headers=PROTOBUF), 413)
        assert "--max-body-bytes" in message
        # Streamed without a length: refused while it is read.
        sent = threading.Event()
        chunked = http.post("/v1/traces", content=_streamed(big, sent), headers=PROTOBUF)
        assert "--max-body-bytes" in status(chunked, 413)
        # Small, but inflating past the limit.
        inflating = http.post(
            "/v1/traces",
            content=gzip.compress(big),
            headers={**PROTOBUF, "Content-Encoding": "gzip"},
        )
        assert "inflates to more than" in status(inflating, 413)
        # OTLP/JSON gets its answers in JSON.
        refused = http.post("/v1/traces", content=b"{}" + b" " * (1 << 20), headers=OTLP_JSON)
        assert refused.status_code == 413 and refused.json()["code"] == 8
    limited = start("--rate-limit", "0.001", "--rate-burst", "1")
    with limited.client() as http:
        assert http.post("/v1/traces", content=otlp_protobuf(2), headers=PROTOBUF).is_success
        again = http.post("/v1/traces", content=otlp_protobuf(2), headers=PROTOBUF)
        assert "too many requests" in status(again, 429) and again.headers["retry-after"]


# --------------------------------------------------------------------------- large traces


def test_a_trace_past_the_span_limit_is_kept_too_large_and_not_scored(start) -> None:
    """Issue #32 item 7: before, the request that took a trace past --max-trace-spans was
    answered 200 with no partial_success, the spans acknowledged before were deleted
    without a word, and the trace was listed "not scored yet" (verdict pending) beside
    its too_large reason. Now that answer and every later one for the trace count its
    spans as rejected in partial_success, with a message saying nothing of it is kept and
    it will not be scored; its verdict is unscored."""
    server = start("--max-trace-spans", "40")
    large, small = secrets.token_bytes(16), secrets.token_bytes(16)
    with server.client() as http:
        answers = [
            http.post("/v1/traces", content=body, headers=PROTOBUF)
            for body in (
                otlp_protobuf(30, large),
                otlp_protobuf(30, large),
                otlp_protobuf(5, small),
            )
        ]
        assert [a.status_code for a in answers] == [200] * 3
        first, past, other = (ExportTraceServiceResponse.FromString(a.content) for a in answers)
        assert not first.HasField("partial_success") and not other.HasField("partial_success")
        assert past.partial_success.rejected_spans == 30
        message = past.partial_success.error_message
        assert large.hex() in message and "--max-trace-spans" in message
        assert "none of its spans are kept" in message and "will not be scored" in message
        # Later spans of it, in OTLP/JSON: all rejected, said in JSON.
        _, later = otlp_trace(trace_id=large.hex())
        again = http.post("/v1/traces", content=later, headers=OTLP_JSON)
        assert again.status_code == 200
        partial = again.json()["partialSuccess"]
        assert int(partial["rejectedSpans"]) > 0 and large.hex() in partial["errorMessage"]
        (scored,) = wait_for(lambda: _traces(server, status="scored"))
        assert scored["trace_id"] == small.hex()
        (kept,) = _traces(server, status="too_large")
        assert kept["trace_id"] == large.hex() and kept["span_count"] > 60
        assert kept["verdict"] == "unscored"
        assert large.hex() not in {t["trace_id"] for t in _traces(server, verdict="pending")}
        listed = http.get("/ui", params={"status": "too_large"})
        assert listed.status_code == 200 and large.hex() in listed.text
        assert '<span class="na">not scored yet</span>' not in listed.text
        assert '<span class="badge na">unscored</span>' in listed.text
        assert "more than 40 spans" in kept["error"] and "--max-trace-spans" in kept["error"]
        document = http.get("/openapi.json").json()["components"]["schemas"]
        assert kept["status"] in document["TraceSummary"]["properties"]["status"]["enum"]
        stored = http.get(f"/api/v1/traces/{large.hex()}").json()
        assert stored["trace"] is None and stored["evaluations"] == []
        page = http.get(f"/ui/traces/{large.hex()}")
        assert page.status_code == 200 and "more than 40 spans" in page.text
        assert len(page.content) < 10_000
    store = open_store(server.db)
    try:
        batches, count = store.traces.span_batches(large.hex())
        assert batches == [] and count == kept["span_count"]  # its spans are not kept
    finally:
        store.close()


def test_span_batches_stored_before_version_6_are_scored(start, tmp_path, monkeypatch) -> None:
    """A database of the schema before span batches kept their encoding, with a complete
    trace as the intake of that version stored it (one OTLP/JSON text per request), is
    migrated by the server, and the trace is read and scored."""
    from tracejudge.server.store import _core, migrations

    db = str(tmp_path / "old.db")
    monkeypatch.setattr(_core, "MIGRATIONS", [m for m in migrations.MIGRATIONS if m.version < 6])
    old = open_store(db)
    trace_id, body = otlp_trace()
    document = json.loads(body)
    spans = sum(len(s["spans"]) for r in document["resourceSpans"] for s in r["scopeSpans"])
    with old.core.transaction() as cursor:
        old.core.run(
            cursor,
            "INSERT INTO traces (trace_id, source, status, first_seen, last_span_at, "
            "root_ended, span_count) VALUES (?, 'otlp', 'open', 1, 1, 1, ?)",
            [trace_id, spans],
        )
        old.core.run(
            cursor,
            "INSERT INTO span_batches (trace_id, payload, received_at) VALUES (?, ?, 1)",
            [trace_id, json.dumps(document, separators=(",", ":"))],
        )
    old.close()
    monkeypatch.undo()
    server = start(db=db)
    (scored,) = wait_for(lambda: _traces(server, status="scored"), timeout=60)
    assert scored["trace_id"] == trace_id and scored["span_count"] == spans
    assert set(scored["agents"]) == {"orchestrator", "researcher", "writer"}


# --------------------------------------------------------------------------- backpressure


def test_uploads_past_the_backlog_bound_get_503_with_retry_after(start) -> None:
    """Issue #32 item 6: intake outran scoring without a bound (10,700 traces queued in
    60 s, no 429 or 503, /ready still ready). Now past --max-backlog-traces traces waiting
    to be scored, an upload is answered 503 with Retry-After in its own encoding (a
    google.rpc.Status, code 14 UNAVAILABLE), and /ready reports the backlog; reads go on."""
    server = start("--max-backlog-traces", "5", "--trace-quiet-seconds", "600")
    with server.client() as http:
        for _ in range(5):  # complete traces, waiting out the quiet period: unscored
            assert http.post("/v1/traces", content=otlp_protobuf(3), headers=PROTOBUF).is_success

        def refused() -> httpx.Response | None:
            answer = http.post("/v1/traces", content=otlp_protobuf(3), headers=PROTOBUF)
            return answer if answer.status_code == 503 else None

        answer = wait_for(refused, timeout=10)
        assert answer.headers["retry-after"] == "5"
        assert answer.headers["content-type"] == "application/x-protobuf"
        stored = status_pb2.Status.FromString(answer.content)
        assert stored.code == 14 and "--max-backlog-traces 5" in stored.message
        _, body = otlp_trace()
        as_json = http.post("/v1/traces", content=body, headers=OTLP_JSON)
        assert as_json.status_code == 503 and as_json.headers["retry-after"] == "5"
        assert as_json.json()["code"] == 14 and "waiting to be scored" in as_json.json()["message"]
        ready = http.get("/ready")
        assert ready.status_code == 200
        backlog = ready.json()["backlog"]
        assert backlog["limit"] == 5 and backlog["full"] is True
        waiting = backlog["traces"]
        assert 5 <= waiting <= 6  # one may have slipped in within the count's reuse
        assert len(http.get("/api/v1/traces").json()["traces"]) == waiting
