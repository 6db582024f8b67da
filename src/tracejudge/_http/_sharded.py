"""A connection pool that stays fast with many connections: several small httpx pools.

httpx's pool scans every connection and every queued request each time a request starts
or ends, so one pool of 64 connections spends most of its time on bookkeeping: against a
judge answering in 50 ms, one `httpx.AsyncClient` with 64 connections made about 100
calls a second on a 2-core machine, and four clients of 16 connections each about 500
(benchmarks/evaluation_throughput.py; encode/httpx#3215). `pooled_transport` splits a
large limit over pools of at most `SHARD_SIZE` connections and sends each request to the
pool with the fewest requests in flight.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import httpx

from tracejudge._http._liveness import with_cheap_liveness

__all__ = ["SHARD_SIZE", "ShardedTransport", "pooled_transport"]

#: The most connections one httpx pool holds before another pool is added.
SHARD_SIZE = 16


class ShardedTransport(httpx.AsyncBaseTransport):
    """Requests spread over `transports`, each to the one with the fewest in flight."""

    def __init__(self, transports: list[httpx.AsyncBaseTransport]) -> None:
        if not transports:
            raise ValueError("ShardedTransport needs at least one transport")
        self._transports = transports
        self._in_flight = [0] * len(transports)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = min(range(len(self._transports)), key=self._in_flight.__getitem__)
        self._in_flight[index] += 1
        try:
            response = await self._transports[index].handle_async_request(request)
        except BaseException:
            self._in_flight[index] -= 1
            raise
        # The connection stays busy until the body is read: count it until then.
        response.stream = _Counted(response.stream, self._in_flight, index)
        return response

    async def aclose(self) -> None:
        for transport in self._transports:
            await transport.aclose()


class _Counted(httpx.AsyncByteStream):
    """A response body that takes its request off its pool's count once closed."""

    def __init__(self, stream: object, counts: list[int], index: int) -> None:
        self._stream = stream
        self._counts = counts
        self._index = index
        self._open = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:  # type: ignore[attr-defined]  # an async body
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()  # type: ignore[attr-defined]  # an async body
        finally:
            # Counted off only once its connection is back in the pool: closing yields to
            # the event loop, and a request sent to this pool meanwhile would queue there
            # behind a busy connection (httpcore's queue is slow) while others sit idle.
            if self._open:
                self._open = False
                self._counts[self._index] -= 1


def pooled_transport(
    max_connections: int, *, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncBaseTransport:
    """One httpx transport for up to `max_connections` connections (all kept alive):
    a plain pool up to SHARD_SIZE, else a ShardedTransport of pools of at most that; each
    pool's connections answer liveness checks cheaply (see `_liveness`)."""
    shards = max(1, -(-max_connections // SHARD_SIZE))
    size = -(-max_connections // shards)
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    pools: list[httpx.AsyncBaseTransport] = [
        with_cheap_liveness(httpx.AsyncHTTPTransport(verify=verify, limits=limits))
        for _ in range(shards)
    ]
    return pools[0] if shards == 1 else ShardedTransport(pools)
