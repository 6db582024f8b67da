"""One POST with retries, backoff and a deadline, and HTTP failures turned into typed errors.

Shared by every backend, so retry and error behaviour is the same whichever model judges.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from tracejudge._http._secrets import redact
from tracejudge.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ComposoError,
    RateLimitError,
)
from tracejudge.errors import TimeoutError as RequestTimeoutError

__all__ = [
    "Endpoint",
    "MODEL_NOT_FOUND_HINT",
    "send_with_retries",
    "error_from_response",
    "error_message",
    "retry_after_seconds",
    "RETRYABLE",
]

#: The largest answer read by default: a judgement or an evaluation is a few KB, and a
#: server that sends more (a runaway generation, a misconfigured proxy) must not exhaust
#: memory. Callers may raise it (judges: `max_response_bytes=`).
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024

#: Statuses worth another try: request timeout, conflict (lock contention at OpenAI),
#: rate limit, and every server error (Anthropic's 529 "overloaded" among them).
RETRYABLE = frozenset({408, 409, 429})

_T = TypeVar("_T")


def _retryable(status: int) -> bool:
    return status in RETRYABLE or status >= 500


#: What a 404 from a model API usually means.
MODEL_NOT_FOUND_HINT = (
    "check the model name and that base_url is the API root (for OpenAI-compatible servers "
    "it usually ends in /v1)"
)


@dataclass(frozen=True)
class Endpoint:
    """What error messages need to say which service failed and what to do about it.

    `label` names the service ("judge openai:gpt-4.1-mini", "POST /api/v1/evals/reward on
    the server"); `model` the model asked for ("" when the service is not a model API);
    `key_hint` what to check on 401/403, `not_found_hint` on 404. `secrets` (the key sent)
    are redacted from any text of the server's that an error repeats.
    """

    label: str
    model: str
    base_url: str
    key_hint: str
    not_found_hint: str = MODEL_NOT_FOUND_HINT
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def where(self) -> str:
        return f"{self.label} at {self.base_url}"


def error_message(response: httpx.Response) -> str:
    """The provider's own error message, from whichever shape its error body has."""
    try:
        data = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:500] or response.reason_phrase or "no message"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
        for key in ("message", "detail"):
            if data.get(key):
                value = data[key]
                return value if isinstance(value, str) else json.dumps(value)[:500]
    return json.dumps(data)[:500]


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """The wait a response asks for: `retry-after-ms`, or `Retry-After` in seconds or as an
    HTTP date. None when it asks for none (or says something unreadable)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from_response(
    response: httpx.Response, endpoint: Endpoint, *, attempts: int = 1
) -> ComposoError:
    """The typed error for a failed HTTP answer, with a message that says what to do."""
    status = response.status_code
    # A server may echo the request's key back in its error: never repeat it.
    message = redact(error_message(response), endpoint.secrets)
    body = redact(response.text[:2000], endpoint.secrets)
    where = endpoint.where()
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if status in (401, 403):
        return AuthenticationError(
            f"{where} refused the request (HTTP {status}: {message}); {endpoint.key_hint}",
            status,
            body,
        )
    if status == 404:
        what = (
            f"model {endpoint.model!r} was not found at {endpoint.base_url}"
            if endpoint.model
            else f"{where} found nothing there"
        )
        return BadRequestError(
            f"{what} (HTTP 404: {message}); {endpoint.not_found_hint}", status, body
        )
    if status == 429:
        return RateLimitError(
            f"{where} kept rate-limiting{tries} (HTTP 429: {message}); lower "
            "max_concurrency, or raise num_retries or timeout",
            status,
            body,
        )
    if status == 408:
        return RequestTimeoutError(
            f"{where} timed out the request{tries} (HTTP 408: {message}); raise timeout",
            status,
            body,
        )
    if status >= 500 or status == 409:
        return APIError(
            f"{where} failed{tries} (HTTP {status}: {message}); it may be down or "
            "overloaded: try again later or raise num_retries",
            status,
            body,
        )
    return BadRequestError(f"{where} rejected the request (HTTP {status}: {message})", status, body)


async def _exchange(
    client: httpx.AsyncClient, request: httpx.Request, endpoint: Endpoint, limit: int
) -> httpx.Response:
    """Send `request` and read its answer, at most `limit` bytes of it (decoded)."""
    response = await client.send(request, stream=True)
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(endpoint, response.status_code, limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise _too_large(endpoint, response.status_code, limit)
            chunks.append(chunk)
    finally:
        await response.aclose()
    # The body read, as a plain response (decoded already: no content-encoding left).
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code,
        headers=headers,
        content=b"".join(chunks),
        request=request,
        extensions=response.extensions,
    )


if sys.version_info >= (3, 11):

    async def _bounded(work: Coroutine[Any, Any, _T], seconds: float) -> _T:
        """`await work`, raising TimeoutError after `seconds`. Runs in the caller's task:
        `asyncio.wait_for` would start a task per request (a measurable share of a
        request's CPU cost when thousands are in flight)."""
        async with asyncio.timeout(seconds):
            return await work

else:  # pragma: no cover - Python 3.10 has no asyncio.timeout

    async def _bounded(work: Coroutine[Any, Any, _T], seconds: float) -> _T:
        """`await work`, raising TimeoutError after `seconds`."""
        return await asyncio.wait_for(work, seconds)


def _too_large(endpoint: Endpoint, status: int, limit: int) -> APIError:
    return APIError(
        f"{endpoint.where()} answered with more than {limit:,} bytes (HTTP {status}); not "
        "read past that. If the answer is meant to be that long, raise max_response_bytes",
        status,
    )


async def send_with_retries(
    client: httpx.AsyncClient,
    url: httpx.URL | str,
    *,
    method: str = "POST",
    body: dict[str, Any] | None,
    headers: dict[str, str],
    endpoint: Endpoint,
    deadline: float,
    timeout: float,
    request_timeout: float,
    num_retries: int,
    backoff_base: float,
    backoff_max: float,
    on_attempt: Callable[[], None] | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    give_back: Callable[[httpx.Response], bool] | None = None,
) -> httpx.Response:
    """Send `body` until an answer that is not worth retrying comes back, and return it.

    Retries 408/409/429/5xx, timeouts and connection errors `num_retries` times with
    exponential backoff and full jitter, waiting what `Retry-After` asks instead when it is
    given. Never waits past `deadline` (an event-loop time). Raises TimeoutError when the
    deadline runs out, RateLimitError or APIError when the retries do. Other answers (2xx,
    400, 401, 404, ...) are returned for the caller to read (`error_from_response` makes
    their errors). An answer whose body is longer than `max_response_bytes` (decoded) is
    not read past that: APIError, not retried. A retryable answer that `give_back` accepts
    is returned at once, not retried (a 500 that says what the caller can do without).
    """
    loop = asyncio.get_running_loop()
    attempt = 0
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise RequestTimeoutError(
                f"{endpoint.where()} gave no usable answer within the {timeout:g}s timeout; "
                "raise timeout, or check that the server is up"
            )
        if on_attempt is not None:
            on_attempt()
        retry_after: float | None = None
        try:
            # httpx's timeout bounds each read or write, not the whole exchange; the
            # bound on the exchange stops a slowly trickling answer outliving the deadline.
            request = client.build_request(
                method,
                url,
                json=body,
                headers=headers,
                timeout=httpx.Timeout(min(request_timeout, remaining)),
            )
            response = await _bounded(
                _exchange(client, request, endpoint, max_response_bytes),
                min(request_timeout, remaining),
            )
        except (asyncio.TimeoutError, httpx.TimeoutException):
            failure: ComposoError = RequestTimeoutError(
                f"{endpoint.where()} did not answer within "
                f"{min(request_timeout, remaining):.3g}s"
                + (f" (attempt {attempt + 1})" if attempt else "")
                + "; raise timeout, or check that the server is up"
            )
        except httpx.TransportError as exc:
            failure = APIError(
                f"could not reach {endpoint.where()}: {type(exc).__name__}: "
                f"{redact(str(exc), endpoint.secrets)}; check base_url and that the server "
                "is running"
            )
        else:
            if not _retryable(response.status_code):
                return response
            if give_back is not None and give_back(response):
                return response
            failure = error_from_response(response, endpoint, attempts=attempt + 1)
            retry_after = retry_after_seconds(response.headers)
        if attempt >= num_retries:
            raise failure
        remaining = deadline - loop.time()
        if retry_after is not None:
            if retry_after >= remaining:
                # Waiting as asked would outlive the deadline: fail now rather than later.
                failure.message = (
                    f"{failure.message} (the server asked to retry after {retry_after:.3g}s, "
                    f"more than the {max(remaining, 0.0):.3g}s left of the {timeout:g}s timeout)"
                )
                failure.args = (failure.message,)
                raise failure
            delay = retry_after
        else:
            delay = random.uniform(0.0, min(backoff_max, backoff_base * (2**attempt)))
        await asyncio.sleep(max(0.0, min(delay, remaining)))
        attempt += 1
