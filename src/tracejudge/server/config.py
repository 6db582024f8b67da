"""The server's settings: one table, read in one place (flag, then environment, then default).

Every setting has a command-line flag and an environment variable
(`TRACEJUDGE_<NAME>`); a flag wins over the environment, a blank variable counts as
unset. The judge's provider key is not a setting: it is read from the provider's own
variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), so it never appears in a process
listing, and is never printed or logged.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from tracejudge import _env
from tracejudge.errors import ConfigurationError

__all__ = [
    "DESCRIPTION",
    "SETTINGS",
    "ServerConfig",
    "Setting",
    "add_arguments",
    "config_from",
    "exposed_secrets",
    "is_loopback",
    "parse_config",
    "read_key_file",
]

#: What `tracejudge serve --help` says first.
DESCRIPTION = (
    "Serve the Composo-compatible evaluation API and OTLP/HTTP trace intake; store traces "
    "and score them once complete."
)


@dataclass(frozen=True)
class ServerConfig:
    """Everything `tracejudge serve` can be told. See `SETTINGS` for each one's meaning."""

    host: str = "127.0.0.1"
    port: int = 8000
    judge: str | None = None
    judge_base_url: str | None = None
    db: str = "./tracejudge.db"
    api_keys: tuple[str, ...] = ()
    criteria_file: str | None = None
    allow_no_auth: bool = False
    workers: int = 4
    max_concurrency: int = 16
    judge_timeout_seconds: float = 60.0
    judge_max_tokens: int | None = None
    judge_max_input_tokens: int | None = None
    single_call: bool = False
    no_explore: bool = False
    trace_quiet_seconds: float = 5.0
    trace_timeout_seconds: float = 300.0
    max_body_bytes: int = 16 * 1024 * 1024
    rate_limit: float = 50.0
    rate_burst: int = 100
    task_lease_seconds: float = 60.0
    task_attempts: int = 3
    task_retention_hours: float = 168.0
    poll_seconds: float = 0.5
    log_level: str = "info"
    evaluation_events_endpoint: str | None = None
    evaluation_events_signal: str = "spans"
    judge_prices: str | None = None
    max_judge_cost_per_day: float | None = None
    max_judge_cost_per_criterion_per_day: float | None = None
    max_judge_tokens_per_day: int | None = None
    max_judge_tokens_per_criterion_per_day: int | None = None
    # --- robustness and exposure (#22): readiness, retention, hosts, keys, connections
    stall_seconds: float = 30.0
    liveness_seconds: float = 120.0
    retain_days: float | None = None
    allowed_hosts: tuple[str, ...] = ()
    api_key_file: str | None = None
    header_timeout_seconds: float = 10.0
    keep_alive_seconds: float = 5.0
    max_connections: int = 1000
    body_timeout_seconds: float = 30.0
    min_body_rate: float = 16384.0
    # --- nothing heavy on the event loop (#22)
    parse_threads: int = 2
    max_trace_spans: int = 20_000
    # --- outages and load (#32)
    max_backlog_traces: int = 10_000
    insecure_key_on_command_line: bool = False
    # --- rules and sessions (#33)
    rules_file: str | None = None
    # --- alerts (#33): monitors on the trends, webhooks
    public_url: str | None = None
    alert_interval_seconds: float = 30.0
    alert_retry_seconds: float = 5.0
    alert_attempts: int = 8

    def __post_init__(self) -> None:
        checks: list[tuple[str, bool, str]] = [
            ("port", 0 <= self.port <= 65535, "a TCP port, 0..65535"),
            ("workers", self.workers >= 1, "at least 1"),
            ("max_concurrency", self.max_concurrency >= 1, "at least 1"),
            ("judge_timeout_seconds", self.judge_timeout_seconds > 0, "more than 0"),
            (
                "judge_max_tokens",
                self.judge_max_tokens is None or self.judge_max_tokens >= 1,
                "at least 1",
            ),
            (
                "judge_max_input_tokens",
                self.judge_max_input_tokens is None or self.judge_max_input_tokens >= 256,
                "at least 256",
            ),
            ("trace_quiet_seconds", self.trace_quiet_seconds >= 0, "0 or more"),
            ("trace_timeout_seconds", self.trace_timeout_seconds > 0, "more than 0"),
            ("max_body_bytes", self.max_body_bytes >= 1024, "at least 1024"),
            ("rate_limit", self.rate_limit >= 0, "0 (no limit) or more"),
            ("rate_burst", self.rate_burst >= 1, "at least 1"),
            ("task_lease_seconds", self.task_lease_seconds > 0, "more than 0"),
            ("task_attempts", self.task_attempts >= 1, "at least 1"),
            ("task_retention_hours", self.task_retention_hours > 0, "more than 0"),
            ("poll_seconds", self.poll_seconds > 0, "more than 0"),
            ("stall_seconds", self.stall_seconds > 0, "more than 0"),
            ("liveness_seconds", self.liveness_seconds > 0, "more than 0"),
            ("retain_days", self.retain_days is None or self.retain_days > 0, "more than 0"),
            ("header_timeout_seconds", self.header_timeout_seconds > 0, "more than 0"),
            ("keep_alive_seconds", self.keep_alive_seconds > 0, "more than 0"),
            ("max_connections", self.max_connections >= 1, "at least 1"),
            ("body_timeout_seconds", self.body_timeout_seconds > 0, "more than 0"),
            ("min_body_rate", self.min_body_rate >= 0, "0 (only the deadline) or more"),
            ("parse_threads", self.parse_threads >= 1, "at least 1"),
            ("max_trace_spans", self.max_trace_spans >= 1, "at least 1"),
            ("max_backlog_traces", self.max_backlog_traces >= 0, "0 (no bound) or more"),
            ("alert_interval_seconds", self.alert_interval_seconds > 0, "more than 0"),
            ("alert_retry_seconds", self.alert_retry_seconds > 0, "more than 0"),
            ("alert_attempts", self.alert_attempts >= 1, "at least 1"),
        ]
        for budget in (
            "max_judge_cost_per_day",
            "max_judge_cost_per_criterion_per_day",
            "max_judge_tokens_per_day",
            "max_judge_tokens_per_criterion_per_day",
        ):
            value = getattr(self, budget)
            if value is not None:
                finite = value == value and value != float("inf")
                checks.append((budget, value > 0 and finite, "more than 0"))
        for name, ok, need in checks:
            if not ok:
                setting = SETTINGS_BY_FIELD[name]
                raise ConfigurationError(
                    f"{setting.flag} (or {setting.env}) is {getattr(self, name)!r}; "
                    f"it must be {need}"
                )
        if self.evaluation_events_signal not in ("spans", "logs"):
            setting = SETTINGS_BY_FIELD["evaluation_events_signal"]
            raise ConfigurationError(
                f"{setting.flag} (or {setting.env}) is {self.evaluation_events_signal!r}; "
                "it must be spans or logs"
            )
        endpoint = self.evaluation_events_endpoint
        if endpoint is not None and not endpoint.startswith(("http://", "https://")):
            setting = SETTINGS_BY_FIELD["evaluation_events_endpoint"]
            raise ConfigurationError(
                f"{setting.flag} (or {setting.env}) is {endpoint!r}; give the OTLP/HTTP base "
                "URL, such as http://collector:4318"
            )
        if self.public_url is not None and not self.public_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"--public-url (or TRACEJUDGE_PUBLIC_URL) is {self.public_url!r}; give the "
                "address people open the server at, such as https://tracejudge.example.com"
            )
        if any(not key.strip() for key in self.api_keys):
            raise ConfigurationError("--api-key (or TRACEJUDGE_API_KEYS) holds an empty key")
        if self.api_key_file is not None:
            keys = (*self.api_keys, *read_key_file(self.api_key_file))
            object.__setattr__(self, "api_keys", tuple(dict.fromkeys(keys)))
        for host in self.allowed_hosts:
            if not host.strip() or "/" in host:
                raise ConfigurationError(
                    f"--allowed-host {host!r} is not a host name; give a name such as "
                    "traces.example.com (optionally with :port), or * for any"
                )

    def __repr__(self) -> str:
        # The keys are secrets: a repr in a log or a traceback must not show them.
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        shown["api_keys"] = f"<{len(self.api_keys)} keys>"
        return "ServerConfig(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    @property
    def requires_keys(self) -> bool:
        return bool(self.api_keys)

    def budgets_text(self) -> str:
        """The judge's daily budgets in a few words ("" when there is none)."""
        from tracejudge.evaluation import format_usd

        parts = []
        if self.max_judge_cost_per_day is not None:
            parts.append(f"{format_usd(self.max_judge_cost_per_day)} per day")
        if self.max_judge_cost_per_criterion_per_day is not None:
            dollars = format_usd(self.max_judge_cost_per_criterion_per_day)
            parts.append(f"{dollars} per criterion per day")
        if self.max_judge_tokens_per_day is not None:
            parts.append(f"{self.max_judge_tokens_per_day:,} tokens per day")
        if self.max_judge_tokens_per_criterion_per_day is not None:
            tokens = self.max_judge_tokens_per_criterion_per_day
            parts.append(f"{tokens:,} tokens per criterion per day")
        return ", ".join(parts)


