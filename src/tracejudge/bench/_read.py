"""Benchmark data from files and directories: every `.json` / `.jsonl` file, each record
parsed by `_formats.parse`; an item's split is its own (`split`) or its directory's name
(Who&When's "Hand-Crafted" and "Algorithm-Generated", MP-Bench's "manual" and
"automatic")."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tracejudge.bench._formats import parse
from tracejudge.bench._items import BenchItem
from tracejudge.errors import BadRequestError

__all__ = ["read_items"]


def _number_first(path: Path) -> tuple[str, int, str]:
    """Sort key: Who&When's 2.json before 10.json."""
    stem = path.stem
    return (str(path.parent), int(stem) if stem.isdigit() else -1, stem)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(
            (p for p in path.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")),
            key=_number_first,
        )
        if not found:
            raise BadRequestError(f"{path} is a directory without .json or .jsonl files")
        return found
    if path.is_file():
        return [path]
    raise BadRequestError(f"no such file or directory: {path}")


def read_items(paths: Iterable[str | Path], *, ground_truth: bool = True) -> list[BenchItem]:
    """The items of every file under `paths`, in order. Raises `BadRequestError` naming
    the file (and line) and the problem."""
    items: list[BenchItem] = []
    for given in paths:
        for file in _files(Path(given)):
            split = file.parent.name or "data"
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise BadRequestError(f"cannot read {file}: {error}") from None
            if file.suffix == ".jsonl":
                for number, line in enumerate(text.splitlines(), 1):
                    if not line.strip():
                        continue
                    where = f"{file}, line {number}"
                    items.append(
                        parse(_loads(line, where), where, split, ground_truth=ground_truth)
                    )
            else:
                items.append(
                    parse(_loads(text, str(file)), str(file), split, ground_truth=ground_truth)
                )
    if not items:
        raise BadRequestError("the benchmark data holds no item")
    return items


def _loads(text: str, where: str) -> object:
    try:
        return json.loads(text)
    except ValueError as error:
        raise BadRequestError(f"{where}: not JSON ({error})") from None
