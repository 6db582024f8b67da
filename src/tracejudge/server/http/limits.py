"""Limits per request and per caller: body size (413) and request rate (429).

The rate limit is a token bucket (`buckets.TokenBuckets`) per caller (per API key; per
client address when the server has no keys): `rate` requests a second on average, `burst` at once. A
refused request gets 429 with `Retry-After`, the whole seconds until a token is back,
which the OTLP exporters and the Composo clients honour.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracejudge.server.http.auth import OPEN_PATHS
from tracejudge.server.http.buckets import TokenBuckets
from tracejudge.server.http.errors import ApiError, BodyTooLargeError, error_response

__all__ = ["LimitsMiddleware"]


#: The answer to a refused request (the JSON error by default; the OTLP intake answers in
#: its request's encoding).
ErrorAnswer = Callable[[Scope, ApiError], ASGIApp]


def _json_answer(scope: Scope, error: ApiError) -> ASGIApp:
    return error_response(error)


class LimitsMiddleware:
    """413 for bodies over `max_body_bytes` (by Content-Length at once, else while the
    body is read), 429 past the caller's rate; each refusal as `answer` makes it."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        buckets: TokenBuckets,
        answer: ErrorAnswer = _json_answer,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.buckets = buckets
        self.answer = answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        caller = scope.get("state", {}).get("caller", "anonymous")
        wait = self.buckets.take(caller)
        if wait > 0:
            retry = str(max(1, math.ceil(wait)))
            error = ApiError(
                429,
                f"too many requests for this API key; retry in {retry} s (the server allows "
                f"{self.buckets.rate:g} requests a second, {self.buckets.burst} at once)",
                headers={"Retry-After": retry},
            )
            await self.answer(scope, error)(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = 0
                if length > self.max_body_bytes:
                    await self._refuse(scope, receive, send)
                    return
        limit = self.max_body_bytes
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLargeError(limit)
            return message

        await self.app(scope, counted, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.answer(scope, BodyTooLargeError(self.max_body_bytes))(scope, receive, send)
