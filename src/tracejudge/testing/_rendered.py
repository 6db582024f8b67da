"""A rendered HTTP response, and the two shapes renderers build: a JSON body or an SSE stream."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Rendered", "json_response", "sse", "sse_response"]


@dataclass
class Rendered:
    """A fully rendered HTTP response: either a body or a list of SSE events.

    Attributes:
        status: The HTTP status code.
        headers: Response headers in order; the server adds ``Content-Length`` (or
            ``Transfer-Encoding: chunked`` for events) and ``Connection`` unless given.
        body: The body of a plain response.
        events: The encoded SSE events of a streaming response (see :func:`sse`), each sent
            as one HTTP chunk; ``None`` for a plain response.
    """

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    events: list[bytes] | None = None


def json_response(
    status: int, payload: Any, extra_headers: list[tuple[str, str]] | None = None
) -> Rendered:
    """A JSON body with ``Content-Type: application/json`` followed by ``extra_headers``."""
    headers = [("Content-Type", "application/json")]
    headers.extend(extra_headers or [])
    return Rendered(status, headers, json.dumps(payload).encode("utf-8"))


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event: ``event: <event>`` (when given) and ``data: <json or string>``."""
    text = data if isinstance(data, str) else json.dumps(data)
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {text}\n\n".encode()


def sse_response(events: list[bytes]) -> Rendered:
    """A 200 ``text/event-stream`` response carrying ``events`` in order."""
    return Rendered(
        200,
        [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache")],
        events=events,
    )
