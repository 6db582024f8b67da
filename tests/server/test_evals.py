"""The evaluation endpoints against a live server, through tracejudge's own remote client
and raw HTTP: blocking and background, stored results, validation errors, judge failures."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.server.harness import API_KEY, InProcessServer, wait_for
from tracejudge import AsyncComposo
from tracejudge.testing import Reply, ScriptedLLMServer

#: What the judge's 8/10 becomes on the 0..1 scale.
SCORE = 7 / 9

MESSAGES = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4"},
]
TRACE = {
    "root_agent_instance_id": "o1",
    "agent_instance_by_id": {
        "o1": {
            "id": "o1",
            "name": "orchestrator",
            "interactions": [
                {
                    "input_messages": [{"role": "user", "content": "plan"}],
                    "output_messages": [{"type": "text", "content": "ask the writer"}],
                },
                "w1",
            ],
        },
        "w1": {
            "id": "w1",
            "name": "writer",
            "interactions": [
                {
                    "input_messages": [{"role": "user", "content": "write"}],
                    "output_messages": [{"type": "text", "content": "done"}],
                }
            ],
        },
    },
}


def test_tracejudge_client_blocking_and_background(
    server: InProcessServer, judge_model: ScriptedLLMServer
) -> None:
    async def run() -> None:
        client = AsyncComposo(base_url=server.url, api_key=API_KEY)
        try:
            one = await client.evaluate(messages=MESSAGES, criteria="Reward correct arithmetic")
            assert one.score == pytest.approx(SCORE)
            task = await client.evaluate(messages=MESSAGES, criteria="Reward brevity", block=False)
            for _ in range(100):
                status = await client.get_task(task["task_id"])
                if status.status in ("done", "failed"):
                    break
                await asyncio.sleep(0.1)
            assert status.status == "done", status
            assert status.result is not None and status.result["score"] == pytest.approx(SCORE)
        finally:
            await client.aclose()

    asyncio.run(run())
    criteria = [r.json["messages"][-1]["content"] for r in judge_model.requests]
    assert any("Reward correct arithmetic" in c for c in criteria)
    assert any("Reward brevity" in c for c in criteria)


def test_trace_evaluation_is_stored_and_read_back(server: InProcessServer) -> None:
    with server.client() as http:
        body = {
            "evaluation_criteria": "Reward agents that work",
            "trace": TRACE,
            "tags": {"env": "ci"},
        }
        answer = http.post("/api/v1/evals/trace", json=body)
        assert answer.status_code == 200, answer.text
        result = answer.json()
        assert set(result["results_by_agent_name"]) == {"orchestrator", "writer"}
        assert result["overall_score"] == pytest.approx(SCORE)
        listed = http.get("/api/v1/traces", params={"tag": "env:ci"}).json()["traces"]
        assert len(listed) == 1 and listed[0]["root_agent"] == "orchestrator"
        assert listed[0]["scores"] == {"Reward agents that work": pytest.approx(SCORE)}
        one = http.get(f"/api/v1/traces/{listed[0]['trace_id']}").json()
        assert one["trace"]["agent_instance_by_id"]["w1"]["name"] == "writer"
        assert [e["criterion"] for e in one["evaluations"]] == ["Reward agents that work"]
        background = http.post("/api/v1/evals/trace/background", json=body)
        assert background.status_code == 202
        task_id = background.json()["task_id"]
        done = wait_for(
            lambda: (t := http.get(f"/api/v1/tasks/{task_id}").json())["status"] == "done" and t
        )
        assert done["result"]["results_by_agent_name"]["writer"]["agent_name"] == "writer"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_bad_requests_name_the_field_and_never_reach_the_judge(
    server: InProcessServer, judge_model: ScriptedLLMServer
) -> None:
    with server.client() as http:
        short = http.post(
            "/api/v1/evals/reward", json={"messages": MESSAGES[:1], "evaluation_criteria": "x"}
        )
        assert short.status_code == 422 and "messages" in short.json()["detail"]
        assert short.json()["errors"][0]["loc"] == ["body", "messages"]
        neither = http.post("/api/v1/evals/reward", json={"messages": MESSAGES})
        assert neither.status_code == 422 and "evaluation_criteria" in neither.json()["detail"]
        latest = http.post(
            "/api/v1/evals/trace",
            json={"evaluation_criteria": "x", "trace": TRACE, "evaluate_latest": True},
        )
        assert latest.status_code == 422 and "evaluate_latest" in latest.json()["detail"]
        broken = http.post(
            "/api/v1/evals/reward",
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        )
        assert broken.status_code == 422 and "not JSON" in broken.json()["detail"]
        missing = http.get("/api/v1/tasks/no-such-task")
        assert missing.status_code == 404 and "no-such-task" in missing.json()["detail"]
    assert judge_model.requests == []


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_judge_failure_is_a_502_without_secrets(
    server: InProcessServer, judge_model: ScriptedLLMServer
) -> None:
    judge_model.default = Reply.error(401, message="invalid api key judge-provider-key")
    with server.client() as http:
        answer = http.post(
            "/api/v1/evals/reward", json={"messages": MESSAGES, "evaluation_criteria": "Reward x"}
        )
    assert answer.status_code == 502
    assert "judge-provider-key" not in answer.text and "Traceback" not in answer.text
    assert "credentials" in answer.json()["detail"]


def test_an_unreachable_judge_is_a_502_that_names_no_address(tmp_path) -> None:
    """Before: the 502 said `could not reach judge ... at http://127.0.0.1:9/v1`, where the
    judge runs inside the operator's network; a background task's error said it too. Now
    neither names an address, and the server's log does."""
    with ScriptedLLMServer() as judge:
        process = InProcessServer(
            str(tmp_path / "db"),
            judge=judge,
            args=["--judge-base-url", "http://127.0.0.1:9/v1"],
            log=tmp_path / "log",
        ).start()
        try:
            body = {"messages": MESSAGES, "evaluation_criteria": "Reward x"}
            with process.client() as http:
                answer = http.post("/api/v1/evals/reward", json=body)
                assert answer.status_code == 502, answer.text
                assert "127.0.0.1:9" not in answer.text and "http://" not in answer.text
                assert "could not reach judge" in answer.json()["detail"]
                task_id = http.post("/api/v1/evals/reward/background", json=body).json()["task_id"]

                def failed() -> dict | None:
                    task = http.get(f"/api/v1/tasks/{task_id}").json()
                    return task if task["status"] == "failed" else None

                task = wait_for(failed, timeout=120)
                assert "127.0.0.1:9" not in str(task) and "could not reach" in str(task)
        finally:
            process.stop()
        assert "http://127.0.0.1:9/v1" in (tmp_path / "log").read_text()


def test_without_a_judge_checks_still_run(db_url: str, tmp_path) -> None:
    process = InProcessServer(db_url, log=tmp_path / "log").start()
    try:
        assert "only deterministic checks" in process.first_line
        with httpx.Client(base_url=process.url, headers=process.headers) as http:
            check = http.post(
                "/api/v1/evals/trace", json={"evaluator_name": "final_answer", "trace": TRACE}
            )
            assert check.status_code == 200, check.text
            judged = http.post(
                "/api/v1/evals/reward",
                json={"messages": MESSAGES, "evaluation_criteria": "Reward x"},
            )
            assert judged.status_code == 400, judged.text
            # Advice a server's client can act on: who starts the server gives it a judge.
            detail = judged.json()["detail"]
            assert "start the server with --judge" in detail, detail
            assert "judge='" not in detail and "Pass judge" not in detail, detail
    finally:
        process.stop()
