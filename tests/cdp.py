"""Headless Chromium driven over the DevTools protocol, for tests that measure or click a
page: where an element is, what the console said, what a click reveals.

`Browser(profile)` starts Debian's chromium (tests/chromium.py finds it) with a DevTools
port of its own, and talks to its one tab over a WebSocket (websocket-client):

    with Browser(tmp_path / "profile") as tab:
        tab.load(url)
        tab.evaluate("document.title")
        tab.console   # every console message, script error and CSP report so far
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import websocket

from tests.chromium import CHROMIUM

#: The viewport of every test: what "the first 900 px" of a page means.
WIDTH, HEIGHT = 1200, 900


class BrowserError(AssertionError):
    """Chromium did not start, or a DevTools command failed."""


class Browser:
    """One headless Chromium with one tab; a context manager that closes it."""

    def __init__(self, profile: Path, *, width: int = WIDTH, height: int = HEIGHT) -> None:
        self.profile = profile
        self.width, self.height = width, height
        self.process: subprocess.Popen[bytes] | None = None
        self.socket: websocket.WebSocket | None = None
        self.console: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._next_id = 0

    # ------------------------------------------------------------------ start and stop
    def __enter__(self) -> Browser:
        assert CHROMIUM is not None
        self.profile.mkdir(parents=True, exist_ok=True)
        port_file = self.profile / "DevToolsActivePort"
        port_file.unlink(missing_ok=True)
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
                f"--window-size={self.width},{self.height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helpers in one group, stopped together
        )
        try:
            self._connect(port_file)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _connect(self, port_file: Path, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not port_file.exists() or not port_file.read_text().strip():
            if self.process is not None and self.process.poll() is not None:
                raise BrowserError(f"chromium exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise BrowserError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        tabs = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        (tab,) = [t for t in tabs if t.get("type") == "page"]
        self.socket = websocket.create_connection(tab["webSocketDebuggerUrl"], timeout=60)
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def __exit__(self, *exc: object) -> None:
        if self.socket is not None:
            with contextlib.suppress(Exception):
                self.send("Browser.close")
            with contextlib.suppress(Exception):
                self.socket.close()
        if self.process is not None:
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)

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
