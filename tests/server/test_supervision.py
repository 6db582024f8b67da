"""Background work survives bad items and a stuck database: a trace that cannot be stored as
it is, or a write lock held from outside, fails or waits that item only; the queue goes on,
the trace and its task agree, and `/ready` says while the workers are stalled."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

import httpx
import pytest

from tests.server.harness import InProcessServer, verdict, wait_for
from tests.server.hostile import OTLP_JSON, otlp_trace
from tracejudge.server.store.sqlite import SQLiteCore
from tracejudge.testing import Reply, ScriptedLLMServer

MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
SETTLED = ("scored", "failed", "unscorable")


def _reward_task(http: httpx.Client, criterion: str) -> str:
    body = {"messages": MESSAGES, "evaluation_criteria": criterion}
    answer = http.post("/api/v1/evals/reward/background", json=body)
    assert answer.status_code == 202, answer.text
    return str(answer.json()["task_id"])


def _task_status(http: httpx.Client, task_id: str) -> str:
    return str(http.get(f"/api/v1/tasks/{task_id}").json()["status"])


def _trace(http: httpx.Client, trace_id: str) -> dict:
    answer = http.get(f"/api/v1/traces/{trace_id}")
    return answer.json() if answer.status_code == 200 else {}


@pytest.fixture
def two_workers(
    db_url: str, judge_model: ScriptedLLMServer, start_server: Callable[..., InProcessServer]
) -> InProcessServer:
    args = ["--workers", "2", "--trace-quiet-seconds", "0.2", "--task-lease-seconds", "3"]
    return start_server(db_url, judge=judge_model, args=args)


def test_traces_with_a_nul_in_an_agent_name_do_not_stop_scoring(
    two_workers: InProcessServer,
) -> None:
    """PostgreSQL rejects NUL in text: three such traces (more than the workers) once killed
    every worker. Each is now settled (scored, its name stored with U+FFFD, or failed
    saying why) and work sent afterwards is done."""
    with two_workers.client() as http:
        poisoned = []
        for _ in range(3):
            trace_id, body = otlp_trace("wri\x00ter")
            assert http.post("/v1/traces", content=body, headers=OTLP_JSON).status_code == 200
            poisoned.append(trace_id)
        for trace_id in poisoned:
            wait_for(lambda t=trace_id: _trace(http, t).get("status") in SETTLED, timeout=30)
        later = _reward_task(http, "Reward work sent after the bad traces")
        wait_for(lambda: _task_status(http, later) == "done", timeout=20)
        trace_id, body = otlp_trace("writer")
        assert http.post("/v1/traces", content=body, headers=OTLP_JSON).status_code == 200
        wait_for(lambda: _trace(http, trace_id).get("status") == "scored", timeout=30)
        for trace_id in poisoned:
            stored = _trace(http, trace_id)
            assert stored["status"] == "scored", stored.get("error")
            assert "wri\ufffdter" in stored["agents"]


def test_a_trace_whose_scoring_failed_is_failed_not_queued(two_workers: InProcessServer) -> None:
    """A lone surrogate in an agent name cannot be encoded for the judge: the trace's task
    failed while the trace stayed `queued` for ever. Now both say failed, with the reason."""
    with two_workers.client() as http:
        trace_id, body = otlp_trace("wri\ud800ter")
        assert http.post("/v1/traces", content=body, headers=OTLP_JSON).status_code == 200
        stored = wait_for(
            lambda: (t := _trace(http, trace_id)).get("status") in SETTLED and t, timeout=30
        )
        assert stored["status"] in ("failed", "scored")
        if stored["status"] == "failed":
            assert stored["error"]
        ready = httpx.get(f"{two_workers.url}/ready").json()
        assert ready["queue"]["depth"] == 0
        later = _reward_task(http, "Reward work sent after the bad trace")
        wait_for(lambda: _task_status(http, later) == "done", timeout=20)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.heavy("holds a SQLite write lock past the busy timeout and the stall limit")
def test_an_outside_write_lock_stalls_the_workers_but_does_not_stop_them(
    db_url: str,
    judge_model: ScriptedLLMServer,
    start_server: Callable[..., InProcessServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write lock held from another connection past the store's busy timeout once killed
    the worker whose result could not be written: nothing ran again. Now the result is
    written once the lock is gone, `/ready` answers 503 naming the stalled worker meanwhile,
    and `/health` (liveness) stays 200."""
    # The store's busy timeout, shortened: the lock outlasts it in a second, not in ten.
    monkeypatch.setattr(SQLiteCore, "busy_timeout", 0.3)
    args = ["--workers", "1", "--stall-seconds", "1"]
    process = start_server(db_url, judge=judge_model, args=args)
    with process.client() as http:
        judge_model.default = Reply.text(str(verdict().content), delay=0.5)
        first = _reward_task(http, "Reward work finished under the lock")
        wait_for(lambda: _task_status(http, first) == "running")
        locker = sqlite3.connect(db_url, isolation_level=None, check_same_thread=False)
        locker.execute("BEGIN IMMEDIATE")
        locked = time.monotonic()
        try:
            # /ready waits up to 2 s for the locked store by design, hence its timeout.
            # (503 at once for the locked store; the worker is named once it has stalled)
            stalled = wait_for(
                lambda: (
                    (r := httpx.get(f"{process.url}/ready", timeout=10)).status_code == 503
                    and r.json()["stalled"]
                    and r
                ),
                timeout=30,
            )
            assert stalled.json()["stalled"], stalled.text
            assert httpx.get(f"{process.url}/health", timeout=5).status_code == 200
            # held past the busy timeout twice over: the result's write has failed by now
            wait_for(lambda: time.monotonic() - locked > 2 * SQLiteCore.busy_timeout)
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        judge_model.default = verdict()
        wait_for(lambda: _task_status(http, first) == "done", timeout=30)
        later = _reward_task(http, "Reward work sent after the lock")
        wait_for(lambda: _task_status(http, later) == "done", timeout=20)
        wait_for(lambda: httpx.get(f"{process.url}/ready").status_code == 200, timeout=10)


