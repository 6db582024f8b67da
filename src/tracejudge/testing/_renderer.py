"""The one base every provider renderer extends, and the helpers they share.

A :class:`Renderer` turns a scripted :class:`Reply` into one provider API's wire format for one
route.  The server core does everything else (queue, recording, delays, error and raw replies,
in-flight counting, ids), so a renderer is only the provider's JSON and SSE shapes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from tracejudge.testing._rendered import Rendered, json_response
from tracejudge.testing._replies import Reply, ToolCall

__all__ = [
    "NextId",
    "Renderer",
    "arg_fragments",
    "default_error_type",
    "estimate_usage",
    "openai_error",
    "pieces",
]

NextId = Callable[[str], str]
"""``next_id(prefix)`` returns ``prefix`` plus the next number of that prefix's counter."""

_STREAM_PIECE_RE = re.compile(r"\s*\S+\s*|\s+")

_ERROR_TYPES = {
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


class Renderer:
    """Renders scripted replies for one route of one provider API.

    Subclasses set :attr:`route` (and :attr:`method` when not ``POST``), implement
    :meth:`complete`, implement :meth:`stream` when the API streams, and override :meth:`error`
    when the API's error body is not OpenAI's.  The server builds one instance per server.

    Args:
        next_id: The server's id source (see :data:`NextId`); ids reset with the server.
    """

    method: ClassVar[str] = "POST"
    route: ClassVar[str] = ""
    """The path suffix served, e.g. ``"/chat/completions"`` (any prefix such as ``/v1``)."""

    def __init__(self, next_id: NextId) -> None:
        self.next_id = next_id

    def matches(self, method: str, path: str) -> bool:
        """Whether this renderer answers ``method`` on ``path`` (no query, no trailing slash)."""
        return method == self.method and path.endswith(self.route)

    def render(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        """Render a text or tool-call reply: :meth:`stream` when the body asks for
        ``"stream": true``, else :meth:`complete`."""
        return self.stream(reply, body) if body.get("stream") else self.complete(reply, body)

    def complete(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        """The whole answer as one JSON response."""
        raise NotImplementedError(f"{type(self).__name__} must implement complete()")

    def stream(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        """The answer as server-sent events.  By default: a 400 saying the route does not
        stream."""
        message = f"ScriptedLLMServer: {self.route} does not stream"
        return self.error(400, message, None)

    def error(
        self,
        status: int,
        message: str,
        error_type: str | None,
        extra_headers: list[tuple[str, str]] | None = None,
    ) -> Rendered:
        """An API error body for this API; OpenAI's ``{"error": {...}}`` by default."""
        return openai_error(status, message, error_type, extra_headers)

    def calls_with_ids(self, reply: Reply) -> list[tuple[ToolCall, str]]:
        """The reply's tool calls with their ids; a call without one gets ``call_<n>``."""
        return [(call, call.id or self.next_id("call_")) for call in reply.calls]


def default_error_type(status: int) -> str:
    """The provider error ``type`` for an HTTP status (shared by OpenAI and Anthropic)."""
    if status in _ERROR_TYPES:
        return _ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def openai_error(
    status: int,
    message: str,
    error_type: str | None,
    extra_headers: list[tuple[str, str]] | None = None,
) -> Rendered:
    """An OpenAI error response: ``{"error": {"message", "type", "param", "code"}}``."""
    code = _OPENAI_ERROR_CODES.get(status, error_type)
    etype = error_type or default_error_type(status)
    payload = {"error": {"message": message, "type": etype, "param": None, "code": code}}
    return json_response(status, payload, extra_headers)


def _text_chars(obj: Any) -> int:
    """Count characters of textual content in a request's messages / input."""
    if isinstance(obj, str):
        return len(obj)
    if isinstance(obj, list):
        return sum(_text_chars(item) for item in obj)
    if isinstance(obj, dict):
        return sum(_text_chars(v) for k, v in obj.items() if k not in _SKIP_CHAR_KEYS)
    return 0


def estimate_usage(reply: Reply, body: dict[str, Any]) -> tuple[int, int, int]:
    """``(prompt, completion, total)`` tokens: the reply's ``usage`` override where given,
    else about four characters a token of the request's text and the reply's output."""
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
    completion = int(override.get("completion_tokens", override.get("output_tokens", completion)))
    total = int(override.get("total_tokens", prompt + completion))
    return prompt, completion, total


def pieces(text: str, max_pieces: int = 8) -> list[str]:
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


def arg_fragments(arguments: str, n: int = 3) -> list[str]:
    """Split a JSON argument string into ``n`` roughly equal fragments."""
    if not arguments:
        return []
    size = max(1, -(-len(arguments) // n))
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]
