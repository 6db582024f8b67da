"""Every environment variable tracejudge reads, the one way it reads them, and the choice
of where evaluation runs.

A blank value (empty or only spaces) means unset, for every variable alike: so
`TRACEJUDGE_JUDGE=" "` names no judge, exactly as if it were not there.

The standard OpenTelemetry variables (`OTEL_*`) are read by the OpenTelemetry SDK itself;
tracejudge only looks at the few below to decide whether to add an OTLP exporter.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "COMPOSO_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENROUTER_API_KEY",
    "OTLP_ENDPOINT_VARIABLES",
    "OTLP_PROTOCOL_VARIABLES",
    "OTLP_TIMEOUT_VARIABLES",
    "OTEL_BSP_EXPORT_TIMEOUT",
    "TOGETHER_API_KEY",
    "TRACEJUDGE_API_KEY",
    "TRACEJUDGE_JUDGE",
    "TRACEJUDGE_JUDGE_MODEL",
    "TRACEJUDGE_JUDGE_PRICES",
    "VARIABLES",
    "VLLM_API_KEY",
    "Backend",
    "BackendChoice",
    "choose_backend",
    "environ",
    "read",
]

#: The key of a remote Composo-compatible server; setting it selects that server.
COMPOSO_API_KEY = "COMPOSO_API_KEY"
#: A judge spec ("openai:gpt-4.1-mini"); setting it selects an in-process judge.
TRACEJUDGE_JUDGE = "TRACEJUDGE_JUDGE"
#: The model of the judge that OPENAI_API_KEY / OPENAI_BASE_URL alone configure.
TRACEJUDGE_JUDGE_MODEL = "TRACEJUDGE_JUDGE_MODEL"
#: The key `tracejudge demo --to` sends to a tracejudge server (the exporters' configs too).
TRACEJUDGE_API_KEY = "TRACEJUDGE_API_KEY"
#: A JSON file of judge model prices (dollars per million tokens) over the shipped table.
TRACEJUDGE_JUDGE_PRICES = "TRACEJUDGE_JUDGE_PRICES"
OPENAI_API_KEY = "OPENAI_API_KEY"
OPENAI_BASE_URL = "OPENAI_BASE_URL"
ANTHROPIC_API_KEY = "ANTHROPIC_API_KEY"
ANTHROPIC_BASE_URL = "ANTHROPIC_BASE_URL"
VLLM_API_KEY = "VLLM_API_KEY"
OPENROUTER_API_KEY = "OPENROUTER_API_KEY"
TOGETHER_API_KEY = "TOGETHER_API_KEY"
#: Any of these set: the environment asks for OTLP export (read by `ComposoTracer.init`).
OTLP_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
#: The OTLP protocol asked for, the signal-specific variable first.
OTLP_PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
#: Seconds one OTLP export request may take (the SDK reads them; tracejudge only looks
#: whether they are set, to put its shorter default in their place when they are not).
OTLP_TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
#: Milliseconds the OTLP batch processor may take to shut down (and flush at exit).
OTEL_BSP_EXPORT_TIMEOUT = "OTEL_BSP_EXPORT_TIMEOUT"

#: Every variable tracejudge itself reads, with what it does.
VARIABLES: dict[str, str] = {
    COMPOSO_API_KEY: "key of a remote Composo-compatible server; selects it (precedence 4)",
    TRACEJUDGE_JUDGE: "judge spec such as openai:gpt-4.1-mini; selects it (precedence 3)",
    TRACEJUDGE_JUDGE_MODEL: "model of the judge OPENAI_API_KEY/OPENAI_BASE_URL configure",
    TRACEJUDGE_JUDGE_PRICES: "JSON file of judge model prices over the shipped price table",
    TRACEJUDGE_API_KEY: "key `tracejudge demo --to` sends to a tracejudge server",
    OPENAI_API_KEY: "key of OpenAI judges; alone, selects an OpenAI judge (precedence 5)",
    OPENAI_BASE_URL: "OpenAI-compatible server (vLLM, Ollama, llama.cpp); selects it (5)",
    ANTHROPIC_API_KEY: "key of Anthropic judges",
    ANTHROPIC_BASE_URL: "where Anthropic judges send requests",
    VLLM_API_KEY: "key of vllm: judges",
    OPENROUTER_API_KEY: "key of openrouter: judges",
    TOGETHER_API_KEY: "key of together: judges",
    OTLP_ENDPOINT_VARIABLES[0]: "OTLP traces endpoint: ComposoTracer.init adds an exporter",
    OTLP_ENDPOINT_VARIABLES[1]: "OTLP endpoint: ComposoTracer.init adds an exporter",
    OTLP_PROTOCOL_VARIABLES[0]: "OTLP traces protocol (http/protobuf or grpc)",
    OTLP_PROTOCOL_VARIABLES[1]: "OTLP protocol (http/protobuf or grpc)",
    OTLP_TIMEOUT_VARIABLES[0]: "seconds per OTLP traces export request (default here: 2)",
    OTLP_TIMEOUT_VARIABLES[1]: "seconds per OTLP export request (default here: 2)",
    OTEL_BSP_EXPORT_TIMEOUT: "ms the OTLP exporter may take at exit (default: request + 1 s)",
}


def environ() -> Mapping[str, str]:
    """The process environment, for code that reads a table of variables (the server's
    settings, `TRACEJUDGE_<SETTING>`) through `read`."""
    return os.environ


def read(name: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The variable's value with surrounding spaces removed; None when unset or blank."""
    if not name:
        return None
    value = (os.environ if environ is None else environ).get(name, "").strip()
    return value or None


