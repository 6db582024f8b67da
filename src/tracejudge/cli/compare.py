"""`tracejudge compare BASELINE CANDIDATE`: two run directories compared, row by row.

Per agent and criterion: each run's pass rate and mean score, the paired difference with
its bootstrap interval, the exact sign test (McNemar's with one repeat) of the rows that
got worse against those that got better, the verdict (regressed, improved, unchanged,
inconclusive: `tracejudge.experiments.compare` says when), with repeats pass^k, pass@k and
the flaky rows, and the rows that regressed; then the cost and latency deltas. `--json`
prints it all as one object.

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

__all__ = ["add_parser", "format_comparison", "run"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _interval(interval: Any, percent: bool = True) -> str:
    if not interval:
        return ""
    low, high = interval
    return f" [{low:+.1%}, {high:+.1%}]" if percent else f" [{low:+.3f}, {high:+.3f}]"


def format_comparison(report: dict[str, Any], limit: int = 10) -> str:
    """The comparison (`Comparison.as_dict()`) as text: one block per agent and criterion,
    regressions first."""
    order = {"regressed": 0, "inconclusive": 1, "improved": 2, "unchanged": 3}
    lines = [f"baseline  {report['baseline']}", f"candidate {report['candidate']}", ""]
    level = report["policy"]["level"]
    for item in sorted(report["criteria"], key=lambda c: order[c["verdict"]]):
        before, after = item["baseline"], item["candidate"]
        lines.append(f"{item['agent']} / {item['criterion']}: {item['verdict'].upper()}")
        lines.append(f"  {item['reason']}")
        lines.append(
            f"  pass rate {_pct(before['pass_rate'])} -> {_pct(after['pass_rate'])}, "
            f"difference {_pct(item['pass_rate_difference'])}"
            f"{_interval(item['pass_rate_interval'])} ({1 - level:.0%} interval); "
            f"{item['paired_rows']} rows paired, {item['worse']} worse, {item['better']} better"
        )
        lines.append(
            f"  mean score {before['mean_score'] or 0:.3f} -> {after['mean_score'] or 0:.3f}, "
            f"difference {_num(item['score_difference'])}"
            f"{_interval(item['score_interval'], percent=False)}"
        )
        if max(before["repeats"], after["repeats"]) > 1:
            lines.append(
                f"  pass^k {_pct(before['pass_all_k'])} -> {_pct(after['pass_all_k'])}, "
                f"pass@k {_pct(before['pass_any_k'])} -> {_pct(after['pass_any_k'])}, "
                f"flaky rows {len(before['flaky_rows'])} -> {len(after['flaky_rows'])}"
            )
        if item["hard_breaks"]:
            lines.append(f"  hard breaks: {', '.join(item['hard_breaks'][:limit])}")
        if item["regressed_rows"]:
            more = len(item["regressed_rows"]) - limit
            shown = ", ".join(item["regressed_rows"][:limit]) + (f" (+{more})" if more > 0 else "")
            lines.append(f"  regressed rows: {shown}")
        if item["improved_rows"]:
            more = len(item["improved_rows"]) - limit
            shown = ", ".join(item["improved_rows"][:limit]) + (f" (+{more})" if more > 0 else "")
            lines.append(f"  improved rows: {shown}")
        lines.append("")
    latency = report["latency"]
    lines.append(
        f"task seconds per row (mean) {latency['baseline']['mean_seconds'] or 0:.3f} -> "
        f"{latency['candidate']['mean_seconds'] or 0:.3f}"
    )
    cost = report["cost"]
    for key in ("judge_calls", "judge_tokens", "judge_cost_usd"):
        before, after = cost["baseline"].get(key), cost["candidate"].get(key)
        if before is not None or after is not None:
            lines.append(f"{key.replace('_', ' ')} {before} -> {after}")
    errors = report["errors"]
    if errors["baseline"] or errors["candidate"]:
        lines.append(
            f"rows that failed to run or score {errors['baseline']} -> {errors['candidate']} "
            "(left out of the comparison)"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring."""
    from tracejudge.errors import BadRequestError
    from tracejudge.experiments import GatePolicy, compare_runs, read_run

    try:
        baseline, candidate = read_run(args.baseline), read_run(args.candidate)
    except BadRequestError as error:
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
        "`tracejudge run`) per agent and criterion, row by row. Exit status: 0 no failure "
        "(inconclusive is not one), 1 a regression with --fail-on-regression (or a hard "
        "break with --fail-on-hard-break), 2 bad usage.",
    )
    parser.add_argument("baseline", metavar="BASELINE", help="the run compared against")
    parser.add_argument("candidate", metavar="CANDIDATE", help="the new run")
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
    parser.set_defaults(run=run)
