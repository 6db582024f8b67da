"""The one gunzip of OTLP input (`convert._inflate`): the same bytes in both modes, each
problem a warning when lenient (files, streams) and an error when strict (the server),
and memory bounded by a step, not by what a small input inflates to."""

from __future__ import annotations

import gzip
import io

import pytest

from tracejudge.convert._errors import OTLPDecodeError, OTLPTooLargeError
from tracejudge.convert._inflate import inflate


def _lenient(data: bytes, limit: int | None = None) -> tuple[bytes, list[str]]:
    warnings: list[str] = []
    pieces = inflate(io.BytesIO(data), limit=limit, mode="lenient", warnings=warnings)
    return b"".join(pieces), warnings


def _strict(data: bytes, limit: int | None = None) -> bytes:
    return b"".join(inflate(io.BytesIO(data), limit=limit, mode="strict", warnings=[]))


def test_both_modes_inflate_every_member_past_padding_alike() -> None:
    text = b"".join(b"line %d\n" % i for i in range(5000))
    data = gzip.compress(text[:7000]) + b"\x00" * 9 + gzip.compress(text[7000:])
    assert _lenient(data) == (text, [])
    assert _strict(data) == text


@pytest.mark.parametrize(
    ("damage", "warning", "error"),
    [
        (lambda d: d[:-6], "member 2 is truncated", "truncated"),
        (lambda d: d + b"not gzip", "after gzip member 2 is not gzip", "not valid gzip"),
        (lambda d: d + b"\x1f\x8bbroken", "member 3 does not inflate", "not valid gzip"),
    ],
)
def test_a_broken_end_is_a_warning_when_lenient_and_an_error_when_strict(
    damage, warning: str, error: str
) -> None:
    first, second = gzip.compress(b"a" * 1000), gzip.compress(b"b" * 1000)
    data = damage(first + second)
    kept, warnings = _lenient(data)
    assert kept.startswith(b"a" * 1000)
    assert len(warnings) == 1 and warning in warnings[0]
    with pytest.raises(OTLPDecodeError, match=error):
        _strict(data)


def test_input_of_which_nothing_inflates_raises_in_both_modes() -> None:
    for data in (b"\x1f\x8b\x08", b"\x1f\x8b\x08\x00garbage-garbage-garbage"):
        with pytest.raises(OTLPDecodeError):
            _lenient(data)
        with pytest.raises(OTLPDecodeError):
            _strict(data)


def test_the_cap_cuts_with_a_warning_or_refuses() -> None:
    data = gzip.compress(b"x" * 10_000)
    kept, warnings = _lenient(data, limit=4000)
    assert kept == b"x" * 4000 and "more than 4000 bytes" in warnings[0]
    with pytest.raises(OTLPTooLargeError):
        _strict(data, limit=4000)
    assert _strict(data, limit=10_000) == b"x" * 10_000  # exactly the cap is within it


def test_a_bomb_inflates_a_bounded_piece_at_a_time_with_or_without_a_cap() -> None:
    bomb = gzip.compress(b" " * 30_000_000)
    assert len(bomb) < 50_000
    warnings: list[str] = []
    total = largest = 0
    for piece in inflate(io.BytesIO(bomb), limit=None, mode="lenient", warnings=warnings):
        total += len(piece)
        largest = max(largest, len(piece))
    assert total == 30_000_000 and warnings == []
    assert largest <= 1024 * 1024  # not the 30 MB one read of the input holds
