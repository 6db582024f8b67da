"""`tracejudge run FILE.py`: run an experiment a Python file describes.

The file names, at its top level, `dataset` (a .jsonl or .csv path, relative to the
file, or a list of dicts), `task` (the agent's function, sync or async) and `criteria`
(checks, judged criteria as text, functions `fn(output, expected)`); optionally `name`,
`params` (a dict recorded with the run) and `repeats`. It sets up its own tracing
(`ComposoTracer.init(instruments=...)`) as the application does. The run goes to `--out`
(default: a new directory under `.tracejudge/runs`), whose path is printed last; with
`--to URL` it goes to that `tracejudge serve` (its key written into the URL, or
TRACEJUDGE_API_KEY), each row's trace with its scores, and its page there is printed last
(with `--out` too, it goes to both).

Exit status: 0 done; 1 some rows could not be run or scored (their errors are in the
run's rows); 2 bad usage (the file, its names, the dataset, the judge).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import runpy
import sys
from pathlib import Path
from typing import Any

from tracejudge.cli._errors import UsageError
from tracejudge.cli._judging import JudgingLine, add_quiet
from tracejudge.cli._progress import Progress
from tracejudge.cli._settings import (
    JUDGE,
    PER_TRACE,
    SPEND,
    TOKENS,
    add_settings,
    judged_service,
    positive,
)

__all__ = ["add_parser", "run"]


def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise UsageError(f"{path}: no such file (give the Python file describing the experiment)")
    sys.path.insert(0, str(path.parent.resolve()))  # the file's own imports, as `python FILE`
    try:
        return runpy.run_path(str(path), run_name="__tracejudge_run__")
    except Exception as error:
        raise UsageError(f"{path} raised {type(error).__name__}: {error}") from None


def _param(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


class _Bar:
    """The progress bar, made when the run says how many row runs there are."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.bar: Progress | None = None
        self.quiet = quiet

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            enabled = total > 1 and not self.quiet
            self.bar = Progress(total, "row", verb="run", enabled=enabled).__enter__()
        self.bar.advance()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring."""
    from tracejudge.errors import BadRequestError
    from tracejudge.experiments import aexperiment

    path = Path(args.file)
    names = _load(path)
    missing = [n for n in ("dataset", "task", "criteria") if n not in names]
    if missing:
        raise UsageError(
            f"{path} does not define {', '.join(missing)}: an experiment file names its "
            "`dataset` (a .jsonl/.csv path or a list of dicts), `task` (your agent's "
            "function) and `criteria` at its top level"
        )
    dataset = names["dataset"]
    if isinstance(dataset, (str, Path)) and not Path(dataset).is_absolute():
        dataset = path.parent / dataset
    params = dict(names.get("params") or {})
    params.update(dict(args.param or []))
    service = judged_service(args)
    bar = _Bar(quiet=args.quiet)
    try:
        # The live judging line on a line of its own: the bar appears only with the rows.
        with JudgingLine(enabled=not args.quiet):
            stored = asyncio.run(
                aexperiment(
                    dataset,
                    names["task"],
                    names["criteria"],
                    name=args.name or names.get("name"),
                    repeats=args.repeats or int(names.get("repeats", 1)),
                    concurrency=args.concurrency,
                    params=params,
                    directory=args.out,
                    to=args.to,
                    service=service,
                    progress=bar,
                )
            )
    except BadRequestError as error:
        raise UsageError(f"{path}: {error}") from None
    finally:
        bar.close()
    failed = [r for r in stored.results if r.error is not None]
    scores = [s for r in stored.results for s in r.scores if s.passed is not None]
    passed = sum(bool(s.passed) for s in scores)
    record = stored.record
    print(
        f"{record.name}: {record.rows} rows x {record.repeats}, {passed}/{len(scores)} "
        f"verdicts passed, {len(failed)} rows failed to run or score"
    )
    for result in failed[:10]:
        print(
            f"tracejudge run: row {result.id} (repeat {result.repeat}): {result.error}",
            file=sys.stderr,
        )
    if stored.directory is not None:
        print(stored.directory)
    if stored.url is not None:
        print(stored.url)
    return 1 if failed else 0


def add_parser(commands: Any) -> None:
    """Register `run` on the `tracejudge` command's subparsers."""
    parser = commands.add_parser(
        "run",
        help="run an experiment: your task on every row of a dataset, scored and recorded",
        description="Run the experiment FILE.py describes (its top-level `dataset`, `task`, "
        "`criteria`; optionally `name`, `params`, `repeats`): the task on every row, traced, "
        "scored with the criteria, and recorded in a run directory for `tracejudge compare`. "
        "Exit status: 0 done, 1 rows that could not be run or scored, 2 bad usage.",
    )
    parser.add_argument("file", metavar="FILE.py", help="the Python file describing the experiment")
    parser.add_argument(
        "--out",
        help="the run directory (default: new under .tracejudge/runs, unless --to is given)",
    )
    parser.add_argument(
        "--to",
        metavar="URL",
        help="store the run on this tracejudge server (http://host:port; its API key written "
        "into the URL, or TRACEJUDGE_API_KEY): its rows' traces and scores, listed at URL/ui/runs",
    )
    parser.add_argument("--name", help="the run's name (default: the file's `name`, or the task's)")
    parser.add_argument(
        "--repeats", type=positive(int), help="runs of the task per row (default: the file's, or 1)"
    )
    parser.add_argument(
        "--param",
        action="append",
        type=_param,
        metavar="KEY=VALUE",
        help="a parameter recorded with the run (repeatable; VALUE read as JSON when it is)",
    )
    add_quiet(parser)
    add_settings(
        parser,
        (*JUDGE, *TOKENS, *SPEND, "single_call", "no_explore", "fail_under", "concurrency"),
        defaults={"max_concurrency": PER_TRACE},
    )
    parser.set_defaults(run=run)
