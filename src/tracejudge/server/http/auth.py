"""API keys: which requests may use the server, and who they are for the rate limit.

Keys come in the `API-Key` header (what Composo's clients send) or as
`Authorization: Bearer <key>` (what OTLP exporters and Collectors are easily told to
send). The web pages (`GET /ui...`, read-only) also take HTTP Basic with the key as the
password, any user name: a browser asks for it itself, keeps it in memory for the
session, and sends it in a header; a key in the URL (logs, history, Referer) or in a
cookie (sent by cross-site requests to the API) is never accepted.

A key may be given a name, written before it with a space (`ana tj_4f...`): the labels a
person records on the trace pages carry the name of the key they signed in with (an
unnamed key is `key-1`, `key-2`, ... in the order configured). Names are not secrets.

A key is compared with every configured key in constant time (their SHA-256
digests through `hmac.compare_digest`, all of them every time), so the answer time
says nothing about how much of a key was right. Keys are never logged or echoed.

Wrong keys are rate limited per client address (`FAILED_KEY_BURST` at once, then
`FAILED_KEY_RATE` a second): past that, a wrong key from the address gets 429 with
`Retry-After` until the limit refills, so guessing keys costs time whatever the guesses
are. The right key is never refused by it: a key is checked before the limit is, so a
neighbour behind the same address (or a web page making someone's browser send requests
without a key) cannot lock out the people who hold the key. A request with no key at all
is not a guess and is not counted: it is answered 401 with the challenge, always, so a
browser can still ask its user to sign in.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import math
from collections.abc import Iterable, Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from tracejudge.server.http.buckets import TokenBuckets
from tracejudge.server.http.errors import ApiError, error_response

__all__ = [
    "UI_PREFIX",
    "API_KEY_HEADER",
    "AUTHORIZATION_HEADER",
    "BEARER",
    "KeyRing",
    "AuthMiddleware",
    "OPEN_PATHS",
    "FAILED_KEY_BURST",
    "FAILED_KEY_RATE",
]

#: Wrong or missing keys a client address may send at once, and a second after that.
FAILED_KEY_BURST = 20
FAILED_KEY_RATE = 1.0

#: The header Composo's clients send the key in (HTTP header names are case-insensitive).
API_KEY_HEADER = "API-Key"
#: The other accepted form, `Authorization: Bearer <key>`.
AUTHORIZATION_HEADER = "Authorization"
BEARER = "Bearer"
_API_KEY = API_KEY_HEADER.lower().encode("latin-1")
_AUTHORIZATION = AUTHORIZATION_HEADER.lower().encode("latin-1")

#: Paths anyone may read: liveness, readiness, the API's description, and `/` (it only
#: leads to /ui).
OPEN_PATHS = frozenset({"/", "/health", "/ready", "/openapi.json"})
#: The web pages, where a browser may also sign in with HTTP Basic.
UI_PREFIX = "/ui"
_BASIC = "Basic"


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()


def split_named_key(entry: str) -> tuple[str | None, str]:
    """(name, key) of a configured key: `NAME KEY` names it; one word is a key alone."""
    words = entry.split()
    if len(words) == 2:
        return words[0], words[1]
    return None, entry.strip()


class KeyRing:
    """The configured keys, kept only as digests, with their names."""

    def __init__(self, keys: Sequence[str]) -> None:
        pairs = [split_named_key(k) for k in keys]
        self._digests = [_digest(key) for _, key in pairs]
        self.names = [name or f"key-{n}" for n, (name, _) in enumerate(pairs, 1)]

    def __bool__(self) -> bool:
        return bool(self._digests)

    def identify(self, key: str | None) -> int | None:
        """The index of the matching key (its identity for the rate limit), or None."""
        if key is None:
            return None
        offered = _digest(key)
        found: int | None = None
        for index, digest in enumerate(self._digests):
            if hmac.compare_digest(offered, digest) and found is None:
                found = index
        return found


def is_ui_read(scope: Scope) -> bool:
    """A GET (or HEAD) of a web page."""
    return scope.get("method") in ("GET", "HEAD") and _is_ui(scope["path"])


def _is_ui(path: str) -> bool:
    return path == UI_PREFIX or path.startswith(UI_PREFIX + "/")


def is_ui_form(scope: Scope) -> bool:
    """A page's own POST (a label recorded on the trace page): the browser sends the
    credentials it signed in with. Such a route must refuse anything but JSON from the
    page's own origin (`ui.same_origin_json`), as a page of another site cannot send."""
    return scope.get("method") == "POST" and _is_ui(scope["path"])


def _basic_password(token: str) -> str | None:
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    _, colon, password = decoded.partition(":")
    return password if colon and password else None


def presented_key(scope: Scope) -> str | None:
    """The key a request carries: `API-Key`, else `Authorization: Bearer`, else (a web
    page only) the password of `Authorization: Basic`."""
    bearer = None
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers", ())
    for name, value in headers:
        if name == _API_KEY:
            return value.decode("latin-1").strip()
        if name == _AUTHORIZATION:
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == BEARER.lower() and token.strip():
                bearer = token.strip()
            elif (
                scheme.lower() == _BASIC.lower()
                and token.strip()
                and (is_ui_read(scope) or is_ui_form(scope))
            ):
                bearer = _basic_password(token.strip())
    return bearer


class AuthMiddleware:
    """401 for requests without a valid key (when keys are configured); puts the caller's
    identity (`key:<n>`, or `host:<address>` without keys) in `scope["state"]["caller"]`
    and, with keys, the key's name in `scope["state"]["key_name"]`."""

    def __init__(self, app: ASGIApp, keys: KeyRing) -> None:
        self.app = app
        self.keys = keys
        self.failures = TokenBuckets(FAILED_KEY_RATE, FAILED_KEY_BURST)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        if not self.keys or scope["path"] in OPEN_PATHS:
            client = scope.get("client") or ("unknown", 0)
            state["caller"] = f"host:{client[0]}"
            await self.app(scope, receive, send)
            return
        presented = presented_key(scope)
        index = self.keys.identify(presented)
        if index is None:
            await self._refuse(scope, receive, send, presented)
            return
        state["caller"] = f"key:{index}"
        state["key_name"] = self.keys.names[index]
        await self.app(scope, receive, send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, presented: str | None
    ) -> None:
        """401 for a missing or wrong key; 429 once this address has sent too many wrong
        ones (a missing key is not counted: it guesses nothing)."""
        if presented is not None:
            address = str((scope.get("client") or ("unknown", 0))[0])
            wait = self.failures.take(address)
            if wait > 0:
                retry = str(max(1, math.ceil(wait)))
                error = ApiError(
                    429,
                    f"too many requests with a wrong API key from this address; retry in "
                    f"{retry} s with the right key (the server allows {FAILED_KEY_BURST} wrong "
                    f"keys at once, then {FAILED_KEY_RATE:g} a second; the right key is "
                    "never refused by this limit)",
                    headers={"Retry-After": retry},
                )
                await error_response(error)(scope, receive, send)
                return
        if is_ui_read(scope):  # a browser answers a Basic challenge with a sign-in prompt
            how = "give it as the password of the browser's sign-in prompt (any user name)"
            challenge = f'{_BASIC} realm="tracejudge", charset="UTF-8"'
        else:
            how = "send it in the API-Key header (or as Authorization: Bearer <key>)"
            challenge = BEARER
        error = ApiError(
            401,
            f"a valid API key is required: {how}",
            headers={"WWW-Authenticate": challenge},
        )
        await error_response(error)(scope, receive, send)
