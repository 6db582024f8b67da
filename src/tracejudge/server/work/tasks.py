"""Background tasks: persisted in the store, run by a bounded pool of workers.

A task is written to the store before its id is answered, so it survives a restart.
`workers` coroutines each claim one task at a time (a lease of `lease_seconds`,
renewed while it runs), run its handler, and record the outcome, with the
evaluations it produced, in one transaction. A task whose process died while it ran
is taken back: at start by a single-process store (SQLite), else by any replica once
its lease ran out. It is started at most `attempts` times; past that it is marked
failed, saying why. Nothing is silently dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from pydantic import ValidationError

from tracejudge.errors import ComposoError
from tracejudge.server.http.errors import judge_said
from tracejudge.server.store import EvaluationRow, Store, StoreOutageError, TaskRow, TraceRow
from tracejudge.server.work.supervise import Beat, Supervisor, retry

__all__ = ["Outcome", "Handler", "TaskRunner", "describe_error"]

logger = logging.getLogger("tracejudge.server")


@dataclass
class Outcome:
    """What a handler produced: the task's result (JSON-ready) and what to store with it."""

    result: Any
    evaluations: Sequence[EvaluationRow] = ()
    trace: TraceRow | None = None
    replace_source: str | None = None
    failed: str | None = None
    #: Run once the outcome is stored (work that must see it: a session's judgement
    #: reading the trace just scored); not run when it is not, nor again on a retry.
    after: Callable[[], Awaitable[None]] | None = None


#: A task kind's handler: the task's payload in, its outcome out.
Handler = Callable[[dict[str, Any]], Awaitable[Outcome]]


def describe_error(error: BaseException) -> str:
    """The message a caller may see: ours in full, anything else by its type only (the
    details, which could hold anything, go to the server's log)."""
    if isinstance(error, ComposoError):
        return f"{type(error).__name__}: {judge_said(error)}"
    if isinstance(error, (ValidationError, ValueError)):
        return f"invalid input: {error}"
    return f"{type(error).__name__}: the server failed to run this task (see its log)"


@dataclass
class _Running:
    tasks: set[str] = field(default_factory=set)


