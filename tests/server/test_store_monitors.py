"""The monitors repository on SQLite and PostgreSQL: a crossing seen by many writers at once
queues one delivery; deliveries are leased, retried when due, and logged attempt by
attempt."""

from __future__ import annotations

import dataclasses
import threading
import time

from tracejudge.server.store import Store, open_store
from tracejudge.server.store.monitors import MonitorRow, MonitorState, Transition


def _fire(state: MonitorState) -> Transition:
    """Fire when ok (what every replica decides on seeing the same crossing)."""
    if state.state == "firing":
        return Transition(dataclasses.replace(state, checked_at=time.time()))
    new = dataclasses.replace(state, state="firing", crossings=state.crossings + 1)
    return Transition(new, "firing", '{"event": "firing"}')


def test_a_crossing_seen_by_many_writers_at_once_is_one_delivery(db_url: str) -> None:
    stores = [open_store(db_url) for _ in range(2)]  # two replicas' connections
    try:
        stores[0].monitors.create(MonitorRow("m1", "writer fails", "{}", time.time()))
        queued: list[object] = []
        start = threading.Barrier(8)

        def check(store: Store) -> None:
            start.wait()
            for _ in range(5):
                queued.append(store.monitors.transition("m1", _fire, time.time()))

        threads = [threading.Thread(target=check, args=(stores[i % 2],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len([q for q in queued if q is not None]) == 1
        (delivery,) = stores[1].monitors.deliveries("m1")
        assert delivery.id == "m1:1:firing" and delivery.status == "pending"
        (_, state) = stores[1].monitors.all()[0]
        assert (state.state, state.crossings) == ("firing", 1)
    finally:
        for store in stores:
            store.close()


def test_deliveries_are_leased_retried_when_due_and_logged(db_url: str) -> None:
    store = open_store(db_url)
    try:
        store.monitors.create(MonitorRow("m1", "writer fails", "{}", time.time()))
        store.monitors.transition("m1", _fire, time.time())
        (claimed,) = store.monitors.claim_deliveries(10, lease_seconds=60)
        assert claimed.attempts == 1
        assert store.monitors.claim_deliveries(10, lease_seconds=60) == []  # leased
        store.monitors.record_attempt(
            claimed, "not sent: ConnectError", delivered=False, retry_at=time.time() + 3600
        )
        assert store.monitors.claim_deliveries(10, lease_seconds=60) == []  # not due yet
        store.monitors.record_attempt(
            claimed, "HTTP 503", delivered=False, retry_at=time.time() - 1
        )
        (again,) = store.monitors.claim_deliveries(10, lease_seconds=60)
        assert again.attempts == 2
        store.monitors.record_attempt(again, "HTTP 204", delivered=True, retry_at=None)
        assert store.monitors.claim_deliveries(10, lease_seconds=60) == []
        (logged,) = store.monitors.deliveries("m1")
        assert logged.status == "delivered" and logged.delivered_at is not None
        assert [e["outcome"] for e in logged.log] == [
            "not sent: ConnectError",
            "HTTP 503",
            "HTTP 204",
        ]
        assert store.monitors.delete("m1") and store.monitors.get("m1") is None
        assert store.monitors.deliveries("m1")  # the log outlives the monitor
    finally:
        store.close()
