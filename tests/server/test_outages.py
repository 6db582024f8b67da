"""The server through store outages (#32, items 1 and 4): a real PostgreSQL stopped and
started under uploads and scoring, a SQLite file locked by another process, a disk that
fills up (a small tmpfs). During the trouble uploads get 503 with `Retry-After` (what
OTLP exporters retry) and `/ready` 503; `/health` stays 200 through a short blip and
fails once the store has been out longer than `--liveness-seconds`; afterwards the
server recovers by itself: uploads 200, the backlog scored, `/ready` 200, no trace
failed for the store's trouble."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.harness import ServerProcess, wait_for
from tests.server.hostile import otlp_trace
from tests.server.postgres import postgres_cluster
from tracejudge.testing import ScriptedLLMServer

pytestmark = pytest.mark.heavy(
    "a real PostgreSQL stopped and started, a locked SQLite file, full tmpfs disks, processes"
)

OTLP_JSON = {"Content-Type": "application/json"}
MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
#: Polls of a recovery: generous, as the machine may be loaded (no speed is asserted here;
#: the recovery time is measured in benchmarks/store_outage.py).
RECOVERY = 90.0


def _upload(http: httpx.Client) -> tuple[str, httpx.Response]:
    trace_id, body = otlp_trace()
    return trace_id, http.post("/v1/traces", content=body, headers=OTLP_JSON)


def _refused_for_now(answer: httpx.Response) -> str:
    """The message of a 503 an OTLP exporter retries (`Retry-After` in seconds)."""
    assert answer.status_code == 503, (answer.status_code, answer.text)
    assert int(answer.headers["Retry-After"]) >= 1
    return str(answer.json()["message"])


def _status(http: httpx.Client, trace_id: str) -> str | None:
    answer = http.get(f"/api/v1/traces/{trace_id}")
    return str(answer.json()["status"]) if answer.status_code == 200 else None


def _all_scored(http: httpx.Client, trace_ids: list[str]) -> bool:
    states = [_status(http, t) for t in trace_ids]
    assert "failed" not in states, states  # never failed for the store's trouble
    return all(state == "scored" for state in states)


def _ready(http: httpx.Client) -> int:
    return http.get("/ready").status_code


def _refusal(http: httpx.Client) -> httpx.Response | None:
    """An upload's answer when it was refused with 503 (None: it was taken)."""
    answer = _upload(http)[1]
    return answer if answer.status_code == 503 else None


def _liveness_problems(http: httpx.Client) -> list[str]:
    """What `/health` names when it fails (empty while it answers 200)."""
    answer = http.get("/health")
    return list(answer.json().get("problems", [])) if answer.status_code == 503 else []


def _uploaded_after_recovery(http: httpx.Client) -> str | None:
    trace_id, answer = _upload(http)
    return trace_id if answer.status_code == 200 else None


def test_a_postgresql_restart_under_uploads_and_scoring(
    judge_model: ScriptedLLMServer, tmp_path: Path
) -> None:
    args = ["--trace-quiet-seconds", "0.3", "--liveness-seconds", "4", "--workers", "2"]
    with postgres_cluster() as cluster:  # its own cluster: this test stops it
        server = ServerProcess(
            cluster.database(), judge=judge_model, args=args, log=tmp_path / "log"
        )
        server.start()
        try:
            with server.client() as http:
                sent = []
                for _ in range(6):  # queued and being scored when the database goes
                    trace_id, answer = _upload(http)
                    assert answer.status_code == 200, answer.text
                    sent.append(trace_id)
                cluster.stop()
                refused = _refused_for_now(_upload(http)[1])
                assert "unavailable" in refused and "retry" in refused.lower()
                # a short blip is no reason to restart the server ...
                assert http.get("/health").status_code == 200
                assert wait_for(lambda: _ready(http) == 503)
                # ... an outage longer than --liveness-seconds is
                # (a loop stalled on the store may be named first; the store itself follows)
                assert wait_for(
                    lambda: any("store" in p for p in _liveness_problems(http)),
                    timeout=RECOVERY,
                ), _liveness_problems(http)
                # the eval API's writes are refused alike, as JSON
                body = {"messages": MESSAGES, "evaluation_criteria": "Reward helpful answers"}
                answer = http.post("/api/v1/evals/reward/background", json=body)
                assert answer.status_code == 503 and answer.headers["Retry-After"]
                assert "unavailable" in answer.json()["detail"]
                cluster.start()
                sent.append(wait_for(lambda: _uploaded_after_recovery(http), timeout=RECOVERY))
                assert wait_for(lambda: _ready(http) == 200, timeout=RECOVERY)
                assert wait_for(lambda: http.get("/health").status_code == 200, timeout=RECOVERY)
                assert wait_for(lambda: _all_scored(http, sent), timeout=RECOVERY)
        finally:
            server.stop()


