"""Connection hygiene: how long a connection may take to ask, and how many may be open.

uvicorn closes an idle keep-alive connection after `--keep-alive-seconds`, but only once
it has answered a request on it: a connection that sends nothing, or a request head a
byte at a time (slow-loris), stays open for ever, and enough of them exhaust the
process's file descriptors, after which `/health` itself cannot connect. Here uvicorn's
h11 protocol gets two rules:

- **A header timeout**: a connection that has not sent a whole request head within
  `--header-timeout-seconds` of opening, or of its previous answer, is closed.
- **A body deadline**: a request body must arrive whole within `--body-timeout-seconds`
  of its head; past that it may go on only while it arrives at `--min-body-rate` bytes a
  second on average (time spent with reading paused because the app has not taken what
  came is not the client's). A body slower than that is answered 408 and its connection
  closed, so connections trickling bodies cannot hold the server's connections for ever.
- **A cap on open connections** (`--max-connections`, fitted under the process's file
  limit, which is raised to fit when it can be): a connection past the cap closes the
  one that has been waiting longest for a request head (nothing is running on it). When
  every connection has a request running, `PROBE_CONNECTIONS` more are kept for the
  probes: such a connection may ask only `/health` or `/ready` (anything else is 503
  with `Retry-After`), so liveness and readiness answer while the cap is full. Past
  those too, the new connection is closed. So held connections never lock out a real
  client, nor the orchestrator's probes.

A client that hangs up while its request is read is logged once, at DEBUG (see
`app.py`): it is the client's choice, not the server's failure.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from starlette.responses import JSONResponse
from uvicorn.protocols.http.h11_impl import H11Protocol

from tracejudge.server.config import ServerConfig

__all__ = [
    "PROBE_CONNECTIONS",
    "PROBE_PATHS",
    "ConnectionLimits",
    "GuardedH11Protocol",
    "ProbesOnly",
    "connection_limits",
    "uvicorn_config",
]

logger = logging.getLogger("tracejudge.server")

#: File descriptors kept for what is not a client connection: the listening socket, the
#: store, the judge's connections (added: --max-concurrency), logs, the interpreter's own.
_RESERVED_FILES = 64
#: Connections the kernel queues before they are accepted. asyncio also accepts up to this
#: many in one turn of the loop, before any of them can be refused, so they must fit in
#: the file limit beside the open ones.
_BACKLOG = 511
#: Turns of the loop during which an accepted socket holds a descriptor before the cap can
#: close one to make room: accepted (turn 1), its transport made by a task (2),
#: `connection_made` closing the oldest waiting connection (3), that socket released in
#: `connection_lost` (4). The loop may accept a batch (`backlog`) in each of them, so that
#: many batches must fit beside the open connections: counting one, a loaded server ran
#: out of descriptors now and then (214 sockets seen open under a cap of 126).
_ACCEPT_TURNS = 4
#: Connections kept past `--max-connections` for the probes, when every connection has a
#: request running.
PROBE_CONNECTIONS = 8
#: What such a connection may ask.
PROBE_PATHS = frozenset({"/health", "/ready"})
#: How often a body past its deadline is checked for its rate again.
_BODY_RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float
    max_connections: int
    backlog: int = _BACKLOG
    body_timeout: float = 30.0
    min_body_rate: float = 16384.0
    #: Why `max_connections` is lower than configured ("" when it is not).
    note: str = ""


def connection_limits(config: ServerConfig) -> ConnectionLimits:
    """The limits for `config`, raising this process's soft file limit to fit
    `--max-connections` when the hard limit allows it, and lowering the cap (and the
    accept backlog) to fit the file limit when it does not (`note` then says so)."""
    wanted, timeout = config.max_connections, config.header_timeout_seconds
    limits = ConnectionLimits(
        timeout,
        wanted,
        body_timeout=config.body_timeout_seconds,
        min_body_rate=config.min_body_rate,
    )
    reserve = _RESERVED_FILES + config.max_concurrency + PROBE_CONNECTIONS
    try:
        import resource
    except ImportError:  # not POSIX: no file limit to fit
        return limits
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + reserve + _ACCEPT_TURNS * _BACKLOG
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= need:
        return limits
    backlog = max(16, min(_BACKLOG, (soft - reserve) // (2 * _ACCEPT_TURNS)))
    fitted = max(1, min(wanted, soft - reserve - _ACCEPT_TURNS * backlog))
    note = (
        f"--max-connections {wanted} does not fit this process's file limit ({soft} open "
        f"files; raise it with `ulimit -n`): at most {fitted} connections are kept open"
    )
    return dataclasses.replace(limits, max_connections=fitted, backlog=backlog, note=note)


class ProbesOnly:
    """The app of a connection kept for the probes: `/health` and `/ready` go through;
    anything else is 503 with `Retry-After`, and the connection is closed after it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in PROBE_PATHS:
            await self.app(scope, receive, send)
            return
        answer = JSONResponse(
            {
                "detail": "the server has as many connections open as --max-connections "
                "allows; this one may only ask /health or /ready: retry in a few seconds"
            },
            status_code=503,
            headers={"Retry-After": "1", "Connection": "close"},
        )
        await answer(scope, receive, send)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header timeout, a body deadline and a cap on open
    connections; the limits are class attributes, set by `uvicorn_config` on a subclass."""

    header_timeout: float = 10.0
    max_connections: int = 1000
    body_timeout: float = 30.0
    min_body_rate: float = 16384.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        #: Since when this connection waits for a request head (None: a request runs).
        self.waiting_since: float | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        #: Since when the running request's body has been arriving, and how much came.
        self._body_since = 0.0
        self._body_bytes = 0
        #: Whether the connection is one kept for the probes (see `ProbesOnly`).
        self.probes_only = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # asyncio.Transport, not BaseTransport
        super().connection_made(transport)
        self.waiting_since = time.monotonic()
        if len(self.connections) > self.max_connections:
            self._make_room()
        if not transport.is_closing():
            self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watch()
        self._stop_body_watch()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._body_timer is not None:
            self._body_bytes += len(data)
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        self._watch_head()
        self._watch_body()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch_head()

    def _waiting_for_head(self) -> bool:
        return self.conn.our_state is h11.IDLE and self.conn.their_state is h11.IDLE

    def _watch_head(self) -> None:
        """Time the wait for a request head while there is one; stop once it came."""
        if self.transport.is_closing() or not self._waiting_for_head():
            self._stop_watch()
            self.waiting_since = None
            return
        if self._head_timer is None:
            self.waiting_since = time.monotonic()
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _stop_watch(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing() and self._waiting_for_head():
            logger.debug(
                "tracejudge: closed a connection from %s that sent no request head in %g s",
                _peer(self.client),
                self.header_timeout,
            )
            self.transport.close()

    def _watch_body(self) -> None:
        """Time the running request's body while it arrives; stop once it came."""
        if self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            self._stop_body_watch()
            return
        if self._body_timer is None:
            self._body_since = time.monotonic()
            self._body_bytes = 0
            self._body_timer = self.loop.call_later(self.body_timeout, self._body_overdue)

    def _stop_body_watch(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_overdue(self) -> None:
        """Past the body deadline: go on while the body keeps the minimum rate (or while
        the app, not the client, holds it up), else answer 408 and close."""
        self._body_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            return
        elapsed = time.monotonic() - self._body_since
        keeps_rate = self.min_body_rate > 0 and self._body_bytes >= self.min_body_rate * elapsed
        if self.flow.read_paused or keeps_rate:
            self._body_timer = self.loop.call_later(_BODY_RECHECK_SECONDS, self._body_overdue)
            return
        logger.debug(
            "tracejudge: closed a connection from %s whose request body came at %.0f bytes/s "
            "after %g s (--min-body-rate %g)",
            _peer(self.client),
            self._body_bytes / elapsed if elapsed else 0.0,
            self.body_timeout,
            self.min_body_rate,
        )
        if self.conn.our_state is h11.SEND_RESPONSE:
            self._send_408()
        # The request's app, waiting for the rest of the body, is told the client is gone
        # now, before it could start an answer of its own after this one.
        if self.cycle is not None:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.close()

    def _send_408(self) -> None:
        detail = (
            f"the request body did not arrive within {self.body_timeout:g} s at "
            f"{self.min_body_rate:g} bytes a second or more (--body-timeout-seconds, "
            "--min-body-rate); send it faster, or in smaller requests"
        )
        body = json.dumps({"detail": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=408, headers=headers, reason=b"Request Timeout"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")

    def _make_room(self) -> None:
        """Past the cap: close the connection waiting longest for a head; else keep this
        one for the probes while there is room for them, else close it."""
        oldest: GuardedH11Protocol | None = None
        for other in self.connections:
            if other is self or not isinstance(other, GuardedH11Protocol):
                continue
            since = other.waiting_since
            if since is not None and (oldest is None or since < (oldest.waiting_since or 0.0)):
                oldest = other
        if oldest is None and len(self.connections) <= self.max_connections + PROBE_CONNECTIONS:
            self.probes_only = True
            self.app = ProbesOnly(self.app)
            return
        victim = oldest if oldest is not None else self
        logger.debug(
            "tracejudge: %d connections open (--max-connections %d): closed one from %s",
            len(self.connections),
            self.max_connections,
            _peer(victim.client),
        )
        victim.connections.discard(victim)
        victim.transport.close()


def _peer(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "an unknown address"


def _log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging, with the server's own messages (`tracejudge.*`) at `level` too
    (uvicorn sets only its own loggers' level)."""
    from uvicorn.config import LOGGING_CONFIG

    settings = copy.deepcopy(LOGGING_CONFIG)
    settings["loggers"]["tracejudge"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    return settings


def uvicorn_config(app: Any, config: ServerConfig, limits: ConnectionLimits, **options: Any) -> Any:
    """uvicorn's settings for the app: the guarded h11 protocol with `limits`, the
    keep-alive timeout, no access log, no Server header, the server's log at
    `--log-level`. `options` add to them (`log_config=None`: the caller's logging)."""
    options.setdefault("log_config", _log_config(config.log_level))
    protocol = type(
        "TraceJudgeH11Protocol",
        (GuardedH11Protocol,),
        {
            "header_timeout": limits.header_timeout,
            "max_connections": limits.max_connections,
            "body_timeout": limits.body_timeout,
            "min_body_rate": limits.min_body_rate,
        },
    )
    return uvicorn.Config(
        app,
        http=protocol,
        backlog=limits.backlog,
        timeout_keep_alive=config.keep_alive_seconds,  # type: ignore[arg-type]  # call_later: float
        log_level=config.log_level,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=5,
        **options,
    )
