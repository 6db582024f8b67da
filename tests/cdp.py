"""Headless Chromium driven over the DevTools protocol, for tests that measure or click a
page: where an element is, what the console said, what a click reveals.

One Chromium (Debian's; tests/chromium.py finds it) runs per test process (per xdist
worker), started on first use and stopped at exit. `Browser(profile)` opens a tab of its
own in a browser context of its own (cookies, storage, cache and credentials as fresh as
a new profile's; `profile` is kept for the callers' sake) and talks to it over a WebSocket
(websocket-client); leaving the block closes the tab and its context:

    with Browser(tmp_path / "profile") as tab:
        tab.load(url)
        tab.evaluate("document.title")
        tab.console   # every console message, script error and CSP report so far
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import websocket

from tests.chromium import CHROMIUM

#: The viewport of every test: what "the first 900 px" of a page means.
WIDTH, HEIGHT = 1200, 900


class BrowserError(AssertionError):
    """Chromium did not start, or a DevTools command failed."""


class _Chromium:
    """The test process's one headless Chromium and its browser-level DevTools socket."""

    def __init__(self) -> None:
        assert CHROMIUM is not None
        self.profile = Path(tempfile.mkdtemp(prefix="tracejudge-chromium-"))
        port_file = self.profile / "DevToolsActivePort"
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                f"--user-data-dir={self.profile}",
                f"--window-size={WIDTH},{HEIGHT}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helpers in one group, stopped together
        )
        self._next_id = 0
        try:
            deadline = time.monotonic() + 30
            while not port_file.exists() or len(port_file.read_text().split()) < 2:
                if self.process.poll() is not None:
                    raise BrowserError(f"chromium exited with {self.process.returncode}")
                if time.monotonic() > deadline:
                    raise BrowserError("chromium did not open its DevTools port")
                time.sleep(0.02)
            self.port, path = port_file.read_text().split()[:2]
            self.socket = websocket.create_connection(
                f"ws://127.0.0.1:{self.port}{path}", timeout=60
            )
        except BaseException:
            self.close()
            raise

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """A browser-level command (tabs and contexts); events in between are dropped."""
        self._next_id += 1
        number = self._next_id
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == number:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close")
        with contextlib.suppress(Exception):
            self.socket.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)


_shared: _Chromium | None = None


def shared_chromium() -> _Chromium:
    """This process's Chromium, started on first use (again if it died)."""
    global _shared
    if _shared is None or not _shared.alive():
        _shared = _Chromium()
        atexit.register(_shared.close)
    return _shared


class Browser:
    """One tab, in a browser context of its own, of the process's headless Chromium; a
    context manager that closes both."""

    def __init__(self, profile: Path, *, width: int = WIDTH, height: int = HEIGHT) -> None:
        self.profile = profile
        self.width, self.height = width, height
        self.socket: websocket.WebSocket | None = None
        self.console: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._next_id = 0
        self._chromium: _Chromium | None = None
        self._context = self._target = ""

    # ------------------------------------------------------------------ start and stop
    def __enter__(self) -> Browser:
        self._chromium = chromium = shared_chromium()
        self._context = chromium.send("Target.createBrowserContext")["browserContextId"]
        try:
            self._target = chromium.send(
                "Target.createTarget", url="about:blank", browserContextId=self._context
            )["targetId"]
            self.socket = websocket.create_connection(
                f"ws://127.0.0.1:{chromium.port}/devtools/page/{self._target}", timeout=60
            )
            for domain in ("Page", "Runtime", "Log"):
                self.send(f"{domain}.enable")
            self.send(
                "Emulation.setDeviceMetricsOverride",
                width=self.width,
                height=self.height,
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.socket is not None:
            with contextlib.suppress(Exception):
                self.socket.close()
            self.socket = None
        chromium = self._chromium
        if chromium is not None and chromium.alive():
            if self._target:
                with contextlib.suppress(BrowserError):
                    chromium.send("Target.closeTarget", targetId=self._target)
            with contextlib.suppress(BrowserError):
                chromium.send("Target.disposeBrowserContext", browserContextId=self._context)
        self._chromium = None

    # ------------------------------------------------------------------ the protocol
    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Run one DevTools command and return its result; events that arrive meanwhile
        are kept (console messages are read from them)."""
        assert self.socket is not None
        self._next_id += 1
        number = self._next_id
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == number:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            self.console.append(f"console.{params['type']}: {args}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            self.console.append(f"uncaught: {text}")
        elif method == "Log.entryAdded":
            entry = params["entry"]
            self.console.append(f"{entry['level']} ({entry['source']}): {entry['text']}")
        elif method:
            self._events.append(message)

    def wait_for_event(self, method: str, timeout: float = 60.0) -> dict[str, Any]:
        assert self.socket is not None
        deadline = time.monotonic() + timeout
        while True:
            for event in self._events:
                if event["method"] == method:
                    self._events.remove(event)
                    return event.get("params", {})
            if time.monotonic() > deadline:
                raise BrowserError(f"no {method} within {timeout} s")
            self._event(json.loads(self.socket.recv()))

    # ------------------------------------------------------------------ what tests use
    def load(self, url: str) -> float:
        """Open `url` and wait for its load event (inline scripts have run by then);
        returns the seconds from the request to the load event, as the page measured it."""
        # From a blank page: a URL that differs from the current one only by its fragment
        # would otherwise be a same-document navigation, with no load.
        for address in ("about:blank", url):
            self._events.clear()
            self.send("Page.navigate", url=address)
            self.wait_for_event("Page.loadEventFired")
        return float(
            self.evaluate(
                "(function(){var n=performance.getEntriesByType('navigation')[0];"
                "return (n.loadEventStart - n.startTime) / 1000;})()"
            )
        )

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 10.0) -> Any:
        """The value of `expression` once it is truthy: what a click starts (a <details>
        opening, its toggle handler drawing) happens in a later task of the page."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.05)

    def top(self, selector: str) -> float | None:
        """Where the first element matching `selector` starts, in px from the top of the
        page, or None when there is none or it is not displayed."""
        return self.evaluate(
            f"(function(){{var n=document.querySelector({json.dumps(selector)});"
            "if(!n||!n.getClientRects().length)return null;"
            "return n.getBoundingClientRect().top+window.scrollY;})()"
        )

    def click(self, selector: str) -> None:
        """Click the middle of the first element matching `selector`, as a user would."""
        box = self.evaluate(
            f"(function(){{var n=document.querySelector({json.dumps(selector)});"
            "n.scrollIntoView({block:'center'});var r=n.getBoundingClientRect();"
            "return [r.left+r.width/2,r.top+r.height/2];})()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
            )

    def type(self, selector: str, text: str) -> None:
        """Click the first element matching `selector` (an input) and type `text` into it,
        as a user would (the page sees input events)."""
        self.click(selector)
        self.send("Input.insertText", text=text)

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """A PNG of the viewport (or the whole page) at `path`."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            height = self.evaluate("document.documentElement.scrollHeight")
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1}
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", **params)["data"]))
        return path
