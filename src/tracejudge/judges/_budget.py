"""How many tokens a request holds, counted before it is sent, and how many a model takes.

No tokenizer is needed: a request is counted as its JSON body's UTF-8 bytes divided by
three (`BYTES_PER_TOKEN`). Tokenizers of current models give about four bytes of English,
code or JSON per token and about three of CJK text, so the estimate errs high; text that
tokenizes worse than three bytes a token (long runs of digits, random identifiers, base64)
can be undercounted, so every judge also learns from the prompt tokens its endpoint reports:
when a request turns out to hold more tokens than estimated, its later estimates are scaled
up by the ratio seen (never down).

`max_input_tokens` (the input budget of one judgement) defaults to the model's context
window less the reply's `max_tokens`, for the model names of `CONTEXT_WINDOWS`, and to
`DEFAULT_CONTEXT_WINDOW` less `max_tokens` for names it does not know.
"""

from __future__ import annotations

import json
import math
import re
import threading
from typing import Any

__all__ = [
    "DEFAULT",
    "DEFAULT_MAX_TOKENS",
    "REASONING_MAX_TOKENS",
    "NotGiven",
    "default_max_tokens",
    "BYTES_PER_TOKEN",
    "CONTEXT_WINDOWS",
    "DEFAULT_CONTEXT_WINDOW",
    "TokenEstimator",
    "context_window",
    "default_max_input_tokens",
    "table_budget_source",
]

#: The bytes of a request's JSON counted as one token.
BYTES_PER_TOKEN = 3
#: The context window assumed for a model name the table does not know.
DEFAULT_CONTEXT_WINDOW = 32_768

#: Context windows (input tokens a request may hold) by model name prefix, longest prefix
#: first when looked up. For families whose input is limited below the window (gpt-5), the
#: input limit.
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 272_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini": 1_048_576,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3": 8_192,
    "llama3": 8_192,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "mixtral": 32_768,
    "deepseek": 65_536,
    "gemma": 8_192,
    "gemma-3": 131_072,
    "gemma3": 131_072,
    "phi-3": 4_096,
    "phi-4": 16_384,
    "smollm2": 8_192,
}
_PREFIXES = sorted(CONTEXT_WINDOWS, key=len, reverse=True)
# A provider or organisation before the name ("openai/", "meta-llama/"), a quantisation
# file name's directory, or a tag after it ("llama3.1:8b").
_PATH = re.compile(r"^.*/")


#: The bound on a reply's tokens when none is given: a judgement (an explanation and a
#: grade) takes a few hundred; a model that never stops is cut here, not at the timeout.
DEFAULT_MAX_TOKENS = 2_048
#: The bound for reasoning models (o1, o3, o4, gpt-5), whose reasoning counts against it.
REASONING_MAX_TOKENS = 16_384
_REASONING = re.compile(r"^(o\d|gpt-5)")


class NotGiven:
    """The type of `DEFAULT`: an option not given, told apart from an explicit None."""

    def __repr__(self) -> str:
        return "DEFAULT"


#: An option left to its default (an explicit None means "none").
DEFAULT = NotGiven()


def default_max_tokens(model: str) -> int:
    """The reply bound of `model` when none is given (see DEFAULT_MAX_TOKENS)."""
    name = _PATH.sub("", model.strip().lower())
    return REASONING_MAX_TOKENS if _REASONING.match(name) else DEFAULT_MAX_TOKENS


def context_window(model: str) -> int | None:
    """The context window of `model` by its name (case, a provider prefix and a `.gguf`
    path ignored), or None when the table does not know it."""
    name = _PATH.sub("", model.strip().lower())
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return CONTEXT_WINDOWS[prefix]
    return None


def default_max_input_tokens(model: str, max_tokens: int | None) -> int:
    """The input budget of one judgement by `model` when none is given: its context window
    (or DEFAULT_CONTEXT_WINDOW) less the tokens kept for the reply."""
    window = context_window(model) or DEFAULT_CONTEXT_WINDOW
    reserve = max_tokens if max_tokens is not None else 0
    return max(1_024, window - reserve)


def table_budget_source(model: str, max_tokens: int | None) -> str:
    """Where `default_max_input_tokens(model, max_tokens)` comes from, in words."""
    window = context_window(model)
    reserve = f" less {max_tokens:,} for the reply" if max_tokens else ""
    if window is None:
        unknown = "a model the table does not know"
        return f"the default context of {DEFAULT_CONTEXT_WINDOW:,} ({unknown}){reserve}"
    return f"the model table's context of {window:,} for {model}{reserve}"


def body_bytes(body: Any) -> int:
    """The UTF-8 bytes of `body` as JSON (how it is sent)."""
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


class TokenEstimator:
    """Counts a request's tokens before it is sent: bytes / BYTES_PER_TOKEN, scaled up by
    the largest ratio of reported to estimated prompt tokens seen so far (thread-safe)."""

    #: The largest correction learned from reports (a report past it is an outlier).
    MAX_SCALE = 3.0

    def __init__(self) -> None:
        self._scale = 1.0
        self._lock = threading.Lock()

    @property
    def scale(self) -> float:
        return self._scale

    def estimate(self, body: Any) -> int:
        """The tokens `body` holds, as estimated."""
        return self.from_bytes(body_bytes(body))

    def from_bytes(self, size: int) -> int:
        return math.ceil(size / BYTES_PER_TOKEN * self._scale)

    def learn(self, estimated: int, reported: int) -> None:
        """Take in what the endpoint reported for a request estimated at `estimated`."""
        if estimated <= 0 or reported <= estimated:
            return
        with self._lock:
            self._scale = min(self.MAX_SCALE, max(self._scale, self._scale * reported / estimated))
