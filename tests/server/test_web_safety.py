"""The no-key loopback server is not reachable from a web page: a foreign Host (DNS
rebinding) gets 421 and no data, a body a page can send without asking (text/plain, a
form, multipart) gets 415 before anything runs, and a cross-site Origin gets 403."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from tests.server.harness import InProcessServer
from tests.server.hostile import OTLP_JSON, otlp_trace
from tracejudge.testing import ScriptedLLMServer

MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
REWARD = {"messages": MESSAGES, "evaluation_criteria": "Reward accurate answers"}
TRACE = {
    "evaluation_criteria": "Reward agents that work",
    "trace": {
        "root_agent_instance_id": "o1",
        "agent_instance_by_id": {
            "o1": {
                "id": "o1",
                "name": "o",
                "interactions": [
                    {
                        "input_messages": [{"role": "user", "content": "u"}],
                        "output_messages": [{"type": "text", "content": "x"}],
                    }
                ],
            }
        },
    },
    "evaluate_latest": False,
}


@pytest.fixture
def open_server(
    judge_model: ScriptedLLMServer, tmp_path, start_server: Callable[..., InProcessServer]
) -> InProcessServer:
    """No API key, loopback only, one extra allowed host name."""
    return start_server(
        str(tmp_path / "db"),
        judge=judge_model,
        api_key=None,
        args=["--allowed-host", "traces.internal", "--trace-quiet-seconds", "0.2"],
    )


def test_a_foreign_host_gets_421_and_no_data(open_server: InProcessServer) -> None:
    with open_server.client() as http:
        _, body = otlp_trace()
        assert http.post("/v1/traces", content=body, headers=OTLP_JSON).status_code == 200
        assert http.get("/api/v1/traces").json()["traces"]  # stored, readable from loopback
        port = open_server.port
        for path in ("/api/v1/traces", "/ui", "/health", "/openapi.json"):
            rebound = http.get(path, headers={"Host": f"attacker.example:{port}"})
            assert rebound.status_code == 421, (path, rebound.text)
            assert "trace_id" not in rebound.text and "--allowed-host" in rebound.json()["detail"]
        posted = http.post(
            "/api/v1/evals/reward", json=REWARD, headers={"Host": f"attacker.example:{port}"}
        )
        assert posted.status_code == 421
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", "traces.internal"):
            assert http.get("/api/v1/traces", headers={"Host": host}).status_code == 200, host
        assert http.get("/api/v1/traces", headers={"Host": f"[::1]:{port}"}).status_code == 200


def test_bodies_a_page_can_send_unasked_get_415_and_nothing_runs(
    open_server: InProcessServer, judge_model: ScriptedLLMServer
) -> None:
    text = json.dumps(REWARD)
    refused = {
        "text/plain": {"content": text, "headers": {"Content-Type": "text/plain"}},
        "form": {"data": {"evaluation_criteria": "Reward x", "messages": "[]"}},
        "multipart": {"files": {"body": ("b.json", text, "application/json")}},
        "no content type": {"content": text, "headers": {"Content-Type": ""}},
    }
    with open_server.client() as http:
        for path, body in (
            ("/api/v1/evals/reward", REWARD),
            ("/api/v1/evals/reward/background", REWARD),
            ("/api/v1/evals/trace", TRACE),
            ("/api/v1/evals/trace/background", TRACE),
            ("/api/v1/traces/some-trace/score", {"checks": ["tool_arguments"]}),
        ):
            for name, options in refused.items():
                if name == "text/plain" or name == "no content type":
                    options = {**options, "content": json.dumps(body)}
                answer = http.post(path, **options)  # type: ignore[arg-type]
                assert answer.status_code == 415, (path, name, answer.text)
                assert "application/json" in answer.json()["detail"]
        assert judge_model.requests == []
        assert http.get("/api/v1/traces").json()["traces"] == []
        assert http.post("/api/v1/evals/reward", json=REWARD).status_code == 200
        charset = {"Content-Type": "application/json; charset=utf-8"}
        assert http.post("/api/v1/evals/reward", content=text, headers=charset).status_code == 200


def test_a_cross_site_origin_gets_403(
    open_server: InProcessServer, judge_model: ScriptedLLMServer
) -> None:
    port = open_server.port
    with open_server.client() as http:
        for origin in ("https://attacker.example", "null", f"http://localhost:{port + 1}"):
            answer = http.post("/api/v1/evals/reward", json=REWARD, headers={"Origin": origin})
            assert answer.status_code == 403, (origin, answer.text)
            _, body = otlp_trace()
            intake = http.post("/v1/traces", content=body, headers={**OTLP_JSON, "Origin": origin})
            assert intake.status_code == 403
        assert judge_model.requests == []
        assert http.get("/api/v1/traces").json()["traces"] == []
        same = {"Origin": f"http://127.0.0.1:{port}"}
        assert http.post("/api/v1/evals/reward", json=REWARD, headers=same).status_code == 200
        allowed = {"Origin": "https://traces.internal"}
        assert http.post("/api/v1/evals/reward", json=REWARD, headers=allowed).status_code == 200
        # a page may still link to a read-only page
        assert http.get("/ui", headers={"Origin": "https://attacker.example"}).status_code == 200


def test_with_keys_any_host_may_be_used(
    tmp_path, start_server: Callable[..., InProcessServer]
) -> None:
    process = start_server(str(tmp_path / "db"))
    with process.client() as http:
        answer = http.get("/api/v1/traces", headers={"Host": "tracejudge.svc.cluster:80"})
        assert answer.status_code == 200
        assert httpx.get(f"{process.url}/api/v1/traces").status_code == 401
