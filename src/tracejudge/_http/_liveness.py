"""Connections that answer httpcore's "is this idle connection still open?" cheaply.

Each time a request starts or ends, httpcore's pool asks every idle connection whether it
has expired, and each connection asks its network stream `get_extra_info("is_readable")`.
On the anyio streams httpx uses under asyncio, that question first builds anyio's whole
table of socket attributes, with a `getpeername()` system call, only to fetch the raw
socket. With 16 connections a pool, that was a fifth of the client's CPU per judge call
at concurrency 64 (benchmarks/evaluation_throughput.py, under a profiler).
`LivenessBackend` wraps the pool's network backend so that each stream looks its socket
up once, when it connects, and then only polls it.
"""

from __future__ import annotations

import select
import socket
import ssl
import sys
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

__all__ = ["LivenessBackend", "with_cheap_liveness"]


def with_cheap_liveness(transport: httpx.AsyncHTTPTransport) -> httpx.AsyncHTTPTransport:
    """`transport`, its connections answering liveness checks from their own socket.

    The pool's backend is a private attribute of httpx/httpcore: where a version lays
    them out differently, the transport is returned unchanged (slower, never broken)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if (
        pool is not None
        and isinstance(backend, httpcore.AsyncNetworkBackend)
        and not isinstance(backend, LivenessBackend)
    ):
        pool._network_backend = LivenessBackend(backend)
    return transport


class LivenessBackend(httpcore.AsyncNetworkBackend):
    """`backend`, whose streams answer `is_readable` by polling their socket."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend) -> None:
        self._backend = backend

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return _LivenessStream(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )
        return _LivenessStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class _LivenessStream(httpcore.AsyncNetworkStream):
    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        #: The backend's own stream (`_loops` reaches through it to close an abandoned one).
        self.wrapped = stream
        self._socket: socket.socket | None = stream.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self.wrapped.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.wrapped.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.wrapped.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self.wrapped.start_tls(ssl_context, server_hostname, timeout)
        return _LivenessStream(stream)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return _readable(self._socket)
        return self.wrapped.get_extra_info(info)


def _readable(sock: socket.socket) -> bool:
    """Whether a read would not block: data waits, or the peer closed (as httpcore's own
    check answers; a closed socket counts as readable)."""
    fd = sock.fileno()
    if fd < 0:
        return True
    if sys.platform == "win32" or not hasattr(select, "poll"):
        return bool(select.select([fd], [], [], 0)[0])
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))
