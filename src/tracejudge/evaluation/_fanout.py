"""The order of one trace's judge calls: the first call of each material warms the
provider's prompt cache before the rest of that material's calls fan out.

The criteria of one agent share the prompt up to the criterion (see `tracejudge.judges`
"prompt layout"). Sent all at once, each would pay the full prompt, since none is cached
yet; so the first judgement of each agent runs alone, and that agent's other judgements
start when it has finished (or failed). Different agents still run concurrently.

A server whose cache is per slot (llama.cpp: a request goes to whichever slot frees up,
and only that slot holds what it last read) would scatter those other judgements over
slots holding other agents' transcripts; for such a judge (`prompt_cache_per_slot`) an
agent's judgements after the first run one at a time, each taking the slot the last one
left, which holds that agent's prefix.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

__all__ = ["PrefixWarmup"]


class PrefixWarmup:
    """One per trace (shared by the calls for all its criteria): `async with
    warmup.turn(key)` lets the first call of `key` in at once and the others after it."""

    def __init__(self) -> None:
        self._warmed: dict[str, asyncio.Event] = {}
        self._in_sequence: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def turn(
        self, key: str, *, in_sequence: Callable[[], bool] = lambda: False
    ) -> AsyncIterator[None]:
        """`in_sequence` is asked once the first call of `key` is over (what it learnt of
        the server is known then): True, and the rest of `key`'s calls go one at a time."""
        event = self._warmed.get(key)
        if event is None:
            event = self._warmed[key] = asyncio.Event()
            try:
                yield
            finally:
                event.set()
            return
        await event.wait()
        if not in_sequence():
            yield
            return
        async with self._in_sequence.setdefault(key, asyncio.Lock()):
            yield
