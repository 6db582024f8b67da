"""The monitors repository: monitors on the trends, their state, and the webhook
deliveries with their log, shared by replicas through the one database.

A monitor changes state in one transaction that holds its state row (`FOR UPDATE SKIP
LOCKED` on PostgreSQL: a replica finding it held by another skips it this round; SQLite
lets one writer in at a time), and an event it fires is a delivery row whose key is
(monitor, crossing, event): however many replicas saw the crossing, one row is written,
so one webhook is sent. Deliveries are claimed under a lease, as tasks are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.server.store._core import SQLCore

__all__ = ["DeliveryRow", "MonitorRow", "MonitorState", "Monitors", "Transition"]


@dataclass
class MonitorRow:
    """A monitor: its `body` is the definition as JSON text (`alerts.MonitorSpec`)."""

    id: str
    name: str
    body: str
    created_at: float


@dataclass
class MonitorState:
    """Where a monitor stands: `state` ok or firing, the value and count it last saw,
    how many times it fired (`crossings`), when it was checked and last changed."""

    monitor_id: str
    state: str = "ok"
    value: float | None = None
    count: float | None = None
    crossings: int = 0
    checked_at: float | None = None
    changed_at: float | None = None


@dataclass
class Transition:
    """What a check decided: the new state, and the event to deliver (None: nothing)
    with its body."""

    state: MonitorState
    event: str | None = None
    body: str | None = None


@dataclass
class DeliveryRow:
    """One event to a webhook: `status` pending, delivered or failed; `log`: each
    attempt ({"at", "outcome"})."""

    id: str
    monitor_id: str
    event: str
    body: str
    status: str
    attempts: int
    next_attempt_at: float
    created_at: float
    last_error: str | None = None
    delivered_at: float | None = None
    log: list[dict[str, Any]] = field(default_factory=list)


_STATE_COLUMNS = "monitor_id, state, value, count, crossings, checked_at, changed_at"
_DELIVERY_COLUMNS = (
    "id, monitor_id, event, body, status, attempts, next_attempt_at, created_at, last_error, "
    "delivered_at, log"
)


def _delivery(row: Sequence[Any]) -> DeliveryRow:
    id_, monitor, event, body, status, attempts, next_at, created, error, delivered, log = row
    return DeliveryRow(
        id=id_,
        monitor_id=monitor,
        event=event,
        body=body,
        status=status,
        attempts=int(attempts),
        next_attempt_at=float(next_at),
        created_at=float(created),
        last_error=error,
        delivered_at=delivered,
        log=json.loads(log or "[]"),
    )


class Monitors:
    """Monitors, their states and deliveries through `core`."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    def create(self, monitor: MonitorRow) -> None:
        """Store a monitor, ok to begin with."""
        with self.core.transaction() as cursor:
            self.core.run(
                cursor,
                "INSERT INTO monitors (id, name, body, created_at) VALUES (?, ?, ?, ?)",
                [monitor.id, monitor.name, monitor.body, monitor.created_at],
            )
            self.core.run(
                cursor,
                "INSERT INTO monitor_states (monitor_id, state, crossings) VALUES (?, 'ok', 0)",
                [monitor.id],
            )

    def delete(self, monitor_id: str) -> bool:
        """Take a monitor out with its state (its delivery log stays); False: unknown."""
        with self.core.transaction() as cursor:
            self.core.run(cursor, "DELETE FROM monitor_states WHERE monitor_id = ?", [monitor_id])
            gone = self.core.run(cursor, "DELETE FROM monitors WHERE id = ?", [monitor_id])
            return bool(gone.rowcount)

    def all(self) -> list[tuple[MonitorRow, MonitorState]]:
        """Every monitor with its state, oldest first."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                f"SELECT m.id, m.name, m.body, m.created_at, {_prefixed('s')} FROM monitors m "
                "JOIN monitor_states s ON s.monitor_id = m.id ORDER BY m.created_at, m.id",
            ).fetchall()
        return [(MonitorRow(*r[:4]), MonitorState(*r[4:])) for r in rows]

    def get(self, monitor_id: str) -> tuple[MonitorRow, MonitorState] | None:
        return next((pair for pair in self.all() if pair[0].id == monitor_id), None)

    def transition(
        self, monitor_id: str, decide: Callable[[MonitorState], Transition], now: float
    ) -> DeliveryRow | None:
        """Decide a monitor's next state from its current one while holding it, write it,
        and queue the event it fires (once per key); the delivery queued, or None (no
        event, or another replica holds the monitor now)."""
        with self.core.transaction() as cursor:
            row = self.core.run(
                cursor,
                f"SELECT {_STATE_COLUMNS} FROM monitor_states WHERE monitor_id = ?"
                f"{self.core.lock_rows}",
                [monitor_id],
            ).fetchone()
            if row is None:
                return None
            decided = decide(MonitorState(*row))
            new = decided.state
            self.core.run(
                cursor,
                "UPDATE monitor_states SET state = ?, value = ?, count = ?, crossings = ?, "
                "checked_at = ?, changed_at = ? WHERE monitor_id = ?",
                [
                    new.state,
                    new.value,
                    new.count,
                    new.crossings,
                    new.checked_at,
                    new.changed_at,
                    monitor_id,
                ],
            )
            if decided.event is None or decided.body is None:
                return None
            delivery = DeliveryRow(
                id=f"{monitor_id}:{new.crossings}:{decided.event}",
                monitor_id=monitor_id,
                event=decided.event,
                body=decided.body,
                status="pending",
                attempts=0,
                next_attempt_at=now,
                created_at=now,
            )
            added = self.core.run(
                cursor,
                "INSERT INTO alert_deliveries (id, monitor_id, event, body, status, attempts, "
                "next_attempt_at, created_at) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                [delivery.id, monitor_id, decided.event, decided.body, now, now],
            )
            return delivery if added.rowcount else None

    def claim_deliveries(self, limit: int, lease_seconds: float) -> list[DeliveryRow]:
        """Due deliveries (pending, their next attempt now or past, no live lease), each
        leased and counted as an attempt."""
        now = time.time()
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                f"SELECT {_DELIVERY_COLUMNS} FROM alert_deliveries WHERE status = 'pending' "
                "AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?) "
                f"ORDER BY next_attempt_at, id LIMIT ?{self.core.lock_rows}",
                [now, now, limit],
            ).fetchall()
            found = [_delivery(r) for r in rows]
            for delivery in found:
                delivery.attempts += 1
                self.core.run(
                    cursor,
                    "UPDATE alert_deliveries SET attempts = ?, lease_until = ? WHERE id = ?",
                    [delivery.attempts, now + lease_seconds, delivery.id],
                )
        return found

    def record_attempt(
        self,
        delivery: DeliveryRow,
        outcome: str,
        *,
        delivered: bool,
        retry_at: float | None,
    ) -> None:
        """Log one attempt: delivered, to be retried at `retry_at`, or failed for good
        (neither)."""
        now = time.time()
        status = "delivered" if delivered else ("pending" if retry_at is not None else "failed")
        with self.core.transaction() as cursor:
            row = self.core.run(
                cursor, "SELECT log FROM alert_deliveries WHERE id = ?", [delivery.id]
            ).fetchone()
            log = [
                *json.loads(row[0] if row else "[]"),
                {"at": now, "attempt": delivery.attempts, "outcome": outcome},
            ]
            self.core.run(
                cursor,
                "UPDATE alert_deliveries SET status = ?, log = ?, last_error = ?, "
                "next_attempt_at = ?, lease_until = NULL, delivered_at = ? WHERE id = ?",
                [
                    status,
                    json.dumps(log),
                    None if delivered else outcome,
                    retry_at if retry_at is not None else delivery.next_attempt_at,
                    now if delivered else None,
                    delivery.id,
                ],
            )

    def deliveries(self, monitor_id: str | None = None, limit: int = 100) -> list[DeliveryRow]:
        """The delivery log, newest first (one monitor's, or all)."""
        where = "WHERE monitor_id = ? " if monitor_id is not None else ""
        params: list[Any] = [monitor_id] if monitor_id is not None else []
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                f"SELECT {_DELIVERY_COLUMNS} FROM alert_deliveries {where}"
                "ORDER BY created_at DESC, id DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
        return [_delivery(r) for r in rows]


def _prefixed(alias: str) -> str:
    return ", ".join(f"{alias}.{c.strip()}" for c in _STATE_COLUMNS.split(","))
