"""Replay recorded HTTP exchanges (vcrpy cassettes) to real clients on loopback.

Beside `ScriptedLLMServer` (which renders scripted replies), this server sends bytes
a real API sent: point it at your own vcrpy cassettes to run your agent, under any
instrumentation, against recorded provider traffic.

`Cassette.load(path)` reads a vcrpy cassette (YAML, or the JSON serialiser's output):
each recorded request with the response the real API gave. `CassetteServer` listens on
127.0.0.1 and answers every request with a recorded response, so the real `openai` and
`anthropic` clients (and whatever instrumentation wraps them) run unchanged against
what the provider really sent:

    with CassetteServer(Cassette.load("chat.yaml")) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="test")
        client.chat.completions.create(**server.cassette.exchanges[0].request_json)

Which response answers a request: the first unused exchange with the same method and
path whose request body is the same JSON, else the first unused one with the same method
and path (the query string is not compared). When none is left the server answers 500
with a message naming the request. Responses are sent as recorded: the status, the
headers (less the hop-by-hop ones and the content encoding, since the body is sent
decoded), and the body; an event stream (`text/event-stream`, or a body that starts
with `event:` / `data:`) goes out one event per chunk, in the recorded order.
"""

from __future__ import annotations

import gzip
import json
import socket
import sys
import threading
import zlib
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Cassette", "CassetteServer", "RecordedExchange"]

_HOP_BY_HOP = frozenset(
    {"connection", "content-encoding", "content-length", "keep-alive", "transfer-encoding"}
)


@dataclass(frozen=True)
class RecordedExchange:
    """One recorded request and the response the real API gave to it.

    `body` is the response body decoded (no gzip); `headers` are the response headers
    as recorded, less the hop-by-hop ones and `Content-Encoding`.
    """

    method: str
    url: str
    request_body: bytes
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def path(self) -> str:
        """The request path without the query string, e.g. ``/v1/chat/completions``."""
        return urlsplit(self.url).path

    @property
    def request_json(self) -> Any:
        """The request body parsed as JSON, or None when it is empty or not JSON."""
        try:
            return json.loads(self.request_body) if self.request_body else None
        except ValueError:
            return None

    @property
    def response_json(self) -> Any:
        """The response body parsed as JSON, or None (an event stream, an empty body)."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    @property
    def content_type(self) -> str:
        for name, value in self.headers:
            if name.lower() == "content-type":
                return value
        return "text/event-stream" if self.is_stream else "application/json"

    @property
    def is_stream(self) -> bool:
        """Whether the response is a server-sent event stream."""
        for name, value in self.headers:
            if name.lower() == "content-type":
                return value.lower().startswith("text/event-stream")
        return self.body.lstrip().startswith((b"event:", b"data:"))

    def events(self) -> list[bytes]:
        """The stream's events, each with its terminating blank line, as recorded."""
        text = self.body.replace(b"\r\n", b"\n")
        events = [part + b"\n\n" for part in text.split(b"\n\n") if part.strip()]
        return events


@dataclass(frozen=True)
class Cassette:
    """The exchanges of one cassette file, in recorded order."""

    exchanges: tuple[RecordedExchange, ...]
    name: str = ""

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Cassette:
        """Read a vcrpy cassette (YAML; `.json` files as JSON).

        YAML needs PyYAML (`pip install pyyaml`). Raises ValueError naming the file and
        the field when the file is not a cassette.
        """
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            try:
                import yaml
            except ImportError as exc:  # an optional dependency
                raise ImportError(
                    "reading YAML cassettes needs PyYAML: pip install pyyaml"
                ) from exc
            # libyaml's loader when PyYAML was built with it: the same data, about eight
            # times faster than the pure-Python one on recorded cassettes.
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            data = yaml.load(text, Loader=loader)
        return cls.from_dict(data, name=path.name)

    @classmethod
    def from_dict(cls, data: Any, *, name: str = "") -> Cassette:
        """A cassette from vcrpy's serialised form ``{"interactions": [...]}``."""
        where = name or "cassette"
        interactions = data.get("interactions") if isinstance(data, dict) else None
        if not isinstance(interactions, list):
            raise ValueError(f"{where}: no 'interactions' list; is this a vcrpy cassette?")
        exchanges = []
        for i, item in enumerate(interactions):
            try:
                exchanges.append(_exchange(item))
            except (KeyError, TypeError, ValueError, OSError, zlib.error) as exc:
                raise ValueError(f"{where}: interactions[{i}] is not readable ({exc})") from exc
        return cls(exchanges=tuple(exchanges), name=name)


