"""A run's record, and where it is kept.

A run directory holds:

- `run.json`: what identifies the run: `name`, `git` (`commit`, `dirty`), `models` (the
  model names the task's calls used), `params` (what the user passed), `started_at` /
  `ended_at` (ISO 8601, UTC), `repeats`, `rows`, `criteria`, `cost` (the judge's calls,
  tokens and dollars, and the task's seconds) and `format` (1).
- `rows.jsonl`: one line per row and repeat (`RowResult`): the row's `id`, `repeat`,
  `input`, `expected`, `output` (or `error`), `seconds`, `trace_id`, `models`,
  `judge_cost_usd`, and `scores`: per agent name and criterion the `score`, the `bar`,
  `passed` (None: not applicable or not evaluated) and the `explanation`.
- `traces.jsonl`: each row's trace, a MultiAgentTrace per line in the rows' order, linked
  to its row by `trace_id` (so `tracejudge score runs/x/traces.jsonl` reads it as it is).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tracejudge.errors import BadRequestError

__all__ = [
    "RUN_FILE",
    "ROWS_FILE",
    "TRACES_FILE",
    "AgentScore",
    "RowResult",
    "RunRecord",
    "StoredRun",
    "git_state",
    "read_run",
    "read_score_lines",
    "record_json",
    "result_json",
    "run_from_json",
    "write_run",
]

RUN_FILE = "run.json"
ROWS_FILE = "rows.jsonl"
TRACES_FILE = "traces.jsonl"
FORMAT = 1


@dataclass(frozen=True)
class AgentScore:
    """One agent name's verdict on one criterion for one row."""

    agent: str
    criterion: str
    score: float | None
    bar: float
    passed: bool | None
    explanation: str = ""


@dataclass(frozen=True)
class RowResult:
    """One run of the task on one row (one repeat) and its scores."""

    id: str
    repeat: int
    input: Any
    expected: Any
    output: Any
    seconds: float
    scores: list[AgentScore] = field(default_factory=list)
    error: str | None = None
    trace_id: str | None = None
    models: list[str] = field(default_factory=list)
    judge_cost_usd: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, line: dict[str, Any]) -> RowResult:
        scores = [AgentScore(**score) for score in line.get("scores") or []]
        return cls(**{**line, "scores": scores})


@dataclass
class RunRecord:
    """What identifies a run (see the module's docstring for the fields)."""

    name: str
    started_at: str
    ended_at: str | None = None
    git: dict[str, Any] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    repeats: int = 1
    rows: int = 0
    criteria: list[str] = field(default_factory=list)
    cost: dict[str, Any] = field(default_factory=dict)
    format: int = FORMAT


@dataclass(frozen=True)
class StoredRun:
    """A run as read back: its record, its row results and where it is (a directory, a
    run on a server: `url`, or both)."""

    record: RunRecord
    results: list[RowResult]
    directory: Path | None = None
    url: str | None = None

    @property
    def where(self) -> str:
        """Where the run is, for people: its directory, else its address, else its name."""
        if self.directory is not None:
            return str(self.directory)
        return self.url or self.record.name


def git_state(where: Path | None = None) -> dict[str, Any]:
    """The git commit of `where` (default: the working directory) and whether the work
    tree has changes; `{}` outside a repository or without git."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"commit": commit, "dirty": bool(status.strip())}


def _plain(value: Any) -> Any:
    """`value` as JSON can hold it (what JSON cannot: its text)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def result_json(result: RowResult) -> dict[str, Any]:
    """A row result as JSON holds it (what JSON cannot hold of its input, expected output
    and output: their text)."""
    line = result.as_dict()
    for key in ("input", "expected", "output"):
        line[key] = _plain(line[key])
    return line


def record_json(record: RunRecord) -> dict[str, Any]:
    """A run's record as JSON holds it (its params' values JSON cannot hold: their text)."""
    document = asdict(record)
    document["params"] = {k: _plain(v) for k, v in record.params.items()}
    return document


