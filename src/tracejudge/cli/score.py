"""`tracejudge score INPUT...`: score every trace of any number of OTLP or trace files.

The inputs (files, directories, globs, `-`; OTLP/JSON lines, OTLP protobuf, gzip,
MultiAgentTrace JSON or JSON lines, told apart by content) are read once, piece by
piece, into a spool grouped by trace id (`_spool`); then each trace is converted and
scored on its own through `EvaluationService`, `--concurrency` traces at a time, so
memory holds a few traces, not the input. Each scored trace's result lines go to
`--out` at once (`--resume` skips the traces already there); Ctrl-C stops after
keeping every finished line. At the end: the summary by agent name (as text; with
`--json`, one JSON object `{"summary": {...}}`; with `--json-lines`, every result line
as it is scored, then that object), and the HTML report with `--html`.

Every judged result carries the judge's usage (calls, tokens in, cached, out) and, for a
priced model, its cost (`--judge-prices`); the summary sums them per criterion and in
total. `--max-judge-cost` / `--max-judge-tokens` cap the run: past the cap no new
judgement starts (those in flight finish and are kept), the rest are written as not
evaluated with the reason, and the summary counts them. The cap is this run's: lines
resumed from `--out` do not count against it. `--single-call` judges all the criteria of
one agent in one judge call. A judgement too long for the judge's input budget is
explored (a digest of the trace and tools to read it); with `--no-explore` it is written
as not evaluated instead. A judgement whose judge failed (a timeout, an HTTP error, a
reply it could not read) is written as not evaluated with the reason; the checks and the
other judgements of the trace keep their results, and the run exits 1.

Exit status: 0 done; 1 an agent scoring below `--fail-under` on any criterion (never a
mean: one failed agent among ten fails the run), a judgement whose judge failed, or a
trace that could not be scored (its lines are not written, so `--resume` retries it); 2 bad
usage or input (one line naming the file and the problem); 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tracejudge import checks
from tracejudge.cli._errors import UsageError
from tracejudge.cli._judging import JudgingLine, add_quiet
from tracejudge.cli._outfile import OutFile, check_writable, read_finished
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
from tracejudge.cli._sources import Source, expand_inputs
from tracejudge.cli._spool import Spool
from tracejudge.errors import ComposoError
from tracejudge.evaluation.criteria_file import read_criteria_file
from tracejudge.models import MultiAgentTrace
from tracejudge.report import ScoreSummary, format_summary, result_lines, usd

logger = logging.getLogger("tracejudge.cli")

#: The checks that need no settings, by name: `--check` choices and the default set.
CHECKS_BY_NAME = {check.name: check for check in checks.ALL}


# --------------------------------------------------------------------------- reading


def _first_problem(error: ValidationError) -> str:
    """The first validation problem on one line: ``field.path: message (and N more)``."""
    problems = error.errors(include_url=False)
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "document"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _warn_shared(shared: list[tuple[str, list[str]]]) -> None:
    """Say which inputs share trace ids: their spans are scored together, as one trace
    each, under the first input's name (so there are fewer traces than inputs)."""
    if not shared:
        return
    files = list(dict.fromkeys(source for _, sources in shared for source in sources))
    named = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
    print(
        f"tracejudge score: {len(shared)} trace id{'s' if len(shared) != 1 else ''} "
        f"appear in more than one input ({named}); each is scored once, as one trace "
        "with the spans of every input that holds it, under the first input's name. If "
        "these are different runs, give each its own trace id or score the inputs apart.",
        file=sys.stderr,
    )


def _spool_source(source: Source, spool: Spool, warnings: list[str]) -> None:
    """Read one input into the spool. Raises `UsageError` naming the file and problem."""
    from tracejudge.convert import OTLPDecodeError, read_otlp_batches

    try:
        with source.open() as stream:
            for batch in read_otlp_batches(stream):
                spool.add_batch(source.name, batch)
                warnings.extend(f"{source.name}: {w}" for w in batch.warnings)
                for where, document in batch.documents:
                    if not (isinstance(document, dict) and "agent_instance_by_id" in document):
                        raise UsageError(
                            f"{source.name}, {where}: neither OTLP (resourceSpans) nor a "
                            "MultiAgentTrace (agent_instance_by_id)"
                        )
                    try:
                        MultiAgentTrace.model_validate(document)
                    except ValidationError as error:
                        raise UsageError(
                            f"{source.name}, {where} is not a valid MultiAgentTrace: "
                            f"{_first_problem(error)}"
                        ) from None
                    key = f"{source.name}:{where.replace(', ', ':').replace(' ', '')}"
                    spool.add_document(key, source.name, document)
    except OTLPDecodeError as error:
        raise UsageError(f"{source.name}: cannot read it as OTLP or trace JSON ({error})") from None
    except OSError as error:
        raise UsageError(f"cannot read {source.name}: {error.strerror or error}") from None


