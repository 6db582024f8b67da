"""Token buckets per caller: the request rate limit (`limits`) and the failed-key limit
(`auth`) count with them. A caller has `burst` tokens at most and gets `rate` a second
back; a request takes one.
"""

from __future__ import annotations

import time
from collections import OrderedDict

__all__ = ["TokenBuckets"]

#: Callers remembered at most (the least recently seen are forgotten first).
_MAX_CALLERS = 10_000


class TokenBuckets:
    """One token bucket per caller."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def waiting(self, caller: str, now: float | None = None) -> float:
        """The seconds until `caller` has a token again (0: it has one), taking none."""
        if self.rate <= 0 or caller not in self._buckets:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets[caller]
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def take(self, caller: str, now: float | None = None) -> float:
        """0 when the request may go; else the seconds until it could."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets.pop(caller, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[caller] = (tokens, now)
        if len(self._buckets) > _MAX_CALLERS:
            self._buckets.popitem(last=False)
        return wait
