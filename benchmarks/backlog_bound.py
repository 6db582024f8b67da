"""The intake's backlog bound under more uploads than scoring keeps up with (issue #32,
item 6).

A real server (`python -m tracejudge.server`, SQLite, checks only, no request rate
limit) with `--max-backlog-traces` (default here 500) and `--trace-quiet-seconds 5`, so
that every trace waits at least 5 s to be scored, takes uploads of one 10-span trace each
from `--clients` threads for `--seconds`. A sampler reads `/ready` every 0.2 s.

Printed: uploads accepted and refused (503, with `Retry-After`), the highest backlog
`/ready` reported against the bound, and the database's size.

    python benchmarks/backlog_bound.py [--bound 500] [--clients 8] [--seconds 15]

Targets: the backlog never above the bound plus the uploads in flight (`--clients`);
every refusal a 503 with Retry-After (before: no refusal, the backlog grew without bound).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.server.harness import ServerProcess  # noqa: E402
from tests.server.hostile import otlp_protobuf  # noqa: E402

PROTOBUF = {"Content-Type": "application/x-protobuf"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bound", type=int, default=500)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    options = parser.parse_args()
    counts = {"accepted": 0, "refused": 0, "without_retry_after": 0, "other": 0}
    peak = 0
    lock = threading.Lock()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "db"
        args = ["--max-backlog-traces", str(options.bound), "--trace-quiet-seconds", "5"]
        args += ["--rate-limit", "0"]
        server = ServerProcess(str(db), args=args, log=Path(tmp) / "log").start()
        done = threading.Event()

        def upload() -> None:
            with server.client() as http:
                while not done.is_set():
                    answer = http.post("/v1/traces", content=otlp_protobuf(10), headers=PROTOBUF)
                    with lock:
                        if answer.status_code == 200:
                            counts["accepted"] += 1
                        elif answer.status_code == 503:
                            counts["refused"] += 1
                            if "retry-after" not in answer.headers:
                                counts["without_retry_after"] += 1
                        else:
                            counts["other"] += 1

        def sample() -> None:
            nonlocal peak
            with httpx.Client(base_url=server.url, timeout=10) as http:
                while not done.is_set():
                    waiting = http.get("/ready").json()["backlog"]["traces"] or 0
                    peak = max(peak, waiting)
                    time.sleep(0.2)

        threads = [threading.Thread(target=upload) for _ in range(options.clients)]
        threads.append(threading.Thread(target=sample))
        try:
            for thread in threads:
                thread.start()
            time.sleep(options.seconds)
        finally:
            done.set()
            for thread in threads:
                thread.join()
            size = sum(f.stat().st_size for f in Path(tmp).glob("db*"))
            server.stop()
    print(
        f"{options.clients} clients for {options.seconds:g} s, --max-backlog-traces "
        f"{options.bound}: {counts['accepted']:,} uploads accepted, {counts['refused']:,} "
        f"refused with 503 ({counts['without_retry_after']} without Retry-After), "
        f"{counts['other']} other answers"
    )
    print(f"highest backlog /ready reported: {peak:,} traces; database {size / 1e6:.1f} MB")
    met = (
        peak <= options.bound + options.clients
        and counts["refused"] > 0
        and counts["without_retry_after"] == 0
        and counts["other"] == 0
    )
    print(
        f"target: backlog <= {options.bound + options.clients:,} (bound + uploads in flight), "
        f"every refusal a 503 with Retry-After: {'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
