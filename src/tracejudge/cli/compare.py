"""`tracejudge compare BASELINE CANDIDATE`: two runs compared, row by row.

Each run is a run directory (`tracejudge run --out`), the lines `tracejudge score --out`
wrote, or a run on a `tracejudge serve`: its address (`http://host:8000/runs/ID`, or its
page's), or with `--server URL` its id or name (a name: the newest run of that name). A
server's key is written into its URL or read from TRACEJUDGE_API_KEY, and never printed.

Per agent and criterion: each run's pass rate and mean score, the paired difference with
its bootstrap interval, the exact sign test (McNemar's with one repeat) of the rows that
got worse against those that got better, the verdict (regressed, improved, unchanged,
inconclusive: `tracejudge.experiments.compare` says when), with repeats pass^k, pass@k and
the flaky rows, and the rows that regressed; then the cost and latency deltas. `--json`
prints it all as one object; `--html FILE` writes it as a page (`tracejudge.report`).

`--fail-on-regression` makes a regression (significant at `--level` and a drop of at
least `--min-effect`) exit 1; inconclusive comparisons (too few rows, a drop that is not
significant) exit 0 and say so. `--fail-on-hard-break` makes a hard break exit 1 too (a
row that passed in every one of at least `--hard-break-repeats` repeats and fails in
every one now).

Exit status: 0 no failure (or no gate asked for); 1 the gate failed; 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tracejudge.cli._errors import UsageError
from tracejudge.cli._settings import fraction, positive
from tracejudge.report import format_comparison, render_comparison_html

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring."""
    from tracejudge.errors import ComposoError
    from tracejudge.experiments import GatePolicy, compare_runs, read_any_run

    try:
        baseline = read_any_run(args.baseline, args.server)
        candidate = read_any_run(args.candidate, args.server)
    except ComposoError as error:
        raise UsageError(str(error)) from None
    policy = GatePolicy(
        level=args.level,
        min_effect=args.min_effect,
        min_rows=args.min_rows,
        hard_break_repeats=args.hard_break_repeats,
        seed=args.seed,
    )
    comparison = compare_runs(baseline, candidate, policy)
    gated = args.fail_on_regression or args.fail_on_hard_break
    result, reasons = comparison.gate(hard_breaks=args.fail_on_hard_break)
    report = comparison.as_dict()
    if args.html:
        try:
            with open(args.html, "w", encoding="utf-8") as out:
                out.write(render_comparison_html(report))
        except OSError as error:
            raise UsageError(
                f"cannot write --html {args.html}: {error.strerror or error}"
            ) from None
    if args.json:
        report["gate"] = {"result": result, "reasons": reasons, "enforced": gated}
        print(json.dumps(report))
    else:
        print(format_comparison(report))
        print()
        if result == "fail":
            print("REGRESSION" + (" (the gate fails)" if gated else " (no gate asked for)"))
        elif result == "inconclusive":
            print("INCONCLUSIVE: not enough evidence either way; not a failure")
        else:
            print("no regression")
        for reason in reasons:
            print(f"  {reason}")
    return 1 if gated and result == "fail" else 0


def add_parser(commands: Any) -> None:
    """Register `compare` on the `tracejudge` command's subparsers."""
    parser = commands.add_parser(
        "compare",
        help="compare two experiment runs row by row; gate CI on a significant regression",
        description="Compare the CANDIDATE run with the BASELINE run (directories written by "
        "`tracejudge run`, or runs on a tracejudge server) per agent and criterion, row by "
        "row. Exit status: 0 no failure (inconclusive is not one), 1 a regression with "
        "--fail-on-regression (or a hard break with --fail-on-hard-break), 2 bad usage.",
    )
    parser.add_argument(
        "baseline",
        metavar="BASELINE",
        help="the run compared against: a directory, score lines, URL/runs/ID, or with "
        "--server a run's id or name",
    )
    parser.add_argument("candidate", metavar="CANDIDATE", help="the new run (the same forms)")
    parser.add_argument(
        "--server",
        metavar="URL",
        help="read runs given by id or name from this tracejudge server (its API key written "
        "into the URL, or TRACEJUDGE_API_KEY); a name is its newest run",
    )
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a criterion's pass rate drops significantly by at least --min-effect",
    )
    parser.add_argument(
        "--fail-on-hard-break",
        action="store_true",
        help="exit 1 when a row that always passed now always fails (over "
        "--hard-break-repeats repeats or more)",
    )
    parser.add_argument(
        "--level", type=fraction, default=0.05, help="the significance level (default: 0.05)"
    )
    parser.add_argument(
        "--min-effect",
        type=fraction,
        default=0.05,
        help="the smallest drop in pass rate (0..1) that counts as a regression (default: 0.05)",
    )
    parser.add_argument(
        "--min-rows",
        type=positive(int),
        default=10,
        help="fewer rows in both runs than this is inconclusive (default: 10)",
    )
    parser.add_argument(
        "--hard-break-repeats",
        type=positive(int),
        default=3,
        help="repeats a row needs in both runs to be a hard break (default: 3)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default: 0)")
    parser.add_argument(
        "--json", action="store_true", help="print the comparison as one JSON object"
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="write the comparison as a self-contained page: regressions first, each changed "
        "row's two outputs side by side",
    )
    parser.set_defaults(run=run)