@dataclass(frozen=True)
class Setting:
    """One row of the table: the field, its flag, its variable, how to read it, its help."""

    field: str
    flag: str
    env: str
    kind: Callable[[str], Any]
    help: str
    many: bool = False
    switch: bool = False
    #: Further variables read when the main one is unset (each a comma-separated list when
    #: `many`).
    aliases: tuple[str, ...] = ()


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not a yes/no value (use 1/0, true/false, yes/no)")


SETTINGS: tuple[Setting, ...] = (
    Setting("host", "--host", "TRACEJUDGE_HOST", str, "address to listen on"),
    Setting("port", "--port", "TRACEJUDGE_PORT", int, "TCP port to listen on"),
    Setting(
        "judge",
        "--judge",
        "TRACEJUDGE_JUDGE",
        str,
        "judge model, e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:llama3.1 "
        "(default: the environment's, else only deterministic checks run)",
    ),
    Setting(
        "judge_base_url",
        "--judge-base-url",
        "TRACEJUDGE_JUDGE_BASE_URL",
        str,
        "base URL of the judge's OpenAI-compatible or Anthropic API (vLLM, Ollama, ...)",
    ),
    Setting(
        "db",
        "--db",
        "TRACEJUDGE_DB",
        str,
        "SQLite file (default ./tracejudge.db) or postgresql://user@host:port/db",
    ),
    Setting(
        "api_keys",
        "--api-key",
        "TRACEJUDGE_API_KEYS",
        str,
        "an API key clients must send (repeat for several; the variable takes a "
        "comma-separated list, TRACEJUDGE_API_KEY one key). A key on the command line shows "
        "in the process list, so the flag is refused without --insecure-key-on-command-line: "
        "use --api-key-file or the variable",
        many=True,
        aliases=("TRACEJUDGE_API_KEY",),
    ),
    Setting(
        "criteria_file",
        "--criteria-file",
        "TRACEJUDGE_CRITERIA_FILE",
        str,
        "criteria that ingested traces are scored against, one per line (# comments); "
        "default: the agent criteria when a judge is configured",
    ),
    Setting(
        "allow_no_auth",
        "--allow-no-auth",
        "TRACEJUDGE_ALLOW_NO_AUTH",
        _bool,
        "listen on a non-loopback address without API keys (anyone who reaches it may use it)",
        switch=True,
    ),
    Setting("workers", "--workers", "TRACEJUDGE_WORKERS", int, "background tasks run at once"),
    Setting(
        "max_concurrency",
        "--max-concurrency",
        "TRACEJUDGE_MAX_CONCURRENCY",
        int,
        "judge calls in flight at once",
    ),
    Setting(
        "judge_timeout_seconds",
        "--judge-timeout-seconds",
        "TRACEJUDGE_JUDGE_TIMEOUT_SECONDS",
        float,
        "seconds one judgement may take, retries included (default 60)",
    ),
    Setting(
        "judge_max_tokens",
        "--judge-max-tokens",
        "TRACEJUDGE_JUDGE_MAX_TOKENS",
        int,
        "the most tokens of one judge reply (default: 2048, more for reasoning models)",
    ),
    Setting(
        "judge_max_input_tokens",
        "--judge-max-input-tokens",
        "TRACEJUDGE_JUDGE_MAX_INPUT_TOKENS",
        int,
        "the most tokens one judge request may hold; a longer judgement is explored "
        "(default: the model's context window less --judge-max-tokens)",
    ),
    Setting(
        "single_call",
        "--single-call",
        "TRACEJUDGE_SINGLE_CALL",
        _bool,
        "judge all the criteria of one agent in one judge call (cheaper, at the price of "
        "some independence between the criteria)",
        switch=True,
    ),
    Setting(
        "no_explore",
        "--no-explore",
        "TRACEJUDGE_NO_EXPLORE",
        _bool,
        "do not explore a judgement too long for the judge's input budget: mark it not "
        "evaluated instead",
        switch=True,
    ),
    Setting(
        "trace_quiet_seconds",
        "--trace-quiet-seconds",
        "TRACEJUDGE_TRACE_QUIET_SECONDS",
        float,
        "an ingested trace is complete once its root span ended and no span came for this long",
    ),
    Setting(
        "trace_timeout_seconds",
        "--trace-timeout-seconds",
        "TRACEJUDGE_TRACE_TIMEOUT_SECONDS",
        float,
        "a trace whose root span never came is scored after no span came for this long",
    ),
    Setting(
        "max_body_bytes",
        "--max-body-bytes",
        "TRACEJUDGE_MAX_BODY_BYTES",
        int,
        "largest request body accepted (larger: HTTP 413); also the limit after gunzip",
    ),
    Setting(
        "rate_limit",
        "--rate-limit",
        "TRACEJUDGE_RATE_LIMIT",
        float,
        "requests per second allowed per API key (0: no limit; above it: HTTP 429)",
    ),
    Setting("rate_burst", "--rate-burst", "TRACEJUDGE_RATE_BURST", int, "requests allowed at once"),
    Setting(
        "task_lease_seconds",
        "--task-lease-seconds",
        "TRACEJUDGE_TASK_LEASE_SECONDS",
        float,
        "a running task not renewed for this long is taken over by another worker or replica",
    ),
    Setting(
        "task_attempts",
        "--task-attempts",
        "TRACEJUDGE_TASK_ATTEMPTS",
        int,
        "times a task is started before an interrupted one is marked failed",
    ),
    Setting(
        "task_retention_hours",
        "--task-retention-hours",
        "TRACEJUDGE_TASK_RETENTION_HOURS",
        float,
        "finished tasks stay readable this long",
    ),
    Setting(
        "poll_seconds",
        "--poll-seconds",
        "TRACEJUDGE_POLL_SECONDS",
        float,
        "how often idle workers look for queued tasks and complete traces",
    ),
    Setting(
        "log_level",
        "--log-level",
        "TRACEJUDGE_LOG_LEVEL",
        str,
        "the log's level (the server's messages and uvicorn's): debug, info, warning, error",
    ),
    Setting(
        "evaluation_events_endpoint",
        "--evaluation-events-endpoint",
        "TRACEJUDGE_EVALUATION_EVENTS_ENDPOINT",
        str,
        "write each score back onto its trace, as an OTel GenAI evaluation event parented to "
        "the judged agent's span, to this OTLP/HTTP base URL (a Collector: "
        "http://collector:4318); headers from OTEL_EXPORTER_OTLP_HEADERS",
    ),
    Setting(
        "evaluation_events_signal",
        "--evaluation-events-signal",
        "TRACEJUDGE_EVALUATION_EVENTS_SIGNAL",
        str,
        "how written-back scores travel: spans (span events on a short child span of the "
        "agent, shown by trace backends; default) or logs (the conventions' log records)",
    ),
    Setting(
        "judge_prices",
        "--judge-prices",
        "TRACEJUDGE_JUDGE_PRICES",
        str,
        'JSON prices of judge models over the shipped table, e.g. {"my-model": {"input": '
        '0.3, "output": 1.2}} in dollars per million tokens: the cost on every verdict',
    ),
    Setting(
        "max_judge_cost_per_day",
        "--max-judge-cost-per-day",
        "TRACEJUDGE_MAX_JUDGE_COST_PER_DAY",
        float,
        "dollars the judge may spend per day (UTC), shared by replicas: past it, new "
        "judgements are not evaluated (the checks still run)",
    ),
    Setting(
        "max_judge_cost_per_criterion_per_day",
        "--max-judge-cost-per-criterion-per-day",
        "TRACEJUDGE_MAX_JUDGE_COST_PER_CRITERION_PER_DAY",
        float,
        "dollars the judge may spend per criterion per day (UTC)",
    ),
    Setting(
        "max_judge_tokens_per_day",
        "--max-judge-tokens-per-day",
        "TRACEJUDGE_MAX_JUDGE_TOKENS_PER_DAY",
        int,
        "tokens the judge may use per day (UTC); works without prices",
    ),
    Setting(
        "max_judge_tokens_per_criterion_per_day",
        "--max-judge-tokens-per-criterion-per-day",
        "TRACEJUDGE_MAX_JUDGE_TOKENS_PER_CRITERION_PER_DAY",
        int,
        "tokens the judge may use per criterion per day (UTC)",
    ),
)

