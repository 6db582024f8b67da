"""A bounded load run of the tracejudge server on loopback, SQLite and PostgreSQL.

For each store, starts `python -m tracejudge.server` on a fresh database (a SQLite file;
a throwaway PostgreSQL 15 cluster made with initdb, as tests/server does) with a
zero-delay judge (a ScriptedLLMServer in its own process). This process is the load
generator: `--concurrency` clients on loopback, each phase bounded by `--seconds` and by
`--max-requests`:

1. `GET /health`: the floor of the HTTP stack (uvicorn + starlette + auth) on this machine.
2. `POST /api/v1/evals/reward` (one criterion, judged): requests per second, latency
   percentiles, and the ratio to the floor.
3. `POST /v1/traces` (OTLP protobuf, `--spans` spans per request, a new trace per
   request): requests and spans per second. The quiet period is an hour so that scoring
   does not run during the measurement: this is the intake alone (decode, split by
   trace, one transaction).

    python benchmarks/server_load.py [--seconds 8] [--max-requests 20000]
        [--concurrency 16] [--spans 50] [--db sqlite,postgres | --db postgresql://...]

The load generator, the server and the judge share this machine's cores: the figures
are a floor for the server, not a ceiling. PostgreSQL is skipped, saying why, when its
binaries or psycopg are missing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from _judge import VERDICT, JudgeProcess

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.server.harness import ServerProcess  # noqa: E402
from tests.server.postgres import postgres_cluster  # noqa: E402

MESSAGES = [
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Paris."},
]


def otlp_request(spans: int, seed: int) -> bytes:
    """One ExportTraceServiceRequest: a trace with an agent span and `spans - 1` model calls."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    def attr(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    trace_id = seed.to_bytes(16, "big")
    root_id = (seed * 1000 + 1).to_bytes(8, "big")
    now = time.time_ns()
    items = [
        Span(
            trace_id=trace_id,
            span_id=root_id,
            name="invoke_agent orchestrator",
            start_time_unix_nano=now,
            end_time_unix_nano=now + 10**9,
            attributes=[
                attr("gen_ai.operation.name", "invoke_agent"),
                attr("gen_ai.agent.name", "orchestrator"),
            ],
        )
    ]
    for i in range(spans - 1):
        items.append(
            Span(
                trace_id=trace_id,
                span_id=(seed * 1000 + 2 + i).to_bytes(8, "big"),
                parent_span_id=root_id,
                name="chat gpt-4.1-mini",
                start_time_unix_nano=now + i,
                end_time_unix_nano=now + i + 1000,
                attributes=[
                    attr("gen_ai.operation.name", "chat"),
                    attr("gen_ai.request.model", "gpt-4.1-mini"),
                    attr(
                        "gen_ai.input.messages",
                        json.dumps(
                            [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
                        ),
                    ),
                    attr(
                        "gen_ai.output.messages",
                        json.dumps(
                            [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}]
                        ),
                    ),
                ],
            )
        )
    request = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=items)])]
    )
    return request.SerializeToString()


async def drive(
    url: str,
    headers: dict[str, str],
    concurrency: int,
    seconds: float,
    max_requests: int,
    make_request,
):
    """Send requests from `concurrency` clients until `seconds` pass or `max_requests`
    were sent; (count, errors, latencies, elapsed seconds)."""
    latencies: list[float] = []
    errors = 0
    start = time.monotonic()
    deadline = start + seconds
    counter = iter(range(1, max_requests + 1))

    async def client() -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
            for n in counter:
                if time.monotonic() >= deadline:
                    break
                begin = time.perf_counter()
                response = await make_request(http, n)
                latencies.append(time.perf_counter() - begin)
                if response.status_code >= 300:
                    errors += 1

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return len(latencies), errors, latencies, time.monotonic() - start


def report(label: str, count: int, errors: int, latencies: list[float], seconds: float) -> float:
    """Print one figure line; returns requests per second."""
    ordered = sorted(latencies) or [0.0]
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    rate = count / seconds
    print(
        f"{label}: {rate:,.0f} requests/s ({count} in {seconds:.1f} s, {errors} errors), "
        f"latency p50 {p50:.1f} ms, p99 {p99:.1f} ms"
    )
    return rate


@contextlib.contextmanager
def database(kind: str, folder: str) -> Iterator[str | None]:
    """A fresh database URL for `kind` (sqlite, postgres, or a postgresql:// URL); None,
    after saying why, when PostgreSQL cannot run here."""
    if kind == "sqlite":
        yield os.path.join(folder, "load.db")
    elif kind.startswith("postgresql://"):
        yield kind
    else:
        import pytest  # postgres_cluster skips, as in the tests, when it cannot run

        try:
            with postgres_cluster() as cluster:
                yield cluster.database()
        except pytest.skip.Exception as why:
            print(f"postgres: skipped ({why})")
            yield None


def run_one(db: str, label: str, judge: JudgeProcess, args: argparse.Namespace) -> None:
    server = ServerProcess(
        db,
        judge=judge,  # type: ignore[arg-type]  # any object with base_url
        args=["--rate-limit", "0", "--trace-quiet-seconds", "3600", "--log-level", "error"],
    ).start()
    limits = (args.concurrency, args.seconds, args.max_requests)
    try:

        async def health(http: httpx.AsyncClient, n: int) -> httpx.Response:
            return await http.get("/health")

        async def reward(http: httpx.AsyncClient, n: int) -> httpx.Response:
            body = {"messages": MESSAGES, "evaluation_criteria": f"Reward correct answers {n}"}
            return await http.post("/api/v1/evals/reward", json=body)

        bodies = [otlp_request(args.spans, seed) for seed in range(1, 257)]

        async def ingest(http: httpx.AsyncClient, n: int) -> httpx.Response:
            body = bodies[n % len(bodies)]
            headers = {"Content-Type": "application/x-protobuf"}
            return await http.post("/v1/traces", content=body, headers=headers)

        count, errors, latencies, took = asyncio.run(
            drive(server.url, server.headers, *limits, health)
        )
        floor = report(f"{label} GET /health (floor)", count, errors, latencies, took)
        count, errors, latencies, took = asyncio.run(
            drive(server.url, server.headers, *limits, reward)
        )
        rate = report(f"{label} POST /api/v1/evals/reward", count, errors, latencies, took)
        print(f"{label} reward: {rate / floor:.2f}x the /health floor")
        count, errors, latencies, took = asyncio.run(
            drive(server.url, server.headers, *limits, ingest)
        )
        rate = report(
            f"{label} POST /v1/traces ({args.spans} spans each)", count, errors, latencies, took
        )
        print(
            f"{label} ingest: {rate * args.spans:,.0f} spans/s, "
            f"{rate / floor:.2f}x the /health floor in requests"
        )
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="per phase, at most")
    parser.add_argument("--max-requests", type=int, default=20_000, help="per phase, at most")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--spans", type=int, default=50)
    parser.add_argument("--db", default="sqlite,postgres")
    args = parser.parse_args()
    started = time.perf_counter()
    print(
        f"{args.concurrency} clients, each phase at most {args.seconds:g} s and "
        f"{args.max_requests} requests"
    )
    folder = tempfile.mkdtemp(prefix="tracejudge-load-")
    with JudgeProcess(0.0, verdict=VERDICT) as judge:
        for kind in args.db.split(","):
            label = "postgres" if kind.startswith("postgres") else kind
            with database(kind.strip(), folder) as db:
                if db is not None:
                    run_one(db, label, judge, args)
    print(f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
