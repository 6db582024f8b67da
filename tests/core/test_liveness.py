"""Pooled connections answer httpcore's liveness check from their own socket, and a
connection the server closed while idle is still noticed and replaced."""

from __future__ import annotations

import asyncio
import socket

import httpx

from tracejudge._http._liveness import LivenessBackend, _readable, with_cheap_liveness
from tracejudge._http._sharded import pooled_transport


def test_every_pool_of_a_pooled_transport_checks_liveness_cheaply() -> None:
    # (Fails when an httpx/httpcore upgrade moves the pool's backend: the shortcut is then
    # skipped silently, and this test says so.)
    sharded = pooled_transport(64)
    pools = [sharded] if isinstance(sharded, httpx.AsyncHTTPTransport) else sharded._transports
    assert len(pools) == 4
    for pool in pools:
        assert isinstance(pool._pool._network_backend, LivenessBackend)  # type: ignore[attr-defined]
    single = pooled_transport(8)
    assert isinstance(single._pool._network_backend, LivenessBackend)  # type: ignore[attr-defined]
    # Wrapping twice wraps once.
    again = with_cheap_liveness(single)  # type: ignore[arg-type]
    assert not isinstance(again._pool._network_backend._backend, LivenessBackend)  # type: ignore[attr-defined]


def test_a_socket_is_readable_when_data_waits_or_the_peer_closed() -> None:
    ours, theirs = socket.socketpair()
    try:
        assert not _readable(ours)
        theirs.sendall(b"x")
        assert _readable(ours)
        ours.recv(1)
        assert not _readable(ours)
        theirs.close()
        assert _readable(ours)  # a read would return b"" at once
    finally:
        ours.close()
    assert _readable(ours)  # closed: as httpcore's own check answers


async def _closing_server(connections: list[int]) -> asyncio.Server:
    """An HTTP/1.1 server that answers one request per connection, keeps the connection
    open (no `Connection: close`) and closes it 50 ms later, as an idle timeout would."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    connections: list[int] = []
    server = await _closing_server(connections)
    port = server.sockets[0].getsockname()[1]
    try:
        base_url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(transport=pooled_transport(4), base_url=base_url) as client:
            assert (await client.get("/")).text == "ok"
            await asyncio.sleep(0.2)  # the server has closed the idle connection
            # Without a working liveness check the pool would reuse the dead connection,
            # and this request would fail ("Server disconnected without sending a response").
            assert (await client.get("/")).text == "ok"
    finally:
        server.close()
        await server.wait_closed()
    assert len(connections) == 2
