"""The SQL of a trace list: a filter as conditions, an order, and keyset cursors.

Every condition reads a column of `traces` or an indexed side table (`trace_tags`,
`trace_agent_keys` and `trace_criteria`, one row per trace holding a worst score;
`agent_scores`; the full-text index), so no condition parses JSON or scans a trace. On
SQLite a side table is read as a set (`trace_id IN (...)`) when few traces match, or
probed per trace (`EXISTS`) while walking an index in the list's order when many do, the
store choosing by the count it makes anyway (`probes_pay`); PostgreSQL's planner makes
that choice itself from its statistics, given `EXISTS` (see `SQLCore.picks_joins`). A
lone side condition is counted in its table.

A page is read from a cursor that holds the sort value and trace id of the row it
continues from (keyset paging: a page deep in the list costs what the first one costs,
and rows added meanwhile shift nothing); the order puts empty values (no cost, not
scored) last in either direction and breaks ties by trace id, so it is total and stable.
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
    "Conditions",
    "Cursor",
    "Side",
    "probes_pay",
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
#: Sort keys whose column always has a value (start_time: received time until spans
#: or calls say).
NEVER_EMPTY = frozenset({"start_time", "agents", "model_calls", "tokens", "failing", "status"})
#: (sort key, descending) orders an index of `traces` gives as they are asked for: a column
#: that is never empty, either way; one that may be, descending (empty values last, where
#: SQLite's index puts them). The status is an expression: no index.
INDEXED_ORDERS = frozenset(
    {(key, way) for key in NEVER_EMPTY - {"status"} for way in (True, False)}
    | {(key, True) for key in ("duration", "root_agent", "cost", "worst_score")}
)


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


@dataclass(frozen=True)
class Side:
    """A condition on a side table: the traces with a row of `table` (its trace id in
    `key`) where `where` holds. Read as a set (`trace_id IN (SELECT ...)`: best when few
    traces match) or as a probe per trace (`EXISTS (...)`: best when many do and the
    list walks an index in its order, stopping at a page). `unique`: at most one such row
    per trace, so that its rows count the traces (from `count_table` when given: a
    narrower table with the same rows); else its distinct trace ids do. Every row of a
    side table belongs to a stored trace (traces are never deleted without theirs)."""

    table: str
    where: str
    params: tuple[Any, ...]
    key: str = "trace_id"
    unique: bool = False
    count_table: str | None = None
    #: (table, where) as a statement probing many traces reads it, when that differs (the
    #: same parameters): say, finding the matching rows once, then testing each trace.
    probed_many: tuple[str, str] | None = None
    #: What probing it for one trace costs, against a b-tree lookup.
    probe_cost: float = 1.0

    def condition(self, probe: bool, *, negate: bool = False, few: bool = False) -> str:
        """The condition (`negate`: the traces without such a row; `few`: a probe of few
        traces, such as a page's walk)."""
        no = "NOT " if negate else ""
        if probe:
            many = None if few else self.probed_many
            table, where = many or (self.table, self.where)
            return (
                f"{no}EXISTS (SELECT 1 FROM {table} WHERE {self.key} = traces.trace_id AND {where})"
            )
        return f"traces.trace_id {no}IN (SELECT {self.key} FROM {self.table} WHERE {self.where})"

    def count(self) -> str:
        """How many traces have such a row."""
        if self.unique:
            return f"SELECT COUNT(*) FROM {self.count_table or self.table} WHERE {self.where}"
        return f"SELECT COUNT(DISTINCT {self.key}) FROM {self.table} WHERE {self.where}"


@dataclass
class Conditions:
    """A filter as conditions over `traces`: plain ones and side-table ones."""

    parts: list[tuple[str | Side, tuple[Any, ...], bool]]
    #: The side condition read as a set while the others are probed (see `drive`).
    driver: int | None = None

    def sql(self, *, probe: bool = False, few: bool = False) -> tuple[list[str], list[Any]]:
        """The conditions and their parameters; side tables read as sets, or as probes
        per trace (`probe`: all of them; else all but the driver, when one was chosen;
        `few`: the statement probes few traces)."""
        found: list[str] = []
        params: list[Any] = []
        for n, (part, values, negate) in enumerate(self.parts):
            if isinstance(part, Side):
                probed = probe or (self.driver is not None and n != self.driver)
                found.append(part.condition(probed, negate=negate, few=few))
                params.extend(part.params)
            else:
                found.append(part)
                params.extend(values)
        return found, params

    def sides(self) -> list[tuple[int, Side]]:
        """The side conditions that could drive a query (not negated), by position."""
        return [
            (n, part)
            for n, (part, _, negate) in enumerate(self.parts)
            if isinstance(part, Side) and not negate
        ]

    def drive(self, sizes: dict[int, int]) -> None:
        """Choose how to join the side conditions, from their rows (`sizes`, by position):
        every one read as a set (costs their rows), or one read as the set the query starts
        from and the others probed for each of its traces (its rows, and for each a probe
        of every other side, at that side's `probe_cost`)."""
        costs: dict[int | None, float] = {None: float(sum(sizes.values()))}
        for n, size in sizes.items():
            others = sum(part.probe_cost for m, part in self.sides() if m != n)
            others += sum(1 for part, _, negate in self.parts if negate)
            costs[n] = size * (1 + others)
        self.driver = min(costs, key=lambda n: costs[n])

    def only_side(self) -> Side | None:
        """The one condition when it is a side table's (counted in that table)."""
        if len(self.parts) == 1:
            part, _, negate = self.parts[0]
            if isinstance(part, Side) and not negate:
                return part
        return None


#: A prefix matching more names than this reads them from the names table in the query.
_MANY_NAMES = 200


def conditions(
    where: TraceFilter,
    search: Callable[[SearchQuery], Side],
    names: Callable[[str, str | None], list[str]],
) -> Conditions:
    """The filter as conditions over `traces`. `names(low, high)` gives the case-folded
    agent names from `low` up to `high` (None: no end)."""
    parts: list[tuple[str | Side, tuple[Any, ...], bool]] = []

    def add(condition: str, *values: Any) -> None:
        parts.append((condition, values, False))

    def side(found: Side, negate: bool = False) -> None:
        parts.append((found, (), negate))

    for key, value in where.tags:
        side(Side("trace_tags", "key = ? AND value = ?", (key, value), unique=True))
    below, above = where.score_below, where.score_above
    picks: list[str] = []
    values: list[Any] = []
    one_name = True
    if where.agent is not None:
        low = agent_key(where.agent)
        keys = names(low, _after(low))
        if not keys:
            add("1 = 0")  # no agent of that name anywhere
            return Conditions(parts)
        if len(keys) > _MANY_NAMES:
            condition, bounds = _prefix("agent_key", where.agent)
            picks.append(f"agent_key IN (SELECT agent_key FROM agent_names WHERE {condition})")
            values.extend(bounds)
        else:
            picks.append(f"agent_key IN ({', '.join('?' for _ in keys)})")
            values.extend(keys)
        one_name = len(keys) == 1
    if where.criterion is None and where.agent is not None:
        # an agent name's worst score over its instances and criteria: a row per trace and
        # name (a prefix may match several names: the least of their scores counts)
        names_only = (" AND ".join(picks), tuple(values))
        if below is not None:
            picks.append("worst_score < ?")
            values.append(below)
        if above is not None:
            picks.append("worst_score >= ?")
            values.append(above)
        side(Side("trace_agent_keys", " AND ".join(picks), tuple(values), unique=one_name))
        if above is not None and not one_name:  # and no name of them is below
            condition, known = names_only
            lower = Side("trace_agent_keys", f"{condition} AND worst_score < ?", (*known, above))
            side(lower, negate=True)
    elif where.criterion is not None and where.agent is None:
        # the criterion's worst score over the agent instances: a row per trace
        picks = ["criterion = ?"]
        values = [where.criterion]
        if below is not None:
            picks.append("worst_score < ?")
            values.append(below)
        if above is not None:
            picks.append("worst_score >= ?")
            values.append(above)
        side(Side("trace_criteria", " AND ".join(picks), tuple(values), unique=True))
    elif where.criterion is not None:
        # that criterion's rows of that agent: one per agent instance (a probe seeks a
        # trace's rows in agent_scores_by_criterion)
        def scores(*extra: str, more: tuple[Any, ...] = (), negate: bool = False) -> None:
            side(
                Side(
                    "agent_scores",
                    " AND ".join(["criterion = ?", *picks, *extra]),
                    (where.criterion, *values, *more),
                ),
                negate,
            )

        if below is not None:
            scores("score < ?", more=(below,))
        if above is not None:
            # the least score is at or above: one is, and none is below
            scores("score >= ?", more=(above,))
            scores("score < ?", more=(above,), negate=True)
        if below is None and above is None:
            scores()
    else:
        if below is not None:
            add("traces.worst_score < ?", below)
        if above is not None:
            add("traces.worst_score >= ?", above)
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
        side(search(SearchQuery.parse(where.q)))
    if where.session is not None:
        side(Side("trace_sessions", "session_id = ?", (where.session,), unique=True))
    if where.user is not None:
        side(Side("trace_sessions", "user_id = ?", (where.user,), unique=True))
    return Conditions(parts)


def probes_pay(order: TraceOrder, total: int, everything: int, wanted: int) -> bool:
    """Whether probing each trace in the list's order beats reading the matching set, to
    find `wanted` of the `total` matching traces among `everything`: the walk reads about
    wanted * everything / total traces, the set all `total` of them (and sorts them); a walk
    needs an order an index gives (see `INDEXED_ORDERS`)."""
    if (order.sort, order.descending) not in INDEXED_ORDERS or total == 0:
        return False
    return total * total > wanted * everything


def order_by(order: TraceOrder, *, backwards: bool = False) -> str:
    """ORDER BY for `order` (reversed, empty values first, to read a page backwards)."""
    column = SORT_COLUMNS[order.sort]
    descending = order.descending != backwards
    way = "DESC" if descending else "ASC"
    if order.sort in NEVER_EMPTY:  # no NULLS clause: an index can give the order
        return f"{column} {way}, traces.trace_id {way}"
    nulls = "NULLS FIRST" if backwards else "NULLS LAST"
    return f"{column} {way} {nulls}, traces.trace_id {way}"


def keyset(cursor: Cursor) -> tuple[str, list[Any]]:
    """The condition for the rows after the cursor (before it, when it goes back)."""
    column = SORT_COLUMNS[cursor.order.sort]
    descending = cursor.order.descending != cursor.backwards
    op = "<" if descending else ">"
    value, trace_id = cursor.value, cursor.trace_id
    if cursor.order.sort in NEVER_EMPTY and value is not None:
        # a row value: an index seeks to it
        return f"(({column}, traces.trace_id) {op} (?, ?))", [value, trace_id]
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
