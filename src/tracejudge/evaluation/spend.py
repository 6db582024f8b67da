"""What the judge's verdicts cost, and the caps on what may be spent on them.

`JudgeSpend` is the one place the evaluator asks before a judgement starts ("may one more
start?") and tells after it returns ("this is what it used"): it prices the verdict's
usage with the price table (`tracejudge.models.PriceTable`; the judge's model, found by
its name; an unknown model keeps its tokens and no cost), keeps the run's total, and
refuses a new judgement, with the reason, once a cap is reached:

- `max_cost_usd`: dollars, for a judge whose model has a price;
- `max_tokens`: prompt plus completion tokens, priced or not;
- `limits`: budgets kept elsewhere and shared (`SpendLimit`: the server keeps its daily
  budgets in its store, so that replicas share them and restarts keep them).

Judgements already started when a cap is reached finish, and what they used is kept and
counted: a cap stops new spending, it never throws paid verdicts away. A refused
judgement is "not evaluated" (`ScoreResponse.not_evaluated`), never a score.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from tracejudge import _env
from tracejudge.errors import ConfigurationError
from tracejudge.models import JudgeUsage, Price, PriceTable, load_prices

__all__ = [
    "JudgeSpend",
    "PricesOption",
    "SpendLimit",
    "format_usd",
    "judge_model",
    "resolve_prices",
]

logger = logging.getLogger("tracejudge.evaluation")

#: What `prices=` takes: a table, overrides per model on top of the shipped table
#: (`{"my-model": {"input": 0.3, "output": 1.2}}`, dollars per million tokens), the path
#: of a JSON file of such overrides, or None (the file TRACEJUDGE_JUDGE_PRICES names,
#: else the shipped table).
PricesOption = PriceTable | Mapping[str, Price | Mapping[str, Any]] | str | os.PathLike[str] | None


def resolve_prices(prices: PricesOption = None, *, option: str = "prices=") -> PriceTable:
    """The price table `prices` stands for (see `PricesOption`). `ConfigurationError`
    names `option` (or the variable) and the file when a file cannot be used."""
    if isinstance(prices, PriceTable):
        return prices
    if prices is None:
        path = _env.read(_env.TRACEJUDGE_JUDGE_PRICES)
        if path is None:
            return PriceTable()
        option = _env.TRACEJUDGE_JUDGE_PRICES
        prices = path
    try:
        if isinstance(prices, (str, os.PathLike)):
            return load_prices(prices)
        return PriceTable(prices)
    except ValueError as error:
        raise ConfigurationError(f"{option}: {error}") from None


def judge_model(judge: Any) -> str | None:
    """The model a judge runs, for its price: its `model`, else its name without the
    provider (`openai:gpt-4.1-mini` -> `gpt-4.1-mini`)."""
    model = getattr(judge, "model", None)
    if isinstance(model, str) and model:
        return model
    name = getattr(judge, "name", None)
    if isinstance(name, str) and name:
        return name.split(":", 1)[-1]
    return None


def format_usd(dollars: float) -> str:
    """Dollars for people: cents from $1 up (`$1,234.50`), two significant digits below
    (`$0.42`, `$0.0042`)."""
    if dollars == 0 or not math.isfinite(dollars):
        return "$0.00" if dollars == 0 else f"${dollars}"
    if abs(dollars) >= 1:
        return f"${dollars:,.2f}"
    decimals = max(2, 1 - math.floor(math.log10(abs(dollars))))
    text = f"{dollars:.{decimals}f}"
    while text.endswith("0") and len(text.split(".")[1]) > 2:
        text = text[:-1]
    return f"${text}"


@runtime_checkable
class SpendLimit(Protocol):
    """A budget kept outside this process, shared by whoever shares its storage."""

    async def refusal(self, criterion: str) -> str | None:
        """Why no new judgement of `criterion` may start now (None: it may)."""
        ...

    async def spent(self, criterion: str, usage: JudgeUsage) -> None:
        """Count what one judgement of `criterion` used (its usage is priced)."""
        ...


class JudgeSpend:
    """Prices verdicts and enforces the caps (see the module's docstring).

    `model`: the judge's model (`judge_model(judge)`); `prices`: the table. `max_cost_usd`
    needs a priced model: without one it raises `ConfigurationError` unless `max_tokens`
    is given too (then only the tokens are capped, and `unenforceable` says why).
    """

    def __init__(
        self,
        model: str | None,
        prices: PriceTable | None = None,
        *,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        limits: Sequence[SpendLimit] = (),
    ) -> None:
        if max_cost_usd is not None and not (math.isfinite(max_cost_usd) and max_cost_usd > 0):
            raise ConfigurationError(
                f"max_judge_cost must be a number of dollars above 0, got {max_cost_usd!r}"
            )
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
            raise ConfigurationError(
                f"max_judge_tokens must be a whole number of tokens above 0, got {max_tokens!r}"
            )
        self.model = model
        self.prices = prices if prices is not None else PriceTable()
        self.price = self.prices.get(model)
        self.max_cost_usd = max_cost_usd
        self.max_tokens = max_tokens
        self.limits = tuple(limits)
        #: Why `max_cost_usd` is not enforced (None: it is, or there is none).
        self.unenforceable: str | None = None
        if max_cost_usd is not None and self.price is None:
            self.unenforceable = (
                f"the judge's model {model!r} has no price, so a cost cap of "
                f"{format_usd(max_cost_usd)} cannot be enforced"
            )
            if max_tokens is None:
                raise ConfigurationError(
                    f"max_judge_cost: {self.unenforceable}; give the model's price (prices=, "
                    f'e.g. {{"{model}": {{"input": 0.3, "output": 1.2}}}} in dollars per '
                    "million tokens) or cap tokens instead (max_judge_tokens=)"
                )
            logger.warning("tracejudge: %s; capping tokens only", self.unenforceable)
        #: What every verdict priced here used, together.
        self.total = JudgeUsage()
        #: How many judgements were refused (not evaluated) for a cap or a limit.
        self.refused = 0
        #: The first reason a judgement was refused (None: none was).
        self.stopped: str | None = None

    @property
    def priced(self) -> bool:
        """Whether the judge's model has a price in the table."""
        return self.price is not None

    def priced_usage(self, usage: JudgeUsage) -> JudgeUsage:
        """`usage` with its cost: as the judge gave it when it gave one; else from the
        table (None for an unknown model, or when the provider reported no tokens for
        the calls it made)."""
        if usage.cost_usd is not None or self.price is None:
            return usage
        if usage.calls and not (usage.input_tokens or usage.output_tokens):
            return usage
        cost = self.price.cost(
            usage.input_tokens,
            usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )
        return usage.model_copy(update={"cost_usd": cost})

    def _cap_reached(self) -> str | None:
        total = self.total
        if self.max_cost_usd is not None and self.price is not None:
            if (total.cost_usd or 0.0) >= self.max_cost_usd:
                return f"the run's judge budget of {format_usd(self.max_cost_usd)} was spent"
        if self.max_tokens is not None and total.total_tokens >= self.max_tokens:
            return f"the run's judge budget of {self.max_tokens:,} tokens was spent"
        return None

    def exploring(self, usage: JudgeUsage) -> str | None:
        """Asked before each round of an exploring judgement after the first, with what
        the judgement has used so far (not yet in `total`): why it must stop (a run cap
        is reached with it counted), or None. What it used is kept: the caller counts it
        with `after` when the judgement returns."""
        priced = self.priced_usage(usage)
        cost = (self.total.cost_usd or 0.0) + (priced.cost_usd or 0.0)
        if self.max_cost_usd is not None and self.price is not None and cost >= self.max_cost_usd:
            return (
                f"the run's judge budget of {format_usd(self.max_cost_usd)} was spent while "
                f"the judge explored ({format_usd(priced.cost_usd or 0.0)} on this judgement)"
            )
        tokens = self.total.total_tokens + usage.total_tokens
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return (
                f"the run's judge budget of {self.max_tokens:,} tokens was spent while the "
                f"judge explored ({usage.total_tokens:,} on this judgement)"
            )
        return None

    async def before(self, criterion: str) -> str | None:
        """Ask before a judgement of `criterion` starts: why it may not (None: it may)."""
        reason = self._cap_reached()
        for limit in self.limits:
            if reason is not None:
                break
            reason = await limit.refusal(criterion)
        if reason is not None:
            self.refused += 1
            if self.stopped is None:
                self.stopped = reason
        return reason

    async def after(self, criterion: str, usage: JudgeUsage) -> JudgeUsage:
        """Tell what a judgement of `criterion` used; returns the usage priced."""
        priced = self.priced_usage(usage)
        self.total = self.total + priced
        for limit in self.limits:
            try:
                await limit.spent(criterion, priced)
            except Exception:  # the verdict is paid for: keep it, say what was not counted
                logger.exception("tracejudge: could not count a judgement against %r", limit)
        return priced