def run_from_json(
    record: dict[str, Any],
    results: Iterable[dict[str, Any]],
    *,
    url: str | None = None,
    where: str = "the run",
) -> StoredRun:
    """A run from its record and row results as JSON (a server's answer). Raises
    `BadRequestError` naming `where` and the problem."""
    try:
        known = {f for f in RunRecord.__dataclass_fields__}
        chosen = RunRecord(**{k: v for k, v in record.items() if k in known})
        rows = [RowResult.from_dict(line) for line in results]
    except (ValueError, TypeError) as error:
        raise BadRequestError(f"{where}: not a run ({error})") from None
    return StoredRun(chosen, rows, url=url)


def write_run(
    directory: Path,
    record: RunRecord,
    results: Iterable[RowResult],
    traces: Iterable[dict[str, Any]] = (),
) -> None:
    """Write a run to `directory` (made if missing; its files replaced)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ROWS_FILE, "w", encoding="utf-8") as out:
        for result in results:
            out.write(json.dumps(result_json(result)) + "\n")
    with open(directory / TRACES_FILE, "w", encoding="utf-8") as out:
        for trace in traces:
            out.write(json.dumps(trace) + "\n")
    document = json.dumps(record_json(record), indent=2)
    (directory / RUN_FILE).write_text(document + "\n", encoding="utf-8")


def read_run(directory: str | Path) -> StoredRun:
    """The run in `directory`, or the result lines `tracejudge score --out` wrote (a file:
    each trace a row, paired by trace id, so two scorings of the same traces compare).
    Raises `BadRequestError` naming the file and the problem."""
    path = Path(directory)
    if path.is_file():
        return read_score_lines(path)
    run_file = path / RUN_FILE
    if not run_file.is_file():
        raise BadRequestError(
            f"{path} is not a run directory: it has no {RUN_FILE} (make one with "
            "`tracejudge run FILE.py --out DIR` or tracejudge.experiment(..., directory=DIR))"
        )
    try:
        document = json.loads(run_file.read_text(encoding="utf-8"))
        record = RunRecord(**document)
    except (OSError, ValueError, TypeError) as error:
        raise BadRequestError(f"{run_file}: not a run record ({error})") from None
    return StoredRun(record, list(_read_rows(path / ROWS_FILE)), path)


def _read_rows(path: Path) -> Iterator[RowResult]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise BadRequestError(f"cannot read {path}: {error.strerror or error}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield RowResult.from_dict(json.loads(line))
        except (ValueError, TypeError) as error:
            raise BadRequestError(f"{path}, line {number}: not a row result ({error})") from None


def read_score_lines(path: Path) -> StoredRun:
    """`tracejudge score --out` lines as a run: a row per trace id, each agent name's
    verdict its worst instance's score against the line's bar."""
    by_trace: dict[str, list[AgentScore]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise BadRequestError(f"cannot read {path}: {error.strerror or error}") from None
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            trace_id, criterion = str(line["trace_id"]), str(line["criterion"])
            bar = float(line.get("fail_under", 0.5))
            agents = line["agents"].values()
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise BadRequestError(
                f"{path}, line {number}: neither a run directory nor `tracejudge score --out` "
                f"lines ({type(error).__name__}: {error})"
            ) from None
        worst: dict[str, float | None] = {}
        for agent in agents:
            score, name = agent.get("score"), str(agent.get("name"))
            known = worst.get(name)
            if score is None:
                worst.setdefault(name, None)
            elif known is None or score < known:
                worst[name] = float(score)
        by_trace.setdefault(trace_id, []).extend(
            AgentScore(name, criterion, score, bar, None if score is None else score >= bar)
            for name, score in worst.items()
        )
    results = [RowResult(t, 0, None, None, None, 0.0, scores) for t, scores in by_trace.items()]
    record = RunRecord(name=path.name, started_at="", rows=len(results))
    return StoredRun(record, results, path)
