"""The pytest plugin's baseline mode: the session's `assert_trace` scores as a run, saved
and compared with a baseline run through the gate `tracejudge compare` uses.

Each test that calls `assert_trace` is a row of the session's run (its node id; each
further call in the same test a repeat), each (agent name, criterion) its verdict: the
worst instance's score, passed when no instance of that name failed. Options:

- `--tracejudge-save-run=DIR|URL`: save the session's run to a directory (what
  `tracejudge run --out` writes) or a `tracejudge serve` (its address: the run is stored
  there, listed on its runs page); `--tracejudge-run-name NAME` names it (default
  "pytest"). A run saved this way is the baseline of later sessions.
- `--tracejudge-baseline=DIR|URL`: compare the session's run with that run (a directory,
  `tracejudge score --out` lines, or a run on a server: `URL/runs/ID`, or `URL/runs/NAME`
  for the newest run of that name). Per agent and criterion, over the tests both runs
  have, the session fails (exit status 1) only when the pass rate dropped significantly
  (p < `--tracejudge-level`, default 0.05) by at least `--tracejudge-min-effect` (default
  0.05); fewer than `--tracejudge-min-rows` paired tests (default 10), or a drop that is
  not significant, is INCONCLUSIVE: said, never a failure. The comparison is
  `tracejudge.experiments.compare_runs`, the one `tracejudge compare` prints.

Write the options with `=`: a path given as the next argument is taken by pytest, when
it exists, as a path of tests (it chooses the rootdir tests are named from).

The key of a server is written into its address or read from TRACEJUDGE_API_KEY, never
printed. Under pytest-xdist each worker sees only its own tests: run baseline mode without
`-n`.
"""

from __future__ import annotations

import getpass
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tracejudge.errors import ComposoError

# The experiments room is imported only in baseline mode: the plugin loads in every pytest
# session of an environment where tracejudge is installed.
if TYPE_CHECKING:
    from tracejudge.experiments import RowResult, StoredRun

__all__ = ["SessionRun", "add_options", "finish", "session_run", "summary_lines"]


class SessionRun:
    """What the session's `assert_trace` calls scored, test by test (kept only when
    `enabled`: baseline mode asked for)."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled
        self.started = datetime.now(timezone.utc)
        self.test: str | None = None  # the node id of the test running now
        self.results: list[RowResult] = []
        self.traces: list[dict[str, Any] | None] = []
        self.calls: dict[str, int] = defaultdict(int)
        self.lines: list[str] = []  # what the terminal summary says of the baseline

    def record(self, trace: Any, findings: list[Any], min_score: float) -> None:
        """One `assert_trace` of the running test: its findings as that test's row (a
        further call in the same test: a repeat)."""
        if not self.enabled or self.test is None:
            return  # not asked for; or outside a test (a session fixture): no row to name
        from tracejudge.experiments import AgentScore, RowResult

        worst: dict[tuple[str, str], float] = {}
        failed: set[tuple[str, str]] = set()
        for finding in findings:
            if finding.kind not in ("passed", "failed") or finding.score is None:
                continue
            key = (str(finding.agent), finding.criterion)
            worst[key] = min(worst.get(key, finding.score), finding.score)
            if finding.kind == "failed":
                failed.add(key)
        scores = [
            AgentScore(agent, criterion, score, min_score, (agent, criterion) not in failed)
            for (agent, criterion), score in worst.items()
        ]
        repeat = self.calls[self.test]
        self.calls[self.test] += 1
        models = sorted(
            {c.model for a in trace.iter_agents() for c in a.llm_interactions if c.model}
        )
        self.results.append(
            RowResult(
                self.test, repeat, None, None, None, 0.0, scores, None, trace.trace_id, models
            )
        )
        self.traces.append(trace.to_wire())

    def as_run(self, name: str) -> StoredRun:
        from tracejudge.experiments import RunRecord, StoredRun
        from tracejudge.experiments.record import git_state

        record = RunRecord(
            name=name,
            started_at=self.started.isoformat(),
            ended_at=datetime.now(timezone.utc).isoformat(),
            git=git_state(),
            models=sorted({m for r in self.results for m in r.models}),
            params={"pytest": True, "user": _user()},
            repeats=max(self.calls.values(), default=1),
            rows=len(self.calls),
            criteria=sorted({s.criterion for r in self.results for s in r.scores}),
        )
        return StoredRun(record, self.results)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def session_run(config: pytest.Config) -> SessionRun:
    """A new session's run, kept when baseline mode is asked for."""
    options = config.option
    asked = getattr(options, "tracejudge_save_run", None) or getattr(
        options, "tracejudge_baseline", None
    )
    return SessionRun(enabled=bool(asked))


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("tracejudge", "tracejudge: scores of assert_trace as a run")
    group.addoption(
        "--tracejudge-baseline",
        metavar="DIR|URL",
        help="compare this session's assert_trace scores with a baseline run (a directory, "
        "or URL/runs/ID on a tracejudge server) and fail on a significant regression; "
        "inconclusive is never a failure",
    )
    group.addoption(
        "--tracejudge-save-run",
        metavar="DIR|URL",
        help="save this session's assert_trace scores as a run: a directory, or a tracejudge "
        "server's address (a baseline for later sessions)",
    )
    group.addoption(
        "--tracejudge-run-name", default="pytest", help="the saved run's name (default: pytest)"
    )
    group.addoption(
        "--tracejudge-level",
        type=float,
        default=0.05,
        help="the baseline comparison's significance level (default: 0.05)",
    )
    group.addoption(
        "--tracejudge-min-effect",
        type=float,
        default=0.05,
        help="the smallest drop in pass rate (0..1) that fails the session (default: 0.05)",
    )
    group.addoption(
        "--tracejudge-min-rows",
        type=int,
        default=10,
        help="fewer tests in both runs is inconclusive (default: 10)",
    )


