"""Fixtures of the server tests: a store of each kind, a PostgreSQL cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.postgres import Cluster, postgres_cluster


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
