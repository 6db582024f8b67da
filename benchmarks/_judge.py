"""A judge model for the benchmarks, and the floor a client of it is held against.

`JudgeProcess`: a ScriptedLLMServer answering every call with one verdict after a fixed
delay, in a process of its own (its work is neither counted in the client being
measured nor run on that client's interpreter). `bare_client`: the same requests sent
with nothing but httpx at a given concurrency, each reply's verdict read - what any
client of that judge server needs at least.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType

import httpx

#: A Reward criterion's verdict, as a judge model answers it.
VERDICT = json.dumps({"explanation": "The answer is right.", "applicable": True, "score": 8})

_SERVE = """
import sys
from tracejudge.testing import Reply, ScriptedLLMServer
server = ScriptedLLMServer(default=Reply.text(sys.argv[1], delay=float(sys.argv[2]))).start()
print(server.base_url, flush=True)
sys.stdin.read()  # until the parent closes it
server.stop()
"""


class JudgeProcess:
    """`with JudgeProcess(delay) as judge:` serves at `judge.base_url` (OpenAI's /v1 URL)."""

    def __init__(self, delay: float, verdict: str = VERDICT) -> None:
        self.delay = delay
        self.verdict = verdict
        self.base_url = ""
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> JudgeProcess:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, self.verdict, str(self.delay)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        self.base_url = self._process.stdout.readline().strip()
        if not self.base_url:
            raise RuntimeError("the judge process did not start")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()


async def bare_client(base_url: str, bodies: Sequence[dict], concurrency: int) -> int:
    """POST every body to `base_url`/chat/completions, `concurrency` at a time, and read
    each verdict; returns the number of replies that were not a verdict.

    The connections are spread over httpx clients of at most 16 each: one httpx pool of
    64 connections is several times slower than four of 16 (encode/httpx#3215), and a
    floor should be the best plain httpx can do, not its slow case."""
    failures = 0
    pending = iter(bodies)
    shards = -(-concurrency // 16)
    size = -(-concurrency // shards)
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal failures
        for body in pending:
            response = await http.post("/chat/completions", json=body)
            content = response.json()["choices"][0]["message"]["content"]
            if response.status_code != 200 or "score" not in json.loads(content):
                failures += 1

    clients = [
        httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) for _ in range(shards)
    ]
    try:
        await asyncio.gather(*(worker(clients[i % shards]) for i in range(concurrency)))
    finally:
        for client in clients:
            await client.aclose()
    return failures


async def timed(work: Callable[[], Awaitable[object]]) -> float:
    """Seconds `await work()` takes."""
    start = time.perf_counter()
    await work()
    return time.perf_counter() - start


def median(values: Sequence[float]) -> float:
    return statistics.median(values)
