"""Anthropic Messages API (``POST /v1/messages``): text and ``tool_use`` blocks, Anthropic's
error body, and ``"stream": true`` SSE with the API's typed events."""

from __future__ import annotations

import json
from typing import Any

from tracejudge.testing._rendered import Rendered, json_response, sse, sse_response
from tracejudge.testing._renderer import (
    Renderer,
    arg_fragments,
    default_error_type,
    estimate_usage,
    pieces,
)
from tracejudge.testing._replies import Reply

__all__ = ["MessagesRenderer"]

_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


def stop_reason(finish_reason: str) -> str:
    """Anthropic's ``stop_reason`` for a chat-completions finish reason (others pass as is)."""
    return _STOP_REASONS.get(finish_reason, finish_reason)


class MessagesRenderer(Renderer):
    """Messages API: the reply's text as a ``text`` block, each tool call as a ``tool_use``
    block whose ``input`` is the arguments as a dict (see :meth:`ToolCall.arguments_dict`)."""

    route = "/messages"

    def error(
        self,
        status: int,
        message: str,
        error_type: str | None,
        extra_headers: list[tuple[str, str]] | None = None,
    ) -> Rendered:
        """Anthropic's error body: ``{"type": "error", "error": {"type", "message"}}``."""
        etype = error_type or default_error_type(status)
        payload = {"type": "error", "error": {"type": etype, "message": message}}
        return json_response(status, payload, extra_headers)

    def blocks(self, reply: Reply) -> list[dict[str, Any]]:
        """The ``content`` blocks: text when the reply has some, then one per tool call."""
        blocks: list[dict[str, Any]] = []
        if reply.content is not None and (reply.kind == "text" or reply.content):
            blocks.append({"type": "text", "text": reply.content})
        for call, call_id in self.calls_with_ids(reply):
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
    def usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
        """The ``usage`` object, no cache tokens."""
        return {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        }

    def complete(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        prompt, completion, _ = estimate_usage(reply, body)
        payload = {
            "id": self.next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": reply.model,
            "content": self.blocks(reply),
            "stop_reason": stop_reason(reply.finish_reason),
            "stop_sequence": None,
            "usage": self.usage(prompt, completion),
        }
        return json_response(200, payload)

    def stream(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        prompt, completion, _ = estimate_usage(reply, body)
        events: list[bytes] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append(sse({"type": kind, **fields}, kind))

        message: dict[str, Any] = {
            "id": self.next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": reply.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self.usage(prompt, 1),
        }
        emit("message_start", message=message)
        for index, block in enumerate(self.blocks(reply)):
            if block["type"] == "text":
                emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
                if index == 0:
                    emit("ping")
                for piece in pieces(block["text"]):
                    emit(
                        "content_block_delta",
                        index=index,
                        delta={"type": "text_delta", "text": piece},
                    )
            else:
                emit("content_block_start", index=index, content_block=dict(block, input={}))
                for fragment in arg_fragments(json.dumps(block["input"])):
                    emit(
                        "content_block_delta",
                        index=index,
                        delta={"type": "input_json_delta", "partial_json": fragment},
                    )
            emit("content_block_stop", index=index)
        emit(
            "message_delta",
            delta={
                "stop_reason": stop_reason(reply.finish_reason),
                "stop_sequence": None,
            },
            usage={"output_tokens": completion},
        )
        emit("message_stop")
        return sse_response(events)
