"""Every exception tracejudge raises, in one place.

`ComposoError` and its subclasses mirror the Composo SDK (so `except
composo.RateLimitError` ports by changing the import); `ProviderRequestError`
and its subclasses mirror the Osmosis SDK's reward API; `MissingDependencyError`
is tracing's (an optional package is not installed).
"""

from __future__ import annotations

__all__ = [
    "ComposoError",
    "ConfigurationError",
    "AuthenticationError",
    "BadRequestError",
    "RateLimitError",
    "APIError",
    "TimeoutError",
    "MalformedError",
    "NoLLMInteractionsError",
    "MissingAPIKeyError",
    "ProviderRequestError",
    "ModelNotFoundError",
    "MissingDependencyError",
]


class ComposoError(Exception):
    """Base class of every evaluation error. `status_code` and `response_body` are set
    when the error came from an HTTP answer."""

    def __init__(
        self, message: str, status_code: int | None = None, response_body: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.response_body = response_body


class ConfigurationError(ComposoError, ValueError):
    """Raised when no judge (or server) is configured, or a judge spec cannot be understood."""


class AuthenticationError(ComposoError):
    """Raised on 401/403: the API key is missing, wrong, or not allowed to use the model."""


class BadRequestError(ComposoError, ValueError):
    """Raised when a request is invalid (HTTP 400/422, or caught before sending)."""


class RateLimitError(ComposoError):
    """Raised on 429 after every retry was spent."""


class APIError(ComposoError):
    """Raised on 5xx, connection errors and other provider failures after the retries."""


class TimeoutError(APIError):  # noqa: A001 - mirrors composo.exceptions.TimeoutError
    """Raised when a request, or the whole evaluation's deadline, ran out of time."""


class MalformedError(ComposoError):
    """Raised when a judge's reply could not be parsed, even after a corrective re-ask."""


class NoLLMInteractionsError(ComposoError, ValueError):
    """Raised when a trace to evaluate holds no LLM interaction (nothing was captured)."""


class ProviderRequestError(Exception):
    """Raised by the reward API when a provider request fails."""

    def __init__(self, provider: str, model: str, detail: str) -> None:
        super().__init__(f"{provider} request for model {model!r} failed: {detail}")
        self.provider = provider
        self.model = model
        self.detail = detail


class ModelNotFoundError(ProviderRequestError):
    """Raised by the reward API when the provider does not know the model."""


class MissingAPIKeyError(Exception):
    """Raised by the reward API when no API key is found for a provider."""


class MissingDependencyError(ImportError):
    """Raised by `ComposoTracer.init` when an optional package it needs is not installed:
    the instrumentation for a requested `Instruments` member, or the OTLP exporter when
    ``otlp=True`` asks for it. The message says what to install."""

    def __init__(
        self, package: str, extra: str | None, purpose: str, *, core: bool = False
    ) -> None:
        if extra is not None:
            hint = f"pip install 'tracejudge[{extra}]' (or pip install {package})"
        elif core:
            hint = f"pip install {package} (a dependency of tracejudge; reinstall tracejudge)"
        else:
            hint = f"pip install {package}"
        super().__init__(f"{purpose} needs the package {package!r}, which is not installed: {hint}")
        self.package = package
        self.extra = extra
