"""Progress of a batch command on standard error: a rich progress bar on a terminal
(when the `cli` extra's `rich` is installed), plain lines otherwise."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, TextIO

__all__ = ["Progress", "clock", "timing"]


def clock(seconds: float | None) -> str:
    """`seconds` as H:MM:SS, or -:--:-- when unknown."""
    if seconds is None:
        return "-:--:--"
    minutes, whole = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{whole:02d}"


def timing(elapsed: float, remaining: float | None, state: str) -> str:
    """What the bar says of time: while running, the time taken and the time left
    ("0:00:05, 0:00:11 left"); once every item is done, "done in 0:00:16"; stopped before
    the end (Ctrl-C, an error), "stopped after 0:00:07"."""
    if state == "done":
        return f"done in {clock(elapsed)}"
    if state == "stopped":
        return f"stopped after {clock(elapsed)}"
    return f"{clock(elapsed)}, {clock(remaining)} left"


def _timing_column() -> Any:
    """A rich column rendering `timing` (built here so rich stays an optional import)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class TimingColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            elapsed = (task.finished_time if task.finished else task.elapsed) or 0.0
            state = "done" if task.finished else task.fields.get("state", "running")
            return Text(timing(elapsed, task.time_remaining, state), style="progress.elapsed")

    return TimingColumn()


class Progress:
    """Counts `total` items of `noun` done; use as a context manager, call `advance()`.

    On a terminal with rich: a bar with items done, rate, time taken and time left, which
    reads "done in 0:00:16" once every item is done (and "stopped after ..." when the run
    ends early). Otherwise one line about every 10% (and at least every 30 s), then a
    last line at the end with the time taken. `enabled=False` shows nothing. `verb` says
    what is done to them ("scored"); `label` heads the bar.
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
                from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
                from rich.progress import Progress as Bar
            except ImportError:
                pass
            else:
                self._bar = Bar(
                    TextColumn(self.label or f"scoring {self.noun}s"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"),
                    _timing_column(),
                    TextColumn("{task.fields[judging]}"),
                    console=Console(file=self._stream),
                    transient=False,
                )
                self._bar.start()
                self._task = self._bar.add_task(
                    "score", total=self.total, rate="", state="running", judging=""
                )
        return self

    def note(self, text: str) -> bool:
        """Show `text` (the live judging line) in the bar; False when there is no bar."""
        if self._bar is None:
            return False
        self._bar.update(self._task, judging=text)
        return True

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
        if self.done >= self.total:
            return  # the last line, with the time taken, is written on leaving
        now = time.monotonic()
        if self.done / self.total >= self._next_share or now - self._last_line >= 30:
            while self._next_share <= self.done / self.total:
                self._next_share += 0.1
            self._last_line = now
            self._line()

    def _line(self, *, last: bool = False) -> None:
        took = ""
        if last:
            took = f" in {clock(time.monotonic() - self._start)}"
            if self.done < self.total:
                took = f", stopped after {clock(time.monotonic() - self._start)}"
        print(
            f"{self.verb} {self.done}/{self.total} {self.noun}s{took} ({self._rate():.1f}/s)",
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
            if self.done < self.total:
                self._bar.update(self._task, state="stopped")
            self._bar.stop()
        elif self._enabled and self.done:
            self._line(last=True)
