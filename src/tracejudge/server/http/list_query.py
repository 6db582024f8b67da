"""The query parameters of a trace list, read the same way by the API and the page.

`GET /api/v1/traces`, `GET /api/v1/overview` and `GET /ui` take the parameters of
`PARAMETERS` (the OpenAPI document and docs/guides/server.md describe these same ones).
A bad value,
an unknown name or a name given twice is a 422 that names the parameter and says what to
give instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from starlette.datastructures import QueryParams

from tracejudge.server.http.errors import ApiError
from tracejudge.server.store import (
    SORT_KEYS,
    TRACE_STATUSES,
    VERDICTS,
    SearchQuery,
    SearchQueryError,
    TraceFilter,
    TraceOrder,
)

__all__ = [
    "PARAMETERS",
    "FILTERS",
    "ListQuery",
    "list_query",
    "page_limit",
    "query_error",
    "parse_tag",
    "parse_moment",
    "format_tag",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
_NUMBER = {"type": "number", "minimum": 0, "maximum": 1}
_TIME = {"type": "string", "examples": ["2026-12-01T09:30:00Z", "1764581400"]}

#: Every parameter: (name, JSON schema, what it does). The filters come first.
PARAMETERS: tuple[tuple[str, dict[str, Any], str], ...] = (
    (
        "q",
        {"type": "string"},
        "full-text search over messages, tool arguments and results, and explanations: every "
        'word must occur (any case); "a quoted phrase" as written; a trailing * for a prefix',
    ),
    ("agent", {"type": "string"}, "an agent name or its start, any case (writer, Wri)"),
    ("criterion", {"type": "string"}, "a criterion or check, exactly as scored (final_answer)"),
    (
        "score_below",
        _NUMBER,
        "the worst score is below this: the trace's worst agent score; with agent=, that "
        "agent's; with criterion=, that criterion's",
    ),
    (
        "score_above",
        _NUMBER,
        "the worst score (as for score_below) is at or above this",
    ),
    (
        "verdict",
        {"type": "string", "enum": list(VERDICTS)},
        "failed (an agent scored below a criterion's bar), passed, unscored (nothing got a "
        "score), pending (not scored yet)",
    ),
    (
        "status",
        {"type": "string", "enum": list(TRACE_STATUSES)},
        "where the trace is in the pipeline: open (spans arriving), queued, scored, "
        "unscorable (no model call), too_large (over --max-trace-spans), failed (scoring "
        "failed)",
    ),
    ("since", _TIME, "started at or after (ISO 8601, UTC unless it says; or Unix seconds)"),
    ("until", _TIME, "started before (ISO 8601 or Unix seconds)"),
    (
        "tag",
        {"type": "string", "examples": ["team:search"]},
        "key:value (key=value works too), as the list shows it; repeat it for several",
    ),
    ("service", {"type": "string"}, "the service name (the service.name resource attribute)"),
    (
        "session",
        {"type": "string"},
        "the session id (the session.id or gen_ai.conversation.id attribute)",
    ),
    ("user", {"type": "string"}, "the user id (the user.id or enduser.id attribute)"),
    (
        "sort",
        {"type": "string", "enum": list(SORT_KEYS), "default": "start_time"},
        "the column to sort by (empty values last); ties by trace id",
    ),
    ("order", {"type": "string", "enum": ["asc", "desc"], "default": "desc"}, "sort direction"),
    (
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        "traces per page",
    ),
    (
        "cursor",
        {"type": "string"},
        "a page's next_cursor or previous_cursor (with the same filters and order)",
    ),
)
_NAMES = tuple(name for name, _, _ in PARAMETERS)
#: The parameters that choose which traces (not their order or page).
FILTERS = _NAMES[: _NAMES.index("sort")]
_REPEATABLE = frozenset({"tag"})
#: No parameter is longer (a criterion is at most 4096 characters; cursors are short).
_MAX_VALUE = 8192


def query_error(name: str, message: str) -> ApiError:
    """A 422 naming the query parameter."""
    return ApiError(
        422,
        f"query parameter {name}: {message}",
        errors=[{"loc": ["query", name], "msg": message, "type": "value_error"}],
    )


def parse_tag(text: str) -> tuple[str, str]:
    """`key:value` or `key=value` (the first `:` or `=` ends the key)."""
    cut = min((i for i in (text.find(":"), text.find("=")) if i >= 0), default=-1)
    if cut <= 0:
        raise query_error(
            "tag", f"{text!r} is not key:value; write it as the list shows it, e.g. team:search"
        )
    return text[:cut], text[cut + 1 :]


def format_tag(key: str, value: str) -> str:
    """A tag as the list shows it (and `tag=` takes it back)."""
    return f"{key}:{value}"


def _score(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise query_error(name, f"{text!r} is not a number; give a score from 0 to 1") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise query_error(name, f"{text!r} is not a score from 0 to 1 (e.g. 0.5)")
    return value


def _moment(name: str, text: str) -> float:
    """ISO 8601 (a date, or a date and time; UTC when no offset is given) or Unix seconds."""
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(value):
            return value
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise query_error(
            name, f"{text!r} is not a time: give ISO 8601 (2026-12-01T09:30:00Z) or Unix seconds"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


#: A time given as a query parameter (the trends and the export read them as the list does).
parse_moment = _moment


def _choice(name: str, text: str, allowed: tuple[str, ...]) -> str:
    if text not in allowed:
        raise query_error(name, f"{text!r} is not one of {', '.join(allowed)}")
    return text


@dataclass(frozen=True)
class ListQuery:
    """A list request: which traces, in which order, which page."""

    where: TraceFilter
    order: TraceOrder
    limit: int
    cursor: str | None
    #: The parameters as given (non-empty ones), for links that keep them.
    given: tuple[tuple[str, str], ...]

    def link_params(self, **changes: str | None) -> list[tuple[str, str]]:
        """The given parameters with `changes` (None: left out), cursor left out unless
        changed; for the page's links."""
        kept = [(k, v) for k, v in self.given if k not in changes and k != "cursor"]
        kept += [(k, v) for k, v in changes.items() if v is not None]
        return kept


