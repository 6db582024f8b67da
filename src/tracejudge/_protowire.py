"""Protobuf's wire format, the little tracejudge reads and writes by hand: the framing of
OTLP pieces, read without decoding them (the converter's walk of a request that does not
parse whole, the streaming reader, the split of a request by trace) and written (framing
OTLP pieces, the two fields of a `google.rpc.Status` the server answers with).

One set of framing rules for every reader: a field's key is a varint of at most 64 bits
with a number above 0; wire types 0 (varint), 1 (8 bytes), 2 (length-delimited) and 5
(4 bytes) are read, groups (3, 4; OTLP uses none) and 6, 7 (which do not exist) are not;
a field must end within its message. A reader that breaks one raises `WireError`, whose
text names the problem; each caller decides whether it ends the reading (a file read best
effort) or the whole request (a receiver's 400).

Two forms of the same reader: `fields` walks a message held in memory (bytes and
offsets, nothing copied), `WireStream` reads one from a stream a field at a time (a
large file in bounded memory), keeping the offset its errors name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

__all__ = [
    "FIXED32",
    "FIXED64",
    "LENGTH_DELIMITED",
    "VARINT",
    "WireError",
    "WireStream",
    "fields",
    "length_delimited",
    "read_varint",
    "varint",
]

#: The wire types OTLP uses.
VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5
_FIXED_SIZES = {FIXED64: 8, FIXED32: 4}


class WireError(ValueError):
    """Protobuf framing that breaks the rules above: the text says where and how."""


# --------------------------------------------------------------------------- writing


def varint(value: int) -> bytes:
    """A non-negative integer as a protobuf varint."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(number: int, payload: bytes) -> bytes:
    """`payload` as length-delimited field `number` (a message, bytes or a string)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


# --------------------------------------------------------------------------- in memory


def read_varint(data: bytes, position: int, end: int) -> tuple[int, int]:
    """(the varint at data[position], the position after it), reading no further than
    `end`."""
    result = shift = 0
    while True:
        if position >= end:
            raise WireError("a field's header runs past its message")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift >= 64:
            raise WireError("a field's header is not a varint")


def fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, payload start, payload end) of each field of the message
    in data[start:end]; a varint's payload is its own bytes."""
    position = start
    while position < end:
        key, position = read_varint(data, position, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(f"field number 0 at byte {position}")
        if wire == VARINT:
            _, after = read_varint(data, position, end)
        elif wire == LENGTH_DELIMITED:
            size, position = read_varint(data, position, end)
            after = position + size
        elif wire in _FIXED_SIZES:
            after = position + _FIXED_SIZES[wire]
        else:
            raise WireError(f"wire type {wire} at byte {position}")
        if after > end:
            raise WireError("a field runs past its message")
        yield number, wire, position, after
        position = after


# --------------------------------------------------------------------------- streamed


class Readable(Protocol):
    """A binary stream as the walk reads it (a BufferedReader, a BytesIO, a window)."""

    def read(self, size: int, /) -> bytes: ...


class WireStream:
    """The fields of a protobuf message read from `stream` a field at a time. `offset`
    counts the bytes read (the errors name it); `stream` may be swapped for a copy of
    a message read whole, with the offset going on as if it had not."""

    def __init__(self, stream: Readable) -> None:
        self.stream = stream
        self.offset = 0

    def varint(self) -> int | None:
        """The next varint; None at a clean end of the stream."""
        byte = self.stream.read(1)
        if byte and byte[0] < 0x80:  # the usual one-byte varint
            self.offset += 1
            return byte[0]
        shift = result = 0
        while True:
            if not byte:
                if shift:
                    raise WireError("it ends inside a field's header")
                return None
            self.offset += 1
            result |= (byte[0] & 0x7F) << shift
            if not byte[0] & 0x80:
                return result
            shift += 7
            if shift >= 64:
                raise WireError("a field's header is not a varint")
            byte = self.stream.read(1)

    def read(self, size: int) -> bytes:
        """The next `size` bytes (fewer at the end of the stream)."""
        payload = self.stream.read(size)
        self.offset += len(payload)
        return payload

    def skip(self, length: int) -> None:
        while length > 0:
            got = len(self.stream.read(min(length, 1 << 16)))
            if not got:
                raise WireError("it ends inside a field")
            self.offset += got
            length -= got

    def fields(self, length: int | None) -> Iterator[tuple[int, int]]:
        """(field number, payload size) of each length-delimited field of the message in
        the next `length` bytes (None: to the end of the stream); varint and fixed-size
        fields are skipped. The caller reads or skips each payload before the next."""
        end = None if length is None else self.offset + length
        while end is None or self.offset < end:
            field_start = self.offset
            key = self.varint()
            if key is None:
                if end is not None:
                    raise WireError("it ends inside a message")
                return
            if end is not None and self.offset > end:
                # (the key itself crosses the message's end: what a walk of the message
                # copied on its own finds as a field cut off by that end)
                raise WireError("a field runs past its message")
            number, wire = key >> 3, key & 7
            if number == 0:
                raise WireError(f"field number 0 at byte {self.offset}")
            if wire == VARINT:
                if self.varint() is None:
                    raise WireError("it ends inside a field")
            elif wire in _FIXED_SIZES:
                self.skip(_FIXED_SIZES[wire])
            elif wire == LENGTH_DELIMITED:
                size = self.varint()
                if size is None or (end is not None and self.offset + size > end):
                    raise WireError(f"a field at byte {field_start} runs past its message")
                yield number, size
            else:
                raise WireError(f"wire type {wire} at byte {self.offset}")
        if end is not None and self.offset > end:
            raise WireError("a field runs past its message")
