"""A bounded load run of the tracejudge server on loopback.

Starts `python -m tracejudge.server` on a fresh SQLite file (or `--db postgresql://...`)
with a ScriptedLLMServer as a zero-delay judge, then, each for `--seconds`:

1. `POST /api/v1/evals/reward` (one criterion, judged) from `--concurrency` clients:
   requests per second, and latency percentiles.
2. `POST /v1/traces` (OTLP protobuf, `--spans` spans per request, a new trace per
   request) from the same number of clients: requests and spans per second. The quiet
   period is an hour so that scoring does not run during the measurement: this is the
   intake alone (decode, split by trace, one transaction).

    python benchmarks/server_load.py [--seconds 10] [--concurrency 16] [--spans 50]

Both the load generator and the server run on this machine, and so does the judge:
the figures are a floor for the server, not a ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.server.harness import ServerProcess, verdict  # noqa: E402

from tracejudge.testing import ScriptedLLMServer  # noqa: E402

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


async def drive(url: str, headers: dict[str, str], concurrency: int, seconds: float, make_request):
    """Send requests from `concurrency` clients for `seconds`; (count, errors, latencies)."""
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    counter = iter(range(1, 10**9))

    async def client() -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
            while time.monotonic() < deadline:
                start = time.perf_counter()
                response = await make_request(http, next(counter))
                latencies.append(time.perf_counter() - start)
                if response.status_code >= 300:
                    errors += 1

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return len(latencies), errors, latencies


def report(label: str, count: int, errors: int, latencies: list[float], seconds: float) -> None:
    ordered = sorted(latencies) or [0.0]
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    print(
        f"{label}: {count / seconds:,.0f} requests/s ({count} in {seconds:g} s, {errors} errors), "
        f"latency p50 {p50:.1f} ms, p99 {p99:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--spans", type=int, default=50)
    parser.add_argument("--db", default=None, help="default: a SQLite file in a temporary folder")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="tracejudge-load-")
    db = args.db or os.path.join(folder, "load.db")
    with ScriptedLLMServer(default=verdict()) as judge:
        server = ServerProcess(
            db,
            judge=judge,
            args=["--rate-limit", "0", "--trace-quiet-seconds", "3600", "--log-level", "error"],
        ).start()
        try:
            print(server.first_line.strip())

            async def reward(http: httpx.AsyncClient, n: int) -> httpx.Response:
                body = {"messages": MESSAGES, "evaluation_criteria": "Reward correct answers"}
                return await http.post("/api/v1/evals/reward", json=body)

            count, errors, latencies = asyncio.run(
                drive(server.url, server.headers, args.concurrency, args.seconds, reward)
            )
            report("POST /api/v1/evals/reward", count, errors, latencies, args.seconds)
            bodies = [otlp_request(args.spans, seed) for seed in range(1, 257)]

            async def ingest(http: httpx.AsyncClient, n: int) -> httpx.Response:
                body = bodies[n % len(bodies)]
                headers = {"Content-Type": "application/x-protobuf"}
                return await http.post("/v1/traces", content=body, headers=headers)

            count, errors, latencies = asyncio.run(
                drive(server.url, server.headers, args.concurrency, args.seconds, ingest)
            )
            report(
                f"POST /v1/traces ({args.spans} spans each)", count, errors, latencies, args.seconds
            )
            print(f"ingest: {count * args.spans / args.seconds:,.0f} spans/s")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