def _bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, dict):  # vcrpy: {"string": ...}
        value = value.get("string", b"")
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _header_pairs(headers: Any) -> list[tuple[str, str]]:
    pairs = []
    for name, values in (headers or {}).items():
        for value in values if isinstance(values, list) else [values]:
            pairs.append((str(name), str(value)))
    return pairs


def _exchange(item: dict[str, Any]) -> RecordedExchange:
    request, response = item["request"], item["response"]
    headers = _header_pairs(response.get("headers"))
    body = _bytes(response.get("body"))
    encoding = next((v for k, v in headers if k.lower() == "content-encoding"), "").lower()
    if "gzip" in encoding:
        body = gzip.decompress(body)
    elif "deflate" in encoding:
        body = zlib.decompress(body)
    status = response.get("status")
    code: Any = status.get("code") if isinstance(status, dict) else status  # as recorded
    return RecordedExchange(
        method=str(request.get("method") or "POST").upper(),
        url=str(request["uri"]),
        request_body=_bytes(request.get("body")),
        status=int(code),
        headers=tuple((k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP),
        body=body,
    )


def _same_json(first: bytes, second: bytes) -> bool:
    try:
        return bool(json.loads(first) == json.loads(second))
    except ValueError:
        return first == second


@dataclass
class _Pending:
    exchanges: list[RecordedExchange]
    used: list[bool] = field(default_factory=list)

    def take(self, method: str, path: str, body: bytes) -> RecordedExchange | None:
        candidates = [
            i
            for i, exchange in enumerate(self.exchanges)
            if not self.used[i] and exchange.method == method and exchange.path == path
        ]
        same = [i for i in candidates if _same_json(self.exchanges[i].request_body, body)]
        chosen = same[0] if same else candidates[0] if candidates else None
        if chosen is None:
            return None
        self.used[chosen] = True
        return self.exchanges[chosen]


class CassetteServer:
    """An HTTP server on 127.0.0.1 that answers with a cassette's recorded responses.

    Use it as a context manager, or call `start()` / `stop()`. `requests` lists what
    was received (method, path, body) in order; `unused` the exchanges not replayed yet.
    """

    def __init__(self, cassette: Cassette) -> None:
        self.cassette = cassette
        self._lock = threading.Lock()
        self._pending = _Pending(list(cassette.exchanges), [False] * len(cassette.exchanges))
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[tuple[str, str, bytes]] = []

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash); the server must be started."""
        if self._httpd is None:
            raise RuntimeError("CassetteServer is not started; call start() first")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def unused(self) -> list[RecordedExchange]:
        with self._lock:
            return [
                e
                for e, used in zip(self._pending.exchanges, self._pending.used, strict=True)
                if not used
            ]

    def start(self) -> CassetteServer:
        if self._httpd is None:
            self._httpd = _Server(self)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.02},
                name=f"CassetteServer:{self.cassette.name}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> CassetteServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _answer(self, method: str, target: str, body: bytes) -> RecordedExchange | None:
        path = urlsplit(target).path
        with self._lock:
            self.requests.append((method, path, body))
            return self._pending.take(method, path, body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, owner: CassetteServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # a client that went away
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        # Without TCP_NODELAY every keep-alive exchange stalls ~40 ms (Nagle + delayed ACK).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self) -> None:
        body = self._body()
        exchange = self.server.owner._answer(self.command, self.path, body)
        if exchange is None:
            path = urlsplit(self.path).path
            message = f"CassetteServer: no recorded response left for {self.command} {path}"
            payload = json.dumps({"error": {"message": message, "type": "server_error"}})
            self._send(500, [("Content-Type", "application/json")], payload.encode(), None)
            return
        headers = list(exchange.headers)
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.insert(0, ("Content-Type", exchange.content_type))
        events = exchange.events() if exchange.is_stream else None
        self._send(exchange.status, headers, exchange.body, events)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _send(
        self, status: int, headers: list[tuple[str, str]], body: bytes, events: list[bytes] | None
    ) -> None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Recorded"
        lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
        lines.append("Transfer-Encoding: chunked" if events is not None else "")
        if events is None:
            lines[-1] = f"Content-Length: {len(body)}"
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if events is None:
            self.wfile.write(head + body)  # one write: see setup()
            return
        self.wfile.write(head)
        for event in events:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
