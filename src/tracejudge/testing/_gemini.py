"""Gemini API (``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse``): text and ``functionCall`` parts, ``usageMetadata``, the
finish reason, Google's error body, and SSE where every event is a whole
``GenerateContentResponse`` holding that chunk's parts.

The same paths under Vertex AI (``.../publishers/google/models/{model}:generateContent``) match
too.  The real API sends no ``functionCall.id`` (clients such as ADK make their own), so an id
is sent only when the script's :class:`ToolCall` names one.
"""

from __future__ import annotations

from typing import Any

from tracejudge.testing._rendered import Rendered, json_response, sse, sse_response
from tracejudge.testing._renderer import Renderer, estimate_usage, pieces
from tracejudge.testing._replies import Reply

__all__ = ["GenerateContentRenderer", "StreamGenerateContentRenderer"]

_FINISH_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",  # Gemini ends a function-calling turn with STOP
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def finish_reason(reason: str) -> str:
    """Gemini's ``finishReason`` for a chat-completions finish reason (others upper-cased)."""
    return _FINISH_REASONS.get(reason, reason.upper())


class GenerateContentRenderer(Renderer):
    """``:generateContent``: one candidate whose ``content.parts`` are the reply's text and
    then one ``functionCall`` part per tool call (``args`` as an object)."""

    route = ":generateContent"

    def render(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        """The path, not the body, says whether Gemini streams."""
        return self.complete(reply, body)

    def error(
        self,
        status: int,
        message: str,
        error_type: str | None,
        extra_headers: list[tuple[str, str]] | None = None,
    ) -> Rendered:
        """Google's error body: ``{"error": {"code", "message", "status"}}``."""
        code = error_type or _STATUSES.get(status, "INTERNAL" if status >= 500 else "UNKNOWN")
        payload = {"error": {"code": status, "message": message, "status": code}}
        return json_response(status, payload, extra_headers)

    def parts(self, reply: Reply) -> list[dict[str, Any]]:
        """The candidate's parts: text when the reply has some, then the function calls."""
        parts: list[dict[str, Any]] = []
        if reply.content is not None and (reply.kind == "text" or reply.content):
            parts.append({"text": reply.content})
        for call in reply.calls:
            function_call: dict[str, Any] = {"name": call.name, "args": call.arguments_dict()}
            if call.id is not None:
                function_call["id"] = call.id
            parts.append({"functionCall": function_call})
        return parts

    @staticmethod
    def usage(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        """``usageMetadata``, estimated from ``contents`` / ``systemInstruction`` unless the
        reply overrides it."""
        prompt_body = {"messages": body.get("contents"), "system": body.get("systemInstruction")}
        prompt, completion, total = estimate_usage(reply, prompt_body)
        return {
            "promptTokenCount": prompt,
            "candidatesTokenCount": completion,
            "totalTokenCount": total,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        }

    def response(
        self,
        reply: Reply,
        parts: list[dict[str, Any]],
        response_id: str,
        *,
        finish: str | None,
        usage: dict[str, Any],
    ) -> dict[str, Any]:
        """One ``GenerateContentResponse`` (a whole answer or one streamed chunk)."""
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": reply.model,
            "responseId": response_id,
        }

    def complete(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        payload = self.response(
            reply,
            self.parts(reply),
            self.next_id("gemini-resp-"),
            finish=finish_reason(reply.finish_reason),
            usage=self.usage(reply, body),
        )
        return json_response(200, payload)


class StreamGenerateContentRenderer(GenerateContentRenderer):
    """``:streamGenerateContent?alt=sse``: the text in a few chunks, then the function calls
    whole in one chunk (Gemini does not split arguments), the last chunk carrying the finish
    reason and the full ``usageMetadata`` (earlier chunks carry the prompt count only)."""

    route = ":streamGenerateContent"

    def render(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        return self.stream(reply, body)

    def stream(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        response_id = self.next_id("gemini-resp-")
        usage = self.usage(reply, body)
        partial = {"promptTokenCount": usage["promptTokenCount"]}
        parts = self.parts(reply)
        chunks: list[list[dict[str, Any]]] = []
        for part in parts:
            if "text" in part:
                chunks.extend([{"text": piece}] for piece in pieces(part["text"]) or [""])
        calls = [part for part in parts if "functionCall" in part]
        if calls:
            chunks.append(calls)
        if not chunks:
            chunks.append([{"text": ""}])
        events = []
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            data = self.response(
                reply,
                chunk,
                response_id,
                finish=finish_reason(reply.finish_reason) if last else None,
                usage=usage if last else partial,
            )
            events.append(sse(data))
        return sse_response(events)
