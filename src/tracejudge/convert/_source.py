"""Where OTLP input comes from, read as a stream: bytes, text, a file, or the files of a
directory; gzip in any number of members inflated on the fly.

Nothing here reads a whole file into memory: decoders pull what they need, so a large
input costs what its spans cost, not its size. Inflating is linear in the input however
many members it has (a Collector appending compressed batches writes thousands).
"""

from __future__ import annotations

import io
import os
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["CHUNK", "OTLPDecodeError", "Opener", "Source", "inflating", "sources"]

#: Bytes read from a file at a time.
CHUNK = 64 * 1024
# Compressed bytes handed to the inflater at a time when a member starts. Each member's end
# copies what was handed over and not used, so a small piece keeps a file of many tiny
# members linear; the piece doubles while a member goes on, so large members stay fast.
_FIRST_PIECE = 512
_NOT_ZERO = re.compile(rb"[^\x00]")
_GZIP_MAGIC = b"\x1f\x8b"

#: Opens the input (again) from its start: a file opened "rb", or the bytes given.
Opener = Callable[[], "io.BufferedReader | io.BytesIO"]


class OTLPDecodeError(ValueError):
    """Raised by the decoders here when an input is not OTLP at all (neither protobuf
    `ExportTraceServiceRequest` nor OTLP/JSON). `traces_from_otlp` never lets it out:
    it reports the reason as a warning on its (empty) result. Partly broken input does
    not raise at all: what can be read is converted and the rest reported as warnings."""


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


def inflating(
    raw: io.BufferedReader | io.BytesIO, limit: int, warnings: list[str]
) -> io.BufferedReader:
    """`raw` as a buffered stream; inflated when it starts as gzip (to at most `limit`
    bytes, with a warning beyond)."""
    stream: io.BufferedReader = (
        raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw, CHUNK)
    )
    if stream.peek(2)[:2] != _GZIP_MAGIC:
        return stream
    return io.BufferedReader(_Gunzip(stream, limit, warnings), CHUNK)


class _Gunzip(io.RawIOBase):
    """The inflated bytes of a gzip stream of any number of members (as `gzip -c a b`, or a
    Collector appending to one file, writes them), zero padding between them skipped.

    A member that does not inflate, or data after the last member that is not gzip, ends
    the stream with a warning (the members before it are kept); so does a truncated last
    member (what it holds is kept). OTLPDecodeError when not even the first inflates.
    """

    def __init__(self, raw: BinaryIO, limit: int, warnings: list[str]) -> None:
        self._pieces = _inflate(raw, limit, warnings)
        self._view = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(  # type: ignore[override]  # BufferedReader passes a memoryview
        self, buffer: bytearray | memoryview
    ) -> int:
        while not self._view:
            piece = next(self._pieces, None)
            if piece is None:
                return 0
            self._view = memoryview(piece)
        count = min(len(buffer), len(self._view))
        buffer[:count] = self._view[:count]
        self._view = self._view[count:]
        return count


def _inflate(raw: BinaryIO, limit: int, warnings: list[str]) -> Iterator[bytes]:
    chunk = memoryview(b"")
    position = 0  # in chunk
    size = members = 0
    inflater: zlib._Decompress | None = None
    piece_size = _FIRST_PIECE
    while True:
        if position >= len(chunk):
            chunk, position = memoryview(raw.read(CHUNK)), 0
            if not chunk:
                break
        if inflater is None:
            # Between members: zeros are padding; anything else that is not gzip ends it.
            found = _NOT_ZERO.search(chunk, position)
            if found is None:
                position = len(chunk)
                continue
            position = found.start()
            if len(chunk) - position < 2:
                chunk, position = memoryview(bytes(chunk[position:]) + raw.read(CHUNK)), 0
            if chunk[position : position + 2] != _GZIP_MAGIC:
                warnings.append(f"the data after gzip member {members} is not gzip; ignored")
                return
            inflater = zlib.decompressobj(wbits=31)
            piece_size = _FIRST_PIECE
        piece = chunk[position : position + piece_size]
        room = limit - size
        try:
            # max_length 0 would mean "no limit": ask for one byte past the room left.
            out = inflater.decompress(piece, room + 1)
        except zlib.error as exc:
            if not members:
                raise OTLPDecodeError(f"gzip input that does not inflate: {exc}") from None
            warnings.append(f"gzip member {members + 1} does not inflate ({exc}); ignored")
            return
        if len(out) > room:
            yield out[:room]
            warnings.append(
                f"gzip input inflates to more than {limit} bytes; only the first {limit} were read"
            )
            return
        size += len(out)
        if out:
            yield out
        if inflater.eof:
            members += 1
            position += len(piece) - len(inflater.unused_data)
            inflater = None
        else:
            position += len(piece)
            piece_size = min(piece_size * 2, CHUNK)
    if inflater is not None:
        if not members and not size:
            raise OTLPDecodeError("gzip input that does not inflate: it ends in its header")
        warnings.append(f"gzip member {members + 1} is truncated; read what it holds")