SETTINGS += (
    # --- robustness and exposure (#22)
    Setting(
        "stall_seconds",
        "--stall-seconds",
        "TRACEJUDGE_STALL_SECONDS",
        float,
        "a background loop (worker, sweeper, lease keeper, pruner) that made no progress for "
        "this long, outside a task's own work, is stalled: GET /ready answers 503 naming it",
    ),
    Setting(
        "liveness_seconds",
        "--liveness-seconds",
        "TRACEJUDGE_LIVENESS_SECONDS",
        float,
        "GET /health (liveness) answers 503 when the store has failed, or a background loop "
        "made no progress, for this long: the server cannot get on by itself, restart it "
        "(a shorter blip keeps /health at 200)",
    ),
    Setting(
        "retain_days",
        "--retain-days",
        "TRACEJUDGE_RETAIN_DAYS",
        float,
        "delete stored traces (with their span batches and evaluations), and evaluations, "
        "older than this many days (default: keep everything)",
    ),
    Setting(
        "allowed_hosts",
        "--allowed-host",
        "TRACEJUDGE_ALLOWED_HOSTS",
        str,
        "a Host name clients may address the server by, besides loopback names and the "
        "listening address (repeat for several; * allows any). Without API keys every other "
        "Host gets HTTP 421 (DNS rebinding); with keys the check applies once one is given",
        many=True,
    ),
    Setting(
        "api_key_file",
        "--api-key-file",
        "TRACEJUDGE_API_KEY_FILE",
        str,
        "a file of API keys clients must send, one per line (# comments), kept out of the "
        "process list",
    ),
    Setting(
        "header_timeout_seconds",
        "--header-timeout-seconds",
        "TRACEJUDGE_HEADER_TIMEOUT_SECONDS",
        float,
        "a connection that has not sent a whole request head within this long of opening (or "
        "of its previous answer) is closed (slow clients, slow-loris)",
    ),
    Setting(
        "keep_alive_seconds",
        "--keep-alive-seconds",
        "TRACEJUDGE_KEEP_ALIVE_SECONDS",
        float,
        "an idle keep-alive connection is closed after this long",
    ),
    Setting(
        "max_connections",
        "--max-connections",
        "TRACEJUDGE_MAX_CONNECTIONS",
        int,
        "open connections at most; one more is closed at once (the process's file limit is "
        "raised to fit, when it can be), but for a few kept for /health and /ready",
    ),
    Setting(
        "body_timeout_seconds",
        "--body-timeout-seconds",
        "TRACEJUDGE_BODY_TIMEOUT_SECONDS",
        float,
        "a request body must arrive whole within this long of its head, or keep arriving at "
        "--min-body-rate after it; else it is answered 408 and its connection closed "
        "(default 30)",
    ),
    Setting(
        "min_body_rate",
        "--min-body-rate",
        "TRACEJUDGE_MIN_BODY_RATE",
        float,
        "bytes a second a request body must average once past --body-timeout-seconds "
        "(default 16384; 0: the deadline alone)",
    ),
)

