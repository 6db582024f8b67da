"""A statistic with its bootstrap confidence interval (benchmarks and calibration)."""

from __future__ import annotations

from tracejudge.models._base import WireModel

__all__ = ["Estimate"]


class Estimate(WireModel):
    """`value` over `n` items, with the percentile bootstrap interval [`low`, `high`] at
    `level` (None when no resample gave a value, or nothing was resampled)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    level: float = 0.95

    def __str__(self) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None or self.high is None:
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"
