"""`tracejudge bench attribution DATA... --judge SPEC --method M`: measure an attribution
method (and its judge) on labelled failed traces.

DATA: Who&When's JSON (a directory such as `Who&When/`, its split directories, or files),
MP-Bench's normalised records, or tracejudge's labelled traces (a MultiAgentTrace JSON
with `labels: [{agent, step}]`, `.json` or `.jsonl`). Every item is attributed by every
`--method` through the evaluation service; the table gives, per split and method, agent
accuracy, step accuracy (the step numbers must be equal: 10 for a true 1 is wrong), within
±k (`--k`), nDCG@k (`--ndcg-k`), each with a seeded bootstrap 95% interval, and seconds,
tokens and dollars per trace. `--out` writes the report as JSON (`tracejudge.models.
BenchReport`, every item included), `--html` as a self-contained page.

Exit status: 0 done (an item whose attribution failed counts as wrong, and is listed);
2 bad usage or data (one line naming the file and the problem); 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tracejudge.cli._errors import UsageError
from tracejudge.cli._progress import Progress
from tracejudge.cli._settings import JUDGE, PER_TRACE, SPEND, TOKENS, add_settings, judged_service
from tracejudge.cli._settings import positive as _positive
from tracejudge.models import ATTRIBUTION_METHODS

__all__ = ["add_parser", "run"]


def _write(path: str, text: str, option: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {option} {path}: {error.strerror or error}") from None


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring for what it does and its exit status."""
    from tracejudge.bench import read_items, run_bench
    from tracejudge.errors import BadRequestError
    from tracejudge.report import format_bench, render_bench_html

    methods = list(dict.fromkeys(args.method or ["checks"]))
    service = judged_service(args)
    judged = [m for m in methods if m != "checks"]
    if judged and service.judge is None:
        raise UsageError(
            f"--method {' '.join(judged)} needs a judge: give --judge SPEC "
            "(e.g. openai:gpt-4.1-mini), or set TRACEJUDGE_JUDGE"
        )
    try:
        items = read_items(args.data, ground_truth=not args.no_ground_truth)
    except BadRequestError as error:
        raise UsageError(str(error)) from None
    if args.limit:
        items = items[: args.limit]
    progress = Progress(
        len(items) * len(methods),
        "trace",
        enabled=len(items) * len(methods) > 1,
        verb="attributed",
        label="benchmarking",
    )
    try:
        with progress:
            report = asyncio.run(
                run_bench(
                    service,
                    items,
                    methods,
                    k=args.k,
                    ndcg_k=args.ndcg_k,
                    resamples=args.bootstrap,
                    seed=args.seed,
                    concurrency=args.concurrency,
                    max_step_chars=args.max_step_chars,
                    ground_truth=not args.no_ground_truth,
                    on_done=progress.advance,
                )
            )
    except KeyboardInterrupt:
        print("tracejudge bench: interrupted", file=sys.stderr)
        return 130
    report.sources = [str(path) for path in args.data]
    errors = [r for r in report.items if r.error]
    report.warnings.extend(f"{r.item} ({r.method}): {r.error}" for r in errors[:20])
    if args.out:
        _write(args.out, report.model_dump_json(indent=2) + "\n", "--out")
    if args.html:
        _write(args.html, render_bench_html(report), "--html")
    if args.json:
        print(json.dumps({"rows": [row.model_dump(mode="json") for row in report.rows]}))
    else:
        print(format_bench(report))
    return 0


def _at_least(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text!r}")
        return value

    return parse


def add_parser(commands: Any) -> None:
    """Register `bench` (and its `attribution` benchmark) on the command's subparsers."""
    bench = commands.add_parser(
        "bench",
        help="measure attribution methods and judges on labelled data (Who&When, MP-Bench, "
        "your own labelled traces)",
        description="Benchmarks of tracejudge's methods on labelled data.",
    )
    which = bench.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    attribution = which.add_parser(
        "attribution",
        help="agent and step accuracy of attribution methods, with bootstrap intervals",
        description="Attribute every labelled failed trace of DATA with each --method and "
        "report, per split and method, agent accuracy, step accuracy (whole numbers must "
        "match), within ±k, nDCG@k (several labelled steps), with seeded bootstrap 95% "
        "intervals, and seconds, tokens and dollars per trace. DATA: Who&When JSON (both "
        "splits, a directory or files), MP-Bench's normalised records, or MultiAgentTrace "
        "JSON with labels [{agent, step}]. Exit status: 0 done, 2 bad usage or data, 130 "
        "interrupted.",
    )
    attribution.add_argument("data", nargs="+", metavar="DATA", help="a file or directory")
    attribution.add_argument(
        "--method",
        action="append",
        choices=list(ATTRIBUTION_METHODS),
        help="a method to measure (repeatable; default: checks)",
    )
    attribution.add_argument(
        "--k", type=_at_least(0), default=1, help="steps of tolerance for 'within ±k' (default 1)"
    )
    attribution.add_argument(
        "--ndcg-k", type=_at_least(1), default=5, help="the k of nDCG@k (default 5)"
    )
    attribution.add_argument(
        "--bootstrap", type=_at_least(0), default=1000, help="bootstrap resamples (default 1000)"
    )
    attribution.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    attribution.add_argument(
        "--limit", type=_positive(int), help="only the first N items (a quick look)"
    )
    attribution.add_argument(
        "--no-ground-truth",
        action="store_true",
        help="do not tell the judge the correct answer (Who&When's harder setting)",
    )
    attribution.add_argument(
        "--max-step-chars",
        type=_positive(int),
        default=3000,
        help="characters of one message the judge reads (default 3000)",
    )
    add_settings(
        attribution,
        (*JUDGE, *TOKENS, *SPEND, "concurrency"),
        defaults={"concurrency": 4, "max_concurrency": PER_TRACE},
    )
    attribution.add_argument("--out", help="write the report (every item) as JSON here")
    attribution.add_argument("--html", help="write the report as a self-contained HTML page")
    attribution.add_argument("--json", action="store_true", help="print the rows as JSON")
    attribution.set_defaults(run=run)
