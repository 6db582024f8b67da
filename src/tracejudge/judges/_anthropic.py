"""The Anthropic Messages API backend, spoken over httpx (not the `anthropic` package, so the
judge's calls never appear among the traced agent's spans)."""

from __future__ import annotations

from typing import Any

import httpx

from tracejudge import _env
from tracejudge._http import DEFAULT_MAX_RESPONSE_BYTES, split_credentials
from tracejudge.errors import APIError, ConfigurationError
from tracejudge.judges._backend import (
    Answer,
    HTTPJudge,
    join_url,
    requires_key,
    token_count,
)
from tracejudge.judges._cache import CacheOption
from tracejudge.judges._types import JudgeRequest

__all__ = ["AnthropicJudge", "ANTHROPIC_VERSION", "ANTHROPIC_BASE_URL", "ANTHROPIC_KEY_ENV"]

#: The `anthropic-version` header sent unless another is given.
ANTHROPIC_VERSION = "2023-06-01"
#: Where the API lives unless `base_url` or ANTHROPIC_BASE_URL says otherwise.
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
#: The variable the API key is read from.
ANTHROPIC_KEY_ENV = _env.ANTHROPIC_API_KEY


class AnthropicJudge(HTTPJudge):
    """A judge served by Anthropic's Messages API (`POST /v1/messages`).

    `base_url` defaults to `ANTHROPIC_BASE_URL`, then api.anthropic.com; `api_key` to
    `ANTHROPIC_API_KEY` (sent as `x-api-key`). The API gives no logprobs and no
    response_format, so the reply's shape rests on the prompt, the tolerant parser and the
    one corrective re-ask. The other options mean what they mean for
    `OpenAICompatibleJudge`; `max_tokens` is required by the API and defaults to 2048.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        request_timeout: float | None = None,
        num_retries: int = 1,
        max_concurrency: int = 16,
        cache: CacheOption = None,
        transport: httpx.AsyncBaseTransport | None = None,
        temperature: float | None = 0.0,
        max_tokens: int = 2048,
        headers: dict[str, str] | None = None,
        extra_body: dict[str, Any] | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        anthropic_version: str = ANTHROPIC_VERSION,
    ) -> None:
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
            timeout=timeout,
            request_timeout=request_timeout,
            num_retries=num_retries,
            max_concurrency=max_concurrency,
            cache=cache,
            transport=transport,
            temperature=temperature,
            max_tokens=max_tokens,
            headers=headers,
            extra_body=extra_body,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            max_response_bytes=max_response_bytes,
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
        self, messages: list[dict[str, str]], request: JudgeRequest, features: dict[str, Any]
    ) -> dict[str, Any]:
        # The system prompt is a top-level field in this API, not a message.
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system,
            "messages": [m for m in messages if m["role"] != "system"],
        }
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
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        # Cached prompt tokens are input tokens too; Anthropic reports them apart.
        input_tokens = sum(
            token_count(usage.get(key))
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        output_tokens = token_count(usage.get("output_tokens"))
        return Answer(
            text=text,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
            cached_input_tokens=token_count(usage.get("cache_read_input_tokens")),
            cache_write_tokens=token_count(usage.get("cache_creation_input_tokens")),
        )
