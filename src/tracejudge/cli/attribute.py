"""`tracejudge attribute INPUT...`: which agent, which step caused each failed trace.

The inputs are read as `tracejudge score` reads them (files, directories, globs, `-`;
OTLP/JSON lines, OTLP protobuf, gzip, MultiAgentTrace JSON), spooled by trace, and each
trace is attributed on its own through the evaluation service: the deterministic checks'
findings with their exact steps first (the earliest root cause before its consequences),
then the judge methods picked with `--method` (all_at_once, step_by_step, binary_search,
counterfactual; they need `--judge`). A trace that did not fail (no check or criterion
failed) is listed as such, unless `--outcome` or `--failed` says it failed.

Prints each failed trace's causes (`--top N` of them), or with `--json` one JSON object
`{"traces": [...], "summary": {...}}`; `--out` writes one JSON line per trace (the
`tracejudge.models.Attribution`, with `trace_id` and `source`). Exit status: 0 done; 1 a
trace could not be attributed (a judge error); 2 bad usage or input; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from tracejudge.cli._errors import UsageError
from tracejudge.cli._judging import JudgingLine, add_quiet
from tracejudge.cli._progress import Progress
from tracejudge.cli._settings import JUDGE, PER_TRACE, SPEND, TOKENS, add_settings, judged_service
from tracejudge.cli._settings import positive as _positive
from tracejudge.cli._sources import expand_inputs
from tracejudge.cli._spool import Spool
from tracejudge.cli.score import CHECKS_BY_NAME, _spool_source, _traces
from tracejudge.errors import ComposoError
from tracejudge.evaluation.criteria_file import read_criteria_file
from tracejudge.models import ATTRIBUTION_METHODS

__all__ = ["add_parser", "run"]


@dataclass
class _State:
    spool: Spool
    args: argparse.Namespace
    methods: list[str]
    criteria: list[Any] | None
    progress: Progress
    results: list[dict[str, Any]] = field(default_factory=list)
    #: Each result's trace as `score` names it (its file and the key `score` gives it).
    names: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    out: Any = None


def _methods(args: argparse.Namespace) -> list[str]:
    picked = list(dict.fromkeys(args.method or ["checks"]))
    if "checks" not in picked and not args.no_checks:
        picked.insert(0, "checks")
    if args.no_checks:
        picked = [m for m in picked if m != "checks"]
        if not picked:
            raise UsageError("--no-checks leaves no method: add --method (and --judge)")
    return picked


def _criteria(args: argparse.Namespace) -> list[Any] | None:
    if not (args.check or args.criterion or args.criteria_file):
        return None  # the built-in checks
    criteria: list[Any] = [CHECKS_BY_NAME[name] for name in args.check or []]
    criteria.extend(args.criterion or [])
    if args.criteria_file:
        criteria.extend(read_criteria_file(args.criteria_file, "--criteria-file"))
    return criteria


async def _attribute_one(service: Any, state: _State, key: str, source: str) -> None:
    from tracejudge.evaluation.attribution import AttributionRequest
    from tracejudge.report import trace_name

    args = state.args
    try:
        for trace_id, trace in _traces(state.spool, key):
            if not trace.has_llm_interactions:
                continue
            request = AttributionRequest(
                trace=trace,
                methods=state.methods,
                criteria=state.criteria,
                outcome=args.outcome,
                failed=True if args.failed else None,
                max_step_chars=args.max_step_chars,
            )
            try:
                attribution = await service.attribute(request)
            except ComposoError as error:
                state.problems.append(f"trace {trace_id}: {error}")
                continue
            line = {"trace_id": trace_id, "source": source, **attribution.model_dump(mode="json")}
            state.results.append(line)
            state.names.append(trace_name(trace_id, source))
            if state.out is not None:
                state.out.write(json.dumps(line) + "\n")
                state.out.flush()
    finally:
        state.progress.advance()


async def _attribute_all(service: Any, state: _State, todo: list[tuple[str, str]]) -> None:
    pending = iter(todo)

    async def worker() -> None:
        for key, source in pending:
            await _attribute_one(service, state, key, source)

    workers = max(1, min(state.args.concurrency, len(todo)))
    await asyncio.gather(*(worker() for _ in range(workers)))


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring for what it does and its exit status."""
    from tracejudge.errors import BadRequestError
    from tracejudge.evaluation import validate_criteria

    methods = _methods(args)
    criteria = _criteria(args)
    if criteria is not None:
        try:
            criteria = validate_criteria(list(criteria))[0]  # checked once, for every trace
        except BadRequestError as error:
            raise UsageError(f"bad criterion: {error}") from None
    service = judged_service(args)
    judged = [m for m in methods if m != "checks"]
    if judged and service.judge is None:
        raise UsageError(
            f"--method {' '.join(judged)} needs a judge: give --judge SPEC "
            "(e.g. openai:gpt-4.1-mini), or set TRACEJUDGE_JUDGE"
        )
    if criteria is not None:
        service.require_judge(criteria)
    sources = expand_inputs(args.inputs)
    if sum(s.path is None for s in sources) > 1:
        raise UsageError("- (standard input) can be given once")
    with tempfile.TemporaryDirectory(prefix="tracejudge-attribute-") as directory:
        spool = Spool(directory)
        try:
            warnings: list[str] = []
            for source in sources:
                _spool_source(source, spool, warnings)
            todo = spool.keys()
            if not todo:
                names = ", ".join(s.name for s in sources[:3])
                raise UsageError(f"{names} holds no trace to attribute", warnings[:10])
            progress = Progress(
                len(todo),
                "trace",
                enabled=len(todo) > 1 and not args.quiet,
                verb="attributed",
                label="attributing traces",
            )
            state = _State(spool, args, methods, criteria, progress)
            try:
                state.out = open(args.out, "w", encoding="utf-8") if args.out else None
            except OSError as error:
                raise UsageError(f"cannot write --out {args.out}: {error.strerror}") from None
            try:
                with progress, JudgingLine(enabled=not args.quiet, progress=progress):
                    asyncio.run(_attribute_all(service, state, todo))
            except KeyboardInterrupt:
                print(
                    f"tracejudge attribute: interrupted after {len(state.results)} traces",
                    file=sys.stderr,
                )
                return 130
            finally:
                if state.out is not None:
                    state.out.close()
        finally:
            spool.close()
    _print(state, args)
    for problem in state.problems[:10]:
        print(f"tracejudge attribute: {problem}", file=sys.stderr)
    return 1 if state.problems else 0


