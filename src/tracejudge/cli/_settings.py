"""The judging commands' settings: one table, read in one place (flag, then environment
variable, then the command's default), into `EvaluationSettings`.

Every judge, cost, concurrency and timeout flag of `score`, `attribute`, `bench
attribution`, `calibrate`, `rubric` and `demo` is a row of `SETTINGS`: its flag, its
variable, how its text is read, and its help, so a flag means the same, reads the same
variable and says the same in every command that has it. A command picks its rows with
`add_settings` (with its own default where it differs), and `resolve` puts each value in
the parsed arguments (the flag's, else the variable's, else the default) and remembers
where it came from, so a bad value is reported under the name the user gave it. The rows
`serve` shares (judge, timeout, concurrency, token limits, prices, single call,
exploration) take their flag, variable and help from `server.config`'s table, the one
`serve` reads, so the two cannot drift apart.

Two concurrencies, two names: `--max-concurrency` is the judge calls in flight at once
(as `serve` has it), `--concurrency` the traces (or benchmark items) worked on at once by
the commands that work on many. `calibrate` and `rubric` once spelled the first
`--concurrency`; that spelling still works there, with a deprecation message.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracejudge import _env
from tracejudge.cli._errors import UsageError
from tracejudge.server.config import SETTINGS_BY_FIELD as SERVE_SETTINGS

__all__ = [
    "PER_TRACE",
    "SETTINGS",
    "SETTINGS_BY_NAME",
    "Setting",
    "add_settings",
    "evaluation_settings",
    "flags_given",
    "judged_service",
    "source",
    "fraction",
    "positive",
    "resolve",
]

# --------------------------------------------------------------------------- value readers


def positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """A reader of a number of `kind` above zero (argparse names the option; `resolve`
    names the variable)."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            expected = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
        return value

    return parse


def fraction(text: str) -> float:
    """A reader of a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


def _at_least(minimum: int) -> Callable[[str], int]:
    whole = positive(int)

    def parse(text: str) -> int:
        value = int(whole(text))
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text!r}")
        return value

    return parse


def _text(text: str) -> str:
    return text


def _yes_no(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a yes/no value (1/0, true/false, yes/no)")


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Setting:
    """One row: the attribute it fills, its flag (and further spellings), its variable,
    how its text is read, its help, and the default of the commands that do not say.

    `read_env=False`: the variable is named in the help but read further down (the
    judge's, which the backend precedence reads with OPENAI_API_KEY / OPENAI_BASE_URL,
    so that a judge the environment names that cannot be built only matters when a
    criterion needs it)."""

    name: str
    flag: str
    env: str
    parse: Callable[[str], Any]
    help: str
    default: Any = None
    switch: bool = False
    metavar: str | None = None
    spellings: tuple[str, ...] = ()
    read_env: bool = True


def _shared(name: str, parse: Callable[[str], Any], **row: Any) -> Setting:
    """A row `serve` has too: its flag, variable and help are `serve`'s."""
    served = SERVE_SETTINGS[name]
    return Setting(name, served.flag, served.env, parse, served.help, **row)


SETTINGS: tuple[Setting, ...] = (
    _shared("judge", _text, metavar="SPEC", read_env=False),
    _shared("judge_base_url", _text, metavar="URL"),
    _shared(
        "judge_timeout_seconds",
        positive(float),
        default=60.0,
        metavar="SECONDS",
        spellings=("--judge-timeout",),
    ),
    _shared("max_concurrency", positive(int), default=16, metavar="N"),
    _shared("judge_max_tokens", positive(int), metavar="N"),
    _shared("judge_max_input_tokens", _at_least(256), metavar="N"),
    _shared("judge_prices", _text, metavar="FILE"),
    Setting(
        "max_judge_cost",
        "--max-judge-cost",
        "TRACEJUDGE_MAX_JUDGE_COST",
        positive(float),
        "stop starting judgements once this run's judge calls cost this many dollars: the "
        "rest are marked not evaluated (needs a priced judge model; see --judge-prices)",
        metavar="DOLLARS",
    ),
    Setting(
        "max_judge_tokens",
        "--max-judge-tokens",
        "TRACEJUDGE_MAX_JUDGE_TOKENS",
        positive(int),
        "stop starting judgements once this run's judge calls used this many tokens (works "
        "without prices)",
        metavar="N",
    ),
    _shared("single_call", _yes_no, default=False, switch=True),
    _shared("no_explore", _yes_no, default=False, switch=True),
    Setting(
        "fail_under",
        "--fail-under",
        "TRACEJUDGE_FAIL_UNDER",
        fraction,
        "hold every agent to this score (0..1) on every criterion (default: 1.0 for a "
        "check, 0.5 for a judged criterion)",
        metavar="X",
    ),
    Setting(
        "concurrency",
        "--concurrency",
        "TRACEJUDGE_CONCURRENCY",
        positive(int),
        "traces worked on at once, each with its own judge calls",
        default=8,
        metavar="N",
    ),
)

