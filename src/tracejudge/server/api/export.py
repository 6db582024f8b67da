"""Scores and verdicts for analysis: every agent's latest score per criterion on the
traces that started in a time range, as Parquet or CSV, read as they are by DuckDB,
pandas or Spark.

- `GET /api/v1/export?since=...&until=...&format=parquet|csv` (`until` defaults to now);
- `tracejudge export --db URL --since ... --until ... --format parquet -o scores.parquet`.

One row per (trace, criterion, agent instance): the columns of `COLUMNS`. Times are UTC
(Parquet: timestamps in microseconds with the UTC zone; CSV: ISO 8601 with `Z`); empty
values are nulls (CSV: empty fields). Parquet needs `pyarrow` (`pip install
'tracejudge[export]'`); CSV needs nothing. The rows are read a page of traces at a time,
so an export of millions of rows never holds them all (Parquet: a row group per page).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import tempfile
import time
from collections.abc import Iterator
from typing import IO, Any

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse

from tracejudge.errors import MissingDependencyError
from tracejudge.server.api.trends import iso
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.list_query import parse_moment, query_error
from tracejudge.server.http.operation import ApiRoute, Operation, query, text_query
from tracejudge.server.store import Store
from tracejudge.server.store.exports import ScoreExportRow
from tracejudge.server.work.context import context_of, in_thread

__all__ = [
    "COLUMNS",
    "EXPORT_PATH",
    "FORMATS",
    "export_rows",
    "routes",
    "write_csv",
    "write_parquet",
]

EXPORT_PATH = "/api/v1/export"
FORMATS = ("parquet", "csv")
#: The columns, in order, with their Parquet types (see `_schema`).
COLUMNS = tuple(f.name for f in dataclasses.fields(ScoreExportRow))
_TIMES = frozenset({"trace_start"})
_NUMBERS = frozenset({"trace_duration_s", "score", "bar"})
_MEDIA = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8"}
_CHUNK = 1 << 16


def export_rows(store: Store, since: float, until: float) -> Iterator[list[ScoreExportRow]]:
    """The rows of the traces that started in [since, until), a page at a time."""
    after: tuple[float, str] | None = None
    while True:
        page = store.exports.page(since, until, after)
        if page.rows:
            yield page.rows
        if page.after is None:
            return
        after = page.after


def _csv_value(name: str, value: Any) -> Any:
    if value is None:
        return ""
    if name in _TIMES:
        return iso(value)
    return value


def write_csv(pages: Iterator[list[ScoreExportRow]], out: IO[str]) -> int:
    """Write the rows as CSV with a header; how many rows."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    count = 0
    for rows in pages:
        for row in rows:
            writer.writerow([_csv_value(n, getattr(row, n)) for n in COLUMNS])
        count += len(rows)
    return count


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as error:
        raise MissingDependencyError("pyarrow", "export", "Parquet export") from error
    return pyarrow


def _schema(pa: Any) -> Any:
    types = {
        name: (
            pa.timestamp("us", tz="UTC")
            if name in _TIMES
            else pa.float64()
            if name in _NUMBERS
            else pa.string()
        )
        for name in COLUMNS
    }
    nullable = {
        "trace_duration_s",
        "service",
        "service_version",
        "root_agent",
        "rule",
        "score",
        "verdict",
    }
    return pa.schema([pa.field(n, types[n], nullable=n in nullable) for n in COLUMNS])


def write_parquet(pages: Iterator[list[ScoreExportRow]], out: IO[bytes] | str) -> int:
    """Write the rows as Parquet (a row group per page); how many rows. A file with no
    row still has the columns."""
    pa = _pyarrow()
    schema = _schema(pa)
    count = 0
    with pa.parquet.ParquetWriter(out, schema, compression="zstd") as writer:
        for rows in pages:
            columns = {
                n: [int(getattr(r, n) * 1_000_000) if n in _TIMES else getattr(r, n) for r in rows]
                for n in COLUMNS
            }
            writer.write_table(pa.table(columns, schema=schema))
            count += len(rows)
    return count


# ---------------------------------------------------------------------------- the API


def _range(request: Request) -> tuple[float, float, str]:
    params = request.query_params
    unknown = sorted(set(params) - {"since", "until", "format"})
    if unknown:
        raise query_error(unknown[0], "not a parameter here; give since, until, format")
    if not params.get("since"):
        raise query_error("since", "give the start of the range (ISO 8601 or Unix seconds)")
    since = parse_moment("since", params["since"])
    until = parse_moment("until", params["until"]) if params.get("until") else time.time()
    if since >= until:
        raise query_error("since", "must be before until")
    kind = params.get("format") or "parquet"
    if kind not in FORMATS:
        raise query_error("format", f"{kind!r} is not one of {', '.join(FORMATS)}")
    return since, until, kind


def _spooled(store: Store, since: float, until: float, kind: str) -> IO[bytes]:
    """The export written to a temporary file (spilled to disk past a few megabytes)."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115
    pages = export_rows(store, since, until)
    if kind == "parquet":
        write_parquet(pages, spool)
    else:
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="")
        write_csv(pages, text)
        text.flush()
        text.detach()
    spool.seek(0)
    return spool


def _chunks(spool: IO[bytes]) -> Iterator[bytes]:
    while chunk := spool.read(_CHUNK):
        yield chunk


async def get_export(request: Request) -> StreamingResponse:
    since, until, kind = _range(request)
    if kind == "parquet":
        try:
            _pyarrow()
        except MissingDependencyError as error:
            raise ApiError(400, f"format=parquet: {error}; or ask format=csv") from None
    store = context_of(request).store
    spool = await in_thread(_spooled, store, since, until, kind)
    name = f"tracejudge-scores-{iso(since)[:10]}-{iso(until)[:10]}.{kind}"
    return StreamingResponse(
        _chunks(spool),
        media_type=_MEDIA[kind],
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
        },
        background=BackgroundTask(spool.close),
    )


routes = [
    ApiRoute(
        EXPORT_PATH,
        get_export,
        methods=["GET"],
        operation=Operation(
            "Scores and verdicts of the traces that started in a time range, as Parquet or "
            "CSV: one row per trace, criterion and agent instance",
            {
                "200": {
                    "description": "The file",
                    "content": {
                        _MEDIA["parquet"]: {"schema": {"type": "string", "format": "binary"}},
                        "text/csv": {"schema": {"type": "string"}},
                    },
                }
            },
            errors=(400, 422),
            parameters=[
                text_query("since", "from (ISO 8601, UTC unless it says; or Unix seconds)"),
                text_query("until", "to, excluded; default now"),
                query(
                    "format", {"type": "string", "enum": list(FORMATS)}, "parquet (default) or csv"
                ),
            ],
        ),
    ),
]
