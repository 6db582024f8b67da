"""A verdict cache that breaks never fails an evaluation: real SQLite files made corrupt,
truncated, of another schema, read-only or locked by another process, and new files
created by several processes at once."""

from __future__ import annotations

import logging
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.judges.helpers import graded
from tracejudge.judges import JudgeRequest, SQLiteCache
from tracejudge.testing import ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")


def _cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "cache" in r.getMessage()
    ]


async def _judge_twice(make_judge, server: ScriptedLLMServer, cache: Any) -> None:
    """Two identical calls: both verdicts right, the second from memory (one request)."""
    server.add(graded(8), graded(2))
    judge = make_judge(cache=cache)
    first = await judge.judge(REQUEST)
    second = await judge.judge(REQUEST)
    assert first.score == second.score == pytest.approx(7 / 9)
    assert second.usage.cached_calls == 1
    assert len(server.requests) == 1


def _corrupt(path: Path) -> None:
    path.write_bytes(b"this is not a database, just bytes\x00" * 200)


def _truncated(path: Path) -> None:
    cache = SQLiteCache(path)
    for n in range(400):
        cache.set(f"key-{n}", {"score": 0.5, "explanation": "x" * 500})
    cache.close()
    for extra in ("-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.truncate(size // 3)


def _other_schema(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE judge_cache (key TEXT PRIMARY KEY, data BLOB)")


def _a_file_in_the_way(path: Path) -> None:
    path.parent.rmdir()
    path.parent.write_text("a file where the cache's folder should be")


@pytest.mark.parametrize(
    "spoil",
    [_corrupt, _truncated, _other_schema, _a_file_in_the_way],
    ids=["corrupt", "truncated", "other schema", "not a directory"],
)
async def test_an_unusable_file_logs_one_warning_and_evaluation_goes_on(
    server: ScriptedLLMServer, make_judge, tmp_path: Path, caplog, spoil
) -> None:
    path = tmp_path / "cache" / "judge.sqlite"
    path.parent.mkdir()
    spoil(path)
    with caplog.at_level(logging.WARNING, logger="tracejudge"):
        await _judge_twice(make_judge, server, path)
    warnings = _cache_warnings(caplog)
    if spoil is not _truncated:  # a cut file may still read; when it does not, it warns
        assert len(warnings) == 1, warnings
    assert len(warnings) <= 1, warnings


async def test_a_location_nobody_may_create_is_gone_around(
    server: ScriptedLLMServer, make_judge, caplog
) -> None:
    # /proc refuses new entries even to root: a real read-only place on every Linux box.
    path = Path("/proc/tracejudge-test/judge.sqlite")
    if not Path("/proc/self").exists():
        pytest.skip("needs Linux /proc")
    with caplog.at_level(logging.WARNING, logger="tracejudge"):
        await _judge_twice(make_judge, server, path)
    assert len(_cache_warnings(caplog)) == 1


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores file modes")
@pytest.mark.parametrize("existing", [False, True], ids=["new file", "existing file"])
async def test_a_read_only_folder_or_file_is_gone_around(
    server: ScriptedLLMServer, make_judge, tmp_path: Path, caplog, existing: bool
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "judge.sqlite"
    if existing:
        SQLiteCache(path).set("other", {"score": 1.0, "explanation": "x"})
        path.chmod(0o444)
    folder.chmod(0o555)
    try:
        with caplog.at_level(logging.WARNING, logger="tracejudge"):
            await _judge_twice(make_judge, server, path)
    finally:
        folder.chmod(0o755)
    assert len(_cache_warnings(caplog)) == 1


def test_rows_that_do_not_decode_are_misses(tmp_path: Path, caplog) -> None:
    path = tmp_path / "judge.sqlite"
    cache = SQLiteCache(path)
    cache.set("good", {"score": 0.5, "explanation": "fine"})
    with sqlite3.connect(path) as connection:
        connection.execute(
            "INSERT INTO judge_cache VALUES ('text', 'not json', 0), ('list', '[1, 2]', 0), "
            "('blob', x'00ff', 0)"
        )
    with caplog.at_level(logging.WARNING, logger="tracejudge"):
        assert cache.get("text") is None
        assert cache.get("list") is None
        assert cache.get("blob") is None
        assert cache.get("good") == {"score": 0.5, "explanation": "fine"}
    assert len(_cache_warnings(caplog)) == 1
    cache.set("text", {"score": 1.0, "explanation": "asked again"})
    assert cache.get("text") == {"score": 1.0, "explanation": "asked again"}


class _Garbage:
    """A user's JudgeCache that answers entries of the wrong shape, then raises."""

    def __init__(self) -> None:
        self.answers: list[Any] = [{"score": "high", "explanation": 3}, {"score": 2.5}]
        self.closed = False

    def get(self, key: str) -> Any:
        if self.answers:
            return self.answers.pop(0)
        raise RuntimeError("the cache service is down")

    def set(self, key: str, value: dict[str, Any]) -> None:
        raise RuntimeError("the cache service is down")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            raise RuntimeError("the cache service is down")


async def test_a_user_cache_that_answers_garbage_or_raises_is_gone_around(
    server: ScriptedLLMServer, make_judge, caplog
) -> None:
    server.add(graded(8), graded(8), graded(8))
    judge = make_judge(cache=_Garbage())
    with caplog.at_level(logging.WARNING, logger="tracejudge"):
        for _ in range(3):
            assert (await judge.judge(REQUEST)).score == pytest.approx(7 / 9)
    with pytest.raises(RuntimeError, match="down"):
        await judge.aclose()  # closing was asked for: its failure is reported
    assert len(server.requests) == 3
    assert len(_cache_warnings(caplog)) == 1


_HOLD_LOCK = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


async def test_a_lock_held_by_another_process_costs_no_more_than_the_deadline(
    server: ScriptedLLMServer, make_judge, tmp_path: Path, caplog
) -> None:
    path = tmp_path / "judge.sqlite"
    SQLiteCache(path).set("other", {"score": 1.0, "explanation": "x"})
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(path), "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        server.add(graded(8))
        judge = make_judge(cache=path, timeout=60)
        with caplog.at_level(logging.WARNING, logger="tracejudge"):
            started = time.perf_counter()
            verdict = await judge.judge(REQUEST)
            took = time.perf_counter() - started
            again = await judge.judge(REQUEST)
    finally:
        holder.kill()
        holder.wait()
    # The verdict just paid for is returned, and kept (in memory) though the file refused it.
    assert verdict.score == pytest.approx(7 / 9)
    assert again.usage.cached_calls == 1 and len(server.requests) == 1
    # not waited on the held file until the judge's deadline (a minute)
    assert took < 60 / 4, f"judge() took {took:.1f}s with timeout=60"
    assert len(_cache_warnings(caplog)) == 1


def _create_and_use(path: str, barrier: Any, results: Any, worker: int) -> None:
    cache = SQLiteCache(path)
    barrier.wait()
    cache.set(f"key-{worker}", {"score": worker / 10, "explanation": f"from {worker}"})
    value = cache.get(f"key-{worker}")
    results.put((worker, value, cache._warned, cache._broken))


def test_processes_creating_one_new_file_at_once_all_use_it(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    workers = 6
    for round_ in range(6):
        path = str(tmp_path / f"new-{round_}.sqlite")
        barrier = context.Barrier(workers)
        results = context.Queue()
        processes = [
            context.Process(target=_create_and_use, args=(path, barrier, results, n))
            for n in range(workers)
        ]
        for process in processes:
            process.start()
        outcomes = sorted(results.get(timeout=30) for _ in processes)
        for process in processes:
            process.join(timeout=30)
        for worker, value, warned, broken in outcomes:
            assert not broken and not warned, f"round {round_}: worker {worker} lost the file"
            assert value == {"score": worker / 10, "explanation": f"from {worker}"}
        assert len(SQLiteCache(path)) == workers


def test_the_file_keeps_at_most_max_entries_the_oldest_go_first(tmp_path: Path) -> None:
    cache = SQLiteCache(tmp_path / "judge.sqlite", max_entries=10)
    for n in range(25):
        cache.set(f"key-{n}", {"n": n})
    cache.set("key-20", {"n": 20})  # replaced: now the newest
    assert len(cache) <= 10
    assert cache.get("key-14") is None and cache.get("key-0") is None
    assert cache.get("key-24") == {"n": 24} and cache.get("key-20") == {"n": 20}
    with pytest.raises(ValueError, match="max_entries"):
        SQLiteCache(tmp_path / "x.sqlite", max_entries=0)
