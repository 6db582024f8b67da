"""`tracejudge demo --serve` and `tracejudge demo --to URL`, run as a user runs them: the
console script in a subprocess, against real servers on loopback (the demo's own, or
`python -m tracejudge.server` under uvicorn started here)."""

from __future__ import annotations

import queue
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import API_KEY, InProcessServer
from tests.server.postgres import free_port
from tests.test_demo import _command, _demo, _environment

pytestmark = pytest.mark.heavy("`tracejudge demo --serve/--to` as processes")

#: How long the demo may take to print its page on this (shared, slow) machine.
STARTUP_TIMEOUT = 120.0


class _Lines:
    """A process's stdout read line by line in a thread, so that waiting has a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def until(self, prefix: str, timeout: float = STARTUP_TIMEOUT) -> str:
        """The first line starting with `prefix`; AssertionError if the output ends first."""
        while True:
            line = self._queue.get(timeout=timeout)
            if line is None:
                raise AssertionError(f"no line {prefix!r} in {''.join(self.seen)!r}")
            self.seen.append(line)
            if line.startswith(prefix):
                return line.rstrip("\n")

    def rest(self) -> str:
        self._thread.join(30)
        tail = []
        while (line := self._queue.get_nowait()) is not None:
            tail.append(line)
        return "".join(tail)


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], _Lines, int, Path]]:
    """`tracejudge demo --serve --port P --db D` running, with its stdout lines."""
    port = free_port()
    db = tmp_path / "kept.db"
    process = subprocess.Popen(
        _command("--serve", "--port", str(port), "--db", str(db)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_environment(tmp_path, None),
    )
    try:
        yield process, _Lines(process), port, db
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_leaves_the_server_running_with_the_trace_until_a_stop_signal(
    serving: tuple[subprocess.Popen[str], _Lines, int, Path], stop: signal.Signals
) -> None:
    process, lines, port, db = serving
    page_url = lines.until("This trace: ").removeprefix("This trace: ")
    lines.until("Ctrl-C stops the server.")
    base = f"http://127.0.0.1:{port}"
    assert page_url.startswith(f"{base}/ui/traces/")
    trace_id = page_url.rsplit("/", 1)[1]
    printed = "".join(lines.seen)
    assert "Scores per agent" in printed and f"Trace {trace_id}" in printed

    page = httpx.get(page_url, timeout=30)
    assert page.status_code == 200
    assert trace_id in page.text and "researcher" in page.text and "writer" in page.text
    listed = httpx.get(f"{base}/api/v1/traces", timeout=30).json()
    assert [t["trace_id"] for t in listed["traces"]] == [trace_id]
    assert listed["traces"][0]["status"] == "scored"
    assert process.poll() is None  # still serving after the page was read

    process.send_signal(stop)
    assert process.wait(60) == 0
    assert process.stderr is not None
    assert process.stderr.read() == ""  # no traceback, no warning
    assert lines.rest() == "Stopping the server.\n"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
    assert db.stat().st_size > 0  # --db keeps the store after the server stops


def test_serve_on_a_port_in_use_fails_in_one_line_before_any_work(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _demo("--serve", "--port", str(port), tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"tracejudge demo: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(choose another --port)"
    ]
    assert done.stdout == ""


def test_serve_flags_without_serve_and_json_with_serve_are_usage_errors(tmp_path: Path) -> None:
    for arguments, message in [
        (("--port", "9000"), "--port sets the server --serve keeps running; add --serve"),
        (("--serve", "--json"), "--json prints the scores and ends: leave it out with --serve"),
        (("--api-key", "k"), "--api-key is the key of the server --to names; give --to URL"),
        (
            ("--to", "http://127.0.0.1:1", "--html", "x.html"),
            "--to sends the trace to a running server, which scores it itself: --html "
            "applies to the demo's own server only",
        ),
    ]:
        done = _demo(*arguments, tmp_path=tmp_path)
        assert done.returncode == 2, arguments
        assert done.stderr.splitlines() == [f"tracejudge demo: {message}"], arguments


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    """A server (uvicorn, in a thread) with an API key and its own store."""
    db = tmp_path_factory.mktemp("server") / "server.db"
    server = InProcessServer(str(db)).start()
    try:
        yield server
    finally:
        server.stop()


def test_to_sends_the_trace_to_a_running_keyed_server(
    tmp_path: Path, keyed_server: InProcessServer
) -> None:
    done = _demo(
        "--to", f"{keyed_server.url}/", tmp_path=tmp_path, env={"TRACEJUDGE_API_KEY": API_KEY}
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    page_line = done.stdout.splitlines()[-1]
    assert page_line.startswith(f"This trace: {keyed_server.url}/ui/traces/")
    trace_id = page_line.rsplit("/", 1)[1]
    assert API_KEY not in done.stdout

    with keyed_server.client() as client:
        listed = client.get("/api/v1/traces").json()
        assert trace_id in [t["trace_id"] for t in listed["traces"]]
        stored = client.get(f"/api/v1/traces/{trace_id}").json()
        # Spans of all three agents arrived (the server converts them once the trace is quiet).
        assert stored["span_count"] >= 9
        page = client.get(f"/ui/traces/{trace_id}")
    assert page.status_code == 200 and trace_id in page.text


def test_to_with_a_wrong_or_missing_key_says_so_without_printing_it(
    tmp_path: Path, keyed_server: InProcessServer
) -> None:
    wrong = _demo("--to", keyed_server.url, "--api-key", "not-the-key", tmp_path=tmp_path)
    assert wrong.returncode == 2
    assert wrong.stderr.splitlines() == [
        f"tracejudge demo: the tracejudge server at {keyed_server.url} refused the API key "
        "given by --api-key (or TRACEJUDGE_API_KEY): pass one of the server's keys"
    ]
    assert "not-the-key" not in wrong.stdout + wrong.stderr
    missing = _demo("--to", keyed_server.url, tmp_path=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        f"tracejudge demo: the tracejudge server at {keyed_server.url} needs an API key: "
        "pass --api-key KEY or set TRACEJUDGE_API_KEY"
    ]


def test_to_an_unreachable_server_names_the_url_and_the_fix(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = _demo("--to", url, tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"tracejudge demo: no tracejudge server at {url} (connection refused): start one "
        "with `tracejudge serve` (or `tracejudge demo --serve`) or correct --to"
    ]
    assert done.stdout == ""
    bad = _demo("--to", f"{url}/v1/traces", tmp_path=tmp_path)
    assert bad.returncode == 2
    assert "without /v1/traces" in bad.stderr and len(bad.stderr.splitlines()) == 1
