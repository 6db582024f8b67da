"""Keys written into a URL: taken out of it, sent as a header, and never shown.

A base URL such as ``https://user:KEY@host/v1`` or ``https://host/v1?api-key=KEY`` would
otherwise appear in every error message, ``repr`` and httpx log line. The URL kept is
the one without the key; the key goes where the provider expects it (a header), and any
text shown to the user (an error body a server echoes the key back in) is redacted.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

__all__ = ["REDACTED", "SECRET_QUERY_NAMES", "redact", "split_credentials"]

REDACTED = "[redacted]"
#: Query parameters that carry a key (compared without case). `api-version` and the like
#: stay: they are settings, and servers need them.
SECRET_QUERY_NAMES = frozenset(
    {"api-key", "api_key", "apikey", "key", "token", "access_token", "auth", "password"}
)


def split_credentials(url: str) -> tuple[str, str | None]:
    """(`url` without user, password and key-carrying query parameters; the key found in
    it: the password, else the user name, else the first such query parameter)."""
    parsed = httpx.URL(url)
    key: str | None = parsed.password or parsed.username or None
    kept: list[tuple[str, str]] = []
    for name, value in parsed.params.multi_items():
        if name.lower() in SECRET_QUERY_NAMES:
            key = key or value or None
        else:
            kept.append((name, value))
    if key is None and not parsed.userinfo:
        return url, None
    clean = parsed.copy_with(userinfo=b"", params=httpx.QueryParams(tuple(kept)) if kept else None)
    if not kept:
        clean = clean.copy_with(query=None)
    return str(clean), key


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret (of at least 4 characters) replaced by a marker."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, REDACTED)
    return text
