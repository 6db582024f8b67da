"""The inputs of `tracejudge score`: files, directories, globs and `-` (standard input)."""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tracejudge.cli._errors import UsageError

__all__ = ["OTLP_SUFFIXES", "Source", "expand_inputs"]

#: The files a directory is searched for (each also with ".gz"): what OTLP exporters and
#: the Collector's file exporter write, and MultiAgentTrace JSON.
OTLP_SUFFIXES = (".json", ".jsonl", ".ndjson", ".pb", ".binpb", ".otlp", ".proto")
_GLOB_CHARACTERS = set("*?[")


@dataclass(frozen=True)
class Source:
    """One input: a file, or standard input (`path` None)."""

    name: str
    path: Path | None = None

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        if self.path is None:
            yield sys.stdin.buffer
            return
        with open(self.path, "rb") as handle:
            yield handle


def _is_trace_file(path: Path) -> bool:
    name = path.name.lower().removesuffix(".gz")
    return not path.name.startswith(".") and name.endswith(OTLP_SUFFIXES)


def _directory(path: Path) -> list[Source]:
    found = sorted(p for p in path.rglob("*") if p.is_file() and _is_trace_file(p))
    if not found:
        raise UsageError(
            f"{path} is a directory without OTLP or trace files "
            f"(looked for {', '.join(OTLP_SUFFIXES)}, also .gz)"
        )
    return [Source(str(p), p) for p in found]


def expand_inputs(inputs: Sequence[str]) -> list[Source]:
    """The sources the command-line INPUT arguments name, each once, in the order given
    (a directory's files and a glob's matches sorted by name). Raises `UsageError`
    naming the argument when it names nothing."""
    sources: list[Source] = []
    for text in inputs:
        if text == "-":
            sources.append(Source("<stdin>"))
            continue
        path = Path(text)
        if path.is_dir():
            sources.extend(_directory(path))
        elif path.is_file():
            sources.append(Source(text, path))
        elif _GLOB_CHARACTERS & set(text):
            matches = sorted(glob.glob(text, recursive=True))
            files = [Path(m) for m in matches if os.path.isfile(m)]
            if not files:
                raise UsageError(f"{text}: no file matches this pattern")
            sources.extend(Source(str(p), p) for p in files)
        elif path.exists():
            raise UsageError(f"{text} is neither a file nor a directory")
        else:
            raise UsageError(f"no such file: {text}")
    unique: dict[str, Source] = {}
    for source in sources:
        key = str(source.path.resolve()) if source.path is not None else "-"
        unique.setdefault(key, source)
    return list(unique.values())
