"""How an evaluation is set up, as one value, and the one way to build from it.

`EvaluationSettings` holds which judge (a spec, a judge object, or the environment's),
where it is served, and everything it and the evaluation service may do: requests in
flight, timeout, retries, tokens per reply and per request, cache, exploration, the
single-call mode, prices, spending caps, the bar. `build_judge(settings)` and
`build_service(settings)` are how the server, `tracejudge score`, `rubric`, `attribute`,
`calibrate`, the clients, the pytest plugin and the reward API get their judge and their
`EvaluationService`, so a setting reaches the judge the same way wherever it is given.
Nothing else passes options to a judge's constructor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from tracejudge._advice import Surface
from tracejudge._http import HTTPOptions
from tracejudge.errors import ComposoError
from tracejudge.evaluation.evaluator import DEFAULT_EXPLORATION
from tracejudge.evaluation.service import EvaluationService
from tracejudge.evaluation.spend import PricesOption, SpendLimit
from tracejudge.judges import (
    CacheOption,
    ExplorationLimits,
    Judge,
    JudgeOptions,
    default_judge,
    judge_from_spec,
)

__all__ = ["BUILD", "EvaluationSettings", "build_judge", "build_service"]


@dataclass(frozen=True)
class EvaluationSettings:
    """Which judge, and what it and the evaluation may do.

    - `judge`: a spec ("openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5", a bare model
      name), a `Judge` (used as it is: the judge options below do not reach it), or None:
      the environment's (TRACEJUDGE_JUDGE, else OPENAI_API_KEY / OPENAI_BASE_URL).
    - `base_url`, `api_key`: where the judge is served and its key (default: the
      provider's variables, e.g. OPENAI_BASE_URL and OPENAI_API_KEY). The key never
      shows in the settings' repr.
    - `http`: the judge's timeout (one judgement, retries included), retries, and
      requests in flight at once, which also bounds the service's judge calls.
    - `max_tokens`: the most tokens of one reply; `max_input_tokens`: the most of one
      request, counted before sending (over it a judgement explores or is not
      evaluated). None: the backend's default for the model.
    - `cache`: the judge's verdict cache (None: in memory; False: off; a file path:
      SQLite; a `JudgeCache`).
    - `exploration`: the caps of a judgement over the input budget, which the judge
      explores through a digest and tools (None: such a judgement is not evaluated);
      `single_call`: all the text criteria of one request judged for each agent in one
      judge call.
    - `prices`, `max_judge_cost`, `max_judge_tokens`, `fail_under`, `surface` (where its
      advice is read: Python, the CLI, a server's answer): the service's (see
      `EvaluationService`).
    """

    judge: str | Judge | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    http: HTTPOptions = field(default_factory=HTTPOptions)
    max_tokens: int | None = None
    max_input_tokens: int | None = None
    cache: CacheOption = None
    exploration: ExplorationLimits | None = DEFAULT_EXPLORATION
    single_call: bool = False
    prices: PricesOption = None
    max_judge_cost: float | None = None
    max_judge_tokens: int | None = None
    fail_under: float | None = None
    surface: Surface = Surface.PYTHON

    def judge_options(self) -> dict[str, Any]:
        """These settings as the keywords every judge backend's constructor takes: its
        `options` whole (a `JudgeOptions`: a setting left unset keeps the backend's
        default) and, when given, where it is served and its key."""
        # max_tokens unset: not given (the backend's default for the model), not None.
        limits: dict[str, Any] = {"max_input_tokens": self.max_input_tokens}
        if self.max_tokens is not None:
            limits["max_tokens"] = self.max_tokens
        options = JudgeOptions(**self.http.as_judge_options(), cache=self.cache, **limits)
        served = {"base_url": self.base_url, "api_key": self.api_key}
        return {"options": options, **{k: v for k, v in served.items() if v is not None}}


def build_judge(settings: EvaluationSettings) -> Judge | None:
    """The judge of `settings`: the one `settings.judge` names (a `Judge` as it is), else
    the environment's, else None (checks only). Every judge setting reaches the judge
    built here. Raises `ConfigurationError` or `MissingAPIKeyError` when the judge named,
    or the one the environment names, cannot be built (an unknown provider, no key for a
    hosted API, a bad option)."""
    if settings.judge is not None and not isinstance(settings.judge, str):
        return judge_from_spec(settings.judge)  # checked to be a judge, used as it is
    if settings.judge is None:
        return default_judge(**settings.judge_options())
    return judge_from_spec(settings.judge, **settings.judge_options())


class _Build:
    """The type of `BUILD`: `build_service` builds the judge from the settings."""

    def __repr__(self) -> str:
        return "BUILD"


#: `build_service(settings, judge=BUILD)` (the default): the judge built from `settings`.
BUILD: Final = _Build()


def build_service(
    settings: EvaluationSettings,
    *,
    judge: Judge | None | _Build = BUILD,
    judge_problem: ComposoError | None = None,
    spend_limits: Sequence[SpendLimit] = (),
    keep_judge_failures: bool = False,
) -> EvaluationService:
    """The `EvaluationService` of `settings`: judge calls bounded by
    `settings.http.max_concurrency` (the judge's own bound), priced by `settings.prices`,
    capped by `max_judge_cost` / `max_judge_tokens` and `spend_limits` (budgets kept
    elsewhere, e.g. the server's daily ones), scores held to `fail_under`, long
    judgements explored under `exploration`, in the single-call mode with `single_call`.

    The judge is `build_judge(settings)`, unless `judge` gives it (None: checks only). A
    judge `settings.judge` names that cannot be built raises; one the environment names
    is reported (as `judge_problem`) when a text criterion needs it, since checks need no
    judge. Raises `ConfigurationError` for a cost cap on a model without a price (and no
    token cap), and for `single_call` with a judge that cannot judge several criteria in
    one call, as `EvaluationService` does. `keep_judge_failures`: a failed judgement is
    not evaluated, with the reason, instead of raising (see `EvaluationService`).
    """
    chosen: Judge | None
    if isinstance(judge, _Build):
        try:
            chosen = build_judge(settings)
        except ComposoError as error:
            if settings.judge is not None:
                raise
            chosen, judge_problem = None, error
    else:
        chosen = judge
    return EvaluationService(
        chosen,
        max_concurrency=settings.http.max_concurrency,
        judge_problem=judge_problem,
        fail_under=settings.fail_under,
        prices=settings.prices,
        max_judge_cost=settings.max_judge_cost,
        max_judge_tokens=settings.max_judge_tokens,
        spend_limits=spend_limits,
        exploration=settings.exploration,
        single_call=settings.single_call,
        keep_judge_failures=keep_judge_failures,
        surface=settings.surface,
    )
