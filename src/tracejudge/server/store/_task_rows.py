"""A task as a row: its columns, and its insert in the caller's transaction (the tasks
repository's, and the traces repository's when a complete trace is queued for scoring)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tracejudge.server.store._core import SQLCore
from tracejudge.server.store.base import TaskRow

__all__ = ["TASK_COLUMNS", "insert_task", "task_row"]

TASK_COLUMNS = (
    "id, kind, payload, status, result, error, attempts, worker, lease_until, "
    "created_at, updated_at"
)


def task_row(row: Sequence[Any]) -> TaskRow:
    return TaskRow(*row)


def insert_task(core: SQLCore, cursor: Any, task: TaskRow) -> None:
    """Queue `task` in the caller's transaction."""
    now = time.time()
    core.run(
        cursor,
        f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES (?, ?, ?, 'queued', NULL, NULL, 0, "
        "NULL, NULL, ?, ?)",
        [task.id, task.kind, task.payload, task.created_at or now, now],
    )
