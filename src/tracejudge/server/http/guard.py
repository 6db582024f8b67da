"""What keeps web pages out: a Host allow-list and an Origin check.

A server without API keys trusts whoever can connect, which on loopback means the
programs of this machine; a web page the user opens is not one of them, yet its
browser can reach loopback. Two ways in are closed here:

- **DNS rebinding**: a page's own name made to resolve to 127.0.0.1 reads this server as
  same-origin, but its requests carry that name in `Host`. Without keys only loopback
  names (`localhost`, 127.0.0.0/8, ::1), the listening address and `--allowed-host`
  names are served; any other Host gets 421 and nothing else. With keys the check
  applies once `--allowed-host` is given (`*` turns it off).
- **Cross-site requests**: a page may POST to any address. A request that changes state
  (any method but GET, HEAD, OPTIONS) from another origin (its `Origin` header, or
  `Sec-Fetch-Site: cross-site`) gets 403, unless its origin's host is an allowed one.
  The JSON routes also refuse every body a page can send without a CORS preflight
  (`text/plain`, forms, multipart: 415; see `evals.read_model`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from tracejudge.server.http.errors import ApiError, error_response

__all__ = ["HostPolicy", "WebGuardMiddleware", "host_name"]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def host_name(host: str) -> str:
    """The name in a Host header or address, lower case, without port or brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def _is_loopback_name(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostPolicy:
    """Which Host names are served, and which origins may change state."""

    def __init__(self, listen_host: str, allowed: Iterable[str], *, keys: bool) -> None:
        entries = [a.strip().lower() for a in allowed if a.strip()]
        self.any_host = "*" in entries
        self.names = {host_name(a) for a in entries if a != "*"}
        listen = host_name(listen_host)
        self.listen = None if listen in _WILDCARDS else listen
        #: Without keys the Host is always checked; with keys once names are configured.
        self.enforced = not self.any_host and (not keys or bool(entries))

    def allows_host(self, host: str | None) -> bool:
        if not self.enforced or host is None:  # HTTP/1.0 without Host: no browser
            return True
        name = host_name(host)
        return _is_loopback_name(name) or name == self.listen or name in self.names

    def allows_origin(self, origin: str, host: str | None) -> bool:
        """Same origin as the request's Host, or an allowed host's origin."""
        if origin == "null":
            return False
        parts = urlsplit(origin)
        if not parts.scheme or not parts.netloc:
            return False
        netloc = parts.netloc.lower()
        if host is not None and netloc == host.strip().lower():
            return True
        return host_name(netloc) in self.names


def _header(scope: Scope, wanted: bytes) -> str | None:
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers", ())
    for name, value in headers:
        if name == wanted:
            return value.decode("latin-1")
    return None


class WebGuardMiddleware:
    """421 for a Host that is not served, 403 for a cross-site request that changes state."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if not self.policy.allows_host(host):
            error = ApiError(
                421,
                f"this server does not answer to the host name {host_name(host or '')!r} "
                "(it is not a loopback name or its listening address); if clients reach it "
                "by that name, start it with --allowed-host NAME",
            )
            await error_response(error)(scope, receive, send)
            return
        if scope.get("method") not in _SAFE_METHODS:
            origin = _header(scope, b"origin")
            cross_site = _header(scope, b"sec-fetch-site") == "cross-site"
            if (origin is not None and not self.policy.allows_origin(origin, host)) or (
                origin is None and cross_site
            ):
                error = ApiError(
                    403,
                    f"a request from another site ({origin or 'cross-site'}) may not change "
                    "anything here; send it from a program, not a web page (or serve that "
                    "page's host with --allowed-host)",
                )
                await error_response(error)(scope, receive, send)
                return
        await self.app(scope, receive, send)
