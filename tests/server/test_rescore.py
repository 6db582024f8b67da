"""Scoring a stored trace again with the check it was posted with: the task is done and
the trace's digest holds one answer per criterion, the latest (before: the second answer
on the same criterion failed the task with a UNIQUE constraint in agent_scores)."""

from __future__ import annotations

from tests.checks import faults
from tests.server.harness import InProcessServer, wait_for
from tracejudge.models import MultiAgentTrace


def test_rescoring_a_trace_with_the_check_it_was_posted_with(server: InProcessServer) -> None:
    trace = MultiAgentTrace.from_agent(faults.long_agent(4))
    with server.client() as http:
        body = {"evaluator_name": "final_answer", "trace": trace.to_wire(), "trace_id": "t1"}
        assert http.post("/api/v1/evals/trace", json=body).status_code == 200
        task = http.post("/api/v1/traces/t1/score", json={"checks": ["final_answer"]})
        assert task.status_code == 202, task.text
        task_id = task.json()["task_id"]

        def finished() -> dict[str, object] | None:
            state: dict[str, object] = http.get(f"/api/v1/tasks/{task_id}").json()
            return state if state["status"] not in ("queued", "running") else None

        assert wait_for(finished)["status"] == "done"
        listed = http.get("/api/v1/traces", params={"criterion": "final_answer"}).json()
        assert [t["trace_id"] for t in listed["traces"]] == ["t1"]
