"""Fixtures of the server tests: a store of each kind, a PostgreSQL cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.harness import ServerProcess, verdict
from tests.server.postgres import Cluster, postgres_cluster
from tracejudge.testing import ScriptedLLMServer


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    with postgres_cluster() as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A fresh database of each kind: a SQLite file, a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "tracejudge.db")
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return cluster.database()


@pytest.fixture
def judge_model() -> Iterator[ScriptedLLMServer]:
    """The judge model behind the server: 8/10 unless a test scripts otherwise."""
    with ScriptedLLMServer(default=verdict()) as model:
        yield model


@pytest.fixture
def server(db_url: str, judge_model: ScriptedLLMServer, tmp_path) -> Iterator[ServerProcess]:
    """A server on each store, judged by `judge_model`, requiring `API_KEY`."""
    process = ServerProcess(
        db_url, judge=judge_model, args=["--trace-quiet-seconds", "0.5"], log=tmp_path / "log"
    )
    process.start()
    yield process
    process.stop()
