"""The one gunzip of OTLP input: every gzip member (as `gzip -c a b`, or a Collector
appending to one file, writes them), zero padding between members skipped, inflated to
at most a cap, in bounded memory and in time linear in the input however many members it
has. Files, streams and the server's request bodies all go through it.

It reads in one of two modes, named where it is called:

- `lenient` (files and streams, read best effort): a member that does not inflate, data
  after the last member that is not gzip, a truncated last member, or output past the
  cap end the data with a warning, and what came before is kept; only input of which
  nothing inflates raises `OTLPDecodeError`.
- `strict` (a receiver's request body, all or nothing): each of those raises,
  `OTLPTooLargeError` past the cap, `OTLPDecodeError` naming the problem otherwise.
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterator
from typing import Literal, Protocol

from tracejudge.convert._errors import OTLPDecodeError, OTLPTooLargeError

__all__ = ["CHUNK", "Mode", "inflate", "inflate_gzip", "inflating"]

Mode = Literal["lenient", "strict"]

#: Bytes read from the input at a time.
CHUNK = 64 * 1024
# Compressed bytes handed to the inflater at a time when a member starts. Each member's end
# copies what was handed over and not used, so a small piece keeps a file of many tiny
# members linear; the piece doubles while a member goes on, so large members stay fast.
_FIRST_PIECE = 512
# The most bytes one step inflates to: what a small piece of a "zip bomb" holds in memory
# at once, however high the cap (1 KiB of deflate can inflate to about 1 MiB).
_OUT_PIECE = 1024 * 1024
_NOT_ZERO = re.compile(rb"[^\x00]")
GZIP_MAGIC = b"\x1f\x8b"


class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


class _Problems:
    """What each mode does with each problem: `lenient` notes a warning (the reading
    then ends), `strict` raises."""

    def __init__(self, mode: Mode, limit: int | None, warnings: list[str]) -> None:
        self.strict = mode == "strict"
        self.limit = limit
        self.warnings = warnings

    def too_large(self) -> None:
        if self.strict:
            raise OTLPTooLargeError(self.limit or 0)
        self.warnings.append(
            f"gzip input inflates to more than {self.limit} bytes; "
            f"only the first {self.limit} were read"
        )

    def not_gzip_after(self, members: int) -> None:
        if self.strict:
            raise OTLPDecodeError(
                f"the body is not valid gzip (the data after member {members} is not gzip)"
            )
        self.warnings.append(f"the data after gzip member {members} is not gzip; ignored")

    def does_not_inflate(self, members: int, inflated: int, error: zlib.error) -> None:
        if self.strict:
            raise OTLPDecodeError(f"the body is not valid gzip ({error})")
        if not members and not inflated:
            raise OTLPDecodeError(f"gzip input that does not inflate: {error}")
        self.warnings.append(f"gzip member {members + 1} does not inflate ({error}); ignored")

    def truncated(self, members: int, inflated: int) -> None:
        if self.strict:
            raise OTLPDecodeError("the gzip body is truncated")
        if not members and not inflated:
            raise OTLPDecodeError("gzip input that does not inflate: it ends in its header")
        self.warnings.append(f"gzip member {members + 1} is truncated; read what it holds")


def inflate(
    raw: _Readable, *, limit: int | None, mode: Mode, warnings: list[str]
) -> Iterator[bytes]:
    """The inflated bytes of the gzip data `raw` holds, in pieces of at most 1 MiB; at most
    `limit` bytes in all (None: no cap, for a reader that holds one piece at a time).
    Problems as `mode` says (`lenient` ones in `warnings`)."""
    problems = _Problems(mode, limit, warnings)
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
            if chunk[position : position + 2] != GZIP_MAGIC:
                problems.not_gzip_after(members)
                return
            inflater = zlib.decompressobj(wbits=31)
            piece_size = _FIRST_PIECE
        piece = chunk[position : position + piece_size]
        pending: bytes | memoryview = piece
        while True:  # the piece's output, at most _OUT_PIECE bytes a step
            room = _OUT_PIECE if limit is None else limit - size
            # One byte past the room left tells output beyond the cap (0 means no limit).
            asked = min(room + 1, _OUT_PIECE)
            try:
                out = inflater.decompress(pending, asked)
            except zlib.error as error:
                problems.does_not_inflate(members, size, error)
                return
            if len(out) > room:
                if mode == "lenient":
                    yield out[:room]
                problems.too_large()
                return
            size += len(out)
            if out:
                yield out
            pending = inflater.unconsumed_tail
            # Output that filled the step may have more behind it, input consumed or not.
            if inflater.eof or not (pending or len(out) == asked):
                break
        if inflater.eof:
            members += 1
            position += len(piece) - len(inflater.unused_data)
            inflater = None
        else:
            position += len(piece)
            piece_size = min(piece_size * 2, CHUNK)
    if inflater is not None:
        problems.truncated(members, size)


def inflate_gzip(body: bytes, limit: int) -> bytes:
    """Every gzip member of `body`, inflated (`strict`): at most `limit` bytes
    (`OTLPTooLargeError` past it); `OTLPDecodeError` for gzip that does not inflate or
    is truncated."""
    return b"".join(inflate(io.BytesIO(body), limit=limit, mode="strict", warnings=[]))


def inflating(
    raw: io.BufferedReader | io.BytesIO, limit: int | None, warnings: list[str]
) -> io.BufferedReader:
    """`raw` as a buffered stream; inflated (`lenient`) when it starts as gzip, to at most
    `limit` bytes, with a warning beyond."""
    stream: io.BufferedReader = (
        raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw, CHUNK)
    )
    if stream.peek(2)[:2] != GZIP_MAGIC:
        return stream
    pieces = inflate(stream, limit=limit, mode="lenient", warnings=warnings)
    return io.BufferedReader(_Pieces(pieces), CHUNK)


class _Pieces(io.RawIOBase):
    """An iterator of byte pieces as the raw stream a BufferedReader reads."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self._pieces = pieces
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