def test_a_sqlite_file_locked_by_another_process(
    judge_model: ScriptedLLMServer, tmp_path: Path
) -> None:
    db = tmp_path / "locked.db"
    args = ["--trace-quiet-seconds", "0.3", "--workers", "1"]
    server = ServerProcess(str(db), judge=judge_model, args=args, log=tmp_path / "log").start()
    try:
        with server.client() as http:
            trace_id, answer = _upload(http)
            assert answer.status_code == 200, answer.text
            sent = [trace_id]
            other = sqlite3.connect(db, isolation_level=None, timeout=30)
            try:
                other.execute("BEGIN EXCLUSIVE")  # past the server's busy timeout
                refused = _refused_for_now(_upload(http)[1])
                assert "unavailable" in refused
                assert _ready(http) == 503
            finally:
                other.execute("ROLLBACK")
                other.close()
            sent.append(wait_for(lambda: _uploaded_after_recovery(http), timeout=RECOVERY))
            assert wait_for(lambda: _ready(http) == 200, timeout=RECOVERY)
            assert wait_for(lambda: _all_scored(http, sent), timeout=RECOVERY)
            # /metrics saw the outage: store calls that raised, the 503s answered, and no
            # upload counted as refused for a full backlog (#32 item 9 beside items 1, 4)
            samples = _metrics(http)
            assert samples[("tracejudge_errors_total", (("kind", "store"),))] >= 1
            refused = (("method", "POST"), ("route", "/v1/traces"), ("status", "503"))
            assert samples[("tracejudge_http_requests_total", refused)] >= 1
            assert samples[("tracejudge_uploads_refused_total", (("reason", "backlog_full"),))] == 0
    finally:
        server.stop()


def _metrics(http: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics: (name, sorted labels) -> value."""
    answer = http.get("/metrics")
    assert answer.status_code == 200, answer.text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


# --------------------------------------------------------------------------- a full disk


@contextlib.contextmanager
def _small_disk(megabytes: int = 20) -> Iterator[Path]:
    """A tmpfs of `megabytes` in a new folder of /tmp, which PostgreSQL's user can reach
    (root only; skips, saying why, elsewhere)."""
    where = Path(tempfile.mkdtemp(prefix="tracejudge-small-disk-"))
    os.chmod(where, 0o755)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.strip()}); run as root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
        with contextlib.suppress(OSError):
            where.rmdir()


def _fill(disk: Path) -> Path:
    """Fill the file system until a write fails; returns the filler (delete it: space)."""
    filler = disk / "filler"
    chunk = b"\0" * (64 * 1024)
    with open(filler, "wb") as out:
        with contextlib.suppress(OSError):
            while True:
                out.write(chunk)
                out.flush()
    return filler


def test_a_full_disk_says_no_space_and_recovers_once_space_is_freed(
    judge_model: ScriptedLLMServer, tmp_path: Path
) -> None:
    with _small_disk() as disk:
        db = str(disk / "store.db")
        args = ["--trace-quiet-seconds", "0.3", "--workers", "1"]
        server = ServerProcess(db, judge=judge_model, args=args, log=tmp_path / "log").start()
        restarted: ServerProcess | None = None
        try:
            with server.client() as http:
                sent = []
                for _ in range(3):
                    trace_id, answer = _upload(http)
                    assert answer.status_code == 200, answer.text
                    sent.append(trace_id)
                filler = _fill(disk)
                refused = wait_for(lambda: _refusal(http))
                assert "no space" in _refused_for_now(refused)
                assert wait_for(lambda: _ready(http) == 503)
                assert "no space" in http.get("/ready").json()["store"]
            # A restart while the disk is full starts (or says why it cannot, in one line).
            server.stop()
            restarted = ServerProcess(db, judge=judge_model, args=args, log=tmp_path / "log")
            try:
                restarted.start()
            except RuntimeError:
                assert restarted.process is not None
                said = restarted.process.stderr
                pytest.fail(f"the server did not start on a full disk: {said}")
            with restarted.client() as http:
                assert "no space" in _refused_for_now(_upload(http)[1])
                assert wait_for(lambda: _ready(http) == 503)
                filler.unlink()  # space again
                sent.append(wait_for(lambda: _uploaded_after_recovery(http), timeout=RECOVERY))
                assert wait_for(lambda: _ready(http) == 200, timeout=RECOVERY)
                assert wait_for(lambda: _all_scored(http, sent), timeout=RECOVERY)
        finally:
            server.stop()
            if restarted is not None:
                restarted.stop()


def _postgres_data_on(disk: Path) -> None:
    """Let PostgreSQL's user own the tmpfs (the cluster runs as `postgres` under root)."""
    if os.geteuid() == 0:
        import pwd

        user = pwd.getpwnam("postgres")
        os.chown(disk, user.pw_uid, user.pw_gid)


def test_a_full_postgresql_disk_says_no_space_and_recovers(
    judge_model: ScriptedLLMServer, tmp_path: Path
) -> None:
    with _small_disk(megabytes=120) as disk:
        _postgres_data_on(disk)
        with postgres_cluster(folder=str(disk)) as cluster:
            args = ["--trace-quiet-seconds", "0.3", "--workers", "1"]
            server = ServerProcess(
                cluster.database(), judge=judge_model, args=args, log=tmp_path / "log"
            ).start()
            try:
                with server.client() as http:
                    trace_id, answer = _upload(http)
                    assert answer.status_code == 200, answer.text
                    sent = [trace_id]
                    filler = _fill(disk)
                    refused = wait_for(lambda: _refusal(http), timeout=RECOVERY)
                    message = _refused_for_now(refused)
                    assert "no space" in message or "unavailable" in message
                    assert wait_for(lambda: _ready(http) == 503, timeout=RECOVERY)
                    filler.unlink()
                    if not cluster.running():  # PostgreSQL stops when its WAL cannot grow
                        cluster.start()
                    sent.append(wait_for(lambda: _uploaded_after_recovery(http), timeout=RECOVERY))
                    assert wait_for(lambda: _ready(http) == 200, timeout=RECOVERY)
                    assert wait_for(lambda: _all_scored(http, sent), timeout=RECOVERY)
            finally:
                server.stop()
