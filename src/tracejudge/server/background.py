"""A server in a background thread of this process, for a demo, a test or a notebook.

    with BackgroundServer(ServerConfig(db=str(tmp / "t.db"))) as server:
        httpx.get(f"{server.url}/health")

It listens on a loopback socket bound before the thread starts (port 0: the system picks
a free one, so no other process can take it between choosing and listening), runs
uvicorn's event loop in one thread, and on leaving the block asks uvicorn to exit, waits
for the lifespan's shutdown (workers stopped, store closed) and joins the thread. Signals
stay the main thread's: Ctrl-C reaches the caller, whose `with` block stops the server.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Sequence
from types import TracebackType

import uvicorn

from tracejudge.evaluation import TraceCheck
from tracejudge.judges import Judge
from tracejudge.server._listen import listen
from tracejudge.server.app import create_app
from tracejudge.server.config import ServerConfig, is_loopback
from tracejudge.server.http.connections import connection_limits, uvicorn_config

__all__ = ["BackgroundServer"]


class BackgroundServer:
    """`create_app(config, ...)` served from a thread on `config.host` (loopback only).

    `config.port` 0 picks a free port; `url` says which. `judge`, `checks_only` and
    `criteria` are passed to `create_app`. Entering raises `RuntimeError` when the
    server did not start within `start_timeout` seconds (its lifespan failed: see the log).
    """

    def __init__(
        self,
        config: ServerConfig,
        *,
        judge: Judge | None = None,
        checks_only: bool = False,
        criteria: Sequence[str | TraceCheck] | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 30.0,
    ) -> None:
        if not is_loopback(config.host):
            raise ValueError(
                f"BackgroundServer listens on loopback only; host {config.host!r} is not "
                "(run `tracejudge serve` for a server others reach)"
            )
        self.app = create_app(config, judge=judge, checks_only=checks_only, criteria=criteria)
        self.config = config
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.port = 0

    @property
    def url(self) -> str:
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        return f"http://{host}:{self.port}"

    @property
    def judge_label(self) -> str | None:
        """The judge's name, None when only checks run."""
        label: str | None = self.app.state.judge_label
        return label

    def start(self) -> BackgroundServer:
        sock = listen(self.config.host, self.config.port)
        self._socket = sock
        self.port = sock.getsockname()[1]
        limits = connection_limits(self.config)
        server = uvicorn.Server(
            uvicorn_config(
                self.app,
                self.config,
                limits,
                log_config=None,  # leave the process's logging as the caller set it up
                lifespan="on",
            )
        )
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="tracejudge-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    "the tracejudge server did not start (its store or judge could not be "
                    "set up; the log above says why)"
                )
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ask uvicorn to exit, wait for the lifespan's shutdown, join the thread, close the
        socket. Safe to call twice. `RuntimeError` if the thread is still running after
        `stop_timeout` seconds."""
        server, thread = self._server, self._thread
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(self.stop_timeout)
            if thread.is_alive():
                raise RuntimeError(
                    f"the tracejudge server thread did not stop within {self.stop_timeout} s"
                )
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
