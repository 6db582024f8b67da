"""The frame every HTML page of this room shares: one style sheet (`viewer.css`), one
script (`viewer.js`, the trace viewer), the Content-Security-Policy that runs exactly
those two, and JSON that is safe to embed in a `<script>` element.

- `document_head(title, home)` / `DOCUMENT_TAIL`: a page's start (title, the style, a
  link back to `home`) and its end (the script).
- `script_json(value)`: JSON text that no string can turn into the end of its element.
- `content_security_policy()`: the header value these pages are served with.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from types import ModuleType
from typing import Any

orjson: ModuleType | None
try:
    import orjson
except ImportError:  # not a dependency of the report itself
    orjson = None

__all__ = ["CSS", "DOCUMENT_TAIL", "SCRIPT", "content_security_policy", "document_head"]

_HERE = resources.files("tracejudge.report")
#: The pages' style sheet and script, inlined in every page (no external URL).
CSS = _HERE.joinpath("viewer.css").read_text(encoding="utf-8")
SCRIPT = _HERE.joinpath("viewer.js").read_text(encoding="utf-8")

#: The end of every page: the viewer's script, after the data it reads.
DOCUMENT_TAIL = f"<script>{SCRIPT}</script>\n</body></html>\n"


def _source_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(*, connect_self: bool = False) -> str:
    """A Content-Security-Policy header value for the pages of this room: their inline
    style and script (by hash) run, nothing else loads or runs (no other script, no
    external URL, no form, no frame around the page). `connect_self`: the script may
    send requests to the page's own server (the server's trace page records labels)."""
    connect = "connect-src 'self'; " if connect_self else ""
    return (
        f"default-src 'none'; style-src {_source_hash(CSS)}; "
        f"script-src {_source_hash(SCRIPT)}; {connect}base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    )


def document_head(title: str, home: str | None = None) -> str:
    """A page's start up to its first heading: the title, the style sheet and, when
    `home` is given, a link back to it (the server's list of traces)."""
    e = html.escape
    back = ""
    if home is not None:
        back = f'<nav><a href="{e(home, quote=True)}">&larr; all traces</a></nav>'
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>\n"
        f"<header>{back}<h1>{e(title)}</h1></header>\n"
    )


def script_json(value: Any) -> str:
    """JSON that is safe inside <script>: no "<", ">" or "&", no JS line separators."""
    text = _compact_json(value)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _compact_json(value: Any) -> str:
    """`value` as compact JSON, non-ASCII kept; orjson when installed (the server's extra
    brings it): a 20,000-span trace's page data is 10 MB, 0.2 s for `json.dumps`, 0.04 s
    for orjson, with the same text."""
    if orjson is not None:
        try:
            return str(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS), "utf-8")
        except TypeError:
            pass  # what orjson does not take (a NaN is no error to it): json says why
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_block(element_id: str, value: Any) -> str:
    """A `<script type="application/json">` element holding `value`."""
    return f'<script type="application/json" id="{element_id}">{script_json(value)}</script>\n'
