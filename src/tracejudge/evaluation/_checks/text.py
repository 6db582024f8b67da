"""Recognising tool errors, empty tool results and refusals in text, for the checks.

All are heuristics tuned for precision: a tool result counts as an error only
when it looks like one as a whole (a JSON error object, a traceback, an error
line at its start, an HTTP error status), not when it merely mentions an error
somewhere in otherwise useful content; an answer counts as a refusal only when
it opens with one, not when a caveat follows a real answer; an answer declines the
request (`declines`) only when it says nothing else.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["HTTP_REASONS", "tool_error", "empty_result", "refusal", "declines", "short"]

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


# --------------------------------------------------------------------------- declining
#
# `declines` finds answers that ARE refusals written as text ("I'm sorry, but I can't help
# with that."). It is conservative: every sentence of the answer must be a refusal, an
# apology or a courtesy ("If you have other questions, let me know."), and a refusal
# sentence must decline (help, assist, provide, share, comply, ...), not report that
# something could not be found or reached ("I couldn't find any results" is an answer).
# One sentence of anything else - the facts after "I can't give advice, but generally
# ..." - and the answer is not a refusal.

#: What may stand before the refusal in its sentence: an apology or acknowledgement.
_LEAD = (
    r"(?:(?:(?:I[’']m|I\s+am)\s+(?:so\s+|very\s+|really\s+|truly\s+)?(?:sorry|afraid)"
    r"|sorry|(?:my\s+)?apologies|I\s+apologi[sz]e|unfortunately|regrettably|hmm+|oh|no"
    r"|thanks?(?:\s+you)?(?:\s+for\s+[^,.;!?]{1,60})?"
    r"|(?:while\s+)?I\s+(?:understand|appreciate|see)\b[^,.;!?]{0,100}"
    r"|(?:unfortunately|sadly),?\s+(?:though|however)"
    r")\s*[,;:!.\-–—]*\s*(?:but\s+|however,?\s+|unfortunately,?\s+)?)*"
)
#: "I can't", "I'm unable to", "I won't be able to", "I must decline to", ...
_MODAL = (
    r"I\s+(?:(?:really\s+|simply\s+|just\s+|currently\s+|unfortunately\s+)?"
    r"(?:can[’']?t|cannot|can\s+not|won[’']t|will\s+not|must\s+not|shouldn[’']t|should\s+not))"
    r"(?:\s+(?:be\s+able\s+to|really|currently))?"
    r"|I(?:[’']m|\s+am)\s+(?:(?:really|simply|just|currently|afraid\s+I[’']m)\s+)?"
    r"(?:unable|not\s+able|not\s+allowed|not\s+permitted|not\s+going|not\s+in\s+a\s+position)\s+to"
)
#: Declining in so many words: "I must decline", "I'm going to have to decline".
_DECLINE_WORDS = (
    r"I\s+(?:must|have\s+to|need\s+to|will\s+have\s+to|[’']ll\s+have\s+to|would\s+have\s+to)"
    r"\s+(?:respectfully\s+|politely\s+)?(?:decline|refuse)\b"
    r"|I(?:[’']m|\s+am)\s+(?:going\s+to|gonna)\s+have\s+to\s+(?:respectfully\s+)?decline\b"
    r"|I\s+(?:respectfully\s+|politely\s+)?(?:decline|refuse)\s+to\b"
    r"|I\s+(?:don[’']t|do\s+not)\s+feel\s+comfortable\b"
    r"|I(?:[’']m|\s+am)\s+not\s+comfortable\s+(?:helping|assisting|providing|sharing|with)\b"
    r"|I(?:[’']d|\s+would)\s+rather\s+not\s+(?:help|assist|provide|share|discuss|engage)\b"
    r"|I\s+can\s+only\s+(?:help|assist|answer|discuss|talk|respond)\b"
    r"|I(?:[’']m|\s+am)\s+only\s+able\s+to\s+(?:help|assist|answer|discuss|talk|respond)\b"
    r"|I\s+can[’']?t\s+and\s+won[’']t\b"
)
#: The verbs of declining a request (not of failing to find something).
_DECLINING_VERBS = (
    r"help|assist|provide|share|give|offer|supply|support|fulfil+|comply|complete\s+(?:this|that|"
    r"your)|do\s+(?:that|this|so|it)|answer\s+(?:that|this|your)|respond\s+to\s+(?:that|this)"
    r"|discuss|engage|generate|create|write(?!\s+to\b)|produce|draft|disclose|reveal|divulge"
    r"|participate|continue|proceed|process\s+(?:this|that|your)|accommodate|facilitate"
    r"|act\s+on|carry\s+out|perform|go\s+(?:along|ahead)|talk\s+about|advise|recommend\s+(?:any|a|"
    r"specific|particular)|endorse|encourage|condone|be\s+of\s+(?:help|assistance)"
)
_DECLINE = re.compile(
    r"\A\W*" + _LEAD + r"(?P<phrase>(?:" + _MODAL + r")\s+(?:(?:" + _DECLINING_VERBS + r")\b"
    r"|(?:that|this)\s*[.!]|with\s+(?:that|this)\b)|" + _DECLINE_WORDS + ")"
    r"|\A\W*" + _LEAD + r"(?P<ai>as\s+an?\s+(?:AI|artificial\s+intelligence|language\s+model"
    r"|large\s+language\s+model|LLM|AI\s+(?:language\s+)?(?:model|assistant|chatbot)|assistant)"
    r"(?:\s+(?:language\s+)?(?:model|assistant|chatbot|developed\s+by\s+\w+))?,?\s+I"
    r"(?:\s+(?:can[’']?t|cannot|can\s+not|don[’']t|do\s+not|won[’']t|will\s+not|have\s+no|lack)"
    r"|[’']m\s+(?:not|unable)|\s+am\s+(?:not|unable)))"
    r"|\A\W*" + _LEAD + r"(?P<nothing>(?:that|this|it)(?:[’']s|\s+is)\s+not\s+something\s+I"
    r"(?:[’']m|\s+am)?\s+(?:can|able\s+to|allowed\s+to|permitted\s+to|willing\s+to)\s+"
    r"(?:help|assist|do|provide|discuss|share)\b)",
    re.IGNORECASE,
)
#: Words that turn a refusal sentence toward something else: what follows must be an
#: offer or a courtesy, not content.
_PIVOT = re.compile(
    r"\s*(?:[,;:]|\s[-–—]\s)?\s*\b(?:but|however|though|although|that\s+said|instead|except"
    r"|nevertheless|nonetheless|yet)\b\s*,?\s*|\s*[;:]\s*|\s+[-–—]\s+",
    re.IGNORECASE,
)
#: An offer or courtesy (a whole sentence, or what follows a pivot): no content.
_COURTESY = re.compile(
    r"\A\W*(?:"
    r"if\s+you\b|is\s+there\s+(?:anything|something)\b|(?:please\s+)?let\s+me\s+know\b"
    r"|(?:please\s+)?feel\s+free\b|(?:please\s+)?don[’']t\s+hesitate\b"
    r"|please\s+(?:consult|contact|reach|seek|ask|refer|check|speak|talk|see|visit|try"
    r"|understand|note|call|rephrase)\b"
    r"|(?:I[’']d|I\s+would)\s+(?:be\s+(?:happy|glad|more\s+than\s+happy)|love|like)\s+to\s+help"
    r"|(?:I[’']d|I\s+would)\s+be\s+(?:happy|glad|more\s+than\s+happy)\b"
    r"|(?:I[’']m|I\s+am)\s+(?:happy|glad|here)\s+to\s+help\b"
    r"|I\s+(?:can|could)\s+(?:help|assist|try\s+to\s+help|offer\s+(?:to|some|general))\b"
    r"|(?:I\s+)?hope\s+(?:you\s+understand|this\s+helps|that\s+helps)\b"
    r"|(?:can|may|could|shall)\s+I\s+(?:help|assist)\b|how\s+(?:else\s+)?can\s+I\s+help\b"
    r"|(?:thank\s+you|thanks)\b[^.!?]{0,60}\W*\Z"
    r"|(?:I[’']m|I\s+am)\s+(?:so\s+|very\s+|really\s+|truly\s+)?sorry(?:\s+(?:about|for)\b"
    r"[^.!?]{0,60})?\W*\Z"
    r"|(?:sorry|(?:my\s+)?apologies)(?:\s+(?:about|for)\b[^.!?]{0,60})?\W*\Z"
    r"|I\s+apologi[sz]e(?:\s+for\b[^.!?]{0,60})?\W*\Z"
    r"|I\s+(?:understand|appreciate)\s+(?:that\s+|this\s+|your\s+|you[’']re\s+|why\b)[^.!?]{0,100}\W*\Z"
    r"|you\s+(?:can|could|may|might|should|could\s+try\s+to|may\s+want\s+to|might\s+want\s+to)"
    r"\s+(?:try|check|consult|contact|ask"
    r"|visit|look|search|reach|refer|speak|talk|seek|use|find)\b"
    r"|(?:it[’']s|it\s+is)\s+(?:best|important|recommended|advisable|a\s+good\s+idea)\s+to\s+"
    r"(?:consult|contact|seek|speak|talk|ask|check)\b"
    r"|(?:for|with)\s+(?:other|any\s+other)\s+(?:questions|requests|topics)\b"
    r"|(?:have\s+a\s+(?:nice|great|good|lovely))\b"
    r")",
    re.IGNORECASE,
)
#: Longer answers are not refusals (a refusal says little).
_LONGEST_REFUSAL = 600
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def _declining_sentence(sentence: str) -> str | None:
    """The refusal phrase of a sentence that declines (and says nothing else), or None."""
    match = _DECLINE.match(sentence)
    if match is None:
        return None
    phrase = match.group("phrase") or match.group("ai") or match.group("nothing")
    rest = sentence[match.end() :]
    if _CONDITIONAL.search(rest):
        return None  # "I can't proceed without your order number": a question, not a no
    # "I can't give medical advice, but generally ..." turns to content: not a refusal.
    parts = _PIVOT.split(rest)
    for turned in parts[1:]:
        if turned.strip(" .!?") and not (
            _COURTESY.match(turned) or _DECLINE.match(turned) or _AS_OFFER.match(turned)
        ):
            return None
    return " ".join(phrase.split())


#: A refusal for now or on a condition is not one: "without your order number", "until
#: you sign in", "right now", "because the booking service is down".
_CONDITIONAL = re.compile(
    r"\b(?:without|until|unless|before\s+you|right\s+now|at\s+the\s+moment|at\s+this\s+time"
    r"|yet|today|for\s+now|temporarily)\b"
    r"|\b(?:because|since|as)\b.{0,80}\b(?:down|unavailable|offline|outage|error|failed|failing"
    r"|timed\s+out|not\s+(?:responding|working|available|reachable))\b",
    re.IGNORECASE,
)
#: What follows "but" in a refusal and still offers no content ("but I can help you find a
#: professional", "but you could ask your doctor").
_AS_OFFER = re.compile(
    r"\A\W*(?:I\s+(?:can|could|would|[’']d|will|[’']ll|am\s+happy|[’']m\s+happy)\s+(?:be\s+)?"
    r"(?:happy\s+to\s+|glad\s+to\s+)?(?:help|assist|point|suggest|try|offer|recommend\s+"
    r"(?:some|a|that|you)|guide)\b|you\s+(?:can|could|may|might|should)\b|feel\s+free\b"
    r"|if\s+you\b|happy\s+to\s+help\b)",
    re.IGNORECASE,
)


def declines(answer: str) -> str | None:
    """The refusal phrase when `answer` declines the request and says nothing else ("I'm
    sorry, but I can't help with that.", "I'm unable to assist with this request. Is there
    anything else?", "I cannot provide medical advice; please consult a doctor.", "As an
    AI, I can't browse the web."); None otherwise.

    Every sentence must be a refusal (a declining verb: help, assist, provide, share,
    comply, write, ...), an apology or a courtesy (an offer to help otherwise, a pointer
    to someone else), and at least one a refusal. Not refusals: an apology followed by an
    answer ("Sorry for the wait: it is 18 C."), a refusal that turns to content ("I can't
    give financial advice, but index funds are ..."), and reports that something was not
    found or reached ("I couldn't find any results", "I was unable to retrieve it").
    """
    text = " ".join(answer.replace("*", "").split(" ")).strip()
    if not text or len(text) > _LONGEST_REFUSAL:
        return None
    found: str | None = None
    for sentence in (s.strip() for s in _SENTENCES.split(text)):
        if not sentence.strip(" .!?-–—*#>\"'"):
            continue
        phrase = _declining_sentence(sentence)
        if phrase is not None:
            found = found or phrase
        elif not _COURTESY.match(sentence):
            return None
    return found


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
