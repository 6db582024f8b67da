"""The OpenAI-compatible chat-completions backend: OpenAI, Azure OpenAI, vLLM, Ollama,
llama.cpp's server, OpenRouter, Together, LiteLLM... anything serving /chat/completions.

Spoken over httpx directly, not the `openai` package, so that the user's OpenAI
instrumentation never records the judge's own calls as spans of the traced agent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
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
from tracejudge.judges._budget import NotGiven, default_max_tokens
from tracejudge.judges._exchange import Answer, Ask, AskedCall
from tracejudge.judges._options import JudgeKeywords, JudgeOptions
from tracejudge.judges._prompt import message_text
from tracejudge.judges._server_context import PROBE_TIMEOUT, ServerContext, ask_server_context

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["OpenAICompatibleJudge", "OPENAI_COMPATIBLE_PROVIDERS", "RESPONSE_FORMATS"]

#: How the reply's shape is asked for, strictest first; a judge steps down this list when
#: its endpoint rejects a mode, and remembers where it stopped.
RESPONSE_FORMATS = ("json_schema", "json_object", "none")

# Words in a 400/422 that mean the endpoint does not take the requested response_format.
_FORMAT_WORDS = (
    "response_format",
    "json_schema",
    "json_object",
    "structured output",
    "schema",
    "guided",
    "grammar",
)

#: The number of alternatives asked for at each token (the most OpenAI and vLLM allow).
TOP_LOGPROBS = 20


@dataclass(frozen=True)
class _Provider:
    default_base_url: str
    base_url_env: str | None
    key_env: str | None


#: Provider prefixes that speak chat completions: where they live and where their key is.
OPENAI_COMPATIBLE_PROVIDERS: dict[str, _Provider] = {
    "openai": _Provider("https://api.openai.com/v1", _env.OPENAI_BASE_URL, _env.OPENAI_API_KEY),
    "ollama": _Provider("http://localhost:11434/v1", None, None),
    "vllm": _Provider("http://localhost:8000/v1", None, _env.VLLM_API_KEY),
    "openrouter": _Provider("https://openrouter.ai/api/v1", None, _env.OPENROUTER_API_KEY),
    "together": _Provider("https://api.together.xyz/v1", None, _env.TOGETHER_API_KEY),
}


class OpenAICompatibleJudge(HTTPJudge):
    """A judge served by any OpenAI-compatible `/chat/completions` endpoint.

    `base_url` defaults to `OPENAI_BASE_URL`, then to api.openai.com (for `provider="openai"`;
    the other providers have their own defaults, see OPENAI_COMPATIBLE_PROVIDERS).
    `api_key` defaults to `OPENAI_API_KEY` (or the provider's variable); it may be absent
    for local servers, and is only sent when there is one (as `api-key` for Azure hosts,
    `Authorization: Bearer` elsewhere). A key written into `base_url` (``user:KEY@`` or
    ``?api-key=KEY``) is taken out of it and sent that way too; it is never shown.

    The options below are the fields of `JudgeOptions`: pass them whole as
    `options=JudgeOptions(...)` (one value shared by several judges), or each as a keyword
    (which wins over the same field of `options`).
    `timeout` is the total time for one judgement, retries and re-asks included;
    `request_timeout` (default: `timeout`) bounds each HTTP request. `num_retries` (at least
    1) retries 408/409/429/5xx, timeouts and connection errors with exponential backoff
    (`backoff_base` * 2**n seconds, full jitter, at most `backoff_max`) or as Retry-After
    asks. `max_concurrency` bounds this judge's requests in flight. `cache` is None (in
    memory, the default), False (off), a file path (SQLite) or a JudgeCache.
    `response_format` is the mode tried first ("json_schema", "json_object", "none");
    `logprobs` asks for token probabilities on graded criteria to weight the score.
    `max_tokens` bounds each reply (default 2048, 16384 for reasoning models such as o3
    and gpt-5, whose reasoning counts against it; None sends no bound): a small local
    model that never stops otherwise generates until the timeout.
    `max_input_tokens` is the most tokens one request may hold, counted before sending
    (default: the model's context window less `max_tokens`, see
    `tracejudge.judges.CONTEXT_WINDOWS`); a judgement over it explores or is not
    evaluated. `spans` sends the judge's own calls as GenAI spans to a tracer provider of
    their own (see `tracejudge.judges.SpansOption`).
    `max_response_bytes` (4 MiB by default) bounds an answer's size: a longer one is an
    APIError, not read into memory.
    `transport` replaces httpx's network transport (for tests).

    `prompt_cache_per_slot` turns True once the server answers with llama.cpp's `timings`:
    its prompt cache lives in each of its slots, not server-wide, so the evaluator then
    sends one agent's criteria one after another (each reaches the idle slot that holds
    that agent's transcript) instead of all at once onto whichever slots free up.
    """

    prompt_cache_per_slot: bool = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        provider: str = "openai",
        logprobs: bool = True,
        response_format: str = "json_schema",
        options: JudgeOptions | None = None,
        **keywords: Unpack[JudgeKeywords],
    ) -> None:
        """`options` (a `JudgeOptions`) whole, and any of its fields as a keyword of its
        own (over `options`); `max_tokens` not given: `default_max_tokens(model)`."""
        chosen = JudgeOptions.given(options, keywords)
        known = OPENAI_COMPATIBLE_PROVIDERS.get(provider)
        if known is None:
            raise ConfigurationError(
                f"unknown OpenAI-compatible provider {provider!r}; use one of "
                f"{', '.join(OPENAI_COMPATIBLE_PROVIDERS)} (any other server: provider='openai' "
                "with base_url=...)"
            )
        if response_format not in RESPONSE_FORMATS:
            raise ConfigurationError(
                f"response_format must be one of {', '.join(RESPONSE_FORMATS)}, "
                f"got {response_format!r}"
            )
        resolved_url = base_url or _env.read(known.base_url_env) or known.default_base_url
        # A key written into the URL is sent as the header below, never in the URL.
        resolved_url, url_key = split_credentials(resolved_url)
        resolved_key = api_key or url_key or _env.read(known.key_env)
        if resolved_key is None and requires_key(resolved_url):
            where = f"set {known.key_env} or pass" if known.key_env else "pass"
            raise ConfigurationError(
                f"judge {provider}:{model} needs an API key for {resolved_url}: {where} "
                "api_key=... (for a local OpenAI-compatible server such as vLLM, Ollama or "
                "llama.cpp, set OPENAI_BASE_URL or pass base_url=... instead)"
            )
        self.provider = provider
        super().__init__(
            model,
            name=f"{provider}:{model}",
            base_url=resolved_url,
            api_key=resolved_key,
            key_env=known.key_env,
            options=chosen,
            max_tokens=default_max_tokens(model)
            if isinstance(chosen.max_tokens, NotGiven)
            else chosen.max_tokens,
            features={"format": response_format, "logprobs": bool(logprobs)},
        )
        self._azure = (httpx.URL(resolved_url).host or "").endswith(".azure.com")
        # OpenAI (and Azure OpenAI) put the structured-output schema before the system
        # prompt: one schema for every kind keeps an agent's judgements on one prefix.
        host = httpx.URL(self.base_url).host or ""
        self.one_reply_schema_for_all_kinds = self._azure or host == "api.openai.com"
        self._chat_url = join_url(resolved_url, "chat/completions")

    @property
    def response_format(self) -> str:
        """The response_format mode this judge uses now (it steps down on rejection)."""
        return str(self._features["format"])

    @property
    def logprobs(self) -> bool:
        """Whether this judge still asks for logprobs (False once the endpoint refused)."""
        return bool(self._features["logprobs"])

    def _url(self) -> httpx.URL:
        return self._chat_url

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.api_key:
            if self._azure:
                headers["api-key"] = self.api_key
            else:
                headers["authorization"] = f"Bearer {self.api_key}"
        headers.update(self.extra_headers)
        return headers

    async def _server_context(self, client: httpx.AsyncClient) -> ServerContext | None:
        # OpenAI and Azure serve models whose window the table knows; a local server
        # (llama.cpp, vLLM, Ollama) is asked what it was started with.
        host = httpx.URL(self.base_url).host
        if self._azure or host == "api.openai.com":
            return None
        headers = {k: v for k, v in self._headers().items() if k != "content-type"}
        return await ask_server_context(
            client, self.base_url, self.model, headers, min(PROBE_TIMEOUT, self.timeout / 4)
        )

    def _requests_logprobs(self, ask: Ask, features: dict[str, Any]) -> bool:
        # Pass/fail verdicts have no grade to weight.
        return bool(features.get("logprobs")) and ask.logprobs

    def _body(
        self, messages: Sequence[dict[str, Any]], ask: Ask, features: dict[str, Any]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [_wire(m) for m in messages]}
        if features.get("temperature") and self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            # api.openai.com wants the newer name (reasoning models refuse the old one);
            # many compatible servers only know the old one.
            host = httpx.URL(self.base_url).host
            body["max_completion_tokens" if host == "api.openai.com" else "max_tokens"] = (
                self.max_tokens
            )
        mode = features.get("format")
        if ask.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": dict(tool.parameters),
                    },
                }
                for tool in ask.tools
            ]
            if ask.final:
                body["tool_choice"] = "none"
        elif mode == "json_schema" and ask.schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": ask.schema_name,
                    "strict": True,
                    "schema": ask.schema,
                },
            }
        elif mode in ("json_schema", "json_object") and ask.schema is not None:
            body["response_format"] = {"type": "json_object"}
        if self._requests_logprobs(ask, features):
            body["logprobs"] = True
            body["top_logprobs"] = TOP_LOGPROBS
        body.update(self.extra_body)
        return body

    def _without_rejected(
        self, features: dict[str, Any], ask: Ask, rejection: str
    ) -> dict[str, Any] | None:
        if self._requests_logprobs(ask, features) and "logprob" in rejection:
            return {**features, "logprobs": False}
        fewer = super()._without_rejected(features, ask, rejection)
        if fewer is not None:
            return fewer
        mode = features.get("format")
        if (
            not ask.tools
            and ask.schema is not None
            and mode != "none"
            and any(word in rejection for word in _FORMAT_WORDS)
        ):
            index = RESPONSE_FORMATS.index(mode) if mode in RESPONSE_FORMATS else 0
            return {**features, "format": RESPONSE_FORMATS[min(index + 1, 2)]}
        return None

    def _read(self, data: Any) -> Answer:
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            detail = ""
            if isinstance(data, dict) and data.get("error"):
                detail = f": {data['error']}"
            raise APIError(
                f"{self._endpoint.where()} answered without a chat completion{detail}; check "
                "that base_url points at an OpenAI-compatible API",
                200,
                str(data)[:2000],
            )
        if isinstance(data.get("timings"), dict):
            self.prompt_cache_per_slot = True
        choice = choices[0]
        found = choice.get("message")
        message = found if isinstance(found, dict) else {}
        content = message.get("content")
        if isinstance(content, list):
            # Some servers answer with content parts even for plain text.
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            content = message.get("refusal") if isinstance(message.get("refusal"), str) else ""
        logprobs_field = choice.get("logprobs")
        logprobs = logprobs_field.get("content") if isinstance(logprobs_field, dict) else None
        given = data.get("usage")
        usage = given if isinstance(given, dict) else {}
        finish = choice.get("finish_reason")
        return Answer(
            text=content or "",
            logprobs=logprobs if isinstance(logprobs, list) and logprobs else None,
            input_tokens=token_count(usage.get("prompt_tokens")),
            output_tokens=token_count(usage.get("completion_tokens")),
            total_tokens=token_count(usage.get("total_tokens")),
            cached_input_tokens=cached_tokens(data),
            tool_calls=_tool_calls(message.get("tool_calls")),
            finish_reason=finish if isinstance(finish, str) else None,
        )


def cached_tokens(data: dict[str, Any]) -> int:
    """The prompt tokens an answer says were read from the server's prompt cache: OpenAI's
    (and vLLM's, with --enable-prompt-tokens-details) `usage.prompt_tokens_details.
    cached_tokens`, else llama.cpp's `timings.cache_n`."""
    given = data.get("usage")
    usage = given if isinstance(given, dict) else {}
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and token_count(details.get("cached_tokens")):
        return token_count(details.get("cached_tokens"))
    timings = data.get("timings")
    if isinstance(timings, dict):
        return token_count(timings.get("cache_n"))
    return 0


def _tool_calls(value: Any) -> list[AskedCall]:
    calls: list[AskedCall] = []
    for index, call in enumerate(value if isinstance(value, list) else []):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments: Any = function.get("arguments")
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                parsed = arguments
            arguments = parsed
        if not isinstance(arguments, (dict, str)):
            arguments = json.dumps(arguments)
        call_id = call.get("id") if isinstance(call.get("id"), str) else f"call_{index}"
        calls.append(AskedCall(id=call_id, name=function["name"], arguments=arguments))
    return calls


def _wire(message: dict[str, Any]) -> dict[str, Any]:
    """A message (see `_exchange`) as chat completions takes it: text parts joined into
    one string (every OpenAI-compatible server reads that), tool calls as functions."""
    role = message["role"]
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message["tool_call_id"],
            "content": message_text(message),
        }
    wired: dict[str, Any] = {"role": role, "content": message_text(message)}
    calls = message.get("tool_calls")
    if role == "assistant" and calls:
        wired["content"] = wired["content"] or None
        wired["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call["arguments"], str)
                    else json.dumps(call["arguments"]),
                },
            }
            for call in calls
        ]
    return wired
