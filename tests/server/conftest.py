"""Fixtures of the server tests. Which one to use:

- `server`: a server on a fresh SQLite database, judged by `judge_model`, requiring
  `API_KEY`: an `InProcessServer` (uvicorn in a thread of the test process, started in a
  fraction of a second). Most tests want this one. For both stores, where the dialect is
  what is tested: `@pytest.mark.parametrize("db_url", ["sqlite", "postgres"],
  indirect=True)` (without it, a test using `server` runs on SQLite only).
- `start_server(db, **options)`: more servers (other flags, no key, several on one
  database), stopped after the test; same arguments as `ServerProcess`.
- `ServerProcess` (harness.py): only where the process itself is what is tested:
  signals, `kill -9` and restarts, the key kept off /proc/PID/cmdline, its first line,
  its open-file limit, the `serve` command. Mark such a test `@pytest.mark.heavy("a
  server process")` when its call takes over 3 s (see tests/speed.py).
- `db_url`: a fresh database of each kind (SQLite file, PostgreSQL database), for the
  store's contract tests; `pg_cluster.database()` for a PostgreSQL one only. One
  PostgreSQL cluster runs per session (per xdist worker); every test gets its own
  database in it, never its own cluster. A test that needs a cluster of its own (stopping
  it, filling its disk) starts one with `postgres_cluster()` and carries
  `@pytest.mark.xdist_group("postgres-own")` plus `heavy`.
- Times are settings: `harness.QUIET_SECONDS` for a trace's quiet period; poll for a condition
  with `wait_for`, never `time.sleep` for it.

Tests that must not run side by side with each other (one port, one model server, a
CPU-bound ratio) carry the same `@pytest.mark.xdist_group("name")`: under
`--dist loadgroup` a group runs on one worker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.harness import QUIET_SECONDS, InProcessServer, ServerProcess, verdict
from tests.server.postgres import Cluster, postgres_cluster
from tracejudge.testing import ScriptedLLMServer


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One PostgreSQL cluster per session (per xdist worker)."""
    with postgres_cluster() as cluster:
        yield cluster


def _database(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> str:
    if kind == "sqlite":
        return str(tmp_path / "tracejudge.db")
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return cluster.database()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database of each kind: a SQLite file, a PostgreSQL database."""
    return _database(request, request.param, tmp_path)


@pytest.hookimpl(tryfirst=True)  # before the fixture's own params parametrize it
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test of the `server` fixture runs on SQLite only unless it parametrizes `db_url`
    itself: the store's dialect is tested by the store's contract tests."""
    if "server" not in metafunc.fixturenames or "db_url" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        if "db_url" in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return
    # as a mark, which the fixture's own params then leave alone
    metafunc.definition.add_marker(pytest.mark.parametrize("db_url", ["sqlite"], indirect=True))


@pytest.fixture
def judge_model() -> Iterator[ScriptedLLMServer]:
    """The judge model behind the server: 8/10 unless a test scripts otherwise."""
    with ScriptedLLMServer(default=verdict()) as model:
        yield model


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., InProcessServer]]:
    """`start_server(db, judge=..., args=[...], api_key=...)`: an `InProcessServer`,
    started, stopped after the test."""
    started: list[InProcessServer] = []

    def start(db: str, **options: Any) -> InProcessServer:
        options.setdefault("log", tmp_path / "log")
        server = InProcessServer(db, **options)
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture
def server(
    db_url: str, judge_model: ScriptedLLMServer, start_server: Callable[..., InProcessServer]
) -> InProcessServer:
    """A server on a fresh database, judged by `judge_model`, requiring `API_KEY`."""
    return start_server(db_url, judge=judge_model, args=["--trace-quiet-seconds", QUIET_SECONDS])


__all__ = ["QUIET_SECONDS", "ServerProcess"]
