"""The order of one trace's judge calls: the first call of each material warms the
provider's prompt cache before the rest of that material's calls fan out.

The criteria of one agent share the prompt up to the criterion (see `tracejudge.judges`
"prompt layout"). Sent all at once, each would pay the full prompt, since none is cached
yet; so the first judgement of each agent runs alone, and that agent's other judgements
start when it has finished (or failed). Different agents still run concurrently.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["PrefixWarmup"]


class PrefixWarmup:
    """One per trace (shared by the calls for all its criteria): `async with
    warmup.turn(key)` lets the first call of `key` in at once and the others after it."""

    def __init__(self) -> None:
        self._warmed: dict[str, asyncio.Event] = {}

    @contextlib.asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        event = self._warmed.get(key)
        if event is not None:
            await event.wait()
            yield
            return
        event = self._warmed[key] = asyncio.Event()
        try:
            yield
        finally:
            event.set()
