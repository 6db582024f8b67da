"""Choosing a judge from a short spec ("openai:gpt-4.1-mini") or from the environment."""

from __future__ import annotations

from typing import Any

from tracejudge import _env
from tracejudge._advice import Surface, how_to_configure_a_judge
from tracejudge.errors import ConfigurationError
from tracejudge.judges._anthropic import ANTHROPIC_BASE_URL, ANTHROPIC_KEY_ENV, AnthropicJudge
from tracejudge.judges._backend import requires_key
from tracejudge.judges._openai import OPENAI_COMPATIBLE_PROVIDERS, OpenAICompatibleJudge
from tracejudge.judges._types import Judge

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "HOW_TO_CONFIGURE_A_JUDGE",
    "PROVIDERS",
    "default_judge",
    "judge_from_spec",
    "key_env_for",
    "needs_api_key",
]

#: The model of the judge that OPENAI_API_KEY / OPENAI_BASE_URL alone configure.
DEFAULT_JUDGE_MODEL = "gpt-4.1-mini"

#: The provider prefixes a judge spec may start with.
PROVIDERS: tuple[str, ...] = ("anthropic", *OPENAI_COMPATIBLE_PROVIDERS)

#: What to tell a user who evaluated without any judge configured (in Python; the CLI
#: and the server word it for their readers, see `tracejudge._advice`).
HOW_TO_CONFIGURE_A_JUDGE = how_to_configure_a_judge(Surface.PYTHON)


def judge_from_spec(spec: str | Judge | None, **options: Any) -> Judge:
    """The judge a spec names.

    `spec` is "provider:model" (providers: anthropic, openai, ollama, vllm, openrouter,
    together), a bare model name (an OpenAI-compatible judge, at OPENAI_BASE_URL or
    api.openai.com), a Judge (returned as it is), or None (the environment's judge, see
    `default_judge`). `options` go to the backend's constructor (base_url, api_key, timeout,
    num_retries, max_concurrency, cache, ...). Raises ConfigurationError when the spec
    names an unknown provider, or None is given and the environment names no judge.
    """
    if spec is None:
        judge = default_judge(**options)
        if judge is None:
            raise ConfigurationError(HOW_TO_CONFIGURE_A_JUDGE)
        return judge
    if not isinstance(spec, str):
        if isinstance(spec, Judge):
            return spec
        raise ConfigurationError(
            f"judge must be a spec like 'openai:gpt-4.1-mini' or an object with `name`, "
            f"`judge()` and `aclose()`, got {type(spec).__name__}"
        )
    text = spec.strip()
    if not text:
        raise ConfigurationError(f"the judge spec is empty. {HOW_TO_CONFIGURE_A_JUDGE}")
    provider, colon, model = text.partition(":")
    if not colon:
        return OpenAICompatibleJudge(text, **options)
    provider = _known(provider, f" in {spec!r}")
    model = model.strip()
    if not model:
        raise ConfigurationError(
            f"the judge spec {spec!r} names no model; write it as '{provider}:<model>'"
        )
    if provider == "anthropic":
        return AnthropicJudge(model, **options)
    return OpenAICompatibleJudge(model, provider=provider, **options)


def default_judge(**options: Any) -> Judge | None:
    """The judge the environment configures, or None.

    TRACEJUDGE_JUDGE (a spec) first; else, when OPENAI_BASE_URL or OPENAI_API_KEY is set,
    an OpenAI-compatible judge of TRACEJUDGE_JUDGE_MODEL (default "gpt-4.1-mini").
    """
    spec = _env.read(_env.TRACEJUDGE_JUDGE)
    if spec is not None:
        return judge_from_spec(spec, **options)
    if _env.read(_env.OPENAI_BASE_URL) or _env.read(_env.OPENAI_API_KEY):
        model = _env.read(_env.TRACEJUDGE_JUDGE_MODEL) or DEFAULT_JUDGE_MODEL
        return OpenAICompatibleJudge(model, **options)
    return None


def _known(provider: str, where: str = "") -> str:
    """`provider` normalised; ConfigurationError naming the valid ones when it is unknown."""
    name = provider.strip().lower()
    if name not in PROVIDERS:
        raise ConfigurationError(
            f"unknown judge provider {provider!r}{where}; valid providers: "
            f"{', '.join(PROVIDERS)} (for example 'openai:gpt-4.1-mini'; any other "
            "OpenAI-compatible server: 'openai:<model>' at its base URL, which "
            "OPENAI_BASE_URL gives)"
        )
    return name


def key_env_for(provider: str) -> str | None:
    """The environment variable a `provider` judge reads its API key from (None: it has
    none). Raises ConfigurationError, naming the valid providers, for an unknown one."""
    name = _known(provider)
    if name == "anthropic":
        return ANTHROPIC_KEY_ENV
    return OPENAI_COMPATIBLE_PROVIDERS[name].key_env


def needs_api_key(provider: str, base_url: str | None = None) -> bool:
    """Whether a `provider` judge at `base_url` (default: where the environment or the
    provider puts it) cannot work without an API key, as hosted APIs cannot. Raises
    ConfigurationError, naming the valid providers, for an unknown provider."""
    name = _known(provider)
    if not base_url:
        if name == "anthropic":
            base_url = _env.read(_env.ANTHROPIC_BASE_URL) or ANTHROPIC_BASE_URL
        else:
            known = OPENAI_COMPATIBLE_PROVIDERS[name]
            base_url = _env.read(known.base_url_env) or known.default_base_url
    return requires_key(base_url)
