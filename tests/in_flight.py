"""A reply source that proves how many requests a client has in flight at once, however
busy the machine: each request is held until `count` have arrived together, then all are
answered (and later ones at once). A fixed delay proves it only when the client sends
them all within the delay, which a loaded machine does not always do."""

from __future__ import annotations

import threading

from tracejudge.testing import RecordedRequest, Reply


class HeldUntilInFlight:
    """Use as a `ScriptedLLMServer` default: `server.max_in_flight` then reaches `count`
    if the client lets that many out at once; if it does not, the held requests are
    answered after `timeout` seconds and `max_in_flight` says how many it reached."""

    def __init__(self, reply: Reply, count: int, timeout: float = 30.0) -> None:
        self.reply = reply
        self.count = count
        self.timeout = timeout
        self._arrived = 0
        self._lock = threading.Lock()
        self._all_in = threading.Event()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._arrived += 1
            if self._arrived >= self.count:
                self._all_in.set()
        self._all_in.wait(self.timeout)
        return self.reply
