"""A real Ray cluster on loopback for the bulk tests: a head node and one worker node,
each a `ray start` of its own (one CPU each), with token authentication, started once per
module and stopped by killing exactly its own processes (never `ray stop`, which stops
every cluster of the machine). Drivers run as processes of their own with the cluster's
environment (`RayCluster.env`), as a user's `tracejudge score --ray` does: Ray reads its
authentication settings when it is imported."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray extra: pip install -e '.[ray]'")

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class RayCluster:
    address: str
    temp_dir: str
    env: dict[str, str]

    def nodes_alive(self) -> int:
        done = subprocess.run(
            [sys.executable, "-c", _COUNT_NODES, self.address],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )
        return int(done.stdout.strip() or 0)


_COUNT_NODES = """
import sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
print(sum(1 for n in ray.nodes() if n["Alive"]))
"""


def _ray(env: dict[str, str], *args: str) -> None:
    ray_bin = str(Path(sys.executable).with_name("ray"))
    done = subprocess.run([ray_bin, *args], capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr


def _own_processes(temp_dir: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if temp_dir.encode() in command:
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    # Ray's sockets live under the temp dir: keep its path short (AF_UNIX's 107 bytes)
    temp_dir = tempfile.mkdtemp(prefix="tjray", dir="/tmp")
    port = _free_port()
    # token authentication, as a cluster on a network should run: every node and the
    # driver share the token
    token = secrets.token_hex(16)
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "RAY_USAGE_STATS_ENABLED": "0",
        # what a judge's key is on a real cluster: in the workers' environment
        "OPENAI_API_KEY": "scripted",
    }
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    try:
        _ray(
            env,
            "start",
            "--head",
            "--port",
            str(port),
            "--include-dashboard=false",
            "--temp-dir",
            temp_dir,
            *common,
        )
        _ray(env, "start", "--address", f"127.0.0.1:{port}", *common)
        cluster = RayCluster(f"127.0.0.1:{port}", temp_dir, env)
        deadline = time.monotonic() + 120
        while cluster.nodes_alive() < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert cluster.nodes_alive() == 2
        yield cluster
    finally:
        for pid in _own_processes(temp_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(temp_dir, ignore_errors=True)
