"""A throwaway PostgreSQL cluster for the server tests: initdb in a temporary folder, on a
free loopback port, as a non-root user (PostgreSQL refuses to run as root).

Skips (with the reason) when PostgreSQL's binaries or psycopg are missing; on Debian:
`apt-get install -y postgresql` (the binaries land in /usr/lib/postgresql/<version>/bin).
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A running cluster; `database()` makes a fresh, empty database and returns its DSN;
    `stop()` and `start()` take it down and bring it back (an outage, a restart)."""

    def __init__(self, port: int, control: list[str] | None = None) -> None:
        self.port = port
        self._names = itertools.count(1)
        #: pg_ctl as the cluster's user, with its data directory and start options.
        self._control = control or []

    def stop(self) -> None:
        """`pg_ctl stop -m fast`: connections are cut, the server shuts down cleanly."""
        subprocess.run(
            [*self._control, "-m", "fast", "-w", "stop"], check=True, capture_output=True
        )

    def start(self) -> None:
        subprocess.run([*self._control, "-w", "start"], check=True, capture_output=True)

    def running(self) -> bool:
        return subprocess.run([*self._control, "status"], capture_output=True).returncode == 0

    def database(self) -> str:
        import psycopg

        name = f"tracejudge_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"


@contextmanager
def postgres_cluster(folder: str | None = None) -> Iterator[Cluster]:
    """A throwaway cluster, its files in a new temporary folder (inside `folder` when
    given: a small file system, say)."""
    pytest.importorskip(
        "psycopg", reason="psycopg is not installed (pip install 'psycopg[binary]')"
    )
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL's initdb/pg_ctl are not installed (apt-get install -y postgresql)")
    as_user: list[str] = []
    folder = tempfile.mkdtemp(prefix="tracejudge-pg-", dir=folder)
    if os.geteuid() == 0:
        # PostgreSQL will not run as root: run it as the packaged `postgres` user.
        try:
            import pwd

            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` user to run PostgreSQL as")
        os.chown(folder, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(folder, "data")
    port = free_port()
    # --no-sync: a throwaway cluster needs no fsync of its files (initdb's sync is most of
    # its time: about 5 s against under 2 s on this machine's disk)
    subprocess.run(
        [*as_user, initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
    )
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    )
    control = [*as_user, pg_ctl, "-D", data, "-o", options, "-l", os.path.join(folder, "log")]
    subprocess.run([*control, "-w", "start"], check=True, capture_output=True)
    try:
        yield Cluster(port, control)
    finally:
        subprocess.run(
            [*as_user, pg_ctl, "-D", data, "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(folder, ignore_errors=True)
