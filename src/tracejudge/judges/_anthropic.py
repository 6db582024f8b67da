"""The Anthropic Messages API backend, spoken over httpx (not the `anthropic` package, so the
judge's calls never appear among the traced agent's spans)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx

from tracejudge import _env
from tracejudge._http import split_credentials
from tracejudge.errors import APIError, ConfigurationError
from tracejudge.judges._backend import (
    HTTPJudge,
    join_url,
    requires_key,
    token_count,
)
from tracejudge.judges._budget import NotGiven
from tracejudge.judges._exchange import Answer, Ask, AskedCall
from tracejudge.judges._options import JudgeKeywords, JudgeOptions
from tracejudge.judges._prompt import message_text

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AnthropicJudge", "ANTHROPIC_VERSION", "ANTHROPIC_BASE_URL", "ANTHROPIC_KEY_ENV"]

#: The `anthropic-version` header sent unless another is given.
ANTHROPIC_VERSION = "2023-06-01"
#: Where the API lives unless `base_url` or ANTHROPIC_BASE_URL says otherwise.
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
#: The variable the API key is read from.
ANTHROPIC_KEY_ENV = _env.ANTHROPIC_API_KEY
#: The reply bound unless `max_tokens` is given (the Messages API needs one).
_DEFAULT_MAX_TOKENS = 2048


class AnthropicJudge(HTTPJudge):
    """A judge served by Anthropic's Messages API (`POST /v1/messages`).

    `base_url` defaults to `ANTHROPIC_BASE_URL`, then api.anthropic.com; `api_key` to
    `ANTHROPIC_API_KEY` (sent as `x-api-key`). The API gives no logprobs and no
    response_format, so the reply's shape rests on the prompt, the tolerant parser and the
    one corrective re-ask. The data block of every judgement (and, while exploring, the
    latest tool result) carries `cache_control`, so the criteria of one agent read it from
    Anthropic's prompt cache. The other options mean what they mean for
    `OpenAICompatibleJudge`; `max_tokens` is required by the API and defaults to 2048.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        anthropic_version: str = ANTHROPIC_VERSION,
        options: JudgeOptions | None = None,
        **keywords: Unpack[JudgeKeywords],
    ) -> None:
        """`options` (a `JudgeOptions`) whole, and any of its fields as a keyword of its
        own (over `options`); `max_tokens` not given: 2048 (the Messages API needs one)."""
        chosen = JudgeOptions.given(options, keywords)
        resolved_url = base_url or _env.read(_env.ANTHROPIC_BASE_URL) or ANTHROPIC_BASE_URL
        # A key written into the URL is sent as the x-api-key header, never in the URL.
        resolved_url, url_key = split_credentials(resolved_url)
        resolved_key = api_key or url_key or _env.read(ANTHROPIC_KEY_ENV)
        if resolved_key is None and requires_key(resolved_url):
            raise ConfigurationError(
                f"judge anthropic:{model} needs an API key: set ANTHROPIC_API_KEY or pass "
                "api_key=..."
            )
        super().__init__(
            model,
            name=f"anthropic:{model}",
            base_url=resolved_url,
            api_key=resolved_key,
            key_env=ANTHROPIC_KEY_ENV,
            options=chosen,
            max_tokens=_DEFAULT_MAX_TOKENS
            if isinstance(chosen.max_tokens, NotGiven)
            else chosen.max_tokens,
        )
        self.anthropic_version = anthropic_version
        # Accept the API root with or without /v1: both are written in the wild.
        path = httpx.URL(resolved_url).path.rstrip("/")
        self._messages_url = join_url(
            resolved_url, "messages" if path.endswith("/v1") else "v1/messages"
        )

    def _url(self) -> httpx.URL:
        return self._messages_url

    def _headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "anthropic-version": self.anthropic_version,
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key
        headers.update(self.extra_headers)
        return headers

    def _body(
        self, messages: Sequence[dict[str, Any]], ask: Ask, features: dict[str, Any]
    ) -> dict[str, Any]:
        # The system prompt is a top-level field in this API, not a message.
        system = "\n\n".join(message_text(m) for m in messages if m["role"] == "system")
        wired = _messages([m for m in messages if m["role"] != "system"])
        if ask.tools and wired:
            # An exploring conversation grows by a read each round: cache up to the latest.
            _mark_cacheable(wired[-1])
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system,
            "messages": wired,
        }
        if ask.tools:
            body["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": dict(tool.parameters),
                }
                for tool in ask.tools
            ]
            if ask.final:
                body["tool_choice"] = {"type": "none"}
        if features.get("temperature") and self.temperature is not None:
            body["temperature"] = self.temperature
        body.update(self.extra_body)
        return body

    def _read(self, data: Any) -> Answer:
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            detail = ""
            if isinstance(data, dict) and data.get("error"):
                detail = f": {data['error']}"
            raise APIError(
                f"{self._endpoint.where()} answered without a message{detail}; check that "
                "base_url points at the Anthropic API",
                200,
                str(data)[:2000],
            )
        text = "".join(
            block.get("text", "")
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text"
        )
        calls = [
            AskedCall(
                id=str(block.get("id", f"toolu_{index}")),
                name=block["name"],
                arguments=block["input"] if isinstance(block.get("input"), dict) else {},
            )
            for index, block in enumerate(blocks)
            if isinstance(block, dict)
            and block.get("type") == "tool_use"
            and isinstance(block.get("name"), str)
        ]
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        read = token_count(usage.get("cache_read_input_tokens"))
        written = token_count(usage.get("cache_creation_input_tokens"))
        # Cached prompt tokens are input tokens too; Anthropic reports them apart.
        input_tokens = token_count(usage.get("input_tokens")) + read + written
        output_tokens = token_count(usage.get("output_tokens"))
        stop = data.get("stop_reason")
        return Answer(
            text=text,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
            cached_input_tokens=read,
            cache_write_tokens=written,
            tool_calls=calls,
            finish_reason=stop if isinstance(stop, str) else None,
        )


_CACHE = {"type": "ephemeral"}


def _mark_cacheable(message: dict[str, Any]) -> None:
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content, "cache_control": _CACHE}]
    elif isinstance(content, list) and content:
        content[-1] = {**content[-1], "cache_control": _CACHE}


def _messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages (see `_exchange`) as the Messages API takes them: text parts as blocks,
    the cacheable one with `cache_control`; tool calls as `tool_use` blocks; the results
    of one round as `tool_result` blocks of one user message."""
    wired: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message_text(message),
            }
            last = wired[-1] if wired else None
            if (
                last is not None
                and last["role"] == "user"
                and isinstance(last["content"], list)
                and all(b.get("type") == "tool_result" for b in last["content"])
            ):
                last["content"].append(block)
            else:
                wired.append({"role": "user", "content": [block]})
            continue
        content = message.get("content")
        if role == "assistant" and message.get("tool_calls"):
            blocks: list[dict[str, Any]] = []
            if message_text(message):
                blocks.append({"type": "text", "text": message_text(message)})
            for call in message["tool_calls"]:
                arguments = call["arguments"]
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["name"],
                        "input": arguments if isinstance(arguments, dict) else {"_raw": arguments},
                    }
                )
            wired.append({"role": "assistant", "content": blocks})
        elif isinstance(content, list):
            blocks = []
            for part in content:
                block = {"type": "text", "text": str(part.get("text", ""))}
                if part.get("cache"):
                    block["cache_control"] = _CACHE
                blocks.append(block)
            wired.append({"role": role, "content": blocks})
        else:
            wired.append({"role": role, "content": message_text(message)})
    return wired
