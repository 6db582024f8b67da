"""The little of protobuf's wire format tracejudge writes by hand: framing OTLP pieces
(`convert.stream`) and the two fields of a `google.rpc.Status` (the server's answers)."""

from __future__ import annotations

__all__ = ["length_delimited", "varint"]


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
