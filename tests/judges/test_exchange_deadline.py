"""The whole exchange is bounded, not just each read: an answer that trickles in, every
byte within httpx's read timeout, still ends at the judge's deadline."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tracejudge.errors import TimeoutError as JudgeTimeoutError
from tracejudge.judges import JudgeRequest, OpenAICompatibleJudge

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")


class TricklingServer:
    """Answers every request with a 200 whose 10,000-byte body comes one byte per 0.1 s."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.requests = 0
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                received += chunk
            self.requests += 1
            connection.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: 10000\r\n\r\n{"
            )
            for _ in range(9999):
                if self._stop.wait(0.1):
                    return
                try:
                    connection.sendall(b" ")
                except OSError:  # the client gave up: what the test wants
                    return

    def close(self) -> None:
        self._stop.set()
        self._listener.close()


@pytest.fixture
def trickling() -> Iterator[TricklingServer]:
    server = TricklingServer()
    yield server
    server.close()


async def test_an_answer_trickling_in_ends_at_the_deadline(trickling: TricklingServer) -> None:
    judge = OpenAICompatibleJudge(
        "judge-model",
        base_url=f"http://127.0.0.1:{trickling.port}/v1",
        api_key="test-key",
        timeout=1.0,
        cache=False,
        backoff_base=0.01,
    )
    started = time.monotonic()
    try:
        with pytest.raises(JudgeTimeoutError) as caught:
            # The outer bound only stops a broken judge from hanging the test run.
            await asyncio.wait_for(judge.judge(REQUEST), 10.0)
    finally:
        await judge.aclose()
    elapsed = time.monotonic() - started
    # Each byte comes within the 1 s read timeout; only the bound on the exchange ends it.
    assert 0.8 < elapsed < 3.0
    assert "timeout" in str(caught.value)
    assert trickling.requests >= 1
