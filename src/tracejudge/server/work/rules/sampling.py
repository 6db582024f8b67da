"""Which traces a sampling rate picks: decided from the trace id alone.

`sampled(trace_id, rate)` is OpenTelemetry's `TraceIdRatioBased` decision: the low 64 bits
of the 128-bit trace id, read as a number, below `rate * 2**64`. It needs no state and no
randomness, so every replica and every rule with the same rate picks the same traces (two
rules at 10% judge the same 10%, and can be compared), a lower rate's traces are a subset of
a higher one's, and an SDK sampling at the same rate kept exactly these traces. An id that
is not hexadecimal (a trace posted with an id of the caller's) is read through SHA-256.
"""

from __future__ import annotations

import hashlib
import string

__all__ = ["sampled", "sample_point"]

#: The low 64 bits of a trace id (OpenTelemetry's TRACE_ID_LIMIT).
_LOW_BITS = (1 << 64) - 1
_HEX = frozenset(string.hexdigits)


def sample_point(trace_id: str) -> int:
    """Where a trace id falls in 0 .. 2**64 - 1: its low 64 bits."""
    text = trace_id.strip()
    if 0 < len(text) <= 32 and _HEX.issuperset(text):
        return int(text, 16) & _LOW_BITS
    digest = hashlib.sha256(trace_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[-8:], "big")


def sampled(trace_id: str, rate: float) -> bool:
    """Whether a rate from 0 to 1 picks the trace (1 picks every trace, 0 none)."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    return sample_point(trace_id) < round(rate * (_LOW_BITS + 1))
