"""The SQL of a trace list: a filter as conditions, an order, and keyset cursors.

Every condition reads a column of `traces` or an indexed side table (`trace_tags`,
`trace_agents`, `agent_scores`, the full-text index) through `trace_id IN (...)`, so no
condition parses JSON or scans a trace. A page is read from a cursor that holds the
sort value and trace id of the row it continues from (keyset paging: a page deep in the
list costs what the first one costs, and rows added meanwhile shift nothing); the order
puts empty values (no cost, not scored) last in either direction and breaks ties by
trace id, so it is total and stable.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracejudge.server.store._search import SearchQuery
from tracejudge.server.store.base import SORT_KEYS, TraceFilter, TraceOrder

__all__ = [
    "Cursor",
    "InvalidCursorError",
    "SORT_COLUMNS",
    "agent_key",
    "conditions",
    "keyset",
    "order_by",
]

#: Each sort key's SQL expression over `traces`.
SORT_COLUMNS: dict[str, str] = {
    "start_time": "traces.start_time",
    "duration": "traces.duration",
    "root_agent": "traces.root_agent",
    "agents": "traces.agent_count",
    "model_calls": "traces.model_calls",
    "tokens": "traces.tokens",
    "cost": "traces.cost",
    "worst_score": "traces.worst_score",
    "failing": "traces.failing_agents",
    # worst first: failed, scoring failed, unscored, not scored yet, nothing to score, passed
    "status": (
        "(CASE WHEN traces.verdict = 'failed' THEN 0 WHEN traces.status = 'failed' THEN 1 "
        "WHEN traces.verdict = 'unscored' THEN 2 WHEN traces.status IN ('open', 'queued') "
        "THEN 3 WHEN traces.status = 'unscorable' THEN 4 WHEN traces.verdict = 'passed' "
        "THEN 5 ELSE 6 END)"
    ),
}
assert set(SORT_COLUMNS) == set(SORT_KEYS)


class InvalidCursorError(ValueError):
    """A pagination cursor this server did not hand out, or one of another order."""


def agent_key(name: str) -> str:
    """An agent name as the case-blind filter compares it."""
    return name.casefold()


def _after(prefix: str) -> str | None:
    """The smallest text greater than every text that starts with `prefix` (code point
    order), or None when there is none."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop()) + 1
        if 0xD800 <= last <= 0xDFFF:  # surrogates are not text
            last = 0xE000
        if last <= 0x10FFFF:
            return "".join(chars) + chr(last)
    return None


def _prefix(column: str, prefix: str) -> tuple[str, list[Any]]:
    key = agent_key(prefix)
    upper = _after(key)
    if upper is None:
        return f"{column} >= ?", [key]
    return f"{column} >= ? AND {column} < ?", [key, upper]


@dataclass(frozen=True)
class Cursor:
    """Where a page starts: after (or, going back, before) the row with `value` and
    `trace_id` in `order`; `offset` counts the rows before the page."""

    order: TraceOrder
    value: Any
    trace_id: str
    backwards: bool
    offset: int

    def encode(self) -> str:
        body = [
            self.order.sort,
            self.order.descending,
            self.value,
            self.trace_id,
            self.backwards,
            self.offset,
        ]
        return base64.urlsafe_b64encode(json.dumps(body).encode()).decode()

    @classmethod
    def decode(cls, text: str, order: TraceOrder) -> Cursor:
        try:
            sort, descending, value, trace_id, backwards, offset = json.loads(
                base64.urlsafe_b64decode(text.encode())
            )
            if sort not in SORT_COLUMNS or not isinstance(trace_id, str):
                raise ValueError(sort)
            if value is not None and not isinstance(value, (int, float, str)):
                raise ValueError(value)
            cursor = cls(
                TraceOrder(sort, bool(descending)), value, trace_id, bool(backwards), int(offset)
            )
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
            raise InvalidCursorError(
                "cursor is not one this server handed out: pass the `next_cursor` or "
                "`previous_cursor` of a page"
            ) from exc
        if cursor.order != order:
            raise InvalidCursorError(
                f"cursor belongs to the order sort={cursor.order.sort}, order="
                f"{'desc' if cursor.order.descending else 'asc'}: keep that order, or leave "
                "the cursor out to start from the first page"
            )
        return cursor


