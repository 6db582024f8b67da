"""Tasks survive a crash: kill -9 mid-queue, start again on the same database. Queued tasks
run, finished ones stay readable, the one that was running runs again (or is marked
failed once it used up its attempts). Nothing is dropped."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.server.harness import ServerProcess, verdict, wait_for
from tracejudge.testing import Reply, ScriptedLLMServer

pytestmark = pytest.mark.heavy("server processes killed with SIGKILL and restarted")

MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]


def _submit(http: httpx.Client, criterion: str) -> str:
    body = {"messages": MESSAGES, "evaluation_criteria": criterion}
    answer = http.post("/api/v1/evals/reward/background", json=body)
    assert answer.status_code == 202, answer.text
    return str(answer.json()["task_id"])


def _status(http: httpx.Client, task_id: str) -> dict:
    return http.get(f"/api/v1/tasks/{task_id}").json()


def _slow() -> Reply:
    score = json.loads(verdict().content)  # type: ignore[arg-type]
    return Reply.text(json.dumps(score), delay=30)


def test_kill_mid_queue_then_restart(db_url: str, judge_model: ScriptedLLMServer, tmp_path) -> None:
    args = ["--workers", "1", "--task-lease-seconds", "2"]
    first = ServerProcess(db_url, judge=judge_model, args=args, log=tmp_path / "log").start()
    try:
        with first.client() as http:
            finished = _submit(http, "Reward finished work")
            done = wait_for(lambda: _status(http, finished)["status"] == "done")
            assert done
            before = _status(http, finished)
            judge_model.default = _slow()
            queued = [_submit(http, f"Reward queued work {i}") for i in range(3)]
            wait_for(lambda: _status(http, queued[0])["status"] == "running")
            assert [_status(http, t)["status"] for t in queued[1:]] == ["queued", "queued"]
    finally:
        first.kill()
    judge_model.default = verdict()
    second = ServerProcess(db_url, judge=judge_model, args=args, log=tmp_path / "log").start()
    try:
        with second.client() as http:
            assert _status(http, finished) == before  # done stays readable, unchanged
            for task_id in queued:
                wait_for(lambda t=task_id: _status(http, t)["status"] == "done", timeout=30)
    finally:
        second.stop()
    judged = [r.json["messages"][-1]["content"] for r in judge_model.requests]
    # the interrupted task was judged twice (once before the kill), the others once
    assert sum("Reward queued work 0" in c for c in judged) == 2
    assert sum("Reward queued work 1" in c for c in judged) == 1


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_interrupted_task_is_marked_failed_after_its_attempts(
    db_url: str, judge_model: ScriptedLLMServer, tmp_path
) -> None:
    args = ["--workers", "1", "--task-attempts", "1"]
    first = ServerProcess(db_url, judge=judge_model, args=args, log=tmp_path / "log").start()
    judge_model.default = _slow()
    try:
        with first.client() as http:
            task_id = _submit(http, "Reward anything")
            wait_for(lambda: _status(http, task_id)["status"] == "running")
    finally:
        first.kill()
    second = ServerProcess(db_url, judge=judge_model, args=args, log=tmp_path / "log").start()
    try:
        with second.client() as http:
            status = _status(http, task_id)
            assert status["status"] == "failed"
            assert "stopped while this task ran" in status["error"]
    finally:
        second.stop()
