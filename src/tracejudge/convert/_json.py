"""`loads`: `json.loads`, twice as fast when the optional `msgspec` is installed.

The converter spends most of its decoding time parsing JSON (OTLP/JSON lines, and the
JSON strings instrumentations put in attributes). With `pip install 'tracejudge[speed]'`
that parsing is done by msgspec's decoder; without it, by the standard library.

Results are the same either way: msgspec returns what `json.loads` returns for every
text it accepts (big integers included), and it accepts a strict subset of what
`json.loads` accepts. Whatever it rejects (NaN, a number out of float range, a lone
surrogate escape, a byte-order mark, UTF-16 bytes, malformed JSON) is handed to
`json.loads`, which then returns or raises exactly as it always did, so warnings that
quote its error messages do not change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

__all__ = ["ACCELERATED", "is_mapping", "loads"]

_decode: Callable[[Any], Any] | None
try:
    import msgspec
except ImportError:  # the `speed` extra is not installed: the standard library only
    _decode = None
    _Rejected: tuple[type[BaseException], ...] = ()
else:
    _decode = msgspec.json.Decoder().decode
    _Rejected = (msgspec.DecodeError, RecursionError)

#: Whether msgspec decodes (the `speed` extra is installed).
ACCELERATED = _decode is not None


def loads(data: str | bytes | bytearray) -> Any:
    """`json.loads(data)`: the same value, the same exceptions."""
    if _decode is not None:
        try:
            return _decode(data)
        except _Rejected:
            pass  # decided by the standard library: its value or its error message
    return json.loads(data)


_PLAIN = frozenset({str, int, float, bool, type(None), list, tuple})


def is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """`isinstance(value, Mapping)` in a fraction of its time for the values of parsed JSON
    (the ABC check costs several times a type lookup)."""
    kind = type(value)
    return kind is dict or (kind not in _PLAIN and isinstance(value, Mapping))
