"""A small round-robin TCP load balancer on loopback, as a deployment puts in front of
its replicas: each new connection goes to the next backend that accepts it (a replica
that was killed refuses, and is skipped), and bytes are piped both ways."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Sequence

__all__ = ["Balancer"]


class Balancer:
    """`with Balancer([(host, port), ...]) as lb:` listens on `lb.url`."""

    def __init__(self, backends: Sequence[tuple[str, int]]) -> None:
        self.backends = list(backends)
        self.port = 0
        self.connections = [0] * len(self.backends)
        self._turn = itertools.cycle(range(len(self.backends)))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Balancer:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop
        )
        self._server = future.result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *_: object) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(len(self.backends)):
            index = next(self._turn)
            try:
                up_reader, up_writer = await asyncio.open_connection(*self.backends[index])
            except OSError:
                continue  # a replica that is down: the next one
            self.connections[index] += 1
            await asyncio.gather(
                self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
            )
            return
        writer.close()

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()
