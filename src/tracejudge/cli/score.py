"""`tracejudge score FILE`: score the traces in an OTLP or MultiAgentTrace JSON file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from tracejudge import checks
from tracejudge.cli._errors import UsageError
from tracejudge.cli._inputs import load_traces
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.report import format_results

#: The checks that need no settings, by name: `--check` choices and the default set.
CHECKS_BY_NAME = {check.name: check for check in checks.ALL}


def score_traces(
    traces: Sequence[MultiAgentTrace],
    criteria: Sequence[Any],
    *,
    judge: str | None = None,
    out: TextIO | None = None,
    as_json: bool = False,
) -> list[list[MultiAgentTraceResponse]]:
    """Score every trace against every criterion (checks and natural-language criteria);
    print each trace's report as text, or each response as a JSON line, to `out`
    (standard output by default). A progress line goes to a terminal's stderr."""
    from tracejudge.client import Composo

    out = out or sys.stdout
    results: list[list[MultiAgentTraceResponse]] = []
    progress = sys.stderr.isatty() and len(traces) > 1
    with Composo(judge=judge) as client:
        for index, trace in enumerate(traces, 1):
            if progress:
                print(f"\rscoring trace {index}/{len(traces)}", end="", file=sys.stderr)
            answer = client.evaluate_trace(trace, criteria=list(criteria))
            responses = answer if isinstance(answer, list) else [answer]
            results.append(responses)
            if as_json:
                for response in responses:
                    print(response.model_dump_json(), file=out)
            else:
                print(f"trace {index} of {len(traces)}", file=out)
                print(format_results(trace, responses), file=out)
                print(file=out)
    if progress:
        print(file=sys.stderr)
    return results


def run(args: argparse.Namespace) -> int:
    """The command: load, keep the traces with LLM interactions, score, print."""
    traces = load_traces(args.file)
    scorable = [t for t in traces if t.has_llm_interactions]
    if not scorable:
        # Why the converter found nothing (not OTLP, no spans, ...): its warnings say.
        warnings = [str(w) for w in getattr(traces, "warnings", [])[:10]]
        raise UsageError(f"{args.file} holds no LLM interaction to score", warnings)
    criteria: list[Any] = [CHECKS_BY_NAME[name] for name in args.check or CHECKS_BY_NAME]
    if args.max_tokens is not None or args.max_seconds is not None:
        criteria.append(checks.budgets(max_tokens=args.max_tokens, max_seconds=args.max_seconds))
    criteria.extend(args.criterion or [])
    score_traces(scorable, criteria, judge=args.judge, as_json=args.json)
    return 0


def _positive(kind: type[int] | type[float]) -> Any:
    """An argparse type: a number of `kind` above zero (argparse names the option)."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            expected = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
        return value

    return parse


def add_parser(commands: Any) -> None:
    """Register `score` on the `tracejudge` command's subparsers."""
    score = commands.add_parser(
        "score",
        help="score traces from an OTLP or trace JSON file",
        description="Score the traces in a file with the deterministic checks and, "
        "given a judge, natural-language criteria. Exit status: 0 scored, 1 scoring "
        "failed (e.g. no judge for --criterion), 2 bad usage or input.",
    )
    score.add_argument("file", help="OTLP protobuf, OTLP/JSON lines, or MultiAgentTrace JSON")
    score.add_argument(
        "--check",
        action="append",
        choices=list(CHECKS_BY_NAME),
        help="a deterministic check to run (repeatable; default: all)",
    )
    score.add_argument(
        "--criterion",
        action="append",
        help='a natural-language criterion, e.g. "Reward correct tool use" (needs a judge)',
    )
    score.add_argument(
        "--max-tokens", type=_positive(int), help="add the budgets check: tokens each agent may use"
    )
    score.add_argument(
        "--max-seconds",
        type=_positive(float),
        help="add the budgets check: seconds each agent may take",
    )
    score.add_argument("--judge", help="judge spec, e.g. openai:gpt-4.1-mini")
    score.add_argument("--json", action="store_true", help="print results as JSON lines")
    score.set_defaults(run=run)
