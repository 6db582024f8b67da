"""Memory a large request freed, given back to the system.

glibc's malloc keeps what a request frees in its arenas (one per thread that allocated:
the event loop's, the offload threads', the store's) instead of returning it to the
system: after one 10 MiB `POST /api/v1/evals/reward`, the server stayed at 220-260 MB
from 64 MB idle, while the objects Python held had grown by 1 MB. `HeapTrimmer` asks
glibc how much its arenas hold free (`mallinfo2`, summed over every arena) and, when
`threshold` bytes more are free than at the lowest since it last did, gives the free
pages back (`malloc_trim(0)`, every arena), off the event loop. The server checks once
a second (`run`, a supervised loop). `tracejudge serve` also has blocks of 256 KiB or
more mapped on their own (`map_large_blocks`), so that they go back as they are freed.
Where the C library is not glibc, nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any

import anyio.to_thread

from tracejudge.server.work.supervise import Beat

__all__ = ["DEFAULT_THRESHOLD", "LARGE_BYTES", "HeapTrimmer", "map_large_blocks"]

logger = logging.getLogger("tracejudge.server")

#: Bytes freed into malloc's arenas worth giving back (a trim costs a few milliseconds).
DEFAULT_THRESHOLD = 4 * 1024 * 1024
#: Blocks from this size on are mapped on their own (`map_large_blocks`).
LARGE_BYTES = 256 * 1024
#: mallopt's parameter for the size from which blocks are mapped on their own.
_M_MMAP_THRESHOLD = -3


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


def map_large_blocks(size: int = LARGE_BYTES) -> bool:
    """Have malloc map every block of `size` bytes or more on its own, and unmap it when
    freed, whatever blocks were freed before; returns whether it could (glibc).

    glibc raises that size by itself, up to 32 MiB, each time a mapped block is freed, so
    a server that once freed a 10 MiB body takes the next ones from its arenas, where
    they stay when freed (fragmented: `malloc_trim` cannot give all of it back). With
    the size fixed, a 10 MiB request leaves the server at 1.1x its idle RSS instead of
    1.4-1.7x after trimming. It is a setting of the whole process: the server's own
    process sets it (`tracejudge serve`), not a program that runs a server in a thread.
    """
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(_M_MMAP_THRESHOLD, size))


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
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
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
        # The fewest free bytes seen since memory was last given back: what is free
        # beyond it was freed since (by the time the process starts, next to nothing).
        self._lowest = 0

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
        """Give the free memory back when `threshold` bytes more are free than at the
        lowest since it was last given back; returns whether it did (blocking: the
        arenas are locked while their pages are returned). The free bytes count pages
        already given back too (glibc counts them free), hence the lowest as the mark:
        memory used again, then freed again, is given back again."""
        if self._libc is None:
            return False
        free = self.free_bytes()
        self._lowest = min(self._lowest, free)
        if free - self._lowest < self.threshold:
            return False
        self._libc.malloc_trim(0)
        self._lowest = free
        self.trims += 1
        return True

    async def run(self, beat: Beat) -> None:
        """Check every `interval` seconds, for ever."""
        while True:
            # Waiting for a worker thread is no stall of this loop (they may all be
            # waiting on a store that is down): liveness is not this loop's to fail.
            with beat.busy("giving memory back"):
                await anyio.to_thread.run_sync(self.trim)
            await beat.wait(self.interval)
