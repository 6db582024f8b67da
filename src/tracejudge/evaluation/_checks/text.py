"""Recognising tool errors, empty tool results and refusals in text, for the checks.

All are heuristics tuned for precision: a tool result counts as an error only
when it looks like one as a whole (a JSON error object, a traceback, an error
line at its start, an HTTP error status), not when it merely mentions an error
somewhere in otherwise useful content; an answer counts as a refusal only when
it opens with one, not when a caveat follows a real answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["HTTP_REASONS", "tool_error", "empty_result", "refusal", "short"]

_ERROR_KEYS = ("error", "errors", "exception", "error_message", "errormessage", "err", "fault")
_STATUS_KEYS = ("status_code", "statuscode", "http_status", "httpstatus", "status")
_FAILED_STATUS = frozenset({"error", "failed", "failure", "fail", "fatal", "exception"})

_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
# An error line at the very start of the result: "ValueError: ...", "Error: ...",
# "requests.exceptions.HTTPError: ...", "ERROR - ...", "Exception in thread ...".
_LEADING_ERROR = re.compile(
    r"\A\s*(?:\[?(?:error|fatal|exception)\]?\s*[:\-!\]]"
    r"|(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Fault)\b\s*[:(]"
    r"|(?:an?\s+)?(?:unexpected\s+|internal\s+|unknown\s+)?error\s+(?:occurred|has occurred|while)"
    r"|error\s+(?:executing|calling|running|invoking)\b"
    r"|exception\s+in\b"
    r"|(?:request\s+|connection\s+|operation\s+)?timed\s+out\b"
    r"|failed\s+to\b"
    r"|(?:tool|function)\s+\S+\s+(?:not found|does not exist|failed)\b)",
    re.IGNORECASE,
)
# A short result that is only a failure message about something: "City not found",
# "File does not exist", "Account ID is invalid".
_SHORT_FAILURE = re.compile(
    r"\A\W*(?:[\w.'\-/]+\s+){1,4}(?:was\s+|is\s+)?(?:not\s+found|does\s+not\s+exist"
    r"|doesn[’']t\s+exist|is\s+(?:not\s+valid|invalid)|not\s+recogni[sz]ed)\W*\Z",
    re.IGNORECASE,
)
#: HTTP reason phrases, as a regular expression alternation.
HTTP_REASONS = (
    "Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|Method Not Allowed"
    "|Not Acceptable|Request Timeout|Conflict|Gone|Payload Too Large|Unprocessable Entity"
    "|Unprocessable Content|Too Many Requests|Internal Server Error|Not Implemented|Bad Gateway"
    "|Service Unavailable|Gateway Timeout|Client Error|Server Error"
)
_HTTP_STATUS = re.compile(
    r"\bHTTP(?:/\d(?:\.\d)?)?\s*(?:error\s*)?:?\s*(?P<a>[45]\d\d)\b"
    r"|\bstatus(?:[\s_]*code)?\s*[:=]?\s*(?P<b>[45]\d\d)\b"
    r"|\b(?P<c>[45]\d\d)\s*[:\-]?\s*(?:" + HTTP_REASONS + r")\b",
    re.IGNORECASE,
)
#: A result that is only an HTTP reason phrase ("Internal Server Error", "Not Found").
_REASON_ONLY = re.compile(r"\A\W*(?:" + HTTP_REASONS + r")\W*\Z", re.IGNORECASE)
#: HTTP status phrases are looked for near the start only: further in, a "404 Not Found"
#: is more likely content (a search result about errors) than the result's own status.
_HTTP_WINDOW = 300


def short(value: Any, limit: int = 80) -> str:
    """`value` (text, or anything as JSON) on one line, cut to `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_error(data: Any) -> str | None:
    if isinstance(data, str):
        return _text_error(data)
    if not isinstance(data, dict):
        return None
    lowered = {k.lower(): v for k, v in data.items() if isinstance(k, str)}
    for key in _ERROR_KEYS:
        value = lowered.get(key)
        if value not in (None, False, "", [], {}, 0):
            return f'error object ("{key}": {short(value)})'
    if lowered.get("iserror") is True or lowered.get("is_error") is True:  # MCP CallToolResult
        return f"error result ({short(data)})"
    for key in _STATUS_KEYS:
        value = lowered.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
            return f'HTTP error status ("{key}": {value})'
        if isinstance(value, str):
            if value.strip().lower() in _FAILED_STATUS:
                return f'failed status ("{key}": "{value}")'
            if re.fullmatch(r"\s*[45]\d\d\b.*", value):
                return f'HTTP error status ("{key}": "{short(value, 40)}")'
    code = lowered.get("code")
    if (
        isinstance(code, int)
        and not isinstance(code, bool)
        and 400 <= code <= 599
        and ("message" in lowered or "detail" in lowered)
    ):
        return f'HTTP error status ("code": {code})'
    if lowered.get("success") is False or lowered.get("ok") is False:
        key = "success" if "success" in lowered else "ok"
        return f'failure flag ("{key}": false)'
    # An error body that is only a message: {"detail": "Not Found"} (FastAPI, Django REST),
    # {"message": "Error: bad key", "documentation_url": ...} (GitHub).
    for key in ("detail", "message"):
        value = lowered.get(key)
        if isinstance(value, str) and len(lowered) <= 2 and _message_error(value):
            return f'error message ("{key}": {short(value)})'
    if isinstance(lowered.get("detail"), list) and len(lowered) == 1:  # validation errors
        return f"error detail ({short(data['detail'] if 'detail' in data else data)})"
    return None


def _message_error(text: str) -> bool:
    return _REASON_ONLY.match(text) is not None or _text_error(text) is not None


def _text_error(text: str) -> str | None:
    if _TRACEBACK.search(text):
        return "a Python traceback"
    match = _LEADING_ERROR.match(text)
    if match:
        first_line = text.strip().splitlines()[0] if text.strip() else text
        return f"error text ({short(first_line)})"
    if _REASON_ONLY.match(text):
        return f"HTTP error text ({short(text)})"
    if len(text) <= 80 and _SHORT_FAILURE.match(text):
        return f"failure message ({short(text)})"
    match = _HTTP_STATUS.search(text[:_HTTP_WINDOW])
    if match:
        status = match.group("a") or match.group("b") or match.group("c")
        return f"HTTP error status {status} ({short(match.group(0), 40)})"
    return None


def tool_error(response: str) -> str | None:
    """Why a tool result looks like an error, or None when it looks like a result."""
    stripped = response.strip()
    if not stripped:
        return None  # empty is not an error; an empty result is often legitimate (no rows)
    if stripped[0] in '{["':
        try:
            data = json.loads(stripped)
        except ValueError:
            pass
        else:
            # A JSON body is judged by its structure only: its text fields are content.
            return _json_error(data)
    return _text_error(stripped)


_REFUSAL = re.compile(
    r"\A\W*(?:I[’']m\s+(?:so\s+|very\s+|really\s+)?sorry|I\s+am\s+(?:so\s+|very\s+)?sorry"
    r"|sorry\b|(?:my\s+)?apologies|I\s+apologi[sz]e|unfortunately,?\s+I\b)"
    r"|\bI\s+(?:cannot|can\s*not|can[’']t|could\s+not|couldn[’']t|am\s+unable\s+to"
    r"|[’']m\s+unable\s+to|was\s+unable\s+to|am\s+not\s+able\s+to|[’']m\s+not\s+able\s+to"
    r"|was\s+not\s+able\s+to|wasn[’']t\s+able\s+to|do\s+not\s+have\s+access"
    r"|don[’']t\s+have\s+access)\b"
    r"|\b(?:unable|not\s+able)\s+to\s+(?:help|assist|complete|answer|provide|retrieve|find"
    r"|access|fulfil+|comply|process|determine|get)\b"
    r"|\bas\s+an\s+AI\b",
    re.IGNORECASE,
)
#: The opening of an answer: its first sentence, at most this many characters.
_OPENING = 200
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n")


def refusal(answer: str, *, anywhere: bool = False) -> str | None:
    """The refusal or apology phrase the answer opens with (in its first sentence), or
    anywhere in it with `anywhere=True`; None when there is none.

    A caveat after a real answer ("It is 18 °C. I could not check tomorrow.") is not one.
    """
    text = answer.strip()
    if not anywhere:
        end = _SENTENCE_END.search(text, 0, _OPENING)
        text = text[: end.end() if end else _OPENING]
    match = _REFUSAL.search(text)
    return " ".join(match.group(0).split()) if match else None


_EMPTY_TEXT = re.compile(
    r"\A\W*(?:no\s+(?:results?|matches|matching\s+\w+|data|records?|items?|hits|entries)"
    r"(?:\s+(?:were\s+)?found)?|nothing\s+(?:was\s+)?found|not\s+found|0\s+results?"
    r"|none|null|n/?a)\W*\Z",
    re.IGNORECASE,
)
#: Keys under which a JSON result carries its items ({"results": []} is an empty result).
_ITEM_KEYS = (
    "results",
    "items",
    "data",
    "hits",
    "documents",
    "docs",
    "rows",
    "records",
    "matches",
    "entries",
    "values",
    "list",
    "objects",
)
_COUNT_KEYS = ("count", "total", "total_count", "totalcount", "num_results", "hits")


def _empty_json(data: Any) -> bool:
    if data in (None, "", [], {}):
        return True
    if isinstance(data, str):
        return _EMPTY_TEXT.match(data) is not None
    if not isinstance(data, dict):
        return False
    lowered = {k.lower(): v for k, v in data.items() if isinstance(k, str)}
    for key in _ITEM_KEYS:
        if key in lowered:
            items = lowered[key]
            if isinstance(items, int) and not isinstance(items, bool):
                return items == 0  # {"hits": 0}
            return _empty_json(items)  # {"hits": {"total": 0, "hits": []}} too
    return any(
        lowered.get(key) == 0 and not isinstance(lowered.get(key), bool) for key in _COUNT_KEYS
    )


def empty_result(response: str) -> bool:
    """Whether a tool result found nothing (an empty list, `{"results": []}`, "No results
    found"): a fair reason for the agent to say it could not find something."""
    stripped = response.strip()
    if not stripped:
        return True
    if stripped[0] in '{["' or stripped in ("null", "0"):
        try:
            return _empty_json(json.loads(stripped))
        except ValueError:
            pass
    return _EMPTY_TEXT.match(stripped) is not None
