"""The rules repository: evaluation rules, what each decided for each stored trace, and what
each rule's judge spent per day (migration 8's `rules`, `trace_rules`, `rule_spend`).

A rule is kept as its JSON body with where it came from (`file`: the `--rules` file, which
owns it; `api`: made through the API) and a revision bumped on every change. Every replica
reads the same rules from here, so they all decide alike. A decision names the rule and its
revision, the outcome (`scored`, `sampled_out`, `over_budget`) and one line saying why;
deciding again for the same trace and rule replaces it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tracejudge.server.store._core import SQLCore, where_clause
from tracejudge.server.store._task_rows import insert_task
from tracejudge.server.store.base import TaskRow, TraceRow
from tracejudge.server.store.traces import LISTED_COLUMNS, decorate, trace_row

__all__ = ["RuleDecisionRow", "RuleDecisions", "RuleRow", "RuleTally", "Rules", "RuleSourceError"]

_RULE_COLUMNS = "name, body, source, revision, created_at, updated_at"


@dataclass(frozen=True)
class RuleRow:
    """A stored rule: `body` is its JSON; `source` file or api."""

    name: str
    body: str
    source: str
    revision: int
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class RuleDecisionRow:
    """What one rule decided for one trace, and why."""

    trace_id: str
    rule: str
    outcome: str
    reason: str
    revision: int
    decided_at: float


@dataclass(frozen=True)
class RuleTally:
    """How many traces a rule scored, sampled out and left over budget."""

    scored: int = 0
    sampled_out: int = 0
    over_budget: int = 0


class RuleSourceError(ValueError):
    """A change through the API to a rule the `--rules` file owns."""


class Rules:
    """Rules and what each rule's judge spent per day, through `core` (their decisions:
    `RuleDecisions`)."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    # ------------------------------------------------------------------ the rules

    def all(self) -> list[RuleRow]:
        """Every rule, by name."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor, f"SELECT {_RULE_COLUMNS} FROM rules ORDER BY name"
            ).fetchall()
        return [RuleRow(*r) for r in rows]

    def get(self, name: str) -> RuleRow | None:
        with self.core.transaction() as cursor:
            row = self.core.run(
                cursor, f"SELECT {_RULE_COLUMNS} FROM rules WHERE name = ?", [name]
            ).fetchone()
        return None if row is None else RuleRow(*row)

    def create(self, name: str, body: str, source: str = "api") -> RuleRow | None:
        """Store a new rule; None when one of that name exists."""
        now = time.time()
        with self.core.transaction() as cursor:
            made = self.core.run(
                cursor,
                "INSERT INTO rules (name, body, source, revision, created_at, updated_at) "
                "VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING "
                + _RULE_COLUMNS,
                [name, body, source, now, now],
            ).fetchall()
        return RuleRow(*made[0]) if made else None

    def update(self, name: str, body: str) -> RuleRow | None:
        """Replace an API rule's body (its revision goes up); None when there is no such
        rule. `RuleSourceError` when the rules file owns it."""
        with self.core.transaction() as cursor:
            found = self._source(cursor, name)
            if found is None:
                return None
            if found == "file":
                raise RuleSourceError(name)
            row = self.core.run(
                cursor,
                "UPDATE rules SET body = ?, revision = revision + 1, updated_at = ? "
                f"WHERE name = ? RETURNING {_RULE_COLUMNS}",
                [body, time.time(), name],
            ).fetchone()
        return RuleRow(*row)

    def delete(self, name: str) -> bool:
        """Delete an API rule (its decisions stay, naming it); False when there is none.
        `RuleSourceError` when the rules file owns it."""
        with self.core.transaction() as cursor:
            found = self._source(cursor, name)
            if found is None:
                return False
            if found == "file":
                raise RuleSourceError(name)
            self.core.run(cursor, "DELETE FROM rules WHERE name = ?", [name])
        return True

    def _source(self, cursor: Any, name: str) -> str | None:
        row = self.core.run(cursor, "SELECT source FROM rules WHERE name = ?", [name]).fetchone()
        return None if row is None else str(row[0])

    def load_file(self, rules: Sequence[tuple[str, str]]) -> None:
        """Make the file's rules (name, body) the stored file rules, in one transaction: new
        ones added, changed ones replaced (revision up), file rules no longer in the file
        deleted. A rule of the same name made through the API becomes the file's."""
        now = time.time()
        given = dict(rules)
        with self.core.transaction() as cursor:
            stored = {
                name: (body, source)
                for name, body, source in self.core.run(
                    cursor, "SELECT name, body, source FROM rules"
                ).fetchall()
            }
            # An upsert, not a read then an insert: replicas starting at once with the
            # same file write the same rows, the second one changing nothing.
            for name in sorted(given):
                self.core.run(
                    cursor,
                    "INSERT INTO rules (name, body, source, revision, created_at, updated_at) "
                    "VALUES (?, ?, 'file', 1, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                    "revision = CASE WHEN rules.body = excluded.body AND rules.source = 'file' "
                    "THEN rules.revision ELSE rules.revision + 1 END, "
                    "updated_at = CASE WHEN rules.body = excluded.body AND "
                    "rules.source = 'file' THEN rules.updated_at ELSE excluded.updated_at END, "
                    "body = excluded.body, source = 'file'",
                    [name, given[name], now, now],
                )
            gone = [n for n, (_, source) in stored.items() if source == "file" and n not in given]
            for name in sorted(gone):
                self.core.run(cursor, "DELETE FROM rules WHERE name = ?", [name])

    # ------------------------------------------------------------------ spend

    def add_spend(self, day: str, rule: str, cost_usd: float, tokens: int) -> None:
        """Add what the judge spent for a rule on `day` (UTC, YYYY-MM-DD)."""
        with self.core.transaction() as cursor:
            self.core.run(
                cursor,
                "INSERT INTO rule_spend (day, rule, cost_usd, tokens) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (day, rule) DO UPDATE SET "
                "cost_usd = rule_spend.cost_usd + excluded.cost_usd, "
                "tokens = rule_spend.tokens + excluded.tokens",
                [day, rule, float(cost_usd), int(tokens)],
            )

    def spent(self, day: str) -> dict[str, tuple[float, int]]:
        """Per rule, (dollars, tokens) its judge spent on `day`."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor, "SELECT rule, cost_usd, tokens FROM rule_spend WHERE day = ?", [day]
            ).fetchall()
        return {rule: (float(cost), int(tokens)) for rule, cost, tokens in rows}


class RuleDecisions:
    """What each rule decided for each trace, through `core`; the stored traces a rule has
    not decided for, and their backfill tasks."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    # ------------------------------------------------------------------ decisions

    def decide(self, decisions: Sequence[RuleDecisionRow]) -> None:
        """Record decisions, each replacing the one of its trace and rule."""
        rows = sorted(decisions, key=lambda d: (d.trace_id, d.rule))
        with self.core.transaction() as cursor:
            self.core.run_many(
                cursor,
                "INSERT INTO trace_rules (trace_id, rule, outcome, reason, revision, decided_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (trace_id, rule) DO UPDATE SET "
                "outcome = excluded.outcome, reason = excluded.reason, "
                "revision = excluded.revision, decided_at = excluded.decided_at",
                [(d.trace_id, d.rule, d.outcome, d.reason, d.revision, d.decided_at) for d in rows],
            )

    def of_trace(self, trace_id: str) -> list[RuleDecisionRow]:
        """What each rule decided for a trace, by rule name."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                "SELECT trace_id, rule, outcome, reason, revision, decided_at FROM trace_rules "
                "WHERE trace_id = ? ORDER BY rule",
                [trace_id],
            ).fetchall()
        return [RuleDecisionRow(*r) for r in rows]

    def tallies(self) -> dict[str, RuleTally]:
        """Per rule, how many traces it scored, sampled out and left over budget."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor, "SELECT rule, outcome, COUNT(*) FROM trace_rules GROUP BY rule, outcome"
            ).fetchall()
        counts: dict[str, dict[str, int]] = {}
        for rule, outcome, count in rows:
            counts.setdefault(rule, {})[outcome] = int(count)
        return {
            rule: RuleTally(c.get("scored", 0), c.get("sampled_out", 0), c.get("over_budget", 0))
            for rule, c in counts.items()
        }

    # ------------------------------------------------------------------ backfill

    def undecided(
        self,
        rule: str,
        since: float | None,
        until: float | None,
        before: tuple[float, str] | None,
        limit: int,
    ) -> list[TraceRow]:
        """Stored, converted traces the rule has not decided for, newest first (by start
        time, then trace id), from after `before` (the last one of the previous batch),
        with their tags and resource attributes (no JSON)."""
        conditions = [
            "traces.trace_json IS NOT NULL",
            "traces.status IN ('scored', 'failed')",
            "NOT EXISTS (SELECT 1 FROM trace_rules r WHERE r.trace_id = traces.trace_id "
            "AND r.rule = ?)",
        ]
        params: list[Any] = [rule]
        if since is not None:
            conditions.append("traces.start_time >= ?")
            params.append(since)
        if until is not None:
            conditions.append("traces.start_time < ?")
            params.append(until)
        if before is not None:
            conditions.append("((traces.start_time, traces.trace_id) < (?, ?))")
            params.extend(before)
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                f"SELECT {LISTED_COLUMNS} FROM traces{where_clause(conditions)} "
                "ORDER BY traces.start_time DESC, traces.trace_id DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
            traces = [trace_row(r) for r in rows]
            decorate(self.core, cursor, traces)
        return traces

    def queue(self, trace_ids: Sequence[str], make_task: Callable[[str], TaskRow]) -> None:
        """Queue a task per trace, in one transaction."""
        with self.core.transaction() as cursor:
            for trace_id in trace_ids:
                insert_task(self.core, cursor, make_task(trace_id))
