"""The dialect core through a database outage (#32, item 1): a PostgreSQL store whose
cluster is stopped fails every call at once with `StoreOutageError` (more calls than its
pool has connections: a failed connection attempt used to stay counted, and after 8 every
call waited for ever), says so in `outage()`, and works again by itself once the cluster
is back, nothing lost."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.server.postgres import postgres_cluster
from tracejudge.server.store import StoreOutageError, TaskRow, open_store

#: Seconds a call may take before the test calls it hung (a guard, not a speed target).
_HUNG = 120


def test_a_postgresql_store_fails_fast_during_an_outage_and_recovers_by_itself() -> None:
    with postgres_cluster() as cluster:  # its own cluster: this test stops it
        store = open_store(cluster.database())
        calls = ThreadPoolExecutor(max_workers=1)
        try:
            task = TaskRow(id=str(uuid.uuid4()), kind="reward", payload="{}")
            store.tasks.enqueue(task)
            assert store.core.outage() is None
            cluster.stop()
            for _ in range(12):  # more than the pool's 8 connections
                with pytest.raises(StoreOutageError) as failed:
                    calls.submit(store.tasks.queue_stats).result(timeout=_HUNG)
                assert store.is_transient(failed.value)
            outage = store.core.outage()
            assert outage is not None and not outage.full
            assert "PostgreSQL" in outage.reason and "postgres@" not in outage.reason
            cluster.start()
            # the first call after the database returns works: no broken connection kept
            assert calls.submit(store.tasks.queue_stats).result(timeout=_HUNG)[0] == 1
            assert store.core.outage() is None
            (claimed,) = store.tasks.claim("w", 1, lease_seconds=60)
            assert claimed.id == task.id
        finally:
            calls.shutdown()
            store.close()
