"""How the server rides out store outages (#32, items 1 and 4): what uploads get while
the store is away, and how long after it returns the server works again by itself.

Each scenario runs a real server (`python -m tracejudge.server`, its own process, a
zero-delay judge process) with one client uploading a recorded three-agent OTLP/JSON
trace every 50 ms throughout, and a poller asking `/ready` and `/health` every 50 ms:

1. `postgres`: PostgreSQL stopped (`pg_ctl stop -m fast`) for `--outage-seconds`, then
   started (the issue's probe: uploads 500, then every request hung for good);
2. `sqlite-lock`: another process holds the SQLite file's write lock (`BEGIN
   EXCLUSIVE`) for `--outage-seconds` past the server's busy timeout (5 s);
3. `sqlite-full`: the SQLite file on a 20 MB tmpfs, filled up; the server restarted
   while full; then the filler deleted (needs root for `mount`);
4. `postgres-full`: PostgreSQL's data directory on a 120 MB tmpfs, filled up, then
   freed.

Printed per scenario: the answers to uploads sent while the store was away (from the
first refused, by status, and whether each 503 carried `Retry-After`; 0: no connection,
the server restarting), `/ready` (from a second in: it reuses its query for half a
second) and `/health` then, and the seconds
from the store's return (the cluster started, the lock released, the filler deleted)
until the first upload taken, `/ready` 200, and the backlog scored (every trace taken
before, during and after the outage); and how many traces ended `failed`. The baseline
in the same run is how long the database itself takes to answer after it returns (a
new connection on PostgreSQL, a write on SQLite).

    python benchmarks/store_outage.py [--outage-seconds 5] [--only postgres,sqlite-lock,...]

Targets: no 500 while the store is away (503 with Retry-After, "no space" when full);
`/ready` 503 during and 200 after; uploads taken and `/ready` 200 again within 5 s of
the store's return (a retrying loop's back-off); the backlog scored, none `failed`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from _judge import JudgeProcess

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.server.harness import ServerProcess  # noqa: E402
from tests.server.hostile import otlp_trace  # noqa: E402
from tests.server.postgres import postgres_cluster  # noqa: E402

OTLP_JSON = {"Content-Type": "application/json"}
TARGET_RECOVERY_SECONDS = 5.0
ARGS = ["--trace-quiet-seconds", "0.3", "--workers", "2", "--liveness-seconds", "600"]


@dataclass
class Traffic:
    """Uploads every 50 ms and `/ready`, `/health` polls, timestamped (monotonic)."""

    url: str
    headers: dict[str, str]
    #: (sent, answered, status, trace id, Retry-After given, body)
    uploads: list[tuple[float, float, int, str, bool, str]] = field(default_factory=list)
    probes: list[tuple[float, int, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Traffic:
        for target in (self._upload, self._probe):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def _upload(self) -> None:
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=60) as http:
            while not self._stop.is_set():
                trace_id, body = otlp_trace()
                sent = time.monotonic()
                try:
                    answer = http.post("/v1/traces", content=body, headers=OTLP_JSON)
                    status, text = answer.status_code, answer.text
                    retry = "Retry-After" in answer.headers
                except httpx.HTTPError as error:
                    status, text, retry = 0, type(error).__name__, False
                self.uploads.append((sent, time.monotonic(), status, trace_id, retry, text))
                self._stop.wait(0.05)

    def _probe(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as http:
            while not self._stop.is_set():
                try:
                    ready = http.get("/ready").status_code
                    health = http.get("/health").status_code
                except httpx.HTTPError:
                    ready = health = 0
                self.probes.append((time.monotonic(), ready, health))
                self._stop.wait(0.05)

    def taken(self) -> list[str]:
        return [trace_id for _, _, status, trace_id, _, _ in self.uploads if status == 200]

    def first_upload_taken(self, after: float) -> float | None:
        """Seconds from `after` until an upload was answered 200."""
        answered = (end for _, end, status, *_ in self.uploads if end >= after and status == 200)
        return next((end - after for end in answered), None)

    def first_ready(self, after: float) -> float | None:
        return next((t - after for t, ready, _ in self.probes if t >= after and ready == 200), None)

    def first_refusal(self, after: float) -> float:
        """When the first upload sent after `after` was refused (the outage as clients
        meet it: the database takes a moment to go)."""
        refused = (sent for sent, _, status, *_ in self.uploads if sent >= after and status != 200)
        return next(refused, after)

    def during(self, start: float, end: float) -> tuple[Counter[str], Counter[str], Counter[str]]:
        """The uploads sent, and the probes answered, between `start` and `end`."""
        answers: Counter[str] = Counter()
        for t, _, status, _, retry, text in self.uploads:
            if start <= t <= end:
                label = str(status) + (" Retry-After" if retry else "")
                label += ' "no space"' if "no space" in text else ""
                answers[label] += 1
        ready = Counter(str(r) for t, r, _ in self.probes if start <= t <= end)
        health = Counter(str(h) for t, _, h in self.probes if start <= t <= end)
        return answers, ready, health


def _scored_and_failed(server: ServerProcess, trace_ids: list[str]) -> tuple[int, int]:
    scored = failed = 0
    with server.client() as http:
        for trace_id in trace_ids:
            answer = http.get(f"/api/v1/traces/{trace_id}")
            status = answer.json().get("status") if answer.status_code == 200 else None
            scored += status == "scored"
            failed += status == "failed"
    return scored, failed


def _drained(
    server: ServerProcess, trace_ids: list[str], since: float, limit: float = 300
) -> float:
    """Seconds from `since` until every trace in `trace_ids` is scored (or a failure)."""
    while time.monotonic() - since < limit:
        scored, failed = _scored_and_failed(server, trace_ids)
        if scored + failed == len(trace_ids):
            return time.monotonic() - since
        time.sleep(0.1)
    raise RuntimeError("the backlog was not scored within the limit")


def _report(
    name: str,
    traffic: Traffic,
    server: ServerProcess,
    away: float,
    back: float,
    baseline: float,
    notes: str = "",
) -> None:
    refused = traffic.first_refusal(away)
    answers, _, health = traffic.during(refused, back)
    slowest = max(
        (end - sent for sent, end, *_ in traffic.uploads if refused <= sent <= back), default=0.0
    )
    # /ready reuses its store query for half a second: counted from a second in
    _, ready, _ = traffic.during(refused + 1.0, back)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and None in (
        traffic.first_upload_taken(back),
        traffic.first_ready(back),
    ):
        time.sleep(0.05)
    upload = traffic.first_upload_taken(back)
    first_ready = traffic.first_ready(back)
    traffic.stop()
    taken = traffic.taken()
    drained = _drained(server, taken, back)
    _, failed = _scored_and_failed(server, taken)
    within = [x for x in (upload, first_ready) if x is not None]
    met = (
        "500" not in " ".join(answers)
        and ready.get("200", 0) == 0
        and len(within) == 2
        and max(within) <= TARGET_RECOVERY_SECONDS
        and failed == 0
    )
    print(f"{name}: away {back - away:.1f} s {notes}".rstrip())
    print(
        f"  uploads while away: {dict(answers)} (slowest answer {slowest:.1f} s); "
        f"/ready {dict(ready)}; /health {dict(health)}"
    )
    print(
        f"  after the store returned: the database answers in {baseline:.2f} s; first upload "
        f"taken {_s(upload)}, /ready 200 {_s(first_ready)}, backlog of {len(taken)} traces "
        f"scored {drained:.1f} s; failed: {failed}; target: {'met' if met else 'NOT met'}"
    )


def _s(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.2f} s"


def _until(check: Callable[[], bool], limit: float = 60) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > limit:
            raise RuntimeError("timed out")
        time.sleep(0.02)
    return time.monotonic() - start


def _postgres_answers(dsn: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=2) as connection:
            connection.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


def postgres(judge: JudgeProcess, outage: float) -> None:
    with postgres_cluster() as cluster:
        dsn = cluster.database()
        server = ServerProcess(dsn, judge=judge, args=ARGS).start()  # type: ignore[arg-type]
        try:
            traffic = Traffic(server.url, server.headers).start()
            time.sleep(2)
            away = time.monotonic()
            cluster.stop()
            time.sleep(outage)
            cluster.start()
            back = time.monotonic()
            baseline = _until(lambda: _postgres_answers(dsn))
            _report("postgres", traffic, server, away, back, baseline)
        finally:
            server.stop()


def sqlite_lock(judge: JudgeProcess, outage: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "store.db")
        server = ServerProcess(db, judge=judge, args=ARGS).start()  # type: ignore[arg-type]
        try:
            traffic = Traffic(server.url, server.headers).start()
            time.sleep(2)
            other = sqlite3.connect(db, isolation_level=None, timeout=30)
            away = time.monotonic()
            other.execute("BEGIN EXCLUSIVE")
            time.sleep(outage + 5.0)  # past the server's busy timeout (5 s)
            other.execute("ROLLBACK")
            back = time.monotonic()

            def writes() -> bool:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                return True

            baseline = _until(writes)
            other.close()
            _report("sqlite-lock", traffic, server, away, back, baseline)
        finally:
            server.stop()


@contextlib.contextmanager
def small_disk(megabytes: int) -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="tracejudge-small-disk-"))
    os.chmod(where, 0o755)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        raise SystemExit(f"cannot mount a tmpfs ({mounted.stderr.strip()}): run as root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
        with contextlib.suppress(OSError):
            where.rmdir()


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    return filler


def sqlite_full(judge: JudgeProcess, outage: float) -> None:
    with small_disk(20) as disk:
        db = str(disk / "store.db")
        server = ServerProcess(db, judge=judge, args=ARGS).start()  # type: ignore[arg-type]
        traffic = Traffic(server.url, server.headers).start()
        time.sleep(2)
        away = time.monotonic()
        filler = fill(disk)
        time.sleep(outage / 2)
        # Restarted while full, on the same port (the uploads meanwhile: status 0).
        server.stop()
        restarted = ServerProcess(db, judge=judge, args=ARGS, port=server.port)  # type: ignore[arg-type]
        started = time.monotonic()
        try:
            restarted.start()
        except RuntimeError as error:
            traffic.stop()
            raise SystemExit(f"restarted while full, the server did not start: {error}") from error
        note = f"(restarted while full: up in {time.monotonic() - started:.1f} s)"
        try:
            time.sleep(outage / 2)
            filler.unlink()
            back = time.monotonic()
            baseline = 0.0  # the file system takes writes as soon as the file is gone
            _report("sqlite-full", traffic, restarted, away, back, baseline, note)
        finally:
            restarted.stop()


def postgres_full(judge: JudgeProcess, outage: float) -> None:
    with small_disk(120) as disk:
        if os.geteuid() == 0:
            import pwd

            user = pwd.getpwnam("postgres")
            os.chown(disk, user.pw_uid, user.pw_gid)
        with postgres_cluster(folder=str(disk)) as cluster:
            dsn = cluster.database()
            server = ServerProcess(dsn, judge=judge, args=ARGS).start()  # type: ignore[arg-type]
            try:
                traffic = Traffic(server.url, server.headers).start()
                time.sleep(2)
                away = time.monotonic()
                filler = fill(disk)
                time.sleep(outage)
                filler.unlink()
                if not cluster.running():
                    cluster.start()
                back = time.monotonic()
                baseline = _until(lambda: _postgres_answers(dsn))
                _report("postgres-full", traffic, server, away, back, baseline)
            finally:
                server.stop()


SCENARIOS = {
    "postgres": postgres,
    "sqlite-lock": sqlite_lock,
    "sqlite-full": sqlite_full,
    "postgres-full": postgres_full,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outage-seconds", type=float, default=5.0)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    options = parser.parse_args()
    with JudgeProcess(0.0) as judge:
        for name in options.only.split(","):
            SCENARIOS[name](judge, options.outage_seconds)


if __name__ == "__main__":
    main()
