"""What one question to a judge model asks for and what its answer holds, provider-neutral.

The backends turn an `Ask` and the messages into their API's body, and their API's answer
into an `Answer`; `Tally` adds up the answers of one judgement into its `JudgeUsage`.

Messages are kept in one shape whatever the API: ``{"role": "system" | "user" |
"assistant" | "tool", "content": str | [text parts]}``, where a text part is ``{"type":
"text", "text": str, "cache": bool}`` (the cacheable block), an assistant message may hold
``"tool_calls": [{"id", "name", "arguments"}]`` and a tool message a ``"tool_call_id"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracejudge.judges._tools import ExplorationTool
from tracejudge.models import JudgeUsage

__all__ = ["Answer", "Ask", "AskedCall", "Tally", "ToolsRefused"]


@dataclass(frozen=True)
class Ask:
    """What one request asks of the model: the reply's JSON schema (None: no structured
    output), whether to ask for logprobs, the tools it may call and whether it must
    answer now (`final`: tools offered but not to be called); `schema_name` names the
    schema for the provider."""

    schema: dict[str, Any] | None = None
    logprobs: bool = False
    tools: tuple[ExplorationTool, ...] = ()
    final: bool = False
    #: The schema's name, as providers that take a strict schema want one.
    schema_name: str = "judgement"


@dataclass(frozen=True)
class AskedCall:
    """A tool call the model made: its id, the tool's name and the arguments (a dict, or
    the text the model wrote when it is not a JSON object)."""

    id: str
    name: str
    arguments: dict[str, Any] | str


@dataclass
class Answer:
    """What a backend read from one successful HTTP answer.

    `input_tokens` counts every prompt token, those read from the provider's prompt cache
    (`cached_input_tokens`) and written to it (`cache_write_tokens`) among them.
    `finish_reason` is the API's ("length" / "max_tokens": cut off at the token limit).
    """

    text: str
    logprobs: list[dict[str, Any]] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    tool_calls: list[AskedCall] = field(default_factory=list)
    finish_reason: str | None = None

    @property
    def cut_off(self) -> bool:
        """Whether the reply stopped at the token limit."""
        return self.finish_reason in ("length", "max_tokens")


@dataclass
class Tally:
    """Usage of one judge() call, accumulated over its HTTP requests."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, answer: Answer) -> None:
        self.input_tokens += answer.input_tokens
        self.output_tokens += answer.output_tokens
        self.total_tokens += answer.total_tokens or (answer.input_tokens + answer.output_tokens)
        self.cached_input_tokens += answer.cached_input_tokens
        self.cache_write_tokens += answer.cache_write_tokens

    def usage(self, latency_seconds: float) -> JudgeUsage:
        return JudgeUsage(
            calls=self.calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            total_tokens=self.total_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cache_write_tokens=self.cache_write_tokens,
            latency_seconds=latency_seconds,
        )


class ToolsRefused(Exception):
    """The endpoint refused tool calls (an exploring judgement is then not evaluated)."""
