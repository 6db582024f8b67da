"""The server as deployed (issue #36): N replicas over one PostgreSQL behind a loopback
load balancer (tests/server/balancer.py), a load generator sending OTLP through it, the
judge a ScriptedLLMServer answering after `--judge-latency` seconds.

1. Judge-bound scoring, 1 replica against 3 (each `--workers W --max-concurrency C`):
   traces scored per second from the first upload to the last trace scored. Target: 3
   replicas at least 2.5x one.
2. Evaluations per second per unit of judge concurrency (3 replicas): how close the
   replicas come to what the judge's concurrency allows (1 / latency).
3. Intake: spans accepted per second per replica (checks only, the judge out of the way),
   1 replica and 3.

    python benchmarks/topology.py [--traces 90] [--judge-latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.server.balancer import Balancer  # noqa: E402
from tests.server.harness import API_KEY, ServerProcess  # noqa: E402
from tests.server.postgres import postgres_cluster  # noqa: E402

from tracejudge.testing import Reply, ScriptedLLMServer  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "openllmetry.jsonl"
CRITERION = "Reward agents that stay on task"


def traces(count: int, offset: int) -> list[bytes]:
    """The recorded trace as `count` runs: each its own trace id and its own words (a run
    the judge has not seen, so no verdict comes from its cache)."""
    text = FIXTURE.read_text().splitlines()[0]
    out = []
    for n in range(offset, offset + count):
        document = json.loads(text)
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    span["traceId"] = f"{n:08x}" + span["traceId"][8:]
                    for attribute in span.get("attributes", []):
                        value = attribute["value"]
                        if attribute["key"] == "gen_ai.input.messages":
                            marked = f'"content": "(run {n}) '
                            value["stringValue"] = value["stringValue"].replace(
                                '"content": "', marked
                            )
        out.append(json.dumps(document).encode())
    return out


def spans_per_trace() -> int:
    document = json.loads(FIXTURE.read_text().splitlines()[0])
    return sum(len(s["spans"]) for r in document["resourceSpans"] for s in r["scopeSpans"])


def send(url: str, bodies: list[bytes], senders: int = 4) -> None:
    limits = httpx.Limits(max_keepalive_connections=0)
    headers = {"API-Key": API_KEY, "Content-Type": "application/json"}
    chunks = [bodies[i::senders] for i in range(senders)]

    def run(chunk: list[bytes]) -> None:
        with httpx.Client(base_url=url, headers=headers, limits=limits, timeout=60) as client:
            for body in chunk:
                while True:
                    try:
                        if client.post("/v1/traces", content=body).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    time.sleep(0.05)

    threads = [threading.Thread(target=run, args=(c,)) for c in chunks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def scored(url: str) -> int:
    answer = httpx.get(
        f"{url}/api/v1/traces",
        params={"status": "scored", "limit": 1},
        headers={"API-Key": API_KEY},
    )
    return int(answer.json()["total"])


def run(
    replicas: int,
    db: str,
    judge: ScriptedLLMServer | None,
    args: list[str],
    count: int,
    folder: Path,
) -> dict[str, float]:
    servers = [
        ServerProcess(db, judge=judge, args=args, log=folder / f"log-{replicas}-{i}")
        for i in range(replicas)
    ]
    for server in servers:
        server.start(timeout=60)
    try:
        with Balancer([("127.0.0.1", s.port) for s in servers]) as balancer:
            bodies = traces(count, 10_000 * replicas)
            started = time.monotonic()
            send(balancer.url, bodies)
            sent = time.monotonic() - started
            while scored(servers[0].url) < count:
                time.sleep(0.1)
            done = time.monotonic() - started
    finally:
        for server in servers:
            server.stop()
    return {"upload_seconds": sent, "scored_seconds": done}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=90)
    parser.add_argument("--judge-latency", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-concurrency", type=int, default=2)
    options = parser.parse_args()
    results: dict[str, Any] = {"load_at_start": os.getloadavg()[0], "cpus": os.cpu_count()}
    answer = {"explanation": "On task.", "applicable": True, "score": 8}
    with (
        tempfile.TemporaryDirectory() as work,
        postgres_cluster() as cluster,
        ScriptedLLMServer(
            default=Reply.text(json.dumps(answer), delay=options.judge_latency)
        ) as judge,
    ):
        folder = Path(work)
        criteria = folder / "criteria.txt"
        criteria.write_text(CRITERION + "\n")
        judged = ["--workers", str(options.workers), "--trace-quiet-seconds", "0.2"]
        judged += ["--max-concurrency", str(options.max_concurrency)]
        judged += ["--criteria-file", str(criteria)]
        for replicas in (1, 3):
            took = run(replicas, cluster.database(), judge, judged, options.traces, folder)
            calls = len(judge.requests)
            results[f"judged_{replicas}"] = {
                **took,
                "traces_per_second": options.traces / took["scored_seconds"],
            }
            results[f"judge_calls_{replicas}"] = calls - results.get("judge_calls_total", 0)
            results["judge_calls_total"] = calls
        # intake alone: checks only, no judge in the way
        checks_only = ["--workers", "1", "--trace-quiet-seconds", "30"]
        for replicas in (1, 3):
            took = run_intake(replicas, cluster.database(), checks_only, options.traces * 4, folder)
            results[f"intake_{replicas}"] = took
    one = results["judged_1"]["traces_per_second"]
    three = results["judged_3"]["traces_per_second"]
    results["judged_speedup_3_over_1"] = three / one
    concurrency = 3 * options.max_concurrency
    evaluations = results["judge_calls_3"] / results["judged_3"]["scored_seconds"]
    results["evaluations_per_second_per_judge_slot"] = evaluations / concurrency
    results["judge_slot_ceiling"] = 1 / options.judge_latency
    print(json.dumps(results, indent=2))


def run_intake(
    replicas: int, db: str, args: list[str], count: int, folder: Path
) -> dict[str, float]:
    servers = [
        ServerProcess(db, args=args, log=folder / f"intake-{replicas}-{i}") for i in range(replicas)
    ]
    for server in servers:
        server.start(timeout=60)
    try:
        with Balancer([("127.0.0.1", s.port) for s in servers]) as balancer:
            bodies = traces(count, 1_000_000 * replicas)
            started = time.monotonic()
            send(balancer.url, bodies, senders=8)
            seconds = time.monotonic() - started
    finally:
        for server in servers:
            server.stop()
    spans = count * spans_per_trace()
    return {
        "spans_per_second": spans / seconds,
        "spans_per_second_per_replica": spans / seconds / replicas,
    }


if __name__ == "__main__":
    main()
