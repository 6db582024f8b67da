"""Memory a large request freed, given back to the system.

glibc's malloc keeps what a request frees in its arenas (one per thread that allocated:
the event loop's, the offload threads', the store's) instead of returning it to the
system: after one 10 MiB `POST /api/v1/evals/reward`, the server stayed at 220-260 MB
from 64 MB idle, while the objects Python held had grown by 1 MB. `HeapTrimmer` asks
glibc how much its arenas hold free (`mallinfo2`, summed over every arena) and, past
`threshold` bytes, gives the free pages back (`malloc_trim(0)`, every arena), off the
event loop. The server checks once a second (`run`, a supervised loop). Where the C
library is not glibc, nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any

import anyio.to_thread

from tracejudge.server.supervise import Beat

__all__ = ["DEFAULT_THRESHOLD", "HeapTrimmer"]

logger = logging.getLogger("tracejudge.server")

#: Free bytes in malloc's arenas worth giving back.
DEFAULT_THRESHOLD = 16 * 1024 * 1024


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _glibc() -> Any | None:
    """The C library when it is glibc 2.33 or later (it has `mallinfo2`), else None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallinfo2.restype = _MallInfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


class HeapTrimmer:
    """Gives malloc's free memory back past `threshold` bytes (`trim`, `run`)."""

    def __init__(self, threshold: int = DEFAULT_THRESHOLD, interval: float = 1.0) -> None:
        self.threshold = threshold
        self.interval = interval
        self._libc = _glibc()
        #: How many times memory was given back.
        self.trims = 0

    @property
    def available(self) -> bool:
        """Whether this C library lets memory be given back (glibc)."""
        return self._libc is not None

    def free_bytes(self) -> int:
        """The bytes malloc's arenas hold free (0 where that cannot be asked)."""
        if self._libc is None:
            return 0
        return int(self._libc.mallinfo2().fordblks)

    def trim(self) -> bool:
        """Give the free memory back when there is more than `threshold` of it; returns
        whether it did (blocking: the arenas are locked while their pages are returned)."""
        if self._libc is None or self.free_bytes() < self.threshold:
            return False
        self._libc.malloc_trim(0)
        self.trims += 1
        return True

    async def run(self, beat: Beat) -> None:
        """Check every `interval` seconds, for ever."""
        while True:
            await anyio.to_thread.run_sync(self.trim)
            beat.progress()
            await beat.wait(self.interval)
