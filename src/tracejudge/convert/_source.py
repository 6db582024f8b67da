"""Where OTLP input comes from, read as a stream: bytes, text, a file, or the files of a
directory (gzip is inflated on the fly by `_inflate`, leniently).

Nothing here reads a whole file into memory: decoders pull what they need, so a large
input costs what its spans cost, not its size.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

from tracejudge.convert._errors import OTLPDecodeError

__all__ = ["OTLPDecodeError", "Opener", "Source", "sources"]

#: Opens the input (again) from its start: a file opened "rb", or the bytes given.
Opener = Callable[[], "io.BufferedReader | io.BytesIO"]


class Source:
    """One input: a label for its warnings ("" for a single input, "name: " for a file of
    a directory), and either the text itself or how to open its bytes."""

    def __init__(self, label: str, *, text: str | None = None, opener: Opener | None = None):
        self.label = label
        self.text = text
        self.opener = opener


def sources(source: bytes | bytearray | memoryview | str | os.PathLike[str]) -> list[Source]:
    """The inputs a `traces_from_otlp` argument names: bytes or text as given, a file, or
    each regular, non-hidden file of a directory (in name order).

    Raises FileNotFoundError for a Path that does not exist, OTLPDecodeError for text that
    is neither OTLP/JSON nor the path of a file or directory, TypeError for other types.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        return [Source("", opener=lambda: io.BytesIO(data))]
    if isinstance(source, os.PathLike):
        return _path_sources(Path(source))
    if isinstance(source, str):
        stripped = source.lstrip()
        if not stripped or stripped.startswith(("{", "[")):
            return [Source("", text=source)]
        if "\n" not in source and len(source) < 4096 and os.path.exists(source):
            return _path_sources(Path(source))
        raise OTLPDecodeError(
            f"the text is neither OTLP/JSON nor the path of an existing file: {source[:80]!r}"
        )
    raise TypeError(
        f"expected bytes, text or a path of OTLP trace data, got {type(source).__name__}"
    )


def _path_sources(path: Path) -> list[Source]:
    if not path.is_dir():
        path.stat()  # FileNotFoundError (or PermissionError) now, not on first read
        return [Source("", opener=lambda: open(path, "rb"))]  # noqa: SIM115
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise OTLPDecodeError(f"the directory {path} holds no files")
    return [Source(f"{file.name}: ", opener=_file_opener(file)) for file in files]


def _file_opener(file: Path) -> Opener:
    return lambda: open(file, "rb")  # noqa: SIM115
