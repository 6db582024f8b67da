"""`tracejudge serve`'s judge settings reach the judge: a real server process, a real
scripted OpenAI-compatible judge on loopback, requests counted in flight at the judge."""

from __future__ import annotations

import asyncio
import json

import httpx

from tests.server.harness import ServerProcess
from tracejudge.testing import Reply, ScriptedLLMServer

# Long enough that every request the server lets through is at the judge at once.
_JUDGE_SECONDS = 2.0


def _slow_verdict() -> Reply:
    body = json.dumps({"explanation": "Looks right.", "applicable": True, "score": 8})
    return Reply.text(body, delay=_JUDGE_SECONDS)


def _in_flight_at_judge(max_concurrency: int, requests: int, tmp_path) -> int:
    """The most judge calls in flight at once while `requests` reward requests (each one
    judge call, none cached) hit a server started with `--max-concurrency N`."""
    with ScriptedLLMServer(default=_slow_verdict()) as judge:
        process = ServerProcess(
            str(tmp_path / "tracejudge.db"),
            judge=judge,
            args=["--max-concurrency", str(max_concurrency), "--rate-limit", "0"],
            log=tmp_path / "log",
        )
        process.start()
        try:

            async def one(client: httpx.AsyncClient, number: int) -> None:
                body = {
                    "messages": [
                        {"role": "user", "content": f"What is {number} + {number}?"},
                        {"role": "assistant", "content": str(2 * number)},
                    ],
                    "evaluation_criteria": "Reward correct arithmetic",
                }
                answer = await client.post("/api/v1/evals/reward", json=body)
                assert answer.status_code == 200, answer.text

            async def all_at_once() -> None:
                limits = httpx.Limits(max_connections=requests)
                async with httpx.AsyncClient(
                    base_url=process.url, headers=process.headers, timeout=60, limits=limits
                ) as client:
                    await asyncio.gather(*(one(client, n) for n in range(requests)))

            asyncio.run(all_at_once())
        finally:
            process.stop()
        assert len(judge.requests) == requests
        return judge.max_in_flight


def test_serve_max_concurrency_64_lets_64_judge_calls_run_at_once(tmp_path) -> None:
    # 80 requests at once: 64 reach the judge together, never more.
    assert _in_flight_at_judge(64, 80, tmp_path) == 64


def test_serve_max_concurrency_below_the_default_is_the_bound(tmp_path) -> None:
    assert _in_flight_at_judge(3, 12, tmp_path) == 3