def _traces(spool: Spool, key: str) -> list[tuple[str, MultiAgentTrace]]:
    """The trace(s) spooled under `key`, converted: (trace id, trace)."""
    from tracejudge.convert import traces_from_records

    spans, events, document = spool.load(key)
    if document is not None:
        return [(key, MultiAgentTrace.model_validate(document))]
    traces = traces_from_records(spans, events, memo=spool.memo)
    return [(key, trace) for trace in traces]  # one trace id: at most one trace


# --------------------------------------------------------------------------- scoring


@dataclass
class _Run:
    """The state of one `score` run, shared by its workers."""

    spool: Spool
    criteria: list[Any]
    summary: ScoreSummary
    out: OutFile | None
    json_lines: bool
    html: bool
    progress: Progress
    scored: int = 0
    without_calls: int = 0
    failed: list[str] = field(default_factory=list)


async def _score_all(service: Any, run: _Run, todo: list[tuple[str, str]], workers: int) -> None:
    pending: Iterator[tuple[str, str]] = iter(todo)

    async def worker() -> None:
        for key, source in pending:  # shared iterator: each key goes to one worker
            await _score_one(service, run, key, source)

    await asyncio.gather(*(worker() for _ in range(max(1, min(workers, len(todo))))))


async def _score_one(service: Any, run: _Run, key: str, source: str) -> None:
    from tracejudge.evaluation.attribution import from_answers
    from tracejudge.report import trace_entry

    try:
        for trace_id, trace in _traces(run.spool, key):
            if not trace.has_llm_interactions:
                run.without_calls += 1
                continue
            try:
                responses = await service.score_trace(trace, run.criteria)
            except ComposoError as error:
                run.failed.append(f"trace {trace_id}: {error}")
                logger.warning("trace %s could not be scored: %s", trace_id, error)
                continue
            lines = result_lines(trace_id, trace, responses, source=source)
            if run.out is not None:
                run.out.write(lines)
            if run.json_lines:
                print("\n".join(json.dumps(line) for line in lines), flush=True)
            run.summary.add(lines)
            run.scored += 1
            if run.html:
                # a failed trace's deterministic causes, the top one marked on its timeline
                attribution = from_answers(trace, responses)
                entry = trace_entry(trace_id, trace, lines, attribution=attribution)
                run.spool.add_entry(trace_id, entry["worst"], entry)
    finally:
        run.progress.advance()


