"""Two server replicas on one PostgreSQL database share the queue: every task runs once,
and an ingested trace is scored once, whichever replica received it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.server.harness import InProcessServer, wait_for
from tests.server.postgres import Cluster
from tracejudge import checks
from tracejudge.testing import ScriptedLLMServer

MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openllmetry.jsonl"


@pytest.fixture
def replicas(
    pg_cluster: Cluster,
    judge_model: ScriptedLLMServer,
    start_server: Callable[..., InProcessServer],
) -> list[InProcessServer]:
    """Two servers on one database, each with its own app, workers and connection pool."""
    db = pg_cluster.database()
    args = ["--workers", "3", "--trace-quiet-seconds", "0.3"]
    return [start_server(db, judge=judge_model, args=args) for _ in range(2)]


def test_replicas_share_the_queue_without_running_a_task_twice(
    replicas: list[InProcessServer], judge_model: ScriptedLLMServer
) -> None:
    a, b = (r.client() for r in replicas)
    try:
        ids = []
        for i in range(30):
            http = a if i % 2 else b
            body = {"messages": MESSAGES, "evaluation_criteria": f"Reward task {i:02d}"}
            ids.append(http.post("/api/v1/evals/reward/background", json=body).json()["task_id"])
        for task_id in ids:
            wait_for(lambda t=task_id: a.get(f"/api/v1/tasks/{t}").json()["status"] == "done")
        judged = [r.json["messages"][-1]["content"] for r in judge_model.requests]
        for i in range(30):
            assert sum(f"Reward task {i:02d}" in c for c in judged) == 1
        # an ingested trace is queued and scored once, though both replicas sweep
        document = FIXTURE.read_text().splitlines()[0]
        sent = b.post("/v1/traces", content=document, headers={"Content-Type": "application/json"})
        assert sent.status_code == 200
        (listed,) = wait_for(
            lambda: a.get("/api/v1/traces", params={"status": "scored"}).json()["traces"]
        )
        evaluations = a.get(f"/api/v1/traces/{listed['trace_id']}/evaluations").json()
        names = [e["criterion"] for e in evaluations["evaluations"]]
        assert len(names) == len(set(names)) == 5 + len(checks.ALL)
    finally:
        a.close()
        b.close()
