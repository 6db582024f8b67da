"""`tracejudge rubric DATASET.jsonl`: score a dataset against a rubric with a judge model
(the osmosis-style batch evaluation).

Each line of the dataset is a JSON object with `solution_str` and optionally
`ground_truth`, `original_input`, `metadata`, `extra_info`. Every item is judged
`--number` times (mean and standard deviation), `--max-concurrency` judge calls at once
(each within `--judge-timeout-seconds`), through
`tracejudge.rewards.aevaluate_rubric_batch`. An item's failure (a line that is not such
an object, the provider's error, an unreadable judge reply) is recorded on its result
line and in the summary, never fatal.

Output: one JSON line per item to `--out`, in the dataset's order, each written once the
items before it have finished (`line`, `score`, `scores`,
`std`, `explanation`, or `error` and `error_type`), then a summary: items, mean, std,
min, max, errors; with `--json`, the result lines and then ``{"summary": {...}}`` on
standard output. Exit status: 0 done (item errors included), 1 no item could be scored,
2 bad usage or input (the dataset cannot be read), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from tracejudge.cli._errors import UsageError
from tracejudge.cli._judging import JudgingLine, add_quiet
from tracejudge.cli._outfile import OutFile, check_writable
from tracejudge.cli._progress import Progress
from tracejudge.cli._settings import add_settings
from tracejudge.cli._settings import positive as _positive

__all__ = ["add_parser", "read_dataset", "run"]


def read_dataset(path: str) -> list[tuple[int, Any]]:
    """(line number, item) for each non-blank line; a line that is not JSON becomes an
    item that fails with that reason. Raises `UsageError` when the file cannot be read."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory; give a JSON lines file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(
            f"cannot read {path}: {getattr(error, 'strerror', None) or error}"
        ) from None
    items: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except ValueError as error:
            items.append((number, _Unreadable(f"line {number} is not JSON ({error})")))
    if not items:
        raise UsageError(f"{path} holds no item (one JSON object per line, with solution_str)")
    return items


class _Unreadable(dict[str, Any]):
    """A dataset line that failed to parse: an item without `solution_str` whose error
    says why (the batch records it like any malformed item)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


def _model_info(args: argparse.Namespace) -> dict[str, Any]:
    provider, sep, model = args.model.partition("/")
    if not sep:
        provider, sep, model = args.model.partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise UsageError(
            f"--model {args.model!r}: expected PROVIDER/MODEL, e.g. openai/gpt-4.1-mini"
        )
    info: dict[str, Any] = {"provider": provider.strip(), "model": model.strip()}
    if args.base_url:
        info["base_url"] = args.base_url
    if getattr(args, "judge_timeout_seconds", None) is not None:
        info["timeout"] = args.judge_timeout_seconds
    return info


def _rubric(args: argparse.Namespace) -> str:
    if args.rubric_file:
        from tracejudge.evaluation.criteria_file import read_text_file

        text = read_text_file(args.rubric_file, "--rubric-file").strip()
        if not text:
            raise UsageError(f"--rubric-file {args.rubric_file} is empty")
        return text
    if not args.rubric.strip():
        raise UsageError("--rubric is empty; say what to reward")
    return str(args.rubric)


def _line(number: int, item: Any, result: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"line": number}
    if isinstance(item, dict) and "id" in item:
        line["id"] = item["id"]
    if isinstance(item, _Unreadable):
        line.update(score=None, error=item.reason, error_type="ValueError")
    elif result.ok:
        line.update(
            score=result.score,
            scores=list(result.scores),
            std=result.std,
            explanation=result.explanation,
        )
    else:
        line.update(score=None, error=result.error, error_type=result.error_type)
    return line


def summarize(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """items, scored, errors, and mean / std / min / max of the items' scores."""
    scores = [line["score"] for line in lines if line.get("score") is not None]
    return {
        "items": len(lines),
        "scored": len(scores),
        "errors": len(lines) - len(scores),
        "mean": statistics.fmean(scores) if scores else None,
        "std": statistics.pstdev(scores) if len(scores) > 1 else (0.0 if scores else None),
        "min": min(scores) if scores else None,
        "max": max(scores) if scores else None,
    }


def _format(summary: dict[str, Any], lines: list[dict[str, Any]]) -> str:
    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    rows = [
        f"items   {summary['items']}",
        f"scored  {summary['scored']}",
        f"errors  {summary['errors']}",
        f"mean    {number(summary['mean'])}",
        f"std     {number(summary['std'])}",
        f"min     {number(summary['min'])}",
        f"max     {number(summary['max'])}",
    ]
    failed = [line for line in lines if line.get("error")]
    if failed:
        rows += ["", "Errors:"]
        rows += [f"- line {f['line']}: {f['error_type']}: {f['error']}" for f in failed[:10]]
        if len(failed) > 10:
            rows.append(f"  ... and {len(failed) - 10} more")
    return "\n".join(rows)


