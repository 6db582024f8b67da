"""`/health` while 1,000 connections trickle request bodies (issue #32, item 2).

A real server (`python -m tracejudge.server` under uvicorn, SQLite, an API key, no
request rate limit (so that every slow request reaches the intake), the default
`--max-connections` 1000, `--body-timeout-seconds` 30 and `--min-body-rate`
16384) gets `--slow` connections (1,050: past the cap), each sending an OTLP request
head that announces a 1 MB body and then a byte of it every half second: together they
hold every connection the server allows. Meanwhile a probe asks `/health` on a new
connection each time, as an orchestrator's liveness probe does. The baseline is the
same probe on the idle server, in the same run, first.

Printed: the share of probes answered 200 and their p50/worst time, idle and under the
slow bodies, and when the server closed the slow connections (408) after the deadline.

    python benchmarks/slow_bodies.py [--slow 1000] [--probes 40] [--store postgres]

`--store postgres` runs the server on a throwaway PostgreSQL cluster (Debian's, started
and removed by the benchmark) instead of a SQLite file.

Targets: every probe answered 200 while the slow bodies are open (before: none was, once
they filled the cap); their p50 under 100 ms; every slow connection closed within 10 s
of the body deadline (before: none was).
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.server.harness import API_KEY, ServerProcess  # noqa: E402

BODY_TIMEOUT_SECONDS = 30.0
TARGET_ANSWERED = 1.0
TARGET_P50_SECONDS = 0.100
TARGET_CLOSED_AFTER_DEADLINE_SECONDS = 10.0


def probe(url: str) -> float | None:
    """Seconds for one /health on a new connection; None when it failed."""
    host, port = url.removeprefix("http://").split(":")
    started = time.perf_counter()
    try:
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                b"GET /health HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode()
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    except OSError:
        return None
    return time.perf_counter() - started if answer.startswith(b"HTTP/1.1 200") else None


def probes(url: str, count: int, between: float = 0.1) -> list[float | None]:
    results = []
    for _ in range(count):
        results.append(probe(url))
        time.sleep(between)
    return results


def summary(name: str, results: list[float | None]) -> tuple[float, float, float]:
    answered = [r for r in results if r is not None]
    share = len(answered) / len(results)
    p50 = statistics.median(answered) if answered else float("nan")
    worst = max(answered) if answered else float("nan")
    print(
        f"{name:<22} answered {len(answered)}/{len(results)} ({share:.0%}), "
        f"p50 {p50 * 1000:.1f} ms, worst {worst * 1000:.1f} ms"
    )
    return share, p50, worst


def open_slow(port: int, count: int) -> list[socket.socket]:
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAPI-Key: %s\r\n"
        b"Content-Type: application/x-protobuf\r\nContent-Length: 1000000\r\n\r\n\n"
        % (port, API_KEY.encode())
    )
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(head)
        sock.setblocking(False)
        socks.append(sock)
    return socks


def trickle(
    socks: list[socket.socket], closed: dict[int, float], answers: dict[int, bytes]
) -> None:
    """A byte on each open slow connection; notes the ones the server closed."""
    now = time.monotonic()
    for n, sock in enumerate(socks):
        if n in closed:
            continue
        try:
            while True:  # the socket does not block: read what came, up to EOF
                chunk = sock.recv(65536)
                if not chunk:
                    closed[n] = now
                    break
                answers[n] = answers.get(n, b"") + chunk
        except BlockingIOError:
            pass
        except OSError:
            closed[n] = now
        if n not in closed:
            try:
                sock.send(b"\x0a")
            except OSError:
                closed[n] = now


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=1050)
    parser.add_argument("--probes", type=int, default=40)
    parser.add_argument("--max-connections", type=int, default=1000)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    options = parser.parse_args()
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        db = str(Path(tmp) / "db")
        if options.store == "postgres":
            from tests.server.postgres import postgres_cluster

            db = stack.enter_context(postgres_cluster()).database()
        args = ["--max-connections", str(options.max_connections), "--rate-limit", "0"]
        server = ServerProcess(db, args=args, log=Path(tmp) / "log").start()
        try:
            idle = probes(server.url, options.probes)
            socks = open_slow(server.port, options.slow)
            opened = time.monotonic()
            closed: dict[int, float] = {}
            answers: dict[int, bytes] = {}
            under: list[float | None] = []
            while (
                time.monotonic() - opened < BODY_TIMEOUT_SECONDS - 5 and len(under) < options.probes
            ):
                trickle(socks, closed, answers)
                under.append(probe(server.url))
                time.sleep(0.5)
            early = len(closed)
            deadline = opened + BODY_TIMEOUT_SECONDS
            while len(closed) < len(socks) and time.monotonic() < deadline + 30:
                trickle(socks, closed, answers)
                time.sleep(0.5)
            for sock in socks:
                sock.close()
        finally:
            server.stop()
    print(
        f"{options.slow} connections trickling a 1 MB body at 2 bytes/s "
        f"(--max-connections {options.max_connections}, {options.store})"
    )
    summary("/health idle", idle)
    share, p50, _ = summary("/health under slow", under)
    late = [t - deadline for t in closed.values()]
    with_408 = sum(a.startswith(b"HTTP/1.1 408") for a in answers.values())
    print(
        f"slow connections: {early} closed before the deadline, {len(closed)}/{len(socks)} "
        f"closed in all ({with_408} answered 408), the last "
        f"{max(late) if late else float('nan'):.1f} s after the {BODY_TIMEOUT_SECONDS:g} s deadline"
    )
    met = (
        share >= TARGET_ANSWERED
        and p50 <= TARGET_P50_SECONDS
        and len(closed) == len(socks)
        and max(late) <= TARGET_CLOSED_AFTER_DEADLINE_SECONDS
    )
    print(
        f"target: every probe answered, p50 <= {TARGET_P50_SECONDS * 1000:.0f} ms, every slow "
        f"connection closed within {TARGET_CLOSED_AFTER_DEADLINE_SECONDS:g} s of the deadline: "
        f"{'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
