"""The servers of the tests, on loopback: `InProcessServer` (uvicorn in a thread of the test
process, what most tests need) and `ServerProcess` (`python -m tracejudge.server`, for tests
of the process itself: signals, `kill -9`, its command line, its first line, its limits).
Both take the same arguments and answer the same attributes (`url`, `port`, `db`,
`headers`, `client()`, `start()`, `stop()`)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from tests.server.postgres import free_port
from tracejudge.evaluation import build_judge
from tracejudge.server.app import judge_settings  # imported with the tests, not in one's call
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import parse_config
from tracejudge.server.main import startup_line
from tracejudge.testing import Reply, ScriptedLLMServer

#: The key the test servers require.
API_KEY = "test-server-key"
#: The quiet period after a trace's last span before it is scored, in the tests: a setting,
#: kept short (the scoring is polled for, never waited out).
QUIET_SECONDS = "0.2"


def verdict(score: int = 8, explanation: str = "Looks right.") -> Reply:
    """A judge reply: a Reward criterion's verdict."""
    return Reply.text(json.dumps({"explanation": explanation, "applicable": True, "score": score}))


def server_env() -> dict[str, str]:
    """The environment without the developer's keys or server settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TRACEJUDGE_", "OPENAI_", "ANTHROPIC_", "COMPOSO_", "OTEL_"))
    }
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


def server_argv(
    db: str, *, port: int, api_key: str | None, judge: ScriptedLLMServer | None
) -> list[str]:
    """The flags every test server starts with (`args` follow them, and win)."""
    argv = ["--port", str(port), "--db", db, "--poll-seconds", "0.1", "--log-level", "warning"]
    if api_key:
        # the flag that lets a test give its throwaway key on the command line
        argv += ["--api-key", api_key, "--insecure-key-on-command-line"]
    if judge is not None:
        argv += ["--judge", "openai:scripted-model", "--judge-base-url", judge.base_url]
    return argv


class InProcessServer:
    """The server's app under uvicorn in a thread of this process (`BackgroundServer`),
    configured from the same flags as `ServerProcess`; starts in a fraction of a second.

    The judge is the configured one, built with the key a `ServerProcess` gets from its
    environment; without `judge` or `--judge` only checks run (as in a clean environment).
    `log`, when given, receives the server's log lines (WARNING and up) while it runs.
    """

    def __init__(
        self,
        db: str,
        *,
        judge: ScriptedLLMServer | None = None,
        args: Sequence[str] = (),
        api_key: str | None = API_KEY,
        log: Path | None = None,
    ) -> None:
        self.db = db
        self.judge = judge
        self.args = list(args)
        self.api_key = api_key
        self.log = log
        self.port = 0
        self.url = ""
        #: The line `tracejudge serve` prints first (where, with what judge, what access).
        self.first_line = ""
        self._background: BackgroundServer | None = None
        self._handler: logging.Handler | None = None

    @property
    def headers(self) -> dict[str, str]:
        return {"API-Key": self.api_key} if self.api_key else {}

    def start(self) -> InProcessServer:
        argv = server_argv(self.db, port=0, api_key=self.api_key, judge=self.judge)
        config = parse_config(argv + self.args, {})
        judge = None
        if config.judge is not None:
            settings = dataclasses.replace(judge_settings(config), api_key="judge-provider-key")
            judge = build_judge(settings)
        if self.log is not None:
            self._handler = logging.FileHandler(self.log)
            self._handler.setLevel(logging.WARNING)
            logging.getLogger("tracejudge").addHandler(self._handler)
        self._background = BackgroundServer(config, judge=judge, checks_only=judge is None)
        self._background.start()
        self.port = self._background.port
        self.url = self._background.url
        state = self._background.app.state
        listening = dataclasses.replace(config, port=self.port)
        self.first_line = startup_line(listening, state.judge_label, state.text_criteria)
        return self

    def stop(self) -> None:
        if self._background is not None:
            self._background.stop()
            self._background = None
        if self._handler is not None:
            logging.getLogger("tracejudge").removeHandler(self._handler)
            self._handler.close()
            self._handler = None

    def client(self, **options: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=30, **options)


class ServerProcess:
    """One server process; `start()` waits until /health answers."""

    def __init__(
        self,
        db: str,
        *,
        judge: ScriptedLLMServer | None = None,
        args: Sequence[str] = (),
        api_key: str | None = API_KEY,
        port: int | None = None,
        log: Path | None = None,
        open_files: int | None = None,
    ) -> None:
        self.db = db
        #: The process's open-file limit (soft and hard), None: inherited.
        self.open_files = open_files
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.judge = judge
        self.args = list(args)
        self.api_key = api_key
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.first_line = ""

    @property
    def headers(self) -> dict[str, str]:
        return {"API-Key": self.api_key} if self.api_key else {}

    def command(self) -> list[str]:
        argv = server_argv(self.db, port=self.port, api_key=self.api_key, judge=self.judge)
        return [sys.executable, "-m", "tracejudge.server", *argv, *self.args]

    def start(self, timeout: float = 30.0) -> ServerProcess:
        env = server_env()
        if self.judge is not None:
            env["OPENAI_API_KEY"] = "judge-provider-key"
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            self.command(),
            env=env,
            stdout=subprocess.PIPE,
            stderr=out,
            preexec_fn=self._limit_files if self.open_files else None,
        )
        assert self.process.stdout is not None
        self.first_line = self.process.stdout.readline().decode()
        deadline = time.monotonic() + timeout
        pause = 0.01  # polled quickly at first, as `wait_for` does
        # one client for every poll: each new one would load the CA bundle again
        with httpx.Client(timeout=1) as http:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the server exited with {self.process.returncode}")
                try:
                    if http.get(f"{self.url}/health").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                time.sleep(pause)
                pause = min(pause * 1.5, 0.1)
        raise RuntimeError("the server did not start in time")

    def _limit_files(self) -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))

    def kill(self) -> None:
        """SIGKILL: no shutdown, as a crash or an OOM kill."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def client(self, **options: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=30, **options)


def wait_for(predicate: Any, timeout: float = 20.0, interval: float = 0.1) -> Any:
    """Poll until `predicate()` is truthy; returns its value. Polls at once, then every
    10 ms, backing off to every `interval` seconds: a quick condition is seen quickly."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(min(pause, interval))
        pause *= 1.5
