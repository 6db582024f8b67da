"""The `tracejudge` command: `demo` and `score`.

tracejudge demo                      trace a scripted multi-agent program offline and score it
tracejudge score traces.jsonl        score traces from an OTLP file (protobuf or JSON lines)
                                     or a MultiAgentTrace JSON file
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from tracejudge import checks
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse

#: The checks that need no settings, by name: `--check` choices and the default set.
CHECKS_BY_NAME = {check.name: check for check in checks.ALL}


def load_traces(path: str | os.PathLike[str]) -> list[MultiAgentTrace]:
    """Traces from a file: a MultiAgentTrace JSON document (or a list of them), or OTLP."""
    data = Path(path).read_bytes()
    stripped = data.lstrip()
    if stripped.startswith((b"{", b"[")):
        try:
            document = json.loads(data)
        except ValueError:
            document = None  # JSON lines: several OTLP requests
        items = document if isinstance(document, list) else [document]
        if items and all(isinstance(i, dict) and "agent_instance_by_id" in i for i in items):
            return [MultiAgentTrace.model_validate(item) for item in items]
    from tracejudge.convert import traces_from_otlp

    return traces_from_otlp(data)


def _labels(responses: Sequence[MultiAgentTraceResponse]) -> tuple[list[str], list[str]]:
    """Short column labels, and a legend line for each criterion too long to be one."""
    labels: list[str] = []
    legend: list[str] = []
    for response in responses:
        name = response.criterion.split("(", 1)[0] or "criterion"
        if len(name) <= 18 and " " not in name:
            labels.append(name)
            if name != response.criterion:  # a check with settings: show them
                legend.append(f"{name}: {response.criterion}")
        else:
            labels.append(f"criterion{sum(label.startswith('criterion') for label in labels) + 1}")
            legend.append(f"{labels[-1]}: {response.criterion}")
    return labels, legend


def format_results(trace: MultiAgentTrace, responses: Sequence[MultiAgentTraceResponse]) -> str:
    """A table of agents x criteria, the overall row, then every finding below 1.0 in full."""
    labels, legend = _labels(responses)
    width = max([len(a.name) for a in trace.iter_agents()] + [7]) + 2
    lines = [" " * width + "  ".join(f"{label:>5}" for label in labels)]

    def cells(scores: Sequence[float | None]) -> str:
        shown = ["n/a" if v is None else f"{v:.2f}" for v in scores]
        return "  ".join(
            f"{v:>{max(len(label), 5)}}" for v, label in zip(shown, labels, strict=True)
        )

    for agent in trace.iter_agents():
        lines.append(
            f"{agent.name:<{width}}" + cells([r.agent_scores.get(agent.id) for r in responses])
        )
    lines.append(f"{'overall':<{width}}" + cells([r.overall_score for r in responses]))
    if legend:
        lines += ["", *legend]

    findings = []
    for response, label in zip(responses, labels, strict=True):
        for agent in trace.iter_agents():
            result = response.results_by_agent_name.get(agent.name)
            detail = result.results_by_agent_instance_id.get(agent.id) if result else None
            if detail is None or detail.score is None or detail.score >= 1.0:
                continue
            explanation = detail.explanation.replace("\n", "\n    ")
            if not explanation.startswith(agent.name):
                explanation = f"{agent.name}: {explanation}"
            findings.append(f"- [{label}] {explanation}")
    if findings:
        lines += ["", "Findings:", *findings]
    return "\n".join(lines)


def score_traces(
    traces: Sequence[MultiAgentTrace],
    criteria: Sequence[Any],
    *,
    judge: str | None = None,
    out: TextIO | None = None,
    as_json: bool = False,
) -> list[list[MultiAgentTraceResponse]]:
    """Score every trace against every criterion; print as text or JSON lines."""
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


def _cmd_score(args: argparse.Namespace) -> int:
    try:
        traces = load_traces(args.file)
    except FileNotFoundError:
        print(f"tracejudge score: no such file: {args.file}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"tracejudge score: cannot read {args.file}: {error}", file=sys.stderr)
        return 2
    scorable = [t for t in traces if t.has_llm_interactions]
    if not scorable:
        print(f"tracejudge score: {args.file} holds no LLM interaction to score", file=sys.stderr)
        for warning in getattr(traces, "warnings", [])[:10]:
            print(f"  {warning}", file=sys.stderr)
        return 1
    traces = scorable
    criteria: list[Any] = [CHECKS_BY_NAME[name] for name in args.check or CHECKS_BY_NAME]
    if args.max_tokens is not None or args.max_seconds is not None:
        criteria.append(checks.budgets(max_tokens=args.max_tokens, max_seconds=args.max_seconds))
    criteria.extend(args.criterion or [])
    score_traces(traces, criteria, judge=args.judge, as_json=args.json)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from tracejudge._demo import run_demo

    return run_demo(judge=args.judge, as_json=args.json, save_trace=args.save_trace)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracejudge", description="Trace LLM agents with OpenTelemetry and score the traces."
    )
    from tracejudge import __version__

    parser.add_argument("--version", action="version", version=f"tracejudge {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log what the converter and judges do"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo", help="trace a scripted multi-agent program offline and score it"
    )
    demo.add_argument(
        "--judge",
        help="also score natural-language criteria with this judge, e.g. openai:gpt-4.1-mini "
        "(default: TRACEJUDGE_JUDGE / OPENAI_API_KEY / OPENAI_BASE_URL when set)",
    )
    demo.add_argument("--json", action="store_true", help="print results as JSON lines")
    demo.add_argument("--save-trace", metavar="PATH", help="write the captured trace as JSON")
    demo.set_defaults(run=_cmd_demo)

    score = commands.add_parser("score", help="score traces from an OTLP or trace JSON file")
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
        "--max-tokens", type=int, help="add the budgets check: tokens each agent may use"
    )
    score.add_argument(
        "--max-seconds", type=float, help="add the budgets check: seconds each agent may take"
    )
    score.add_argument("--judge", help="judge spec, e.g. openai:gpt-4.1-mini")
    score.add_argument("--json", action="store_true", help="print results as JSON lines")
    score.set_defaults(run=_cmd_score)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Problems the commands report themselves are also logged; show the log only on request.
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, format="%(name)s: %(message)s"
    )
    from tracejudge.errors import ComposoError

    try:
        return int(args.run(args))
    except ComposoError as error:
        print(f"tracejudge {args.command}: {error}", file=sys.stderr)
        return 1
    except ImportError as error:  # an optional dependency, e.g. opentelemetry-proto
        print(f"tracejudge {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
