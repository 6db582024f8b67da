"""`tracejudge export`: the scores and verdicts of a server's store for a date range, as
Parquet (the `export` extra: pyarrow) or CSV, for DuckDB, pandas or Spark.

    tracejudge export --since 2026-12-01 --until 2026-12-08 -o scores.parquet
    tracejudge export --db postgresql://... --since 2026-12-01 --format csv -o -

One row per (trace, criterion, agent instance) of the traces that started in the range
(`tracejudge.server.api.export` lists the columns). `--db` is the server's store (default:
TRACEJUDGE_DB, else ./tracejudge.db); the same rows come from a running server at
`GET /api/v1/export`. Exit status: 0 written, 2 bad usage (a time that is not one, a
store that cannot be opened, Parquet without pyarrow).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from tracejudge import _env
from tracejudge.cli._errors import UsageError
from tracejudge.cli._moment import moment
from tracejudge.errors import ConfigurationError, MissingDependencyError

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring."""
    from tracejudge.server.api.export import export_rows, write_csv, write_parquet
    from tracejudge.server.store import open_store

    since = moment("--since", args.since)
    until = moment("--until", args.until) if args.until else time.time()
    if since >= until:
        raise UsageError("--since must be before --until")
    kind = args.format or ("csv" if args.output.endswith(".csv") else "parquet")
    if kind == "parquet" and args.output == "-":
        raise UsageError("Parquet is not written to stdout: give -o FILE, or --format csv")
    db = args.db or _env.environ().get("TRACEJUDGE_DB") or "./tracejudge.db"
    try:
        store = open_store(db)
    except ConfigurationError as error:
        raise UsageError(str(error)) from None
    try:
        pages = export_rows(store, since, until)
        if kind == "parquet":
            count = write_parquet(pages, args.output)
        elif args.output == "-":
            count = write_csv(pages, sys.stdout)
        else:
            with open(args.output, "w", encoding="utf-8", newline="") as out:
                count = write_csv(pages, out)
    except MissingDependencyError as error:
        raise UsageError(f"--format parquet: {error}; or give --format csv") from None
    except OSError as error:
        raise UsageError(f"cannot write -o {args.output}: {error.strerror or error}") from None
    finally:
        store.close()
    if args.output != "-":
        print(f"{count:,} rows written to {args.output}", file=sys.stderr)
    return 0


def add_parser(commands: Any) -> None:
    """Register `export` on the `tracejudge` command's subparsers."""
    parser = commands.add_parser(
        "export",
        help="scores and verdicts of a date range as Parquet or CSV, for DuckDB/pandas/Spark",
        description="Write every agent's latest score per criterion on the stored traces "
        "that started from --since to --until, one row per trace, criterion and agent "
        "instance. Exit status: 0 written, 2 bad usage.",
    )
    parser.add_argument("--since", required=True, help="from (ISO 8601, UTC unless it says)")
    parser.add_argument("--until", help="to, excluded (default: now)")
    parser.add_argument(
        "--db", help="the server's store: a SQLite file or postgresql://... (TRACEJUDGE_DB)"
    )
    parser.add_argument(
        "--format",
        choices=("parquet", "csv"),
        help="parquet (needs pip install 'tracejudge[export]') or csv; default from -o's "
        "suffix, else parquet",
    )
    parser.add_argument(
        "-o", "--output", required=True, help="the file to write (- : CSV to stdout)"
    )
    parser.set_defaults(run=run)
