"""A server page of plain HTML and CSS (no script): the rules page and the session page.

Server-rendered, every text escaped by the caller, no external URL; sent with a
Content-Security-Policy that allows only the page's own style (by its hash), and the
headers every page of the server carries.
"""

from __future__ import annotations

import base64
import hashlib
import html
import time

__all__ = ["CSS", "document", "headers", "page_headers", "style_policy", "when"]

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1300px;padding:0 16px;color:#222}
h1{font-size:20px;margin:12px 0 4px}h2{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#f6f6f6;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{background:#fdecea}tr.failed td:first-child{box-shadow:inset 4px 0 #c0392b}
.good{color:#1e8449}.bad{color:#c0392b;font-weight:600}.na{color:#888}.warn{color:#b9770e}
.badge{font-weight:600}.mono{font-family:monospace;font-size:12px;color:#555}
.tag{display:inline-block;background:#eef;border-radius:3px;padding:0 4px;margin:1px;
font-size:12px;color:#223}.facts{color:#444;margin:4px 0}.small{font-size:12px;color:#555}
nav a{margin-right:14px}pre{white-space:pre-wrap;margin:0;font:inherit}
"""


def style_policy(css: str) -> str:
    """The CSP of a page with no script: its own style (`css`, by its hash), forms to this
    server only."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )


def page_headers(policy: str) -> dict[str, str]:
    """The headers every page of the server carries, with its CSP."""
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        # Traces and runs hold prompts and answers: no shared cache keeps them.
        "Cache-Control": "no-store",
    }


_POLICY = style_policy(CSS)


def headers() -> dict[str, str]:
    return page_headers(_POLICY)


def document(title: str, body: str) -> str:
    """A whole page: `body` is HTML the caller escaped."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n{body}\n"
        "</body></html>\n"
    )


def when(moment: float | None) -> str:
    """A time as the pages show it (UTC)."""
    if moment is None:
        return "unknown"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(moment))
