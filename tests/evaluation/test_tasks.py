"""Background evaluations (`block=False`): what the task registry keeps, and for how long."""

from __future__ import annotations

import asyncio

import pytest

from tracejudge.errors import BadRequestError
from tracejudge.evaluation._tasks import (
    FINISHED_TASK_TTL_SECONDS,
    MAX_FINISHED_TASKS,
    TaskRegistry,
)


async def _answer(value: int) -> dict[str, int]:
    return {"value": value}


async def _settle() -> None:
    """Let submitted work finish and its done callbacks run."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_the_registry_is_bounded_by_default() -> None:
    registry = TaskRegistry()
    assert (registry.max_finished, registry.ttl_seconds) == (10_000, 3600.0)
    assert (MAX_FINISHED_TASKS, FINISHED_TASK_TTL_SECONDS) == (10_000, 3600.0)


async def test_unread_results_beyond_the_limit_are_dropped_oldest_first() -> None:
    registry = TaskRegistry(max_finished=2)
    ids = [registry.submit(_answer(i)) for i in range(3)]
    await _settle()
    with pytest.raises(BadRequestError, match=f"task '{ids[0]}' expired"):
        registry.get(ids[0])
    assert ids[0] in registry  # a client asks this registry, not a remote server
    assert [registry.get(i).result for i in ids[1:]] == [{"value": 1}, {"value": 2}]
    with pytest.raises(BadRequestError, match="unknown task id"):
        registry.get(ids[1])  # read once, then forgotten


async def test_running_tasks_are_never_dropped() -> None:
    registry = TaskRegistry(max_finished=1)
    release = asyncio.Event()

    async def slow() -> dict[str, str]:
        await release.wait()
        return {"value": "late"}

    waiting = [registry.submit(slow()) for _ in range(3)]
    done = [registry.submit(_answer(i)) for i in range(3)]
    await _settle()
    assert all(registry.get(i).status == "running" for i in waiting)
    assert registry.get(done[-1]).result == {"value": 2}
    release.set()
    await _settle()
    # Three finished at once with room for one: the last kept, the others expired.
    outcomes = []
    for task_id in waiting:
        try:
            outcomes.append(registry.get(task_id).result)
        except BadRequestError as error:
            outcomes.append(str(error))
    assert outcomes[-1] == {"value": "late"}
    assert all("expired" in o for o in outcomes[:-1]), outcomes
    await registry.aclose()


async def test_unread_results_expire_after_the_ttl() -> None:
    registry = TaskRegistry(ttl_seconds=0.05)
    task_id = registry.submit(_answer(1))
    read_in_time = registry.submit(_answer(2))
    await _settle()
    assert registry.get(read_in_time).result == {"value": 2}
    await asyncio.sleep(0.1)
    with pytest.raises(BadRequestError, match="expired: it finished but was not read within"):
        registry.get(task_id)


async def test_closing_forgets_every_task() -> None:
    registry = TaskRegistry()
    task_id = registry.submit(asyncio.sleep(10))
    await registry.aclose()
    assert task_id not in registry
    with pytest.raises(BadRequestError, match="unknown task id"):
        registry.get(task_id)


def test_the_limits_must_make_sense() -> None:
    with pytest.raises(ValueError, match="max_finished"):
        TaskRegistry(max_finished=0)
    with pytest.raises(ValueError, match="ttl_seconds"):
        TaskRegistry(ttl_seconds=0)
