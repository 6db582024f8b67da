"""A judge's options as one small validated value, passed whole (as httpx passes `Limits`
and `Timeout`): how long and how often it asks, how much it may send and read, how its
replies are bounded, its cache and its spans.

Every HTTP judge backend takes `options=JudgeOptions(...)`; its constructor also takes
each option as a keyword of its own (`OpenAICompatibleJudge(model, timeout=30)`), which
overrides the same field of `options`. The keywords are `JudgeKeywords`, written once here
rather than in each backend. `max_tokens` left at `DEFAULT` (not given) is the backend's
own default for the model; an explicit None means no bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import httpx

from tracejudge._http import DEFAULT_MAX_RESPONSE_BYTES
from tracejudge.errors import ConfigurationError
from tracejudge.judges._budget import DEFAULT, NotGiven
from tracejudge.judges._cache import CacheOption
from tracejudge.judges._spans import SpansOption

__all__ = ["JudgeKeywords", "JudgeOptions"]


@dataclass(frozen=True)
class JudgeOptions:
    """How one judge asks.

    - `timeout`: seconds of one judgement, retries and re-ask included; `request_timeout`:
      of one HTTP request (default: `timeout`).
    - `num_retries`: retries of a failed request (at least 1); `backoff_base`,
      `backoff_max`: their exponential backoff, in seconds.
    - `max_concurrency`: requests in flight at once.
    - `max_response_bytes`: the largest answer read (at least 1024).
    - `headers`: sent with every request; `transport`: httpx's (tests, proxies).
    - `temperature`: None leaves it to the endpoint; `max_tokens`: the most tokens of one
      reply (`DEFAULT`: the backend's default for the model; None: no bound);
      `max_input_tokens`: the most of one request (at least 256; None: the model's context
      window less `max_tokens`); `extra_body`: merged into every request body.
    - `cache`: the verdict cache (None: in memory; False: off; a path: SQLite; a
      `JudgeCache`); `spans`: where the judge's own spans go.
    """

    timeout: float = 60.0
    request_timeout: float | None = None
    num_retries: int = 1
    max_concurrency: int = 16
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    headers: Mapping[str, str] | None = field(default=None, hash=False)
    transport: httpx.AsyncBaseTransport | None = None
    temperature: float | None = 0.0
    max_tokens: int | None | NotGiven = DEFAULT
    max_input_tokens: int | None = None
    extra_body: Mapping[str, Any] | None = field(default=None, hash=False)
    cache: CacheOption = field(default=None, hash=False)
    spans: SpansOption = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ConfigurationError(f"timeout must be positive, got {self.timeout}")
        if self.max_concurrency < 1:
            raise ConfigurationError(
                f"max_concurrency must be at least 1, got {self.max_concurrency}"
            )
        size = self.max_response_bytes
        if isinstance(size, bool) or not isinstance(size, int):
            raise ConfigurationError(
                f"max_response_bytes must be a whole number of bytes, got {size!r}"
            )
        if size < 1024:
            raise ConfigurationError(f"max_response_bytes must be at least 1024, got {size}")
        limit = self.max_input_tokens
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 256
        ):
            raise ConfigurationError(
                f"max_input_tokens must be a whole number of tokens, at least 256, got {limit!r}"
            )
        timeout = float(self.timeout)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "request_timeout", float(self.request_timeout or 0) or None)
        # Like the Composo SDK: at least one retry; retries cannot be turned off.
        object.__setattr__(self, "num_retries", max(1, int(self.num_retries)))
        object.__setattr__(self, "max_concurrency", int(self.max_concurrency))
        object.__setattr__(self, "backoff_base", float(self.backoff_base))
        object.__setattr__(self, "backoff_max", float(self.backoff_max))

    @classmethod
    def given(cls, options: JudgeOptions | None, keywords: Mapping[str, Any]) -> JudgeOptions:
        """`options` (default: the defaults) with the fields `keywords` name replaced: a
        backend's constructor's own keywords over its `options`."""
        base = options if options is not None else cls()
        if not isinstance(base, JudgeOptions):
            raise ConfigurationError(f"options must be a JudgeOptions, got {type(base).__name__}")
        return dataclasses.replace(base, **keywords) if keywords else base


class JudgeKeywords(TypedDict, total=False):
    """The fields of `JudgeOptions`, as keywords of a backend's constructor."""

    timeout: float
    request_timeout: float | None
    num_retries: int
    max_concurrency: int
    backoff_base: float
    backoff_max: float
    max_response_bytes: int
    headers: Mapping[str, str] | None
    transport: httpx.AsyncBaseTransport | None
    temperature: float | None
    max_tokens: int | None | NotGiven
    max_input_tokens: int | None
    extra_body: Mapping[str, Any] | None
    cache: CacheOption
    spans: SpansOption
