"""The server as deployed (issue #36): three replicas over one PostgreSQL behind a load
balancer, a load generator sending OTLP through it, a judge with latency. One replica is
killed with SIGKILL mid-run: every acknowledged trace is stored and scored exactly once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest

from tests.server.balancer import Balancer
from tests.server.harness import API_KEY, ServerProcess, verdict, wait_for
from tests.server.postgres import Cluster
from tracejudge import checks
from tracejudge.testing import ScriptedLLMServer

pytestmark = pytest.mark.heavy("three server processes, one killed, and a load balancer")

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openllmetry.jsonl"
CRITERION = "Reward agents that stay on task"


def _trace(n: int) -> bytes:
    """The recorded trace as run number `n`: the same spans under their own trace id."""
    document = json.loads(FIXTURE.read_text().splitlines()[0])
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span["traceId"] = f"{n:08x}" + span["traceId"][8:]
    return json.dumps(document).encode()


def _send(url: str, count: int, acknowledged: list[str], stop_after: threading.Event) -> None:
    """Send `count` traces as an OTLP exporter does: retry on 503/429 and on a dropped
    connection; a trace is acknowledged by a 200."""
    # a new connection per request, so the balancer spreads them
    limits = httpx.Limits(max_keepalive_connections=0)
    headers = {"API-Key": API_KEY, "Content-Type": "application/json"}
    with httpx.Client(base_url=url, headers=headers, limits=limits, timeout=30) as client:
        for n in range(count):
            for _ in range(50):
                try:
                    answer = client.post("/v1/traces", content=_trace(n))
                except httpx.TransportError:
                    continue
                if answer.status_code == 200:
                    acknowledged.append(f"{n:08x}" + _trace_tail())
                    break
                assert answer.status_code in (429, 503), answer.text
            if len(acknowledged) == count // 3:
                stop_after.set()


def _trace_tail() -> str:
    document = json.loads(FIXTURE.read_text().splitlines()[0])
    return str(document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"][8:])


def test_a_replica_killed_mid_run_loses_no_acknowledged_trace(
    pg_cluster: Cluster, tmp_path: Path
) -> None:
    criteria = tmp_path / "criteria.txt"
    criteria.write_text(CRITERION + "\n")
    db = pg_cluster.database()
    args = [
        "--workers",
        "2",
        "--task-lease-seconds",
        "2",
        "--trace-quiet-seconds",
        "0.2",
        "--criteria-file",
        str(criteria),
    ]
    with ScriptedLLMServer(default=verdict()) as judge:
        replicas = [
            ServerProcess(db, judge=judge, args=args, log=tmp_path / f"log{i}") for i in range(3)
        ]
        for replica in replicas:
            replica.start()
        try:
            with Balancer([("127.0.0.1", r.port) for r in replicas]) as balancer:
                acknowledged: list[str] = []
                third = threading.Event()
                sender = threading.Thread(
                    target=_send, args=(balancer.url, 30, acknowledged, third)
                )
                sender.start()
                assert third.wait(120)
                replicas[1].kill()  # mid-run: it holds traces, tasks, connections
                sender.join(300)
                assert len(acknowledged) == 30
                assert all(count > 0 for count in balancer.connections)
            survivor = replicas[0].client()
            wait_for(
                lambda: (
                    survivor.get("/api/v1/traces", params={"status": "scored"}).json()["total"]
                    == 30
                ),
                timeout=120,
            )
            for trace_id in acknowledged:
                stored = survivor.get(f"/api/v1/traces/{trace_id}/evaluations").json()
                names = [e["criterion"] for e in stored["evaluations"]]
                # each criterion once: no trace was scored twice, none half-scored
                assert sorted(names) == sorted([CRITERION, *(c.name for c in checks.ALL)])
            survivor.close()
        finally:
            for replica in replicas:
                replica.stop()
