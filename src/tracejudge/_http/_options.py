"""The settings every HTTP caller of tracejudge takes, as one validated value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.errors import ConfigurationError

__all__ = ["HTTPOptions"]


@dataclass(frozen=True)
class HTTPOptions:
    """Timeout, retries and concurrency of one client, judge or remote server.

    - `timeout`: seconds for one request, retries included (the Composo SDK's meaning).
    - `num_retries`: retries of a failed request; at least 1, as the Composo SDK documents
      (retries cannot be turned off), so a smaller value is raised to 1.
    - `max_concurrency`: requests in flight at once.
    """

    timeout: float = 60.0
    num_retries: int = 1
    max_concurrency: int = 16

    def __post_init__(self) -> None:
        try:
            timeout = float(self.timeout)
        except (TypeError, ValueError):
            raise ConfigurationError(
                f"timeout must be a number of seconds, got {self.timeout!r}"
            ) from None
        if not timeout > 0:
            raise ConfigurationError(f"timeout must be more than 0 seconds, got {self.timeout!r}")
        if isinstance(self.max_concurrency, bool) or not isinstance(self.max_concurrency, int):
            raise ConfigurationError(
                f"max_concurrency must be a whole number, got {self.max_concurrency!r}"
            )
        if self.max_concurrency < 1:
            raise ConfigurationError(
                f"max_concurrency must be at least 1, got {self.max_concurrency}"
            )
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "num_retries", max(1, int(self.num_retries)))

    def as_judge_options(self) -> dict[str, Any]:
        """These settings as keyword arguments of a judge backend's constructor."""
        return {
            "timeout": self.timeout,
            "num_retries": self.num_retries,
            "max_concurrency": self.max_concurrency,
        }