SETTINGS += (
    # --- nothing heavy on the event loop (#22)
    Setting(
        "parse_threads",
        "--parse-threads",
        "TRACEJUDGE_PARSE_THREADS",
        int,
        "worker threads that decode, inflate, validate and convert at once, off the event "
        "loop (OTLP and JSON bodies, stored traces for scoring, trace pages); more wait",
    ),
    Setting(
        "max_trace_spans",
        "--max-trace-spans",
        "TRACEJUDGE_MAX_TRACE_SPANS",
        int,
        "spans one ingested trace may have: a trace past it is kept as too_large, with the "
        "reason, without its spans, and not scored",
    ),
    # --- outages and load (#32)
    Setting(
        "max_backlog_traces",
        "--max-backlog-traces",
        "TRACEJUDGE_MAX_BACKLOG_TRACES",
        int,
        "traces stored and not yet scored at most: past it, OTLP uploads are answered 503 "
        "with Retry-After (exporters retry) until scoring catches up (default 10000; 0: no "
        "bound)",
    ),
    Setting(
        "insecure_key_on_command_line",
        "--insecure-key-on-command-line",
        "TRACEJUDGE_INSECURE_KEY_ON_COMMAND_LINE",
        _bool,
        "accept --api-key on the command line, where every user of the machine can read it "
        "(ps, /proc/PID/cmdline)",
        switch=True,
    ),
)

