"""The server writes its scores back onto the traces it scored, to an OTLP/HTTP endpoint.

A traced run goes to a live server over OTLP; the server scores it and sends the
scores as GenAI evaluation events to a receiver on loopback (a plain HTTP server that
keeps what the server's real OTLP exporter posts). The events hang under the agents'
spans; sent back to the server's intake, they are accepted and change nothing.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.server.harness import InProcessServer, ServerProcess, server_env, wait_for
from tests.server.test_otlp import _export_traced_run
from tracejudge import checks, semconv
from tracejudge.convert import traces_from_otlp


class _Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP receiver that keeps each request's path and body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        assert isinstance(self.server, _Receiver)
        self.server.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    server = _Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.heavy("the traced run is a program of its own, exporting over OTLP")
def test_scores_are_written_back_under_the_judged_agents(
    tmp_path, receiver: _Receiver, start_server: Callable[..., InProcessServer]
) -> None:
    server = start_server(
        str(tmp_path / "tj.db"),
        args=[
            "--trace-quiet-seconds",
            "0.3",
            "--evaluation-events-endpoint",
            receiver.url,
        ],
    )
    _export_traced_run(server)
    with server.client() as http:
        (listed,) = wait_for(
            lambda: http.get("/api/v1/traces", params={"status": "scored"}).json()["traces"],
            timeout=60,
        )
        stored = http.get(f"/api/v1/traces/{listed['trace_id']}").json()
        wait_for(lambda: receiver.received, timeout=20)
        ((path, body),) = receiver.received
        assert path == "/v1/traces"
        request = ExportTraceServiceRequest.FromString(body)
        spans = [
            span
            for resource in request.resource_spans
            for scope in resource.scope_spans
            if scope.scope.name == semconv.EVALUATION_SCOPE
            for span in scope.spans
        ]
        # One short span per agent, a child of the agent's own span in its trace.
        agents = {a["span_id"]: a["name"] for a in stored["trace"]["agent_instance_by_id"].values()}
        assert {span.parent_span_id.hex() for span in spans} == set(agents)
        assert {span.trace_id.hex() for span in spans} == {listed["trace_id"]}
        names = {
            kv.value.string_value
            for span in spans
            for event in span.events
            for kv in event.attributes
            if kv.key == semconv.GEN_AI_EVALUATION_NAME
        }
        assert names == {c.name for c in checks.ALL}  # checks only: no judge configured

        # Read back by the converter, with the run's spans, onto the right agents.
        converted = traces_from_otlp(body)
        assert converted.spans_read == len(spans)

        # Looped back into the server (a collector fanning out to it), they are
        # accepted, not stored, and the trace is not scored again.
        before = http.get(f"/api/v1/traces/{listed['trace_id']}").json()
        answer = http.post(
            "/v1/traces",
            content=body,
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert answer.status_code == 200
        # nothing to poll for: a change would come within the quiet period and a sweep
        time.sleep(0.3 + 3 * 0.1)
        after = http.get(f"/api/v1/traces/{listed['trace_id']}").json()
        assert after["span_count"] == before["span_count"]
        assert len(after["evaluations"]) == len(before["evaluations"])
    assert len(receiver.received) == 1


def test_a_bad_writeback_setting_is_refused_naming_the_flag(tmp_path) -> None:
    command = ServerProcess(str(tmp_path / "tj.db")).command()
    done = subprocess.run(
        [*command, "--evaluation-events-signal", "metrics"],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    assert done.returncode != 0
    assert "--evaluation-events-signal" in done.stderr and "spans or logs" in done.stderr
