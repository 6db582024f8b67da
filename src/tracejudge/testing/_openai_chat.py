"""OpenAI Chat Completions (``POST /v1/chat/completions``): text, parallel tool calls,
logprobs, and ``"stream": true`` SSE with ``stream_options.include_usage``."""

from __future__ import annotations

import time
from typing import Any

from tracejudge.testing._rendered import Rendered, json_response, sse, sse_response
from tracejudge.testing._renderer import Renderer, arg_fragments, estimate_usage, pieces
from tracejudge.testing._replies import Reply

__all__ = ["ChatCompletionsRenderer"]


class ChatCompletionsRenderer(Renderer):
    """Chat completions: one choice, tool calls as ``message.tool_calls``, ``Reply.logprobs``
    as ``choices[0].logprobs.content``.

    Streaming sends a role chunk, the text in a few pieces (one chunk per logprobs token when
    the tokens spell the text, each chunk carrying its token's logprobs), each tool call as a
    head chunk and argument fragments, a finish chunk, the usage chunk when the request asked
    for it, and ``[DONE]``.
    """

    route = "/chat/completions"

    def usage(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        """The ``usage`` object (estimated unless the reply overrides it)."""
        prompt, completion, total = estimate_usage(reply, body)
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

    def complete(self, reply: Reply, body: dict[str, Any]) -> Rendered:
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
                for call, call_id in self.calls_with_ids(reply)
            ]
        payload = {
            "id": self.next_id("chatcmpl-"),
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
            "usage": self.usage(reply, body),
            "service_tier": "default",
            "system_fingerprint": None,
        }
        return json_response(200, payload)

    def stream(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        completion_id = self.next_id("chatcmpl-")
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
            return sse(data)

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        content = reply.content or ""
        tokens = [entry.get("token") for entry in reply.logprobs or []]
        if reply.logprobs and "".join(str(t) for t in tokens) == content:
            for entry in reply.logprobs:
                events.append(chunk({"content": entry["token"]}, logprobs={"content": [entry]}))
        else:
            for i, piece in enumerate(pieces(content)):
                logprobs = {"content": reply.logprobs} if reply.logprobs and i == 0 else None
                events.append(chunk({"content": piece}, logprobs=logprobs))
        for index, (call, call_id) in enumerate(self.calls_with_ids(reply)):
            head = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            events.append(chunk({"tool_calls": [head]}))
            for fragment in arg_fragments(call.arguments_json()):
                delta = {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
                events.append(chunk(delta))
        events.append(chunk({}, finish=reply.finish_reason))
        if include_usage:
            events.append(
                sse(
                    {
                        "id": completion_id,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": reply.model,
                        "service_tier": "default",
                        "system_fingerprint": None,
                        "choices": [],
                        "usage": self.usage(reply, body),
                    }
                )
            )
        events.append(sse("[DONE]"))
        return sse_response(events)
