"""What an exploring judge is handed: tools over the material, a digest of it, and caps.

A judgement too long for the judge's input budget (`max_input_tokens`) is not truncated:
when its request carries an `Exploration`, the judge is shown the digest instead of the
material and reads what it needs through the tools, under the caps of `ExplorationLimits`.
Judges know nothing of traces: the digest is text and the tools are callables, both made
by whoever built the request (the evaluator, over a `MultiAgentTrace`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tracejudge.models import JudgeUsage

__all__ = ["Exploration", "ExplorationLimits", "ExplorationTool", "SpendCheck"]

#: Asked before every exploring round after the first with the judgement's usage so far:
#: a reason (a string) stops the exploration, and the result is not evaluated with it;
#: None lets it go on. The hook for a money cap (price the usage, compare with what is left).
SpendCheck = Callable[[JudgeUsage], "str | None"]


@dataclass(frozen=True)
class ExplorationTool:
    """One tool the judge may call while exploring.

    `parameters` is the JSON schema of its arguments (an object). `run(arguments,
    max_tokens)` answers with text of at most `max_tokens` tokens, counted as
    `BYTES_PER_TOKEN` bytes each of the text's JSON-escaped UTF-8 (the judge has already
    allowed for what it learnt of its tokenizer; it cuts what is longer, so a tool that
    pages through something should keep within it); it raises ValueError for arguments
    it cannot use (the judge shows the message to the model).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Callable[[dict[str, Any], int], str] = field(repr=False)


@dataclass(frozen=True)
class ExplorationLimits:
    """The caps of one exploring judgement.

    `max_rounds`: model calls at most (the last one must answer); `max_read_tokens`: the
    most one tool result may hold; `max_total_tokens`: the input tokens of all its calls
    together (each call re-reads what came before); `spend`: see `SpendCheck`. A cap hit
    before a verdict makes the result "not evaluated" with the reason, never a score.
    """

    max_rounds: int = 12
    max_read_tokens: int = 4_000
    max_total_tokens: int = 400_000
    spend: SpendCheck | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_rounds < 2:
            raise ValueError(f"max_rounds must be at least 2, got {self.max_rounds}")
        if self.max_read_tokens < 100:
            raise ValueError(f"max_read_tokens must be at least 100, got {self.max_read_tokens}")
        if self.max_total_tokens < 1_000:
            raise ValueError(f"max_total_tokens must be at least 1000, got {self.max_total_tokens}")

    def key(self) -> dict[str, int]:
        """What of the caps decides a verdict (for the verdict cache's key)."""
        return {
            "max_rounds": self.max_rounds,
            "max_read_tokens": self.max_read_tokens,
            "max_total_tokens": self.max_total_tokens,
        }


@dataclass(frozen=True)
class Exploration:
    """How to judge a request whose material is over the judge's budget: the `digest`
    shown instead of it (text, or a callable making it on first need: `digest(max_tokens)`
    answers in at most `max_tokens` tokens, counted as `ExplorationTool` counts them), the
    `tools` to read it, and the `limits`."""

    digest: str | Callable[[int], str] = field(repr=False)
    tools: tuple[ExplorationTool, ...]
    limits: ExplorationLimits = field(default_factory=ExplorationLimits)

    def digest_text(self, max_tokens: int) -> str:
        """The digest, made to fit `max_tokens` when it is a callable."""
        return self.digest(max_tokens) if callable(self.digest) else self.digest

    def tool(self, name: str) -> ExplorationTool | None:
        return next((t for t in self.tools if t.name == name), None)
