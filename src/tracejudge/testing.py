"""A scripted, OpenAI- and Anthropic-compatible LLM HTTP server for tests and offline demos.

:class:`ScriptedLLMServer` listens on ``127.0.0.1`` (a free port chosen at start) and answers
each model call with the next reply from a FIFO queue of scripted :class:`Reply` objects (or
callables producing one).  The same reply renders in whichever wire format the endpoint needs:

* ``POST /v1/chat/completions`` -- OpenAI Chat Completions (also ``"stream": true`` SSE)
* ``POST /v1/responses``        -- OpenAI Responses API (also ``"stream": true`` SSE)
* ``POST /v1/messages``         -- Anthropic Messages API (also ``"stream": true`` SSE)
* ``GET /v1/models``            -- a one-entry model list containing ``scripted-model``

Point real SDK clients at it::

    with ScriptedLLMServer([Reply.text("hello")]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        anthropic_client = anthropic.Anthropic(base_url=server.url, api_key="test")

This module only uses the standard library.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ["RecordedRequest", "Reply", "ScriptedLLMServer", "ToolCall", "token_logprobs"]

DEFAULT_MODEL = "scripted-model"

_TOKEN_RE = re.compile(r"\d+|\w+|\s+|[^\w\s]")
_STREAM_PIECE_RE = re.compile(r"\s*\S+\s*|\s+")


# --------------------------------------------------------------------------------------------
# Public data types
# --------------------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One HTTP request received by the server.

    Attributes:
        method: The HTTP method, e.g. ``"POST"``.
        path: The request path including any query string, e.g. ``"/v1/chat/completions"``.
        headers: Request headers with lower-case names (repeated headers joined by ``", "``).
        body: The raw request body.
        json: The body parsed as JSON, or ``None`` when it is empty or not valid JSON.
        received_at: ``time.time()`` when the request was read.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    received_at: float


@dataclass(frozen=True)
class ToolCall:
    """A tool (function) call the scripted model makes.

    Attributes:
        name: The tool / function name.
        arguments: The call arguments; a dict is serialised with ``json.dumps``, a string is
            sent verbatim (so malformed JSON can be scripted too).
        id: The call id; when ``None`` the server assigns a deterministic ``call_<n>`` that is
            unique per server.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        """Return the arguments as the JSON string sent on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)

    def arguments_dict(self) -> dict[str, Any]:
        """Return the arguments as a dict (Anthropic ``tool_use.input``).

        String arguments are parsed as JSON; when that fails or does not yield an object, the
        string is wrapped as ``{"_raw": arguments}``.
        """
        if not isinstance(self.arguments, str):
            return dict(self.arguments)
        try:
            parsed = json.loads(self.arguments)
        except ValueError:
            return {"_raw": self.arguments}
        return parsed if isinstance(parsed, dict) else {"_raw": self.arguments}


ReplyKind = Literal["text", "tool_calls", "error", "raw"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer.  Build it with :meth:`text`, :meth:`tool_calls`, :meth:`error` or
    :meth:`raw` rather than calling the constructor directly.

    ``delay`` is the number of seconds the server waits before answering (the request counts
    as in flight while it waits).
    """

    kind: ReplyKind
    content: str | None = None
    calls: tuple[ToolCall, ...] = ()
    model: str = DEFAULT_MODEL
    usage: dict[str, int] | None = None
    logprobs: list[dict[str, Any]] | None = None
    finish_reason: str = "stop"
    delay: float = 0.0
    status: int = 200
    message: str = "scripted error"
    retry_after: float | None = None
    error_type: str | None = None
    body: bytes | str | dict[str, Any] | None = None
    headers: dict[str, str] | None = None

    @classmethod
    def text(
        cls,
        content: str,
        *,
        model: str = DEFAULT_MODEL,
        usage: dict[str, int] | None = None,
        logprobs: list[dict[str, Any]] | None = None,
        delay: float = 0.0,
        finish_reason: str = "stop",
    ) -> Reply:
        """A plain assistant text message.

        Args:
            content: The assistant text.
            model: The model name reported in the response.
            usage: Token usage override, e.g. ``{"prompt_tokens": 10, "completion_tokens": 2}``
                (``input_tokens`` / ``output_tokens`` / ``total_tokens`` are accepted too);
                missing values are estimated from the request and reply sizes.
            logprobs: Passed through raw as ``choices[0].logprobs = {"content": logprobs}`` in
                chat completions (see :func:`token_logprobs`).
            delay: Seconds to wait before answering.
            finish_reason: Chat-completions finish reason (``"stop"``, ``"length"``, ...).
        """
        return cls(
            kind="text",
            content=content,
            model=model,
            usage=usage,
            logprobs=logprobs,
            delay=delay,
            finish_reason=finish_reason,
        )

    @classmethod
    def tool_calls(
        cls,
        calls: Iterable[ToolCall],
        *,
        content: str | None = None,
        model: str = DEFAULT_MODEL,
        usage: dict[str, int] | None = None,
        delay: float = 0.0,
    ) -> Reply:
        """An assistant message with one or more (parallel) tool calls.

        Args:
            calls: The tool calls, in order.
            content: Optional assistant text sent alongside the calls.
            model: The model name reported in the response.
            usage: Token usage override (see :meth:`text`).
            delay: Seconds to wait before answering.
        """
        calls = tuple(calls)
        if not calls:
            raise ValueError("Reply.tool_calls needs at least one ToolCall")
        for call in calls:
            if not isinstance(call, ToolCall):
                raise TypeError(f"expected ToolCall, got {type(call).__name__}")
        return cls(
            kind="tool_calls",
            content=content,
            calls=calls,
            model=model,
            usage=usage,
            delay=delay,
            finish_reason="tool_calls",
        )

    @classmethod
    def error(
        cls,
        status: int,
        *,
        message: str = "scripted error",
        retry_after: float | None = None,
        delay: float = 0.0,
        error_type: str | None = None,
    ) -> Reply:
        """An API error: OpenAI-style ``{"error": {...}}`` body, or Anthropic-style
        ``{"type": "error", "error": {...}}`` for ``/v1/messages``.

        Args:
            status: The HTTP status code.
            message: The error message.
            retry_after: When set, sent as the ``Retry-After`` header (seconds).
            delay: Seconds to wait before answering.
            error_type: The error ``type``; derived from the status when ``None``.
        """
        return cls(
            kind="error",
            status=status,
            message=message,
            retry_after=retry_after,
            delay=delay,
            error_type=error_type,
        )

    @classmethod
    def raw(
        cls,
        status: int,
        body: bytes | str | dict[str, Any],
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> Reply:
        """An exact HTTP response, whatever the endpoint.

        A dict body is JSON-encoded.  ``Content-Type`` defaults to ``application/json`` and
        ``Content-Length`` is computed unless given in ``headers``.
        """
        return cls(kind="raw", status=status, body=body, headers=headers, delay=delay)


ReplySource = Reply | Callable[[RecordedRequest], Reply]


def token_logprobs(content: str, at: str, top: dict[str, float]) -> list[dict[str, Any]]:
    """Build an OpenAI ``logprobs.content`` list for ``content``.

    ``content`` is split into simple tokens (digit runs, word runs, whitespace runs, single
    punctuation characters).  Every token gets logprob ``0.0`` and a ``top_logprobs`` list
    holding just itself, except the token where the score is read: the first token equal to
    ``at`` after the last occurrence of ``'"score"'`` in ``content`` (or the first token equal
    to ``at`` when there is no ``'"score"'``).  That token gets ``top_logprobs`` built from
    ``top`` (token -> logprob, highest first) and logprob ``top.get(at, 0.0)``.

    Raises:
        ValueError: when no token equals ``at``.
    """
    tokens = [(m.start(), m.group()) for m in _TOKEN_RE.finditer(content)]
    marker = content.rfind('"score"')
    start = marker + len('"score"') if marker >= 0 else 0
    target = next((i for i, (pos, tok) in enumerate(tokens) if tok == at and pos >= start), None)
    if target is None:
        raise ValueError(f"token {at!r} not found in content {content!r}")

    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}

    result: list[dict[str, Any]] = []
    for i, (_, tok) in enumerate(tokens):
        if i == target:
            ranked = sorted(top.items(), key=lambda kv: kv[1], reverse=True)
            item = entry(tok, float(top.get(tok, 0.0)))
            item["top_logprobs"] = [entry(t, float(lp)) for t, lp in ranked]
        else:
            item = entry(tok, 0.0)
            item["top_logprobs"] = [entry(tok, 0.0)]
        result.append(item)
    return result


