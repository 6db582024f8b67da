"""What model calls cost: a price table per model, in US dollars per million tokens.

One table prices both the agents' own model calls (the trace viewer, the server's list)
and the judge's calls (the cost on every verdict). It ships prices for common models
(`DEFAULT_PRICES`, list prices as published by each provider; check them against your
contract) and takes overrides per model, by argument or from a JSON file:

    {"my-finetune": {"input": 0.3, "output": 1.2, "cached_input": 0.15}}

A model is found by its exact name, then with a trailing date or version dropped
(`gpt-4.1-mini-2025-04-14` is `gpt-4.1-mini`, `claude-sonnet-4-5-20250929` is
`claude-sonnet-4-5`), then without a provider prefix (`openai/gpt-4.1`). A model the
table does not know has no price: callers show its tokens only, never a guessed cost.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_PRICES", "Price", "PriceTable", "load_prices"]


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens: input, output, and cached input (read from a provider's
    prompt cache; None: billed as input) and cache writes (Anthropic; None: as input)."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        *,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """The dollars of one call. `input_tokens` counts every prompt token, the cached
        and cache-written ones among them."""
        cached = min(max(cached_input_tokens, 0), max(input_tokens, 0))
        written = min(max(cache_write_tokens, 0), max(input_tokens, 0) - cached)
        fresh = max(input_tokens, 0) - cached - written
        cached_rate = self.cached_input if self.cached_input is not None else self.input
        write_rate = self.cache_write if self.cache_write is not None else self.input
        dollars = (
            fresh * self.input
            + cached * cached_rate
            + written * write_rate
            + max(output_tokens, 0) * self.output
        )
        return dollars / 1_000_000


def _p(
    input: float, output: float, cached: float | None = None, write: float | None = None
) -> Price:
    return Price(input=input, output=output, cached_input=cached, cache_write=write)


#: List prices in dollars per million tokens (input, output, cached input, cache write).
DEFAULT_PRICES: Mapping[str, Price] = {
    # OpenAI
    "gpt-4.1": _p(2.00, 8.00, 0.50),
    "gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _p(0.10, 0.40, 0.025),
    "gpt-4o": _p(2.50, 10.00, 1.25),
    "gpt-4o-mini": _p(0.15, 0.60, 0.075),
    "gpt-5": _p(1.25, 10.00, 0.125),
    "gpt-5-mini": _p(0.25, 2.00, 0.025),
    "gpt-5-nano": _p(0.05, 0.40, 0.005),
    "o3": _p(2.00, 8.00, 0.50),
    "o4-mini": _p(1.10, 4.40, 0.275),
    "o3-mini": _p(1.10, 4.40, 0.55),
    # Anthropic (cache reads at 0.1x input, 5-minute cache writes at 1.25x)
    "claude-opus-4-1": _p(15.00, 75.00, 1.50, 18.75),
    "claude-opus-4": _p(15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4-5": _p(3.00, 15.00, 0.30, 3.75),
    "claude-sonnet-4": _p(3.00, 15.00, 0.30, 3.75),
    "claude-3-7-sonnet": _p(3.00, 15.00, 0.30, 3.75),
    "claude-haiku-4-5": _p(1.00, 5.00, 0.10, 1.25),
    "claude-3-5-haiku": _p(0.80, 4.00, 0.08, 1.00),
    # Google
    "gemini-2.5-pro": _p(1.25, 10.00, 0.31),
    "gemini-2.5-flash": _p(0.30, 2.50, 0.075),
    "gemini-2.0-flash": _p(0.10, 0.40, 0.025),
}

# A trailing date (-2025-04-14, -20250929, @20250929) or "-latest".
_VERSION = re.compile(r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8})|-latest)$")


def _price(value: Any, where: str) -> Price:
    if isinstance(value, Price):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object with input and output prices per million")
    unknown = set(value) - {"input", "output", "cached_input", "cache_write"}
    if unknown:
        raise ValueError(
            f"{where}: unknown field {sorted(unknown)[0]!r}; the fields are input, output, "
            "cached_input and cache_write (dollars per million tokens)"
        )
    numbers: dict[str, float | None] = {}
    for field in ("input", "output", "cached_input", "cache_write"):
        number = value.get(field)
        if number is None and field in ("input", "output"):
            raise ValueError(f"{where}.{field}: missing (dollars per million tokens)")
        if number is not None and (
            isinstance(number, bool)
            or not isinstance(number, (int, float))
            or not math.isfinite(number)
            or number < 0
        ):
            raise ValueError(f"{where}.{field}: expected a number of dollars >= 0, got {number!r}")
        numbers[field] = None if number is None else float(number)
    return Price(
        input=numbers["input"] or 0.0,
        output=numbers["output"] or 0.0,
        cached_input=numbers["cached_input"],
        cache_write=numbers["cache_write"],
    )


class PriceTable:
    """Prices by model name (see the module's docstring for how a name is looked up)."""

    def __init__(
        self,
        overrides: Mapping[str, Price | Mapping[str, Any]] | None = None,
        *,
        defaults: bool = True,
    ) -> None:
        self._prices: dict[str, Price] = dict(DEFAULT_PRICES) if defaults else {}
        for model, value in (overrides or {}).items():
            self._prices[model.lower()] = _price(value, f"prices[{model!r}]")

    def with_overrides(self, overrides: Mapping[str, Price | Mapping[str, Any]]) -> PriceTable:
        """A copy of this table with `overrides` on top."""
        table = PriceTable(defaults=False)
        table._prices = dict(self._prices)
        for model, value in overrides.items():
            table._prices[model.lower()] = _price(value, f"prices[{model!r}]")
        return table

    def get(self, model: str | None) -> Price | None:
        """The price of `model`, or None when the table does not know it."""
        if not model:
            return None
        name = model.strip().lower()
        for candidate in (name, name.rsplit("/", 1)[-1]):
            found = self._prices.get(candidate)
            if found is None:
                found = self._prices.get(_VERSION.sub("", candidate))
            if found is not None:
                return found
        return None

    def cost(
        self,
        model: str | None,
        input_tokens: int,
        output_tokens: int,
        *,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float | None:
        """The dollars of one call of `model`, None when its price is unknown."""
        price = self.get(model)
        if price is None:
            return None
        return price.cost(
            input_tokens,
            output_tokens,
            cached_input_tokens=cached_input_tokens,
            cache_write_tokens=cache_write_tokens,
        )

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.get(model) is not None


def load_prices(path: str | os.PathLike[str], base: PriceTable | None = None) -> PriceTable:
    """`base` (the shipped table by default) with the prices of a JSON file on top.
    ValueError names the file, the model and the field when the file is not a table of
    prices."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"prices file {path}: cannot read it ({error})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"prices file {path}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(
            f'prices file {path}: expected an object of models, e.g. {{"my-model": '
            '{"input": 0.3, "output": 1.2}}'
        )
    try:
        return (base or PriceTable()).with_overrides(data)
    except ValueError as error:
        raise ValueError(f"prices file {path}: {error}") from None
