"""A traced program exits within seconds when its OTLP collector is dead: real programs in
subprocesses, the real OTLP exporter, a closed port and a socket that never answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracejudge.tracing._export import DEFAULT_REQUEST_TIMEOUT, otlp_processor

pytestmark = pytest.mark.heavy("a traced program as a process, exiting")

REPO = Path(__file__).resolve().parents[2]

# A program that traces 3,000 spans (six batches: the SDK's defaults would make it wait 10 s
# per batch, up to its 30 s shutdown limit) and ends.
PROGRAM = """
from opentelemetry import trace
from tracejudge import ComposoTracer

ComposoTracer.init(otlp=True)
tracer = trace.get_tracer("dead-collector-test")
for n in range(3000):
    with tracer.start_as_current_span(f"step-{n}"):
        pass
print("work done", flush=True)
"""


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers a byte."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def _run(port: int, **variables: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", **variables)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60
    )
    return time.perf_counter() - started, done


def _our_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("tracejudge:")]


@pytest.mark.parametrize("collector", ["closed port", "never answers"])
def test_the_program_exits_within_seconds_and_counts_what_was_lost(
    collector: str, silent_port: int
) -> None:
    port = _closed_port() if collector == "closed port" else silent_port
    took, done = _run(port)
    assert done.returncode == 0, done.stderr
    assert "work done" in done.stdout
    # Interpreter start-up included; the SDK's defaults took 8-30 s here.
    assert took < 8.0, f"exit took {took:.1f}s"
    warnings = _our_warnings(done.stderr)
    assert len(warnings) == 1, done.stderr
    assert "3000 of 3000 spans could not be exported" in warnings[0]
    assert f"127.0.0.1:{port}" in warnings[0]


def test_the_standard_shutdown_variable_wins(silent_port: int) -> None:
    # Requests may take 20 s, but the processor's export timeout says 4 s in all.
    took, done = _run(silent_port, OTEL_EXPORTER_OTLP_TIMEOUT="20", OTEL_BSP_EXPORT_TIMEOUT="4000")
    assert done.returncode == 0, done.stderr
    assert 3.5 < took < 12.0, f"exit took {took:.1f}s"
    assert "within 4s" in _our_warnings(done.stderr)[0]


@pytest.mark.parametrize(
    ("variables", "shutdown_timeout"),
    [
        ({}, DEFAULT_REQUEST_TIMEOUT + 1),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "7"}, 8.0),
        ({"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "0.5"}, 1.5),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "7", "OTEL_BSP_EXPORT_TIMEOUT": "1500"}, 1.5),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": " ", "OTEL_BSP_EXPORT_TIMEOUT": "soon"}, 3.0),
    ],
)
def test_the_bounds_follow_the_standard_variables(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], shutdown_timeout: float
) -> None:
    for name in (
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_BSP_EXPORT_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    processor = otlp_processor()
    try:
        assert processor.shutdown_timeout == pytest.approx(shutdown_timeout)
    finally:
        processor.shutdown()
