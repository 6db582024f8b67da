"""Progress of a batch command on standard error: a rich progress bar on a terminal
(when the `cli` extra's `rich` is installed), plain lines otherwise."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    """Counts `total` items of `noun` done; use as a context manager, call `advance()`.

    On a terminal with rich: a bar with items done, rate and time left. Otherwise one
    line about every 10% (and at least every 30 s), then a last line at the end.
    `enabled=False` shows nothing. `verb` says what is done to them ("scored"); `label`
    heads the bar.
    """

    def __init__(
        self,
        total: int,
        noun: str,
        *,
        stream: TextIO | None = None,
        enabled: bool = True,
        verb: str = "scored",
        label: str | None = None,
    ) -> None:
        self.total = total
        self.noun = noun
        self.verb = verb
        self.label = label
        self.done = 0
        self._stream = stream or sys.stderr
        self._enabled = enabled and total > 0
        self._bar: Any = None
        self._task: Any = None
        self._start = time.monotonic()
        self._last_line = self._start
        self._next_share = 0.1

    def __enter__(self) -> Progress:
        if self._enabled and self._stream.isatty():
            try:
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )
                from rich.progress import Progress as Bar
            except ImportError:
                pass
            else:
                self._bar = Bar(
                    TextColumn(self.label or f"scoring {self.noun}s"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"),
                    TimeElapsedColumn(),
                    TextColumn("left"),
                    TimeRemainingColumn(),
                    console=Console(file=self._stream),
                    transient=False,
                )
                self._bar.start()
                self._task = self._bar.add_task("score", total=self.total, rate="")
        return self

    def _rate(self) -> float:
        elapsed = time.monotonic() - self._start
        return self.done / elapsed if elapsed > 0 else 0.0

    def advance(self, count: int = 1) -> None:
        self.done += count
        if not self._enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=count, rate=f"{self._rate():.1f}/s")
            return
        now = time.monotonic()
        if self.done / self.total >= self._next_share or now - self._last_line >= 30:
            while self._next_share <= self.done / self.total:
                self._next_share += 0.1
            self._last_line = now
            self._line()

    def _line(self) -> None:
        print(
            f"{self.verb} {self.done}/{self.total} {self.noun}s ({self._rate():.1f}/s)",
            file=self._stream,
            flush=True,
        )

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self._enabled and self.done and self._next_share <= 1.0:
            self._line()
