"""OTLP/HTTP intake: the standard exporter sends a traced multi-agent run, the server stores
it, scores it once complete, and the read API gives it back with its scores. Also OTLP/JSON,
gzip, partial success and the OTLP error answers."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.rpc import status_pb2

from tests.server.harness import API_KEY, InProcessServer, server_env, wait_for
from tracejudge import checks, criteria

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "openllmetry.jsonl"


def _export_traced_run(server: InProcessServer) -> None:
    env = server_env()
    env["PYTHONPATH"] = f"{ROOT}{':' + env['PYTHONPATH'] if env.get('PYTHONPATH') else ''}"
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{server.url}/v1/traces"
    env["OTEL_EXPORTER_OTLP_HEADERS"] = f"API-Key={API_KEY}"
    env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
    env["OTEL_SERVICE_NAME"] = "weather-bot"
    subprocess.run(
        [sys.executable, "-m", "tests.server.traced_run"],
        env=env,
        cwd=ROOT,
        check=True,
        timeout=120,
    )


@pytest.mark.heavy("the traced run is a program of its own, exporting over OTLP")
def test_exported_run_is_scored_and_read_back(server: InProcessServer) -> None:
    _export_traced_run(server)
    with server.client() as http:

        def scored() -> list:
            found = http.get("/api/v1/traces", params={"status": "scored"}).json()["traces"]
            return found

        (listed,) = wait_for(scored, timeout=60)
        assert listed["root_agent"] == "orchestrator" and listed["source"] == "otlp"
        assert set(listed["agents"]) == {"orchestrator", "researcher", "writer"}
        # the service is shown as such; SDK resource attributes are not the user's tags
        assert listed["service"] == "weather-bot" and listed["tags"] == {}
        assert listed["resource"]["telemetry.sdk.name"] == "opentelemetry"
        expected = {*criteria.agent, *(c.name for c in checks.ALL)}
        assert set(listed["scores"]) == expected
        trace = http.get(f"/api/v1/traces/{listed['trace_id']}").json()
        names = {a["name"] for a in trace["trace"]["agent_instance_by_id"].values()}
        assert names == {"orchestrator", "researcher", "writer"}
        by_criterion = {e["criterion"]: e for e in trace["evaluations"]}
        judged = by_criterion[criteria.agent_tool_use]["response"]
        assert set(judged["results_by_agent_name"]) == {"orchestrator", "researcher", "writer"}
        assert by_criterion["tool_arguments"]["overall_score"] == 1.0
        # filters
        assert http.get("/api/v1/traces", params={"agent": "writer"}).json()["traces"]
        assert not http.get("/api/v1/traces", params={"agent": "nobody"}).json()["traces"]
        assert http.get("/api/v1/traces", params={"service": "weather-bot"}).json()["traces"]
        assert not http.get("/api/v1/traces", params={"score_below": "0"}).json()["traces"]
        assert http.get("/api/v1/traces", params={"score_below": "0.9"}).json()["traces"]
        # re-score with other criteria
        task = http.post(
            f"/api/v1/traces/{listed['trace_id']}/score",
            json={"criteria": ["Reward short answers"], "checks": ["loops"]},
        )
        assert task.status_code == 202, task.text
        task_id = task.json()["task_id"]
        done = wait_for(
            lambda: (
                (t := http.get(f"/api/v1/tasks/{task_id}").json())["status"] != "queued"
                and t["status"] != "running"
                and t
            )
        )
        assert done["status"] == "done", done
        evaluations = http.get(f"/api/v1/traces/{listed['trace_id']}/evaluations").json()
        rescored = [e for e in evaluations["evaluations"] if e["source"] == "rescore"]
        assert {e["criterion"] for e in rescored} == {"Reward short answers", "loops"}


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_json_gzip_and_partial_success(server: InProcessServer) -> None:
    document = json.loads(FIXTURE.read_text().splitlines()[0])
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append({**spans[0], "traceId": "not-an-id"})
    body = gzip.compress(json.dumps(document).encode())
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    with server.client() as http:
        answer = http.post("/v1/traces", content=body, headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.json()["partialSuccess"]["rejectedSpans"] == "1"
        assert "traceId" in answer.json()["partialSuccess"]["errorMessage"]
        (listed,) = wait_for(
            lambda: http.get("/api/v1/traces", params={"status": "scored"}).json()["traces"]
        )
        total = sum(len(s["spans"]) for r in document["resourceSpans"] for s in r["scopeSpans"])
        assert listed["span_count"] == total - 1
        # the OTLP error answers
        bad = http.post(
            "/v1/traces",
            content=b"\xff\x00garbage",
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert bad.status_code == 400 and bad.headers["content-type"] == "application/x-protobuf"
        answer = status_pb2.Status()
        answer.ParseFromString(bad.content)  # the google.rpc.Status OTLP/HTTP answers with
        assert answer.code == 3 and answer.message  # INVALID_ARGUMENT, and why
        wrong = http.post("/v1/traces", content=b"x", headers={"Content-Type": "text/plain"})
        assert wrong.status_code == 415
        truncated = http.post("/v1/traces", content=body[:20], headers=headers)
        assert truncated.status_code == 400
        bomb = gzip.compress(b" " * (17 * 1024 * 1024))  # inflates past --max-body-bytes
        assert http.post("/v1/traces", content=bomb, headers=headers).status_code == 413


@pytest.mark.heavy("the traced run is a program of its own, exporting over OTLP")
def test_a_trace_whose_scoring_fails_is_kept_with_the_reason(
    server: InProcessServer, judge_model
) -> None:
    from tracejudge.testing import Reply

    judge_model.default = Reply.error(400, message="the judge rejects everything")
    _export_traced_run(server)
    with server.client() as http:
        (listed,) = wait_for(
            lambda: http.get("/api/v1/traces", params={"status": "failed"}).json()["traces"],
            timeout=60,
        )
        assert "the judge rejects everything" in listed["error"]
        assert listed["root_agent"] == "orchestrator"
        stored = http.get(f"/api/v1/traces/{listed['trace_id']}").json()
        names = {a["name"] for a in stored["trace"]["agent_instance_by_id"].values()}
        assert names == {"orchestrator", "researcher", "writer"}
