"""`tracejudge calibrate LABELS --traces INPUT... --judge SPEC`: how far a judge agrees with
people's labels.

LABELS is a labels file (JSON lines: trace_id, agent and/or agent_instance_id, criterion,
verdict pass/fail and/or score 0..1, note, who, when; docs/guides/attribution-and-calibration.md).
The traces it names are read from `--traces` (files, directories, globs, as `tracejudge
score` reads them; a trace is found by its OTLP trace id, its MultiAgentTrace
`trace_id`, or its file's name without the extension). The judge scores each labelled
(trace, agent, criterion) `--samples` times; the report gives Cohen's kappa and
Krippendorff's alpha with bootstrap 95% intervals, the confusion matrix, precision and
recall per label, Spearman for graded labels, the band and what it supports, and with
`--samples k` the flip rate, variance and pass^k. `--server URL` reads the labels people
recorded on a tracejudge server's trace pages (when LABELS is not given) and the stored
traces they name (those `--traces` does not hold). `--json` prints the report
(`tracejudge.models.CalibrationReport`, every label's row included), `--out` writes it.

Exit status: 0 done; 1 the judge failed; 2 bad usage, labels or traces (one line naming
the file, line and field); 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from tracejudge.cli._errors import UsageError
from tracejudge.cli._judging import JudgingLine, add_quiet
from tracejudge.cli._server_source import ServerSource
from tracejudge.cli._settings import JUDGE, TOKENS, add_settings, evaluation_settings
from tracejudge.cli._settings import positive as _positive
from tracejudge.cli._sources import expand_inputs
from tracejudge.cli._spool import Spool
from tracejudge.cli.score import _spool_source, _traces

__all__ = ["add_parser", "run"]


def _load_traces(inputs: list[str], wanted: set[str]) -> dict[str, Any]:
    """The traces of `inputs` by every id they answer to, converted only when wanted."""
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tracejudge-calibrate-") as directory:
        spool = Spool(directory)
        try:
            warnings: list[str] = []
            for source in expand_inputs(inputs):
                _spool_source(source, spool, warnings)
            for key, origin in spool.keys():
                is_document = key.startswith(f"{origin}:")
                if not is_document and key not in wanted:
                    continue
                for trace_id, trace in _traces(spool, key):
                    for name in (trace_id, trace.trace_id, Path(origin).stem):
                        if name and name in wanted:
                            found.setdefault(name, trace)
        finally:
            spool.close()
    return found


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring for what it does and its exit status."""
    from tracejudge.calibration import acalibrate, read_labels
    from tracejudge.errors import BadRequestError, ComposoError
    from tracejudge.evaluation import build_service
    from tracejudge.report import format_calibration

    if args.labels is None and args.server is None:
        raise UsageError("give LABELS (a labels file) or --server URL (its people's labels)")
    if not args.traces and args.server is None:
        raise UsageError("give --traces INPUT... (the labelled traces) or --server URL")
    server = ServerSource(args.server) if args.server is not None else None
    try:
        with tempfile.TemporaryDirectory(prefix="tracejudge-labels-") as directory:
            path = Path(args.labels) if args.labels is not None else Path(directory, "labels")
            if args.labels is None and server is not None:
                server.write_labels(path)
            try:
                labels = read_labels(path)
            except BadRequestError as error:
                raise UsageError(str(error)) from None
        wanted = {label.trace_id for label in labels}
        traces = _load_traces(args.traces, wanted) if args.traces else {}
        if server is not None:
            traces.update(server.traces(wanted - set(traces)))
    finally:
        if server is not None:
            server.close()
    missing = sorted(wanted - set(traces))
    if len(missing) == len(wanted):
        where = "--traces holds" if server is None else "--traces and --server hold"
        raise UsageError(
            f"{where} none of the {len(wanted)} traces the labels name (e.g. "
            f"{missing[0]!r}); give the files that hold them"
        )
    # Repeated samples must each ask the model.
    settings = evaluation_settings(args, cache=False if args.samples > 1 else None)
    try:
        service = build_service(settings)
    except ComposoError as error:  # the judge --judge names cannot be built
        raise UsageError(f"--judge {args.judge}: {error}") from None
    try:
        with JudgingLine(enabled=not args.quiet):
            report = asyncio.run(
                acalibrate(
                    labels,
                    traces=traces,
                    judge=service,
                    samples=args.samples,
                    fail_under=args.fail_under,
                    resamples=args.bootstrap,
                    seed=args.seed,
                    concurrency=args.max_concurrency,
                )
            )
    except KeyboardInterrupt:
        print("tracejudge calibrate: interrupted", file=sys.stderr)
        return 130
    finally:
        asyncio.run(service.aclose())
    text = report.model_dump_json(indent=2)
    if args.out:
        try:
            Path(args.out).write_text(text + "\n", encoding="utf-8")
        except OSError as error:
            raise UsageError(f"cannot write --out {args.out}: {error.strerror}") from None
    print(text if args.json else format_calibration(report))
    return 0


def add_parser(commands: Any) -> None:
    """Register `calibrate` on the `tracejudge` command's subparsers."""
    parser = commands.add_parser(
        "calibrate",
        help="how far a judge agrees with people's labels: kappa, alpha, intervals, band",
        description="Judge what people labelled (a labels file: JSON lines of trace_id, "
        "agent, criterion, verdict pass/fail or score, note, who, when) and report Cohen's "
        "kappa and Krippendorff's alpha with bootstrap 95%% intervals, the confusion matrix, "
        "precision and recall per label, Spearman for graded labels, the band (below 0.4 "
        "exploration, 0.4-0.7 monitoring, 0.7 and up gating) and, with --samples k, flip "
        "rate, variance and pass^k. Exit status: 0 done, 1 the judge failed, 2 bad usage, "
        "labels or traces, 130 interrupted.",
    )
    parser.add_argument(
        "labels",
        metavar="LABELS",
        nargs="?",
        help="the labels file (JSON lines); default with --server: the server's labels",
    )
    parser.add_argument(
        "--traces",
        nargs="+",
        metavar="INPUT",
        help="files, directories or globs holding the labelled traces (OTLP or trace JSON)",
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        help="a tracejudge server: the labels people recorded on its trace pages (unless "
        "LABELS is given) and the stored traces they name; its key in the URL "
        "(http://KEY@host:port) or COMPOSO_API_KEY",
    )
    parser.add_argument(
        "--samples",
        type=_positive(int),
        default=1,
        help="judge each item this many times (no cache) and report repeatability",
    )
    parser.add_argument(
        "--bootstrap", type=_positive(int), default=1000, help="bootstrap resamples (default 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    add_quiet(parser)
    add_settings(
        parser,
        (*JUDGE, *TOKENS, "fail_under"),
        defaults={"max_concurrency": 8},
        deprecated={"--concurrency": "max_concurrency"},
    )
    parser.add_argument("--out", help="write the report as JSON to this file")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(run=run)
