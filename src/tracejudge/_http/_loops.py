"""One HTTP client and one concurrency limit per event loop, each closed on its own loop.

Neither an `httpx.AsyncClient` nor an `asyncio.Semaphore` may cross event loops, yet one
judge (or remote server) is used from several loops in turn: the sync client's thread, one
`asyncio.run` after another, one loop per test. `LoopClients` keeps a pair per loop and
closes each client where it can be closed:

- when its loop shuts down (`asyncio.run`, `asyncio.Runner`, pytest-asyncio and the sync
  client's thread all call `loop.shutdown_asyncgens()`), through a small async generator
  registered with the loop for that purpose;
- on `aclose()`: awaited for the running loop, scheduled (call_soon_threadsafe) on any
  other loop still open;
- a loop closed without shutting down its async generators can run nothing any more: its
  client's sockets are closed synchronously, best effort, when it is found;
- in a child made by `os.fork()` the parent's loops no longer run: their pairs are
  forgotten (not closed: the sockets are the parent's too) and the locks made anew.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

import httpx

__all__ = ["LoopClient", "LoopClients"]

logger = logging.getLogger("tracejudge.http")

# Closes scheduled on other loops: asyncio keeps only weak references to tasks.
_CLOSING: set[asyncio.Task[None]] = set()


@dataclass(eq=False)
class LoopClient:
    """The HTTP client and the concurrency limit of one event loop."""

    loop: asyncio.AbstractEventLoop
    client: httpx.AsyncClient
    semaphore: asyncio.Semaphore
    _watch: AsyncGenerator[None, None] | None = field(default=None, repr=False)


class LoopClients:
    """A `LoopClient` for each event loop that asks, made by `make_client`. Thread-safe."""

    def __init__(self, make_client: Callable[[], httpx.AsyncClient], max_concurrency: int) -> None:
        self._make_client = make_client
        self._max_concurrency = max_concurrency
        self._slots: dict[asyncio.AbstractEventLoop, LoopClient] = {}
        self._lock = threading.Lock()
        _ALL.add(self)
        # Dropped while its loops still run (a judge nobody closed, its loop the shared
        # one that never stops): close each client on its loop rather than leave its
        # sockets to the garbage collector.
        finalizer = weakref.finalize(self, _close_all, self._slots)
        finalizer.atexit = False

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        # Only the thread that forked lives on in the child; its loop, if it runs one, is
        # the one loop whose pair is still usable here.
        survivor = asyncio._get_running_loop()
        for loop in [loop for loop in self._slots if loop is not survivor]:
            del self._slots[loop]

    def get(self) -> LoopClient:
        """The running loop's client and limit, made on first use."""
        loop = asyncio.get_running_loop()
        with self._lock:
            slot = self._slots.get(loop)
            if slot is not None:
                return slot
            # Loops closed without shutting down their async generators are found here.
            dead = [old for old in self._slots.values() if old.loop.is_closed()]
            for old in dead:
                del self._slots[old.loop]
            slot = LoopClient(loop, self._make_client(), asyncio.Semaphore(self._max_concurrency))
            slot._watch = _watch(slot, weakref.ref(self))
            self._slots[loop] = slot
        for old in dead:
            _close_abandoned(old.client)
        return slot

    async def aclose(self) -> None:
        """Close every loop's client: this loop's now, other open loops' on those loops
        (scheduled, not awaited), closed loops' synchronously. Used again, it reconnects."""
        running = asyncio.get_running_loop()
        with self._lock:
            slots = list(self._slots.values())
            self._slots.clear()
        for slot in slots:
            if slot.loop is running:
                await _close(slot)
            elif slot.loop.is_closed():
                _close_abandoned(slot.client)
            else:
                try:
                    slot.loop.call_soon_threadsafe(_close_soon, slot)
                except RuntimeError:  # closed in the meantime
                    _close_abandoned(slot.client)

    def _forget(self, slot: LoopClient) -> None:
        with self._lock:
            if self._slots.get(slot.loop) is slot:
                del self._slots[slot.loop]


def _watch(
    slot: LoopClient, owner: weakref.ReferenceType[LoopClients]
) -> AsyncGenerator[None, None] | None:
    """Register with the running loop a generator whose closing closes `slot`'s client.

    A loop closes the async generators it saw start (the first step registers them) when it
    shuts down; None when the loop tracks none (no asyncgen hooks installed).
    """
    if sys.get_asyncgen_hooks().firstiter is None:
        return None

    async def close_with_loop() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            owner_now = owner()
            if owner_now is not None:
                owner_now._forget(slot)
            await slot.client.aclose()

    watch = close_with_loop()
    try:
        watch.asend(None).send(None)  # runs to the `yield`: registered, now suspended
    except StopIteration:
        pass
    return watch


async def _close(slot: LoopClient) -> None:
    if slot._watch is not None:
        await slot._watch.aclose()  # runs its `finally`, unregisters it from the loop
    await slot.client.aclose()


def _close_all(slots: dict[asyncio.AbstractEventLoop, LoopClient]) -> None:
    for slot in list(slots.values()):
        if slot.loop.is_running():
            try:
                slot.loop.call_soon_threadsafe(_close_soon, slot)
                continue
            except RuntimeError:  # closed in the meantime
                pass
        _close_abandoned(slot.client)
    slots.clear()


def _close_soon(slot: LoopClient) -> None:
    task = slot.loop.create_task(_close(slot))
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


def _close_abandoned(client: httpx.AsyncClient) -> None:
    """Close the sockets of a client whose event loop was closed before it.

    No public API closes an asyncio transport once its loop is closed (closing schedules a
    callback on that loop), so this follows httpx's pools (a sharded transport has several)
    down to each socket transport and runs
    the transport's final step itself. Whatever it cannot find (another transport, another
    httpcore version) is left to the garbage collector, which warns about it.
    """
    transport = getattr(client, "_transport", None)
    pools = [getattr(t, "_pool", None) for t in getattr(transport, "_transports", [transport])]
    connections = [c for pool in pools for c in getattr(pool, "connections", None) or ()]
    for connection in connections:
        stream = getattr(getattr(connection, "_connection", None), "_network_stream", None)
        stream = getattr(stream, "wrapped", stream)  # our liveness check's wrapper
        stream = getattr(stream, "_stream", None)
        stream = getattr(stream, "transport_stream", stream)  # TLS wraps the socket stream
        socket_transport = getattr(stream, "_transport", None)
        connection_lost = getattr(socket_transport, "_call_connection_lost", None)
        if connection_lost is None or getattr(socket_transport, "_sock", None) is None:
            continue  # not an asyncio socket transport, or already closed
        try:
            connection_lost(None)
        except Exception:  # noqa: BLE001 - best effort on a dead loop
            logger.debug("could not close a connection of a closed event loop", exc_info=True)


_ALL: weakref.WeakSet[LoopClients] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for clients in list(_ALL):
        clients._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
