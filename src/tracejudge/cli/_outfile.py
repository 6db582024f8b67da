"""The `--out` file of a batch command: one JSON line per result, appended as results
come, flushed per trace, and read back by `--resume`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from tracejudge.cli._errors import UsageError

__all__ = ["OutFile", "check_writable", "read_finished"]


def check_writable(path: str | os.PathLike[str] | None, option: str) -> None:
    """Raise `UsageError` naming `option` when `path` cannot be written: its folder does
    not exist or cannot be written to, it is a folder, or it exists read-only. Creates
    nothing: the commands call it before any work, so a run is never lost to a bad path."""
    if path is None:
        return
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise UsageError(f"cannot write {option} {path}: it is a directory; give a file name")
    if not folder.is_dir():
        raise UsageError(
            f"cannot write {option} {path}: no such directory {folder}; create it first "
            "or choose another path"
        )
    if not os.access(folder, os.W_OK | os.X_OK) or (
        target.exists() and not os.access(target, os.W_OK)
    ):
        raise UsageError(f"cannot write {option} {path}: permission denied")


def read_finished(
    path: str | os.PathLike[str], key: str, on_line: Callable[[dict[str, Any]], None]
) -> int:
    """Give each finished line of an earlier run to `on_line`, cut the file to them, and
    return how many there were (none when the file does not exist).

    A run that was killed may have left a last line half written: that line, and the
    lines before it that share its `key` value (one item's lines are written together),
    are cut off, so that the item is done again. Raises `UsageError` naming the file and
    line when a line in the middle is not a JSON object with `key`.
    """
    file = Path(path)
    if not file.exists():
        return 0
    finished = 0
    group: list[dict[str, Any]] = []  # the lines of the last item, held until it ends
    group_start = 0  # where the last item's lines begin in the file
    offset = 0
    broken_tail = False
    bad_line: int | None = None  # a bad line is fine only as the last one
    try:
        with open(file, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if bad_line is not None:
                    raise UsageError(
                        f"{path}, line {bad_line}: not a result line of this command "
                        f"(a JSON object with {key!r}); give another --out file"
                    )
                if not raw.endswith(b"\n"):
                    broken_tail = bool(raw.strip())  # cut short while being written
                    break
                line_start = offset
                offset += len(raw)
                value = _line(raw, key) if raw.strip() else {}
                if value is None:
                    bad_line = number
                    continue
                if not value:
                    continue
                if group and group[-1][key] != value[key]:
                    for line in group:
                        on_line(line)
                    finished += len(group)
                    group = []
                if not group:
                    group_start = line_start
                group.append(value)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
    if broken_tail or bad_line is not None:
        # The interrupted item's lines are contiguous at the end: drop them all.
        with open(file, "r+b") as handle:
            handle.truncate(group_start)
        return finished
    for line in group:
        on_line(line)
    return finished + len(group)


def _line(raw: bytes, key: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) and key in value else None


class OutFile:
    """Result lines appended to a file (or written to a stream): each item's lines in
    one write, flushed, so an interrupted run keeps every finished item."""

    def __init__(self, path: str | os.PathLike[str], *, append: bool) -> None:
        self.path = str(path)
        try:
            self._handle: IO[str] = open(path, "a" if append else "w", encoding="utf-8")
        except OSError as error:
            raise UsageError(f"cannot write --out {path}: {error.strerror or error}") from None

    def write(self, lines: Iterable[dict[str, Any]]) -> None:
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        self._handle.write(text)
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()