SETTINGS += (
    # --- rules and sessions (#33)
    Setting(
        "rules_file",
        "--rules",
        "TRACEJUDGE_RULES",
        str,
        "evaluation rules, TOML or YAML: which traces get which judge criteria (each with its "
        "bar), at what sampling rate, within what daily budget; checked at start. The checks "
        "still run on every trace. Rules made through /api/v1/rules apply too",
    ),
    # --- alerts (#33)
    Setting(
        "public_url",
        "--public-url",
        "TRACEJUDGE_PUBLIC_URL",
        str,
        "the address people open this server at: alerts link to its pages there "
        "(default: http://HOST:PORT as it listens)",
    ),
    Setting(
        "alert_interval_seconds",
        "--alert-interval-seconds",
        "TRACEJUDGE_ALERT_INTERVAL_SECONDS",
        float,
        "how often the monitors are checked against the trends, and due webhooks sent",
    ),
    Setting(
        "alert_retry_seconds",
        "--alert-retry-seconds",
        "TRACEJUDGE_ALERT_RETRY_SECONDS",
        float,
        "the first wait before a webhook the receiver did not take is sent again (doubled "
        "at each attempt, at most 10 minutes)",
    ),
    Setting(
        "alert_attempts",
        "--alert-attempts",
        "TRACEJUDGE_ALERT_ATTEMPTS",
        int,
        "attempts to deliver one alert before it is logged as failed",
    ),
)