SETTINGS_BY_NAME = {s.name: s for s in SETTINGS}

#: The rows of every command that builds a judge from a spec.
JUDGE = ("judge", "judge_base_url", "judge_timeout_seconds", "max_concurrency")
#: The judge's token limits.
TOKENS = ("judge_max_tokens", "judge_max_input_tokens")
#: The caps and prices of a run's judge spend.
SPEND = ("judge_prices", "max_judge_cost", "max_judge_tokens")

#: `max_concurrency`'s default where `--concurrency` traces run at once: four judge calls
#: in flight for each.
CALLS_PER_TRACE = 4


def judge_calls_per_trace(values: Mapping[str, Any]) -> int:
    """The default of `--max-concurrency` beside `--concurrency`."""
    return CALLS_PER_TRACE * int(values["concurrency"])


@dataclass(frozen=True)
class Default:
    """A command's own default for a row: a value, or a function of the other settings'
    values (resolved first), with the words its help shows."""

    value: Any
    text: str | None = None

    def shown(self) -> str:
        return self.text if self.text is not None else str(self.value)


#: `max_concurrency`'s default where `--concurrency` traces run at once.
PER_TRACE = Default(judge_calls_per_trace, f"{CALLS_PER_TRACE} per trace of --concurrency")


def add_settings(
    parser: argparse.ArgumentParser,
    names: Sequence[str],
    *,
    defaults: Mapping[str, Any] | None = None,
    deprecated: Mapping[str, str] | None = None,
) -> None:
    """Give `parser` the rows `names` (a command's own `defaults` by name, a value or a
    `Default`); `deprecated` maps an old flag to the row it now sets. Every flag's default
    is None (not given): `resolve` fills in the variable or the default."""
    chosen: dict[str, Default] = {}
    for name in names:
        row = SETTINGS_BY_NAME[name]
        given = (defaults or {}).get(name, row.default)
        default = given if isinstance(given, Default) else Default(given)
        chosen[name] = default
        # The default shows unless there is none, or the row's own help already says it.
        said = row.switch or (name not in (defaults or {}) and "default" in row.help)
        shown = "" if default.value is None or said else f" (default: {default.shown()})"
        help_text = f"{row.help}{shown} [{row.env}]"
        flags = (row.flag, *row.spellings)
        if row.switch:
            parser.add_argument(
                *flags, dest=name, action="store_true", default=None, help=help_text
            )
        else:
            parser.add_argument(
                *flags,
                dest=name,
                type=row.parse,
                default=None,
                metavar=row.metavar,
                help=help_text,
            )
    for old, name in (deprecated or {}).items():
        row = SETTINGS_BY_NAME[name]
        parser.add_argument(
            old,
            dest=name,
            type=row.parse,
            action=_DeprecatedFlag,
            default=None,
            metavar=row.metavar,
            help=f"deprecated here: {row.flag}",
        )
    parser.set_defaults(_settings=chosen)


class _DeprecatedFlag(argparse.Action):
    """An old spelling: stores the value as the row's flag would, and notes the flag so
    that `resolve` says, once, what it is now."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        used = dict(getattr(namespace, "_deprecated", None) or {})
        used[self.dest] = option_string or self.option_strings[0]
        namespace._deprecated = used


def resolve(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> None:
    """Fill each setting of the command in `args`: the flag's value, else its variable's
    (blank counts as unset), else the command's default; note in `args._sources` where
    each came from (the flag or the variable). Done once; raises `UsageError` naming the
    variable and the problem when a variable's value cannot be used."""
    chosen: dict[str, Default] | None = getattr(args, "_settings", None)
    if chosen is None or getattr(args, "_sources", None) is not None:
        return
    env = _env.environ() if environ is None else environ
    sources: dict[str, str] = {}
    for name, old_flag in (getattr(args, "_deprecated", None) or {}).items():
        row = SETTINGS_BY_NAME[name]
        print(
            f"tracejudge {args.command}: {old_flag} is deprecated here, use {row.flag} "
            f"({row.help}); {old_flag} is the traces worked on at once, in every command "
            "that has it",
            file=sys.stderr,
        )
    later: list[str] = []
    for name, default in chosen.items():
        row = SETTINGS_BY_NAME[name]
        if getattr(args, name, None) is not None:
            sources[name] = (getattr(args, "_deprecated", None) or {}).get(name, row.flag)
            continue
        text = _env.read(row.env, env) if row.read_env else None
        if text is not None:
            try:
                setattr(args, name, row.parse(text))
            except (ValueError, argparse.ArgumentTypeError) as error:
                raise UsageError(
                    f"{row.env}={text!r} is not usable for {row.flag}: {error}"
                ) from None
            sources[name] = row.env
        elif callable(default.value):
            later.append(name)
        else:
            setattr(args, name, default.value)
    for name in later:  # defaults that follow other settings' values
        setattr(args, name, chosen[name].value(vars(args)))
    args._sources = sources


