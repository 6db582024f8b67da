"""`tracejudge serve`'s judge settings reach the judge: a real server process, a real
scripted OpenAI-compatible judge on loopback, requests counted in flight at the judge."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.server.harness import InProcessServer, verdict
from tracejudge.errors import ConfigurationError
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import parse_config
from tracejudge.testing import Reply, ScriptedLLMServer

# Long enough that every request the server lets through is at the judge at once.
_JUDGE_SECONDS = 2.0


def _slow_verdict(seconds: float) -> Reply:
    body = json.dumps({"explanation": "Looks right.", "applicable": True, "score": 8})
    return Reply.text(body, delay=seconds)


def _in_flight_at_judge(
    max_concurrency: int, requests: int, tmp_path, seconds: float = _JUDGE_SECONDS
) -> int:
    """The most judge calls in flight at once while `requests` reward requests (each one
    judge call, none cached) hit a server started with `--max-concurrency N`."""
    with ScriptedLLMServer(default=_slow_verdict(seconds)) as judge:
        process = InProcessServer(
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


@pytest.mark.heavy("80 judge calls held long enough to overlap, in two rounds")
def test_serve_max_concurrency_64_lets_64_judge_calls_run_at_once(tmp_path) -> None:
    # 80 requests at once: 64 reach the judge together, never more.
    assert _in_flight_at_judge(64, 80, tmp_path) == 64


@pytest.mark.heavy("judge calls held open by a slow scripted judge")
def test_serve_max_concurrency_below_the_default_is_the_bound(tmp_path) -> None:
    # 6 requests, 3 at a time: a second apart is long enough to overlap three
    assert _in_flight_at_judge(3, 6, tmp_path, seconds=1.0) == 3


def _judge_flags(judge: ScriptedLLMServer, tmp_path) -> list[str]:
    return [
        "--judge",
        "openai:scripted-model",
        "--judge-base-url",
        judge.base_url,
        "--db",
        str(tmp_path / "flags.db"),
        "--port",
        "0",
        "--rate-limit",
        "0",
    ]


@pytest.mark.parametrize("source", ["flags", "environment"])
def test_every_judge_setting_of_serve_reaches_the_judge(source: str, tmp_path) -> None:
    settings = {
        "--max-concurrency": "7",
        "--judge-timeout-seconds": "9",
        "--judge-max-tokens": "99",
        "--judge-max-input-tokens": "3000",
    }
    with ScriptedLLMServer(default=verdict()) as judge:
        if source == "flags":
            argv = [*_judge_flags(judge, tmp_path), "--single-call", "--no-explore"]
            config = parse_config([*argv, *(x for pair in settings.items() for x in pair)], {})
        else:
            environ = {
                "TRACEJUDGE_" + flag[2:].upper().replace("-", "_"): value
                for flag, value in settings.items()
            }
            environ.update(TRACEJUDGE_SINGLE_CALL="yes", TRACEJUDGE_NO_EXPLORE="1")
            config = parse_config(_judge_flags(judge, tmp_path), environ)
        with BackgroundServer(config) as server:
            # The evaluation service, behind the loop of its own it runs on (ServiceLoop).
            service = server.app.state.context.service.service
            built = service.judge
            assert built.max_concurrency == service._evaluator.max_concurrency == 7
            assert (built.timeout, built.max_tokens, built.max_input_tokens) == (9.0, 99, 3000)
            assert service.single_call is True
            assert service._evaluator.exploration is None
            body = {
                "messages": [
                    {"role": "user", "content": "What is 2 + 2?"},
                    {"role": "assistant", "content": "4"},
                ],
                "evaluation_criteria": "Reward correct arithmetic",
            }
            answer = httpx.post(f"{server.url}/api/v1/evals/reward", json=body, timeout=30)
            assert answer.status_code == 200, answer.text
        assert [r.json["max_tokens"] for r in judge.requests] == [99]


def test_a_judge_timeout_of_serve_bounds_a_judgement(tmp_path) -> None:
    # The judge would answer after a minute, the client waits 30 s: an answer at all says
    # the 1 s timeout bounded the judgement (no wall-clock limit in the test).
    with ScriptedLLMServer(default=Reply.text(verdict().content or "", delay=60)) as judge:
        argv = [*_judge_flags(judge, tmp_path), "--judge-timeout-seconds", "1"]
        with BackgroundServer(parse_config(argv, {})) as server:
            body = {
                "messages": [
                    {"role": "user", "content": "What is 2 + 2?"},
                    {"role": "assistant", "content": "4"},
                ],
                "evaluation_criteria": "Reward correct arithmetic",
            }
            answer = httpx.post(f"{server.url}/api/v1/evals/reward", json=body, timeout=30)
    assert answer.status_code >= 500


@pytest.mark.parametrize(
    ("flag", "value", "need"),
    [
        ("--judge-timeout-seconds", "0", "more than 0"),
        ("--judge-max-tokens", "0", "at least 1"),
        ("--judge-max-input-tokens", "100", "at least 256"),
    ],
)
def test_a_bad_judge_setting_of_serve_names_its_flag(flag: str, value: str, need: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_config([flag, value], {})
    assert str(caught.value).startswith(f"{flag} (or TRACEJUDGE_")
    assert str(caught.value).endswith(f"it must be {need}")