class _InOrder:
    """`--out` in dataset order: items finish in any order, and each line is written as
    soon as every item before it has finished (so the file grows as the run goes, in the
    dataset's order). `close` writes what finished after the first unfinished item, still
    in order, so an interrupted run loses nothing it paid for."""

    def __init__(self, out: OutFile, lines: list[dict[str, Any] | None]) -> None:
        self.out = out
        self.lines = lines
        self.written = 0  # lines[:written] are in the file

    def flush_ready(self) -> None:
        start = self.written
        while self.written < len(self.lines) and self.lines[self.written] is not None:
            self.written += 1
        if self.written > start:
            self.out.write(line for line in self.lines[start : self.written] if line)

    def close(self) -> None:
        self.flush_ready()
        rest = [line for line in self.lines[self.written :] if line is not None]
        if rest:
            self.out.write(rest)
        self.written = len(self.lines)
        self.out.close()


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring."""
    from tracejudge.rewards import aevaluate_rubric_batch

    if args.score_max <= args.score_min:
        raise UsageError(
            f"--score-max ({args.score_max:g}) must be greater than --score-min "
            f"({args.score_min:g})"
        )
    check_writable(args.out, "--out")  # before any judge call
    rubric = _rubric(args)
    info = _model_info(args)
    numbered = read_dataset(args.dataset)
    items = [item for _, item in numbered]
    lines: list[dict[str, Any] | None] = [None] * len(items)
    out = _InOrder(OutFile(args.out, append=False), lines) if args.out else None
    progress = Progress(len(items), "item", enabled=len(items) > 1 and not args.quiet)

    def finished(index: int, result: Any) -> None:
        lines[index] = _line(numbered[index][0], items[index], result)
        if out is not None:
            out.flush_ready()
        progress.advance()

    try:
        with progress, JudgingLine(enabled=not args.quiet, progress=progress):
            asyncio.run(
                aevaluate_rubric_batch(
                    items,
                    rubric=rubric,
                    model_info=info,
                    score_min=args.score_min,
                    score_max=args.score_max,
                    concurrency=args.max_concurrency,
                    repeats=args.number,
                    on_result=finished,
                )
            )
    except KeyboardInterrupt:
        done = sum(line is not None for line in lines)
        print(f"tracejudge rubric: interrupted after {done} items", file=sys.stderr)
        return 130
    except ValueError as error:  # the rubric or the model info, for every item
        raise UsageError(str(error)) from None
    finally:
        if out is not None:
            out.close()  # an interrupted run keeps every finished item, still in order
    complete = [line for line in lines if line is not None]
    summary = summarize(complete)
    if args.json:
        for line in complete:
            print(json.dumps(line))
        print(json.dumps({"summary": summary}))
    else:
        print(_format(summary, complete))
    return 0 if summary["scored"] else 1


def add_parser(commands: Any) -> None:
    """Register `rubric` on the `tracejudge` command's subparsers."""
    rubric = commands.add_parser(
        "rubric",
        help="score a JSON lines dataset against a rubric with a judge model",
        description="Score each line of DATASET (a JSON object with solution_str and "
        "optionally ground_truth, original_input, metadata, extra_info) against a rubric "
        "with a judge model. Item errors are recorded, never fatal. Exit status: 0 done, "
        "1 no item could be scored, 2 bad usage or input, 130 interrupted.",
    )
    rubric.add_argument("dataset", metavar="DATASET", help="a JSON lines file, or - for stdin")
    which = rubric.add_mutually_exclusive_group(required=True)
    which.add_argument("--rubric", help="the rubric text")
    which.add_argument("--rubric-file", help="a file holding the rubric text")
    rubric.add_argument(
        "--model", required=True, help="the judge, PROVIDER/MODEL (e.g. openai/gpt-4.1-mini)"
    )
    rubric.add_argument(
        "--base-url", help="an OpenAI-compatible server for the judge (vLLM, Ollama, ...)"
    )
    rubric.add_argument(
        "--number",
        type=_positive(int),
        default=1,
        metavar="K",
        help="judge each item K times: mean and standard deviation (default 1)",
    )
    add_quiet(rubric)
    add_settings(
        rubric,
        ("judge_timeout_seconds", "max_concurrency"),
        defaults={"max_concurrency": 8},
        deprecated={"--concurrency": "max_concurrency"},
    )
    rubric.add_argument("--score-min", type=float, default=0.0, help="the lowest score (0)")
    rubric.add_argument("--score-max", type=float, default=1.0, help="the highest score (1)")
    rubric.add_argument("--out", help="write one JSON line per item to this file")
    rubric.add_argument(
        "--json", action="store_true", help='print the result lines, then {"summary": {...}}'
    )
    rubric.set_defaults(run=run)
