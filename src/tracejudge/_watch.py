"""Judgements in flight, for whoever watches them: the CLI's live line ("judging
researcher · Reward accuracy · 42 s") while a slow judge answers.

Nothing is recorded unless something watches (`watching()`): a library caller pays one
counter read per judgement. The judges record each judgement they make (`judging`); a
watcher reads `in_flight()` from any thread.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Judging", "in_flight", "judging", "watching"]


@dataclass(frozen=True)
class Judging:
    """One judgement being made: what is judged (an agent's name, or the judge's target
    phrase), against which criterion, by which judge, since when (`time.monotonic()`)."""

    subject: str
    criterion: str
    judge: str
    started: float

    def elapsed(self, now: float | None = None) -> float:
        return (time.monotonic() if now is None else now) - self.started


_lock = threading.Lock()
_watchers = 0
_ids = itertools.count()
_in_flight: dict[int, Judging] = {}


@contextmanager
def watching() -> Iterator[None]:
    """Record the judgements made while this is open (they are read with `in_flight`)."""
    global _watchers
    with _lock:
        _watchers += 1
    try:
        yield
    finally:
        with _lock:
            _watchers -= 1
            if not _watchers:
                _in_flight.clear()


@contextmanager
def judging(subject: str, criterion: str, judge: str) -> Iterator[None]:
    """A judgement in flight while the block runs (recorded only when watched)."""
    if not _watchers:  # read without the lock: a judgement started as watching starts
        yield  # may go unseen, which costs a line of progress, nothing else
        return
    key = next(_ids)
    with _lock:
        _in_flight[key] = Judging(subject, criterion, judge, time.monotonic())
    try:
        yield
    finally:
        with _lock:
            _in_flight.pop(key, None)


def in_flight() -> list[Judging]:
    """The judgements in flight, the longest-running first."""
    with _lock:
        return sorted(_in_flight.values(), key=lambda j: j.started)
