"""The trace lists repository: a page of the traces a filter keeps, in an order, and the
overview of agents and criteria over them.

Listing reads only what `Digests` wrote beside each trace (see `_query` for how a filter
becomes conditions and how a page is read from a keyset cursor).
"""

from __future__ import annotations

from typing import Any

from tracejudge.server.store._core import SQLCore, where_clause
from tracejudge.server.store._query import (
    SORT_COLUMNS,
    Conditions,
    Cursor,
    conditions,
    keyset,
    order_by,
    probes_pay,
)
from tracejudge.server.store.base import (
    Overview,
    OverviewRow,
    TraceFilter,
    TraceOrder,
    TracePage,
    TraceRow,
)
from tracejudge.server.store.traces import LISTED_COLUMNS, decorate, trace_row

__all__ = ["TraceLists"]


def _overview_row(name: str, criterion: str, values: list[tuple[float, int, int]]) -> OverviewRow:
    """Statistics of one agent name and criterion from (score, instances, failing)."""
    values.sort()
    scored = sum(count for _, count, _ in values)

    def nth(n: int) -> float:  # the n-th smallest score, from 0
        for score, count, _ in values:
            if n < count:
                return score
            n -= count
        raise IndexError(n)

    middle = (nth((scored - 1) // 2) + nth(scored // 2)) / 2
    return OverviewRow(
        agent_name=name,
        criterion=criterion,
        scored=scored,
        failing=sum(failing for _, _, failing in values),
        mean=sum(score * count for score, count, _ in values) / scored,
        median=middle,
        min=values[0][0],
        max=values[-1][0],
    )


def _paged(
    traces: list[TraceRow],
    rows: list[Any],
    more: bool,
    start: Cursor | None,
    order: TraceOrder,
    total: int,
) -> TracePage:
    """The page of `traces` (read from `rows`, whose last column is the sort value), with
    the cursors that read the pages after and before it."""
    backwards = start is not None and start.backwards
    if start is None:
        offset = 0
    elif backwards:
        offset = max(0, start.offset - len(rows))
    else:
        offset = start.offset
    following = previous = None
    if rows and (more if not backwards else True):
        last = rows[-1]
        following = Cursor(order, last[-1], last[0], False, offset + len(rows)).encode()
    if rows and (more if backwards else start is not None):
        first = rows[0]
        previous = Cursor(order, first[-1], first[0], True, offset).encode()
    if backwards and not more:
        offset = 0  # the first page, however many rows came or went meanwhile
    return TracePage(traces=traces, cursor=following, total=total, previous=previous, offset=offset)


class TraceLists:
    """Lists of traces through `core`."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    def page(
        self,
        where: TraceFilter,
        limit: int,
        cursor: str | None,
        order: TraceOrder | None = None,
    ) -> TracePage:
        """A page of the traces `where` keeps, in `order` (newest first by default), from
        `cursor` (a page's `cursor` or `previous`; None: the first page).
        InvalidCursorError for a cursor this store did not hand out, or one of another
        order."""
        order = order or TraceOrder()
        start = Cursor.decode(cursor, order) if cursor is not None else None
        backwards = start is not None and start.backwards
        column = SORT_COLUMNS[order.sort]
        with self.core.transaction() as db:
            if where.q is not None:
                self.core.searching(db)
            found = self._conditions(db, where)
            total = self._count(db, found)
            probe = self._probes(db, found, order, total, limit, backwards)
            paged, params = found.sql(probe=probe, few=True)  # a page's walk
            if start is not None:
                condition, values = keyset(start)
                paged.append(condition)
                params.extend(values)
            rows = (
                self.core.run(
                    db,
                    f"SELECT {LISTED_COLUMNS}, {column} FROM traces{where_clause(paged)} "
                    f"ORDER BY {order_by(order, backwards=backwards)} LIMIT ?",
                    [*params, limit + 1],
                ).fetchall()
                if total
                else []
            )
            more = len(rows) > limit
            rows = rows[:limit]
            if backwards:
                rows.reverse()
            traces = [trace_row(r) for r in rows]
            decorate(self.core, db, traces)
        return _paged(traces, rows, more, start, order, total)

    def _conditions(self, db: Any, where: TraceFilter) -> Conditions:
        def names(low: str, high: str | None) -> list[str]:
            bound, values = (
                ("agent_key >= ?", [low])
                if high is None
                else (
                    "agent_key >= ? AND agent_key < ?",
                    [low, high],
                )
            )
            return [
                r[0]
                for r in self.core.run(
                    db, f"SELECT agent_key FROM agent_names WHERE {bound}", values
                ).fetchall()
            ]

        return conditions(where, self.core.search, names)

    def _count(self, db: Any, found: Conditions) -> int:
        """How many traces the conditions keep (where this store picks the joins, it
        picks them on the way: see `Conditions.drive`)."""
        if not found.parts:
            return self._stored(db)
        side = found.only_side()
        if side is not None:  # count them where they are
            return int(self.core.run(db, side.count(), side.params).fetchone()[0])
        sides = found.sides()
        if self.core.picks_joins and len(found.parts) > 1 and sides:
            # start from the side with the fewest rows (each counted on its index)
            found.drive(
                {n: int(self.core.run(db, s.count(), s.params).fetchone()[0]) for n, s in sides}
            )
        sql, params = found.sql(probe=not self.core.picks_joins)
        total = self.core.run(
            db, f"SELECT COUNT(*) FROM traces{where_clause(sql)}", params
        ).fetchone()
        return int(total[0])

    def _stored(self, db: Any) -> int:
        """How many traces are stored."""
        return int(self.core.run(db, "SELECT COUNT(*) FROM traces").fetchone()[0])

    def _probes(
        self,
        db: Any,
        found: Conditions,
        order: TraceOrder,
        total: int,
        wanted: int,
        backwards: bool = False,
    ) -> bool:
        """Whether to probe the side tables per trace (`EXISTS`) rather than read them
        as sets, to read `wanted` of the `total` traces in `order`."""
        if not self.core.picks_joins:
            return True  # semi-joins (anti-joins for NOT EXISTS) the planner orders itself
        if backwards or not found.sides():
            return False
        return probes_pay(order, total, self._stored(db), wanted)

    def overview(self, where: TraceFilter, limit: int, total: int | None = None) -> Overview:
        """Per agent name and criterion, over the latest `limit` traces `where` keeps
        (`total`: how many it keeps, when the caller has counted them)."""
        newest = TraceOrder()
        with self.core.transaction() as db:
            if where.q is not None:
                self.core.searching(db)
            kept = self._conditions(db, where)
            if total is None:  # else the caller counted them (the list page, with its page)
                total = self._count(db, kept)
            found, params = kept.sql(probe=self._probes(db, kept, newest, total, limit))
            picked = (
                f"SELECT traces.trace_id FROM traces{where_clause(found)} "
                f"ORDER BY {order_by(newest)} LIMIT ?"
            )
            covered = min(total, limit)
            # How many instances got each score (scores repeat: a check's are a few
            # fractions, a judge's ten grades), from which the statistics are exact.
            counted = self.core.run(
                db,
                f"WITH picked AS ({picked}) SELECT s.agent_name, s.criterion, s.score, "
                "COUNT(*), SUM(s.failing) FROM agent_scores s JOIN picked p "
                "ON p.trace_id = s.trace_id WHERE s.score IS NOT NULL "
                "GROUP BY s.agent_name, s.criterion, s.score",
                [*params, limit],
            ).fetchall()
        groups: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
        for name, criterion, score, count, failing in counted:
            groups.setdefault((name, criterion), []).append(
                (float(score), int(count), int(failing or 0))
            )
        listed = [
            _overview_row(name, criterion, values) for (name, criterion), values in groups.items()
        ]
        listed.sort(key=lambda r: (-r.failing, r.agent_name, r.criterion))
        return Overview(rows=listed, traces=int(covered))
