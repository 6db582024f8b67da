"""While a judgement is slow, a live line on the terminal: "judging researcher · Reward
accuracy · 42 s" (and how many others are in flight), so that a local model that takes a
minute per judgement is seen working, not hung. Shown on a terminal only, and not with
`-q`; inside the progress bar when there is one (rich), else on a line of its own that is
rewritten in place and cleared when the judgements end."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

from tracejudge import _watch

__all__ = ["JudgingLine", "add_quiet", "judging_text"]

#: A judgement shorter than this shows nothing (no flicker for a fast judge).
SHOW_AFTER_SECONDS = 1.0
#: How often the line is redrawn.
REFRESH_SECONDS = 0.5
_CRITERION_CHARS = 60


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """`-q/--quiet`: no progress on the terminal (bar or live judging line)."""
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="show no progress (no bar, no live 'judging ...' line while a judge answers)",
    )


def judging_text(in_flight: list[_watch.Judging], now: float) -> str:
    """The line for the judgements in flight: the longest-running one, its time, and how
    many more ("" when none has run for `SHOW_AFTER_SECONDS`)."""
    if not in_flight or in_flight[0].elapsed(now) < SHOW_AFTER_SECONDS:
        return ""
    oldest = in_flight[0]
    criterion = " ".join(oldest.criterion.split())
    if len(criterion) > _CRITERION_CHARS:
        criterion = criterion[: _CRITERION_CHARS - 3] + "..."
    text = f"judging {oldest.subject} · {criterion} · {int(oldest.elapsed(now))} s"
    if len(in_flight) > 1:
        text += f" (+{len(in_flight) - 1} more in flight)"
    return text


class JudgingLine:
    """The live line, while the block runs (a context manager). `progress`: a running
    `Progress` whose bar shows the line instead (when it has one)."""

    def __init__(
        self,
        *,
        stream: TextIO | None = None,
        enabled: bool = True,
        progress: Any = None,
    ) -> None:
        self._stream = stream or sys.stderr
        self._enabled = enabled and self._stream.isatty()
        self._progress = progress
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watching: Any = None
        self._shown = ""

    def __enter__(self) -> JudgingLine:
        if self._enabled:
            self._watching = _watch.watching()
            self._watching.__enter__()
            self._thread = threading.Thread(
                target=self._run, name="tracejudge-judging-line", daemon=True
            )
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(REFRESH_SECONDS):
            self._show(judging_text(_watch.in_flight(), time.monotonic()))

    def _show(self, text: str) -> None:
        if text == self._shown:
            return
        self._shown = text
        if self._progress is not None and self._progress.note(text):
            return
        # Rewritten in place: back to the line's start, the text, the rest of it erased.
        self._stream.write(f"\r{text}\x1b[K" if text else "\r\x1b[K")
        self._stream.flush()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._show("")
        self._watching.__exit__(kind, error, traceback)