class Backend(enum.Enum):
    """Where a client's natural-language criteria are judged."""

    JUDGE = "judge"  # in process, with the judge passed as judge=
    REMOTE = "remote"  # a remote server named by base_url= / api_key=
    ENV_JUDGE = "env_judge"  # in process, with the judge TRACEJUDGE_JUDGE names
    ENV_REMOTE = "env_remote"  # the remote server, keyed by COMPOSO_API_KEY
    ENV_OPENAI = "env_openai"  # in process, an OpenAI-compatible judge from OPENAI_*
    NONE = "none"  # nothing configured: text criteria raise ConfigurationError


@dataclass(frozen=True)
class BackendChoice:
    """The backend chosen, and the environment values that choice uses."""

    backend: Backend
    #: The judge spec from TRACEJUDGE_JUDGE (ENV_JUDGE only).
    judge_spec: str | None = None
    #: The remote server's key: api_key= if given, else COMPOSO_API_KEY (remote backends).
    api_key: str | None = None

    @property
    def remote(self) -> bool:
        return self.backend in (Backend.REMOTE, Backend.ENV_REMOTE)


def choose_backend(
    *,
    judge_given: bool,
    base_url_given: bool,
    api_key: str | None,
    environ: Mapping[str, str] | None = None,
) -> BackendChoice:
    """Where evaluation runs, first match wins:

    1. `judge=` given: in process, with that judge.
    2. `base_url=` or `api_key=` given: the remote server.
    3. TRACEJUDGE_JUDGE set: in process, with that judge.
    4. COMPOSO_API_KEY set: the remote server.
    5. OPENAI_API_KEY or OPENAI_BASE_URL set: in process, an OpenAI-compatible judge.
    6. Otherwise none (deterministic checks still run).

    Blank variables count as unset. A pure function of its arguments and `environ`
    (default `os.environ`).
    """
    key = api_key if api_key is not None else read(COMPOSO_API_KEY, environ)
    if judge_given:
        return BackendChoice(Backend.JUDGE)
    if base_url_given or api_key is not None:
        return BackendChoice(Backend.REMOTE, api_key=key)
    spec = read(TRACEJUDGE_JUDGE, environ)
    if spec is not None:
        return BackendChoice(Backend.ENV_JUDGE, judge_spec=spec)
    if key is not None:
        return BackendChoice(Backend.ENV_REMOTE, api_key=key)
    if read(OPENAI_API_KEY, environ) or read(OPENAI_BASE_URL, environ):
        return BackendChoice(Backend.ENV_OPENAI)
    return BackendChoice(Backend.NONE)
