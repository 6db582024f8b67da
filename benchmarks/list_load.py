"""The trace list with 100,000 stored traces: how long the list page, a search and the
filtered API take, on SQLite and PostgreSQL (issue #20: under 300 ms each).

For each store, seeds `--traces` traces through the store itself (`store.traces.save_many`, in
batches: the digest, the per-agent scores and the full-text index are written as the server
writes them), then starts `python -m tracejudge.server` on that database (uvicorn, one
process, no judge) and times each request `--repeat` times, one at a time, from this
process: the median and the 95th percentile, and the ratio to `GET /health` (the floor of
the HTTP stack, measured in the same run).

The traces: three or four agents (orchestrator, researcher, writer, sometimes an editor)
with one model call each, six criteria each (the five checks and a judged one), so 18-24
agent scores per trace; a start time spread over 30 days; one tag of five teams; a tool
result carrying a booking reference no other trace has (`ZX<number>`, for a rare search)
and words every trace has (`weekend`, for a common one); a third of the writers failing.

    python benchmarks/list_load.py [--traces 100000] [--repeat 15] [--db sqlite,postgres]
                                   [--no-vacuum]

PostgreSQL's tables are vacuumed and analysed after the load, as autovacuum leaves them
soon after one (`--no-vacuum` times them right after it). PostgreSQL is skipped, saying
why, when its binaries or psycopg are missing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.server.harness import ServerProcess  # noqa: E402
from tests.server.postgres import postgres_cluster  # noqa: E402
from tests.server.stored import agent_trace, answer  # noqa: E402

from tracejudge.server.store import EvaluationRow, TraceRow, open_store  # noqa: E402

CRITERIA = (
    "tool_arguments",
    "tool_results",
    "loops",
    "grounded_numbers",
    "final_answer",
    "Reward accurate, well grounded answers",
)
TEAMS = ("search", "checkout", "support", "growth", "ops")
#: A placeholder start time, replaced in each trace's JSON (calls at +0 .. +3 seconds).
_START = 1_111_111_111.0
_REF = "ZXREFERENCE"
_DAY = 86_400.0
_BATCH = 500


def _templates() -> list[tuple[str, list[tuple[str, str, float | None]], str]]:
    """(trace JSON, [(criterion, answer JSON, overall)], root) for each variant."""
    variants = []
    for names in (
        ["orchestrator", "researcher", "writer"],
        ["orchestrator", "researcher", "writer", "editor"],
    ):
        for writer_score in (1.0, 0.8, 0.3):
            trace = agent_trace(
                names,
                start=_START,
                tool_result=f"Lisbon weekend: 24 C and sunny. Booking reference {_REF}.",
            )
            answers = []
            for criterion in CRITERIA:
                scores = {name: 1.0 for name in names}
                if criterion in ("final_answer", CRITERIA[-1]):
                    scores["writer"] = writer_score
                bar = 0.5 if criterion == CRITERIA[-1] else 1.0
                response = answer(trace, criterion, scores, fail_under=bar)
                answers.append((criterion, response.model_dump_json(), response.overall_score))
            variants.append((trace.to_json(), answers, names[0]))
    return variants


def _seed(db: str, count: int) -> float:
    """Store `count` traces; the seconds it took."""
    variants = _templates()
    now = time.time()
    store = open_store(db)
    began = time.perf_counter()
    try:
        for first in range(0, count, _BATCH):
            items = []
            for i in range(first, min(count, first + _BATCH)):
                trace_json, answers, root = variants[i % len(variants)]
                start = now - 30 * _DAY * (i / count)
                for k in range(5):
                    trace_json = trace_json.replace(f"{_START + k}", f"{start + k!r}")
                trace_json = trace_json.replace(_REF, f"ZX{i:06d}")
                trace_id = uuid.UUID(int=i + 1).hex
                row = TraceRow(
                    trace_id=trace_id,
                    source="api",
                    status="scored",
                    first_seen=start + 60,
                    last_span_at=start + 60,
                    root_agent=root,
                    agents=[],
                    trace_json=trace_json,
                    tags={"team": TEAMS[i % len(TEAMS)]},
                )
                evaluations = [
                    EvaluationRow(
                        id=f"{trace_id}-{n}",
                        kind="trace",
                        criterion=criterion,
                        response=response,
                        overall_score=overall,
                        created_at=start + 61 + n * 1e-3,
                        trace_id=trace_id,
                    )
                    for n, (criterion, response, overall) in enumerate(answers)
                ]
                items.append((row, evaluations))
            store.traces.save_many(items)
            if first and first % 20_000 == 0:
                print(f"  {first:,} traces stored, {time.perf_counter() - began:.0f} s", flush=True)
    finally:
        store.close()
    return time.perf_counter() - began


def _time(http: httpx.Client, url: str, repeat: int) -> tuple[float, float, int, str]:
    """(median ms, p95 ms, status, body) of `repeat` GETs after two unmeasured ones."""
    answer = http.get(url)
    http.get(url)
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        answer = http.get(url)
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return statistics.median(times), p95, answer.status_code, answer.text


def _deep_cursor(http: httpx.Client, pages: int) -> str:
    """The cursor of page `pages + 1` of the default list (50 a page)."""
    cursor = None
    for _ in range(pages):
        body = http.get("/api/v1/traces", params={"cursor": cursor} if cursor else {}).json()
        cursor = body["next_cursor"]
    assert cursor is not None
    return cursor


def _settle(db: str) -> float:
    """PostgreSQL's tables vacuumed and analysed, as autovacuum leaves them soon after a
    bulk load (the visibility map lets counts read indexes alone; the statistics, the
    planner's estimates); the seconds it took. SQLite has nothing to settle."""
    if not db.startswith("postgresql://"):
        return 0.0
    import psycopg

    began = time.perf_counter()
    with psycopg.connect(db, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")
    return time.perf_counter() - began


def measure(db: str, label: str, args: argparse.Namespace) -> list[tuple[str, float, float]]:
    seconds = _seed(db, args.traces)
    print(
        f"{label}: {args.traces:,} traces stored in {seconds:.0f} s "
        f"({args.traces / seconds:,.0f} traces/s)"
    )
    if not args.no_vacuum and db.startswith("postgresql://"):
        print(f"{label}: VACUUM ANALYZE in {_settle(db):.0f} s")
    server = ServerProcess(
        db,
        api_key=None,
        args=["--rate-limit", "0", "--trace-quiet-seconds", "3600", "--log-level", "error"],
    ).start()
    rare = f"ZX{args.traces // 2:06d}"
    results = []
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            # page 21 (or the last full one of a smaller run), reached by its cursor
            skipped = min(20, (args.traces - 1) // 50)
            deep = _deep_cursor(http, skipped) if skipped else ""
            shown = f"{skipped * 50 + 1:,}–{min(args.traces, skipped * 50 + 50):,}"
            requests = [
                ("GET /health (floor)", "/health", None),
                ("GET /ui (list page: 50 rows, total, overview)", "/ui", "of <b>"),
                (
                    f'GET /ui?q="booking reference {rare}" (rare phrase)',
                    f"/ui?q=%22booking+reference+{rare}%22",
                    "1–1 of <b>1</b>",
                ),
                ("GET /ui?q=weekend (a word in every trace)", "/ui?q=weekend", "of <b>"),
                (
                    "GET /ui?q=lisbon+sunny&tag=team:search (two words, a tag)",
                    "/ui?q=lisbon+sunny&tag=team:search",
                    "of <b>",
                ),
                (
                    "GET /api/v1/traces?agent=writer&score_below=0.5",
                    "/api/v1/traces?agent=writer&score_below=0.5",
                    '"total"',
                ),
                (
                    "GET /ui?agent=Wri&criterion=final_answer&score_below=0.5",
                    "/ui?agent=Wri&criterion=final_answer&score_below=0.5",
                    "of <b>",
                ),
                ("GET /ui?sort=cost&order=asc", "/ui?sort=cost&order=asc", "of <b>"),
                ("GET /ui?sort=worst_score (descending)", "/ui?sort=worst_score", "of <b>"),
                (f"GET /ui (page {skipped + 1}, by cursor)", f"/ui?cursor={deep}", shown),
                ("GET /api/v1/overview", "/api/v1/overview", '"rows"'),
            ]
            floor = None
            for name, url, expect in requests:
                median, p95, status, body = _time(http, url, args.repeat)
                assert status == 200, (url, status, body[:300])
                assert expect is None or expect in body, (url, expect, body[:2000])
                floor = floor or median
                verdict = (
                    ""
                    if floor == median
                    else (
                        f", {median / floor:.1f}x the floor; "
                        f"{'within' if p95 < 300 else 'OVER'} 300 ms at p95"
                    )
                )
                print(
                    f"{label} {name}: median {median:.1f} ms, p95 {p95:.1f} ms{verdict}", flush=True
                )
                results.append((name, median, p95))
    finally:
        server.stop()
    return results


@contextlib.contextmanager
def database(kind: str, folder: str) -> Iterator[str | None]:
    if kind == "sqlite":
        yield os.path.join(folder, "list.db")
        return
    import pytest  # postgres_cluster skips, as in the tests, when it cannot run

    try:
        with postgres_cluster() as cluster:
            yield cluster.database()
    except pytest.skip.Exception as why:
        print(f"postgres: skipped ({why})")
        yield None


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Time the trace list (page, search, filters) with many stored traces, "
        "on SQLite and PostgreSQL (issue #20: under 300 ms each)."
    )
    parser.add_argument(
        "--traces", type=_positive, default=100_000, help="traces to store (default 100,000)"
    )
    parser.add_argument(
        "--repeat", type=_positive, default=15, help="timed requests per URL (default 15)"
    )
    parser.add_argument(
        "--no-vacuum",
        action="store_true",
        help="time PostgreSQL right after the load, before VACUUM ANALYZE (as autovacuum "
        "would run it)",
    )
    parser.add_argument(
        "--db",
        default="sqlite,postgres",
        help="stores to measure, comma-separated: sqlite, postgres (default both)",
    )
    args = parser.parse_args()
    kinds = [kind.strip() for kind in args.db.split(",") if kind.strip()]
    unknown = sorted(set(kinds) - {"sqlite", "postgres"})
    if unknown or not kinds:
        parser.error(
            f"--db: {', '.join(unknown) or 'nothing'} is not a store; give sqlite,postgres"
        )
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tracejudge-list-") as folder:
        for kind in kinds:
            with database(kind, folder) as db:
                if db is not None:
                    measure(db, kind, args)
    print(f"{time.perf_counter() - began:.0f} s in all")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


if __name__ == "__main__":
    main()
