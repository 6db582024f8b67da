"""What the conventions learn while reading spans, kept for the spans read after them.

Instrumentations write the same attribute keys on every span, and an agent offers the
same tools on every call: working out a key's shape, or reading a tool list, once per
conversion instead of once per span was a large share of the converter's time. A
`ConversionMemo` holds those answers. Each conversion makes its own unless the caller
hands one in to share across conversions (a stream converting one trace at a time).
Its answers never depend on anything but the key or the raw value they were learnt
from, so sharing one changes no result; each table is cleared when it is full, since
hostile input may make up keys without end.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

__all__ = ["ConversionMemo", "REMEMBERED_KEYS", "REMEMBERED_TOOLS"]

#: The most key shapes each table keeps.
REMEMBERED_KEYS = 20_000
#: The most tool lists kept.
REMEMBERED_TOOLS = 512


class ConversionMemo:
    """Key shapes and tool lists learnt by the conventions (see the module's docstring).
    Safe to share between threads: every entry is written whole, and a lost write only
    costs a second reading."""

    __slots__ = ("oi_shapes", "legacy_shapes", "legacy_plain", "legacy_keys", "tools")

    def __init__(self) -> None:
        #: OpenInference flattened keys -> where their value goes (`_oi_keys`)
        self.oi_shapes: dict[str, Any] = {}
        #: OpenLLMetry 0.54 keys -> their shape (`_legacy_keys`), and the keys known to be
        #: none of them / some of them (compared with a span's key view at C speed)
        self.legacy_shapes: dict[str, Any] = {}
        self.legacy_plain: set[str] = set()
        self.legacy_keys: set[str] = set()
        #: raw tool-definition values -> the definitions' fields (`_common.remembered_tools`)
        self.tools: dict[Hashable, tuple[tuple[str, str, str], ...]] = {}
