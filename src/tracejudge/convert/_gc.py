"""`gc_paused()`: the cyclic garbage collector held off while one conversion runs.

A conversion allocates hundreds of thousands of objects (records, dicts, models) that all
stay alive until it returns, and makes next to no reference cycles. Each allocation
burst triggers the cyclic collector, whose full passes walk every live object and find
nothing: on 20,000 spans that was a third of the converter's time, growing with the
input. Reference counting still frees everything as usual while the collector waits;
what little cyclic garbage there is is collected after the conversion.

Only a call that found the collector enabled re-enables it, so a program that turned it
off keeps it off, and concurrent conversions never leave it off.

After a large conversion (`LARGE` young objects or more), the objects made meanwhile go
straight to the oldest generation when the collector comes back (`gc.freeze()` then
`gc.unfreeze()`: two list splices). Left young, they were all walked by the first
collection after the pause and again as they aged, finding nothing: on 20,000 spans that
first collection took a fifth as long as the conversion itself. Small conversions leave
the generations alone: whatever else is young then (a program's cyclic garbage among it)
would wait for a full collection, which a loop of small conversions (`tracejudge score`,
one trace at a time) would feel as memory that grows. A program that froze objects of its
own keeps them frozen: then nothing is moved.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ["LARGE", "gc_paused", "without_gc"]

#: Young objects (`gc.get_count()[0]`) from which a conversion's objects are moved to the
#: oldest generation instead of being walked: about 300 traces' worth (20,000 to 70,000
#: objects for 300 traces of each producer's recordings, 400 for one trace), where the
#: walk on leaving the pause was a tenth of the conversion's time. (At 100,000, as first
#: set, no conversion of 300 traces counted as large.)
LARGE = 20_000

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block, when it is enabled; after a large block
    the objects made in it go to the oldest generation (see the module's docstring)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        # (Unfreezing would thaw a program's own frozen objects: then nothing is moved.)
        if gc.get_count()[0] >= LARGE and not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def without_gc(function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` inside `gc_paused()`."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with gc_paused():
            return function(*args, **kwargs)

    return wrapper