def _values(query: QueryParams) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for name, value in query.multi_items():
        if name not in _NAMES:
            raise query_error(
                name, f"{name!r} is not a parameter of the list; it takes {', '.join(_NAMES)}"
            )
        if value.strip() == "":
            continue  # an empty form field means "any"
        if "\x00" in value:
            raise query_error(name, "holds a NUL character; leave it out")
        if len(value) > _MAX_VALUE:
            raise query_error(name, f"is longer than {_MAX_VALUE} characters; give less")
        values.setdefault(name, []).append(value.strip() if name != "q" else value)
    for name, given in values.items():
        if len(given) > 1 and name not in _REPEATABLE:
            raise query_error(name, "give it once")
    return values


def _filter(values: Mapping[str, list[str]]) -> TraceFilter:
    one = {name: given[0] for name, given in values.items()}
    where = TraceFilter(
        tags=tuple(parse_tag(t) for t in values.get("tag", [])),
        agent=one.get("agent"),
        criterion=one.get("criterion"),
        score_below=_score("score_below", one["score_below"]) if "score_below" in one else None,
        score_above=_score("score_above", one["score_above"]) if "score_above" in one else None,
        status=_choice("status", one["status"], TRACE_STATUSES) if "status" in one else None,
        verdict=_choice("verdict", one["verdict"], VERDICTS) if "verdict" in one else None,
        service=one.get("service"),
        since=_moment("since", one["since"]) if "since" in one else None,
        until=_moment("until", one["until"]) if "until" in one else None,
        q=one.get("q"),
        session=one.get("session"),
        user=one.get("user"),
    )
    if where.q is not None:
        try:
            SearchQuery.parse(where.q)
        except SearchQueryError as exc:
            raise query_error("q", str(exc)) from None
    return where


def page_limit(text: str | None) -> int:
    """A page's `limit` parameter (DEFAULT_LIMIT when not given), validated (ApiError 422)."""
    text = text or str(DEFAULT_LIMIT)
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise query_error("limit", f"{text!r} is not a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def list_query(query: QueryParams) -> ListQuery:
    """The request's list parameters, validated (ApiError 422 naming the parameter)."""
    values = _values(query)
    one = {name: given[0] for name, given in values.items()}
    sort = _choice("sort", one.get("sort", "start_time"), SORT_KEYS)
    order = _choice("order", one.get("order", "desc"), ("asc", "desc"))
    limit = page_limit(one.get("limit"))
    given = tuple((name, value) for name, vs in values.items() for value in vs)
    return ListQuery(
        where=_filter(values),
        order=TraceOrder(sort, order == "desc"),
        limit=limit,
        cursor=one.get("cursor"),
        given=given,
    )
