"""ShardedTransport: each request goes to the pool with the fewest in flight, and a request
stays counted until its connection is back in its pool."""

from __future__ import annotations

import httpx

from tracejudge._http._sharded import ShardedTransport
from tracejudge.testing import Reply, ScriptedLLMServer


class _Body(httpx.AsyncByteStream):
    """A response body that records the pools' counts when it is closed."""

    def __init__(self, sharded: ShardedTransport, seen: list[list[int]]) -> None:
        self._sharded = sharded
        self._seen = seen

    async def __aiter__(self):  # type: ignore[override]
        yield b"{}"

    async def aclose(self) -> None:
        self._seen.append(list(self._sharded._in_flight))


class _Recording(httpx.AsyncBaseTransport):
    def __init__(self, seen: list[list[int]]) -> None:
        self.sharded: ShardedTransport | None = None
        self._seen = seen

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert self.sharded is not None
        return httpx.Response(200, stream=_Body(self.sharded, self._seen))


async def test_a_request_is_counted_until_its_pool_has_taken_the_connection_back() -> None:
    seen: list[list[int]] = []
    pools = [_Recording(seen), _Recording(seen)]
    sharded = ShardedTransport(list(pools))
    for pool in pools:
        pool.sharded = sharded
    async with httpx.AsyncClient(transport=sharded) as client:
        first = await client.send(client.build_request("GET", "http://judge/"), stream=True)
        second = await client.send(client.build_request("GET", "http://judge/"), stream=True)
        assert sharded._in_flight == [1, 1]  # the second went to the idle pool
        await first.aclose()
        await second.aclose()
    # While each pool was closing its stream (giving its connection back), the request
    # still counted: a request routed meanwhile could not be queued behind it.
    assert seen == [[1, 1], [0, 1]]
    assert sharded._in_flight == [0, 0]


async def test_requests_spread_over_real_pools_and_all_are_counted_off() -> None:
    with ScriptedLLMServer(default=Reply.text("ok")) as server:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        sharded = ShardedTransport([httpx.AsyncHTTPTransport(limits=limits) for _ in range(3)])
        async with httpx.AsyncClient(transport=sharded, base_url=server.base_url) as client:
            responses = [
                await client.send(
                    client.build_request("POST", "/chat/completions", json={"model": "m"}),
                    stream=True,
                )
                for _ in range(3)
            ]
            assert sharded._in_flight == [1, 1, 1]
            for response in responses:
                await response.aread()
                await response.aclose()
            assert sharded._in_flight == [0, 0, 0]
            again = await client.post("/chat/completions", json={"model": "m"})
            assert again.status_code == 200
            assert sharded._in_flight == [0, 0, 0]