def _print(state: _State, args: argparse.Namespace) -> None:
    from tracejudge.models import Attribution
    from tracejudge.report import format_attribution

    failed = [r for r in state.results if r["failed"]]
    summary = {
        "traces": len(state.results),
        "failed": len(failed),
        "attributed": sum(1 for r in failed if r["causes"]),
        "errors": len(state.problems),
        "methods": state.methods,
    }
    if args.json:
        print(json.dumps({"traces": state.results, "summary": summary}))
        return
    for line, name in zip(state.results, state.names, strict=True):
        if not line["failed"] and not args.all:
            continue
        attribution = Attribution.model_validate({k: v for k, v in line.items() if k != "source"})
        print(format_attribution(attribution, name=name, top=args.top))
        print()
    print(
        f"{summary['traces']} traces, {summary['failed']} failed, {summary['attributed']} "
        f"with a cause ({', '.join(state.methods)})"
    )


def add_parser(commands: Any) -> None:
    """Register `attribute` on the `tracejudge` command's subparsers."""
    parser = commands.add_parser(
        "attribute",
        help="which agent and step caused each failed trace: ranked causes with evidence",
        description="For each trace of the inputs that failed (a failing check or "
        "criterion, --outcome, or --failed), rank its causes: each an agent instance and a "
        "step (its model call, and the tool call where there is one), with the evidence, "
        "the method that found it and a confidence. The deterministic checks' findings come "
        "first; --method adds judge methods (they need --judge). Exit status: 0 done, 1 a "
        "trace could not be attributed, 2 bad usage or input, 130 interrupted.",
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="file, directory, glob or -")
    parser.add_argument(
        "--method",
        action="append",
        choices=list(ATTRIBUTION_METHODS),
        help="an attribution method (repeatable; default: checks; the checks' findings are "
        "always ranked first unless --no-checks)",
    )
    parser.add_argument(
        "--no-checks", action="store_true", help="leave the deterministic findings out"
    )
    parser.add_argument(
        "--check",
        action="append",
        choices=list(CHECKS_BY_NAME),
        help="a check that decides failure (repeatable; default: all built-in checks)",
    )
    parser.add_argument(
        "--criterion", action="append", help="a natural-language criterion that decides failure"
    )
    parser.add_argument("--criteria-file", help="criteria, one per line")
    parser.add_argument("--outcome", help="what went wrong, in words (every trace failed so)")
    parser.add_argument(
        "--failed", action="store_true", help="treat every trace as failed (look for a cause)"
    )
    parser.add_argument(
        "--top", type=_positive(int), default=5, help="causes shown per trace (default 5)"
    )
    parser.add_argument("--all", action="store_true", help="also list traces that did not fail")
    parser.add_argument(
        "--max-step-chars",
        type=_positive(int),
        default=3000,
        help="characters of one message the judge methods show (default 3000)",
    )
    add_quiet(parser)
    add_settings(
        parser,
        (*JUDGE, *TOKENS, *SPEND, "concurrency"),
        defaults={"concurrency": 4, "max_concurrency": PER_TRACE},
    )
    parser.add_argument("--out", help="write one JSON line per trace to this file")
    parser.add_argument(
        "--json", action="store_true", help='print one JSON object {"traces", "summary"}'
    )
    parser.set_defaults(run=run)
