"""A real server process on loopback: `python -m tracejudge.server` under uvicorn."""

from __future__ import annotations

import json
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
from tracejudge.testing import Reply, ScriptedLLMServer

#: The key the test servers require.
API_KEY = "test-server-key"


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
        command = [sys.executable, "-m", "tracejudge.server", "--port", str(self.port)]
        command += ["--db", self.db, "--poll-seconds", "0.1", "--log-level", "warning"]
        if self.api_key:
            command += ["--api-key", self.api_key, "--insecure-key-on-command-line"]
        if self.judge is not None:
            command += ["--judge", "openai:scripted-model", "--judge-base-url", self.judge.base_url]
        return command + self.args

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
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
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
    """Poll until `predicate()` is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(interval)
