"""Scores and verdicts exported for a date range, from the CLI (SQLite and PostgreSQL) and
from a real server's API, read back as analysts read them: DuckDB and pandas on the
Parquet file, pandas on the CSV; the rows are the stored answers, no more, no fewer."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import duckdb
import pandas
import pyarrow.parquet
import pytest

from tests.server.harness import InProcessServer
from tests.server.stored import agent_trace, answer, stored
from tracejudge.cli import main
from tracejudge.server.api.export import COLUMNS
from tracejudge.server.store import open_store
from tracejudge.server.store.rollups import RULE_TAG

DAY = 86400
START = 1_764_547_200.0  # 2025-12-01T00:00:00Z
POLITE = "Reward polite answers"
FINAL = "final_answer"


def seed(db: str) -> dict[str, float]:
    """Three days of traces, two a day; the writer fails POLITE on the second of each day.
    Returns each trace's start."""
    store = open_store(db)
    starts: dict[str, float] = {}
    try:
        items = []
        for day in range(3):
            for n in range(2):
                start = START + day * DAY + 3600 * (n + 1)
                trace = agent_trace(["planner", "writer"], start=start)
                trace_id = uuid.uuid4().hex
                row, evaluations = stored(
                    trace_id,
                    trace,
                    [
                        answer(trace, POLITE, {"planner": 0.9, "writer": 0.2 if n else 0.8}),
                        answer(trace, FINAL, {"writer": 1.0}),  # planner: not applicable
                    ],
                )
                row.resource = {"service.name": "shop", "service.version": f"1.{day}"}
                evaluations[0].tags = {RULE_TAG: "polite-10pct"}
                items.append((row, evaluations))
                starts[trace_id] = start
        store.traces.save_many(items)
    finally:
        store.close()
    return starts


def middle_day(starts: dict[str, float]) -> set[str]:
    return {t for t, s in starts.items() if START + DAY <= s < START + 2 * DAY}


def check_rows(frame: pandas.DataFrame, expected_traces: set[str]) -> None:
    assert list(frame.columns) == list(COLUMNS)
    assert set(frame["trace_id"]) == expected_traces
    # per trace: POLITE on both agents, FINAL on both (the planner's not applicable)
    assert len(frame) == 4 * len(expected_traces)
    polite = frame[frame["criterion"] == POLITE]
    assert set(polite["rule"]) == {"polite-10pct"}
    writer = polite[polite["agent_name"] == "writer"].sort_values("trace_start")
    assert list(writer["verdict"]) == ["pass", "fail"]
    assert list(writer["score"]) == [0.8, 0.2]
    skipped = frame[(frame["criterion"] == FINAL) & (frame["agent_name"] == "planner")]
    assert set(skipped["state"]) == {"not_applicable"}
    assert skipped["score"].isna().all() and skipped["verdict"].isna().all()
    assert set(frame["service_version"]) == {"1.1"}
    assert set(frame["trace_verdict"]) == {"passed", "failed"}


def test_the_cli_writes_parquet_duckdb_and_pandas_read_as_they_are(
    db_url: str, tmp_path: Path
) -> None:
    starts = seed(db_url)
    out = tmp_path / "scores.parquet"
    common = ["--db", db_url, "--since", "2025-12-02", "--until", "2025-12-03T00:00:00Z"]
    assert main(["export", *common, "-o", str(out)]) == 0
    frame = pandas.read_parquet(out)
    check_rows(frame, middle_day(starts))
    stamp = frame["trace_start"].min()
    assert str(stamp.tz) == "UTC" and stamp.isoformat() == "2025-12-02T01:00:00+00:00"
    schema = pyarrow.parquet.read_schema(out)
    assert str(schema.field("trace_start").type) == "timestamp[us, tz=UTC]"  # Spark's type
    failing = duckdb.sql(
        f"SELECT agent_name, count(*) FROM read_parquet('{out}') WHERE verdict = 'fail' "
        "GROUP BY agent_name"
    ).fetchall()
    assert failing == [("writer", 1)]
    csv = tmp_path / "scores.csv"
    assert main(["export", *common, "-o", str(csv)]) == 0
    from_csv = pandas.read_csv(csv, dtype={"service_version": str})
    check_rows(from_csv, middle_day(starts))
    assert set(from_csv["trace_start"]) == {"2025-12-02T01:00:00Z", "2025-12-02T02:00:00Z"}


