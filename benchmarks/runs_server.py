"""What storing a run on a `tracejudge serve` costs, and the comparison the server runs
(issue #34: runs on the server).

The adder agent of tests/experiments (the real openai client, traced, asking a
ScriptedLLMServer what N plus one is) is run over `--rows` rows with
`tracejudge.experiment`, scored with the exact `correct` comparison, three ways in this
process: into a directory (the baseline), to a server in this process (uvicorn on
loopback, SQLite in a temporary directory), and to both. Reported: each run's seconds and
its ratio to the directory run; then a comparison of two stored runs, asked of the server
(`GET /api/v1/runs/compare`) and computed locally (`compare_runs` on the same runs read
back), and their ratio.

    python benchmarks/runs_server.py [--rows 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.experiments.conftest, the agent

import httpx  # noqa: E402
from opentelemetry import trace as otel_trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from tests.experiments.conftest import adder_model, correct, make_task, rows  # noqa: E402

import tracejudge  # noqa: E402
from tracejudge.experiments import RunServer, compare_runs  # noqa: E402
from tracejudge.server.background import BackgroundServer  # noqa: E402
from tracejudge.server.config import ServerConfig  # noqa: E402
from tracejudge.testing import ScriptedLLMServer  # noqa: E402
from tracejudge.tracing import ComposoTracer, Instruments  # noqa: E402


def timed(work: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The median seconds of `repeat` calls of `work`, and its last result."""
    seconds, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = work()
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each way (median)")
    args = parser.parse_args(argv)
    otel_trace.set_tracer_provider(TracerProvider())
    ComposoTracer.init(instruments=Instruments.OPENAI)
    with (
        tempfile.TemporaryDirectory() as scratch,
        ScriptedLLMServer(default=adder_model()) as agent,
        BackgroundServer(ServerConfig(port=0, db=f"{scratch}/runs.db"), checks_only=True) as srv,
    ):
        task, data = make_task(agent), rows(args.rows)
        count = iter(range(10**6))

        def run(**where: Any) -> Any:
            return tracejudge.experiment(data, task, [correct], concurrency=16, **where)

        def local() -> Any:
            return run(directory=Path(scratch) / f"run{next(count)}")

        def remote() -> Any:
            return run(to=srv.url)

        def both() -> Any:
            return run(to=srv.url, directory=Path(scratch) / f"run{next(count)}")

        run(directory=Path(scratch) / "warm")  # imports, connections, the first spans
        base, _ = timed(local, args.repeat)
        print(f"{args.rows} rows, median of {args.repeat} runs each:")
        print(f"  to a directory     {base:6.2f} s  1.00x")
        for label, work in (("to the server", remote), ("to both", both)):
            seconds, _ = timed(work, args.repeat)
            print(f"  {label:18} {seconds:6.2f} s  {seconds / base:.2f}x")
        listed = httpx.get(f"{srv.url}/api/v1/runs", params={"limit": 2}).json()["runs"]
        candidate, baseline = (r["id"] for r in listed)
        query = {"baseline": baseline, "candidate": candidate}
        on_server, answer = timed(
            lambda: httpx.get(f"{srv.url}/api/v1/runs/compare", params=query, timeout=120),
            args.repeat,
        )
        assert answer.status_code == 200, answer.text
        with RunServer(srv.url) as server:
            before, after = server.read(baseline), server.read(candidate)
        here, _ = timed(lambda: compare_runs(before, after), args.repeat)
        print(
            f"comparison of two stored runs: on the server {on_server * 1000:.0f} ms, "
            f"locally {here * 1000:.0f} ms ({on_server / here:.2f}x: reading the runs, "
            "the HTTP round trip)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
