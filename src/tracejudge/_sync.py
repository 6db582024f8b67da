"""The one way synchronous code runs tracejudge's asynchronous core.

`run(work)` runs a coroutine on one event loop that lives in one daemon thread per
process, started on first use, and waits for its result in the caller's thread. Every
`Composo` client and `evaluate_rubric` share that loop, so they share its connections and
cost one thread in all, however many clients there are.

- Fork-safe: a child process made by `os.fork()` (or a `multiprocessing` pool with the
  fork start method) does not inherit the parent's loop thread, so the child forgets the
  parent's loop and starts its own on first use. Clients used in the parent keep working.
- KeyboardInterrupt (any exception in the waiting thread) cancels the work on the loop
  and surfaces at once; the work is abandoned, not left running.
- `CallGroup` ties calls to an owner (a client): closing the group cancels its calls in
  flight, and each of their callers gets `ComposoError` at once.
- A call made from the loop's own thread (sync code that the core itself runs, such as a
  user check calling `evaluate_rubric`) cannot wait on that loop; it runs on a short-lived
  loop in a helper thread instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from tracejudge.errors import ComposoError

__all__ = ["CallGroup", "run", "in_loop_thread"]

T = TypeVar("T")


class _LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def main() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(ready.set)
            self.loop.run_forever()

        self.thread = threading.Thread(target=main, name="tracejudge-loop", daemon=True)
        self.thread.start()
        ready.wait()


_lock = threading.Lock()
_current: _LoopThread | None = None
# Every live group, so that a forked child can reset their locks.
_groups: weakref.WeakSet[CallGroup] = weakref.WeakSet()


def _loop_thread() -> _LoopThread:
    global _current
    with _lock:
        if _current is None:
            _current = _LoopThread()
        return _current


def in_loop_thread() -> bool:
    """True when called from the shared loop's own thread."""
    current = _current
    return current is not None and threading.current_thread() is current.thread


class CallGroup:
    """The calls in flight of one owner, cancelled together by `close()`."""

    def __init__(self, closed_message: str = "the client is closed; create a new one") -> None:
        self._lock = threading.Lock()
        self._waiting: set[concurrent.futures.Future[Any]] = set()
        self._closed = False
        self._closed_message = closed_message
        _groups.add(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def _add(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            if self._closed:
                future.cancel()
                raise RuntimeError(self._closed_message)
            self._waiting.add(future)

    def _discard(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._waiting.discard(future)

    def close(self) -> None:
        """Refuse new calls and cancel those in flight (their callers raise ComposoError)."""
        with self._lock:
            self._closed = True
            waiting = list(self._waiting)
        for future in waiting:
            future.cancel()

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._waiting = set()  # their waiters were threads of the parent


def run(work: Coroutine[Any, Any, T], *, group: CallGroup | None = None) -> T:
    """Run `work` on the shared loop and return its result (or raise its exception)."""
    if in_loop_thread():
        return _run_elsewhere(work)
    runner = _loop_thread()
    future = asyncio.run_coroutine_threadsafe(work, runner.loop)
    if group is not None:
        try:
            group._add(future)
        except RuntimeError:
            work.close()
            raise
    try:
        return future.result()
    except concurrent.futures.CancelledError:
        if group is not None and group.closed:
            raise ComposoError(
                "the client was closed while this call was in flight; its result is lost"
            ) from None
        raise
    except BaseException:
        future.cancel()  # e.g. KeyboardInterrupt: do not leave the work running
        raise
    finally:
        if group is not None:
            group._discard(future)


def _run_elsewhere(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` on a fresh loop in a helper thread: the shared loop's thread is the caller."""
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tracejudge-nested") as pool:
        return pool.submit(asyncio.run, work).result()


def _after_fork_in_child() -> None:
    global _current, _lock
    # The parent's loop thread does not exist here: forget its loop (never close it, its
    # selector and sockets are the parent's too) and start a new one on first use.
    _current = None
    _lock = threading.Lock()
    for group in list(_groups):
        group._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
