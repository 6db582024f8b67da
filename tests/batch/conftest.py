"""Helpers of the batch tests: run `tracejudge` in a subprocess, make inputs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.once import once_per_run

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def load_benchmark() -> ModuleType:
    """benchmarks/score_memory.py, whose input generator the tests share."""
    spec = importlib.util.spec_from_file_location(
        "score_memory", ROOT / "benchmarks" / "score_memory.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def offline_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TRACEJUDGE_JUDGE", "COMPOSO_API_KEY"):
        env.pop(name, None)
    return env


def tracejudge(
    *arguments: str, stdin: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m tracejudge ARGUMENTS` with no judge configured; output as text."""
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", *arguments],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=offline_env(),
        timeout=timeout,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


@pytest.fixture(scope="session")
def demo_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trace the offline demo's tracer records (three agents, two planted faults), made
    once for the whole run."""

    def record(folder: Path) -> None:
        path = folder / "demo-trace.json"
        done = tracejudge("demo", "--json", "--save-trace", str(path))  # --json: no report
        assert done.returncode == 0, done.stderr

    return once_per_run(tmp_path_factory, "demo-trace", record) / "demo-trace.json"
