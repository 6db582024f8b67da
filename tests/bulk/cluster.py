"""A real Ray cluster on this machine, on loopback: a head node and N worker nodes, each a
`ray start` of its own, with token authentication, stopped by killing exactly its own
processes (never `ray stop`, which stops every cluster of the machine). Drivers run as
processes of their own with the cluster's environment (`RayCluster.env`), as a user's
`tracejudge score --ray` does: Ray reads its authentication settings when it is imported.
Used by tests/bulk and benchmarks/bulk_ray.py."""

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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_COUNT_NODES = """
import sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
print(sum(1 for n in ray.nodes() if n["Alive"]))
"""


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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ray(env: dict[str, str], *args: str) -> None:
    ray_bin = str(Path(sys.executable).with_name("ray"))
    done = subprocess.run([ray_bin, *args], capture_output=True, text=True, env=env, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"ray {' '.join(args)} failed:\n{done.stdout}{done.stderr}")


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


@contextmanager
def ray_cluster(
    worker_nodes: int = 1, *, head_cpus: int = 1, worker_cpus: int = 1, **env: str
) -> Iterator[RayCluster]:
    """A cluster of a head node and `worker_nodes` worker nodes; `env` goes into every
    node's environment (what a judge's key is on a real cluster)."""
    # Ray's sockets live under the temp dir: keep its path short (AF_UNIX's 107 bytes)
    temp_dir = tempfile.mkdtemp(prefix="tjray", dir="/tmp")
    port = _free_port()
    environment = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "RAY_USAGE_STATS_ENABLED": "0",
        **env,
    }
    common = ["--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    try:
        _ray(
            environment,
            "start",
            "--head",
            "--port",
            str(port),
            "--num-cpus",
            str(head_cpus),
            "--include-dashboard=false",
            "--temp-dir",
            temp_dir,
            *common,
        )
        for _ in range(worker_nodes):
            _ray(
                environment,
                "start",
                "--address",
                f"127.0.0.1:{port}",
                "--num-cpus",
                str(worker_cpus),
                *common,
            )
        cluster = RayCluster(f"127.0.0.1:{port}", temp_dir, environment)
        deadline = time.monotonic() + 120
        while cluster.nodes_alive() < worker_nodes + 1:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not reach {worker_nodes + 1} nodes")
            time.sleep(0.5)
        yield cluster
    finally:
        for pid in _own_processes(temp_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(temp_dir, ignore_errors=True)
