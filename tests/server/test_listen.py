"""The server's connections send each response at once (Nagle's algorithm off).

With it on, uvicorn's two writes of a response (headers, then body) made the body wait
for the client's delayed ACK: 40 ms on every keep-alive request but the first.
"""

from __future__ import annotations

import socket
from pathlib import Path

from tracejudge.server._listen import listen
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig


def _nodelay(sock: socket.socket) -> bool:
    return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


def test_connections_accepted_on_the_listening_socket_have_nagle_off() -> None:
    server = listen("127.0.0.1", 0)
    try:
        assert server.proto == socket.IPPROTO_TCP
        with socket.create_connection(server.getsockname()[:2]):
            accepted, _ = server.accept()
            with accepted:
                assert _nodelay(accepted)
    finally:
        server.close()


def test_the_running_server_answers_keep_alive_requests_with_nagle_off(tmp_path: Path) -> None:
    config = ServerConfig(port=0, db=str(tmp_path / "n.db"), log_level="warning")
    with BackgroundServer(config, checks_only=True) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as client:
            for _ in range(2):  # the same connection, kept alive
                # a loopback Host: the server answers 421 to names it was not given
                client.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                answer = b""
                while b'"status"' not in answer or not answer.rstrip().endswith(b"}"):
                    received = client.recv(65536)
                    assert received, f"the server closed the connection after {answer!r}"
                    answer += received
                assert answer.startswith(b"HTTP/1.1 200")
            uvicorn_server = server._server
            assert uvicorn_server is not None
            connections = list(uvicorn_server.server_state.connections)
            sockets = [c.transport.get_extra_info("socket") for c in connections]
            assert sockets and all(_nodelay(s) for s in sockets)