def test_ready_reports_the_queue_and_needs_no_key(
    db_url: str, judge_model: ScriptedLLMServer, start_server: Callable[..., InProcessServer]
) -> None:
    judge_model.default = Reply.text(str(verdict().content), delay=1)
    process = start_server(db_url, judge=judge_model, args=["--workers", "1"])
    with process.client() as http:
        tasks = [_reward_task(http, f"Reward queued work {i}") for i in range(3)]
        wait_for(lambda: _task_status(http, tasks[0]) == "running")
        ready = httpx.get(f"{process.url}/ready")  # no key
        assert ready.status_code == 200, ready.text
        body = ready.json()
        assert body["ready"] is True and body["stalled"] == []
        assert body["queue"]["depth"] == 2
        assert body["queue"]["oldest_queued_seconds"] >= 0
        names = {loop["name"] for loop in body["loops"]}
        assert {"worker-1", "sweeper", "lease-keeper", "pruner"} <= names
        assert all(loop["restarts"] == 0 for loop in body["loops"])


async def test_a_loop_that_dies_is_restarted_and_counted() -> None:
    import asyncio

    from tracejudge.server.work.supervise import Beat, Supervisor

    runs = []

    async def fragile(beat: Beat) -> None:
        runs.append(1)
        beat.progress()
        if len(runs) < 3:
            raise RuntimeError("a bug in one item")
        await beat.wait(60)

    supervisor = Supervisor(stall_seconds=30)
    supervisor.spawn("fragile", fragile)
    try:
        for _ in range(100):
            if len(runs) >= 3:
                break
            await asyncio.sleep(0.05)
        (status,) = supervisor.report()
        assert len(runs) == 3 and status["restarts"] == 2
        assert "a bug in one item" in status["last_error"]
        assert status["state"] == "waiting" and supervisor.stalled() == []
    finally:
        await supervisor.stop()