class TaskRunner:
    """The worker pool of one server process: `workers` claim loops and a lease keeper,
    each run by the `supervisor`.

    A worker never dies of one task: its handler's error fails the task (with the reason);
    a result the store refuses (text it cannot hold) is replaced by a failure saying so;
    a store that is busy or unreachable is waited out with back-off while the task's lease
    is kept, so the result is written once the store answers."""

    def __init__(
        self,
        store: Store,
        handlers: Mapping[str, Handler],
        *,
        supervisor: Supervisor | None = None,
        workers: int = 4,
        lease_seconds: float = 60.0,
        attempts: int = 3,
        poll_seconds: float = 0.5,
    ) -> None:
        self.store = store
        self.handlers = dict(handlers)
        self.supervisor = supervisor or Supervisor()
        self.workers = workers
        self.lease_seconds = lease_seconds
        self.attempts = attempts
        self.poll_seconds = poll_seconds
        #: Who holds a lease: unique per process, readable in the database.
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._running = _Running()
        #: The tasks left running at the last stop are still to be taken back.
        self._orphans_waiting = False
        self._wake = asyncio.Event()

    async def start(self) -> None:
        if self.store.single_process:
            try:
                taken = await anyio.to_thread.run_sync(
                    self.store.tasks.release_orphans, self.attempts
                )
            except StoreOutageError as error:  # a full disk: start anyway
                logger.warning(
                    "tracejudge: the tasks left running at the last stop could not be taken "
                    "back now (%s); the lease keeper takes them back once the store works",
                    error.reason,
                )
                self._orphans_waiting = True
                taken = 0
            if taken:
                logger.info("tracejudge: took back %d tasks left running at the last stop", taken)
        for number in range(1, self.workers + 1):
            self.supervisor.spawn(f"worker-{number}", self._work)
        self.supervisor.spawn("lease-keeper", self._renew)

    async def stop(self) -> None:
        """Stop the loops; unfinished tasks stay running in the store and are taken back
        at the next start (SQLite) or when their lease ends (PostgreSQL)."""
        await self.supervisor.stop()

    async def submit(self, kind: str, payload: Mapping[str, Any]) -> str:
        """Persist a task and wake a worker; returns its id once it is stored."""
        # Encoded in a worker thread, as it is decoded: a payload may be megabytes.
        text = await anyio.to_thread.run_sync(json.dumps, payload)
        task = TaskRow(id=str(uuid.uuid4()), kind=kind, payload=text)
        await anyio.to_thread.run_sync(self.store.tasks.enqueue, task)
        self.wake()
        return task.id

    def wake(self) -> None:
        self._wake.set()

    def _store_call(self, function: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        async def call() -> Any:
            return await anyio.to_thread.run_sync(function, *args)

        return call

    async def _work(self, beat: Beat) -> None:
        while True:
            claimed = await retry(
                beat,
                "claim tasks",
                self._store_call(self.store.tasks.claim, self.worker_id, 1, self.lease_seconds),
            )
            if not claimed:
                self._wake.clear()
                await beat.wait(self.poll_seconds, self._wake)
                continue
            for task in claimed:
                await self._run(task, beat)

    async def _run(self, task: TaskRow, beat: Beat) -> None:
        self._running.tasks.add(task.id)
        try:
            with beat.busy():
                outcome = await self._outcome(task)
            if isinstance(outcome, StoreOutageError):
                await self._give_back(task, outcome, beat)
            else:
                await self._record(task, outcome, beat)
        finally:
            self._running.tasks.discard(task.id)

    async def _give_back(self, task: TaskRow, outage: StoreOutageError, beat: Beat) -> None:
        """Queue a task again whose handler met a store outage (the store unreachable, or
        its disk full), its attempt not counted: it runs again once the store works, and
        its trace is never failed for the store's trouble."""
        logger.info(
            "tracejudge: task %s (%s) is queued again: the store failed under it (%s)",
            task.id,
            task.kind,
            outage.reason,
        )
        await retry(
            beat,
            f"queue task {task.id} again",
            self._store_call(self.store.tasks.give_back, task.id, self.worker_id),
            transient=self.store.is_transient,
        )

    async def _record(self, task: TaskRow, outcome: Outcome, beat: Beat) -> None:
        """Write the outcome; a result the store refuses becomes a failure saying why."""
        try:
            owned = await retry(
                beat,
                f"record task {task.id}",
                self._store_call(self._finish, task, outcome),
                transient=self.store.is_transient,
            )
        except Exception as error:
            logger.error(
                "tracejudge: the result of task %s (%s) could not be stored (%s); it is "
                "marked failed",
                task.id,
                task.kind,
                describe_error(error),
                exc_info=error,
            )
            failure = Outcome(
                None, failed=f"its result could not be stored: {describe_error(error)}"
            )
            try:
                owned = await retry(
                    beat,
                    f"record task {task.id} as failed",
                    self._store_call(self._finish, task, failure),
                    transient=self.store.is_transient,
                )
            except Exception:
                logger.exception("tracejudge: task %s could not be marked failed", task.id)
                return
        if owned and outcome.after is not None and not outcome.failed:
            try:
                await outcome.after()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("tracejudge: the follow-up of task %s failed", task.id)
        if not owned:
            logger.warning(
                "tracejudge: task %s ran past its lease and was taken over; its result "
                "from this worker is dropped (raise --task-lease-seconds)",
                task.id,
            )

    def _finish(self, task: TaskRow, outcome: Outcome) -> bool:
        return self.store.tasks.finish(
            task.id,
            self.worker_id,
            status="failed" if outcome.failed else "done",
            result=None if outcome.failed else json.dumps(outcome.result),
            error=outcome.failed,
            evaluations=outcome.evaluations,
            trace=outcome.trace,
            replace_source=outcome.replace_source,
        )

    async def _outcome(self, task: TaskRow) -> Outcome | StoreOutageError:
        if task.attempts > self.attempts:
            return Outcome(
                None,
                failed=f"the server stopped while this task ran, {task.attempts - 1} times; "
                "it is not tried again",
            )
        handler = self.handlers.get(task.kind)
        if handler is None:
            return Outcome(None, failed=f"unknown task kind {task.kind!r}")
        try:
            return await handler(await anyio.to_thread.run_sync(json.loads, task.payload))
        except asyncio.CancelledError:
            raise
        except StoreOutageError as error:
            return error  # not the task's fault: it runs again once the store works
        except Exception as error:
            if not isinstance(error, (ComposoError, ValidationError, ValueError)):
                logger.exception("tracejudge: task %s (%s) failed", task.id, task.kind)
            return Outcome(None, failed=describe_error(error))

    async def _renew(self, beat: Beat) -> None:
        """Renew the leases of the running tasks, every third of a lease (first, take back
        the tasks left running at the last stop, if the store could not at start)."""
        if self._orphans_waiting:
            taken = await retry(
                beat,
                "take back the tasks left running at the last stop",
                self._store_call(self.store.tasks.release_orphans, self.attempts),
                transient=self.store.is_transient,
            )
            self._orphans_waiting = False
            logger.info("tracejudge: took back %d tasks left running at the last stop", taken)
            self.wake()
        while True:
            await beat.wait(self.lease_seconds / 3)
            running = sorted(self._running.tasks)
            await retry(
                beat,
                "renew task leases",
                self._store_call(
                    self.store.tasks.extend_leases, self.worker_id, running, self.lease_seconds
                ),
            )
