"""Timing in tests as ratios measured in one run, never as wall-clock limits: a loaded
machine slows both sides of a ratio alike.

    assert growth(lambda n: extract_object("{" * n), 125_000) < LINEAR
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: The most `growth` may be for work linear in its input: 8 when exactly linear (an input
#: eight times larger), 64 when quadratic. The margin is for timer noise and a machine
#: busy elsewhere (a measurement preempted by another process).
LINEAR = 20.0


def seconds_per_call(
    call: Callable[[], Any], *, at_least: float = 0.1, repeats: int = 5, budget: float = 2.0
) -> float:
    """The fastest of up to `repeats` measurements of `call()` (at least two, fewer once
    `budget` seconds are spent), each made of as many calls as take `at_least` seconds (a
    single fast call is all timer noise). The fastest: other processes only add time."""
    best, spent = float("inf"), 0.0
    for attempt in range(repeats):
        if attempt >= 2 and spent > budget:
            break
        calls, started = 0, time.perf_counter()
        while True:
            call()
            calls += 1
            took = time.perf_counter() - started
            if took >= at_least:
                break
        spent += took
        best = min(best, took / calls)
    return best


def growth(
    work: Callable[[Any], Any],
    size: int,
    *,
    factor: int = 8,
    make: Callable[[int], Any] | None = None,
) -> float:
    """How much longer `work` takes on an input `factor` times larger than `size`: about
    `factor` when linear (or less, while fixed costs dominate), `factor` squared when
    quadratic. `make(n)` builds the input
    outside the timing (then `work` takes the input, not `n`)."""
    if make is None:
        small = seconds_per_call(lambda: work(size))
        large = seconds_per_call(lambda: work(size * factor))
        return large / small
    small_input, large_input = make(size), make(size * factor)
    small = seconds_per_call(lambda: work(small_input))
    large = seconds_per_call(lambda: work(large_input))
    return large / small