def conditions(
    where: TraceFilter, search: Callable[[SearchQuery], tuple[str, list[Any]]]
) -> tuple[list[str], list[Any]]:
    """The filter as SQL conditions over `traces`, with their parameters."""
    sql: list[str] = []
    params: list[Any] = []

    def add(condition: str, *values: Any) -> None:
        sql.append(condition)
        params.extend(values)

    for key, value in where.tags:
        add(
            "traces.trace_id IN (SELECT trace_id FROM trace_tags WHERE key = ? AND value = ?)",
            key,
            value,
        )
    scored = where.score_below is not None or where.score_above is not None
    if where.agent is not None or where.criterion is not None:
        picks: list[str] = []
        values: list[Any] = []
        if where.agent is not None:
            condition, bounds = _prefix("agent_key", where.agent)
            picks.append(condition)
            values.extend(bounds)
        if where.criterion is not None:
            picks.append("criterion = ?")
            values.append(where.criterion)
        if not scored and where.criterion is None:
            add(f"traces.trace_id IN (SELECT trace_id FROM trace_agents WHERE {picks[0]})", *values)
        elif not scored:
            add(
                f"traces.trace_id IN (SELECT trace_id FROM agent_scores WHERE "
                f"{' AND '.join(picks)})",
                *values,
            )
        elif where.score_above is None:
            add(
                f"traces.trace_id IN (SELECT trace_id FROM agent_scores WHERE "
                f"{' AND '.join(picks)} AND score < ?)",
                *values,
                where.score_below,
            )
        else:
            having = ["MIN(score) >= ?"]
            bounds = [where.score_above]
            if where.score_below is not None:
                having.append("MIN(score) < ?")
                bounds.append(where.score_below)
            add(
                f"traces.trace_id IN (SELECT trace_id FROM agent_scores WHERE "
                f"{' AND '.join(picks)} AND score IS NOT NULL GROUP BY trace_id HAVING "
                f"{' AND '.join(having)})",
                *values,
                *bounds,
            )
    else:
        if where.score_below is not None:
            add("traces.worst_score < ?", where.score_below)
        if where.score_above is not None:
            add("traces.worst_score >= ?", where.score_above)
    if where.status is not None:
        add("traces.status = ?", where.status)
    if where.verdict is not None:
        add("traces.verdict = ?", where.verdict)
    if where.service is not None:
        add("traces.service = ?", where.service)
    if where.since is not None:
        add("traces.start_time >= ?", where.since)
    if where.until is not None:
        add("traces.start_time < ?", where.until)
    if where.q is not None:
        condition, values = search(SearchQuery.parse(where.q))
        add(f"traces.trace_id IN ({condition})", *values)
    return sql, params


def order_by(order: TraceOrder, *, backwards: bool = False) -> str:
    """ORDER BY for `order` (reversed, empty values first, to read a page backwards)."""
    column = SORT_COLUMNS[order.sort]
    descending = order.descending != backwards
    way = "DESC" if descending else "ASC"
    nulls = "NULLS FIRST" if backwards else "NULLS LAST"
    return f"{column} {way} {nulls}, traces.trace_id {way}"


def keyset(cursor: Cursor) -> tuple[str, list[Any]]:
    """The condition for the rows after the cursor (before it, when it goes back)."""
    column = SORT_COLUMNS[cursor.order.sort]
    descending = cursor.order.descending != cursor.backwards
    op = "<" if descending else ">"
    value, trace_id = cursor.value, cursor.trace_id
    if not cursor.backwards:
        # forwards: empty values come after every value
        if value is None:
            return f"({column} IS NULL AND traces.trace_id {op} ?)", [trace_id]
        return (
            f"({column} {op} ? OR ({column} = ? AND traces.trace_id {op} ?) OR {column} IS NULL)",
            [value, value, trace_id],
        )
    # backwards: empty values are the ones the cursor's row came after
    if value is None:
        return f"({column} IS NOT NULL OR traces.trace_id {op} ?)", [trace_id]
    return (
        f"({column} {op} ? OR ({column} = ? AND traces.trace_id {op} ?))",
        [value, value, trace_id],
    )
