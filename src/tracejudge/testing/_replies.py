"""The script's vocabulary: what a test queues (:class:`Reply`, :class:`ToolCall`) and what the
server records (:class:`RecordedRequest`).  Nothing here knows a wire format."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DEFAULT_MODEL",
    "RecordedRequest",
    "Reply",
    "ReplySource",
    "ToolCall",
    "token_logprobs",
]

DEFAULT_MODEL = "scripted-model"

_TOKEN_RE = re.compile(r"\d+|\w+|\s+|[^\w\s]")


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
