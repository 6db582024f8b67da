"""The one rule for span and trace ids, for every reader of OTLP (the converter's decoders
and the split of a request by trace): OpenTelemetry's. A trace id is 16 bytes and a span
id 8, neither all zero; OTLP/JSON writes them as hex, protobuf's `json_format` as base64.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

__all__ = ["TRACE_ID_BYTES", "SPAN_ID_BYTES", "json_id_bytes", "valid_id"]

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8


def valid_id(raw: bytes, size: int) -> bool:
    """`size` bytes (16 for a trace, 8 for a span), not all zero."""
    return len(raw) == size and raw != bytes(size)


def json_id_bytes(value: Any, size: int) -> bytes:
    """The bytes of an OTLP/JSON id: hex of `size` bytes, or base64 of them; b"" for
    anything else."""
    if not isinstance(value, str) or not value:
        return b""
    text = value.strip()
    if len(text) == size * 2:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return b""
    return raw if len(raw) == size else b""