# --------------------------------------------------------------------------------------------
# Rendering helpers
# --------------------------------------------------------------------------------------------

_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_CODES = {
    401: "invalid_api_key",
    404: "model_not_found",
    429: "rate_limit_exceeded",
}
_SKIP_CHAR_KEYS = frozenset(
    {"role", "type", "id", "call_id", "tool_call_id", "tool_use_id", "name", "cache_control"}
)


def _error_type(status: int) -> str:
    if status in _OPENAI_ERROR_TYPES:
        return _OPENAI_ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def _text_chars(obj: Any) -> int:
    """Count characters of textual content in a request's messages / input."""
    if isinstance(obj, str):
        return len(obj)
    if isinstance(obj, list):
        return sum(_text_chars(item) for item in obj)
    if isinstance(obj, dict):
        return sum(_text_chars(v) for k, v in obj.items() if k not in _SKIP_CHAR_KEYS)
    return 0


def _pieces(text: str, max_pieces: int = 8) -> list[str]:
    """Split text into a few streaming deltas that concatenate back to ``text``."""
    if not text:
        return []
    words = _STREAM_PIECE_RE.findall(text)
    if "".join(words) != text:  # pragma: no cover - the regex covers every character
        words = [text]
    if len(words) <= max_pieces:
        return words
    size = -(-len(words) // max_pieces)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def _arg_fragments(arguments: str, n: int = 3) -> list[str]:
    """Split a JSON argument string into ``n`` roughly equal fragments."""
    if not arguments:
        return []
    size = max(1, -(-len(arguments) // n))
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def _anthropic_stop_reason(finish_reason: str) -> str:
    return {
        "stop": "end_turn",
        "length": "max_tokens",
        "tool_calls": "tool_use",
        "content_filter": "refusal",
    }.get(finish_reason, finish_reason)


@dataclass
class _Rendered:
    """A fully rendered HTTP response: either a body or a list of SSE events."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    events: list[bytes] | None = None


def _json_response(
    status: int, payload: Any, extra_headers: list[tuple[str, str]] | None = None
) -> _Rendered:
    headers = [("Content-Type", "application/json")]
    headers.extend(extra_headers or [])
    return _Rendered(status, headers, json.dumps(payload).encode("utf-8"))


def _sse(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {text}\n\n".encode()


def _sse_response(events: list[bytes]) -> _Rendered:
    return _Rendered(
        200,
        [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache")],
        events=events,
    )


# --------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # The default backlog of 5 drops bursts of new connections (a client then waits
    # ~1 s to retry), which distorts concurrency tests.
    request_queue_size = 128

    def __init__(self, owner: ScriptedLLMServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore clients that went away (e.g. timed out during a delay); report the rest."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedLLMServer/1.0"
    server: _HTTPServer

    def setup(self) -> None:
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()
        self.server.owner._track_connection(self.request, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track_connection(self.request, add=False)

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
        rendered = self.server.owner._dispatch(request)
        self._write(rendered)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _write(self, rendered: _Rendered) -> None:
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


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


# OpenLLMetry keeps every Responses API response in a process-global dict keyed by
# response id, so response ids must not repeat across servers in one process.
_PROCESS_WIDE_ID_PREFIXES = frozenset({"resp_"})
_PROCESS_WIDE_IDS: dict[str, Iterator[int]] = {}


class ScriptedLLMServer:
    """An OpenAI- and Anthropic-compatible HTTP server on 127.0.0.1 that replays scripted replies.

    Args:
        replies: Initial queue of :class:`Reply` objects (a plain string is
            ``Reply.text(string)``) or callables ``fn(request: RecordedRequest) -> Reply``
            (called when the request arrives).
        default: Reply (or callable) used when the queue is empty.  Without one, an empty
            queue answers HTTP 500 with a message naming the request.

    Use it as a context manager (starts and stops), or call :meth:`start` / :meth:`stop`.
    The queue is shared across endpoints and consumed first-in first-out as model calls
    arrive; ``GET /v1/models`` and unknown paths do not consume it.
    """

    def __init__(
        self,
        replies: Iterable[ReplySource | str] = (),
        default: ReplySource | str | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ReplySource] = deque()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._counters: dict[str, Iterator[int]] = {}
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self.default: ReplySource | None = None if default is None else self._check(default)
        self.add(*replies)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread.  Returns ``self``."""
        with self._lock:
            if self._httpd is not None:
                return self
            self._stopping.clear()
            httpd = _HTTPServer(self)
            self._httpd = httpd
            self._port = httpd.server_address[1]
            self._thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.02},
                name=f"ScriptedLLMServer:{self._port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake delayed replies, and close open connections.  Idempotent."""
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
            connections = list(self._connections)
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- properties --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port (available once started)."""
        if self._port is None:
            raise RuntimeError("ScriptedLLMServer is not started; call start() first")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` -- the base URL for the Anthropic client."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` -- the base URL for the OpenAI client."""
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def max_in_flight(self) -> int:
        """The highest number of requests handled at the same time so far."""
        with self._lock:
            return self._max_in_flight

    @property
    def pending(self) -> int:
        """The number of scripted replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    # -- queue -------------------------------------------------------------------------------

    @staticmethod
    def _check(reply: object) -> ReplySource:
        if isinstance(reply, str):
            return Reply.text(reply)
        if not isinstance(reply, Reply) and not callable(reply):
            raise TypeError(
                f"expected a Reply, a string (a text reply) or a callable returning a Reply, "
                f"got {type(reply).__name__}"
            )
        return reply  # type: ignore[return-value]

    def add(self, *replies: ReplySource | str) -> None:
        """Append replies (a string is a text reply) or callables to the end of the queue.
        Thread-safe."""
        checked = [self._check(reply) for reply in replies]
        with self._lock:
            self._queue.extend(checked)

    def reset(self) -> None:
        """Clear the queue, the recorded requests and all counters (ids, in-flight maximum)."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._max_in_flight = self._in_flight
            self._counters.clear()

    # -- internals ---------------------------------------------------------------------------

    def _track_connection(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            if prefix in _PROCESS_WIDE_ID_PREFIXES:
                counter = _PROCESS_WIDE_IDS.setdefault(prefix, itertools.count(1))
            else:
                counter = self._counters.setdefault(prefix, itertools.count(1))
            return f"{prefix}{next(counter)}"

    def _dispatch(self, request: RecordedRequest) -> _Rendered:
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            return self._respond(request)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _respond(self, request: RecordedRequest) -> _Rendered:
        path = request.path.split("?", 1)[0].rstrip("/")
        if request.method == "GET" and path.endswith("/models"):
            return self._models()
        endpoint: str | None = None
        if request.method == "POST":
            for suffix, name in (
                ("/chat/completions", "chat"),
                ("/responses", "responses"),
                ("/messages", "messages"),
            ):
                if path.endswith(suffix):
                    endpoint = name
                    break
        if endpoint is None:
            return self._error_body(
                "chat", 404, f"ScriptedLLMServer: no route for {request.method} {path}", None
            )

        with self._lock:
            source = self._queue.popleft() if self._queue else self.default
        if source is None:
            message = f"ScriptedLLMServer: no scripted reply left for POST {path}"
            return self._error_body(endpoint, 500, message, "server_error")
        if isinstance(source, Reply):
            reply = source
        else:
            try:
                reply = source(request)
            except Exception as exc:  # surface the failure to the test through the client
                message = f"ScriptedLLMServer: reply callable raised {exc!r}"
                return self._error_body(endpoint, 500, message, "server_error")
            if not isinstance(reply, Reply):
                message = f"ScriptedLLMServer: reply callable returned {type(reply).__name__}"
                return self._error_body(endpoint, 500, message, "server_error")

        if reply.delay > 0:
            self._stopping.wait(reply.delay)
        body = request.json if isinstance(request.json, dict) else {}
        stream = bool(body.get("stream"))
        if reply.kind == "raw":
            return self._raw(reply)
        if reply.kind == "error":
            extra = []
            if reply.retry_after is not None:
                extra.append(("Retry-After", _format_seconds(reply.retry_after)))
            return self._error_body(
                endpoint, reply.status, reply.message, reply.error_type, extra_headers=extra
            )
        if endpoint == "chat":
            return self._chat_stream(reply, body) if stream else self._chat(reply, body)
        if endpoint == "responses":
            return self._responses_stream(reply, body) if stream else self._responses(reply, body)
        return self._messages_stream(reply, body) if stream else self._messages(reply, body)

    # -- generic responses -------------------------------------------------------------------

    @staticmethod
    def _models() -> _Rendered:
        model = {
            "id": DEFAULT_MODEL,
            "object": "model",
            "type": "model",
            "created": 0,
            "created_at": "1970-01-01T00:00:00Z",
            "owned_by": "tracejudge",
            "display_name": "Scripted Model",
        }
        payload = {
            "object": "list",
            "data": [model],
            "has_more": False,
            "first_id": DEFAULT_MODEL,
            "last_id": DEFAULT_MODEL,
        }
        return _json_response(200, payload)

    @staticmethod
    def _raw(reply: Reply) -> _Rendered:
        headers = list((reply.headers or {}).items())
        body = reply.body if reply.body is not None else b""
        if isinstance(body, dict):
            data = json.dumps(body).encode("utf-8")
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = bytes(body)
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.insert(0, ("Content-Type", "application/json"))
        return _Rendered(reply.status, headers, data)

    @staticmethod
    def _error_body(
        endpoint: str,
        status: int,
        message: str,
        error_type: str | None,
        extra_headers: list[tuple[str, str]] | None = None,
    ) -> _Rendered:
        etype = error_type or _error_type(status)
        if endpoint == "messages":
            payload: dict[str, Any] = {
                "type": "error",
                "error": {"type": etype, "message": message},
            }
        else:
            code = _OPENAI_ERROR_CODES.get(status, error_type)
            payload = {"error": {"message": message, "type": etype, "param": None, "code": code}}
        return _json_response(status, payload, extra_headers)

    # -- usage -------------------------------------------------------------------------------

    def _usage(self, reply: Reply, body: dict[str, Any]) -> tuple[int, int, int]:
        prompt_chars = 0
        for key in ("messages", "input", "instructions", "system", "prompt"):
            prompt_chars += _text_chars(body.get(key))
        output_chars = len(reply.content or "") + sum(
            len(call.arguments_json()) for call in reply.calls
        )
        prompt = max(1, prompt_chars // 4)
        completion = output_chars // 4 + 1
        override = reply.usage or {}
        prompt = int(override.get("prompt_tokens", override.get("input_tokens", prompt)))
        completion = int(
            override.get("completion_tokens", override.get("output_tokens", completion))
        )
        total = int(override.get("total_tokens", prompt + completion))
        return prompt, completion, total

    def _calls_with_ids(self, reply: Reply) -> list[tuple[ToolCall, str]]:
        return [(call, call.id or self._next_id("call_")) for call in reply.calls]

    # -- chat completions --------------------------------------------------------------------

    def _chat_usage(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        prompt, completion, total = self._usage(reply, body)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": total,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def _chat(self, reply: Reply, body: dict[str, Any]) -> _Rendered:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content,
            "refusal": None,
            "annotations": [],
        }
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for call, call_id in self._calls_with_ids(reply)
            ]
        payload = {
            "id": self._next_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": {"content": reply.logprobs} if reply.logprobs is not None else None,
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": self._chat_usage(reply, body),
            "service_tier": "default",
            "system_fingerprint": None,
        }
        return _json_response(200, payload)

    def _chat_stream(self, reply: Reply, body: dict[str, Any]) -> _Rendered:
        completion_id = self._next_id("chatcmpl-")
        created = int(time.time())
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))

        def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> bytes:
            data: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": reply.model,
                "service_tier": "default",
                "system_fingerprint": None,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
                ],
            }
            if include_usage:
                data["usage"] = None
            return _sse(data)

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        content = reply.content or ""
        tokens = [entry.get("token") for entry in reply.logprobs or []]
        if reply.logprobs and "".join(str(t) for t in tokens) == content:
            for entry in reply.logprobs:
                events.append(chunk({"content": entry["token"]}, logprobs={"content": [entry]}))
        else:
            for i, piece in enumerate(_pieces(content)):
                logprobs = {"content": reply.logprobs} if reply.logprobs and i == 0 else None
                events.append(chunk({"content": piece}, logprobs=logprobs))
        for index, (call, call_id) in enumerate(self._calls_with_ids(reply)):
            head = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            events.append(chunk({"tool_calls": [head]}))
            for fragment in _arg_fragments(call.arguments_json()):
                delta = {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
                events.append(chunk(delta))
        events.append(chunk({}, finish=reply.finish_reason))
        if include_usage:
            events.append(
                _sse(
                    {
                        "id": completion_id,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": reply.model,
                        "service_tier": "default",
                        "system_fingerprint": None,
                        "choices": [],
                        "usage": self._chat_usage(reply, body),
                    }
                )
            )
        events.append(_sse("[DONE]"))
        return _sse_response(events)

    # -- responses API -----------------------------------------------------------------------

    def _responses_items(self, reply: Reply) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if reply.content is not None and (reply.kind == "text" or reply.content):
            items.append(
                {
                    "type": "message",
                    "id": self._next_id("msg_"),
                    "status": "completed",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "output_text",
                            "text": reply.content,
                            "annotations": [],
                            "logprobs": [],
                        }
                    ],
                }
            )
        for call, call_id in self._calls_with_ids(reply):
            items.append(
                {
                    "type": "function_call",
                    "id": self._next_id("fc_"),
                    "call_id": call_id,
                    "name": call.name,
                    "arguments": call.arguments_json(),
                    "status": "completed",
                }
            )
        return items

    def _response_object(
        self, reply: Reply, body: dict[str, Any], response_id: str, output: list[dict[str, Any]]
    ) -> dict[str, Any]:
        prompt, completion, total = self._usage(reply, body)
        incomplete = reply.kind == "text" and reply.finish_reason == "length"
        now = int(time.time())
        return {
            "id": response_id,
            "object": "response",
            "created_at": now,
            "completed_at": None if incomplete else now,
            "status": "incomplete" if incomplete else "completed",
            "background": False,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "max_tool_calls": None,
            "model": reply.model,
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "service_tier": "default",
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": body.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "top_logprobs": 0,
            "top_p": body.get("top_p", 1.0),
            "truncation": "disabled",
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": total,
            },
            "user": None,
            "metadata": body.get("metadata") or {},
        }

    def _responses(self, reply: Reply, body: dict[str, Any]) -> _Rendered:
        response_id = self._next_id("resp_")
        output = self._responses_items(reply)
        return _json_response(200, self._response_object(reply, body, response_id, output))

    def _responses_stream(self, reply: Reply, body: dict[str, Any]) -> _Rendered:
        response_id = self._next_id("resp_")
        output = self._responses_items(reply)
        final = self._response_object(reply, body, response_id, output)
        seq = itertools.count()
        events: list[bytes] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append(_sse({"type": kind, "sequence_number": next(seq), **fields}, kind))

        pending = dict(final, status="in_progress", output=[], usage=None, completed_at=None)
        pending["incomplete_details"] = None
        emit("response.created", response=pending)
        emit("response.in_progress", response=pending)
        for index, item in enumerate(output):
            if item["type"] == "message":
                part = item["content"][0]
                text = part["text"]
                emit(
                    "response.output_item.added",
                    output_index=index,
                    item=dict(item, status="in_progress", content=[]),
                )
                empty_part = dict(part, text="")
                common = {"item_id": item["id"], "output_index": index, "content_index": 0}
                emit("response.content_part.added", part=empty_part, **common)
                for piece in _pieces(text):
                    emit("response.output_text.delta", delta=piece, logprobs=[], **common)
                emit("response.output_text.done", text=text, logprobs=[], **common)
                emit("response.content_part.done", part=part, **common)
            else:
                emit(
                    "response.output_item.added",
                    output_index=index,
                    item=dict(item, status="in_progress", arguments=""),
                )
                common = {"item_id": item["id"], "output_index": index}
                for fragment in _arg_fragments(item["arguments"]):
                    emit("response.function_call_arguments.delta", delta=fragment, **common)
                emit(
                    "response.function_call_arguments.done",
                    arguments=item["arguments"],
                    name=item["name"],
                    **common,
                )
            emit("response.output_item.done", output_index=index, item=item)
        done_kind = (
            "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        )
        emit(done_kind, response=final)
        return _sse_response(events)

    # -- anthropic messages ------------------------------------------------------------------

    def _anthropic_blocks(self, reply: Reply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if reply.content is not None and (reply.kind == "text" or reply.content):
            blocks.append({"type": "text", "text": reply.content})
        for call, call_id in self._calls_with_ids(reply):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": call.name,
                    "input": call.arguments_dict(),
                }
            )
        return blocks

    @staticmethod
    def _anthropic_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
        return {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        }

    def _messages(self, reply: Reply, body: dict[str, Any]) -> _Rendered:
        prompt, completion, _ = self._usage(reply, body)
        payload = {
            "id": self._next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": reply.model,
            "content": self._anthropic_blocks(reply),
            "stop_reason": _anthropic_stop_reason(reply.finish_reason),
            "stop_sequence": None,
            "usage": self._anthropic_usage(prompt, completion),
        }
        return _json_response(200, payload)

    def _messages_stream(self, reply: Reply, body: dict[str, Any]) -> _Rendered:
        prompt, completion, _ = self._usage(reply, body)
        events: list[bytes] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append(_sse({"type": kind, **fields}, kind))

        message = {
            "id": self._next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": reply.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._anthropic_usage(prompt, 1),
        }
        emit("message_start", message=message)
        for index, block in enumerate(self._anthropic_blocks(reply)):
            if block["type"] == "text":
                emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
                if index == 0:
                    emit("ping")
                for piece in _pieces(block["text"]):
                    emit(
                        "content_block_delta",
                        index=index,
                        delta={"type": "text_delta", "text": piece},
                    )
            else:
                emit("content_block_start", index=index, content_block=dict(block, input={}))
                for fragment in _arg_fragments(json.dumps(block["input"])):
                    emit(
                        "content_block_delta",
                        index=index,
                        delta={"type": "input_json_delta", "partial_json": fragment},
                    )
            emit("content_block_stop", index=index)
        emit(
            "message_delta",
            delta={
                "stop_reason": _anthropic_stop_reason(reply.finish_reason),
                "stop_sequence": None,
            },
            usage={"output_tokens": completion},
        )
        emit("message_stop")
        return _sse_response(events)


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))