SETTINGS_BY_FIELD = {s.field: s for s in SETTINGS}
assert {f.name for f in fields(ServerConfig)} == set(SETTINGS_BY_FIELD)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the server's flags to `parser` (every default None: not given)."""
    for s in SETTINGS:
        help_text = f"{s.help} [{s.env}]"
        if s.switch:
            parser.add_argument(
                s.flag, dest=s.field, action="store_true", default=None, help=help_text
            )
        elif s.many:
            parser.add_argument(s.flag, dest=s.field, action="append", default=None, help=help_text)
        else:
            parser.add_argument(s.flag, dest=s.field, default=None, help=help_text)


def argument_parser(prog: str = "tracejudge serve") -> argparse.ArgumentParser:
    """The parser of the server's flags."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=DESCRIPTION,
        epilog="Every flag can also be set in the environment variable named in its help.",
    )
    add_arguments(parser)
    return parser


def parse_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> ServerConfig:
    """The configuration from flags, then the environment, then the defaults.

    Raises `ConfigurationError` naming the flag and its variable when a value is unusable.
    """
    env = dict(_env.environ() if environ is None else environ)
    args = sys.argv[1:] if argv is None else list(argv)
    given = vars(argument_parser().parse_args(args))
    return config_from(given, env)


def config_from(given: Mapping[str, Any], env: Mapping[str, str]) -> ServerConfig:
    """Build the configuration from already-parsed flags (None: not given) and `env`."""
    values: dict[str, Any] = {}
    for s in SETTINGS:
        raw = given.get(s.field)
        source = s.flag
        if raw is None:
            text, source = None, s.env
            for name in (s.env, *s.aliases):
                text = _env.read(name, env)
                if text is not None:
                    source = name
                    break
            if text is None:
                continue
            raw = [k.strip() for k in text.split(",") if k.strip()] if s.many else text
        try:
            if s.many:
                values[s.field] = tuple(str(k) for k in raw)
            elif s.switch and isinstance(raw, bool):
                values[s.field] = raw
            else:
                values[s.field] = s.kind(str(raw))
        except ValueError as exc:
            raise ConfigurationError(f"{source}={raw!r} is not usable: {exc}") from None
    if given.get("api_keys") and not values.get("insecure_key_on_command_line"):
        raise ConfigurationError(exposed_secrets(given)[0])
    return ServerConfig(**values)


def read_key_file(path: str) -> list[str]:
    """The API keys in `path`: one per line; blank lines and lines starting with # skipped.
    `ConfigurationError` (never showing a key) when it cannot be read or holds none."""
    try:
        text = open(path, encoding="utf-8").read()  # noqa: SIM115 - read at once
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or type(exc).__name__
        raise ConfigurationError(
            f"--api-key-file {path!r} cannot be read ({why}); give a UTF-8 text file with "
            "one key per line"
        ) from None
    keys = [line.strip() for line in text.splitlines()]
    keys = [k for k in keys if k and not k.startswith("#")]
    if not keys:
        raise ConfigurationError(f"--api-key-file {path!r} holds no key")
    return keys


def exposed_secrets(given: Mapping[str, Any]) -> list[str]:
    """Warnings for secrets given as command-line flags (which `ps` shows to every user)."""
    if given.get("api_keys"):
        return [
            "--api-key on the command line shows the key to every user of this machine (ps, "
            "/proc/PID/cmdline): give it with --api-key-file FILE, or TRACEJUDGE_API_KEY(S) in "
            "the environment (or add --insecure-key-on-command-line to accept that)"
        ]
    return []


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
