"""Malformed input gets a 4xx that names what is wrong, on both stores, and the
connection stays open after it: JSON nested 2,000 deep on every JSON route, NUL and
lone surrogates in tags, ids, names and criteria, `%00` in paths and queries.

Before: deep JSON was a 500 on all 6 JSON routes (a `RecursionError`, the connection
dropped), NUL in tags, trace ids, criteria and agent names was accepted (200) and a lone
surrogate in a trace id too, and `%00` in a query was a 200.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from tests.server.harness import InProcessServer, wait_for
from tests.server.hostile import deep_json, otlp_trace

MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
TRACE = {
    "root_agent_instance_id": "o1",
    "agent_instance_by_id": {
        "o1": {
            "id": "o1",
            "name": "orchestrator",
            "interactions": [
                {
                    "input_messages": [{"role": "user", "content": "u"}],
                    "output_messages": [{"type": "text", "content": "x"}],
                }
            ],
        }
    },
}
JSON_ROUTES = (
    "/api/v1/evals/reward",
    "/api/v1/evals/reward/background",
    "/api/v1/evals/trace",
    "/api/v1/evals/trace/background",
    "/api/v1/traces/some-trace/score",
    "/v1/traces",
)


class Connection:
    """One keep-alive HTTP/1.1 connection over a raw socket: every answer must come back
    on it, and it must stay open for the next request."""

    def __init__(self, server: InProcessServer) -> None:
        self.server = server
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        self.buffer = b""

    def close(self) -> None:
        self.sock.close()

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            more = self.sock.recv(65536)
            assert more, "the server closed the connection"
            self.buffer += more
        head, _, self.buffer = self.buffer.partition(marker)
        return head

    def request(
        self, method: str, path: str, body: bytes | None = None, *, json_body: bool = True
    ) -> tuple[int, dict[str, str], bytes]:
        headers = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
        headers += [f"{k}: {v}" for k, v in self.server.headers.items()]
        if body is not None:
            if json_body:
                headers.append("Content-Type: application/json")
            headers.append(f"Content-Length: {len(body)}")
        self.sock.sendall("\r\n".join(headers).encode() + b"\r\n\r\n" + (body or b""))
        status_line, *lines = self._read_until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        answer_headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
        length = int(answer_headers.get("content-length", "0"))
        while len(self.buffer) < length:
            more = self.sock.recv(65536)
            assert more, "the server closed the connection mid-answer"
            self.buffer += more
        content, self.buffer = self.buffer[:length], self.buffer[length:]
        assert answer_headers.get("connection") != "close", (status_line, content[:200])
        return int(status_line.split()[1]), answer_headers, content


def _detail(content: bytes) -> str:
    data = json.loads(content)
    return str(data.get("detail") or data.get("message"))


def test_json_nested_2000_deep_is_a_4xx_on_every_json_route(server: InProcessServer) -> None:
    connection = Connection(server)
    try:
        for route in JSON_ROUTES:
            for depth in (2_000, 101):
                status, _, content = connection.request("POST", route, deep_json(depth))
                assert status in (400, 422), (route, depth, status, content[:300])
                assert "nested deeper than 100 levels" in _detail(content), content[:300]
        # deep inside a valid request, where pydantic would have failed to write it
        inner = json.dumps({"evaluation_criteria": "Reward x", "messages": MESSAGES})
        body = inner[:-1].encode() + b', "tools": [' + deep_json(300) + b"]}"
        status, _, content = connection.request("POST", "/api/v1/evals/reward", body)
        assert status == 422 and "nested deeper" in _detail(content)
        # 60 levels of tool arguments are fine
        nested_ok = inner[:-1].encode() + b', "tools": [{"x": ' + deep_json(60) + b"}]}"
        status, _, content = connection.request("POST", "/api/v1/evals/reward", nested_ok)
        assert status == 200, content[:300]
        status, _, _ = connection.request("GET", "/health")
        assert status == 200
    finally:
        connection.close()


def _bad_texts() -> list[tuple[str, str, dict[str, Any], str]]:
    """(case, route, body, the field the 422 must name)."""
    reward = {"messages": MESSAGES, "evaluation_criteria": "Reward x"}
    trace = {"trace": TRACE, "evaluation_criteria": "Reward x"}
    cases: list[tuple[str, str, dict[str, Any], str]] = []
    for bad, label in (("\x00", "NUL"), ("\ud800", "lone surrogate")):
        for route, base in (("/api/v1/evals/reward", reward), ("/api/v1/evals/trace", trace)):
            cases += [
                (f"{label} in a tag key", route, {**base, "tags": {f"k{bad}": "v"}}, "tags"),
                (f"{label} in a tag value", route, {**base, "tags": {"k": f"v{bad}"}}, "tags"),
                (f"{label} in trace_id", route, {**base, "trace_id": f"t{bad}"}, "trace_id"),
                (
                    f"{label} in the criterion",
                    route,
                    {**base, "evaluation_criteria": f"Reward {bad} x"},
                    "evaluation_criteria",
                ),
            ]
        renamed = json.loads(json.dumps(TRACE))
        renamed["agent_instance_by_id"]["o1"]["name"] = f"orch{bad}"
        cases.append(
            (
                f"{label} in an agent name",
                "/api/v1/evals/trace",
                {**trace, "trace": renamed},
                "name",
            )
        )
        cases.append(
            (
                f"{label} in a re-score criterion",
                "/api/v1/traces/some-trace/score",
                {"criteria": [f"Reward {bad}"]},
                "criteria",
            )
        )
    return cases


@pytest.mark.parametrize("db_url", ["sqlite", "postgres"], indirect=True)
def test_nul_and_lone_surrogates_get_422_naming_the_field_on_both_stores(
    server: InProcessServer,
) -> None:
    connection = Connection(server)
    try:
        for case, route, body, field in _bad_texts():
            raw = json.dumps(body).encode()  # escaped: \u0000, \ud800
            status, _, content = connection.request("POST", route, raw)
            assert status == 422, (case, status, content[:300])
            assert field in _detail(content), (case, content[:300])
        # nothing was stored, and an ingested trace with a NUL agent name is stored as
        # U+FFFD on either store (the span's text is not the client's to fix)
        status, _, content = connection.request("GET", "/api/v1/traces")
        assert status == 200 and json.loads(content)["traces"] == []
        trace_id, otlp = otlp_trace("wri\x00ter")
        status, _, _ = connection.request("POST", "/v1/traces", otlp.encode())
        assert status == 200

        def converted() -> dict[str, Any] | None:
            status, _, content = connection.request("GET", f"/api/v1/traces/{trace_id}")
            stored = json.loads(content)
            return stored if status == 200 and stored["status"] not in ("open", "queued") else None

        stored = wait_for(converted)
        assert "wri\ufffdter" in stored["agents"], (stored["status"], stored["error"])
    finally:
        connection.close()


def test_nul_in_paths_and_queries_is_a_4xx_and_the_connection_stays(
    server: InProcessServer,
) -> None:
    connection = Connection(server)
    try:
        for path in (
            "/api/v1/traces/a%00b",
            "/api/v1/traces/a%00b/evaluations",
            "/api/v1/tasks/a%00b",
            "/ui/traces/a%00b",
            "/api/v1/traces/%ED%A0%80",
        ):
            status, _, content = connection.request("GET", path)
            assert status == 404, (path, status, content[:200])
        for query in ("tag=a:%00", "agent=%00", "cursor=%00", "status=%00", "since=%00"):
            for page in ("/api/v1/traces", "/ui"):
                status, _, content = connection.request("GET", f"{page}?{query}")
                assert status == 422, (page, query, status, content[:200])
                assert b"query parameter" in content
        status, _, content = connection.request(
            "POST", "/api/v1/traces/a%00b/score", b'{"checks": ["loops"]}'
        )
        assert status == 404, content[:200]
        status, _, _ = connection.request("GET", "/health")
        assert status == 200
    finally:
        connection.close()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_other_4xx_answers_keep_the_connection_open(server: InProcessServer) -> None:
    """415, 404, 405, 422 (not JSON) and a 413 whose body was sent: the next request is
    answered on the same connection."""
    connection = Connection(server)
    try:
        reward = json.dumps({"messages": MESSAGES, "evaluation_criteria": "Reward x"}).encode()
        assert connection.request("POST", "/api/v1/evals/reward", reward, json_body=False)[0] == 415
        assert connection.request("GET", "/no/such/page")[0] == 404
        assert connection.request("DELETE", "/api/v1/traces")[0] == 405
        assert connection.request("POST", "/api/v1/evals/reward", b"{not json")[0] == 422
        assert connection.request("POST", "/api/v1/evals/reward", b"x" * (17 << 20))[0] == 413
        assert connection.request("POST", "/api/v1/evals/reward", reward)[0] == 200
    finally:
        connection.close()