def _criteria(args: argparse.Namespace) -> list[Any]:
    names = args.check or ([] if (args.criterion or args.criteria_file) else list(CHECKS_BY_NAME))
    criteria: list[Any] = [CHECKS_BY_NAME[name] for name in names]
    if args.max_tokens is not None or args.max_seconds is not None:
        criteria.append(checks.budgets(max_tokens=args.max_tokens, max_seconds=args.max_seconds))
    criteria.extend(args.criterion or [])
    if args.criteria_file:
        criteria.extend(read_criteria_file(args.criteria_file, "--criteria-file"))
    return criteria


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring for what it does and its exit status."""
    if args.resume and not args.out:
        raise UsageError("--resume needs --out (the file whose finished traces to skip)")
    _check_outputs(args)
    criteria = _criteria(args)
    from tracejudge.errors import BadRequestError
    from tracejudge.evaluation import validate_criteria

    try:
        criteria = validate_criteria(list(criteria))[0]  # checked once, for every trace
    except BadRequestError as error:
        raise UsageError(f"bad criterion: {error}") from None
    service = judged_service(args, keep_judge_failures=True)  # the checks always stand
    service.require_judge(criteria)  # a missing judge fails now, not after reading
    if args.ray is not None:
        from tracejudge.cli._bulk import run_on_ray

        return run_on_ray(args, criteria)
    sources = expand_inputs(args.inputs)
    if sum(s.path is None for s in sources) > 1:
        raise UsageError("- (standard input) can be given once")
    summary = ScoreSummary(bar=args.fail_under)
    with tempfile.TemporaryDirectory(prefix="tracejudge-score-") as directory:
        spool = Spool(directory)
        try:
            return _run(args, criteria, service, sources, summary, spool)
        finally:
            spool.close()


def _check_outputs(args: argparse.Namespace) -> None:
    """Every file the run will write, checked before anything is read or scored: a bad
    path costs nothing, not a paid run."""
    check_writable(args.out, "--out")
    check_writable(args.html, "--html")
    if args.out and args.html and Path(args.out).resolve() == Path(args.html).resolve():
        raise UsageError(f"--out and --html both name {args.html}; give two files")


def _run(
    args: argparse.Namespace,
    criteria: list[Any],
    service: Any,
    sources: Sequence[Source],
    summary: ScoreSummary,
    spool: Spool,
) -> int:
    done: set[str] = set()
    if args.resume:

        def resumed(line: dict[str, Any]) -> None:
            done.add(str(line["trace_id"]))
            summary.add([line])
            if args.html:
                spool.add_line(line)

        read_finished(args.out, "trace_id", resumed)
    warnings: list[str] = []
    for source in sources:
        _spool_source(source, spool, warnings)
    keys = spool.keys()
    if not keys:
        raise UsageError(f"{_names(sources)} holds no LLM interaction to score", warnings[:10])
    _warn_shared(spool.shared())
    todo = [(key, source) for key, source in keys if key not in done]
    out = OutFile(args.out, append=bool(args.resume)) if args.out else None
    progress = Progress(len(todo), "trace", enabled=len(todo) > 1 and not args.quiet)
    state = _Run(spool, criteria, summary, out, args.json_lines, bool(args.html), progress)
    try:
        with progress, JudgingLine(enabled=not args.quiet, progress=progress):
            asyncio.run(_score_all(service, state, todo, args.concurrency))
    except KeyboardInterrupt:
        print(
            f"tracejudge score: interrupted after {state.scored} traces"
            + (f"; their lines are in {args.out}, --resume continues" if args.out else ""),
            file=sys.stderr,
        )
        return 130
    finally:
        if out is not None:
            out.close()
    summary.judge_budget = _judge_budget(service.judge)
    if state.scored == 0 and not done and not state.failed:
        raise UsageError(f"{_names(sources)} holds no LLM interaction to score", warnings[:10])
    if args.html:
        _write_html(args.html, summary, spool, done)
    spend = service.spend
    if args.json or args.json_lines:
        report = summary.as_dict()
        report.update(
            scored=state.scored,
            resumed=len(done),
            failed=len(state.failed),
            judge_failures=service.judge_failures,
        )
        if args.max_judge_cost is not None or args.max_judge_tokens is not None:
            report["judge_cap"] = {
                "max_cost_usd": spend.max_cost_usd,
                "max_tokens": spend.max_tokens,
                "reached": spend.stopped,
                "not_started": spend.refused,
            }
        print(json.dumps({"summary": report}))
    else:
        print(format_summary(summary))
        if done:
            print(f"({len(done)} traces resumed from {args.out})")
    if spend.stopped is not None:
        print(
            f"tracejudge score: {spend.stopped} ({usd(spend.total.cost_usd)}, "
            f"{spend.total.total_tokens:,} tokens, judgements in flight included); "
            f"{spend.refused:,} judgements were not started and are marked not evaluated",
            file=sys.stderr,
        )
    for problem in state.failed[:10]:
        print(f"tracejudge score: {problem}", file=sys.stderr)
    if service.judge_failures:
        first = service.first_judge_failure or ""
        # A timeout's reason already says which flag to raise (worded for the CLI).
        hint = "--judge-timeout-seconds"
        slow = "" if hint in first else f" (a slow judge: raise {hint})"
        print(
            f"tracejudge score: {service.judge_failures:,} judgements failed and are marked "
            f"not evaluated, with the reason (the checks' results are kept); the first: "
            f"{first}{slow}",
            file=sys.stderr,
        )
    if state.without_calls:
        logger.info("%d traces without a model call were skipped", state.without_calls)
    if state.failed or service.judge_failures:
        return 1
    if args.fail_under is not None and summary.failing_traces:
        return 1
    return 0


def _judge_budget(judge: Any) -> tuple[int, str] | None:
    """The judge's input budget per judgement and where it comes from (after the run: an
    HTTP judge asks its server at its first judgement), None for a judge without one."""
    budget = getattr(judge, "max_input_tokens", None)
    if not isinstance(budget, int):
        return None
    return budget, str(getattr(judge, "input_budget_source", "max_input_tokens"))


def _names(sources: Sequence[Source]) -> str:
    names = [s.name for s in sources]
    return names[0] if len(names) == 1 else f"{len(names)} inputs ({', '.join(names[:3])}...)"


def _write_html(path: str, summary: ScoreSummary, spool: Spool, resumed: set[str]) -> None:
    """The HTML report, worst traces first; traces resumed from --out are converted again
    (their spans are in the spool) and shown with their earlier lines."""
    from tracejudge.evaluation.attribution import from_answers
    from tracejudge.report import responses_of_lines, trace_entry, write_report

    for trace_id in resumed:
        lines = spool.lines(trace_id)
        responses = responses_of_lines(lines)
        for key, trace in _traces(spool, trace_id):
            attribution = from_answers(trace, responses)
            entry = trace_entry(key, trace, lines, attribution=attribution)
            spool.add_entry(key, entry["worst"], entry)
    try:
        with open(path, "w", encoding="utf-8") as out:
            write_report(out, summary, spool.entries_worst_first())
    except OSError as error:
        raise UsageError(f"cannot write --html {path}: {error.strerror or error}") from None


def add_parser(commands: Any) -> None:
    """Register `score` on the `tracejudge` command's subparsers."""
    score = commands.add_parser(
        "score",
        help="score the traces of OTLP or trace files, any number and size",
        description="Score every trace of the inputs with the deterministic checks and, "
        "given a judge, natural-language criteria. Inputs: files, directories (their OTLP "
        "and trace files), globs, or - for standard input; OTLP/JSON lines, OTLP protobuf, "
        "gzip, MultiAgentTrace JSON or JSON lines, told apart by content. Exit status: 0 "
        "done, 1 a score below --fail-under, a judgement whose judge failed (marked not "
        "evaluated, the checks kept) or a trace that could not be scored, 2 bad "
        "usage or input, 130 interrupted. An agent fails a criterion below its bar: "
        "--fail-under X for every criterion, else 1.0 for a check and 0.5 for a judged "
        "criterion.",
    )
    score.add_argument("inputs", nargs="+", metavar="INPUT", help="file, directory, glob or -")
    score.add_argument(
        "--check",
        action="append",
        choices=list(CHECKS_BY_NAME),
        help="a deterministic check to run (repeatable; default: all, unless criteria are given)",
    )
    score.add_argument(
        "--criterion",
        action="append",
        help='a natural-language criterion, e.g. "Reward correct tool use" (needs a judge)',
    )
    score.add_argument(
        "--criteria-file", help="a text file of criteria, one per line (# starts a comment)"
    )
    score.add_argument(
        "--max-tokens", type=positive(int), help="add the budgets check: tokens each agent may use"
    )
    score.add_argument(
        "--max-seconds",
        type=positive(float),
        help="add the budgets check: seconds each agent may take",
    )
    add_quiet(score)
    add_settings(
        score,
        (*JUDGE, *TOKENS, *SPEND, "single_call", "no_explore", "fail_under", "concurrency"),
        defaults={"max_concurrency": PER_TRACE},
    )
    score.add_argument("--out", help="write one JSON line per trace and criterion to this file")
    score.add_argument("--html", help="write the self-contained HTML report to this file")
    score.add_argument(
        "--resume", action="store_true", help="skip the traces already in --out, append the rest"
    )
    score.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    score.add_argument(
        "--json-lines",
        action="store_true",
        help="print each result line (as --out writes them) as it is scored, then the "
        "summary object",
    )
    score.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="score on a Ray cluster (pip install 'tracejudge[ray]'): its address "
        "(127.0.0.1:6379, ray://host:10001, auto), or none for RAY_ADDRESS or a cluster on "
        "this machine; inputs may be s3://, gs:// or file:// URIs; needs --parquet",
    )
    score.add_argument(
        "--parquet",
        metavar="DIR",
        help="with --ray: write the results as Parquet under this directory (path or URI), "
        "partitioned by date and criterion; a stopped run given the same DIR resumes",
    )
    score.add_argument(
        "--shard-traces",
        type=positive(int),
        default=200,
        help="with --ray: traces a worker scores as one unit (its memory; default 200)",
    )
    score.set_defaults(run=run)
