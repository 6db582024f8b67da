"""`tracejudge score --ray [ADDRESS] --parquet DIR`: the same scoring on a Ray cluster.

The criteria, the judge settings and the bar are `score`'s (`--concurrency`: traces each
worker scores at once; `--max-concurrency`: the judge's calls in flight over the whole
cluster, held by one actor); the work is
`tracejudge.bulk.score_archive`'s (see there); the results are Parquet under `--parquet`
instead of `--out` lines. Exit status as `score`'s: 1 for a trace or shard that could
not be scored, a judgement whose judge failed, or a trace failing `--fail-under`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tracejudge.cli._errors import UsageError
from tracejudge.cli._progress import Progress
from tracejudge.cli._settings import evaluation_settings

__all__ = ["run_on_ray"]


def run_on_ray(args: argparse.Namespace, criteria: list[Any]) -> int:
    from tracejudge.bulk import score_archive
    from tracejudge.errors import ConfigurationError, MissingDependencyError

    if not args.parquet:
        raise UsageError("--ray writes Parquet: give the directory with --parquet DIR")
    for flag in ("out", "html", "resume", "json_lines"):
        if getattr(args, flag, None):
            raise UsageError(
                f"--{flag.replace('_', '-')} is not for --ray runs: the results are Parquet "
                "under --parquet (a stopped run resumes by itself)"
            )
    settings = evaluation_settings(args)
    address = None if args.ray == "local" else args.ray
    bar = Progress(1, "trace", label="scoring traces on Ray")
    seen = 0

    def progress(scored: int, found: int) -> None:
        nonlocal seen
        bar.total = found
        bar.advance(scored - seen)
        seen = scored

    try:
        with bar:
            result = score_archive(
                args.inputs,
                criteria,
                args.parquet,
                address=address,
                settings=settings,
                traces_per_shard=args.shard_traces,
                traces_at_once=args.concurrency,
                progress=progress,
            )
    except (ConfigurationError, MissingDependencyError) as error:
        raise UsageError(str(error)) from None
    failing = sum(failing for _, _, failing in result.criteria.values())
    summary = {
        "files": result.files,
        "traces": result.traces,
        "scored": result.scored,
        "without_calls": result.without_calls,
        "shards": result.shards,
        "resumed_shards": result.resumed_shards,
        "rows": result.rows,
        "failed": len(result.failed),
        "judge_failures": result.judge_failures,
        "judge_cost_usd": round(result.cost_usd, 6),
        "judge_tokens": result.tokens,
        "most_judge_calls_in_flight": result.most_in_flight,
        "worker_peak_rss_mib": round(result.worker_peak_rss_kib / 1024, 1),
        "seconds": round(result.seconds, 3),
        "scoring_seconds": round(result.scoring_seconds, 3),
        "criteria": {
            c: {"lines": n, "mean": mean, "failing_traces": f}
            for c, (n, mean, f) in result.criteria.items()
        },
        "parquet": result.out,
    }
    if args.json:
        print(json.dumps({"summary": summary}))
    else:
        print(
            f"scored {result.scored:,} of {result.traces:,} traces from {result.files:,} files "
            f"on Ray in {result.seconds:.1f} s ({result.resumed_shards} of {result.shards} "
            f"shards resumed); {result.rows:,} rows in {result.out}"
        )
        for criterion, (lines, mean, fails) in result.criteria.items():
            shown = f"{mean:.2f}" if mean is not None else "-"
            print(f"  {criterion}: mean {shown}, {fails:,} of {lines:,} traces failing")
    for problem in result.failed[:10]:
        print(f"tracejudge score: {problem}", file=sys.stderr)
    if result.failed or result.judge_failures:
        return 1
    return 1 if args.fail_under is not None and failing else 0
