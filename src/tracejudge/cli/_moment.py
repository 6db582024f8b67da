"""A time given on the command line: ISO 8601 or Unix seconds (`export`, `rules backfill`)."""

from __future__ import annotations

import math
from datetime import datetime, timezone

from tracejudge.cli._errors import UsageError


def moment(flag: str, text: str) -> float:
    """`text` as Unix seconds: a finite number is taken as they are, ISO 8601 without a
    zone as UTC; anything else is a `UsageError` naming `flag`."""
    try:
        value = float(text)
        if math.isfinite(value):
            return value
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{flag}: {text!r} is not a time: give ISO 8601 (2026-12-01 or "
            "2026-12-01T09:30:00Z) or Unix seconds"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()