def _save(run: StoredRun, where: str, traces: list[dict[str, Any] | None]) -> str:
    from tracejudge.experiments import RunServer
    from tracejudge.experiments.record import write_run
    from tracejudge.experiments.remote import RowUpload

    if where.startswith(("http://", "https://")):
        rows = [RowUpload(r, t) for r, t in zip(run.results, traces, strict=True)]
        with RunServer(where) as server:
            return server.page_of(server.upload(run.record, rows))
    write_run(Path(where), run.record, run.results, [t for t in traces if t is not None])
    return where


def finish(session: pytest.Session, current: SessionRun) -> None:
    """At the session's end: save the run, compare it with the baseline, and fail the
    session (exit status 1) on a regression. What it found goes to the terminal summary."""
    options = session.config.option
    save, baseline = options.tracejudge_save_run, options.tracejudge_baseline
    if not save and not baseline or hasattr(session.config, "workerinput"):
        return  # an xdist worker: its controller says it
    if getattr(options, "numprocesses", None):
        current.lines.append(
            "--tracejudge-baseline/--tracejudge-save-run record the tests of one process: "
            "run them without -n (pytest-xdist)"
        )
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    from tracejudge.experiments import GatePolicy, compare_runs, read_any_run
    from tracejudge.report import format_comparison

    run = current.as_run(options.tracejudge_run_name)
    if save:
        try:
            current.lines.append(
                f"run saved: {_save(run, save, current.traces)} ({len(run.results)} "
                f"assert_trace calls in {run.record.rows} tests)"
            )
        except (ComposoError, OSError) as error:
            current.lines.append(f"run NOT saved to --tracejudge-save-run: {error}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if not baseline:
        return
    try:
        policy = GatePolicy(
            level=options.tracejudge_level,
            min_effect=options.tracejudge_min_effect,
            min_rows=options.tracejudge_min_rows,
        )
        before = read_any_run(baseline)
    except (ComposoError, ValueError) as error:
        current.lines.append(f"--tracejudge-baseline: {error}")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    comparison = compare_runs(before, run, policy)
    result, reasons = comparison.gate()
    if run.results and not {r.id for r in before.results} & {r.id for r in run.results}:
        current.lines.append(
            "no test of this session is in the baseline: tests are named from pytest's "
            "rootdir, which a path given as `--tracejudge-baseline DIR` can move; write "
            "--tracejudge-baseline=DIR, and run from where the baseline was saved"
        )
    current.lines.append(f"compared with the baseline {before.where}:")
    current.lines.extend(format_comparison(comparison.as_dict()).splitlines())
    if result == "fail":
        current.lines.append("REGRESSION: the session fails")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif result == "inconclusive":
        current.lines.append("INCONCLUSIVE: not enough evidence either way; not a failure")
    else:
        current.lines.append("no regression")
    current.lines.extend(f"  {reason}" for reason in reasons)


def summary_lines(current: SessionRun) -> list[str]:
    """What the terminal summary says of the run and its baseline (said once)."""
    lines, current.lines = current.lines, []
    return lines