def test_an_empty_range_is_a_file_with_the_columns(tmp_path: Path) -> None:
    db = str(tmp_path / "empty.db")
    seed(db)
    out = tmp_path / "none.parquet"
    assert (
        main(
            ["export", "--db", db, "--since", "2024-01-01", "--until", "2024-01-02", "-o", str(out)]
        )
        == 0
    )
    frame = pandas.read_parquet(out)
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 0


def test_bad_usage_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "x.db")
    assert main(["export", "--db", db, "--since", "last week", "-o", "x.parquet"]) == 2
    assert "--since: 'last week' is not a time" in capsys.readouterr().err
    # the same reading as `rules backfill` (cli/_moment.py): a number must be finite
    assert main(["export", "--db", db, "--since", "nan", "-o", "x.parquet"]) == 2
    assert "--since: 'nan' is not a time" in capsys.readouterr().err
    assert main(["rules", "backfill", "r", "--server", "http://127.0.0.1:9", "--until", "x"]) == 2
    assert "--until: 'x' is not a time" in capsys.readouterr().err
    assert main(["export", "--db", db, "--since", "2026-01-01", "-o", "-"]) == 2
    assert "Parquet is not written to stdout" in capsys.readouterr().err


def test_parquet_without_pyarrow_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "x.db")
    seed(db)
    for name in ("pyarrow", "pyarrow.parquet"):  # as if it were not installed
        monkeypatch.setitem(sys.modules, name, None)
    out = str(tmp_path / "x.parquet")
    assert main(["export", "--db", db, "--since", "2025-12-01", "-o", out]) == 2
    error = capsys.readouterr().err
    assert "pip install 'tracejudge[export]'" in error and "--format csv" in error
    assert main(["export", "--db", db, "--since", "2025-12-01", "-o", out + ".csv"]) == 0


def test_the_api_exports_the_same_rows(server: InProcessServer) -> None:
    starts = seed(server.db)
    params = {"since": "2025-12-02", "until": "2025-12-03"}
    with server.client() as http:
        parquet = http.get("/api/v1/export", params=params)
        csv = http.get("/api/v1/export", params={**params, "format": "csv"})
        wrong = http.get("/api/v1/export", params={**params, "format": "xlsx"})
        missing = http.get("/api/v1/export", params={"until": "2025-12-03"})
    assert parquet.status_code == 200, parquet.text
    assert parquet.headers["content-disposition"].endswith('.parquet"')
    check_rows(pandas.read_parquet(io.BytesIO(parquet.content)), middle_day(starts))
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    check_rows(
        pandas.read_csv(io.StringIO(csv.text), dtype={"service_version": str}), middle_day(starts)
    )
    assert wrong.status_code == 422
    assert wrong.json()["detail"].startswith("query parameter format: ")
    assert missing.status_code == 422
    assert missing.json()["detail"].startswith("query parameter since: ")


#: A Python with pyspark (a virtualenv of its own: `pip install pyspark`; Spark needs Java
#: 17 or later), to read the Parquet export in Spark.
SPARK_PYTHON = os.environ.get("TRACEJUDGE_SPARK_PYTHON")
_SPARK_READ = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").appName("export").getOrCreate()
frame = spark.read.parquet(sys.argv[1])
types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
failing = frame.where("verdict = 'fail'").groupBy("agent_name").count().collect()
first = frame.orderBy("trace_start").first()
print(json.dumps({"rows": frame.count(), "types": types,
                  "failing": {r["agent_name"]: r["count"] for r in failing},
                  "first": first["trace_start"].isoformat()}))
spark.stop()
"""


@pytest.mark.heavy("a Spark session in a JVM")
@pytest.mark.skipif(
    not SPARK_PYTHON,
    reason="TRACEJUDGE_SPARK_PYTHON is not set (a Python with pyspark, and Java 17+)",
)
def test_spark_reads_the_parquet_export_as_it_is(tmp_path: Path) -> None:
    db = str(tmp_path / "spark.db")
    starts = seed(db)
    out = tmp_path / "scores.parquet"
    since, until = "2025-12-02", "2025-12-03"
    assert main(["export", "--db", db, "--since", since, "--until", until, "-o", str(out)]) == 0
    env = {**os.environ, "TZ": "UTC", "PYSPARK_PYTHON": str(SPARK_PYTHON)}
    done = subprocess.run(
        [str(SPARK_PYTHON), "-c", _SPARK_READ, str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["rows"] == 4 * len(middle_day(starts))
    assert found["types"]["trace_start"] == "timestamp"
    assert found["types"]["score"] == "double" and found["types"]["criterion"] == "string"
    assert found["failing"] == {"writer": 1}
    assert found["first"].startswith("2025-12-02T01:00:00")
