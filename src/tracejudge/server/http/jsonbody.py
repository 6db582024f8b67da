"""JSON request bodies with a nesting limit, checked before they are parsed.

`json.loads` recurses once per level: 1,000 levels raise `RecursionError` (a 500, and
the connection dropped), and fewer than that still fail later, when pydantic writes a
value deeper than about 250 levels. So a body nested deeper than `MAX_DEPTH` is refused
before it is parsed (every JSON route answers 4xx naming the limit).

The depth is counted on the raw bytes, brackets outside strings only: escaped
backslashes and quotes are dropped first, so every quote left opens or closes a string;
what is between them is skipped. It costs about as much as parsing (0.3-0.5 s for 16 MB
of OTLP/JSON), and nothing for a body with fewer brackets than the limit.
"""

from __future__ import annotations

import json
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "TooDeepError", "depth", "loads"]

#: The deepest nesting of arrays and objects a JSON body may have. OTLP/JSON needs about
#: a dozen levels, a MultiAgentTrace about fifteen, tool arguments what the tool takes.
MAX_DEPTH = 100

_STEP = [0] * 256
for _byte in b"[{":
    _STEP[_byte] = 1
for _byte in b"]}":
    _STEP[_byte] = -1
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class TooDeepError(ValueError):
    """The JSON text is nested deeper than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"it is nested deeper than {limit} levels of arrays and objects, more than this "
            "server reads; flatten the deepest values"
        )


def depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in the JSON text `body` (for text that
    is not JSON: a number that means nothing, which the parser then refuses)."""
    if b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside_strings = b"".join(body.split(b'"')[::2]).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, outside_strings)), default=0)


def loads(body: bytes | str, limit: int = MAX_DEPTH) -> Any:
    """`json.loads(body)`, or `TooDeepError` (a `ValueError`) when it nests deeper than
    `limit`; `ValueError` / `UnicodeDecodeError` as `json.loads` raises them."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)
    if data.count(b"[") + data.count(b"{") > limit and depth(data) > limit:
        raise TooDeepError(limit)
    try:
        return json.loads(body)
    except RecursionError:  # not JSON the scan understood, nested deeper than Python goes
        raise TooDeepError(limit) from None