def source(args: argparse.Namespace, name: str) -> str:
    """Where the setting `name` of `args` came from: its flag or its variable (the flag
    when it took the default)."""
    sources: Mapping[str, str] = getattr(args, "_sources", None) or {}
    return sources.get(name, SETTINGS_BY_NAME[name].flag)


def flags_given(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """The flags of `names` given on the command line (not those from the environment)."""
    resolve(args)
    sources: Mapping[str, str] = args._sources
    return [sources[name] for name in names if sources.get(name, "").startswith("--")]


def evaluation_settings(args: argparse.Namespace, **overrides: Any) -> Any:
    """The `EvaluationSettings` of a command's settings (resolved first if they are not
    yet): its judge, where it is served, its timeout and calls in flight, token limits,
    prices, spending caps, single call, exploration and bar; a row the command does not
    have keeps `EvaluationSettings`' default. `overrides` set further fields (a command's
    own, e.g. `cache`)."""
    from tracejudge._advice import Surface
    from tracejudge._http import HTTPOptions
    from tracejudge.evaluation import DEFAULT_EXPLORATION, EvaluationSettings

    resolve(args)
    value = vars(args).get
    http = HTTPOptions(
        timeout=value("judge_timeout_seconds") or HTTPOptions.timeout,
        max_concurrency=value("max_concurrency") or HTTPOptions.max_concurrency,
    )
    return EvaluationSettings(
        judge=value("judge") or None,
        base_url=value("judge_base_url"),
        http=http,
        max_tokens=value("judge_max_tokens"),
        max_input_tokens=value("judge_max_input_tokens"),
        exploration=None if value("no_explore") else DEFAULT_EXPLORATION,
        single_call=bool(value("single_call")),
        prices=value("judge_prices"),
        max_judge_cost=value("max_judge_cost"),
        max_judge_tokens=value("max_judge_tokens"),
        fail_under=value("fail_under"),
        surface=Surface.CLI,
        **overrides,
    )


def judged_service(
    args: argparse.Namespace, *, keep_judge_failures: bool = False, **overrides: Any
) -> Any:
    """The evaluation service of a command's settings (see `evaluation_settings`);
    `keep_judge_failures`: a failed judgement is not evaluated instead of raising. A judge
    named by `--judge` that cannot be built, a bad price file and a cost cap that cannot
    be enforced are usage errors naming the flag (or variable), before anything is read
    or judged; the environment's judge that cannot be built is a problem only when a
    criterion needs it."""
    import dataclasses

    from tracejudge.errors import ComposoError, ConfigurationError
    from tracejudge.evaluation import (
        build_judge,
        build_service,
        format_usd,
        judge_model,
        resolve_prices,
    )

    settings = evaluation_settings(args, **overrides)
    problem: ComposoError | None = None
    built = None
    try:
        built = build_judge(settings)
    except ComposoError as error:
        if settings.judge:  # asked for by name: a usage problem now
            raise UsageError(f"--judge {settings.judge}: {error}") from None
        problem = error  # from the environment: only a problem if a criterion needs it
    try:
        table = resolve_prices(settings.prices, option=source(args, "judge_prices"))
    except ConfigurationError as error:
        raise UsageError(str(error)) from None
    max_cost, max_tokens = settings.max_judge_cost, settings.max_judge_tokens
    model = judge_model(built) if built is not None else None
    if max_cost is not None and built is not None and table.get(model) is None:
        cap = source(args, "max_judge_cost")
        unpriced = (
            f"{cap}: the judge's model {model!r} has no price, so the cap of "
            f"{format_usd(max_cost)} cannot be enforced"
        )
        if max_tokens is None:
            raise UsageError(
                f"{unpriced}; give its price with --judge-prices FILE (JSON: "
                f'{{"{model}": {{"input": 0.3, "output": 1.2}}}}, dollars per million tokens) '
                "or cap tokens with --max-judge-tokens N"
            )
        print(
            f"tracejudge {args.command}: {unpriced}; --max-judge-tokens {max_tokens:,} caps "
            "the run",
            file=sys.stderr,
        )
        max_cost = None  # said once, here
    settings = dataclasses.replace(settings, prices=table, max_judge_cost=max_cost)
    try:
        return build_service(
            settings, judge=built, judge_problem=problem, keep_judge_failures=keep_judge_failures
        )
    except ConfigurationError as error:  # a judge that cannot judge criteria together
        where = "--single-call: " if settings.single_call else ""
        raise UsageError(f"{where}{error}") from None
