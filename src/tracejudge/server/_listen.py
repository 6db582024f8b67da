"""The server's listening socket, made before uvicorn starts (so that a busy port is one
clear error, and port 0 is known before the first request)."""

from __future__ import annotations

import socket

__all__ = ["listen"]


def listen(host: str, port: int, *, backlog: int = 2048) -> socket.socket:
    """A listening TCP socket on `host`:`port` (IPv4 or IPv6, as the host resolves), with
    Nagle's algorithm off for the connections it accepts.

    asyncio turns Nagle off only for sockets whose protocol is TCP by number, and a socket
    made without one (`socket.socket(family, SOCK_STREAM)`) has protocol 0: uvicorn then
    wrote a response's headers and body as two packets, and the body waited for the
    client's delayed ACK, 40 ms on every keep-alive request but the first. Linux passes
    TCP_NODELAY on from the listening socket to each connection it accepts.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock
