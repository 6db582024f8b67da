"""The server core: lifecycle, the reply script, recorded requests, delays, error and raw
replies, the in-flight counter and ids.  Wire formats live in the renderers."""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import ClassVar

from tracejudge.testing._anthropic_messages import MessagesRenderer
from tracejudge.testing._gemini import GenerateContentRenderer, StreamGenerateContentRenderer
from tracejudge.testing._loopback import LoopbackHTTPServer
from tracejudge.testing._openai_chat import ChatCompletionsRenderer
from tracejudge.testing._openai_responses import ResponsesRenderer
from tracejudge.testing._rendered import Rendered, json_response
from tracejudge.testing._renderer import Renderer, openai_error
from tracejudge.testing._replies import DEFAULT_MODEL, RecordedRequest, Reply, ReplySource

__all__ = ["RENDERERS", "ScriptedLLMServer"]

RENDERERS: tuple[type[Renderer], ...] = (
    ChatCompletionsRenderer,
    ResponsesRenderer,
    MessagesRenderer,
    GenerateContentRenderer,
    StreamGenerateContentRenderer,
)
"""The routes every server answers, one renderer per provider API."""

# OpenLLMetry keeps every Responses API response in a process-global dict keyed by
# response id, so response ids must not repeat across servers in one process.
#: The header marking a judge's question about the server's context (tracejudge.judges'
#: `_server_context.PROBE_HEADER`): such requests are kept in `probes`, never replied from
#: the queue.
PROBE_HEADER = "x-tracejudge-probe"

_PROCESS_WIDE_ID_PREFIXES = frozenset({"resp_"})
_PROCESS_WIDE_IDS: dict[str, Iterator[int]] = {}


class ScriptedLLMServer:
    """An OpenAI-, Anthropic- and Gemini-compatible HTTP server on 127.0.0.1 that replays scripted
    replies.

    Args:
        replies: Initial queue of :class:`Reply` objects (a plain string is
            ``Reply.text(string)``) or callables ``fn(request: RecordedRequest) -> Reply``
            (called when the request arrives).
        default: Reply (or callable) used when the queue is empty.  Without one, an empty
            queue answers HTTP 500 with a message naming the request.

    Use it as a context manager (starts and stops), or call :meth:`start` / :meth:`stop`.
    The queue is shared across endpoints and consumed first-in first-out as model calls
    arrive; ``GET /v1/models`` and unknown paths do not consume it.

    Each route is answered by one :class:`~tracejudge.testing._renderer.Renderer` from
    :attr:`renderers`, tried in order; a subclass can extend the tuple to serve more routes.
    """

    renderers: ClassVar[tuple[type[Renderer], ...]] = RENDERERS
    """The renderer classes, first match wins (see the package docstring to add one)."""

    def __init__(
        self,
        replies: Iterable[ReplySource | str] = (),
        default: ReplySource | str | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ReplySource] = deque()
        self._requests: list[RecordedRequest] = []
        self._probes: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._counters: dict[str, Iterator[int]] = {}
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self.default: ReplySource | None = None if default is None else self._check(default)
        self._renderers = [renderer(self._next_id) for renderer in self.renderers]
        self.add(*replies)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread.  Returns ``self``."""
        with self._lock:
            if self._httpd is not None:
                return self
            self._stopping.clear()
            httpd = LoopbackHTTPServer(self._dispatch, self._track_connection)
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
    def probes(self) -> list[RecordedRequest]:
        """A copy of the judge's questions about this server's context (requests marked
        with the `x-tracejudge-probe` header), kept apart from `requests`: they are
        answered as a server that cannot say (404, or the models listing)."""
        with self._lock:
            return list(self._probes)

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
        return reply

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
            self._probes.clear()
            self._max_in_flight = self._in_flight
            self._counters.clear()

    # -- internals ---------------------------------------------------------------------------

    def _track_connection(self, conn: socket.socket, opened: bool) -> None:
        with self._lock:
            if opened:
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

    def _dispatch(self, request: RecordedRequest) -> Rendered:
        if PROBE_HEADER in request.headers:
            with self._lock:
                self._probes.append(request)
            if request.method == "GET" and request.path.split("?", 1)[0].endswith("/models"):
                return _models()
            return openai_error(404, "ScriptedLLMServer: no context to tell", None)
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            return self._respond(request)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _respond(self, request: RecordedRequest) -> Rendered:
        path = request.path.split("?", 1)[0].rstrip("/")
        if request.method == "GET" and path.endswith("/models"):
            return _models()
        renderer = next((r for r in self._renderers if r.matches(request.method, path)), None)
        if renderer is None:
            message = f"ScriptedLLMServer: no route for {request.method} {path}"
            return openai_error(404, message, None)

        with self._lock:
            source = self._queue.popleft() if self._queue else self.default
        if source is None:
            message = f"ScriptedLLMServer: no scripted reply left for POST {path}"
            return renderer.error(500, message, "server_error")
        if isinstance(source, Reply):
            reply = source
        else:
            try:
                reply = source(request)
            except Exception as exc:  # surface the failure to the test through the client
                message = f"ScriptedLLMServer: reply callable raised {exc!r}"
                return renderer.error(500, message, "server_error")
            if not isinstance(reply, Reply):
                message = f"ScriptedLLMServer: reply callable returned {type(reply).__name__}"
                return renderer.error(500, message, "server_error")

        if reply.delay > 0:
            self._stopping.wait(reply.delay)
        if reply.kind == "raw":
            return _raw(reply)
        if reply.kind == "error":
            extra = []
            if reply.retry_after is not None:
                extra.append(("Retry-After", _format_seconds(reply.retry_after)))
            return renderer.error(reply.status, reply.message, reply.error_type, extra)
        body = request.json if isinstance(request.json, dict) else {}
        return renderer.render(reply, body)


def _models() -> Rendered:
    """``GET /v1/models``: a one-entry list (OpenAI and Anthropic fields both present)."""
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
    return json_response(200, payload)


def _raw(reply: Reply) -> Rendered:
    """A ``Reply.raw``: its status, headers and body as given (JSON content type by default)."""
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
    return Rendered(reply.status, headers, data)


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))
