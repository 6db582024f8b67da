"""OpenAI Responses API (``POST /v1/responses``): a message item and function-call items, and
``"stream": true`` SSE with the API's typed, numbered events."""

from __future__ import annotations

import itertools
import time
from typing import Any

from tracejudge.testing._rendered import Rendered, json_response, sse, sse_response
from tracejudge.testing._renderer import Renderer, arg_fragments, estimate_usage, pieces
from tracejudge.testing._replies import Reply

__all__ = ["ResponsesRenderer"]


class ResponsesRenderer(Renderer):
    """Responses API: the reply's text as one ``message`` output item, each tool call as a
    ``function_call`` item.  A text reply with ``finish_reason="length"`` is an
    ``incomplete`` response (``max_output_tokens``).

    Response ids (``resp_<n>``) count process-wide rather than per server (see the server's
    id source), because OpenLLMetry keeps every response in a process-global dict by id.
    """

    route = "/responses"

    def output_items(self, reply: Reply) -> list[dict[str, Any]]:
        """The ``output`` items: a message when the reply has text, then one per tool call."""
        items: list[dict[str, Any]] = []
        if reply.content is not None and (reply.kind == "text" or reply.content):
            items.append(
                {
                    "type": "message",
                    "id": self.next_id("msg_"),
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
        for call, call_id in self.calls_with_ids(reply):
            items.append(
                {
                    "type": "function_call",
                    "id": self.next_id("fc_"),
                    "call_id": call_id,
                    "name": call.name,
                    "arguments": call.arguments_json(),
                    "status": "completed",
                }
            )
        return items

    def response_object(
        self, reply: Reply, body: dict[str, Any], response_id: str, output: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The final ``response`` object, echoing the request's settings as the API does."""
        prompt, completion, total = estimate_usage(reply, body)
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

    def complete(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        response_id = self.next_id("resp_")
        output = self.output_items(reply)
        return json_response(200, self.response_object(reply, body, response_id, output))

    def stream(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        response_id = self.next_id("resp_")
        output = self.output_items(reply)
        final = self.response_object(reply, body, response_id, output)
        seq = itertools.count()
        events: list[bytes] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append(sse({"type": kind, "sequence_number": next(seq), **fields}, kind))

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
                for piece in pieces(text):
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
                for fragment in arg_fragments(item["arguments"]):
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
        return sse_response(events)
