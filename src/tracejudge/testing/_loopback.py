"""The loopback HTTP/1.1 server: reads each request into a :class:`RecordedRequest`, hands it
to a dispatch function, and writes the :class:`Rendered` answer back.

Two details keep keep-alive calls fast (CONVENTIONS.md §6): ``TCP_NODELAY`` on every
connection, and each response's head and body leave in one write (a streamed response's head
goes out with its first chunk).  Without them every keep-alive call stalls about 40 ms on
Nagle's algorithm meeting delayed ACKs.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tracejudge.testing._rendered import Rendered
from tracejudge.testing._replies import RecordedRequest

__all__ = ["LoopbackHTTPServer"]

Dispatch = Callable[[RecordedRequest], Rendered]
TrackConnection = Callable[[socket.socket, bool], None]


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server on ``127.0.0.1`` (a free port), one daemon thread per connection.

    Args:
        dispatch: Called with each request, in the connection's thread; returns the response.
        track_connection: Called with ``(socket, True)`` when a connection opens and
            ``(socket, False)`` when it closes, so the owner can shut open ones down on stop.
    """

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # The default backlog of 5 drops bursts of new connections (a client then waits
    # ~1 s to retry), which distorts concurrency tests.
    request_queue_size = 128

    def __init__(self, dispatch: Dispatch, track_connection: TrackConnection) -> None:
        self.dispatch = dispatch
        self.track_connection = track_connection
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore clients that went away (e.g. timed out during a delay); report the rest."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedLLMServer/1.0"
    server: LoopbackHTTPServer

    def setup(self) -> None:
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()
        self.server.track_connection(self.request, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track_connection(self.request, False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self) -> None:
        body = self._read_body()
        headers: dict[str, str] = {}
        for key, value in self.headers.items():
            k = key.lower()
            headers[k] = f"{headers[k]}, {value}" if k in headers else value
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers=headers,
            body=body,
            json=parsed,
            received_at=time.time(),
        )
        self._write(self.server.dispatch(request))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _write(self, rendered: Rendered) -> None:
        try:
            reason = HTTPStatus(rendered.status).phrase
        except ValueError:
            reason = "Scripted"
        names = {name.lower() for name, _ in rendered.headers}
        lines = [f"HTTP/1.1 {rendered.status} {reason}"]
        lines.extend(f"{name}: {value}" for name, value in rendered.headers)
        streaming = rendered.events is not None
        if streaming:
            lines.append("Transfer-Encoding: chunked")
        elif "content-length" not in names:
            lines.append(f"Content-Length: {len(rendered.body)}")
        if "connection" not in names:
            lines.append("Connection: close" if self.close_connection else "Connection: keep-alive")
        elif any(n.lower() == "connection" and v.lower() == "close" for n, v in rendered.headers):
            self.close_connection = True
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if not streaming:
            self.wfile.write(head + rendered.body)
            return
        events = rendered.events or []
        first = True
        for event in events:
            chunk = f"{len(event):x}\r\n".encode() + event + b"\r\n"
            self.wfile.write(head + chunk if first else chunk)
            first = False
        self.wfile.write((head if first else b"") + b"0\r\n\r\n")
